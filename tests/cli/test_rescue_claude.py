"""``kurahi rescue --claude DIR``, and a plain ``kurahi rescue`` finding ``~/.claude``, in-process as a user runs it."""

from __future__ import annotations

import json
import os
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
        assert loss["applyRefused"] is None and loss["lostTokens"] > 0


def test_the_table_says_what_left_the_view_and_the_command_that_brings_it_back(tmp_path: Path) -> None:
    root = _state(tmp_path)
    out = cli("rescue", "--claude", str(root), home=tmp_path)
    assert out.exit_code == EXIT.FAILED
    text = out.stdout
    assert "3 session(s) in 1 project(s)" in text and "null-parent" in text and "wrong-parent" in text
    assert "Bring one back: kurahi rescue apply " in text and f"--claude {root}" in text
    assert "not yet" not in text


def test_a_plain_rescue_looks_in_the_default_claude_dir_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    root = _state(tmp_path)
    before = snapshot(root)
    out = cli("rescue", "--json", home=tmp_path)
    assert out.exit_code == EXIT.FAILED, out.output
    assert [t["stateDir"] for t in json.loads(out.stdout)["targets"]] == [str(root)]
    page = tmp_path / "page.html"
    cli("rescue", "--claude", str(root), "--html", str(page), home=tmp_path)
    assert "null-parent" in page.read_text() and "kurahi rescue apply" in page.read_text()
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


def _bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))}


def _null(root: Path, home: Path) -> dict[str, Any]:
    listed = json.loads(cli("rescue", "--claude", str(root), "--json", home=home).stdout)["losses"]
    return next(x for x in listed if x["kind"] == "null-parent")


def test_apply_brings_a_claude_loss_back_by_appending_and_rollback_cuts_it_off(tmp_path: Path) -> None:
    root = _state(tmp_path)
    before = _bytes(root)
    loss = _null(root, tmp_path)
    source = Path(loss["source"])
    size = source.stat().st_size
    pkg = tmp_path / "pkg"
    out = cli("rescue", "apply", loss["id"][:5], "--yes", "--out", str(pkg), home=tmp_path)  # found in ~/.claude
    assert out.exit_code == EXIT.OK, out.output
    assert "verified: yes" in out.stdout and f"kurahi activate rollback {pkg}" in out.stdout
    grown = source.read_bytes()
    assert grown[:size] == before[source.relative_to(root).as_posix()]  # only appended to
    [row] = [json.loads(line) for line in grown[size:].splitlines()]
    assert (
        row["uuid"] == loss["row"] and row["parentUuid"] == loss["repairParent"] and row["kurahiRepair"] == loss["id"]
    )
    out = cli("rescue", "--claude", str(root), "--json", home=tmp_path)
    doc = json.loads(out.stdout)
    assert [x["kind"] for x in doc["losses"]] == ["wrong-parent"]  # listed no more
    assert not [n for n in doc["targets"][0]["notes"] if "is written on lines" in n]  # its own row is no duplicate
    out = cli("rescue", "apply", loss["id"], "--yes", "--claude", str(root), home=tmp_path)
    assert out.exit_code == EXIT.NOT_FOUND  # brought back: nothing left to bring back
    out = cli("activate", "rollback", str(pkg), home=tmp_path)
    assert out.exit_code == EXIT.OK and "byte for byte" in out.stdout
    assert _bytes(root) == before
    out = cli("activate", "rollback", str(pkg), home=tmp_path)
    assert out.exit_code == EXIT.OK and "nothing to undo" in out.stdout


def test_plan_writes_a_package_that_activate_applies_unless_the_file_changed(tmp_path: Path) -> None:
    root = _state(tmp_path)
    before = snapshot(root)
    loss = _null(root, tmp_path)
    pkg = tmp_path / "pkg"
    out = cli("rescue", "plan", loss["id"], "--claude", str(root), "--out", str(pkg), home=tmp_path)
    assert out.exit_code == EXIT.OK, out.output
    assert snapshot(root) == before and {p.name for p in pkg.iterdir()} == {"activation.json", "SHA256SUMS"}
    source = Path(loss["source"])
    with source.open("ab") as f:
        f.write(b'{"type":"last-prompt","lastPrompt":"x"}\n')  # claude wrote since the plan
    changed = snapshot(root)
    out = cli("activate", "apply", str(pkg), home=tmp_path)
    assert out.exit_code == EXIT.FAILED and "changed since the plan" in out.output
    assert snapshot(root) == changed
    out = cli("rescue", "plan", loss["id"], "--claude", str(root), "--out", str(tmp_path / "pkg2"), home=tmp_path)
    out = cli("activate", "apply", str(tmp_path / "pkg2"), home=tmp_path)
    assert out.exit_code == EXIT.OK and "verified: yes" in out.stdout
    out = cli("activate", "verify", str(tmp_path / "pkg2"), home=tmp_path)
    assert out.exit_code == EXIT.OK and "the file holds the repair" in out.stdout
    cli("activate", "rollback", str(tmp_path / "pkg2"), home=tmp_path)
    out = cli("activate", "verify", str(tmp_path / "pkg2"), home=tmp_path)
    assert out.exit_code == EXIT.FAILED and "still off the path" in out.stdout


def test_a_running_claude_on_the_session_refuses_apply_exit_5(tmp_path: Path) -> None:
    root = _state(tmp_path)
    before = _bytes(root)
    loss = _null(root, tmp_path)
    stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[-1].split()
    note = {"pid": os.getpid(), "sessionId": loss["sessionId"], "procStart": stat[19], "cwd": "/home/ava/work"}
    (root / "sessions").mkdir()
    (root / "sessions" / f"{os.getpid()}.json").write_text(json.dumps(note))
    out = cli("rescue", "apply", loss["id"], "--claude", str(root), "--yes", home=tmp_path)
    assert out.exit_code == EXIT.BUSY and f"pid {os.getpid()}" in out.output and "quit it first" in out.output
    assert _bytes(root) == before


def test_a_guess_needs_accept_guess_and_unknown_ids_change_nothing(tmp_path: Path) -> None:
    root = _state(tmp_path)
    before = snapshot(root)
    out = cli("rescue", "apply", "ffffffff", "--yes", home=tmp_path)
    assert out.exit_code == EXIT.NOT_FOUND and "no OpenClaw state or Kurahi home found" in out.output
    out = cli("rescue", "apply", "ffffffff", "--yes", "--claude", str(root), home=tmp_path)
    assert out.exit_code == EXIT.NOT_FOUND and "no Claude Code loss" in out.output
    out = cli("rescue", "apply", _null(root, tmp_path)["id"], "--claude", str(root), home=tmp_path)
    assert out.exit_code == EXIT.USAGE and "pass --yes" in out.output
    assert snapshot(root) == before
