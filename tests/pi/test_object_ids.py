"""An entry whose id is a JSON object or array: Pi's Map finds it only as the leaf itself.

Found by the check fuzz target: the full-scan reader looked the leaf up by value and
failed (no entry with that id), while Pi and the backward reader open the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kurahi.context.files import project_file
from kurahi.context.project import build_context
from kurahi.lineage.check import check
from kurahi.pi import Transcript
from kurahi.pi.read import native
from support.peer import PiPeer

HEADER = '{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/"}'
FIRST = json.dumps(
    {
        "type": "message",
        "id": "a1",
        "parentId": None,
        "timestamp": "2026-11-30T08:00:00.000Z",
        "message": {"role": "user", "content": "hi", "timestamp": 1},
    }
)


def _file(tmp_path: Path, name: str, odd_id: object, parent: object) -> Path:
    last = {"type": "message", "id": odd_id, "parentId": parent, "timestamp": "2026-11-30T08:00:01.000Z"}
    last["message"] = {"role": "user", "content": "odd", "timestamp": 2}
    p = tmp_path / f"{name}.jsonl"
    p.write_text("\n".join([HEADER, FIRST, json.dumps(last)]) + "\n")
    return p


@pytest.mark.pi
@pytest.mark.parametrize("c_scanner", [True, False])
def test_an_object_or_array_id_on_the_leaf_projects_as_pi_does(
    tmp_path: Path, pi: PiPeer, monkeypatch: pytest.MonkeyPatch, c_scanner: bool
) -> None:
    monkeypatch.setattr(native, "ENABLED", c_scanner)
    paths = [
        _file(tmp_path, "object", {"role": "user"}, "a1"),
        _file(tmp_path, "array", [1, 2], "a1"),
        _file(tmp_path, "object_parent", "b2", {"id": "a1"}),  # an object parent is found by nobody
    ]
    for p, live in zip(paths, pi.contexts(paths), strict=True):
        with Transcript.open(p) as t:
            path = t.path()
            ctx = build_context(path, t.leaf_id)
        assert [e.index for e in path] == ([0, 1] if p.stem != "object_parent" else [1]), p.name
        assert ctx.to_dict()["messages"] == live["messages"], p.name
        assert project_file(p).context.to_dict()["messages"] == live["messages"], p.name
        assert check(p).projections_agree, p.name
