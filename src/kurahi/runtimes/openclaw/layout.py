"""Where OpenClaw keeps things in its state dir: every name and path spelled once.

A state dir holds ``openclaw.json`` and ``agents/<id>/``. In the JSON era (2026.5) an agent's
sessions are ``agents/<id>/sessions/sessions.json`` and its transcripts beside it; in the
SQLite era (2026.9) they are rows of ``agents/<id>/agent/openclaw-agent.sqlite``, and an
upgraded dir keeps what the doctor imported in ``agents/<id>/session-sqlite-import-archive/``.
A Kurahi home lays its sessions out as the JSON era does.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "CATALOG",
    "CONFIG",
    "IMPORT_ARCHIVE",
    "STORE_NAME",
    "agent_dir",
    "has_store",
    "sessions_dir",
    "sqlite_era",
    "store_path",
    "store_relative",
]

CONFIG = "openclaw.json"
"""OpenClaw's config, in its state dir."""
STORE_NAME = "openclaw-agent.sqlite"
"""The SQLite era's per-agent store, inside ``agents/<id>/agent/``."""
CATALOG = "sessions.json"
"""The JSON era's catalog, inside ``agents/<id>/sessions/``."""
IMPORT_ARCHIVE = "session-sqlite-import-archive"
"""Where OpenClaw 2026.9's doctor moves the 2026.5 files it imported (``agents/<id>/``)."""


def agent_dir(root: Path, agent: str) -> Path:
    """``agents/<id>``."""
    return root / "agents" / agent


def store_relative(agent: str) -> str:
    """The agent's store relative to the state dir (``agents/<id>/agent/openclaw-agent.sqlite``)."""
    return f"agents/{agent}/agent/{STORE_NAME}"


def store_path(root: Path, agent: str) -> Path:
    """The agent's SQLite store (whether or not it exists)."""
    return agent_dir(root, agent) / "agent" / STORE_NAME


def sessions_dir(root: Path, agent: str) -> Path:
    """The agent's JSON-era sessions folder (whether or not it exists)."""
    return agent_dir(root, agent) / "sessions"


def has_store(root: Path, agent: str) -> bool:
    """Whether the agent has a SQLite store (a regular file, or a link to one)."""
    return store_path(root, agent).is_file()


def sqlite_era(root: Path, agent: str) -> bool:
    """Whether ``root`` is a SQLite-era state dir for ``agent``: its store, and no catalog.

    An upgraded dir keeps leftover archives in ``sessions/``, but no ``sessions.json``.
    """
    return has_store(root, agent) and not (sessions_dir(root, agent) / CATALOG).exists()
