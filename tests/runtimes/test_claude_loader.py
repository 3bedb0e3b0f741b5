"""The model of Claude Code 2.1.332's ``--resume`` loader: what it sends, in order, as a real request carries it.

Each case is the peers README's measured fact it models; the peer tests hold the model to the
real CLI's requests through :func:`~kurahi.runtimes.claude.loader.comparable`.
"""

from __future__ import annotations

from kurahi.runtimes.claude.loader import comparable, resume_view
from kurahi.runtimes.claude.rows import parse_rows
from kurahi.testing.claude_code import ClaudeSession
from support.claude_sessions import PROMPTS, REPLIES, four_turns, words


def view_of(s: ClaudeSession) -> list[tuple[str, str, str]]:
    return comparable(resume_view(parse_rows(s.to_bytes())).message_dicts())


def test_a_whole_session_is_sent_in_order_with_its_tool_pairs() -> None:
    s, turns = four_turns()
    view = resume_view(parse_rows(s.to_bytes()))
    assert view.leaf == turns[-1].reply and view.leaf_from == "last-prompt"
    assert view.runtime == "claude-code-2.1.332" and view.ended == "root"
    assert comparable(view.message_dicts()) == [
        ("user", "text", PROMPTS[0]),
        ("assistant", "tool_use", turns[0].tool_id),
        ("user", "tool_result", turns[0].tool_id),
        ("assistant", "text", REPLIES[0]),
        ("user", "text", PROMPTS[1]),
        ("assistant", "text", REPLIES[1]),
        ("user", "text", PROMPTS[2]),
        ("assistant", "tool_use", turns[2].tool_id),
        ("user", "tool_result", turns[2].tool_id),
        ("assistant", "text", REPLIES[2]),
        ("user", "text", PROMPTS[3]),
        ("assistant", "text", REPLIES[3]),
    ]
    # Attachments are system entries; every row of the chain is named, root first.
    assert {m.attachment for m in view.messages if m.role == "system"} == {"date_change"}
    assert view.rows[0] == turns[0].prompt and view.rows[-1] == turns[-1].reply


def test_assistant_rows_sharing_a_message_id_are_one_message() -> None:
    s = ClaudeSession("/w")
    t = s.turn("think first", "then answer", thinking="let me see")
    view = resume_view(parse_rows(s.to_bytes()))
    said = [m for m in view.messages if m.role == "assistant"]
    assert len(said) == 1 and [b["type"] for b in said[0].content] == ["thinking", "text"]
    assert said[0].rows[-1] == t.reply and len(said[0].rows) == 2


def test_the_leaf_is_the_last_prompts_when_it_is_a_leaf_else_the_newest_leaf_in_file_order() -> None:
    s, turns = four_turns()
    s.rows = [r for r in s.rows if not (isinstance(r, dict) and r.get("type") == "last-prompt")]
    view = resume_view(parse_rows(s.to_bytes()))
    assert (view.leaf, view.leaf_from) == (turns[-1].reply, "newest")
    s.last_prompt("delta", leaf=turns[3].prompt)  # an inner row: ignored, the newest leaf is taken
    assert resume_view(parse_rows(s.to_bytes())).leaf_from == "newest"
    s.last_prompt("nowhere", leaf="00000000-0000-4000-8000-000000000000")  # names no row: the newest
    view = resume_view(parse_rows(s.to_bytes()))
    assert (view.leaf, view.leaf_from) == (turns[-1].reply, "newest")
    # A newer branch after it in the file does not win over a last-prompt naming a leaf.
    s.head = turns[1].reply
    s.prompt("a newer branch")
    s.last_prompt("delta", leaf=turns[-1].reply)
    view = resume_view(parse_rows(s.to_bytes()))
    assert (view.leaf, view.leaf_from) == (turns[-1].reply, "last-prompt")
    assert "a newer branch" not in words(comparable(view.message_dicts()))


def test_rows_sharing_a_message_id_on_another_branch_are_sent_in_the_message() -> None:
    s, turns = four_turns()
    reply = s.row(turns[1].reply)
    mid = reply["message"]["id"]
    s.assistant([{"type": "text", "text": "a block on another branch"}], parent=turns[0].reply, message_id=mid)
    s.last_prompt("delta", leaf=turns[-1].reply)
    view = resume_view(parse_rows(s.to_bytes()))
    [merged] = [m for m in view.messages if m.message_id == mid]
    assert [b["text"] for b in merged.content] == [REPLIES[1], "a block on another branch"]


