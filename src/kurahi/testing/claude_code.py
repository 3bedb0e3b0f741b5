"""Claude Code session files for tests and benchmarks, shaped as Claude Code 2.1.332 writes them.

:class:`ClaudeSession` builds one session row by row (a prompt, the attachments the CLI adds,
a tool call and its result, a reply of several blocks sharing one ``message.id``, the
``last-prompt`` row, a compaction, a subagent's rows, metadata rows without a uuid, the record
of a request the CLI sent: ``api-request-blob`` and ``api-request`` rows) and writes
it where Claude Code keeps it: ``projects/<slug of cwd>/<session id>.jsonl``. Every id and
time comes from the seed. Rows can be changed afterwards (:meth:`ClaudeSession.row`) and raw
lines put in (a torn line, NUL bytes), which is how tests make the damage users meet.

:func:`write_projects` generates a whole ``projects/`` folder of many sessions and a given
size, for the benchmark of ``kurahi rescue --claude``::

    python -m kurahi.testing.claude_code --sessions 2000 --megabytes 1024 DIR
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["HEAD", "ClaudeSession", "Turn", "main", "slug", "write_projects"]

HEAD = "<head>"
"""As a parent: the row the session's next row hangs under (the last row of the main chain)."""

_TEXT = (
    "the quick brown fox jumps over a lazy dog while the build runs and tests pass slowly "
    "kurahi keeps history continuous across resets compactions and moved folders every day "
    "parser reader writer module function class value error line file byte table index"
)
_WORDS = tuple(_TEXT.split())
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def slug(cwd: str) -> str:
    """Claude Code's project folder name for a working directory."""
    return _NOT_ALNUM.sub("-", cwd)


@dataclass
class Turn:
    """The rows one turn wrote."""

    prompt: str
    reply: str
    """The reply's last row."""
    rows: list[str] = field(default_factory=list)
    """Every uuid of the turn, in file order."""
    tool_use: str | None = None
    """The row of the tool call (when the turn has one)."""
    tool_result: str | None = None
    tool_id: str | None = None


