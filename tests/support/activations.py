"""Helpers for activation tests: homes with a live session, candidates, snapshots, a fake host."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kurahi.errors import GatewayStopError
from kurahi.gateway.activation_host import OfflineHost
from kurahi.pi.transcript import Transcript
from kurahi.resident.init import init_home
from kurahi.store.audit.log_file import AuditChain, chain_path
from kurahi.store.base import transcript_name
from kurahi.store.catalog import Catalog
from kurahi.testing import build_session
from support.testdata import JSON_ERA, openclaw_state

OPENCLAW = openclaw_state(JSON_ERA)
OC_OLD = "fe0cc71e-f9a6-41ee-8e2a-ecb95f96fc86.jsonl.reset.2026-11-30T08-24-46.695Z"
OC_NEW = "ed83c604-551f-41af-9a44-65881d6be000.jsonl"
KEY = "agent:alice:main"


@dataclass
class Setup:
    home: Path
    sessions: Path
    live: Path
    candidate: Path
    markers: list[str]
    key: str = KEY
    agent: str = "alice"


def make_home(tmp_path: Path, *, chain: bool = False) -> Setup:
    """A Kurahi home whose key points at a finished live session, and a candidate with 2 compactions."""
    home = tmp_path / "home"
    init_home(home, "alice", marker="ALICE-7F3A")
    sessions = home / "agents" / "alice" / "sessions"
    scratch = tmp_path / "live.jsonl"
    build_session(scratch, entries=40, seed=2, markers=["AFTER-RESET-PHRASE"])
    with Transcript.open(scratch) as t:
        sid = t.session_id
    live = sessions / f"{sid}.jsonl"
    shutil.move(scratch, live)
    Catalog(sessions / "sessions.json").upsert(
        KEY,
        {
            "sessionId": sid,
            "sessionFile": live.name,
            "sessionStartedAt": 1_700_000_000_000,
            "status": "done",
            "endedAt": 1_700_000_100_000,
            "abortedLastRun": False,
            "model": "alpha",
        },
    )
    Catalog(sessions / "sessions.json").upsert("agent:alice:other", {"sessionId": "other", "updatedAt": 1})
    candidate = tmp_path / "C.jsonl"
    rep = build_session(
        candidate, entries=200, seed=3, compact_every=50, markers=[f"M{i}" for i in range(7)] + ["LATE"]
    )
    assert rep.compactions == 2
    if chain:
        AuditChain(chain_path(home)).append("cli", "test.setup", {})
    return Setup(home, sessions, live, candidate, ["LATE"])


def snapshot(sessions: Path) -> dict[str, bytes]:
    """Every file of a sessions directory but lock files, by name."""
    return {p.name: p.read_bytes() for p in sorted(sessions.iterdir()) if p.is_file() and not p.name.endswith(".lock")}


@dataclass
class FakeHost(OfflineHost):
    """A pretend gateway: running or not, stoppable or not; audit goes to the real chain."""

    root: Path
    port: int | None = None
    stoppable: bool = True
    on_start: Callable[[], None] | None = None
    calls: list[str] = field(default_factory=list)

    def gateway_port(self) -> int | None:
        return self.port

    def stop_gateway(self, timeout: float) -> None:
        self.calls.append("stop")
        if not self.stoppable:
            raise GatewayStopError(f"the gateway did not stop within {timeout:g} s; nothing was changed")
        self.stopped_port, self.port = self.port, None

    def start_gateway(self, port: int) -> None:
        self.calls.append(f"start:{port}")
        if self.on_start is not None:
            self.on_start()
        self.port = port

    def read_live_transcript(self, agent: str, key: str) -> bytes:
        self.calls.append("read")
        sessions = self.root / "agents" / agent / "sessions"
        name = transcript_name(Catalog(sessions / "sessions.json").get(key))
        assert name is not None
        return (sessions / name).read_bytes()

    def audit(self, action: str, details: dict[str, Any], *, nonce: str) -> bool:
        chain = AuditChain(chain_path(self.root))
        if not any(r.details.get("nonce") == nonce for r in chain.tail(64)):
            chain.append("cli", action, details)
        return True


def actions(home: Path) -> list[str]:
    return [r.action for r in AuditChain(chain_path(home)).tail(1000)]
