"""``kurahi rescue --claude DIR``, and a plain ``kurahi rescue`` finding ``~/.claude``, in-process as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kurahi.cli import build_app
from kurahi.cli.common import EXIT
from support.claude_sessions import four_turns, snapshot

runner = CliRunner()


def cli(*args: str, home: Path) -> Any:
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": "", "OPENCLAW_STATE_DIR": "", "KURAHI_HOME": "", "KOLO_HOME": ""}
    env |= {"PI_CODING_AGENT_DIR": "", "PI_CODING_AGENT_SESSION_DIR": "", "COLUMNS": "200"}
    result = runner.invoke(build_app(), list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def _state(home: Path) -> Path:
    root = home / ".claude"
    four_turns(seed=1)[0].write(root)
    s, turns = four_turns(seed=2)
    s.row(turns[2].tool_result or "")["parentUuid"] = None
    s.write(root)
    s, turns = four_turns(seed=3)
    s.row(turns[2].prompt)["parentUuid"] = turns[0].reply
    s.write(root)
    return root


def test_json_lists_each_loss_with_the_fields_rescue_promises(tmp_path: Path) -> None:
    root = _state(tmp_path)
    out = cli("rescue", "--claude", str(root), "--json", home=tmp_path)
    assert out.exit_code == EXIT.FAILED, out.output
    doc = json.loads(out.stdout)
    [target] = doc["targets"]
    assert target["kind"] == "claude" and target["keys"] == 3 and "sessionLosses" not in target
    assert sorted((x["kind"], x["confidence"]) for x in doc["losses"]) == [
        ("null-parent", "recorded"),
        ("wrong-parent", "recorded"),  # its turn number tells it from a rewind
    ]
    for loss in doc["losses"]:
        assert {"id", "agent", "key", "at", "kind", "project", "sessionId", "evidence", "lostMessages"} <= set(loss)
        assert loss["agent"] == loss["project"] == "/home/ava/work" and loss["key"] == loss["sessionId"]
        assert loss["applyRefused"] and loss["lostTokens"] > 0


def test_the_table_says_what_left_the_view_and_promises_no_command_that_is_not_built(tmp_path: Path) -> None:
    root = _state(tmp_path)
    out = cli("rescue", "--claude", str(root), home=tmp_path)
    assert out.exit_code == EXIT.FAILED
    text = out.stdout
    assert "3 session(s) in 1 project(s)" in text and "null-parent" in text and "wrong-parent" in text
    assert "bring back: not yet (coming)" in text
    assert "kurahi rescue apply" not in text.replace("`kurahi rescue apply` does not write", "")


def test_a_plain_rescue_looks_in_the_default_claude_dir_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    root = _state(tmp_path)
    before = snapshot(root)
    out = cli("rescue", "--json", home=tmp_path)
    assert out.exit_code == EXIT.FAILED, out.output
    assert [t["stateDir"] for t in json.loads(out.stdout)["targets"]] == [str(root)]
    page = tmp_path / "page.html"
    cli("rescue", "--claude", str(root), "--html", str(page), home=tmp_path)
    assert "null-parent" in page.read_text() and "not yet (coming)" in page.read_text()
    assert snapshot(root) == before


def test_an_undamaged_dir_exits_0(tmp_path: Path) -> None:
    four_turns()[0].write(tmp_path / ".claude")
    out = cli("rescue", "--claude", str(tmp_path / ".claude"), home=tmp_path)
    assert out.exit_code == EXIT.OK and "No loss found" in out.stdout


def test_a_missing_or_unreadable_dir_is_a_clear_error_and_a_default_one_is_a_note(tmp_path: Path) -> None:
    out = cli("rescue", "--claude", str(tmp_path / "nope"), home=tmp_path)
    assert out.exit_code == EXIT.NOT_FOUND and "no such directory (--claude)" in out.output
    bad = tmp_path / ".claude"
    bad.mkdir()
    (bad / "projects").write_text("a file where the folder belongs")
    out = cli("rescue", "--claude", str(bad), home=tmp_path)
    assert out.exit_code == EXIT.NOT_FOUND and "projects: is not a folder" in out.output
    assert "Traceback" not in out.output
    out = cli("rescue", home=tmp_path)  # found by default: said, and judged as not read
    assert out.exit_code == EXIT.OK and "skipped:" in out.stdout and "could not be read" in out.stdout
    out = cli("rescue", "--claude", str(bad), "--openclaw", str(tmp_path), home=tmp_path)
    assert out.exit_code == EXIT.USAGE


def test_apply_and_plan_of_a_claude_loss_say_it_is_not_built_yet_and_change_nothing(tmp_path: Path) -> None:
    root = _state(tmp_path)
    before = snapshot(root)
    listed = json.loads(cli("rescue", "--claude", str(root), "--json", home=tmp_path).stdout)["losses"]
    wanted = next(x["id"] for x in listed if x["kind"] == "null-parent")
    out = cli("rescue", "apply", wanted[:5], "--yes", home=tmp_path)
    assert out.exit_code == EXIT.FAILED, out.output
    assert (
        f"{wanted} is a Claude Code loss (null-parent" in out.output
        and "not write Claude Code sessions yet" in out.output
    )
    out = cli("rescue", "plan", wanted, "--out", str(tmp_path / "pkg"), home=tmp_path)
    assert out.exit_code == EXIT.FAILED and "nothing was changed" in out.output
    assert snapshot(root) == before and not (tmp_path / "pkg").exists()
    out = cli("rescue", "apply", "ffffffff", "--yes", home=tmp_path)
    assert out.exit_code == EXIT.NOT_FOUND and "no OpenClaw state or Kurahi home found" in out.output
