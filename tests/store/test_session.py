"""The writer: Pi's shapes, no deferred flush, durable leaf moves, one writer, failure handling."""

from __future__ import annotations

import errno
import itertools
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kurahi.context.files import project_file
from kurahi.errors import AppendError, EntryNotFoundError, LockHeldError, UsageError
from kurahi.fs import durable as fsio
from kurahi.pi import Transcript
from kurahi.store.session import Session
from kurahi.testing import assistant_message, build_session, user_message


@pytest.fixture
def session_path(tmp_path: Path) -> Path:
    return tmp_path / "s.jsonl"


@pytest.fixture
def session(session_path: Path) -> Iterator[Session]:
    with Session.create(session_path, cwd="/home/ava", fsync="always") as s:
        yield s


def file_lines(p: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in p.read_text().splitlines()]


def test_header_is_on_disk_when_create_returns(session: Session, session_path: Path) -> None:
    (header,) = file_lines(session_path)
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["version"] == 3 and header["cwd"] == "/home/ava"
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", header["id"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", header["timestamp"])
    assert session_path.stat().st_mode & 0o777 == 0o600


def test_first_user_message_is_on_disk_before_any_assistant(session: Session, session_path: Path) -> None:
    uid = session.append_message(user_message("only me", 1))
    rows = file_lines(session_path)
    assert rows[-1]["id"] == uid and rows[-1]["message"]["content"] == "only me"


def test_every_entry_type_in_pis_key_order(session: Session, session_path: Path) -> None:
    u = session.append_message(user_message("q", 1))
    session.append_thinking_level_change("high")
    session.append_model_change("openai", "gpt-5")
    session.append_custom("ext", {"n": 1})
    session.append_custom("ext-no-data")
    session.append_custom_message("note", "text", False, {"k": 1})
    session.append_label(u, "start")
    session.append_label(u, None)
    session.append_session_info("  Named  ")
    session.append_compaction("sum", u, 1234, {"readFiles": []}, True)
    session.append_branch_summary(u, "went elsewhere")
    session.append_branch_summary(None, "from root")
    session.append_entry({"type": "future_kind", "payload": [1]})
    orders = [list(r) for r in file_lines(session_path)[1:]]
    assert orders == [
        ["type", "id", "parentId", "timestamp", "message"],
        ["type", "id", "parentId", "timestamp", "thinkingLevel"],
        ["type", "id", "parentId", "timestamp", "provider", "modelId"],
        ["type", "customType", "data", "id", "parentId", "timestamp"],
        ["type", "customType", "id", "parentId", "timestamp"],
        ["type", "customType", "content", "display", "details", "id", "parentId", "timestamp"],
        ["type", "id", "parentId", "timestamp", "targetId", "label"],
        ["type", "id", "parentId", "timestamp", "targetId"],
        ["type", "id", "parentId", "timestamp", "name"],
        ["type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore", "details", "fromHook"],
        ["type", "id", "parentId", "timestamp", "fromId", "summary"],
        ["type", "id", "parentId", "timestamp", "fromId", "summary"],
        ["type", "id", "parentId", "timestamp", "payload"],
    ]
    rows = file_lines(session_path)
    assert rows[9]["name"] == "Named"
    assert rows[11]["parentId"] == u and rows[11]["fromId"] == u
    assert rows[12]["parentId"] is None and rows[12]["fromId"] == "root"
    ids = [r["id"] for r in rows[1:]]
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids) and len(set(ids)) == len(ids)
    # Each entry's parent is the entry before it, except where a branch summary moved the leaf.
    for prev, row in itertools.pairwise(rows[1:]):
        if row["type"] != "branch_summary":
            assert row["parentId"] == prev["id"]


def test_references_to_unknown_entries_are_refused(session: Session) -> None:
    for call in (
        lambda: session.append_label("nope", "x"),
        lambda: session.branch("nope"),
        lambda: session.append_branch_summary("nope", "s"),
        lambda: session.append_compaction("s", "nope", 1),
    ):
        with pytest.raises(EntryNotFoundError, match="nope"):
            call()
    with pytest.raises(UsageError):
        session.append_message({"content": "no role"})
    with pytest.raises(UsageError):
        session.append_entry({"type": "session"})


