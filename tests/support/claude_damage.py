"""Real Claude Code sessions, and the damage users meet in them (issue 39's table).

:func:`build_base` makes one session with the real CLI: several turns, a Bash tool call, a
subagent (the Agent tool, run in the foreground), under a Stop hook (so each turn ends with a
``system/stop_hook_summary`` row, as for the many users who have one). Every turn puts known
words in the model's view (:class:`Turn`): the prompt's marker, the tool's output (``echo
P2-$((40+2))`` prints ``P2-42``, a word the prompt does not hold), and the stand-in's replies
(:func:`support.claude_api.reply_for`).

One function per kind of damage then turns a copy of that session into what users meet
(:data:`LOSSES`, :data:`NON_LOSSES`) and says which words the next ``claude --resume`` should
no longer send, per the table. The damage is made as the bug reports describe it, on rows
the CLI wrote: a rewritten ``parentUuid``, rows written by older releases (``progress``,
``isSidechain`` rows in the main file, shaped as those releases wrote them) with a prompt
parented on one, a ``stop_hook_summary`` re-parented beside the reply (#88597), a
``/compact`` followed by a broken link, rows deleted, a ``--continue`` from another folder.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from support.claude_api import SUMMARY_MARK, reply_for
from support.claude_peer import ClaudePeer, read_rows, write_rows

STOP_HOOK = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}
"""The user settings every base session runs under: a Stop hook that does nothing."""


@dataclass(frozen=True)
class Turn:
    """One turn of a base session: what the user typed and the words it put in the model's view."""

    prompt: str
    words: tuple[str, ...]


def turns(tag: str = "") -> list[Turn]:
    """The five turns of a base session; ``tag`` varies every word (for runs whose words are not in the repository)."""
    p = [
        f"remember P1{tag}-ALPHA",
        f"please run `echo P2{tag}-$((40+2))`",
        f"and delegate `report P3{tag}-CHARLIE`",
        f"then P4{tag}-DELTA",
        f"finally P5{tag}-ECHO",
    ]
    delegated = f"report P3{tag}-CHARLIE"
    return [
        Turn(p[0], (f"P1{tag}-ALPHA", reply_for(p[0]))),
        Turn(p[1], (f"echo P2{tag}-$((40+2))", f"P2{tag}-42", reply_for(p[1], after_tool=True))),
        Turn(p[2], (f"delegate `{delegated}`", reply_for(delegated), reply_for(p[2], after_tool=True))),
        Turn(p[3], (f"P4{tag}-DELTA", reply_for(p[3]))),
        Turn(p[4], (f"P5{tag}-ECHO", reply_for(p[4]))),
    ]


def subagent_prompt(turns_: list[Turn]) -> str:
    """What the base session's subagent was asked (its first, ``isSidechain`` row's prompt)."""
    return turns_[2].prompt.split("`")[1]


@dataclass
class Session:
    """A session the real CLI wrote: the peer (HOME) it lives in, its id, the folder it was begun
    in, its turns, and the words later turns added or the CLI dropped by design."""

    peer: ClaudePeer
    sid: str
    turns: list[Turn]
    cwd: Path
    extra: tuple[str, ...] = ()
    """Words put in the view after the base turns (a compaction's summary, a later turn's)."""
    dropped: frozenset[str] = frozenset()
    """Words the CLI leaves out by design (compacted away, rewound past): not a loss."""
    preserved: frozenset[str] = frozenset()
    """Words of a compaction's preserved tail (sent verbatim after the summary)."""

    @property
    def path(self) -> Path:
        return self.peer.transcript(self.sid, cwd=self.cwd)

    def rows(self) -> list[dict[str, Any]]:
        return read_rows(self.path)

    def words(self) -> set[str]:
        """Every word the turns put in the view, dropped ones included."""
        return {w for t in self.turns for w in t.words} | set(self.extra)

    def copy(self, root: Path) -> Session:
        """The same session in a copy of its HOME under ``root``."""
        return replace(self, peer=self.peer.copy(root))

    def next_request(self, prompt: str = "next") -> dict[str, Any]:
        """What ``claude --resume SID -p PROMPT`` sends, run in the folder the session was begun in."""
        return self.peer.next_request(self.sid, prompt, cwd=self.cwd)