@dataclass
class ClaudeSession:
    """One Claude Code session file, built row by row (see the module docstring)."""

    cwd: str
    seed: int = 0
    session_id: str = ""
    version: str = "2.1.332"
    start: datetime = field(default_factory=lambda: datetime(2026, 12, 1, 10, 0, tzinfo=UTC))
    step: timedelta = timedelta(seconds=1)
    rows: list[dict[str, Any] | bytes] = field(default_factory=list)
    head: str | None = None
    """The uuid the next main-chain row hangs under."""

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        if not self.session_id:
            self.session_id = self.new_id()
        self.clock = self.start
        self._messages = 0
        self._turn: dict[str, int] = {}
        """The turn number current at each row: that of the last numbered row on its path."""

    # -- ids and times ---------------------------------------------------------------------------

    def new_id(self) -> str:
        """A uuid (version 4) from the seed."""
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def tick(self) -> str:
        """The next row's time (ISO-8601 UTC with milliseconds, as Claude Code writes it)."""
        self.clock += self.step
        return self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def text(self, words: int) -> str:
        """Words from the seed."""
        return " ".join(self.rng.choice(_WORDS) for _ in range(words))

    # -- rows ------------------------------------------------------------------------------------

    def _parent(self, parent: str | None) -> str | None:
        return self.head if parent == HEAD else parent

    def add(
        self,
        kind: str,
        body: dict[str, Any],
        *,
        parent: str | None = HEAD,
        sidechain: bool = False,
        move: bool = True,
        turn: int | None = None,
    ) -> str:
        """A conversation row of ``kind`` with ``body``'s fields; it becomes the head unless ``move`` is false.

        ``turn`` numbers the row's turn (a prompt's); other rows keep their parent's number.
        """
        uid = self.new_id()
        parent_uuid = self._parent(parent)
        row: dict[str, Any] = {
            "parentUuid": parent_uuid,
            "isSidechain": sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": "main",
            "type": kind,
            **body,
            "uuid": uid,
            "timestamp": self.tick(),
            "entrypoint": "cli",
        }
        self.rows.append(row)
        self._turn[uid] = turn if turn is not None else self._turn.get(parent_uuid or "", 0)
        if move and not sidechain:
            self.head = uid
        return uid

    def turn_of(self, parent: str | None = HEAD) -> int:
        """The number a prompt under ``parent`` gets (one more than the last numbered row on its path)."""
        return self._turn.get(self._parent(parent) or "", 0) + 1

    def meta(self, kind: str, **fields: Any) -> None:
        """A row without a uuid (``queue-operation``, ``cost-state``, ``api-request``, ...)."""
        self.rows.append({"type": kind, **fields, "sessionId": self.session_id, "timestamp": self.tick()})

    def request(self, messages: list[dict[str, Any]], *, base: str | None = None, keep: int = 0) -> str:
        """The CLI's record of one request (its id), as 2.1.332 writes it after a compaction.

        A blob row per message (sha256 of its JSON, keys sorted), then the ``api-request`` row:
        the first ``keep`` messages of request ``base``, then these.
        """
        tail: list[str] = []
        for m in messages:
            text = json.dumps(m, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            h = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            self.meta("api-request-blob", hash=h, message=m)
            tail.append(h)
        rid = self.new_id()
        self.meta("api-request", id=rid, **({"base": base} if base is not None else {}), keep=keep, tail=tail)
        return rid

    def prompt(self, text: str, *, parent: str | None = HEAD) -> str:
        """A prompt the user typed, numbered for the path it is written on (``turnPosition``)."""
        number = self.turn_of(parent)
        return self.add(
            "user",
            {
                "message": {"role": "user", "content": text},
                "promptId": self.new_id(),
                "permissionMode": "default",
                "promptSource": "sdk",
                "rowSource": "local",
                "turnOrigin": "sdk",
                "turnPosition": {"promptIndex": 0, "turnIndex": number},
            },
            parent=parent,
            turn=number,
        )

    def attachment(self, kind: str = "date_change", *, parent: str | None = HEAD) -> str:
        """An attachment row (the CLI's listings of the environment, tools, agents, the date)."""
        return self.add("attachment", {"attachment": {"type": kind, "content": self.text(8)}}, parent=parent)

    def assistant(
        self,
        blocks: list[dict[str, Any]],
        *,
        parent: str | None = HEAD,
        sidechain: bool = False,
        message_id: str | None = None,
    ) -> list[str]:
        """One response: a row per content block, sharing ``message.id``, chained in order."""
        self._messages += 1
        mid = message_id or f"msg_{self.rng.getrandbits(96):024x}"
        request = f"req_{self.rng.getrandbits(96):024x}"
        out: list[str] = []
        at = self._parent(parent)
        for n, block in enumerate(blocks):
            message = {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [block],
                "stop_reason": None
                if n < len(blocks) - 1
                else ("tool_use" if block["type"] == "tool_use" else "end_turn"),
                "usage": {"input_tokens": 100, "output_tokens": 20},
            }
            at = self.add(
                "assistant",
                {"message": message, "apiBlockIndex": n, "requestId": request},
                parent=at,
                sidechain=sidechain,
            )
            out.append(at)
        return out

    def reply(self, text: str, *, parent: str | None = HEAD) -> str:
        """A reply of one text block; its row."""
        return self.assistant([{"type": "text", "text": text}], parent=parent)[-1]

    def tool(self, command: str, output: str, *, parent: str | None = HEAD) -> tuple[str, str, str]:
        """A ``Bash`` call and its result: (the call's row, the result's row, the tool id)."""
        tool_id = f"toolu_{self.rng.getrandbits(96):024x}"
        call = self.assistant(
            [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}], parent=parent
        )[-1]
        result = self.add(
            "user",
            {
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": False}],
                },
                "sourceToolAssistantUUID": call,
                "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False},
            },
        )
        return call, result, tool_id

    def last_prompt(self, text: str = "", leaf: str | None = HEAD) -> None:
        """The ``last-prompt`` row: the leaf ``--resume`` starts from."""
        self.rows.append(
            {"type": "last-prompt", "lastPrompt": text, "leafUuid": self._parent(leaf), "sessionId": self.session_id}
        )

    def turn(
        self,
        prompt: str,
        reply: str,
        *,
        tool: tuple[str, str] | None = None,
        attachments: int = 2,
        thinking: str | None = None,
    ) -> Turn:
        """A whole turn as the CLI writes it: prompt, attachments, [tool call, result], reply, metadata."""
        start = len(self.rows)
        self.meta("queue-operation", operation="dequeue")
        p = self.prompt(prompt)
        for _ in range(attachments):
            self.attachment()
        t = Turn(prompt=p, reply="")
        if tool is not None:
            t.tool_use, t.tool_result, t.tool_id = self.tool(*tool)
        blocks: list[dict[str, Any]] = []
        if thinking is not None:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": "sig"})
        blocks.append({"type": "text", "text": reply})
        t.reply = self.assistant(blocks)[-1]
        self.meta("cost-state", costUSD=0.01)
        self.last_prompt(prompt)
        t.rows = [r["uuid"] for r in self.rows[start:] if isinstance(r, dict) and "uuid" in r]
        return t

    def system(self, subtype: str, *, parent: str | None = HEAD, move: bool = True, **fields: Any) -> str:
        """A ``system`` row (``stop_hook_summary``, ``turn_duration``, ...)."""
        return self.add("system", {"subtype": subtype, "level": "info", **fields}, parent=parent, move=move)

    def progress(self, *, parent: str | None = HEAD) -> str:
        """A ``progress`` row (a hook or tool reporting); the head does not move."""
        return self.add(
            "progress", {"data": {"type": "hook_progress"}, "toolUseID": "toolu_x"}, parent=parent, move=False
        )

    def subagent(self, task: str, answer: str) -> list[str]:
        """A subagent's rows in the main file (``isSidechain``): its prompt (a root) and its answer."""
        p = self.add(
            "user", {"message": {"role": "user", "content": task}, "agentId": "a1"}, parent=None, sidechain=True
        )
        return [p, *self.assistant([{"type": "text", "text": answer}], parent=p, sidechain=True)]

    def compact(self, summary: str, keep: list[str]) -> tuple[str, str]:
        """``/compact``: the boundary (no parent) naming ``keep`` as the preserved tail, then the summary row."""
        logical = self.head
        meta = {
            "trigger": "manual",
            "preTokens": 5000,
            "postTokens": 900,
            "preservedSegment": {
                "headUuid": keep[0] if keep else None,
                "anchorUuid": None,
                "tailUuid": keep[-1] if keep else None,
            },
            "preservedMessages": {"anchorUuid": None, "uuids": list(keep), "allUuids": list(keep)},
        }
        boundary = self.add(
            "system",
            {
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "logicalParentUuid": logical,
                "compactMetadata": meta,
            },
            parent=None,
        )
        meta["preservedSegment"]["anchorUuid"] = boundary  # type: ignore[index]
        number = self._turn.get(logical or "", 0)  # the summary keeps the number of the turn it ends
        summary_row = self.add(
            "user",
            {
                "message": {"role": "user", "content": summary},
                "isCompactSummary": True,
                "isVisibleInTranscriptOnly": True,
                "turnPosition": {"promptIndex": 0, "turnIndex": number},
            },
            turn=number,
        )
        meta["preservedMessages"]["anchorUuid"] = summary_row  # type: ignore[index]
        return boundary, summary_row

    def raw(self, line: bytes) -> None:
        """A line as given, byte for byte (end it with a newline unless it is to be torn)."""
        self.rows.append(line)

    # -- changing rows -----------------------------------------------------------------------------

    def row(self, uid: str) -> dict[str, Any]:
        """The row with uuid ``uid`` (to change it in place)."""
        for r in self.rows:
            if isinstance(r, dict) and r.get("uuid") == uid:
                return r
        raise KeyError(uid)

    def drop(self, uids: Iterable[str]) -> None:
        """Take rows out of the file."""
        gone = set(uids)
        self.rows = [r for r in self.rows if not (isinstance(r, dict) and r.get("uuid") in gone)]

    # -- bytes -------------------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The file's bytes: one compact JSON object a line; a raw line is kept as given."""
        out: list[bytes] = []
        for r in self.rows:
            if isinstance(r, bytes):
                out.append(r)
            else:
                out.append(msgspec.json.encode(r) + b"\n")
        return b"".join(out)

    def path_in(self, config_dir: Path) -> Path:
        """Where Claude Code keeps this session under ``config_dir``."""
        return config_dir / "projects" / slug(self.cwd) / f"{self.session_id}.jsonl"

    def write(self, config_dir: Path) -> Path:
        """Write the session under ``config_dir`` (``projects/<slug>/<id>.jsonl``); its path."""
        path = self.path_in(config_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.to_bytes())
        return path


