"""Generated Pi v3 transcripts of any size, for tests and benchmarks that need big files.

Unlike :func:`kurahi.testing.build_session`, which drives the real store, this writes JSONL
lines directly, so it is fast (a 200,000-entry tree takes a few seconds) and the bytes
depend only on the options: ids, timestamps and text all come from the seed.

The file reads like a long-lived agent session: user turns answered by assistant messages
with thinking, text and tool calls (``read``, ``write``, ``bash``, ``grep``) followed by
their tool results, model and thinking level changes, labels, a session name, extension
state (``custom``) and extension messages (``custom_message``), ``!`` shell runs
(``bashExecution``), now and then a return to an earlier entry (half the time with a
``branch_summary``), and compactions of the current path. With ``new_kinds`` it also holds
the kinds Pi 1.6.0 writes: ``usage`` entries, system-role messages, compactions carrying
the current ``systemMessage``, and ``context_edit`` entries that replace or remove an earlier
entry of the path. Entries average about 550 bytes with the default ``words``.

As a script::

    python -m kurahi.testing.sessions --entries 200000 --seed 7 OUT.jsonl
    python -m kurahi.testing.sessions --entries 200000 --seed 8 --branch 0 --compact-every 0 OUT.jsonl
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["GeneratedSession", "SessionShape", "generate_lines", "main", "write_session"]

# fmt: off
_WORDS = (
    "alpha", "beta", "gamma", "delta", "checklist", "meeting", "notes", "todo", "file", "write", "read",
    "debussy", "harmony", "session", "lineage", "compaction", "summary", "branch", "marker", "restart",
    "resume", "tool", "result", "action", "item", "elaborate", "second", "third", "harbour", "lantern",
    "orchard", "cobalt", "meridian", "quartz", "willow", "ember", "ledger", "durable", "append", "invoice",
    "schedule", "backup", "review", "draft", "deploy",
)
# fmt: on
_PATHS = ("notes/todo.md", "src/app.py", "README.md", "docs/plan.md", "data/ledger.csv", "tests/test_app.py")
_MODELS = (
    ("anthropic", "anthropic-messages", "claude-sonnet-4-5"),
    ("openai", "openai-responses", "gpt-5"),
    ("google", "google-generative-ai", "gemini-2.5-pro"),
)
_NO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}


@dataclass(frozen=True)
class SessionShape:
    """What to generate. Every field has a default; the same shape always gives the same bytes."""

    entries: int = 1000
    """Entries after the header (exactly this many)."""
    seed: int = 1
    """The random seed."""
    branch: float = 0.02
    """Chance, before each user turn, to go back to an earlier entry first (0: one linear path)."""
    compact_every: int = 400
    """Entries on the current path between compactions (0: never compact)."""
    words: int = 24
    """Mean words per text block."""
    version: int = 3
    """Header version: 3, or a legacy 2 (``hookMessage`` role) or 1 (no ids; needs ``branch=0``)."""
    markers: tuple[str, ...] = ()
    """Phrases planted in user messages, spread evenly over the file."""
    start: str = "2026-10-07T08:00:00Z"
    """The header's time; entries follow 7 s apart."""
    new_kinds: bool = False
    """Also write Pi 1.6.0's kinds: ``usage``, system messages, ``systemMessage`` on compactions,
    ``context_edit``."""
    cwd: str = "/home/resident/project"
    """The header's working directory."""

    def check(self) -> None:
        """Raise ``ValueError`` naming the first option that cannot work."""
        if self.entries < 0:
            raise ValueError(f"entries must be >= 0, not {self.entries}")
        if not 0 <= self.branch <= 1:
            raise ValueError(f"branch is a chance between 0 and 1, not {self.branch}")
        if self.compact_every < 0:
            raise ValueError(f"compact_every must be >= 0 (0: never), not {self.compact_every}")
        if self.words < 1:
            raise ValueError(f"words must be >= 1, not {self.words}")
        if self.version not in (1, 2, 3):
            raise ValueError(f"version must be 1, 2 or 3, not {self.version}")
        if self.version == 1 and self.branch:
            raise ValueError("a version 1 file has no ids, so no tree: generate it with branch=0")
        if self.version < 3 and self.new_kinds:
            raise ValueError(f"new_kinds are Pi 1.6.0's, in version 3 files only (not version {self.version})")


