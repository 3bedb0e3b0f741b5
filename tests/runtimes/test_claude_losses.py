"""Each kind of Claude Code loss, found read-only with its evidence, and the sessions that lost nothing.

Every session here is four turns (two with a tool call) damaged the way the issues describe.
What a loss says left the view is checked against the loader's model: the messages the
damaged session's ``--resume`` no longer sends, compared with the whole session's.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from kurahi.runtimes.claude.loader import comparable, resume_view
from kurahi.runtimes.claude.losses import KINDS, find_losses
from kurahi.runtimes.claude.rows import parse_rows
from kurahi.runtimes.session_losses import SessionLoss
from kurahi.testing.claude_code import ClaudeSession
from support.claude_sessions import PROMPTS, REPLIES, four_turns, words


def listed(tmp_path: Path, *sessions: ClaudeSession) -> list[SessionLoss]:
    root = tmp_path / "claude"
    for s in sessions:
        s.write(root)
    return find_losses(root).losses


def sent(s: ClaudeSession) -> list[tuple[str, str, str]]:
    return comparable(resume_view(parse_rows(s.to_bytes())).message_dicts())


def gone(whole: ClaudeSession, damaged: ClaudeSession) -> list[tuple[str, str, str]]:
    """What the whole session's --resume sends and the damaged one's no longer does."""
    left = Counter(sent(damaged))
    out = []
    for item in sent(whole):
        if left[item]:
            left[item] -= 1
        else:
            out.append(item)
    return out


def time_of(s: ClaudeSession, uid: str) -> str:
    return str(s.row(uid)["timestamp"])


def one(losses: list[SessionLoss], kind: str) -> SessionLoss:
    assert [x.kind for x in losses] == [kind], [(x.kind, x.evidence) for x in losses]
    return losses[0]


# -- the kinds ------------------------------------------------------------------------------------


def test_null_parent_on_a_tool_result_loses_every_earlier_turn(tmp_path: Path) -> None:
    whole, _ = four_turns()
    s, turns = four_turns()
    s.row(turns[2].tool_result or "")["parentUuid"] = None
    loss = one(listed(tmp_path, s), "null-parent")
    lost = gone(whole, s)
    assert words(lost) == [PROMPTS[0], REPLIES[0], PROMPTS[1], REPLIES[1], PROMPTS[2]]
    assert loss.lost_messages == len(lost) == 9 and loss.lost_tokens > 0  # the cut result too: its call is gone
    assert loss.confidence == "recorded" and loss.row == turns[2].tool_result
    assert loss.repair_parent == turns[2].tool_use
    assert loss.at == time_of(s, turns[2].tool_result or "")
    assert loss.first_entry_at == time_of(s, turns[0].prompt) and loss.last_message_at == time_of(
        s, turns[2].tool_use or ""
    )
    assert loss.project == "/home/ava/work" and loss.key == loss.session_id == s.session_id
    assert str(loss.line) in loss.evidence[0] and "parentUuid null" in loss.evidence[0]


def test_null_parent_on_a_prompt_is_recorded_by_its_turn_number(tmp_path: Path) -> None:
    s, turns = four_turns()
    s.row(turns[2].prompt)["parentUuid"] = None
    loss = one(listed(tmp_path, s), "null-parent")
    assert loss.confidence == "recorded" and "turnIndex is 3" in loss.evidence[0] and "turn 1" in loss.evidence[0]
    assert loss.lost_messages == 6  # turns one (with its tool pair) and two


def test_null_parent_on_a_prompt_without_a_turn_number_is_a_guess(tmp_path: Path) -> None:
    """An older release numbers no turn: a /rewind to before the first prompt writes the same root."""
    s, turns = four_turns()
    s.row(turns[2].prompt)["parentUuid"] = None
    del s.row(turns[2].prompt)["turnPosition"]
    loss = one(listed(tmp_path, s), "null-parent")
    assert loss.confidence == "guess" and "/rewind" in loss.evidence[0]


def test_a_rewind_to_before_the_first_prompt_is_no_loss(tmp_path: Path) -> None:
    s, _ = four_turns()
    s.head = None  # the CLI numbers the new root's turn 1: it meant to start again
    s.turn("start over prompt", "start over reply")
    assert listed(tmp_path, s) == []


def test_progress_parent_rooted_at_null(tmp_path: Path) -> None:
    s = ClaudeSession("/w")
    s.turn(PROMPTS[0], REPLIES[0], tool=("ls", "out"))
    s.turn(PROMPTS[1], REPLIES[1])
    progress = s.progress(parent=None)
    third = s.turn(PROMPTS[2], REPLIES[2])
    s.row(third.prompt)["parentUuid"] = progress
    s.turn(PROMPTS[3], REPLIES[3])
    loss = one(listed(tmp_path, s), "progress-parent")
    assert words(sent(s)) == [PROMPTS[2], REPLIES[2], PROMPTS[3], REPLIES[3]]
    assert loss.lost_messages == 6 and loss.confidence == "recorded" and "progress" in loss.evidence[0]


def test_progress_rows_on_the_chain_that_reach_the_conversation_lose_nothing(tmp_path: Path) -> None:
    s = ClaudeSession("/w")
    s.turn(PROMPTS[0], REPLIES[0])
    progress = s.progress()
    second = s.turn(PROMPTS[1], REPLIES[1])
    s.row(second.prompt)["parentUuid"] = progress
    assert listed(tmp_path, s) == []


def test_sidechain_parent_sends_the_subagent_in_place_of_the_past(tmp_path: Path) -> None:
    s = ClaudeSession("/w")
    first = s.turn(PROMPTS[0], REPLIES[0], tool=("ls", "out"))
    sub = s.subagent("the subagent's task", "the subagent's answer")
    second = s.turn(PROMPTS[1], REPLIES[1])
    s.row(second.prompt)["parentUuid"] = sub[-1]
    s.turn(PROMPTS[2], REPLIES[2])
    loss = one(listed(tmp_path, s), "sidechain-parent")
    assert words(sent(s))[:2] == ["the subagent's task", "the subagent's answer"]
    assert loss.lost_messages == 4 and "subagent" in loss.evidence[0] and loss.repair_parent == first.reply


def test_wrong_parent_under_an_earlier_reply_is_recorded_by_its_turn_number(tmp_path: Path) -> None:
    whole, _ = four_turns()
    s, turns = four_turns()
    s.row(turns[2].prompt)["parentUuid"] = turns[0].reply
    loss = one(listed(tmp_path, s), "wrong-parent")
    assert words(gone(whole, s)) == [PROMPTS[1], REPLIES[1]]
    assert loss.lost_messages == 2 and loss.confidence == "recorded" and loss.repair_parent == turns[1].reply
    assert "turnIndex is 3" in loss.evidence[0] and "turn 2" in loss.evidence[0]


def test_wrong_parent_under_an_earlier_reply_without_a_turn_number_is_a_guess(tmp_path: Path) -> None:
    """An older release numbers no turn: `--resume-session-at` writes exactly this."""
    s, turns = four_turns()
    s.row(turns[2].prompt)["parentUuid"] = turns[0].reply
    del s.row(turns[2].prompt)["turnPosition"]
    loss = one(listed(tmp_path, s), "wrong-parent")
    assert loss.confidence == "guess" and "rewind" in loss.evidence[0]


def test_wrong_parent_where_no_rewind_lands_is_recorded(tmp_path: Path) -> None:
    s, turns = four_turns()
    s.row(turns[3].prompt)["parentUuid"] = turns[1].prompt  # a prompt under a prompt
    loss = one(listed(tmp_path, s), "wrong-parent")
    assert loss.confidence == "recorded" and loss.lost_messages == 5  # turn 2's reply, turn 3 with its tool pair
    s, turns = four_turns()
    s.row(turns[2].tool_result or "")["parentUuid"] = turns[1].prompt  # a tool result under an old prompt
    loss = one(listed(tmp_path / "b", s), "wrong-parent")
    assert loss.confidence == "recorded"


def test_sibling_fork_of_the_stop_hook_summary_loses_the_delivered_reply(tmp_path: Path) -> None:
    s = ClaudeSession("/w")
    s.turn(PROMPTS[0], REPLIES[0])
    second = s.turn(PROMPTS[1], REPLIES[1], tool=("ls", "out"))
    s.system("stop_hook_summary", parent=second.tool_result)  # the reply's parent, not the reply (#88597)
    s.turn(PROMPTS[2], REPLIES[2])
    loss = one(listed(tmp_path, s), "sibling-fork")
    assert REPLIES[1] not in words(sent(s))
    assert loss.lost_messages == 1 and loss.repair_parent == second.reply and "#88597" in loss.evidence[0]


def test_compact_null_loses_the_summary_and_its_preserved_tail(tmp_path: Path) -> None:
    s, turns = four_turns()
    s.compact("SUMMARY of the first three turns", [turns[3].prompt, turns[3].reply])
    five = s.turn("echo prompt five", "echo reply five")
    s.row(five.prompt)["parentUuid"] = None
    loss = one(listed(tmp_path, s), "compact-null")
    assert words(sent(s)) == ["echo prompt five", "echo reply five"]
    assert loss.lost_messages == 3 and loss.confidence == "recorded"  # the summary, prompt four, reply four


def test_preserved_rows_missing_from_the_file(tmp_path: Path) -> None:
    s, turns = four_turns()
    boundary, _ = s.compact("SUMMARY", [turns[3].prompt, turns[3].reply])
    s.turn("echo prompt five", "echo reply five")
    s.drop([turns[3].prompt, turns[3].reply])
    loss = one(listed(tmp_path, s), "preserved-missing")
    assert words(sent(s)) == ["SUMMARY", "echo prompt five", "echo reply five"]
    assert loss.row == boundary and loss.lost_messages == 2 and turns[3].prompt in loss.evidence[0]


@pytest.mark.parametrize("cwd", ["/home/ava/work/src", "/home/ava", "/home/ava/elsewhere", "/srv/far"])
def test_continue_from_another_directory_starts_empty_and_is_a_guess(tmp_path: Path, cwd: str) -> None:
    earlier, _ = four_turns("/home/ava/work")
    later = ClaudeSession(cwd, seed=9, start=earlier.clock + timedelta(minutes=5))
    later.turn("where were we?", "I have no earlier context")
    loss = one(listed(tmp_path, earlier, later), "continue-elsewhere")
    assert loss.session_id == later.session_id and loss.source.endswith(f"{earlier.session_id}.jsonl")
    assert loss.confidence == "guess" and loss.lost_messages == 12
    assert loss.project == cwd and earlier.session_id in loss.evidence[0]


@pytest.mark.parametrize(
    ("cwd", "minutes", "before"),
    [
        ("/srv/other", 15, False),  # far away and a quarter of an hour later: a new project
        ("/home/ava/work/src", 45, False),  # too long after
        ("/home/ava/work/src", 5, True),  # that directory had a session of its own: --continue would resume it
    ],
)
def test_a_new_session_elsewhere_that_continue_would_not_have_started_is_no_loss(
    tmp_path: Path, cwd: str, minutes: int, before: bool
) -> None:
    earlier, _ = four_turns("/home/ava/work")
    sessions = [earlier]
    if before:
        old = ClaudeSession(cwd, seed=7, start=earlier.start - timedelta(days=2))
        old.turn("an old question", "an old answer")
        sessions.append(old)
    later = ClaudeSession(cwd, seed=9, start=earlier.clock + timedelta(minutes=minutes))
    later.turn("a fresh question", "a fresh answer")
    assert listed(tmp_path, *sessions, later) == []


def test_two_breaks_in_one_session_each_lose_only_their_own_rows(tmp_path: Path) -> None:
    s, turns = four_turns()
    s.row(turns[1].reply)["parentUuid"] = None  # loses turn one and turn two's prompt and attachments
    s.row(turns[3].prompt)["parentUuid"] = turns[1].reply  # loses turn three
    losses = listed(tmp_path, s)
    assert sorted((x.kind, x.lost_messages) for x in losses) == [("null-parent", 5), ("wrong-parent", 4)]
    assert words(sent(s)) == [REPLIES[1], PROMPTS[3], REPLIES[3]]


def test_ids_are_short_stable_and_every_kind_has_a_name(tmp_path: Path) -> None:
    s, turns = four_turns()
    s.row(turns[2].prompt)["parentUuid"] = None
    first = listed(tmp_path, s)
    again = find_losses(tmp_path / "claude").losses
    assert [x.id for x in first] == [x.id for x in again] and len(first[0].id) == 8
    assert len(set(KINDS)) == len(KINDS) == 8


# -- what is not a loss -----------------------------------------------------------------------------


def _bridged() -> ClaudeSession:
    s, turns = four_turns()
    s.drop([turns[1].rows[2]])  # a row cut out: the next names a missing uuid
    return s


def _torn_mid_line() -> ClaudeSession:
    s, turns = four_turns()
    row = s.row(turns[2].rows[1])
    s.rows[s.rows.index(row)] = b'{"parentUuid":"' + row["parentUuid"].encode() + b'","type":"att\n'
    return s


def _nul_block() -> ClaudeSession:
    s, turns = four_turns()
    row = s.row(turns[1].rows[1])
    s.rows[s.rows.index(row)] = b"\0" * 512 + b"\n"
    return s


def _orphan_result() -> ClaudeSession:
    s, turns = four_turns()
    s.drop([turns[2].tool_use or ""])
    return s


def _torn_reply() -> ClaudeSession:
    s, _ = four_turns()
    s.prompt("echo prompt five")
    s.raw(b'{"parentUuid":"x","type":"assistant","message":{"content":[{"type":"te')
    return s


def _compacted() -> ClaudeSession:
    s, turns = four_turns()
    s.compact("SUMMARY", [turns[3].prompt, turns[3].reply])
    s.turn("echo prompt five", "echo reply five")
    return s


def _summary_rooted() -> ClaudeSession:
    s = _compacted()
    summary = next(r for r in s.rows if isinstance(r, dict) and r.get("isCompactSummary"))
    summary["parentUuid"] = None
    return s


def _compacted_twice() -> ClaudeSession:
    s = _compacted()
    five = s.rows[-3]
    assert isinstance(five, dict)
    s.compact("SECOND SUMMARY", [])
    s.turn("foxtrot prompt six", "foxtrot reply six")
    return s


def _subagents() -> ClaudeSession:
    s = ClaudeSession("/w")
    s.turn(PROMPTS[0], REPLIES[0], tool=("Task", "the subagent said so"))
    s.subagent("the subagent's task", "the subagent's answer")
    s.turn(PROMPTS[1], REPLIES[1])
    s.subagent("another task", "another answer")
    s.turn(PROMPTS[2], REPLIES[2])
    return s


def _stop_hooks() -> ClaudeSession:
    s = ClaudeSession("/w")
    s.turn(PROMPTS[0], REPLIES[0])
    s.system("stop_hook_summary")  # under the reply, as Claude Code writes it
    s.turn(PROMPTS[1], REPLIES[1])
    s.system("stop_hook_summary", move=False)  # beside the chain, the next prompt under the reply
    s.turn(PROMPTS[2], REPLIES[2])
    return s


@pytest.mark.parametrize(
    "make",
    [
        _bridged,
        _torn_mid_line,
        _nul_block,
        _orphan_result,
        _torn_reply,
        _compacted,
        _compacted_twice,
        _subagents,
        _stop_hooks,
    ],
)
def test_sessions_only_bridged_compacted_or_holding_subagents_report_nothing(tmp_path: Path, make: object) -> None:
    assert callable(make)
    assert listed(tmp_path, four_turns(seed=5)[0], make()) == []


def test_a_rewound_session_reports_nothing(tmp_path: Path) -> None:
    """`--resume-session-at` puts the new prompt under an earlier reply and numbers it for that path."""
    s, turns = four_turns()
    s.head = turns[1].reply
    rewound = s.turn("echo prompt five", "echo reply five")
    assert s.row(rewound.prompt)["turnPosition"]["turnIndex"] == 3
    s.turn("foxtrot prompt six", "foxtrot reply six")
    assert listed(tmp_path, s) == []
    assert words(sent(s))[-4:] == ["echo prompt five", "echo reply five", "foxtrot prompt six", "foxtrot reply six"]
