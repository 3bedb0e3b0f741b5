"""Activation into OpenClaw 2026.9's SQLite store (the SQLite era): apply, and rollback after it.

Everything SQLite writes (its write-ahead log, the database pages of a checkpoint, the
directory fsyncs) is in the trace like any other call; what it writes through ``mmap`` (the
``-shm`` index) is not, and is left as zeros: SQLite rebuilds that index from the log when it
finds it stale, as after any crash. The clock and the rewrite watermark are fixed, so the new
content is one hash; a crash state's store (read on a copy, as the next opener sees it) must
hold exactly the old or the new content, and rerunning the operation must finish it.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from support.crashstates.protocols import Ctx, Protocol, _guard

NOW_MS = 1764489600000
DB = "state/agents/main/agent/openclaw-agent.sqlite"


@contextlib.contextmanager
def fixed_clock() -> Iterator[None]:
    """The same clock and watermark in the run and in every rerun."""
    import kurahi.lifecycle.activation.targets.sqlite_store.target as sqlite_apply
    from kurahi.runtimes.openclaw.sqlite import write as openclaw_sqlite_write

    saved = sqlite_apply._now_ms, openclaw_sqlite_write.secrets.token_hex
    sqlite_apply._now_ms = lambda: NOW_MS
    openclaw_sqlite_write.secrets.token_hex = lambda nbytes=16: "5a" * nbytes
    try:
        yield
    finally:
        sqlite_apply._now_ms, openclaw_sqlite_write.secrets.token_hex = saved


def content(db: Path) -> str:
    """The store's content hash, read on a copy outside the studied directory."""
    from kurahi.runtimes.openclaw.sqlite.write import content_sha256

    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "copy.sqlite"
        shutil.copyfile(db, copy)
        wal = db.with_name(db.name + "-wal")
        if wal.exists():
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
        con = sqlite3.connect(copy)
        try:
            return content_sha256(con)
        finally:
            con.close()


def _setup(then_apply: bool) -> Any:
    def setup(ctx: Ctx) -> None:
        from kurahi.gateway.activation_host import OfflineHost
        from kurahi.lifecycle.activation import apply_package, plan_activation
        from support.sqlite_activations import KEY, PHRASE_A, PHRASE_B, sqlite_setup

        s = sqlite_setup(ctx.root)
        plan_activation(s.home, "main", KEY, s.candidate, ctx.root / "pkg", markers=[PHRASE_A, PHRASE_B])
        ctx.info["old"] = content(s.db)
        if then_apply:
            with fixed_clock():
                apply_package(ctx.root / "pkg", s.home, OfflineHost(s.home))
            ctx.info["new"] = content(s.db)

    return setup


def _act(op: str) -> Any:
    def act(ctx: Ctx) -> None:
        from kurahi.gateway.activation_host import OfflineHost
        from kurahi.lifecycle.activation import apply_package, rollback_package

        home = ctx.root / "state"
        with fixed_clock():
            if op == "apply":
                apply_package(ctx.root / "pkg", home, OfflineHost(home))
            else:
                rollback_package(ctx.root / "pkg", home, OfflineHost(home), force=True)
        ctx.ack(op)
        if op == "apply":
            ctx.info["new"] = content(ctx.root / DB)

    return act


def _check(op: str) -> Any:
    def check(d: Path, acks: list[str], info: dict[str, Any]) -> list[str]:
        from kurahi.gateway.activation_host import OfflineHost
        from kurahi.lifecycle.activation import apply_package, rollback_package, verify_package

        old, new = info["old"], info["new"]
        want = new if op == "apply" else old

        def run() -> list[str]:
            out = []
            now = content(d / DB)
            if now not in (old, new):
                out.append("store: neither the old nor the new content")
            elif acks and now != want:
                out.append(f"store: {op} acknowledged, but the store does not hold its result")
            home = d / "state"
            with fixed_clock():
                if op == "apply":
                    apply_package(d / "pkg", home, OfflineHost(home))
                else:
                    rollback_package(d / "pkg", home, OfflineHost(home), force=True)
            if content(d / DB) != want:
                out.append(f"store: rerunning {op} did not give its result")
            if op == "apply" and not verify_package(d / "pkg", home).ok:
                out.append("activate verify fails after the rerun")
            return out

        return _guard(run, f"sqlite {op}")

    return check


SQLITE = [
    Protocol(
        "activation-apply-sqlite", _setup(False), _act("apply"), _check("apply"), ("sqlitesync", "filefsync"), cost=10
    ),
    Protocol(
        "activation-rollback-sqlite", _setup(True), _act("rollback"), _check("rollback"), ("sqlitesync",), cost=10
    ),
]
