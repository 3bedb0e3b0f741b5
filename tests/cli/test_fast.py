"""The fast path of `lineage stitch|check` and `session context --json`: as the Typer commands, without typer."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kurahi.cli.fast.dispatch import SPECS, parse
from kurahi.cli.lineage.commands import app
from kurahi.cli.session import app as session_app
from kurahi.testing import build_session
from support.cli_probe import run_main
from support.refused import bricked

_APPS = {"stitch": app, "check": app, "context": session_app}
"""The Typer app that holds each command the fast parser serves."""


def _click_options(name: str) -> dict[str, tuple[bool, bool, bool]]:
    """Option string -> (takes many, is a flag, required) of the Typer command."""
    cmd = typer.main.get_command(_APPS[name]).commands[name]  # type: ignore[attr-defined]
    out: dict[str, tuple[bool, bool, bool]] = {}
    for p in cmd.params:
        if p.param_type_name == "option":
            for opt in p.opts:
                out[opt] = (bool(p.multiple), bool(p.is_flag), bool(p.required))
    return out


def _fast_options(name: str) -> dict[str, tuple[bool, bool, bool]]:
    _, options = SPECS[name]
    return {opt: (o.kind == "many", o.kind == "flag", o.required) for opt, o in options.items()}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_fast_parser_takes_exactly_the_typer_commands_options(name: str) -> None:
    assert _fast_options(name) == _click_options(name)


_CLICK_USAGE_ERROR = typer.BadParameter.__bases__[0]
"""Click's UsageError, as typer bundles it (typer.BadParameter's base class)."""


def _click_values(name: str, args: list[str]) -> dict[str, Any] | None:
    """What Click makes of ``args`` (positionals as one list), or ``None`` when it refuses them."""
    cmd = typer.main.get_command(_APPS[name]).commands[name]  # type: ignore[attr-defined]
    try:
        with cmd.make_context(name, list(args)) as ctx:
            params = dict(ctx.params)
    except _CLICK_USAGE_ERROR:
        return None
    if name == "stitch":
        params["sources"] = [params.pop("before"), *(params.pop("after") or [])]
    else:
        params["file"] = [params["file"]]
    if name == "context":
        params["context_window"] = params.pop("window")
    params["json"] = params.pop("as_json")
    return _plain(params)


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """Paths as text and sequences as lists (Typer converts Click's strings to Path later)."""

    def one(v: Any) -> Any:
        return str(v) if isinstance(v, Path) else v

    return {k: [one(x) for x in v] if isinstance(v, (list, tuple)) else one(v) for k, v in values.items()}


# Tokens to draw from: every option in its two spellings, values of every kind, odd ones.
_TOKENS = {
    "stitch": ["--out", "--leaf", "--report", "--evidence", "--json", "--force", "--rename-colliding", "--out=C"],
    "check": [
        "--marker",
        "--window",
        "--context-window",
        "--reserve",
        "--system-prompt-tokens",
        "--evidence",
        "--json",
        "--window=5",
        "--context-window=6",
        "--runtime",
    ],
    "context": ["--leaf", "--json", "--llm", "--context-window", "--reserve", "--reserve=3", "--context-window=9"],
}
_VALUES = ["A.jsonl", "B.jsonl", "C", "7", "0", "+5", "1_000", "-x", "", "--", "-", "x=y", "--unknown", "--json=1"]


def _click_defaults(name: str, fast: dict[str, Any]) -> None:
    """The defaults Click fills in where the fast parser leaves ``None`` (its runner applies them)."""
    # check's window has no default: None lets it read the OpenClaw config's.
    if name == "context":
        if fast["context_window"] is None:
            fast["context_window"] = 200_000
        if fast["reserve"] is None:
            fast["reserve"] = 16_384


@pytest.mark.parametrize("name", sorted(SPECS))
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_whatever_the_fast_parser_accepts_click_reads_the_same_way(name: str, data: st.DataObject) -> None:
    args = data.draw(st.lists(st.sampled_from(_TOKENS[name] + _VALUES), max_size=9))
    fast = parse(name, args)
    if fast is None:
        return  # the full CLI decides
    click_values = _click_values(name, args)
    assert click_values is not None, f"fast path took {args} that Click refuses"
    _click_defaults(name, fast)
    assert _plain(fast) == click_values, args


@pytest.mark.parametrize(
    "name,args",
    [
        ("stitch", ["A", "B", "--out", "C", "--json"]),
        ("stitch", ["A", "--out", "C"]),  # one source with in-transcript resets
        ("check", ["C", "--runtime", "openclaw-2026.9"]),
        ("stitch", ["--out=C", "A", "B", "B2", "--leaf", "e1", "--report=r.json", "--force", "--rename-colliding"]),
        ("check", ["C", "--marker", "one", "--marker=two", "--reserve", "4096", "--window=1000"]),
        ("check", ["C", "--system-prompt-tokens", "9000", "--evidence", "ev", "--json"]),
        ("context", ["T.jsonl", "--json"]),
        ("context", ["--leaf", "e1", "T.jsonl", "--json", "--context-window=1000", "--reserve", "0"]),
    ],
)
def test_the_plain_forms_are_taken_by_the_fast_parser(name: str, args: list[str]) -> None:
    fast = parse(name, args)
    assert fast is not None
    _click_defaults(name, fast)
    assert _plain(fast) == _click_values(name, args)


@pytest.mark.parametrize(
    "name,args",
    [
        ("stitch", ["--out", "C"]),  # no source
        ("stitch", ["A", "B"]),  # no --out
        ("stitch", ["A", "B", "--out", "C", "--out", "D"]),  # repeated
        ("stitch", ["A", "B", "--out", "-C"]),  # a value like an option
        ("stitch", ["A", "B", "--out="]),  # empty
        ("stitch", ["A", "B", "--out", "C", "--", "-D"]),
        ("stitch", ["A", "B", "--out", "C", "--json=yes"]),
        ("stitch", ["A", "B", "--out", "C", "-h"]),
        ("check", ["C", "--window", "0"]),  # Click's range message
        ("check", ["C", "--reserve", "1_000"]),  # Click's int() takes it; let Click say so
        ("check", ["C", "D"]),
        ("check", ["C", "--marker"]),
        ("context", ["T.jsonl", "--json", "--leaf", "a", "--leaf", "b"]),
        ("context", ["T.jsonl", "U.jsonl", "--json"]),
        ("context", ["T.jsonl", "--json", "-h"]),
    ],
)
def test_anything_else_goes_to_the_full_cli(name: str, args: list[str]) -> None:
    assert parse(name, args) is None


def _kurahi(*args: str) -> tuple[int, str, str, bool]:
    """Run the console script's ``main`` in a fresh process: exit code, stdout, stderr, typer loaded."""
    r = run_main(*args, watch=("typer",))
    return r.code, r.stdout, r.stderr, r.loaded == ["typer"]


@pytest.fixture(scope="module")
def pieces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("fast")
    a, b = d / "A.jsonl", d / "B.jsonl"
    # B first: it starts before A ends, so stitch needs --force and warns.
    build_session(b, entries=60, seed=6, branch_chance=0, markers=["AFTER-RESET-PLUM"])
    build_session(
        a, entries=300, seed=5, branch_chance=0, compact_every=100, markers=["x1", "x2", "x3", "BEFORE-RESET-KIWI"]
    )
    return a, b


def _summary(raw: str) -> dict[str, Any]:
    """A stitch summary without what differs between two runs (C's path and hash, new session id, time)."""
    data = json.loads(raw)
    for key in ("outSha256", "out"):
        data.pop(key)
    data["header"] = {k: v for k, v in data["header"].items() if k not in ("id", "timestamp")}
    return data


def test_stitch_and_check_give_the_same_results_both_ways_and_the_fast_way_never_loads_typer(
    pieces: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = pieces
    runner = CliRunner()
    slow = runner.invoke(app, ["stitch", str(a), str(b), "--out", str(tmp_path / "C1.jsonl"), "--force", "--json"])
    code, out, err, loaded = _kurahi(
        "lineage", "stitch", str(a), str(b), "--out", str(tmp_path / "C2.jsonl"), "--force", "--json"
    )
    assert slow.exit_code == code == 0 and not loaded, err
    assert "warning:" in err and "starts" in err  # the order warning, as plain text off a terminal
    assert _summary(out) == _summary(slow.stdout)
    c = tmp_path / "C2.jsonl"
    for markers, want in ((["BEFORE-RESET-KIWI", "AFTER-RESET-PLUM"], 0), (["NEVER-SAID-QUINCE"], 1)):
        args = [str(c), "--json", "--reserve", "16384", "--reserve", "4096", "--system-prompt-tokens", "9000"]
        for m in markers:
            args += ["--marker", m]
        slow = runner.invoke(app, ["check", *args])
        code, out, err, loaded = _kurahi("lineage", "check", *args)
        assert slow.exit_code == code == want and not loaded, err
        assert json.loads(out) == json.loads(slow.stdout)
    # The people's table goes through the same code too.
    code, out, err, loaded = _kurahi("lineage", "check", str(c), "--marker", "AFTER-RESET-PLUM")
    assert code == 0 and not loaded and "AFTER-RESET-PLUM" in out and "agree" in out


def test_check_finds_what_a_provider_refuses_the_fast_way_as_the_full_cli_does(tmp_path: Path) -> None:
    # When the quick proof that nothing is refused fails, the transcript is checked in full:
    # the same findings the fast way as through the full CLI.
    f = bricked(tmp_path / "c.jsonl")
    # Pi sends the orphaned result and Anthropic refuses it; OpenClaw drops it before sending.
    for extra, code_wanted, refused in (([], 1, ["result-without-call"]), (["--runtime", "openclaw-2026.5"], 0, [])):
        slow = CliRunner().invoke(app, ["check", str(f), "--json", *extra])
        code, out, err, loaded = _kurahi("lineage", "check", str(f), "--json", *extra)
        assert slow.exit_code == code == code_wanted and not loaded, err
        assert json.loads(out) == json.loads(slow.stdout)
        assert [r["code"] for r in json.loads(out)["refused"]] == refused


@pytest.mark.parametrize(
    "args,code,says",
    [
        (["lineage", "stitch", "--out", "C.jsonl"], 2, "Missing argument"),
        (["lineage", "stitch", "A.jsonl", "B.jsonl", "--out", "C.jsonl", "--rep", "r.json"], 2, "No such option"),
        (["lineage", "check", "C.jsonl", "--window", "0"], 2, "0 is not in the range"),
        (["lineage", "check", "C.jsonl", "--reserve", "many"], 2, "is not a valid int"),
        (["lineage", "check", "--help"], 0, "Project a transcript two independent ways"),
    ],
)
def test_help_and_usage_errors_come_from_the_full_cli(args: list[str], code: int, says: str) -> None:
    got, out, err, loaded = _kurahi(*args)
    assert got == code and loaded and says in out + err


def test_an_existing_report_path_is_refused_before_anything_is_written(
    pieces: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = pieces
    report = tmp_path / "r.json"
    report.write_text("keep me")
    c = tmp_path / "C.jsonl"
    code, _, err, _ = _kurahi("lineage", "stitch", str(a), str(b), "--out", str(c), "--force", "--report", str(report))
    assert code == 2 and "exists" in err and str(report) in err
    assert not c.exists() and report.read_text() == "keep me"


def _console_script(*args: str, stdout: Any) -> subprocess.CompletedProcess[bytes]:
    """``kurahi ARGS`` exactly as the console script runs it (main's own way out, os._exit)."""
    code = "import sys; from kurahi.cli import main; sys.argv[0] = 'kurahi'; sys.exit(main())"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as for most users
    return subprocess.run(
        [sys.executable, "-c", code, *args], stdout=stdout, stderr=subprocess.PIPE, env=env, timeout=120
    )


def test_the_fast_path_exits_at_once_with_its_output_flushed_and_its_exit_code_kept(
    pieces: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = pieces
    c = tmp_path / "C.jsonl"
    out_file = tmp_path / "stitch.json"
    # A file, not a pipe: stdout is block-buffered there, so whatever is still buffered
    # when the command ends is lost unless the exit flushes it.
    with out_file.open("wb") as fh:
        r = _console_script("lineage", "stitch", str(a), str(b), "--out", str(c), "--force", "--json", stdout=fh)
    assert r.returncode == 0, r.stderr
    assert b"starts" in r.stderr  # the warning, written before the exit
    summary = json.loads(out_file.read_bytes())
    assert summary["outSha256"] == hashlib.sha256(c.read_bytes()).hexdigest()
    for marker, want in (("AFTER-RESET-PLUM", 0), ("NEVER-SAID-QUINCE", 1)):
        with (tmp_path / "check.txt").open("wb") as fh:
            r = _console_script("lineage", "check", str(c), "--marker", marker, stdout=fh)
        assert r.returncode == want, r.stderr
        table = (tmp_path / "check.txt").read_text()
        assert marker in table and "agree" in table


def test_session_context_json_is_the_same_both_ways_and_the_fast_way_never_loads_typer(
    pieces: tuple[Path, Path],
) -> None:
    a, _ = pieces
    leaf = json.loads(CliRunner().invoke(session_app, ["context", str(a), "--json"]).stdout)["leafId"]
    for extra in ([], ["--leaf", leaf], ["--context-window=1000", "--reserve", "0"]):
        slow = CliRunner().invoke(session_app, ["context", str(a), "--json", *extra])
        code, out, err, loaded = _kurahi("session", "context", str(a), "--json", *extra)
        assert slow.exit_code == code == 0 and not loaded, err
        assert out == slow.stdout and json.loads(out)["messages"]
    # Tables and the model's messages are the full CLI's.
    for extra in ([], ["--json", "--llm"]):
        code, out, err, loaded = _kurahi("session", "context", str(a), *extra)
        assert code == 0 and loaded, err


@pytest.mark.parametrize(
    "args,code,says",
    [
        (["session", "context", "missing.jsonl", "--json"], 3, "no such file"),
        (["session", "context", "T.jsonl", "--json", "--context-window", "0"], 2, "0 is not in the range"),
        (["session", "context", "--json"], 2, "Missing argument"),
    ],
)
def test_session_context_errors_are_the_full_clis(args: list[str], code: int, says: str, tmp_path: Path) -> None:
    got, out, err, _ = _kurahi(*args)
    assert got == code and says in out + err and "Traceback" not in err