def build_base(peer: ClaudePeer, *, tag: str = "") -> Session:
    """A new session of :func:`turns` in ``peer``'s project folder, under :data:`STOP_HOOK`."""
    peer.config_dir.mkdir(parents=True, exist_ok=True)
    (peer.config_dir / "settings.json").write_text(json.dumps(STOP_HOOK))
    made = turns(tag)
    sid = peer.session([t.prompt for t in made])
    return Session(peer, sid, made, peer.project)


def compacted(s: Session, *, tag: str = "") -> Session:
    """``s`` after ``claude --resume SID -p /compact`` and one more turn (``after P6-FOXTROT``).

    The compaction keeps the last reply verbatim (2.1.332 names it in ``preservedMessages``) and
    replaces the rest with the stand-in's summary (:data:`~support.claude_api.SUMMARY_MARK`)."""
    s.peer.compact(s.sid, cwd=s.cwd)
    later = f"after P6{tag}-FOXTROT"
    s.peer.prompt(later, resume=s.sid, cwd=s.cwd)
    rows = s.rows()
    boundary = last_of(rows, "system", subtype="compact_boundary")
    kept = set(boundary["compactMetadata"]["preservedMessages"]["uuids"])
    text = " ".join(json.dumps(r.get("message")) for r in rows if r.get("uuid") in kept)
    preserved = frozenset(w for w in s.words() if w in text)
    return replace(
        s,
        extra=(*s.extra, SUMMARY_MARK, f"P6{tag}-FOXTROT", reply_for(later)),
        dropped=frozenset(s.words() - preserved),
        preserved=preserved,
    )


# -- finding and changing rows -------------------------------------------------------------------


def prompt_row(rows: list[dict[str, Any]], prompt: str) -> dict[str, Any]:
    """The ``user`` row of the prompt ``prompt`` (the last one, should it be there twice)."""
    found = [
        r for r in rows if r.get("type") == "user" and (r.get("message") or {}).get("content") == prompt and "uuid" in r
    ]
    assert found, f"no prompt row {prompt!r}"
    return found[-1]


def by_uuid(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["uuid"]: r for r in rows if isinstance(r.get("uuid"), str)}


def turn_rows(rows: list[dict[str, Any]], prompt: str) -> list[dict[str, Any]]:
    """The conversation rows of the turn begun by ``prompt``, in file order: the prompt and the
    rows after it up to (not including) the next prompt the user typed."""
    start = prompt_row(rows, prompt)
    out: list[dict[str, Any]] = []
    on = False
    for r in rows:
        typed = r.get("type") == "user" and isinstance((r.get("message") or {}).get("content"), str)
        if r is start:
            on = True
        elif on and typed and not r.get("isMeta") and not r.get("isCompactSummary"):
            break
        if on and "uuid" in r:
            out.append(r)
    return out


def last_of(rows: list[dict[str, Any]], kind: str, **where: Any) -> dict[str, Any]:
    """The last row of type ``kind`` (``system`` rows: ``subtype=``) matching ``where``."""
    found = [r for r in rows if r.get("type") == kind and all(r.get(k) == v for k, v in where.items())]
    assert found, f"no {kind} row {where}"
    return found[-1]


def set_parent(s: Session, row_uuid: str, parent: str | None) -> dict[str, Any]:
    """Rewrite one row's ``parentUuid`` (every other row as it was); the row as it was."""
    rows = s.rows()
    hit = [r for r in rows if r.get("uuid") == row_uuid]
    assert hit, f"no row {row_uuid}"
    was: dict[str, Any] = json.loads(json.dumps(hit[-1]))
    for r in hit:
        r["parentUuid"] = parent
    write_rows(s.path, rows)
    return was


def insert_before(s: Session, anchor_uuid: str, new: list[dict[str, Any]]) -> None:
    """Put ``new`` rows in the file just before the row ``anchor_uuid`` (where the CLI would have written them)."""
    rows = s.rows()
    at = next(i for i, r in enumerate(rows) if r.get("uuid") == anchor_uuid)
    write_rows(s.path, rows[:at] + new + rows[at:])


