"""The two-process scan gives exactly what the one-process scan gives, on awkward files too.

The two-process scan is the Python scanner's; these tests switch the C scanner off.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kurahi.context import build_context
from kurahi.context.files import project_file
from kurahi.store import Transcript, native, parallel, twoproc
from kurahi.store.scan import file_reader, scan
from kurahi.testing import build_session

HEADER = '{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/"}'


def _summary(p: Path) -> tuple[object, ...]:
    with Transcript.open(p) as t:
        ctx = build_context(t.path_entries(t.path_indices(len(t) - 1)), t.leaf_id).to_dict() if len(t) else None
        sks = [(sk.type, sk.id, sk.parentId) for sk in t._skeletons]
        raws = [t.raw_line(i) for i in range(len(t))]
        lines = [t.line_of(i) for i in range(len(t))]
        warnings = [(w.line, w.message) for w in t.warnings]
        return ctx, sks, raws, lines, warnings, t.torn_tail, t.ends_with_newline


def _sequential(p: Path) -> tuple[object, ...]:
    fd = os.open(p, os.O_RDONLY)
    try:
        res = scan(file_reader(fd), os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return tuple((sk.type, sk.id, sk.parentId) for sk in res.skeletons), tuple(
        (w.line, w.message) for w in res.warnings
    )


@pytest.fixture(autouse=True)
def python_scanner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "ENABLED", False)


@pytest.fixture
def parallel_always(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Scan every file on two processes; the list records each fork (so tests can see it)."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    forks: list[int] = []
    real_fork = os.fork

    def counting_fork() -> int:
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(twoproc.os, "fork", counting_fork)
    return forks


def _messy(tmp_path: Path) -> Path:
    p = tmp_path / "messy.jsonl"
    build_session(p, entries=1500, seed=11)
    data = p.read_bytes().split(b"\n")
    mid = len(data) // 2
    # Damage around the middle, where the file is split: a bad line, a blank line, a second
    # header, a duplicated entry (the later copy must win), then a torn last line.
    dup = json.loads(data[mid + 3])
    dup["message"] = (
        {"role": "user", "content": "the later copy", "timestamp": 1} if "message" in dup else dup.get("message")
    )
    data[mid:mid] = [b"not json", b"", HEADER.encode(), json.dumps(dup).encode()]
    p.write_bytes(b"\n".join(data).rstrip(b"\n") + b'\n{"type":"message","id":"torn')
    return p


def test_parallel_scan_equals_sequential_on_a_messy_file(tmp_path: Path, parallel_always: list[int]) -> None:
    p = _messy(tmp_path)
    with Transcript.open(p) as t:
        assert parallel_always, "the two-process scan did not run"
        assert len(t.warnings) >= 3 and t.torn_tail is not None
        par = (
            tuple((sk.type, sk.id, sk.parentId) for sk in t._skeletons),
            tuple((w.line, w.message) for w in t.warnings),
        )
    assert par == _sequential(p)


def test_parallel_and_sequential_transcripts_agree_everywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _messy(tmp_path)
    seq = _summary(p)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    assert _summary(p) == seq
    monkeypatch.setattr("kurahi.context.files.BACKWARD_BUDGET", 1)  # force the full-scan route
    full = project_file(p).context.to_dict()
    monkeypatch.setattr("kurahi.context.files.BACKWARD_BUDGET", 1 << 40)  # and the backward one
    assert project_file(p).context.to_dict() == full == seq[0]


def test_repeated_id_on_the_path_falls_back_to_pis_rule(tmp_path: Path, parallel_always: list[int]) -> None:
    # "b" appears twice; the later line wins in Pi even though the first is nearer the leaf.
    rows = [
        HEADER,
        '{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"root"}}',
        '{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"early"}}',
        '{"type":"message","id":"c","parentId":"b","timestamp":"t","message":{"role":"user","content":"leafish"}}',
        '{"type":"message","id":"b","parentId":null,"timestamp":"t","message":{"role":"user","content":"late"}}',
        '{"type":"message","id":"d","parentId":"c","timestamp":"t","message":{"role":"user","content":"leaf"}}',
    ]
    p = tmp_path / "dup.jsonl"
    p.write_text("\n".join(rows) + "\n")
    want = ["late", "leafish", "leaf"]
    with Transcript.open(p) as t:
        got = build_context(t.path_entries(t.path_indices(len(t) - 1)), t.leaf_id).messages
    assert [m["content"] for m in got] == want
    assert [m["content"] for m in project_file(p).context.messages] == want
