"""Output for people: rich tables on a terminal, plain aligned columns (and no rich) elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from kurahi.cli import output
from kurahi.testing import build_session
from support.cli_probe import run_main


def test_off_a_terminal_tables_are_aligned_columns_without_markup(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    output.table(
        ["name", "count", "note"],
        [["[bold]a[/]", "7", ("missing", "bold red")], ["a much longer name", "12345", ""]],
        right=[1],
    )
    output.say(("path/[x].jsonl", "bold"), ": ", ("agree", "green"))
    assert capsys.readouterr().out.splitlines() == [
        "name                count  note",
        "[bold]a[/]              7  missing",  # brackets are text, never markup
        "a much longer name  12345",
        "path/[x].jsonl: agree",
    ]


def test_force_color_draws_the_rich_table_with_the_text_as_given(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setattr(output.console, "_real", None)  # a console made under FORCE_COLOR
    output.table(["name", "count"], [["[bold]a[/]", "7"]], right=[1])
    out = capsys.readouterr().out
    assert "──" in out and "[bold]a[/]" in out and "\x1b[" in out


def test_stitch_and_check_print_for_people_without_importing_rich_off_a_terminal(tmp_path: Path) -> None:
    a, b, c = tmp_path / "A.jsonl", tmp_path / "B.jsonl", tmp_path / "C.jsonl"
    build_session(a, entries=200, seed=1, branch_chance=0)
    build_session(b, entries=50, seed=2, branch_chance=0)
    r = run_main("lineage", "stitch", str(a), str(b), "--out", str(c), "--force", watch=("rich",))
    assert r.code == 0 and r.loaded == [], r.stderr
    assert r.stdout.splitlines()[0].split()[:3] == ["source", "role", "entries"]
    assert f"wrote {c}" in r.stdout
    r = run_main("lineage", "check", str(c), "--marker", "NOT-THERE", watch=("rich",))
    assert r.code == 1 and r.loaded == [], r.stderr
    assert "projections agree" in r.stdout and "NOT-THERE  missing" in r.stdout
