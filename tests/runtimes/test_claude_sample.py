"""A session the real Claude Code 2.1.332 wrote (``tests/data/claude-code``): read, modelled, judged, fast."""

from __future__ import annotations

import json
from pathlib import Path

from kurahi.runtimes.claude.graph import linear
from kurahi.runtimes.claude.loader import comparable, resume_view
from kurahi.runtimes.claude.losses import find_losses
from kurahi.runtimes.claude.rows import parse_rows
from support.claude_sessions import real_sample, snapshot, words


def test_the_real_session_is_one_line_and_its_view_holds_every_turns_words_in_order(tmp_path: Path) -> None:
    root, told = real_sample(tmp_path / "claude")
    [session] = root.glob("projects/*/*.jsonl")
    parsed = parse_rows(session.read_bytes())
    assert not parsed.invalid and linear(parsed.rows) is not None
    view = resume_view(parsed)
    sent = json.dumps(view.message_dicts(), ensure_ascii=False)
    assert all(w in sent for turn in told["turns"] for w in turn["words"])
    prompts = [t for t in words(comparable(view.message_dicts())) if t in {turn["prompt"] for turn in told["turns"]}]
    assert prompts == [turn["prompt"] for turn in told["turns"]]
    assert view.leaf_from == "last-prompt" and view.ended == "root"
    assert find_losses(root).losses == []


def test_the_real_session_with_its_last_prompt_cut_loose_lists_one_recorded_null_parent(tmp_path: Path) -> None:
    root, told = real_sample(tmp_path / "claude", damaged=True)
    before = snapshot(root)
    report = find_losses(root)
    assert [(x.kind, x.confidence, x.lost_messages) for x in report.losses] == [("null-parent", "recorded", 12)]
    [loss] = report.losses
    assert "turnIndex is 5" in loss.evidence[0] and loss.project == told["cwd"]
    assert report.sessions == 2 and snapshot(root) == before
