"""`kurahi session doctor`: findings, the appended mend, and every refusal writing nothing."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from kurahi.store.session import Session

HEADER = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-12-01T00:00:00.000Z", "cwd": "/w"}


def run(*args: str, stdin: bytes | None = None) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args), input=stdin, terminal_width=300)
    return res.exit_code, res.output


def write(path: Path, *entries: dict[str, Any], tail: bytes = b"") -> Path:
    path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in (HEADER, *entries)) + tail)
    return path


def msg(i: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": i, "parentId": parent, "timestamp": "2026-12-01T00:00:01.000Z", "message": message}


def bricked(path: Path) -> Path:
    """The issue's case: a compaction that keeps from a tool result whose call it summarised."""
    a1 = {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "call_1", "name": "read", "arguments": {}}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "stopReason": "toolUse",
    }
    a2 = {**a1, "content": [{"type": "text", "text": "done"}], "stopReason": "stop"}
    r1 = {"role": "toolResult", "toolCallId": "call_1", "toolName": "read", "content": [{"type": "text", "text": "x"}]}
    return write(
        path,
        msg("u1", None, {"role": "user", "content": "read a"}),
        msg("a1", "u1", a1),
        msg("r1", "a1", r1),
        msg("a2", "r1", a2),
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "a2",
            "timestamp": "2026-12-01T00:00:02.000Z",
            "summary": "EARLIER SUMMARY",
            "firstKeptEntryId": "r1",
            "tokensBefore": 1,
        },
        msg("u2", "c1", {"role": "user", "content": "now?"}),
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def last_json(out: str) -> dict[str, Any]:
    return json.loads(out.strip().splitlines()[-1])


def test_the_finding_names_the_entry_the_rule_the_providers_and_the_runtimes(tmp_path: Path) -> None:
    f = bricked(tmp_path / "s.jsonl")
    code, out = run("session", "doctor", str(f))
    assert code == EXIT.FAILED
    assert "result-without-call at entry r1 (line 4)" in out
    assert "refused by: anthropic-messages, openai-completions, openai-responses" in out
    assert "repaired before sending by: openclaw-2026.5" in out
    code, out = run("session", "doctor", str(f), "--json")
    report = last_json(out)
    assert code == EXIT.FAILED and report["ok"] is False
    assert [(x["entryId"], x["code"]) for x in report["failing"]] == [("r1", "result-without-call")]
    # OpenClaw drops the orphan itself before sending: for it alone, the request is valid.
    assert run("session", "doctor", str(f), "--runtime", "openclaw-2026.5")[0] == EXIT.OK


def test_dry_run_prints_the_entry_and_writes_nothing(tmp_path: Path) -> None:
    f = bricked(tmp_path / "s.jsonl")
    before = digest(f)
    code, out = run("session", "doctor", str(f), "--fix", "--dry-run", "--json")
    plan = last_json(out)
    assert code == EXIT.OK and plan["dryRun"] is True and plan["method"] == "compaction"
    (entry,) = plan["entries"]
    assert entry["firstKeptEntryId"] == "a2" and entry["summary"].startswith("EARLIER SUMMARY\n\n")
    assert digest(f) == before and not Path(str(f) + ".lock").exists()


@pytest.mark.parametrize(
    ("runtime", "kind"),
    [(None, "compaction"), ("pi-0.73", "compaction"), ("openclaw-2026.5", None), ("pi-1.6", "context_edit")],
)
def test_fix_appends_what_the_runtime_honours_and_nothing_else(
    tmp_path: Path, runtime: str | None, kind: str | None
) -> None:
    f = bricked(tmp_path / "s.jsonl")
    old = f.read_bytes()
    args = ["session", "doctor", str(f), "--fix", "--json"] + (["--runtime", runtime] if runtime else [])
    code, out = run(*args)
    report = last_json(out)
    assert code == EXIT.OK, out
    new = f.read_bytes()
    assert new[: len(old)] == old
    if kind is None:  # nothing fails for OpenClaw: nothing to append
        assert new == old and report["method"] == "none"
        return
    (line,) = new[len(old) :].splitlines()
    appended = json.loads(line)
    assert appended["type"] == kind and appended["parentId"] == "u2" and report["appendedIds"] == [appended["id"]]
    if kind == "context_edit":
        assert (appended["targetId"], appended["replacement"]) == ("r1", None)
    else:
        assert appended["firstKeptEntryId"] == "a2" and "systemMessage" not in appended
    assert report["prefixSha256"] == hashlib.sha256(old).hexdigest()
    assert run("session", "doctor", str(f), *(["--runtime", runtime] if runtime else []))[0] == EXIT.OK


