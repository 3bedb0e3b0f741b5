"""Random Pi sessions whose every branch Pi turns into a valid request, and the lines to write them.

Shared by the request-rule checks (``tests/context/test_session_check.py``) and lineage check's quick
proof that none of them fails (``tests/runtimes/test_none_refused.py``).
"""

from __future__ import annotations

import json
import random
from typing import Any

__all__ = ["ValidTree", "lines", "res", "tc"]


def lines(*entries: dict[str, Any]) -> bytes:
    header = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-12-01T00:00:00.000Z", "cwd": "/w"}
    return b"".join(json.dumps(e).encode() + b"\n" for e in (header, *entries))


def res(cid: str) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": cid, "toolName": "read", "content": [{"type": "text", "text": "x"}]}


def tc(cid: str) -> dict[str, Any]:
    return {"type": "toolCall", "id": cid, "name": "read", "arguments": {}}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


_MODELS = [
    ("anthropic", "anthropic-messages", "claude-sonnet-4-5"),
    ("openai", "openai-completions", "gpt-4.1"),
    ("openai", "openai-responses", "gpt-5"),
]


class ValidTree:
    """Random sessions whose every branch Pi turns into a valid request (the way Pi itself writes them)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.out: list[dict[str, Any]] = []
        self.leaf: str | None = None
        self.n = 0
        self.model = rng.choice(_MODELS)
        self.boundaries: list[str | None] = [None]  # leaves between turns: safe to branch back to
        self.users: list[str] = []  # user messages on some path: safe first kept entries
        self.pairs: list[list[str]] = []  # an assistant with its results: dropped together

    def add(self, entry: dict[str, Any]) -> str:
        self.n += 1
        i = f"e{self.n:05x}"
        self.out.append(
            {
                "type": entry.pop("type"),
                "id": i,
                "parentId": self.leaf,
                "timestamp": "2026-12-01T00:00:00.000Z",
                **entry,
            }
        )
        self.leaf = i
        return i

    def assistant(self, calls: int) -> list[str]:
        provider, api, model = self.model
        blocks: list[dict[str, Any]] = []
        if self.rng.random() < 0.3:
            sig = (
                json.dumps({"type": "reasoning", "id": f"rs_{self.n}"}) if api == "openai-responses" else f"sig{self.n}"
            )
            blocks.append({"type": "thinking", "thinking": "hmm", "thinkingSignature": sig})
        blocks.append({"type": "text", "text": self.rng.choice(["ok", "let me see", " "]) if calls else "done"})
        ids = []
        for _ in range(calls):
            self.n += 1
            cid = {
                "anthropic-messages": f"toolu_{self.n:x}",
                "openai-completions": f"call_{self.n:x}",
                "openai-responses": f"call_{self.n:x}|fc_{self.n:x}",
            }[api]
            ids.append(cid)
            blocks.append(tc(cid))
        stop = "toolUse" if calls else self.rng.choice(["stop"] * 8 + ["length", "error", "aborted"])
        m = {
            "role": "assistant",
            "content": blocks,
            "api": api,
            "provider": provider,
            "model": model,
            "stopReason": stop,
        }
        pair = [self.add({"type": "message", "message": m})]
        for cid in ids:
            pair.append(self.add({"type": "message", "message": res(cid)}))
        if calls:
            self.pairs.append(pair)
        return ids

    def turn(self) -> None:
        self.users.append(self.add({"type": "message", "message": user(self.rng.choice(["go", "more", "why?"]))}))
        for _ in range(self.rng.randint(0, 3)):
            if not self.assistant(self.rng.choice([0, 1, 1, 2, 3])):
                break
        self.boundaries.append(self.leaf)

    def side(self) -> None:
        r = self.rng.random()
        if r < 0.15:
            self.model = self.rng.choice(_MODELS)
            self.add({"type": "model_change", "provider": self.model[0], "modelId": self.model[2]})
        elif r < 0.3:
            self.add({"type": "custom_message", "customType": "note", "content": "a note", "display": True})
        elif r < 0.4:
            self.add(
                {
                    "type": "message",
                    "message": {
                        "role": "bashExecution",
                        "command": "ls",
                        "output": "a",
                        "exitCode": 0,
                        "cancelled": False,
                        "truncated": False,
                    },
                }
            )
        elif r < 0.55 and self.users:
            first = self.rng.choice(self.users[-4:])
            self.add({"type": "compaction", "summary": "S", "firstKeptEntryId": first, "tokensBefore": 10})
        elif r < 0.65 and self.pairs:
            for target in self.rng.choice(self.pairs[-3:]):
                self.add({"type": "context_edit", "targetId": target, "replacement": None})
        elif r < 0.72 and self.users:
            self.add(
                {
                    "type": "context_edit",
                    "targetId": self.rng.choice(self.users),
                    "replacement": {"content": "[edited]"},
                }
            )
        elif r < 0.85:
            self.leaf = self.rng.choice(self.boundaries)
            self.add({"type": "branch_summary", "fromId": self.leaf or "root", "summary": "went back"})
        self.boundaries.append(self.leaf)

    def data(self) -> bytes:
        for _ in range(self.rng.randint(2, 12)):
            self.turn()
            if self.rng.random() < 0.5:
                self.side()
        self.turn()
        return lines(*self.out)
