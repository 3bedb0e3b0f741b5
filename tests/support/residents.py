"""Helpers for agent-room tests: a home with one seeded resident, and a runtime around it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from kurahi.agent.config import Config
from kurahi.agent.layout import AgentPaths
from kurahi.agent.runtime import Runtime

T = TypeVar("T")

MARKER = "ALICE-7F3A"


def make_home(root: Path, agent: str = "alice", *, config: dict[str, Any] | None = None) -> Path:
    """A home with ``agent``'s workspace seeded (IDENTITY.md carries :data:`MARKER`)."""
    home = root / "home"
    ws = AgentPaths.of(home, agent).ensure().workspace
    (ws / "IDENTITY.md").write_text(f"# Identity\n\nname: {agent}\nmarker: {MARKER}\n")
    (ws / "SOUL.md").write_text("Calm, careful, checks before acting.\n")
    (ws / "AGENTS.md").write_text("Verify the outcome of any action before retrying it.\n")
    (ws / "MEMORY.md").write_text("# Memory\n\n- The harbour lantern is cobalt.\n")
    (ws / "memory").mkdir(exist_ok=True)
    if config is not None:
        (home / "config.json").write_text(json.dumps(config))
    return home


def run(coro: Awaitable[T]) -> T:
    """Run a coroutine to completion (tests are plain functions)."""
    return asyncio.run(coro)  # type: ignore[arg-type]


async def with_runtime(home: Path, fn: Callable[[Runtime], Awaitable[T]], agent: str = "alice", **kw: Any) -> T:
    """Start a runtime, run ``fn`` on it, close it whatever happens."""
    rt = Runtime(home, agent, **kw)
    await rt.start()
    try:
        return await fn(rt)
    finally:
        await rt.close()


def config(**agent: Any) -> Config:
    """A config whose ``alice`` has the given settings."""
    import msgspec

    return msgspec.convert({"agents": {"alice": agent}}, Config)