def progress_rows(s: Session, n: int = 3) -> list[dict[str, Any]]:
    """``progress`` rows as releases before 2.1.332 wrote them for a hook's or a subagent's
    progress (#35024, #37437): a chain of their own rooted at ``null``. 2.1.332 writes none
    (hooks leave ``attachment`` rows now) but keeps them in its map of rows when it reads them."""
    rows: list[dict[str, Any]] = []
    parent: str | None = None
    stamp = s.rows()[-1].get("timestamp")
    for k in range(n):
        u = str(uuid.uuid4())
        hook = {"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Bash", "command": "true"}
        rows.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "type": "progress",
                "data": hook,
                "toolUseID": f"toolu_progress_{k}",
                "parentToolUseID": f"toolu_progress_{k}",
                "uuid": u,
                "timestamp": stamp,
                "sessionId": s.sid,
                "cwd": str(s.cwd),
                "version": "2.1.77",
                "userType": "external",
            }
        )
        parent = u
    return rows


def subagent_rows(s: Session) -> list[dict[str, Any]]:
    """The conversation rows of the session's subagent, from ``<sid>/subagents/agent-*.jsonl``
    where 2.1.332 writes them (``isSidechain: true``, ``agentId``)."""
    files = sorted((s.path.parent / s.sid / "subagents").glob("agent-*.jsonl"))
    assert files, f"no subagent transcript beside {s.path}"
    return [r for r in read_rows(files[0]) if "uuid" in r]


# -- the damage -----------------------------------------------------------------------------------


@dataclass
class Damaged:
    """A damaged copy of a base session and what the table says the next ``--resume`` loses."""

    kind: str
    session: Session
    lost: set[str]
    """Words the next request no longer holds (empty for the non-losses)."""
    injected: list[str] = field(default_factory=list)
    """Prompts the damage brings into the view as user messages of their own (a subagent's)."""
    probe: Callable[[str], dict[str, Any]] | None = None
    """How the user meets it, when not ``claude --resume SID`` in the session's folder."""
    gone: set[str] = field(default_factory=set)
    """Words the damage itself destroyed (a torn row): lost, but nothing can bring them back."""
    before: list[dict[str, Any]] = field(default_factory=list)
    """The rows the damage changed or removed, as they were (for measuring what mends it)."""

    def next_request(self, prompt: str = "next") -> dict[str, Any]:
        return self.probe(prompt) if self.probe is not None else self.session.next_request(prompt)

    @property
    def kept(self) -> set[str]:
        """Words the next request must still hold."""
        return self.session.words() - self.lost - self.gone - self.session.dropped


def _words(turns_: list[Turn]) -> set[str]:
    return {w for t in turns_ for w in t.words}


def _live(s: Session) -> set[str]:
    """The words a session's next request holds when nothing is wrong."""
    return s.words() - s.dropped


def null_parent(s: Session) -> Damaged:
    """The last prompt's ``parentUuid`` set to ``null``: a second root. Lost: every earlier turn,
    the tool pair included."""
    was = set_parent(s, prompt_row(s.rows(), s.turns[-1].prompt)["uuid"], None)
    return Damaged("null_parent", s, _words(s.turns[:-1]), before=[was])


def progress_parent(s: Session) -> Damaged:
    """The last prompt parented on a ``progress`` row of a chain rooted at ``null`` (a retry that
    took a subagent's progress row for the leaf, #37437; hook progress forks, #35024). Lost:
    every earlier turn."""
    prompt = prompt_row(s.rows(), s.turns[-1].prompt)
    progress = progress_rows(s)
    insert_before(s, prompt["uuid"], progress)
    was = set_parent(s, prompt["uuid"], progress[-1]["uuid"])
    return Damaged("progress_parent", s, _words(s.turns[:-1]), before=[was])


