"""Builders for tests, demos and benchmarks: realistic transcripts written through the real API.

:func:`build_session` drives :class:`kurahi.store.session.Session` the way a resident's
runtime would: settings, user turns, assistant replies with thinking and tool calls,
tool results, now and then a return to an earlier entry (with or without a branch
summary), compactions, labels and a session name. It is deterministic for a seed (ids
and timestamps aside, which the store assigns).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kurahi.fs.durable import FsyncPolicy
from kurahi.store.session import Session

__all__ = [
    "BuildReport",
    "assistant_message",
    "build_session",
    "random_text",
    "tool_result",
    "user_message",
]

_WORDS = [
    "checklist",
    "meeting",
    "notes",
    "todo",
    "action",
    "item",
    "second",
    "breakdown",
    "file",
    "saved",
    "restart",
    "resume",
    "lineage",
    "compaction",
    "summary",
    "branch",
    "marker",
    "tool",
    "result",
    "outcome",
    "ledger",
    "durable",
    "append",
    "harbour",
    "lantern",
    "orchard",
    "cobalt",
    "meridian",
    "quartz",
    "willow",
    "ember",
]

_T0 = 1_764_480_000_000  # 2025-11-30T05:20:00Z, a fixed clock for message timestamps


def random_text(rng: random.Random, n: int) -> str:
    """``n`` words (at least one) drawn from a small vocabulary of session talk."""
    return " ".join(rng.choice(_WORDS) for _ in range(max(1, n)))


def user_message(text: str | list[Any], ts: int) -> dict[str, Any]:
    """A Pi ``user`` message."""
    return {"role": "user", "content": text, "timestamp": ts}


def assistant_message(
    blocks: list[dict[str, Any]], ts: int, *, provider: str = "deterministic", model: str = "alpha"
) -> dict[str, Any]:
    """A Pi ``assistant`` message with usage and a stop reason."""
    tool = any(b.get("type") == "toolCall" for b in blocks)
    return {
        "role": "assistant",
        "content": blocks,
        "api": "kurahi-deterministic",
        "provider": provider,
        "model": model,
        "usage": {
            "input": 100 + ts % 900,
            "output": 20 + ts % 200,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "toolUse" if tool else "stop",
        "timestamp": ts,
    }


def tool_result(call_id: str, name: str, text: str, ts: int, *, is_error: bool = False) -> dict[str, Any]:
    """A Pi ``toolResult`` message."""
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
        "timestamp": ts,
    }


@dataclass
class BuildReport:
    """What :func:`build_session` wrote."""

    path: Path
    entries: int = 0
    turns: int = 0
    branches: int = 0
    compactions: int = 0
    markers: list[str] = field(default_factory=list)
    """Phrases planted in user messages, in order."""


def build_session(
    path: str | os.PathLike[str],
    *,
    entries: int = 1000,
    seed: int = 1,
    branch_chance: float = 0.03,
    compact_every: int = 300,
    words: int = 30,
    markers: list[str] | None = None,
    fsync: FsyncPolicy | str = FsyncPolicy.NEVER,
    progress: Callable[[int], None] | None = None,
) -> BuildReport:
    """Write a realistic transcript of about ``entries`` entries at ``path`` (a new file).

    Args:
        path: where to create the transcript (must not exist).
        entries: how many entries to write (a turn is not cut short, so a few more).
        seed: the random seed.
        branch_chance: chance per turn to go back to an earlier entry first.
        compact_every: entries between compactions on the current path.
        words: mean words per text block.
        markers: phrases to plant in user messages, spread evenly.
        fsync: fsync policy while writing (``never`` is fine for throwaway files).
        progress: called with the number of entries written after each turn.
    """
    rng = random.Random(seed)
    report = BuildReport(Path(path))
    plant = list(markers or [])
    plant_at = {int((k + 1) * entries / (len(plant) + 1)): m for k, m in enumerate(plant)}
    ts = _T0
    ids: list[str] = []
    since_compact = 0
    path_since: list[str] = []
    results: set[str] = set()  # tool results: a compaction never keeps from one (Pi's findCutPoint)
    with Session.create(path, cwd="/home/resident", fsync=fsync) as s:

        def add(eid: str) -> None:
            ids.append(eid)
            path_since.append(eid)

        add(s.append_model_change("deterministic", "alpha"))
        add(s.append_thinking_level_change("off"))
        while len(ids) < entries:
            ts += 7000
            if len(ids) > 10 and rng.random() < branch_chance:
                target = rng.choice(ids[: len(ids) - 2])
                report.branches += 1
                if rng.random() < 0.5:
                    add(s.append_branch_summary(target, "Explored: " + random_text(rng, words)))
                else:
                    s.branch(target)
                path_since.clear()
            if since_compact >= compact_every and len(path_since) > 4:
                keep = path_since[-rng.randint(2, min(20, len(path_since) - 1)) :]
                # A window that opened on a tool result would send it without its call, which every
                # provider refuses (issue 32); a turn always ends with an assistant, so one is there.
                first = next(e for e in keep if e not in results)
                add(
                    s.append_compaction(
                        "Summary so far: " + random_text(rng, words * 3), first, rng.randint(20000, 90000)
                    )
                )
                report.compactions += 1
                since_compact = 0
            body = random_text(rng, rng.randint(1, 2 * words))
            due = [k for k in plant_at if len(ids) >= k]
            if due:
                marker = plant_at.pop(min(due))
                body += " " + marker
                report.markers.append(marker)
            add(s.append_message(user_message(body if rng.random() < 0.5 else [{"type": "text", "text": body}], ts)))
            for _ in range(rng.choice((0, 0, 1, 2))):
                call = f"call_{rng.getrandbits(48):012x}"
                name = rng.choice(("read", "write", "bash"))
                blocks: list[dict[str, Any]] = []
                if rng.random() < 0.3:
                    blocks.append({"type": "thinking", "thinking": random_text(rng, words)})
                blocks.append({"type": "toolCall", "id": call, "name": name, "arguments": {"path": "notes/todo.md"}})
                ts += 900
                add(s.append_message(assistant_message(blocks, ts)))
                ts += 300
                add(
                    s.append_message(tool_result(call, name, random_text(rng, words), ts, is_error=rng.random() < 0.05))
                )
                results.add(ids[-1])
            ts += 1200
            add(
                s.append_message(
                    assistant_message([{"type": "text", "text": random_text(rng, rng.randint(1, 2 * words))}], ts)
                )
            )
            roll = rng.random()
            if roll < 0.04:
                add(s.append_label(rng.choice(ids), rng.choice(("checkpoint", "todo", "decision"))))
            elif roll < 0.06:
                add(s.append_custom_message("reminder", random_text(rng, 8), rng.random() < 0.5, {"source": "demo"}))
            elif roll < 0.08:
                add(s.append_custom("ext-state", {"count": rng.randint(0, 99)}))
            elif roll < 0.09:
                add(s.append_session_info(random_text(rng, 3)))
            elif roll < 0.10:
                add(s.append_thinking_level_change(rng.choice(("off", "low", "medium", "high"))))
            since_compact += 2
            report.turns += 1
            s.sync()
            if progress is not None:
                progress(len(ids))
    report.entries = len(ids)
    return report
