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

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kurahi.errors import UsageError
from kurahi.fs.os_errors import os_errors

__all__ = [
    "HOME_ENVS",
    "OPENCLAW_CONFIG",
    "Location",
    "OpenClawState",
    "kurahi_home",
    "open_state",
    "openclaw_state_dir",
    "pi_sessions_dir",
    "read_no_follow",
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


OPENCLAW_CONFIG = "openclaw.json"
"""OpenClaw's config, in its state dir."""
_O_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


class OpenClawState:
    """An OpenClaw state dir as Kurahi reads it: its config, one agent's workspace and sessions."""

    def __init__(self, root: Path, config: dict[str, Any], agent: str, version: str | None = None) -> None:
        self.root = root
        self.config = config
        self.agent = agent
        self.version = version
        """The OpenClaw release that runs it, when known (the default workspace depends on it)."""

    @property
    def sessions_dir(self) -> Path:
        """``agents/<id>/sessions`` (the JSON era; leftovers after an upgrade)."""
        return self.root / "agents" / self.agent / "sessions"

    @property
    def sqlite_store(self) -> Path:
        """``agents/<id>/agent/openclaw-agent.sqlite`` (the SQLite era)."""
        return self.root / "agents" / self.agent / "agent" / "openclaw-agent.sqlite"

    @property
    def era(self) -> str:
        """``sqlite`` when the agent has a SQLite store, else ``json``."""
        return "sqlite" if self.sqlite_store.is_file() else "json"

    def agent_entry(self) -> dict[str, Any]:
        """The agent's entry in ``agents.list`` (``{}`` when it has none)."""
        agents = self.config.get("agents")
        listed = agents.get("list") if isinstance(agents, dict) else None
        for entry in listed if isinstance(listed, list) else []:
            if isinstance(entry, dict) and entry.get("id") == self.agent:
                return entry
        return {}

    def defaults(self) -> dict[str, Any]:
        """``agents.defaults``."""
        agents = self.config.get("agents")
        found = agents.get("defaults") if isinstance(agents, dict) else None
        return found if isinstance(found, dict) else {}

    @property
    def workspace(self) -> Path:
        """The agent's workspace: its own ``workspace``, the defaults', else OpenClaw's default in the state dir."""
        given = self.agent_entry().get("workspace") or self.defaults().get("workspace")
        if isinstance(given, str) and given.strip():
            return Path(given).expanduser()
        env = os.environ.get("OPENCLAW_WORKSPACE_DIR", "").strip()
        if env:
            return Path(env).absolute()
        name = "workspace" if self.agent == "main" else f"workspace-{self.agent}"
        if self.version is not None and self.version.startswith("2026.5."):
            # 2026.5 keeps the default workspace in the user's home, whatever OPENCLAW_STATE_DIR says.
            return Path.home() / ".openclaw" / name
        # 2026.9 with OPENCLAW_STATE_DIR set: <state>/workspace (-<id> for other agents).
        return self.root / name

    def model(self) -> dict[str, Any]:
        """``{"provider", "model", "profile"}`` of the agent's primary model."""
        chosen = self.agent_entry().get("model") or self.defaults().get("model")
        ref = chosen.get("primary") if isinstance(chosen, dict) else chosen
        text = ref if isinstance(ref, str) else ""
        provider, sep, model = text.partition("/")
        return {"provider": provider if sep else None, "model": model if sep else text or None, "profile": None}


def open_state(state_dir: str | os.PathLike[str], agent: str = "main", version: str | None = None) -> OpenClawState:
    """Open ``state_dir`` as an OpenClaw state dir, refusing what is not one.

    Raises:
        UsageError: not a directory, a Kurahi home, no ``openclaw.json`` and no ``agents/``,
            a config that is not a JSON object, an unsafe agent id.
    """
    root = Path(state_dir).expanduser().absolute()
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory (give the OpenClaw state dir, e.g. ~/.openclaw)")
    if "/" in agent or agent in ("", ".", "..") or agent.startswith("."):
        raise UsageError(f"--resident {agent!r}: not an OpenClaw agent id")
    config_path = root / OPENCLAW_CONFIG
    if (root / "config.json").is_file() and not config_path.is_file():
        raise UsageError(f"{root}: a Kurahi home, not an OpenClaw state dir (run without --openclaw)")
    if not config_path.is_file():
        # A state dir whose config lives elsewhere (OPENCLAW_OPENCLAW_CONFIG_PATH) still has its agents.
        agent_dir = root / "agents" / agent
        if not ((agent_dir / "sessions").is_dir() or (agent_dir / "agent" / "openclaw-agent.sqlite").is_file()):
            raise UsageError(f"{root}: not an OpenClaw state dir (no {OPENCLAW_CONFIG}, no agents/{agent}/ sessions)")
        return OpenClawState(root, {}, agent, version)
    try:
        config = json.loads(read_no_follow(config_path))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{config_path}: not JSON Kurahi can read ({exc})") from exc
    if not isinstance(config, dict):
        raise UsageError(f"{config_path}: not an OpenClaw config (not a JSON object)")
    return OpenClawState(root, config, agent, version)


def read_no_follow(path: Path) -> bytes:
    """A state file's bytes, opened without following a symlink.

    Raises:
        UsageError: it cannot be read (a link, missing, unreadable), naming it.
    """
    with os_errors(UsageError, "cannot read", path=path):
        fd = os.open(path, _O_FLAGS)
    with os.fdopen(fd, "rb") as f:
        return f.read()