def _generated_turn(s: ClaudeSession, rng: random.Random, pool: str, k: int) -> int:
    """One turn as a working session has them: a prompt, nine attachments, 0-4 tool calls, thinking and a reply.

    Most tool outputs are short, a few long (a file read, a test run). Returns the characters of text written.
    """

    def cut(low: int, high: int) -> str:
        n = rng.randrange(low, high)
        at = rng.randrange(0, len(pool) - n)
        return pool[at : at + n]

    s.meta("queue-operation", operation="dequeue")
    prompt = cut(40, 400)
    s.prompt(f"step {k}: {prompt}")
    written = len(prompt)
    for _ in range(9):
        s.attachment("environment")
    for n in range(rng.choice((0, 1, 1, 2, 2, 3, 4))):
        output = cut(20_000, 60_000) if rng.random() < 0.08 else cut(100, 3_000)
        s.tool(f"run {k}.{n}", output)
        written += 2 * len(output)  # in the result and again in toolUseResult
    thinking, text = cut(100, 1_500), cut(50, 1_500)
    s.assistant([{"type": "thinking", "thinking": thinking, "signature": "sig"}, {"type": "text", "text": text}])
    s.meta("cost-state", costUSD=0.01)
    s.last_prompt(prompt)
    return written + len(thinking) + len(text)