def test_durable_leaf_move_survives_reopen(session_path: Path) -> None:
    with Session.create(session_path, cwd="/w") as s:
        a = s.append_message(user_message("A", 1))
        s.append_message(assistant_message([{"type": "text", "text": "B"}], 2))
        s.branch(a)
    # Reopened: the projection ends at A, in Pi's reading (the last line) and in Kurahi's.
    assert [m["content"] for m in project_file(session_path).context.messages] == ["A"]
    with Session.open(session_path) as s:
        assert s.leaf_id == a
        c = s.append_message(assistant_message([{"type": "text", "text": "C"}], 3))
    with Transcript.open(session_path) as t:
        assert t.entry(c).parent_id == a  # C hangs off A, not off the marker
    texts = [
        m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
        for m in project_file(session_path).context.messages
    ]
    assert texts == ["A", "C"]


def test_reset_leaf_is_durable_too(session_path: Path) -> None:
    with Session.create(session_path, cwd="/w") as s:
        s.append_message(user_message("A", 1))
        s.branch(None)
    ctx = project_file(session_path).context
    assert ctx.messages == [] and ctx.thinking_level == "off" and ctx.model is None
    with Session.open(session_path) as s:
        assert s.leaf_id is None
        root = s.append_message(user_message("new root", 2))
    with Transcript.open(session_path) as t:
        assert t.entry(root).parent_id is None


def test_second_writer_gets_a_clear_error(session: Session, session_path: Path) -> None:
    with pytest.raises(LockHeldError) as err:
        Session.open(session_path)
    assert str(err.value).count("process") >= 1 and "s.jsonl" in str(err.value)


def test_lock_left_by_a_dead_process_is_reclaimed(session_path: Path) -> None:
    Session.create(session_path, cwd="/w").close()
    code = (
        "import sys,time; from kurahi.store.session import Session; "
        f"s=Session.open({str(session_path)!r}); print('locked', flush=True); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        with pytest.raises(LockHeldError) as err:
            Session.open(session_path)
        assert err.value.holder_pid == child.pid
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    with Session.open(session_path) as s:  # the kernel dropped the dead holder's lock
        s.append_message(user_message("after", 1))


def test_a_torn_tail_does_not_swallow_the_next_entry(session_path: Path) -> None:
    with Session.create(session_path, cwd="/w") as s:
        s.append_message(user_message("kept", 1))
    with open(session_path, "ab") as fh:
        fh.write(b'{"type":"message","id":"torn')
    with Session.open(session_path) as s:
        nid = s.append_message(user_message("next", 2))
    with Transcript.open(session_path) as t:
        assert nid in t and len(t) == 2
    assert [m["content"] for m in project_file(session_path).context.messages] == ["kept", "next"]


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO])
def test_failed_write_leaves_file_readable_and_next_append_works(
    session: Session, session_path: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    kept = session.append_message(user_message("kept", 1))
    real_write = fsio.ops.write
    calls = {"n": 0}

    def short_then_fail(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data)[:7])  # a short write...
        raise OSError(err, "injected")  # ...then the disk gives up

    monkeypatch.setattr(fsio.ops, "write", short_then_fail)
    with pytest.raises(AppendError) as exc:
        session.append_message(user_message("lost", 2))
    assert "every earlier entry" in str(exc.value)
    monkeypatch.setattr(fsio.ops, "write", real_write)
    with Transcript.open(session_path) as t:
        assert kept in t and len(t) == 1 and not t.warnings
    nxt = session.append_message(user_message("next", 3))
    with Transcript.open(session_path) as t:
        assert [e.id for e in t.path()] == [kept, nxt]


