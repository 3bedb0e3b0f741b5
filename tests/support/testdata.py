"""Where the tests' sample data lives: ``tests/data/`` in the repository, nowhere else.

A test whose data is missing fails, loudly, instead of skipping: the data is part of the
checkout, so a missing file means a broken checkout, not an optional feature. (The module
is not called ``data`` because ``tests/data/`` is the folder beside it.)
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Literal

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"

OpenClawEra = Literal[
    "2026.5.28-reset",
    "2026.9.6-reset",
    "2026.5.28-upgraded",
    "2026.5.28-idle-upgraded",
    "2026.5.28-reset-idle",
    "2026.9.6-reset-idle",
    "2026.5.28-reset-idle-upgraded",
    "2026.9.6-cold",
    "2026.9.4-reset",
]
JSON_ERA: OpenClawEra = "2026.5.28-reset"
"""OpenClaw 2026.5.28: ``sessions.json`` and one ``.jsonl`` transcript per session."""
SQLITE_ERA: OpenClawEra = "2026.9.6-reset"
"""OpenClaw 2026.9.6: everything in ``agents/main/agent/openclaw-agent.sqlite``."""
UPGRADED: OpenClawEra = "2026.5.28-upgraded"
"""The JSON-era sample after OpenClaw 2026.9.6's ``doctor --fix``: the reset archive left in ``sessions/``."""
IDLE_UPGRADED: OpenClawEra = "2026.5.28-idle-upgraded"
"""An idle orphan of the JSON era after 2026.9.6's doctor: key ``agent:main:recovered:<id>``."""
JSON_RESET_IDLE: OpenClawEra = "2026.5.28-reset-idle"
"""OpenClaw 2026.5.28: a reset archive, an idle orphan (a ``.jsonl`` no catalog entry names), the live session."""
RESET_IDLE_UPGRADED: OpenClawEra = "2026.5.28-reset-idle-upgraded"
"""``2026.5.28-reset-idle`` after 2026.9.6's ``doctor --fix``: the archive left, the orphan under a recovered key."""
SQLITE_RESET_IDLE: OpenClawEra = "2026.9.6-reset-idle"
"""OpenClaw 2026.9.6: a session with a ``reset`` entry, and the session an idle rollover replaced it with."""
SQLITE_SCHEMA_19: OpenClawEra = "2026.9.4-reset"
"""OpenClaw 2026.9.4: an agent store of schema 19 (what 2026.8.1-2026.9.4 write), a reset inside its one session."""
SQLITE_COLD: OpenClawEra = "2026.9.6-cold"
"""OpenClaw 2026.9.6: one session whose events its cold storage moved into ``sessions/cold/<sha256>.jsonl.zst``."""


def data_path(*parts: str) -> Path:
    """``tests/data/PARTS...``; fails the calling test (or its module's collection) if it is missing."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.fail(
            f"test data missing: {path} (it is part of the repository; is the checkout complete?)", pytrace=False
        )
    return path


def openclaw_state(era: OpenClawEra) -> Path:
    """The state directory OpenClaw wrote in that era's sample run (see ``tests/data/openclaw/README.md``)."""
    return data_path("openclaw", era, "state")


def openclaw_turns(era: OpenClawEra) -> Path:
    """``cap/turns.jsonl`` of that run: each turn's message, the session that answered and the reply."""
    return data_path("openclaw", era, "cap", "turns.jsonl")


def openclaw_state_copy(era: OpenClawEra, dst: Path) -> Path:
    """A writable copy of that era's state directory at ``dst`` (tests never touch the samples)."""
    shutil.copytree(openclaw_state(era), dst)
    for path in [dst, *dst.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)
    return dst


def tree_hash(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` with the sha256 of its bytes (folders: ``dir``)."""
    return {
        str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }
