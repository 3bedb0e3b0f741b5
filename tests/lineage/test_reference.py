"""The reference projection reads every line in full, even though it keeps only three keys."""

from __future__ import annotations

import json
from pathlib import Path

from kurahi.context.files import project_file
from kurahi.lineage.check import messages_sha256
from kurahi.lineage.reference import reference_projection

HEADER = '{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/"}'


def _msg(i: int, parent: str | None, content: str) -> str:
    return json.dumps(
        {
            "type": "message",
            "id": f"e{i}",
            "parentId": parent,
            "timestamp": "2026-11-30T08:00:00.000Z",
            "message": {"role": "user", "content": content, "timestamp": 1},
        }
    )


def test_a_line_broken_deep_inside_is_dropped(tmp_path: Path) -> None:
    # The three keys parse; the damage sits in the content, after them. JSON.parse refuses
    # the line, so Pi's leaf is the entry before it.
    broken = '{"type":"message","id":"e3","parentId":"e2","message":{"role":"user","content":["ok",]}}'
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join([HEADER, _msg(1, None, "one"), _msg(2, "e1", "two"), broken]) + "\n")
    ref = reference_projection(p)
    assert [m["content"] for m in ref.messages] == ["one", "two"]
    assert messages_sha256(ref.messages) == messages_sha256(project_file(p).context.messages)


def test_lines_msgspec_refuses_are_read_by_the_standard_library(tmp_path: Path) -> None:
    # A lone surrogate escape: JSON.parse takes it, msgspec does not.
    p = tmp_path / "t.jsonl"
    lone = _msg(2, "e1", "x").replace('"x"', '"\\ud800"')
    p.write_text("\n".join([HEADER, _msg(1, None, "one"), lone, "[1, 2]", _msg(3, "e2", "three")]) + "\n")
    ref = reference_projection(p)
    assert [m["content"] for m in ref.messages] == ["one", "\ud800", "three"]
    assert messages_sha256(ref.messages) == messages_sha256(project_file(p).context.messages)