def write_projects(
    config_dir: Path,
    *,
    sessions: int = 2000,
    megabytes: float = 1024,
    projects: int = 40,
    seed: int = 0,
    damaged: int = 0,
) -> tuple[int, int]:
    """A ``projects/`` folder of ``sessions`` sessions totalling about ``megabytes``; (files, bytes) written.

    Sessions are of turns shaped as :func:`_generated_turn` makes them (about 1 KB a row on
    average, as a working session's rows are), spread over ``projects`` working directories,
    each session three hours after the last. ``damaged`` of them, spread evenly, have their
    second prompt's ``parentUuid`` set to ``null`` (a ``null-parent`` loss each); the rest are whole.
    """
    rng = random.Random(seed)
    per = megabytes * 1024 * 1024 / max(sessions, 1)
    pool = " ".join(rng.choice(_WORDS) for _ in range(400_000))
    written = 0
    start = datetime(2026, 1, 1, tzinfo=UTC)
    every = sessions // damaged if damaged else 0
    for n in range(sessions):
        cwd = f"/home/ava/work/project-{n % projects}"
        s = ClaudeSession(cwd, seed=seed * 1_000_003 + n, start=start + timedelta(hours=3 * n))
        target = per * rng.uniform(0.5, 1.5)
        size = 0
        k = 0
        while size < target:
            k += 1
            before = len(s.rows)
            size += _generated_turn(s, rng, pool, k) + 650 * (len(s.rows) - before)  # ~650 bytes of fields a row
        if every and n % every == every - 1 and k > 1:
            prompts = [r for r in s.rows if isinstance(r, dict) and "promptId" in r]
            prompts[1]["parentUuid"] = None
        written += s.write(config_dir).stat().st_size
    return sessions, written


def main(argv: list[str] | None = None) -> int:
    """``python -m kurahi.testing.claude_code``: write a generated ``projects/`` folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("dir", type=Path, help="the config dir to write projects/ into")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--megabytes", type=float, default=1024)
    parser.add_argument("--projects", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--damaged", type=int, default=0, help="how many sessions get a null-parent loss")
    args = parser.parse_args(argv)
    files, size = write_projects(
        args.dir,
        sessions=args.sessions,
        megabytes=args.megabytes,
        projects=args.projects,
        seed=args.seed,
        damaged=args.damaged,
    )
    print(f"wrote {files} sessions, {size / 1e6:.1f} MB, under {args.dir / 'projects'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
