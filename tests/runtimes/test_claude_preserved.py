"""``preserved-missing``: the rows a compaction kept, rebuilt from the request records of the same file.

Sessions are built as 2.1.332 writes a compaction (the last reply and its ``stop_hook_summary``
kept, the summary, the command's caveat, the next turn, and the record of the first request
after it: ``[summary, an empty system entry, the kept reply, the next turn's user message]``);
the kept rows are then taken out of the file. Each rebuild is judged by the loader's model: the
file with the rebuilt rows appended sends what the whole session sends. What the file does not
hold unambiguously is refused, with the reason, in the listing and by :func:`mend`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.runtimes.claude.breaks import PRESERVED_MISSING, find_breaks
from kurahi.runtimes.claude.graph import Graph
from kurahi.runtimes.claude.loader import comparable, resume_view
from kurahi.runtimes.claude.losses import find_losses
from kurahi.runtimes.claude.preserved import SILENT_SUBTYPE
from kurahi.runtimes.claude.repair import REPAIR_MARK, mend, verify
from kurahi.runtimes.claude.rows import parse_rows
from kurahi.runtimes.claude.versions import newest
from support.claude_sessions import PROMPTS, REPLIES
from support.claude_sessions import kept_tail_lost as compacted


def sent(data: bytes) -> list[tuple[str, str, str]]:
    return comparable(resume_view(parse_rows(data)).message_dicts())


def the_break(data: bytes) -> tuple[Any, Any]:
    parsed = parse_rows(data)
    [b] = find_breaks(Graph(parsed, newest())).breaks
    assert b.kind == PRESERVED_MISSING
    return parsed, b


def appended(data: bytes, rows: list[dict[str, Any]]) -> bytes:
    return data + b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def test_the_kept_reply_and_its_hook_row_come_back_under_their_uuids(tmp_path: Path) -> None:
    s, _, kept = compacted()
    whole = s.to_bytes()
    original = s.row(kept[0])["message"]["id"]
    s.drop(kept)
    data = s.to_bytes()
    assert (REPLIES[3] not in [t for _, _, t in sent(data)]) and sent(whole) != sent(data)
    parsed, b = the_break(data)
    m = mend(parsed, b, "loss1234")
    reply, hook = m.rows
    assert [reply["uuid"], hook["uuid"]] == kept and m.before == [] and m.lost_uuids == kept
    assert reply["type"] == "assistant" and reply["message"]["content"] == [{"type": "text", "text": REPLIES[3]}]
    assert reply["message"]["id"] != original and reply["message"]["id"].startswith("msg_kurahi_")
    assert (hook["type"], hook["subtype"], hook["parentUuid"]) == ("system", SILENT_SUBTYPE, kept[0])
    assert {r[REPAIR_MARK] for r in m.rows} == {"loss1234"}
    assert {(r["sessionId"], r["cwd"], r["version"]) for r in m.rows} == {(s.session_id, s.cwd, s.version)}
    assert m.lost_items == [("assistant", "text", REPLIES[3])]
    assert verify(appended(data, m.rows), m, [REPLIES[3]]).ok
    assert sent(appended(data, m.rows)) == sent(whole)  # the summary, the kept reply, turn five: in order


def test_the_listing_says_the_words_survive_and_counts_them(tmp_path: Path) -> None:
    s, _, kept = compacted()
    s.drop(kept)
    s.write(tmp_path / "claude")
    [loss] = find_losses(tmp_path / "claude").losses
    assert loss.kind == PRESERVED_MISSING and loss.apply_refused is None
    assert loss.lost_messages == 1 and loss.lost_tokens > 0
    assert "their words survive in the request" in " ".join(loss.evidence)


def test_without_last_prompt_rows_the_rows_put_back_are_no_leaf() -> None:
    s, _, kept = compacted()
    whole = s.to_bytes()
    s.drop(kept)
    s.rows = [r for r in s.rows if not (isinstance(r, dict) and r.get("type") == "last-prompt")]
    data = s.to_bytes()
    parsed, b = the_break(data)
    m = mend(parsed, b, "loss1234")
    view = resume_view(parse_rows(appended(data, m.rows)))
    assert view.leaf_from == "newest" and view.leaf not in kept
    assert comparable(view.message_dicts()) == sent(whole)


def test_a_kept_prompt_and_reply_are_matched_one_for_one() -> None:
    s, _, kept = compacted(keep="prompt+reply")
    whole = s.to_bytes()
    s.drop(kept)
    data = s.to_bytes()
    parsed, b = the_break(data)
    m = mend(parsed, b, "x")
    assert [(r["uuid"], r["type"]) for r in m.rows] == [(kept[0], "user"), (kept[1], "assistant")]
    assert m.rows[0]["message"]["content"] == PROMPTS[3]
    assert sent(appended(data, m.rows)) == sent(whole)


def test_a_reply_of_two_blocks_goes_to_the_first_two_uuids_with_one_message_id() -> None:
    s, _, kept = compacted(thinking=True)
    assert len(kept) == 3  # thinking row, text row, hook row
    whole = s.to_bytes()
    s.drop(kept)
    data = s.to_bytes()
    parsed, b = the_break(data)
    m = mend(parsed, b, "x")
    assert [r["type"] for r in m.rows] == ["assistant", "assistant", "system"]
    assert m.rows[0]["message"]["id"] == m.rows[1]["message"]["id"]
    assert [r["message"]["content"][0]["type"] for r in m.rows[:2]] == ["thinking", "text"]
    assert sent(appended(data, m.rows)) == sent(whole)


def test_only_the_hook_row_missing_is_put_back_as_a_row_that_says_nothing() -> None:
    s, _, kept = compacted()
    whole = s.to_bytes()
    s.drop(kept[1:])
    data = s.to_bytes()
    assert REPLIES[3] not in [t for _, _, t in sent(data)]  # the reply is in the file, but not sent
    parsed, b = the_break(data)
    m = mend(parsed, b, "x")
    assert [(r["uuid"], r["type"]) for r in m.rows] == [(kept[1], "system")]
    assert m.lost_uuids == kept and m.lost_items == [("assistant", "text", REPLIES[3])]  # the reply comes back too
    assert verify(appended(data, m.rows), m, []).ok
    assert sent(appended(data, m.rows)) == sent(whole)


AMBIGUOUS = {
    "no request recorded": ({"record": False}, "no request after the compaction is recorded"),
    "two parts, three rows": (
        {
            "region": [
                {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
                {"role": "user", "content": "b"},
                {"role": "assistant", "content": [{"type": "text", "text": REPLIES[3]}]},
            ]
        },
        "which row said which cannot be told",
    ),
    "sent when they were already gone": ({"region": []}, "it was sent when the kept rows were already gone"),
    "a system entry among them": (
        {
            "region": [
                {"role": "system", "content": "hook output"},
                {"role": "assistant", "content": [{"type": "text", "text": REPLIES[3]}]},
            ]
        },
        "system entry among the kept rows",
    ),
}


@pytest.mark.parametrize("case", list(AMBIGUOUS))
def test_what_the_file_does_not_hold_unambiguously_is_refused_with_the_reason(case: str, tmp_path: Path) -> None:
    options, why = AMBIGUOUS[case]
    s, _, kept = compacted(**options)
    s.drop(kept)
    parsed, b = the_break(s.to_bytes())
    with pytest.raises(ValueError, match=why):
        mend(parsed, b, "x")
    s.write(tmp_path / "claude")
    [loss] = find_losses(tmp_path / "claude").losses
    assert loss.apply_refused is not None and why in loss.apply_refused
    assert "cannot be rebuilt from this file" in loss.apply_refused
    assert loss.lost_messages == len(kept)  # each missing row counted, as before


def test_a_compaction_naming_only_its_segment_is_refused() -> None:
    s, _, kept = compacted()
    boundary = next(r for r in s.rows if isinstance(r, dict) and r.get("subtype") == "compact_boundary")
    del boundary["compactMetadata"]["preservedMessages"]
    s.drop(kept)
    parsed, b = the_break(s.to_bytes())
    with pytest.raises(ValueError, match="only by the two ends of their segment"):
        mend(parsed, b, "x")
