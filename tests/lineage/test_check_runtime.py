"""`kurahi lineage check` knows which runtime loads the file (issue 16, deliverable 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from kurahi.context.files import project_file
from kurahi.context.tokens import estimate_content_tokens
from kurahi.lineage.find import export_piece, find_lineage
from support.testdata import JSON_ERA, SQLITE_ERA, UPGRADED, openclaw_state_copy, tree_hash

BEFORE, AFTER = "PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"
runner = CliRunner()


def check(*args: str) -> tuple[int, Any, str]:
    res = runner.invoke(app, ["lineage", "check", *args, "--json"])
    try:
        data = json.loads(res.stdout)
    except ValueError:
        data = None
    return res.exit_code, data, res.output


@pytest.fixture
def sqlite_source(tmp_path: Path) -> tuple[Path, str]:
    state = openclaw_state_copy(SQLITE_ERA, tmp_path / "state")
    (piece,) = find_lineage(state).pieces
    return state, piece.source


def test_sqlite_session_fails_when_openclaw_would_not_send_the_marker(sqlite_source: tuple[Path, str]) -> None:
    state, source = sqlite_source
    before = tree_hash(state)
    code, data, out = check(source, "--marker", BEFORE, "--marker", AFTER)
    assert tree_hash(state) == before
    assert code == EXIT.FAILED, out
    assert data["runtime"] == "openclaw-2026.9" and data["ok"] is False
    pi, oc = data["views"]
    assert oc["afterReset"] is True and oc["messages"] == data["runtimeMessages"] < pi["messages"]
    found = {m["marker"]: m["found"] for m in data["markers"]}
    assert found == {BEFORE: False, AFTER: True}
    # Pi (which does not know reset entries) sends both.
    code, data, out = check(source, "--marker", BEFORE, "--marker", AFTER, "--runtime", "pi")
    assert code == EXIT.OK, out
    assert data["runtimeReason"] == "--runtime"


def test_plain_file_with_reset_entries_is_judged_by_openclaw_2026_9(
    sqlite_source: tuple[Path, str], tmp_path: Path
) -> None:
    """A session exported from a 2026.9 store holds reset entries, which only 2026.9 writes: without
    --runtime it is judged by 2026.9's view (issue 28), and the report says why; --runtime pi overrides."""
    state, _ = sqlite_source
    (piece,) = find_lineage(state).pieces
    exported = export_piece(piece, tmp_path / "export.jsonl")
    code, data, out = check(str(exported), "--marker", BEFORE)
    assert code == EXIT.FAILED and data["runtime"] == "openclaw-2026.9", out
    assert "reset entries" in data["runtimeReason"] and "2026.9" in data["runtimeReason"]
    code, data, out = check(str(exported), "--marker", BEFORE, "--runtime", "pi")
    assert code == EXIT.OK and data["runtime"] == "pi", out
    code, data, out = check(str(exported), "--marker", BEFORE, "--runtime", "openclaw-2026.9")
    assert code == EXIT.FAILED and data["markers"][0]["found"] is False, out
    # The table for people says the same and names the runtime.
    res = runner.invoke(app, ["lineage", "check", str(exported), "--marker", BEFORE, "--runtime", "openclaw-2026.9"])
    assert res.exit_code == EXIT.FAILED
    assert "verdict for openclaw-2026.9 (--runtime)" in res.output and "missing" in res.output


def test_json_era_file_belongs_to_openclaw_2026_5(tmp_path: Path) -> None:
    state = openclaw_state_copy(JSON_ERA, tmp_path / "state")
    live = find_lineage(state).pieces[-1].source
    code, data, out = check(live, "--marker", AFTER)
    assert code == EXIT.OK and data["runtime"] == "openclaw-2026.5", out
    assert "JSON-era" in data["runtimeReason"]


def test_upgraded_leftover_archive_belongs_to_openclaw_2026_9(tmp_path: Path) -> None:
    state = openclaw_state_copy(UPGRADED, tmp_path / "state")
    archive = find_lineage(state).pieces[0].source
    code, data, out = check(archive, "--marker", BEFORE)
    assert code == EXIT.OK and data["runtime"] == "openclaw-2026.9", out


def test_token_pressure_of_a_stitch_comes_from_its_content(tmp_path: Path) -> None:
    state = openclaw_state_copy(JSON_ERA, tmp_path / "state")
    a, b = (p.source for p in find_lineage(state).pieces)
    c = tmp_path / "C.jsonl"
    assert runner.invoke(app, ["lineage", "stitch", a, b, "--out", str(c)]).exit_code == 0
    _, b_rep, _ = check(b)
    _, c_rep, _ = check(str(c))
    assert b_rep["tokensFrom"] == "usage"  # B's last reply measured B's own context
    assert c_rep["tokensFrom"] == "content"
    assert c_rep["tokens"] == estimate_content_tokens(project_file(c).context.messages)
    assert c_rep["tokens"] > 2 * b_rep["tokens"]
    assert c_rep["routes"][0]["contextTokens"] == c_rep["tokens"]


def test_pi_view_of_a_reset_session_is_not_measured_by_openclaws_usage(sqlite_source: tuple[Path, str]) -> None:
    _, source = sqlite_source
    _, oc, _ = check(source)
    _, pi, _ = check(source, "--runtime", "pi")
    assert (oc["tokensFrom"], pi["tokensFrom"]) == ("usage", "content")
    assert pi["tokens"] > oc["tokens"]


@pytest.mark.parametrize(
    ("args", "code", "text"),
    [
        (["--runtime", "openclaw-3000"], EXIT.USAGE, "not a runtime Kurahi knows"),
        (["sqlite:nohash"], EXIT.USAGE, "sqlite:<path to openclaw-agent.sqlite>#<session id>"),
    ],
)
def test_bad_runtime_and_source(sqlite_source: tuple[Path, str], args: list[str], code: int, text: str) -> None:
    state, source = sqlite_source
    before = tree_hash(state)
    full = args if args[0].startswith("sqlite:") else [source, *args]
    res = runner.invoke(app, ["lineage", "check", *full])
    assert res.exit_code == code and text in res.output and "Traceback" not in res.output
    assert tree_hash(state) == before


def test_unknown_sqlite_session(sqlite_source: tuple[Path, str]) -> None:
    _, source = sqlite_source
    res = runner.invoke(app, ["lineage", "check", source.rpartition("#")[0] + "#nope"])
    assert res.exit_code == EXIT.USAGE and "no transcript events for session 'nope'" in res.output


def test_only_a_one_shot_check_leaves_its_projections_for_the_exit(tmp_path: Path) -> None:
    # A gateway or the continuity suite checks many files in one process: nothing of a check
    # may stay behind there. The CLI's fast path, which leaves by os._exit, keeps them.
    import importlib

    from kurahi.testing import build_session

    check_module = importlib.import_module("kurahi.lineage.check")  # the package names its function `check`

    f = tmp_path / "s.jsonl"
    build_session(f, entries=40, seed=3)
    left = check_module._LEFT_FOR_EXIT
    before = len(left)
    try:
        plain = check_module.check(f)
        assert len(left) == before
        once = check_module.check(f, one_shot=True)
        assert len(left) == before + 1 and once.to_dict() == plain.to_dict()
    finally:
        del left[before:]
