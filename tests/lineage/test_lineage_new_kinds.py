"""lineage stitch|check|draw over Pi 1.6.0's kinds: copied byte for byte, edits kept in meaning."""

from __future__ import annotations

import json
from pathlib import Path

from kurahi.lineage.check import check
from kurahi.lineage.draw import Node, draw_lineage
from kurahi.lineage.draw_render import render_svg
from kurahi.lineage.stitch import stitch
from kurahi.store.session import Session
from kurahi.testing import assistant_message, user_message
from support.peer import PiPeer

USAGE = {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3, "cost": {"total": 0}}


def write_a(path: Path, *, compact: bool = True) -> dict[str, str]:
    ids = {}
    with Session.create(path, cwd="/w") as s:
        ids["sys"] = s.append_system_message("You are Ava.", timestamp=1)
        ids["secret"] = s.append_message(user_message("only-here-Obsidian-9", 2))
        ids["a"] = s.append_message(assistant_message([{"type": "text", "text": "ok"}], 3))
        ids["usage"] = s.append_usage("cache_warm", "p", "m", USAGE)
        ids["edit"] = s.append_context_edit(ids["secret"], None)
        ids["kept"] = s.append_message(user_message("visible-Cobalt-3", 4))
        if compact:
            ids["comp"] = s.append_compaction("summary of A", ids["kept"], 50)
    return ids


def write_b(path: Path, a_target: str) -> dict[str, str]:
    ids = {}
    with Session.create(path, cwd="/w") as s:
        ids["b1"] = s.append_message(user_message("after the reset", 5))
        # What Pi would refuse (the target is not in this file), written as another tool might.
        ids["cross"] = s.append_entry({"type": "context_edit", "targetId": a_target, "replacement": None})
        ids["b2"] = s.append_message(assistant_message([{"type": "text", "text": "back"}], 6))
    return ids


def test_stitch_copies_the_new_kinds_byte_for_byte_and_flags_a_cross_file_edit(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    ids = write_a(a)
    bids = write_b(b, ids["kept"])
    report = stitch([a, b], c)
    out = c.read_bytes().split(b"\n")[1:]
    src = a.read_bytes().split(b"\n")[1:-1] + b.read_bytes().split(b"\n")[1:-1]
    # Every line identical, except the stitch edge's parentId on B's root.
    changed = [k for k, (x, y) in enumerate(zip(src, out, strict=False)) if x != y]
    assert changed == [len(a.read_bytes().split(b"\n")) - 2]
    for kind in (b'"context_edit"', b'"usage"', b'"systemMessage"', b'"role":"system"'):
        assert kind in c.read_bytes()
    (warning,) = report.warnings
    assert f"context_edit {bids['cross']} removes {ids['kept']}" in warning and "applies in the stitched one" in warning


def test_check_reports_a_marker_whose_only_occurrence_an_edit_removed_as_missing(tmp_path: Path, pi: PiPeer) -> None:
    a = tmp_path / "a.jsonl"
    write_a(a, compact=False)
    (ctx,) = pi.contexts([a])
    assert "Obsidian" not in json.dumps(ctx["messages"])  # Pi does not send it
    report = check(a, markers=["only-here-Obsidian-9", "visible-Cobalt-3"])
    found = {m.marker: m for m in report.markers}
    assert found["visible-Cobalt-3"].index is not None
    assert found["only-here-Obsidian-9"].index is None and not report.ok


def test_check_counts_the_compactions_system_message_as_its_summary_part(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    write_a(a)
    report = check(a, markers=["visible-Cobalt-3", "summary of A", "You are Ava."])
    found = {m.marker: m for m in report.markers}
    assert (report.summary, report.retained) == (2, 1)
    assert found["visible-Cobalt-3"].part == "retained"
    assert found["summary of A"].part == "summary"
    assert found["You are Ava."].part == "summary"  # the compaction's systemMessage, first of the two


def test_draw_marks_edits_and_what_they_removed_without_its_text(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    ids = write_a(a, compact=False)
    drawing = draw_lineage([a])
    nodes = {n.entry_id: n for n in drawing.columns[0].items if isinstance(n, Node)}
    assert "edit" in nodes[ids["edit"]].flags
    assert nodes[ids["edit"]].detail == f"context edit: removes {ids['secret']}"
    assert "removed" in nodes[ids["secret"]].flags
    assert nodes[ids["secret"]].detail == f"removed from the model's view by {ids['edit']}"
    assert "Obsidian" not in nodes[ids["secret"]].title
    svg = render_svg(drawing)
    assert "removed" in svg and ids["edit"] in svg
    # After the compaction the edit and its target both lie before the kept range: no effect.
    b = tmp_path / "b.jsonl"
    bids = write_a(b)
    nodes = {n.entry_id: n for n in draw_lineage([b]).columns[0].items if isinstance(n, Node)}
    assert nodes[bids["edit"]].detail.endswith("(no effect here)")
