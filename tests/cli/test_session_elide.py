"""`kurahi session elide`: a secret leaves the model's view by an append; the old bytes stay put."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from kurahi.context.files import project_file
from kurahi.lineage.elide import elide
from support.peer import PiPeer

SECRET = "sk-live-7Qf2-SECRET"


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args), terminal_width=200)
    return res.exit_code, res.output


def kurahi(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command, in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "kurahi.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def leaked(tmp_path: Path, pi: PiPeer) -> tuple[Path, dict[str, str]]:
    """A session Pi 1.6.0 wrote, where the user pasted a key and a tool result echoed it."""
    out = tmp_path / "leak.jsonl"
    script = [
        {"op": "system", "content": "You are Ava.", "timestamp": 1, "as": "sys"},
        {"op": "user", "text": f"deploy with {SECRET} please", "timestamp": 2, "as": "user"},
        {
            "op": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": ".env"}}],
            "timestamp": 3,
            "as": "call",
        },
        {
            "op": "toolResult",
            "toolCallId": "c1",
            "toolName": "read",
            "text": f"KEY={SECRET}",
            "timestamp": 4,
            "as": "tool",
        },
        {"op": "assistant", "text": "Deployed.", "timestamp": 5, "as": "reply"},
        {"op": "appendModelChange", "provider": "openai", "modelId": "gpt-5", "as": "model"},
        {"op": "user", "text": "abandoned", "timestamp": 6, "as": "side"},
        {"op": "branch", "id": "$model"},
        {"op": "user", "text": "thanks", "timestamp": 7, "as": "live"},
    ]
    (res,) = pi.batch("write", json.dumps([{"out": str(out), "script": script}]))
    assert "error" not in res, res
    return out, res["ids"]


def pi_context(pi: PiPeer, path: Path) -> list[Any]:
    (ctx,) = pi.contexts([path])
    assert "error" not in ctx, ctx
    return list(ctx["messages"])


def test_elide_end_to_end_pi_no_longer_sees_the_secret(leaked: tuple[Path, dict[str, str]], pi: PiPeer) -> None:
    path, ids = leaked
    before = path.read_bytes()
    assert SECRET in json.dumps(pi_context(pi, path))
    first = kurahi("session", "elide", str(path), "--entry", ids["user"])
    assert first.returncode == 0, first.stderr
    assert f"entry {ids['user']} (user message" in first.stdout and "removed it from the model's view" in first.stdout
    second = kurahi("session", "elide", str(path), "--entry", ids["tool"], "--replace", "KEY=[removed]", "--json")
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["kind"] == "toolResult" and report["replacement"] == "KEY=[removed]"
    # Never edited: the old bytes are a byte-identical prefix, and two lines were appended.
    after = path.read_bytes()
    assert after[: len(before)] == before
    added = [json.loads(x) for x in after[len(before) :].decode().splitlines()]
    assert [list(e) for e in added] == [["type", "id", "parentId", "timestamp", "targetId", "replacement"]] * 2
    assert added[0]["targetId"] == ids["user"] and added[0]["replacement"] is None
    assert added[1]["replacement"] == {"content": [{"type": "text", "text": "KEY=[removed]"}]}
    assert added[0]["parentId"] == ids["live"] and added[1]["parentId"] == added[0]["id"]
    # The second report vouches for the bytes before its own append: the original file and the first edit.
    first_edit = after[len(before) :].split(b"\n", 1)[0] + b"\n"
    assert report["bytesBefore"] == len(before) + len(first_edit)
    assert report["prefixSha256"] == hashlib.sha256(before + first_edit).hexdigest()
    # Pi 1.6.0 opens the result: the secret is gone from the model's view, the rest is there.
    ctx = pi_context(pi, path)
    assert SECRET not in json.dumps(ctx)
    assert [m["role"] for m in ctx] == ["system", "assistant", "toolResult", "assistant", "user"]
    assert ctx[2]["content"] == [{"type": "text", "text": "KEY=[removed]"}]
    # And Kurahi projects the same (the context room follows Pi 1.6.0's edits).
    assert project_file(path).context.to_dict()["messages"] == ctx
    assert not report["stillVisible"]


def test_elide_reports_the_context_before_and_after(leaked: tuple[Path, dict[str, str]]) -> None:
    path, ids = leaked
    report = elide(path, ids["user"])
    assert report.before.messages == 6 and report.leaf_id == ids["live"]
    assert report.line == 3 and report.kind == "user"
    # Once the projection applies edits, the context loses one message and its tokens.
    assert report.after.messages == report.before.messages - 1
    assert report.after.tokens is not None and report.before.tokens is not None
    assert report.after.tokens < report.before.tokens


@pytest.mark.parametrize(
    ("target", "code", "says"),
    [
        ("nope0000", EXIT.NOT_FOUND, "no entry with id 'nope0000'"),
        ("side", EXIT.INVALID, "not on the active branch"),
        ("sys", EXIT.INVALID, "a system message"),
        ("model", EXIT.INVALID, "a model_change entry"),
    ],
)
def test_bad_targets_exit_with_their_code_and_append_nothing(
    leaked: tuple[Path, dict[str, str]], target: str, code: int, says: str
) -> None:
    path, ids = leaked
    before = path.read_bytes()
    got, out = run("session", "elide", str(path), "--entry", ids.get(target, target))
    assert got == code and says in out and "nothing appended" in out
    assert path.read_bytes() == before


def test_an_edit_of_an_edit_is_refused(leaked: tuple[Path, dict[str, str]]) -> None:
    path, ids = leaked
    edit = elide(path, ids["user"]).edit_id
    before = path.read_bytes()
    code, out = run("session", "elide", str(path), "--entry", edit)
    assert code == EXIT.INVALID and "an edit of an edit is refused" in out
    assert path.read_bytes() == before


def test_files_that_cannot_take_an_elide(tmp_path: Path) -> None:
    code, out = run("session", "elide", str(tmp_path / "missing.jsonl"), "--entry", "x")
    assert code == EXIT.NOT_FOUND
    bad = tmp_path / "not-a-session.jsonl"
    bad.write_text('{"type":"message","id":"a"}\n')
    code, out = run("session", "elide", str(bad), "--entry", "a")
    assert code == EXIT.INVALID and bad.read_text() == '{"type":"message","id":"a"}\n'
    v1 = tmp_path / "v1.jsonl"
    v1.write_text(
        '{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"k","timestamp":1}}\n'
    )
    before = v1.read_bytes()
    code, out = run("session", "elide", str(v1), "--entry", "x")
    assert code == EXIT.USAGE and "older than 3" in out and v1.read_bytes() == before
    code, out = run("session", "elide", str(v1))
    assert code == EXIT.USAGE and "--entry" in out


def test_a_second_writer_is_refused(leaked: tuple[Path, dict[str, str]]) -> None:
    path, ids = leaked
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from kurahi.store.session import Session\n"
            f"s = Session.open({str(path)!r}); print('ready', flush=True); sys.stdin.read(); s.close()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        before = path.read_bytes()
        got = kurahi("session", "elide", str(path), "--entry", ids["user"])
        assert got.returncode == EXIT.BUSY, got.stderr
        assert path.read_bytes() == before
    finally:
        holder.communicate("", timeout=60)
    assert kurahi("session", "elide", str(path), "--entry", ids["user"]).returncode == 0


def test_help_says_what_it_does_not_do() -> None:
    code, out = run("session", "elide", "--help")
    flat = " ".join(out.split())
    assert code == 0 and "--entry" in out and "--replace" in out and "still in the file" in flat