def test_fsync_failure_is_reported(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(fd: int) -> None:
        raise OSError(errno.EIO, "injected")

    monkeypatch.setattr(fsio.ops, "fdatasync", fail)
    with pytest.raises(AppendError, match="append failed"):
        session.append_message(user_message("x", 1))


def test_create_never_overwrites(session_path: Path) -> None:
    session_path.write_text("precious\n")
    with pytest.raises(UsageError, match="never overwrites"):
        Session.create(session_path, cwd="/w")
    assert session_path.read_text() == "precious\n"


def test_refuses_to_append_to_unmigrated_files(tmp_path: Path) -> None:
    p = tmp_path / "v1.jsonl"
    p.write_text(
        '{"type":"session","id":"x","timestamp":"t","cwd":"/"}\n{"type":"message","message":{"role":"user"}}\n'
    )
    before = p.read_bytes()
    with pytest.raises(UsageError, match="older"):
        Session.open(p)
    assert p.read_bytes() == before


def test_sync_policy_turn_defers_fsync_until_sync(session_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = fsio.ops.fdatasync
    monkeypatch.setattr(fsio.ops, "fdatasync", lambda fd: (synced.append(fd), real(fd))[1])
    with Session.create(session_path, cwd="/w", fsync="turn") as s:
        synced.clear()
        s.append_message(user_message("a", 1))
        s.append_message(user_message("b", 2))
        assert synced == []
        s.sync()
        assert len(synced) == 1
        s.sync()
        assert len(synced) == 1  # nothing new to sync


def test_build_session_makes_a_realistic_tree(tmp_path: Path) -> None:
    p = tmp_path / "b.jsonl"
    report = build_session(p, entries=600, seed=3, markers=["PLANTED-1"])
    with Transcript.open(p) as t:
        assert len(t) >= 600
        kinds = {e.type for e in t.entries()}
    assert {"message", "model_change", "thinking_level_change"} <= kinds
    assert report.markers == ["PLANTED-1"] and "PLANTED-1" in p.read_text()


def test_each_entry_is_one_write_and_always_syncs_each(session_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[int] = []
    syncs: list[int] = []
    real_write, real_sync = fsio.ops.write, fsio.ops.fdatasync
    monkeypatch.setattr(fsio.ops, "write", lambda fd, data: (writes.append(len(data)), real_write(fd, data))[1])
    monkeypatch.setattr(fsio.ops, "fdatasync", lambda fd: (syncs.append(fd), real_sync(fd))[1])
    with Session.create(session_path, cwd="/w", fsync="always") as s:
        writes.clear()
        syncs.clear()
        for i in range(5):
            s.append_message(user_message(f"message {i}", i))
        assert len(writes) == 5 and len(syncs) == 5
    lines = session_path.read_bytes().split(b"\n")[1:-1]
    assert [len(x) + 1 for x in lines] == writes  # each write was one whole line, newline included


def test_projection_stops_reading_once_settled(tmp_path: Path) -> None:
    p = tmp_path / "long.jsonl"
    with Session.create(p, cwd="/w", fsync="never") as s:
        first = s.append_message(user_message("old history", 0))
        for i in range(3000):
            s.append_message(user_message(f"turn {i}", i))
        s.append_thinking_level_change("low")
        kept = s.append_message(user_message("kept", 1))
        s.append_compaction("everything before", kept, 5000)
        s.append_message(assistant_message([{"type": "text", "text": "latest"}], 2))
    fc = project_file(p)
    assert fc.entries_read < 1000 < 3000  # thinking level, model and the compaction window sit at the end
    assert [m.get("summary", m.get("content")) for m in fc.context.messages][:2] == ["everything before", "kept"]
    assert fc.context.thinking_level == "low"
    with Transcript.open(p) as t:
        assert first in t and len(t) == 3005


def test_a_lone_surrogate_is_written_as_json_stringify_writes_it(session_path: Path, pi: Any) -> None:
    """JSON can carry a lone surrogate (``\\ud800``), UTF-8 cannot: such a message is still appended."""
    text = "half a pair: \ud800 and \udfff, a whole one: \U0001f600"
    with Session.create(session_path, cwd="/home/ava", fsync="never") as s:
        s.append_message(user_message(text, 1_764_489_600_000))
        s.append_message(assistant_message([{"type": "text", "text": "ok"}], 1_764_489_601_000))
    raw = session_path.read_bytes()
    assert b"\\ud800" in raw and b"\\udfff" in raw and "\U0001f600".encode() in raw
    ours = project_file(session_path).context.to_dict()["messages"]
    assert ours[0]["content"] == text
    assert pi.context(session_path)["messages"] == ours