def test_a_torn_tail_is_mended_by_an_append_that_starts_on_its_own_line(tmp_path: Path) -> None:
    f = write(
        tmp_path / "t.jsonl", msg("u1", None, {"role": "user", "content": "hi"}), tail=b'{"type":"message","id":"u2"'
    )
    assert run("session", "doctor", str(f))[0] == EXIT.FAILED  # Pi 0.73.1 would lose its next append
    assert run("session", "doctor", str(f), "--runtime", "pi-1.6")[0] == EXIT.OK  # 1.6 mends it on open
    old = f.read_bytes()
    code, out = run("session", "doctor", str(f), "--fix")
    assert code == EXIT.OK, out
    new = f.read_bytes()
    assert new.startswith(old) and new.endswith(b"\n")
    marker = json.loads(new.splitlines()[-1])
    assert marker["type"] == "custom" and marker["customType"] == "kurahi-session-doctor" and marker["parentId"] == "u1"
    assert run("session", "doctor", str(f))[0] == EXIT.OK


@pytest.mark.parametrize(
    ("name", "setup", "args", "exit_code", "says"),
    [
        ("empty", lambda p: p.write_bytes(b""), ["--fix"], EXIT.INVALID, "not a session"),
        ("not a session", lambda p: p.write_text("hello\n"), ["--fix"], EXIT.INVALID, "not a session"),
        ("missing", lambda p: None, [], EXIT.NOT_FOUND, "no such file"),
        ("unknown runtime", bricked, ["--fix", "--runtime", "pi-9"], EXIT.USAGE, "not a runtime Kurahi knows"),
        ("sqlite-era OpenClaw", bricked, ["--fix", "--runtime", "openclaw-2026.9"], EXIT.FAILED, "SQLite"),
        ("dry run alone", bricked, ["--dry-run"], EXIT.USAGE, "--dry-run goes with --fix"),
        (
            "a parent cycle has no appended mend",
            lambda p: write(
                p, msg("a", "b", {"role": "user", "content": "x"}), msg("b", "a", {"role": "user", "content": "y"})
            ),
            ["--fix"],
            EXIT.FAILED,
            "no appended mend for parent-cycle",
        ),
    ],
)
def test_bad_input_is_a_clear_error_and_nothing_is_written(
    tmp_path: Path, name: str, setup: Any, args: list[str], exit_code: int, says: str
) -> None:
    f = tmp_path / "x.jsonl"
    setup(f)
    before = f.read_bytes() if f.exists() else None
    code, out = run("session", "doctor", str(f), *args)
    assert code == exit_code, (name, out)
    assert says in out and "Traceback" not in out
    assert (f.read_bytes() if f.exists() else None) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == (["x.jsonl"] if before is not None else [])


def test_a_session_held_by_a_writer_is_refused(tmp_path: Path) -> None:
    f = bricked(tmp_path / "s.jsonl")
    before = f.read_bytes()
    with Session.open(f):
        code, out = run("session", "doctor", str(f), "--fix")
    assert code == EXIT.BUSY and "only one writer" in out
    assert f.read_bytes() == before


def test_openclaws_sidecar_lock_with_a_live_pid_is_refused(tmp_path: Path) -> None:
    f = bricked(tmp_path / "s.jsonl")
    before = f.read_bytes()
    lock = tmp_path / "s.jsonl.lock"
    # OpenClaw 2026.5 writes {pid, createdAt, maxHoldMs} into <file>.lock (O_EXCL, no flock).
    payload = json.dumps({"pid": os.getppid(), "createdAt": "2026-12-01T00:00:00.000Z", "maxHoldMs": 300000})
    lock.write_text(payload)
    code, out = run("session", "doctor", str(f), "--fix")
    assert code == EXIT.BUSY and f"pid {os.getppid()}" in out
    assert f.read_bytes() == before and lock.read_text() == payload


def test_stdin_is_checked_but_never_mended(tmp_path: Path) -> None:
    data = bricked(tmp_path / "s.jsonl").read_bytes()
    code, out = run("session", "doctor", "-", "--json", stdin=data)
    assert code == EXIT.FAILED and last_json(out)["file"] == "<stdin>"
    code, out = run("session", "doctor", "-", "--fix", stdin=data)
    assert code == EXIT.USAGE and "name the file" in out


def test_a_line_nested_100000_deep_is_read_without_a_traceback(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    f = tmp_path / "d.jsonl"
    f.write_bytes(
        json.dumps(HEADER).encode()
        + b'\n{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":'
        + deep.encode()
        + b"}}\n"
    )
    code, out = run("session", "doctor", str(f), "--fix")
    assert code == EXIT.OK and "Traceback" not in out
