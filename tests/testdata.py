"""Where the tests' sample data lives: ``tests/data/`` in the repository, nowhere else.

A test whose data is missing fails, loudly, instead of skipping: the data is part of the
checkout, so a missing file means a broken checkout, not an optional feature. (The module
is not called ``data`` because ``tests/data/`` is the folder beside it.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

DATA = Path(__file__).resolve().parent / "data"

OpenClawEra = Literal["2026.5.28-reset", "2026.9.6-reset"]
JSON_ERA: OpenClawEra = "2026.5.28-reset"
"""OpenClaw 2026.5.28: ``sessions.json`` and one ``.jsonl`` transcript per session."""
SQLITE_ERA: OpenClawEra = "2026.9.6-reset"
"""OpenClaw 2026.9.6: everything in ``agents/main/agent/openclaw-agent.sqlite``."""


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