def sidechain_parent(s: Session) -> Damaged:
    """The last prompt parented on the subagent's last ``isSidechain`` row, the subagent's rows in
    the main file as releases before 2.1.332 wrote them. Lost: every earlier turn; the
    subagent's own prompt and reply are sent instead."""
    side = subagent_rows(s)
    prompt = prompt_row(s.rows(), s.turns[-1].prompt)
    insert_before(s, prompt["uuid"], side)
    was = set_parent(s, prompt["uuid"], side[-1]["uuid"])
    asked = subagent_prompt(s.turns)
    lost = _words(s.turns[:-1]) - {reply_for(asked)}
    return Damaged("sidechain_parent", s, lost, injected=[asked], before=[was])


def wrong_parent(s: Session) -> Damaged:
    """The last prompt parented on an existing but wrong earlier row: the end of turn 2. Lost:
    the turns in between (3 and 4). It looks like a rewind; only the missing rewind marks tell."""
    rows = s.rows()
    end2 = turn_rows(rows, s.turns[1].prompt)[-1]
    was = set_parent(s, prompt_row(rows, s.turns[-1].prompt)["uuid"], end2["uuid"])
    return Damaged("wrong_parent", s, _words(s.turns[2:4]), before=[was])


def stop_hook_fork(s: Session) -> Damaged:
    """#88597: turn 4's ``system/stop_hook_summary`` written with the reply's parent (a sibling of
    the reply), and the next prompt under it. Lost: the delivered reply."""
    rows = turn_rows(s.rows(), s.turns[3].prompt)
    reply = [r for r in rows if r.get("type") == "assistant"][-1]
    summary = [r for r in rows if r.get("subtype") == "stop_hook_summary"][-1]
    was = set_parent(s, summary["uuid"], reply["parentUuid"])
    return Damaged("stop_hook_fork", s, {reply_for(s.turns[3].prompt)}, before=[was])


def compact_null(s: Session) -> Damaged:
    """On a :func:`compacted` session: the first prompt after ``/compact`` parented on ``null``.
    Lost: the summary and the preserved tail."""
    later = next(w for w in s.extra if w.startswith("P6"))
    was = set_parent(s, prompt_row(s.rows(), f"after {later}")["uuid"], None)
    return Damaged("compact_null", s, {SUMMARY_MARK, *s.preserved}, before=[was])


def preserved_missing(s: Session) -> Damaged:
    """On a :func:`compacted` session: the rows ``preservedMessages`` names are not in the file
    (written nowhere, #46603). Lost: the preserved verbatim tail."""
    rows = s.rows()
    named = set(last_of(rows, "system", subtype="compact_boundary")["compactMetadata"]["preservedMessages"]["uuids"])
    write_rows(s.path, [r for r in rows if r.get("uuid") not in named])
    return Damaged("preserved_missing", s, set(s.preserved), before=[r for r in rows if r.get("uuid") in named])


def continue_elsewhere(s: Session) -> Damaged:
    """``claude --continue`` run from another folder (a moved terminal, a subfolder): the CLI
    finds no session there and starts a new, empty one. Lost: everything."""
    elsewhere = s.peer.root / "elsewhere"
    elsewhere.mkdir(exist_ok=True)

    def probe(prompt: str) -> dict[str, Any]:
        return s.peer.prompt(prompt, continue_=True, cwd=elsewhere).first_body

    return Damaged("continue_elsewhere", s, _live(s), probe=probe)


LOSSES: dict[str, Callable[[Session], Damaged]] = {
    "null_parent": null_parent,
    "progress_parent": progress_parent,
    "sidechain_parent": sidechain_parent,
    "wrong_parent": wrong_parent,
    "stop_hook_fork": stop_hook_fork,
    "compact_null": compact_null,
    "preserved_missing": preserved_missing,
    "continue_elsewhere": continue_elsewhere,
}
"""The table's losses, in its order; ``compact_null`` and ``preserved_missing`` take a :func:`compacted` session."""
ON_COMPACTED = frozenset({"compact_null", "preserved_missing"})


# -- what is not a loss ---------------------------------------------------------------------------


def missing_parent(s: Session) -> Damaged:
    """The last prompt's ``parentUuid`` names a uuid in no row (#21617, #22526, #58554): 2.1.332
    bridges it to the row before it in the file. Nothing lost."""
    set_parent(s, prompt_row(s.rows(), s.turns[-1].prompt)["uuid"], str(uuid.uuid4()))
    return Damaged("missing_parent", s, set())