@dataclass
class GeneratedSession:
    """What :func:`write_session` wrote."""

    path: Path
    entries: int = 0
    size: int = 0
    """Bytes written."""
    branches: int = 0
    compactions: int = 0
    markers: list[str] = field(default_factory=list)
    """The planted phrases, in file order."""


class _Writer:
    """The generator's state: the tree so far, the clock and the random source."""

    def __init__(self, shape: SessionShape, stats: GeneratedSession) -> None:
        self.shape = shape
        self.stats = stats
        self.rng = random.Random(shape.seed)
        self.t0 = datetime.fromisoformat(shape.start.replace("Z", "+00:00")).astimezone(UTC)
        self.n = 0
        self.leaf: str | None = None
        self.parent_of: dict[str, str | None] = {}
        self.order: list[str] = []
        self.line_of: dict[str, int] = {}  # id -> line number in the file (header 0), for version 1
        self.editable: set[str] = set()  # ids of user/assistant/toolResult/custom_message entries
        self.model = _MODELS[0]
        self.since_compact = 0
        self.system: dict[str, Any] | None = None  # the current system message (new_kinds)
        self.out: list[dict[str, Any]] = []  # lines made since run() last yielded
        plant = shape.markers
        self.plant_at = {int((k + 1) * shape.entries / (len(plant) + 1)): m for k, m in enumerate(plant)}

    # -- small pieces --------------------------------------------------------------------

    def text(self, n: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(max(1, n)))

    def some_words(self) -> int:
        return self.rng.randint(1, 2 * self.shape.words)

    def when(self) -> datetime:
        return self.t0 + timedelta(seconds=7 * self.n)

    def iso(self, at: datetime | None = None) -> str:
        return (at or self.when()).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def ms(self) -> int:
        return int(self.when().timestamp() * 1000)

    def new_id(self) -> str:
        while True:
            eid = f"{self.rng.getrandbits(32):08x}"
            if eid not in self.parent_of:
                return eid

    def usage(self) -> dict[str, Any]:
        inp, out = self.rng.randint(200, 9000), self.rng.randint(10, 1200)
        cached = self.rng.choice((0, 0, inp // 2))
        return {
            "input": inp,
            "output": out,
            "cacheRead": cached,
            "cacheWrite": 0,
            "totalTokens": inp + out + cached,
            "cost": _NO_COST,
        }

    def full(self) -> bool:
        return self.n >= self.shape.entries

    def add(self, entry: dict[str, Any], *, editable: bool = False) -> str:
        eid = self.new_id()
        line = {"type": entry.pop("type"), "id": eid, "parentId": self.leaf, "timestamp": self.iso(), **entry}
        self.parent_of[eid] = self.leaf
        self.order.append(eid)
        self.line_of[eid] = self.n + 1
        self.out.append(line)
        if editable:
            self.editable.add(eid)
        self.leaf = eid
        self.n += 1
        self.since_compact += 1
        return eid

    def recent_path(self, k: int) -> list[str]:
        """The last ``k`` entries of the current path, oldest first (a walk of ``k`` steps)."""
        out: list[str] = []
        at = self.leaf
        while at is not None and len(out) < k:
            out.append(at)
            at = self.parent_of[at]
        return out[::-1]

    # -- entries -------------------------------------------------------------------------

    def user(self) -> None:
        body = self.text(self.some_words())
        due = [k for k in self.plant_at if self.n >= k]
        if due:
            marker = self.plant_at.pop(min(due))
            body = f"{body} {marker}"
            self.stats.markers.append(marker)
        content: Any = body if self.rng.random() < 0.5 else [{"type": "text", "text": body}]
        self.add(
            {"type": "message", "message": {"role": "user", "content": content, "timestamp": self.ms()}}, editable=True
        )

    def tool_call(self) -> dict[str, Any]:
        name = self.rng.choice(("read", "write", "bash", "grep"))
        args: dict[str, Any]
        if name == "read":
            args = {"path": self.rng.choice(_PATHS)}
        elif name == "write":
            args = {"path": self.rng.choice(_PATHS), "content": self.text(self.shape.words // 2)}
        elif name == "bash":
            args = {"command": f"ls -la {self.rng.choice(_PATHS).split('/')[0]}", "timeout": 30}
        else:
            args = {"pattern": self.rng.choice(_WORDS), "path": "."}
        return {"type": "toolCall", "id": f"toolu_{self.rng.getrandbits(64):016x}", "name": name, "arguments": args}

    def assistant(self, *, calls: bool) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if self.rng.random() < 0.3:
            blocks.append(
                {"type": "thinking", "thinking": self.text(self.shape.words), "thinkingSignature": f"sig{self.n:x}"}
            )
        blocks.append({"type": "text", "text": self.text(self.some_words())})
        made = [self.tool_call() for _ in range(self.rng.choice((1, 1, 2)))] if calls else []
        blocks += made
        provider, api, model = self.model
        stop = "toolUse" if made else self.rng.choice(("stop",) * 30 + ("length", "error"))
        message: dict[str, Any] = {
            "role": "assistant",
            "content": blocks,
            "api": api,
            "provider": provider,
            "model": model,
            "usage": self.usage(),
            "stopReason": stop,
        }
        if stop == "error":
            message["errorMessage"] = "overloaded_error: upstream is overloaded"
        message["timestamp"] = self.ms()
        self.add({"type": "message", "message": message}, editable=True)
        return made

    def tool_result(self, call: dict[str, Any]) -> None:
        message = {
            "role": "toolResult",
            "toolCallId": call["id"],
            "toolName": call["name"],
            "content": [{"type": "text", "text": self.text(self.some_words())}],
            "isError": self.rng.random() < 0.05,
            "timestamp": self.ms(),
        }
        self.add({"type": "message", "message": message}, editable=True)

    def turn(self) -> None:
        """A user message, then assistant steps (with tool results) until one calls no tool."""
        self.user()
        for step in range(6):
            if self.full():
                return
            calls = self.assistant(calls=step < 5 and self.rng.random() < 0.45)
            for call in calls:
                if self.full():
                    return
                self.tool_result(call)
            if not calls:
                return

    def side_entry(self) -> None:
        """One of the entries that come between turns."""
        r = self.rng.random()
        if r < 0.05:
            self.model = self.rng.choice(_MODELS)
            self.add({"type": "model_change", "provider": self.model[0], "modelId": self.model[2]})
        elif r < 0.09:
            self.add(
                {"type": "thinking_level_change", "thinkingLevel": self.rng.choice(("off", "low", "medium", "high"))}
            )
        elif r < 0.14:
            self.add({"type": "custom", "customType": "ext-state", "data": {"count": self.rng.randint(0, 99)}})
        elif r < 0.20:
            self.custom_message()
        elif r < 0.24 and self.order and self.shape.version > 1:  # a label names an id
            label = self.rng.choice(("checkpoint", "todo", "decision", None))
            entry: dict[str, Any] = {"type": "label", "targetId": self.rng.choice(self.order)}
            if label is not None:
                entry["label"] = label
            self.add(entry)
        elif r < 0.26:
            self.add({"type": "session_info", "name": self.text(3)})
        elif r < 0.32:
            self.bash()
        elif self.shape.new_kinds:
            self.new_kind(r)

    def custom_message(self) -> None:
        content: Any = self.text(self.shape.words // 2)
        if self.rng.random() < 0.3:
            content = [{"type": "text", "text": content}]
        display = self.rng.random() < 0.6
        if self.shape.version < 3:  # before version 3, extensions wrote hookMessage messages
            message = {"role": "hookMessage", "customType": "ext-note", "content": content, "display": display}
            self.add({"type": "message", "message": {**message, "timestamp": self.ms()}})
            return
        self.add(
            {
                "type": "custom_message",
                "customType": "ext-note",
                "content": content,
                "display": display,
                "details": {"k": 1},
            },
            editable=True,
        )

    def bash(self) -> None:
        code = self.rng.choice((0, 0, 0, 1, 2))
        message: dict[str, Any] = {
            "role": "bashExecution",
            "command": f"git status {self.rng.choice(_PATHS)}",
            "output": self.text(12) if code != 2 else "",
            "exitCode": code,
            "cancelled": False,
            "truncated": False,
        }
        if self.rng.random() < 0.1:
            message["excludeFromContext"] = True
        message["timestamp"] = self.ms()
        self.add({"type": "message", "message": message})

    def new_kind(self, r: float) -> None:
        """Pi 1.6.0's kinds (``r`` is in [0.32, 1))."""
        if r < 0.40:
            provider, _, model = self.model
            kind = self.rng.choice(("title", "summary", "compaction"))
            entry: dict[str, Any] = {"type": "usage", "kind": kind, "provider": provider, "model": model}
            entry["usage"] = self.usage()
            if self.rng.random() < 0.3:
                entry["note"] = self.text(4)
            self.add(entry)
        elif r < 0.44:
            self.system = {
                "role": "system",
                "content": "",
                "sections": {"persona": self.text(8), "date": self.iso()[:10]},
            }
            self.add({"type": "message", "message": {**self.system, "timestamp": self.ms()}})
        elif r < 0.52:
            targets = [eid for eid in self.recent_path(200) if eid in self.editable]
            if targets:
                replacement = None if self.rng.random() < 0.4 else {"content": "[removed] " + self.text(4)}
                self.add({"type": "context_edit", "targetId": self.rng.choice(targets), "replacement": replacement})

    def compaction(self) -> None:
        keep = self.recent_path(self.rng.randint(3, 40))
        first_kept = self.rng.choice(keep) if self.rng.random() > 0.02 else self.rng.choice(self.order)
        entry: dict[str, Any] = {
            "type": "compaction",
            "summary": "Summary: " + self.text(self.shape.words * 4),
            "firstKeptEntryId": first_kept,
            "tokensBefore": self.rng.randint(50_000, 900_000),
            "details": {"readFiles": [self.rng.choice(_PATHS)], "modifiedFiles": []},
        }
        if self.shape.new_kinds and self.system is not None:
            entry["systemMessage"] = {**self.system, "timestamp": self.ms()}
        self.add(entry)
        self.since_compact = 0
        self.stats.compactions += 1

    def go_back(self) -> None:
        """Return to an earlier entry, half the time leaving a summary of the abandoned branch."""
        old_leaf = self.leaf
        self.leaf = self.rng.choice(self.order[:-1])
        self.stats.branches += 1
        if self.rng.random() < 0.5:
            self.add(
                {
                    "type": "branch_summary",
                    "fromId": old_leaf,
                    "summary": "Abandoned branch: " + self.text(self.shape.words),
                }
            )

    # -- the whole file ------------------------------------------------------------------

    def run(self) -> Iterator[dict[str, Any]]:
        """Every entry line, in file order."""
        shape = self.shape
        while not self.full():
            yield from self.out
            self.out.clear()
            if len(self.order) > 5 and self.rng.random() < shape.branch:
                self.go_back()
            elif shape.compact_every and self.since_compact >= shape.compact_every and len(self.order) > 5:
                self.compaction()
            elif self.rng.random() < 0.3:
                self.side_entry()
            else:
                self.turn()
        yield from self.out
        self.out.clear()

    def legacy_v1(self, line: dict[str, Any]) -> dict[str, Any]:
        """A version 1 line: no ids; a compaction names its first kept entry by line number."""
        line = {k: v for k, v in line.items() if k not in ("id", "parentId")}
        if line["type"] == "compaction":
            line["firstKeptEntryIndex"] = self.line_of[line.pop("firstKeptEntryId")]
        return line


def _generate(shape: SessionShape, stats: GeneratedSession) -> Iterator[bytes]:
    shape.check()
    writer = _Writer(shape, stats)
    header: dict[str, Any] = {"type": "session", "version": shape.version}
    header["id"] = str(uuid.UUID(int=writer.rng.getrandbits(128), version=4))
    header.update({"timestamp": writer.iso(writer.t0), "cwd": shape.cwd})
    encode = msgspec.json.Encoder().encode
    yield encode(header)
    for line in writer.run():
        yield encode(writer.legacy_v1(line) if shape.version == 1 else line)
    stats.entries = writer.n


def generate_lines(shape: SessionShape | None = None, **options: Any) -> list[bytes]:
    """The file's lines (header first), as JSON bytes without newlines.

    Args:
        shape: what to generate (the defaults of :class:`SessionShape` without it).
        **options: fields of :class:`SessionShape` that override ``shape``'s.

    Raises:
        ValueError: an option that cannot work (see :meth:`SessionShape.check`).
    """
    shape = replace(shape or SessionShape(), **options)
    return list(_generate(shape, GeneratedSession(Path())))


def write_session(path: str | os.PathLike[str], shape: SessionShape | None = None, **options: Any) -> GeneratedSession:
    """Write a generated transcript at ``path`` (replacing it) and say what it holds.

    Args:
        path: the file to write.
        shape: what to generate (the defaults of :class:`SessionShape` without it).
        **options: fields of :class:`SessionShape` that override ``shape``'s.

    Raises:
        ValueError: an option that cannot work (see :meth:`SessionShape.check`).
    """
    shape = replace(shape or SessionShape(), **options)
    stats = GeneratedSession(Path(path))
    with open(path, "wb") as f:
        for line in _generate(shape, stats):
            f.write(line + b"\n")
        stats.size = f.tell()
    return stats


def main(argv: Sequence[str] | None = None) -> int:
    """The script: ``python -m kurahi.testing.sessions [options] OUT``."""
    d = SessionShape()
    ap = argparse.ArgumentParser(prog="python -m kurahi.testing.sessions", description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=d.entries, help=f"entries after the header (default {d.entries})")
    ap.add_argument("--seed", type=int, default=d.seed, help=f"random seed (default {d.seed})")
    ap.add_argument("--branch", type=float, default=d.branch, help=f"chance per turn to go back (default {d.branch})")
    ap.add_argument(
        "--compact-every",
        type=int,
        default=d.compact_every,
        help=f"entries between compactions, 0: none ({d.compact_every})",
    )
    ap.add_argument("--words", type=int, default=d.words, help=f"mean words per text block (default {d.words})")
    ap.add_argument("--version", type=int, default=d.version, choices=(1, 2, 3), help="header version (default 3)")
    ap.add_argument("--marker", action="append", default=[], help="a phrase to plant in a user message (repeatable)")
    ap.add_argument("--start", default=d.start, help=f"the header's ISO time (default {d.start})")
    ap.add_argument("--new-kinds", action="store_true", help="also write Pi 1.6.0's entry kinds")
    ap.add_argument("out", type=Path, help="the file to write")
    args = ap.parse_args(argv)
    shape = SessionShape(
        entries=args.entries,
        seed=args.seed,
        branch=args.branch,
        compact_every=args.compact_every,
        words=args.words,
        version=args.version,
        markers=tuple(args.marker),
        start=args.start,
        new_kinds=args.new_kinds,
    )
    try:
        made = write_session(args.out, shape)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"{made.path}: {made.entries} entries, {made.size} bytes ({made.size / max(1, made.entries):.0f} per entry), "
        f"{made.branches} branches, {made.compactions} compactions",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
