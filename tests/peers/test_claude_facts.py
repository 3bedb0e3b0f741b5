"""What Claude Code 2.1.332 does with rows appended to a session, and what it shows while it runs.

These facts decide how ``kurahi rescue apply`` mends a Claude Code session (docs/claude-code-peer.md):

- a row appended with the uuid of an earlier row replaces it, parent and content, when the CLI
  rebuilds the session (the later one wins), so each parent-link loss of the table is mended by
  appending the damaged row as it should be;
- a ``last-prompt`` row names the leaf ``--resume`` starts from when it names a leaf; one naming
  an inner row is ignored (the newest leaf in file order is taken);
- a compaction's kept tail is spliced back only when every row its ``preservedMessages`` lists is
  in the file (the kept reply appended alone brings nothing back);
- assistant rows that share a ``message.id`` are sent as one message, whichever branch holds them;
- a running ``claude`` announces itself in ``~/.claude/sessions/<pid>.json`` (its pid, the
  session id, its start time as ``/proc/<pid>/stat`` gives it) and removes the file when it exits
  cleanly, not when it is killed; it holds the transcript open only while it appends;
- it never asks the API to count tokens: its figures are the API's ``usage``.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

from support.claude_api import reply_for
from support.claude_damage import LOSSES, ON_COMPACTED, Session, last_of, prompt_row, turn_rows
from support.claude_peer import append_rows, phrases_in

pytestmark = pytest.mark.claude


def _branch(s: Session, parent: str, word: str) -> list[dict[str, Any]]:
    """A prompt and a reply under ``parent``, new uuids and a new message id (rows shaped as the CLI writes them)."""
    rows = s.rows()
    prompt = json.loads(json.dumps(prompt_row(rows, s.turns[3].prompt)))
    reply = json.loads(json.dumps([r for r in turn_rows(rows, s.turns[3].prompt) if r["type"] == "assistant"][-1]))
    prompt.update(uuid=str(uuid.uuid4()), parentUuid=parent)
    prompt["message"]["content"] = f"branch {word}-ASK"
    reply.update(uuid=str(uuid.uuid4()), parentUuid=prompt["uuid"])
    said = [{"type": "text", "text": f"{word}-SAID"}]
    reply["message"].update(id=f"msg_branch_{uuid.uuid4().hex[:12]}", content=said)
    return [prompt, reply]


def _last_prompt(s: Session, leaf: str) -> dict[str, Any]:
    row = dict(last_of(s.rows(), "last-prompt"))
    row["leafUuid"] = leaf
    return row


def test_a_later_row_with_the_same_uuid_wins(claude_base: Session, tmp_path: Path) -> None:
    s = claude_base.copy(tmp_path)
    earlier = {w for t in s.turns[:-1] for w in t.words}
    prompt = prompt_row(s.rows(), s.turns[-1].prompt)
    append_rows(s.path, [{**prompt, "parentUuid": None}])
    assert not phrases_in(s.next_request(), earlier)  # the appended copy's null parent is taken
    changed = json.loads(json.dumps(prompt_row(s.rows(), s.turns[3].prompt)))
    changed["message"]["content"] = "then P4-CHANGED"
    append_rows(s.path, [prompt, changed])  # the prompt as it was, and turn 4's with other words
    words = s.words() - {"P4-DELTA"} | {"P4-CHANGED"}
    assert phrases_in(s.next_request(), words | {"P4-DELTA"}) == words  # the whole row is replaced


def test_a_last_prompt_row_picks_the_leaf_when_it_names_one(claude_base: Session, tmp_path: Path) -> None:
    s = claude_base.copy(tmp_path)
    fork = turn_rows(s.rows(), s.turns[3].prompt)[-1]["uuid"]
    branch = _branch(s, fork, "BRB")
    last = {"BRB-ASK", "BRB-SAID", *s.turns[-1].words}
    append_rows(s.path, branch)  # newer in the file, but the last last-prompt names the old leaf
    assert phrases_in(s.next_request(), last) == set(s.turns[-1].words)
    append_rows(s.path, [_last_prompt(s, branch[-1]["uuid"])])
    assert phrases_in(s.next_request(), last) == {"BRB-ASK", "BRB-SAID"}
    append_rows(s.path, [_last_prompt(s, fork)])  # an inner row: ignored, the newest leaf is taken
    seen = phrases_in(s.next_request(), last)
    assert seen == {"BRB-ASK", "BRB-SAID"}


def test_assistant_rows_sharing_a_message_id_are_sent_as_one(claude_base: Session, tmp_path: Path) -> None:
    s = claude_base.copy(tmp_path)
    rows = s.rows()
    fork = turn_rows(rows, s.turns[3].prompt)[-1]["uuid"]
    prompt, reply = _branch(s, fork, "ASIDE")
    turn2 = [r for r in turn_rows(rows, s.turns[1].prompt) if r["type"] == "assistant"][-1]
    reply["message"]["id"] = turn2["message"]["id"]  # a row off the path, sharing turn 2's reply id
    append_rows(s.path, [prompt, reply, _last_prompt(s, last_of(rows, "last-prompt")["leafUuid"])])
    body = s.next_request()
    assert phrases_in(body, {"ASIDE-ASK", "ASIDE-SAID"}) == {"ASIDE-SAID"}
    merged = [m for m in body["messages"] if m["role"] == "assistant" and "ASIDE-SAID" in json.dumps(m)]
    assert len(merged) == 1 and reply_for(s.turns[1].prompt, after_tool=True) in json.dumps(merged[0])


@pytest.mark.parametrize("kind", [k for k in LOSSES if k != "continue_elsewhere"])
def test_appending_the_rows_as_they_were_mends_each_kind(
    kind: str, claude_base: Session, claude_compacted: Session, tmp_path: Path
) -> None:
    damaged = LOSSES[kind]((claude_compacted if kind in ON_COMPACTED else claude_base).copy(tmp_path))
    assert damaged.before
    append_rows(damaged.session.path, damaged.before)
    live = damaged.session.words() - damaged.session.dropped
    assert phrases_in(damaged.next_request(), live) == live


def test_a_kept_tail_comes_back_only_whole(claude_compacted: Session, tmp_path: Path) -> None:
    # The kept reply appended without its stop_hook_summary row: the splice needs every listed uuid.
    damaged = LOSSES["preserved_missing"](claude_compacted.copy(tmp_path))
    reply = [r for r in damaged.before if r["type"] == "assistant"]
    assert reply and len(reply) < len(damaged.before)
    append_rows(damaged.session.path, reply)
    assert not phrases_in(damaged.next_request(), damaged.lost)


def _proc_start(pid: int) -> str:
    # Field 22 of /proc/<pid>/stat (after the parenthesised command name, which may hold spaces).
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def _open_files(pid: int) -> set[str]:
    out: set[str] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            out.add(os.readlink(fd))
        except OSError:
            continue
    return out


def test_a_running_claude_announces_its_session_and_a_killed_one_leaves_the_note(
    claude_base: Session, tmp_path: Path
) -> None:
    s = claude_base.copy(tmp_path)
    sessions = s.peer.config_dir / "sessions"
    for how in ("exits", "killed"):
        with s.peer.api.hold():
            run = s.peer.spawn("-p", f"held {how}", "--output-format", "json", "--resume", s.sid, cwd=s.cwd)
            run.wait_for_request()
            note = json.loads((sessions / f"{run.pid}.json").read_text())
            assert (note["pid"], note["sessionId"], note["cwd"]) == (run.pid, s.sid, str(s.cwd))
            assert note["procStart"] == _proc_start(run.pid) and note["status"] == "busy"
            assert Path(note["messagingSocketPath"]).parent == s.peer.tmp / "cc-socks"  # it follows TMPDIR
            cmdline = Path(f"/proc/{run.pid}/cmdline").read_bytes().split(b"\0")
            assert [b"--resume", s.sid.encode()] == cmdline[cmdline.index(b"--resume") :][:2]
            assert str(s.path) not in _open_files(run.pid)  # opened only while it appends
            if how == "killed":
                os.killpg(run.pid, signal.SIGKILL)
        done = run.finish()
        if how == "exits":
            assert done.returncode == 0 and not (sessions / f"{run.pid}.json").exists()
        else:
            assert done.returncode == -signal.SIGKILL and (sessions / f"{run.pid}.json").exists()


def test_token_figures_come_from_the_api_usage(claude_compacted: Session) -> None:
    rows = claude_compacted.rows()
    boundary = last_of(rows, "system", subtype="compact_boundary")
    before = [r for r in rows[: rows.index(boundary)] if r.get("type") == "assistant"][-1]["message"]["usage"]
    counted = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    assert boundary["compactMetadata"]["preTokens"] == sum(before[k] for k in counted)
    paths = {r.path.split("?", 1)[0] for r in claude_compacted.peer.api.requests}
    assert paths == {"/v1/messages"}  # no count_tokens, no other endpoint
