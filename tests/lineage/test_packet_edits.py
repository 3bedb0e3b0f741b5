"""Evidence packets over context edits: a reply the model no longer sees is flagged with its edit."""

from __future__ import annotations

from pathlib import Path

from kurahi.lineage.packet import first_replies
from kurahi.store.session import Session
from kurahi.testing import assistant_message, user_message


def test_first_replies_flag_the_edit_that_removed_or_replaced_them(tmp_path: Path) -> None:
    p = tmp_path / "live.jsonl"
    with Session.create(p, cwd="/w") as s:
        s.append_message(user_message("q1", 1))
        r1 = s.append_message(assistant_message([{"type": "text", "text": "leaked Tourmaline-8"}], 2))
        s.append_message(user_message("q2", 3))
        r2 = s.append_message(assistant_message([{"type": "text", "text": "plain"}], 4))
        s.append_message(user_message("q3", 5))
        r3 = s.append_message(assistant_message([{"type": "text", "text": "also plain"}], 6))
        e1 = s.append_context_edit(r1, None)
        e2 = s.append_context_edit(r3, "also [edited]")
    got = {r["entryId"]: r for r in first_replies(p, 3)}
    assert got[r1]["contextEdit"] == {"id": e1, "removed": True}
    assert got[r3]["contextEdit"] == {"id": e2, "removed": False}
    assert "contextEdit" not in got[r2]
    # The reply itself is what was said (evidence), not what the model now sees of it.
    assert got[r1]["text"] == "leaked Tourmaline-8"
