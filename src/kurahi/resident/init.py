"""``kurahi init``: a new home with a seeded resident, never overwriting what is there.

Creates the directories (every one 0700, the home included, whatever the umask),
``config.json`` with the default model profiles, the owner token (random, 0600) and the
resident's workspace: IDENTITY.md with an identity marker, SOUL.md, AGENTS.md, MEMORY.md and
``memory/``. Running it again creates only what is missing and reports what it kept; an
existing home whose token, device registry or directories are open to other users is refused
(:meth:`Home.check_private`) before anything is created.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import UnsafeFileError
from kurahi.fs import durable as fsio
from kurahi.resident.home import Home

__all__ = ["InitReport", "init_home", "new_marker"]


@dataclass
class InitReport:
    """What :func:`init_home` did."""

    home: Path
    agent: str
    marker: str | None
    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (never the token)."""
        return {
            "home": str(self.home),
            "agent": self.agent,
            "marker": self.marker,
            "created": self.created,
            "kept": self.kept,
        }


def new_marker(agent_id: str) -> str:
    """A fresh identity marker, e.g. ``ALICE-7F3A9C``."""
    return f"{agent_id.upper().replace('_', '-')}-{secrets.token_hex(3).upper()}"


_DEFAULT_CONFIG = {
    "models": {
        "alpha": {"provider": "deterministic", "model": "alpha"},
        "beta": {"provider": "deterministic", "model": "beta"},
    },
    "defaults": {"model": "alpha"},
    "agents": {},
}


def _seed(agent: str, marker: str) -> dict[str, str]:
    return {
        "IDENTITY.md": (
            f"# Identity\n\nname: {agent}\nmarker: {marker}\n\nI am {agent}, a resident agent kept by Kurahi.\n"
        ),
        "SOUL.md": "# Soul\n\nCalm, careful and candid. I check what happened before I act again.\n",
        "AGENTS.md": (
            "# Operating rules\n\n- Verify the outcome of an action before retrying it.\n"
            "- Write notes to memory/ when something should outlive this session.\n"
        ),
        "MEMORY.md": "# Memory\n\n",
    }


def init_home(
    root: str | os.PathLike[str] | None = None, agent: str = "main", *, marker: str | None = None
) -> InitReport:
    """Create (or complete) a home; see the module docstring.

    Raises:
        UsageError: an unsafe agent id.
        SecretFileError: an existing home whose access files are open to other users.
        UnsafeFileError: one of the home's own directories is a symlink (never followed).
    """
    home = Home.at(root)
    paths = home.agent(agent)
    report = InitReport(home.root, agent, None)

    def note(path: Path, made: bool) -> None:
        (report.created if made else report.kept).append(str(path.relative_to(home.root)))

    home.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    home.check_private()
    for d in (home.secrets, home.signing_key.parent, home.lock.parent, home.audit.parent):
        if d.is_symlink():  # chmod would follow it and change a directory outside the home
            raise UnsafeFileError("is a symlink; Kurahi never follows a link out of its home: remove it", path=d)
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(d, 0o700)
    paths.ensure()
    (paths.workspace / "memory").mkdir(mode=0o700, exist_ok=True)

    if home.config.exists():
        note(home.config, False)
    else:
        fsio.atomic_write(home.config, msgspec.json.format(msgspec.json.encode(_DEFAULT_CONFIG)) + b"\n", mode=0o600)
        note(home.config, True)

    if home.token_file.exists():
        note(home.token_file, False)
    else:
        fsio.atomic_write(home.token_file, secrets.token_urlsafe(32).encode() + b"\n", mode=0o600)
        note(home.token_file, True)

    identity = paths.workspace / "IDENTITY.md"
    fresh_marker = marker or new_marker(agent)
    for name, text in _seed(agent, fresh_marker).items():
        p = paths.workspace / name
        if p.exists():
            note(p, False)
        else:
            fsio.atomic_write(p, text.encode(), mode=0o644)
            note(p, True)
    from kurahi.agent.providers.deterministic import identity_marker

    found = identity_marker(identity.read_text(errors="replace"))
    report.marker = None if found == "no-marker" else found
    return report
