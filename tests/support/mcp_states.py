"""The three kinds of state ``kurahi mcp`` serves, made for its tests, and an MCP client for them.

The OpenClaw ones are copies of the samples in ``tests/data/openclaw`` (what OpenClaw wrote);
the Kurahi home is built here: a reset archive and the live session after it, under one key.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from kurahi.pi.transcript import Transcript
from kurahi.store.catalog import Catalog
from kurahi.testing.sessions import write_session
from support.testdata import openclaw_state_copy

HOME_BEFORE, HOME_AFTER = "QUILLBEFORE7731", "LANTERNAFTER2204"
"""Phrases the Kurahi home's sessions say, before and after its reset."""
SECRET = "sk-ant-api03-ZZZZZZZZZZZZZZZZZZZZZZZZZZZZ"
"""An API-key shaped string the home's archive holds in a message, next to the word 'kestrel'."""

SQLITE_BEFORE, SQLITE_AFTER = "PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"
"""The 2026.9.6-reset sample's phrases (tests/data/openclaw/README.md)."""
JSON_A, JSON_B, JSON_C = "J-RESET-IDLE-A-E3830DCA70", "J-RESET-IDLE-B-E85F4975F4", "J-RESET-IDLE-C-0E8CE4AD06"
"""The 2026.5.28-reset-idle sample's phrases: before the reset, the idle orphan, live."""


def _append_message(path: Path, text: str) -> None:
    """Append a user message carrying ``text`` to the transcript's leaf."""
    with Transcript.open(path) as t:
        leaf = t.leaf_id
    entry = {
        "type": "message",
        "id": "feedc0de",
        "parentId": leaf,
        "timestamp": "2026-10-08T07:59:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1_791_446_340_000},
    }
    with open(path, "ab") as f:
        f.write(json.dumps(entry).encode() + b"\n")


def kurahi_home(root: Path, scratch: Path) -> Path:
    """A Kurahi home with agent ``alice``: key ``agent:alice:support`` reset once (archive, then live)."""
    folder = root / "agents" / "alice" / "sessions"
    folder.mkdir(parents=True)
    a_tmp, b_tmp = scratch / "a.jsonl", scratch / "b.jsonl"
    write_session(a_tmp, entries=60, branch=0.0, compact_every=0, markers=(HOME_BEFORE,), seed=21)
    _append_message(a_tmp, f"the kestrel key is {SECRET} and the header Authorization: Bearer abcdefgh12345678")
    write_session(
        b_tmp, entries=30, branch=0.0, compact_every=0, markers=(HOME_AFTER,), seed=22, start="2026-10-09T08:00:00Z"
    )
    with Transcript.open(a_tmp) as ta, Transcript.open(b_tmp) as tb:
        sid_a, sid_b = ta.session_id, tb.session_id
    a = folder / f"{sid_a}.jsonl.reset.2026-10-09T08-00-00.000Z"
    b = folder / f"{sid_b}.jsonl"
    shutil.move(a_tmp, a)
    shutil.move(b_tmp, b)
    Catalog(folder / "sessions.json").upsert(
        "agent:alice:support",
        {"sessionId": sid_b, "sessionFile": b.name, "updatedAt": 1_796_000_000_000, "previousSessionId": sid_a,
         "apiKey": "catalog-secret-value-123"},
    )  # fmt: skip
    return root


def states(tmp: Path) -> dict[str, tuple[str, Path]]:
    """The three states, fresh copies: ``{name: (kind, path)}``."""
    return {
        "sqlite": ("openclaw", openclaw_state_copy("2026.9.6-reset", tmp / "oc9")),
        "json": ("openclaw", openclaw_state_copy("2026.5.28-reset-idle", tmp / "oc5")),
        "home": ("home", kurahi_home(tmp / "home", tmp)),
    }


def server_args(kind: str, path: Path, *extra: str) -> list[str]:
    """``python -m kurahi.cli mcp --<kind> PATH ...`` as a list."""
    return ["-m", "kurahi.cli", "mcp", f"--{kind}", str(path), *extra]


def structured(result: Any) -> dict[str, Any]:
    """A tool result's JSON answer (its text block; structured content mirrors it)."""
    assert not result.is_error, result.content
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


PYTHON = sys.executable
