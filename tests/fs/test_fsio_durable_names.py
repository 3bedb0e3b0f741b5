"""New files and folders are fsynced into their directories (the crash-state exploration's finds, issue 20).

Each test watches the fsyncs made through ``kurahi.fs.durable.ops`` and names the directory
each one flushed. The power-cut states these fsyncs rule out are explored in
``tests/crashstates``; here the writer is held to making them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from kurahi.agent.jobs import JobStore
from kurahi.agent.ledger import Ledger
from kurahi.fs import durable as fsio
from kurahi.lineage.packet import verify_packet, write_packet
from kurahi.store.audit.log_file import AuditChain
from kurahi.store.record_log import FileRecordLog
from kurahi.testing import build_session


@pytest.fixture
def synced_dirs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The directories fsynced through the seam, in order (files fsynced are listed as ``file:<path>``)."""
    seen: list[str] = []
    real = fsio.ops.fsync

    def spy(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        seen.append(path if stat.S_ISDIR(os.fstat(fd).st_mode) else f"file:{path}")
        real(fd)

    monkeypatch.setattr(fsio.ops, "fsync", spy)
    yield seen


def test_make_dirs_fsyncs_each_new_folder_into_its_parent(tmp_path: Path, synced_dirs: list[str]) -> None:
    fsio.make_dirs(tmp_path / "a" / "b" / "c")
    assert (tmp_path / "a" / "b" / "c").is_dir()
    assert synced_dirs == [str(tmp_path), str(tmp_path / "a"), str(tmp_path / "a" / "b")]
    synced_dirs.clear()
    fsio.make_dirs(tmp_path / "a" / "b" / "c")  # nothing new: nothing to make durable
    assert synced_dirs == []


def test_make_dirs_refuses_a_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(OSError):
        fsio.make_dirs(tmp_path / "f" / "g")


@pytest.mark.parametrize("log", ["ledger", "jobs", "queue"])
def test_a_new_journal_is_fsynced_into_its_folder_before_its_first_record_returns(
    tmp_path: Path, synced_dirs: list[str], log: str
) -> None:
    path = tmp_path / "state" / f"{log}.jsonl"
    journal = FileRecordLog(path)
    if log == "ledger":
        Ledger(journal).intent("sess", "c0", "write", {"path": "f"})
    elif log == "jobs":
        JobStore(journal).create("agent:main:main")
    else:
        journal.append({"op": "queued", "qid": "q0"})
    assert synced_dirs == [str(tmp_path), str(tmp_path / "state")]
    synced_dirs.clear()
    journal.append({"op": "queued", "qid": "q1"})  # an existing file: no directory fsync
    assert synced_dirs == []
    journal.close()
    reopened = FileRecordLog(path)
    reopened.append({"op": "queued", "qid": "q2"})
    assert synced_dirs == [], "a journal that already exists is not fsynced into its folder again"
    reopened.close()


def test_a_new_audit_chain_folder_is_fsynced_into_the_home(tmp_path: Path, synced_dirs: list[str]) -> None:
    AuditChain(tmp_path / "audit" / "chain.jsonl").append("cli", "test", {})
    assert synced_dirs[:2] == [str(tmp_path), str(tmp_path / "audit")]


def test_an_evidence_packet_fsyncs_every_copy_and_folder(tmp_path: Path, synced_dirs: list[str]) -> None:
    a, b = tmp_path / "A.jsonl", tmp_path / "B.jsonl"
    build_session(a, entries=10, seed=1)
    build_session(b, entries=10, seed=2)
    folder = write_packet(tmp_path / "packet", sources=[a, b], replies=1)
    assert verify_packet(folder).ok
    for name in ("A.jsonl", "B.jsonl"):
        assert f"file:{folder / 'sources' / name}" in synced_dirs
    assert str(folder / "sources") in synced_dirs and str(tmp_path) in synced_dirs
