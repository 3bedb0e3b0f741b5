"""``kurahi lineage find --claude``: one conversation over several Claude Code sessions, joined with evidence."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from kurahi.cli import build_app
from kurahi.cli.common import EXIT
from kurahi.runtimes.claude.lineage import find_lineage
from support.claude_sessions import ClaudeSession, snapshot

runner = CliRunner()


def _at(hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, 1, hour, minute, tzinfo=UTC)


def _session(root: Path, cwd: str, seed: int, start: datetime, *prompts: str) -> ClaudeSession:
    s = ClaudeSession(cwd, seed=seed, start=start)
    for p in prompts:
        s.turn(p, f"reply to {p}")
    s.write(root)
    return s


def test_a_clear_joins_the_session_before_it_in_the_same_folder_as_recorded(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    other = _session(root, "/home/ava/work", 1, _at(8), "an older talk")
    before = _session(root, "/home/ava/work", 2, _at(10), "remember TEAL-HERON")
    after = _session(root, "/home/ava/work", 3, _at(11), "<command-name>/clear</command-name>", "and now?")
    state = snapshot(root)
    lineage = find_lineage(root)
    assert [p.session_id for p in lineage.pieces] == [before.session_id, after.session_id]
    assert [(p.found_by[0], p.confidence, p.current) for p in lineage.pieces] == [
        ("clear", "recorded", False),
        ("the newest session", "recorded", True),
    ]
    [bound] = lineage.boundaries
    assert bound.kind == "clear" and "opens with the /clear command" in str(bound.reason)
    assert other.session_id not in json.dumps(lineage.to_dict())
    assert snapshot(root) == state


def test_continue_from_another_folder_and_a_moved_folder_are_joined_as_guesses(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    first = _session(root, "/gone/away/proj", 1, _at(9), "said in the old place")
    moved = tmp_path / "new" / "proj"
    moved.mkdir(parents=True)
    second = _session(root, str(moved), 2, _at(12), "said in the new place")
    third = _session(root, str(moved / "sub"), 3, _at(12, 5), "continued from a subfolder")
    lineage = find_lineage(root)
    assert [p.session_id for p in lineage.pieces] == [first.session_id, second.session_id, third.session_id]
    assert [b.kind for b in lineage.boundaries] == ["moved", "continue-elsewhere"]
    assert [p.confidence for p in lineage.pieces] == ["guess", "guess", "recorded"]
    assert "no longer exists" in str(lineage.boundaries[0].reason)


def test_a_folder_moved_minutes_ago_is_moved_not_a_continue_elsewhere(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    (tmp_path / "here").mkdir()
    (tmp_path / "new" / "proj").mkdir(parents=True)
    gone = _session(root, str(tmp_path / "old" / "proj"), 1, _at(9), "said before the move")
    after = _session(root, str(tmp_path / "new" / "proj"), 2, _at(9, 5), "said after the move")
    lineage = find_lineage(root, after.session_id)
    assert [p.session_id for p in lineage.pieces] == [gone.session_id, after.session_id]
    assert [b.kind for b in lineage.boundaries] == ["moved"]
    beside = _session(root, str(tmp_path / "here"), 3, _at(9, 10), "a --continue from a folder that exists")
    assert [b.kind for b in find_lineage(root, beside.session_id).boundaries] == ["moved", "continue-elsewhere"]


def test_nothing_joins_a_session_that_is_not_cleared_moved_or_continued(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    (tmp_path / "a").mkdir()
    _session(root, str(tmp_path / "a"), 1, _at(9), "one")
    last = _session(root, str(tmp_path / "a"), 2, _at(12), "two")
    lineage = find_lineage(root, last.session_id)
    assert [p.session_id for p in lineage.pieces] == [last.session_id] and lineage.boundaries == ()


def test_the_command_prints_the_pieces_and_refuses_what_does_not_go_with_claude(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    before = _session(root, "/home/ava/work", 2, _at(10), "remember TEAL-HERON")
    after = _session(root, "/home/ava/work", 3, _at(11), "<command-name>/clear</command-name>")
    app = build_app()
    out = runner.invoke(app, ["lineage", "find", "--claude", str(root), "--json"])
    assert out.exit_code == EXIT.OK
    assert [p["sessionId"] for p in json.loads(out.stdout)["pieces"]] == [before.session_id, after.session_id]
    table = runner.invoke(app, ["lineage", "find", "--claude", str(root)], env={"COLUMNS": "200"})
    assert table.exit_code == EXIT.OK and "opens with the /clear command" in table.stdout
    assert runner.invoke(app, ["lineage", "find", "--claude", str(root), "--key", "k"]).exit_code == EXIT.USAGE
    assert runner.invoke(app, ["lineage", "find", "--session", "x"]).exit_code == EXIT.USAGE
    unknown = runner.invoke(app, ["lineage", "find", "--claude", str(root), "--session", "nope"])
    assert unknown.exit_code == EXIT.USAGE and "no Claude Code session 'nope'" in unknown.stderr


def test_stitch_chains_each_pieces_sent_rows_with_fresh_message_ids_and_never_overwrites(tmp_path: Path) -> None:
    from kurahi.runtimes.claude.loader import comparable, resume_view
    from kurahi.runtimes.claude.rows import parse_rows
    from support.claude_sessions import four_turns

    root = tmp_path / "claude"
    a, _ = four_turns("/home/ava/work", seed=1)
    pa = a.write(root)
    b = ClaudeSession("/home/ava/work", seed=2, start=_at(11))
    b.turn("<command-name>/clear</command-name>", "cleared")
    b.turn("after ECHO-7", "ok", tool=("ls", "listing"))
    pb = b.write(root)
    state = snapshot(root)
    out = pa.parent / "0a0a0a0a-1111-4222-8333-444455556666.jsonl"
    app = build_app()
    done = runner.invoke(app, ["lineage", "stitch", str(pa), str(pb), "--out", str(out), "--json"])
    assert done.exit_code == EXIT.OK, done.stdout + done.stderr
    told = json.loads(done.stdout)
    assert told["sessionId"] == out.stem and [s["sessionId"] for s in told["sources"]] == [a.session_id, b.session_id]
    view = resume_view(parse_rows(out.read_bytes()))
    whole = [comparable(resume_view(parse_rows(p.read_bytes())).message_dicts()) for p in (pa, pb)]
    assert comparable(view.message_dicts()) == whole[0] + whole[1]
    old_ids = {
        r["message"]["id"] for s in (a, b) for r in s.rows if isinstance(r, dict) and r.get("type") == "assistant"
    }
    new_ids = {m.message_id for m in view.messages if m.role == "assistant"}
    assert new_ids and not new_ids & old_ids
    again = runner.invoke(app, ["lineage", "stitch", str(pa), str(pb), "--out", str(out)])
    assert again.exit_code == EXIT.USAGE and "never overwrites" in again.stderr
    bad = runner.invoke(app, ["lineage", "stitch", str(pa), "--out", str(tmp_path / "c.jsonl")])
    assert bad.exit_code == EXIT.USAGE and "<session id>.jsonl" in bad.stderr
    pi_only = runner.invoke(app, ["lineage", "stitch", str(pa), "--out", str(tmp_path / "x.jsonl"), "--force"])
    assert pi_only.exit_code == EXIT.USAGE and "for Pi transcripts" in pi_only.stderr
    after = snapshot(root)
    for p in (pa, pb):  # the sources are only read
        name = p.relative_to(root).as_posix()
        assert after[name] == state[name]