def test_a_missing_parent_and_a_torn_line_are_bridged_to_the_row_before() -> None:
    whole, turns = four_turns()
    expected = view_of(whole)
    s, turns = four_turns()
    s.drop([turns[1].rows[2]])  # an attachment of turn 2 cut out: the next row names a missing uuid
    view = resume_view(parse_rows(s.to_bytes()))
    assert comparable(view.message_dicts()) == expected and view.bridged
    s, turns = four_turns()
    target = s.row(turns[2].rows[1])
    s.rows[s.rows.index(target)] = b'{"parentUuid":"' + target["parentUuid"].encode() + b'","type":"attachm\n'
    view = resume_view(parse_rows(s.to_bytes()))
    assert comparable(view.message_dicts()) == expected and view.dropped_lines


def test_an_orphan_tool_result_is_left_out() -> None:
    s, turns = four_turns()
    s.drop([turns[2].tool_use or ""])  # the call is gone; its result is bridged to the prompt
    texts = view_of(s)
    assert ("user", "tool_result", turns[2].tool_id) not in texts
    assert words(texts) == [
        PROMPTS[0],
        REPLIES[0],
        PROMPTS[1],
        REPLIES[1],
        PROMPTS[2],
        REPLIES[2],
        PROMPTS[3],
        REPLIES[3],
    ]


def test_a_torn_final_reply_is_stood_in_for() -> None:
    s, _ = four_turns()
    s.prompt("echo prompt five")  # the crash came while the reply was written: no last-prompt after it
    s.attachment()
    s.raw(b'{"parentUuid":"x","type":"assistant","message":{"id":"msg_torn","content":[{"type":"te')
    view = resume_view(parse_rows(s.to_bytes()))
    assert view.messages[-1].synthetic and view.messages[-1].content == [
        {"type": "text", "text": "No response requested."}
    ]
    assert words(comparable(view.message_dicts()))[-2:] == ["echo prompt five", "No response requested."]


def test_after_compact_the_summary_then_the_preserved_tail_then_what_followed() -> None:
    s, turns = four_turns()
    s.compact("SUMMARY of turns one to three", [turns[3].prompt, turns[3].reply])
    s.turn("echo prompt five", "echo reply five")
    view = resume_view(parse_rows(s.to_bytes()))
    assert words(comparable(view.message_dicts())) == [
        "SUMMARY of turns one to three",
        PROMPTS[3],
        REPLIES[3],
        "echo prompt five",
        "echo reply five",
    ]
    assert view.spliced == [turns[3].prompt, turns[3].reply] and not view.missing_preserved


def test_a_summary_with_no_parent_still_splices_its_preserved_tail() -> None:
    s, turns = four_turns()
    _, summary = s.compact("SUMMARY", [turns[3].reply])
    s.turn("echo prompt five", "echo reply five")
    s.row(summary)["parentUuid"] = None  # the boundary is a root already: nothing lost
    assert words(view_of(s)) == ["SUMMARY", REPLIES[3], "echo prompt five", "echo reply five"]


def test_a_row_after_compact_naming_the_preserved_tail_still_walks_to_the_summary() -> None:
    s, turns = four_turns()
    s.compact("SUMMARY", [turns[3].prompt, turns[3].reply])
    five = s.turn("echo prompt five", "echo reply five")
    s.row(five.prompt)["parentUuid"] = turns[3].reply  # the other shape the tail could be linked by
    assert words(view_of(s)) == ["SUMMARY", PROMPTS[3], REPLIES[3], "echo prompt five", "echo reply five"]


def test_subagent_rows_in_the_file_are_not_sent() -> None:
    s = ClaudeSession("/w")
    s.turn("alpha", "one")
    s.subagent("a subagent's task", "a subagent's answer")
    s.turn("bravo", "two")
    assert words(view_of(s)) == ["alpha", "one", "bravo", "two"]


def test_two_rows_with_one_uuid_the_later_is_taken_and_a_loop_of_parents_ends() -> None:
    s, turns = four_turns()
    copy = dict(s.row(turns[1].reply))
    copy["message"] = {**copy["message"], "content": [{"type": "text", "text": "bravo reply, written again"}]}
    s.rows.append(copy)
    assert "bravo reply, written again" in words(view_of(s))
    s, turns = four_turns()
    s.row(turns[0].prompt)["parentUuid"] = turns[1].prompt  # a loop: the walk stops where it closes
    view = resume_view(parse_rows(s.to_bytes()))
    assert view.ended == "cycle" and PROMPTS[3] in words(comparable(view.message_dicts()))


def test_comparable_reads_a_real_requests_messages_the_same_way() -> None:
    request = [
        {"role": "system", "content": "environment listing"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>today</system-reminder>"},
                {"type": "text", "text": "hi"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "t"},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "out"},
                {"type": "text", "text": "next"},
            ],
        },
    ]
    assert comparable(request) == [
        ("user", "text", "hi"),
        ("assistant", "tool_use", "toolu_1"),
        ("user", "tool_result", "toolu_1"),
        ("user", "text", "next"),
    ]
