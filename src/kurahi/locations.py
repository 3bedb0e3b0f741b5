"""Where Kurahi, Pi and OpenClaw keep their state on this machine, and why there.

Each finder answers a :class:`Location`: the directory and the source of that answer (an
option, an environment variable, or the default), so ``kurahi doctor`` can say where it
looked and a user can tell which setting won. The rules are the programs' own:

- **Kurahi**: ``--home``, else ``KURAHI_HOME``, else the seed's ``KOLO_HOME``, else
  ``~/.kolo``. Both variables set to different directories is an error, not a guess.
- **Pi** (1.6.0, ``config.js``): sessions in ``PI_CODING_AGENT_SESSION_DIR``, else
  ``$PI_CODING_AGENT_DIR/sessions``, else ``~/.pi/agent/sessions``; one folder per
  working directory, one ``.jsonl`` per session.
- **OpenClaw** (2026.9): ``OPENCLAW_STATE_DIR``, else ``$OPENCLAW_HOME/.openclaw``, else
  ``~/.openclaw``; agents under ``agents/<id>/``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kurahi.errors import UsageError

__all__ = [
    "HOME_ENVS",
    "Location",
    "kurahi_home",
    "openclaw_state_dir",
    "pi_sessions_dir",
]

HOME_ENVS = ("KURAHI_HOME", "KOLO_HOME")
"""The environment variables naming a Kurahi home, in order of precedence."""


@dataclass(frozen=True)
class Location:
    """A directory and where that answer came from."""

    path: Path
    source: str
    """``--home``, the environment variable's name, or ``default``."""

    @property
    def explicit(self) -> bool:
        """Whether someone asked for this directory (an option or a variable), rather than the default."""
        return self.source != "default"


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _user_home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def _expand(value: str, env: Mapping[str, str]) -> Path:
    if value == "~" or value.startswith("~/"):
        return _user_home(env) / value[2:]
    return Path(value)


def kurahi_home(option: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Location:
    """The Kurahi home: the ``--home`` option, else ``KURAHI_HOME``, else ``KOLO_HOME``, else ``~/.kolo``.

    Raises:
        UsageError: ``KURAHI_HOME`` and ``KOLO_HOME`` name different directories.
    """
    e = _env(env)
    if option is not None and str(option) != "":
        return Location(_expand(str(option), e), "--home")
    values = {name: e[name] for name in HOME_ENVS if e.get(name)}
    if len(values) == 2:
        a, b = (_expand(v, e) for v in values.values())
        if os.path.normpath(a) != os.path.normpath(b):
            raise UsageError(
                f"KURAHI_HOME ({a}) and KOLO_HOME ({b}) name different homes; unset one of them or pass --home"
            )
    for name, value in values.items():
        return Location(_expand(value, e), name)
    return Location(_user_home(e) / ".kolo", "default")


def pi_sessions_dir(env: Mapping[str, str] | None = None) -> Location:
    """Where Pi 1.6.0 keeps its sessions (see the module docstring)."""
    e = _env(env)
    if e.get("PI_CODING_AGENT_SESSION_DIR"):
        return Location(_expand(e["PI_CODING_AGENT_SESSION_DIR"], e), "PI_CODING_AGENT_SESSION_DIR")
    if e.get("PI_CODING_AGENT_DIR"):
        return Location(_expand(e["PI_CODING_AGENT_DIR"], e) / "sessions", "PI_CODING_AGENT_DIR")
    return Location(_user_home(e) / ".pi" / "agent" / "sessions", "default")


def openclaw_state_dir(env: Mapping[str, str] | None = None) -> Location:
    """Where OpenClaw keeps its state (see the module docstring)."""
    e = _env(env)
    if e.get("OPENCLAW_STATE_DIR", "").strip():
        return Location(_expand(e["OPENCLAW_STATE_DIR"].strip(), e), "OPENCLAW_STATE_DIR")
    if e.get("OPENCLAW_HOME", "").strip():
        return Location(_expand(e["OPENCLAW_HOME"].strip(), e) / ".openclaw", "OPENCLAW_HOME")
    return Location(_user_home(e) / ".openclaw", "default")
