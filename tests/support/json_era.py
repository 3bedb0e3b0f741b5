"""A JSON-era OpenClaw sessions folder written the way OpenClaw 2026.5 lays it out, for rescue tests.

OpenClaw's own samples (``tests/data/openclaw``) prove the format; this builder makes the
cases a sample does not hold, byte-compatible with them: ``sessions.json`` (no final newline),
``<id>.jsonl`` transcripts (header version 3, 8-hex entry ids, user texts with OpenClaw's
``[Mon 2026-11-30 08:24 UTC]`` envelope), ``<id>.jsonl.reset.<ts>`` archives stamped with the
next session's start, and ``<id>.trajectory.jsonl`` files whose records carry the session key.
"""

from __future__ import annotations

import json
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kurahi.testing import assistant_message, user_message

T0 = 1_796_027_000_000
"""2026-11-30T08:23:20Z in epoch ms: every test's clock starts here."""


def iso(ms: int) -> str:
    """ISO-8601 UTC with milliseconds, as OpenClaw writes entry times."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def stamp(ms: int) -> str:
    """An archive suffix: the ISO time with ``:`` written as ``-``."""
    return iso(ms).replace(":", "-")


def envelope(text: str, ms: int) -> str:
    """A user text as OpenClaw 2026.5 stores it."""
    when = datetime.fromtimestamp(ms / 1000, UTC)
    return f"[{when:%a %Y-%m-%d %H:%M} UTC] {text}"


@dataclass
class JsonEraDir:
    """A state dir with one agent ``main`` whose sessions folder is built by the methods below."""

    root: Path
    catalog: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sessions.mkdir(parents=True, exist_ok=True)
        (self.root / "openclaw.json").write_text('{"session": {"reset": {"mode": "idle", "idleMinutes": 60}}}\n')

    @property
    def sessions(self) -> Path:
        """``agents/main/sessions``."""
        return self.root / "agents" / "main" / "sessions"

    def transcript(self, start: int, texts: list[str], *, sid: str | None = None, gap: int = 2000) -> tuple[str, int]:
        """Write ``<sid>.jsonl``: a header at ``start`` and a user turn + reply per text; returns (sid, last ms)."""
        sid = sid or str(uuid.uuid4())
        lines = [{"type": "session", "version": 3, "id": sid, "timestamp": iso(start), "cwd": "/home/ava/ws"}]
        parent: str | None = None
        ms = start
        for n, text in enumerate(texts, 1):
            for message in (
                user_message([{"type": "text", "text": envelope(text, ms)}], ms),
                assistant_message([{"type": "text", "text": f"FAKE-REPLY-{n:03d}: I received: {text}"}], ms + 500),
            ):
                eid = secrets.token_hex(4)
                lines.append(
                    {"type": "message", "id": eid, "parentId": parent, "timestamp": iso(ms), "message": message}
                )
                parent = eid
                ms += gap
        (self.sessions / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        return sid, ms

    def trajectory(self, sid: str, key: str) -> None:
        """``<sid>.trajectory.jsonl`` as OpenClaw's runtime writes it (one record)."""
        record = {"traceSchema": "openclaw-trajectory", "schemaVersion": 1, "sessionId": sid, "sessionKey": key}
        (self.sessions / f"{sid}.trajectory.jsonl").write_text(json.dumps(record) + "\n")

    def archive(self, sid: str, at: int) -> Path:
        """Rename ``<sid>.jsonl`` to ``<sid>.jsonl.reset.<at>`` as a reset does."""
        src = self.sessions / f"{sid}.jsonl"
        dst = self.sessions / f"{sid}.jsonl.reset.{stamp(at)}"
        src.rename(dst)
        return dst

    def point(self, key: str, sid: str, started: int) -> None:
        """Make ``key``'s catalog entry name ``sid`` (started at ``started``) and write ``sessions.json``."""
        self.catalog[key] = {
            "sessionId": sid,
            "sessionFile": str(self.sessions / f"{sid}.jsonl"),
            "updatedAt": started,
            "sessionStartedAt": started,
            "contextTokens": 128000,
        }
        (self.sessions / "sessions.json").write_text(json.dumps(self.catalog, indent=2))

    def reset(self, key: str, old: str, at: int, texts: list[str]) -> tuple[str, int]:
        """A reset of ``key`` at ``at``: the old transcript archived, a new session started at ``at``."""
        self.archive(old, at)
        sid, last = self.transcript(at, texts)
        self.point(key, sid, at)
        return sid, last