def torn_line(s: Session) -> Damaged:
    """A write cut short (a crash, a full disk): the last line torn in half, then the user goes
    on (one more turn, which the CLI starts on a line of its own). Nothing lost but the torn
    row, a metadata row here."""
    raw = s.path.read_bytes()
    last = raw.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    assert b'"uuid"' not in last, "the base session's last row should be a metadata row"
    s.path.write_bytes(raw[: len(raw.rstrip(b"\n")) - len(last) // 2])
    later = "after P8-HOTEL"
    s.peer.prompt(later, resume=s.sid, cwd=s.cwd)
    return Damaged("torn_line", replace(s, extra=(*s.extra, "P8-HOTEL", reply_for(later))), set())


def orphan_result(s: Session) -> Damaged:
    """A ``tool_result`` row whose ``tool_use_id`` no ``tool_use`` names, in the chain before the
    last prompt (a pair split over branches, #60523): 2.1.332 leaves it out of the request, so
    the API gets no unpaired result. Nothing lost."""
    rows = s.rows()
    result = next(r for r in rows if r.get("sourceToolAssistantUUID"))
    prompt = prompt_row(rows, s.turns[-1].prompt)
    orphan = json.loads(json.dumps(result))
    orphan["uuid"] = str(uuid.uuid4())
    orphan["parentUuid"] = prompt["parentUuid"]
    orphan["sourceToolAssistantUUID"] = str(uuid.uuid4())
    orphan["message"]["content"][0]["tool_use_id"] = "toolu_orphan_1"
    insert_before(s, prompt["uuid"], [orphan])
    set_parent(s, prompt["uuid"], orphan["uuid"])
    return Damaged("orphan_result", s, set())


def compacted_session(s: Session) -> Damaged:
    """A :func:`compacted` session, undamaged: the summary, the preserved tail and the later turn
    are sent; what the compaction summarised is dropped by design. Nothing lost."""
    return Damaged("compacted", s, set())


def rewound(s: Session) -> Damaged:
    """A rewind: ``claude --resume SID --resume-session-at <turn 2's reply> -p ...`` (the CLI's
    own way back), then the next ``--resume``. Turns 3-5 are left by design. Nothing lost."""
    reply = [r for r in turn_rows(s.rows(), s.turns[1].prompt) if r.get("type") == "assistant"][-1]
    instead = "instead P7-GOLF"
    s.peer.prompt(instead, resume=s.sid, resume_at=reply["uuid"], cwd=s.cwd)
    later = replace(
        s, extra=(*s.extra, "P7-GOLF", reply_for(instead)), dropped=frozenset(s.dropped | _words(s.turns[2:]))
    )
    return Damaged("rewound", later, set())


def with_subagent(s: Session) -> Damaged:
    """The base session as it is: it ran a subagent (``isSidechain`` rows in its own file under
    ``<sid>/subagents/``). Nothing lost."""
    assert all(r.get("isSidechain") for r in subagent_rows(s))
    return Damaged("with_subagent", s, set())


def resume_elsewhere(s: Session) -> Damaged:
    """``claude --resume SID`` from another folder: 2.1.332 finds the session anyway. Nothing lost."""
    elsewhere = s.peer.root / "elsewhere"
    elsewhere.mkdir(exist_ok=True)

    def probe(prompt: str) -> dict[str, Any]:
        return s.peer.next_request(s.sid, prompt, cwd=elsewhere)

    return Damaged("resume_elsewhere", s, set(), probe=probe)


NON_LOSSES: dict[str, Callable[[Session], Damaged]] = {
    "missing_parent": missing_parent,
    "torn_line": torn_line,
    "orphan_result": orphan_result,
    "compacted": compacted_session,
    "rewound": rewound,
    "with_subagent": with_subagent,
    "resume_elsewhere": resume_elsewhere,
}
"""What 2.1.332 bridges or does by design; ``compacted`` takes a :func:`compacted` session."""
ON_COMPACTED_NON_LOSSES = frozenset({"compacted"})
