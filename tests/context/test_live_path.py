"""``session context --json`` of a path without compactions or edits, projected from the C table.

``project_file(..., copy_stored=True)`` keeps such a path in C (``Table.path``) and reads only
the entries it must (the settings, the messages up to the first assistant from the leaf, what
is not copied as stored). It must give what the entry-by-entry projection
(:func:`~kurahi.context.project.project_from_leaf`) gives: the same messages, settings,
warnings and JSON bytes. Pi's own bytes are compared in ``tests/pi/test_copy_stored.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.context import files
from kurahi.context.files import project_file
from kurahi.lineage.check import messages_sha256
from kurahi.pi.read import native
from kurahi.testing.sessions import write_session

pytestmark = pytest.mark.skipif(not native.available(), reason="!!! C scanner not built: the live path is its job !!!")

HEADER = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-12-01T00:00:00.000Z", "cwd": "/w"}


def _write(path: Path, entries: list[dict[str, Any]]) -> Path:
    parent = None
    lines = [json.dumps(HEADER)]
    for i, e in enumerate(entries):
        e = {"id": f"e{i}", "parentId": parent, "timestamp": "2026-12-01T00:00:01.000Z", **e}
        parent = e["id"]
        lines.append(json.dumps(e, separators=(",", ":"), ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _live_and_plain(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, int]:
    used = []
    real = files._project_live

    def spy(*args: Any) -> Any:
        got = real(*args)
        used.append(got is not None)
        return got

    monkeypatch.setattr(files, "_project_live", spy)
    live = project_file(path, copy_stored=True)
    monkeypatch.setattr(files, "_project_live", real)
    plain = project_file(path)  # not copied: every entry projected one by one
    return live, plain, sum(used)


def _assert_same(live: Any, plain: Any) -> None:
    a, b = live.context, plain.context
    assert (a.leaf_id, a.thinking_level, a.model) == (b.leaf_id, b.thinking_level, b.model)
    assert [(w.line, w.message) for w in a.warnings] == [(w.line, w.message) for w in b.warnings]
    assert len(a.messages) == len(b.messages)
    assert [json.loads(bytes(m)) if native.is_copied(m) else m for m in a.messages] == b.messages
    assert a.to_json() == b.to_json()
    assert messages_sha256(a.messages) == messages_sha256(b.messages)  # lineage check's hash, read in place


def _msg(role: str, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": [{"type": "text", "text": role}], **extra}}


CASES: dict[str, list[dict[str, Any]]] = {
    "the model of the nearest assistant": [
        {"type": "model_change", "provider": "p0", "modelId": "m0"},
        _msg("user"),
        _msg("assistant", provider="p1", model="m1"),
        _msg("user"),
    ],
    "the model of a nearer model_change": [
        _msg("assistant", provider="p1", model="m1"),
        {"type": "model_change", "provider": "p2", "modelId": "m2"},
        _msg("user"),
    ],
    "a model_change without a model": [_msg("user"), {"type": "model_change", "provider": "p3"}],
    "no model at all": [_msg("user"), _msg("toolResult", toolCallId="t")],
    "an assistant without provider": [_msg("assistant"), _msg("user")],
    "thinking levels": [
        {"type": "thinking_level_change", "thinkingLevel": "high"},
        _msg("user"),
        {"type": "thinking_level_change"},
        _msg("user"),
    ],
    "entries Pi would crash on, and null content": [
        {"type": "message"},
        {"type": "message", "message": None},
        {"type": "message", "message": {"role": "user", "content": None}},
        {"type": "message", "message": {"role": "system"}},
        {"type": "message", "message": "not an object"},
        _msg("user"),
    ],
    "custom messages and summaries": [
        {"type": "custom_message", "customType": "note", "content": "a note", "display": False, "details": {"x": 1}},
        {"type": "custom_message", "content": None},
        {"type": "branch_summary", "fromId": "e0", "summary": "went back"},
        {"type": "branch_summary", "fromId": "e0", "summary": ""},
        {"type": "label", "targetId": "e0", "label": "x"},
        {"type": "custom", "customType": "leaf", "data": {}},
    ],
    "messages that are not copied": [
        {"type": "message", "message": {"role": "user", "content": "caf\u00e9 😀", "n": 1e21}},
        {"type": "message", "message": {"role": "user", "content": "x", "d": {"b": 1, "1": 2}}},
        _msg("user"),
    ],
    "a context_edit (the entry-by-entry way)": [
        _msg("user"),
        {"type": "context_edit", "targetId": "e0", "replacement": {"content": "edited"}},
        _msg("user"),
    ],
    "a compaction (the entry-by-entry way)": [
        _msg("user"),
        {"type": "compaction", "summary": "S", "firstKeptEntryId": "e0", "tokensBefore": 5},
        _msg("user"),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_written_paths(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    live, plain, used = _live_and_plain(_write(tmp_path / "s.jsonl", CASES[name]), monkeypatch)
    _assert_same(live, plain)
    assert used == ("the entry-by-entry way" not in name)


@pytest.mark.parametrize("seed", range(8))
def test_generated_paths(seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "g.jsonl"
    write_session(p, entries=1500, seed=seed, branch=0.1 * (seed % 3), compact_every=0, new_kinds=seed % 2 == 1)
    live, plain, _ = _live_and_plain(p, monkeypatch)
    _assert_same(live, plain)


def test_a_large_live_path_is_projected_from_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the size the quick way skims, the whole file is scanned once and the path stays in C."""
    p = tmp_path / "big.jsonl"
    write_session(p, entries=12000, seed=3, branch=0, compact_every=0)
    assert p.stat().st_size > files.SKIM_MIN_BYTES
    live, plain, used = _live_and_plain(p, monkeypatch)
    assert used
    _assert_same(live, plain)
    assert sum(native.is_copied(m) for m in live.context.messages) > 0.9 * len(live.context.messages)
