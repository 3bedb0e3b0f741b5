"""Provenance with context edits: what an edit removed is never context; a replacement is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kurahi.lineage.provenance import provenance
from kurahi.store.session import Session
from kurahi.testing import assistant_message, user_message


def say(text: str, ts: int) -> dict[str, Any]:
    return assistant_message([{"type": "text", "text": text}], ts)


def session(path: Path, *, edit_after_reply: bool = False) -> dict[str, str]:
    ids: dict[str, str] = {}
    with Session.create(path, cwd="/w") as s:
        ids["gone"] = s.append_message(user_message("my locker code is Marigold-77", 1))
        s.append_message(say("Stored.", 2))
        ids["swapped"] = s.append_message(user_message("the backup word is Heliotrope", 3))
        s.append_message(say("Fine.", 4))
        if not edit_after_reply:
            ids["e1"] = s.append_context_edit(ids["gone"], None)
            ids["e2"] = s.append_context_edit(ids["swapped"], "the backup word is Saffron-12")
        ids["cue"] = s.append_message(user_message("What do you remember?", 5))
        ids["reply"] = s.append_message(say("Marigold-77, Saffron-12 and Heliotrope.", 6))
        if edit_after_reply:
            s.append_context_edit(ids["gone"], None)
    return ids


def by_phrase(report: Any) -> dict[str, Any]:
    return {p.phrase: p for p in report.phrases}


def test_removed_text_is_never_context_and_a_replacement_is(tmp_path: Path) -> None:
    t = tmp_path / "s.jsonl"
    ids = session(t)
    r = provenance(t, reply_id=ids["reply"], phrases=["Marigold-77", "Saffron-12", "Heliotrope"])
    got = by_phrase(r)
    assert got["Marigold-77"].verdict == "elsewhere"
    assert got["Marigold-77"].counts == {"transcript": 1}
    assert got["Marigold-77"].occurrences[0].where["region"] == "elided"
    assert got["Marigold-77"].occurrences[0].where["entryId"] == ids["gone"]
    assert got["Heliotrope"].verdict == "elsewhere" and got["Heliotrope"].occurrences[0].where["region"] == "elided"
    assert got["Saffron-12"].verdict == "context-only"
    (hit,) = [o for o in got["Saffron-12"].occurrences if o.source == "context"]
    assert hit.where["entryId"] == ids["swapped"] and hit.where["region"] == "messages"
    # The edit entry holding the replacement is the context's, not a second, off-context place.
    assert got["Saffron-12"].counts == {"context": 1}
    # The removed entry is not in the count of what the reply's call was sent.
    assert r.context_messages == 4  # two turns (one message removed), plus the cue


def test_an_edit_after_the_reply_does_not_change_what_that_reply_saw(tmp_path: Path) -> None:
    t = tmp_path / "s.jsonl"
    ids = session(t, edit_after_reply=True)
    got = by_phrase(provenance(t, reply_id=ids["reply"], phrases=["Marigold-77"]))
    assert got["Marigold-77"].verdict == "context-only"


def test_an_elided_cue_is_not_a_cue(tmp_path: Path) -> None:
    t = tmp_path / "s.jsonl"
    with Session.create(t, cwd="/w") as s:
        cue = s.append_message(user_message("call Juniper-5 now", 1))
        s.append_context_edit(cue, "call [someone] now")
        reply = s.append_message(say("Calling Juniper-5.", 2))
    got = by_phrase(provenance(t, reply_id=reply, phrases=["Juniper-5", "[someone]"]))
    assert got["Juniper-5"].verdict == "elsewhere"
    assert got["[someone]"].verdict == "cue"
