"""An OpenClaw state dir as Kurahi reads it: where it is, its config, an agent's workspace and model."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kurahi.errors import UsageError
from kurahi.locations.dirs import Location, env_path, read_no_follow, user_home, variables
from kurahi.runtimes.openclaw import layout
from kurahi.runtimes.openclaw.versions import facts

__all__ = ["OPENCLAW_CONFIG", "OpenClawState", "open_state", "openclaw_state_dir"]


def openclaw_state_dir(env: Mapping[str, str] | None = None) -> Location:
    """Where OpenClaw keeps its state.

    ``OPENCLAW_STATE_DIR``, else ``$OPENCLAW_HOME/.openclaw``, else ``~/.openclaw`` (2026.9);
    agents under ``agents/<id>/``.
    """
    e = variables(env)
    if e.get("OPENCLAW_STATE_DIR", "").strip():
        return Location(env_path(e["OPENCLAW_STATE_DIR"].strip(), e), "OPENCLAW_STATE_DIR")
    if e.get("OPENCLAW_HOME", "").strip():
        return Location(env_path(e["OPENCLAW_HOME"].strip(), e) / ".openclaw", "OPENCLAW_HOME")
    return Location(user_home(e) / ".openclaw", "default")


OPENCLAW_CONFIG = layout.CONFIG
"""OpenClaw's config, in its state dir."""


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
        return layout.sessions_dir(self.root, self.agent)

    @property
    def sqlite_store(self) -> Path:
        """The agent's store (the SQLite era)."""
        return layout.store_path(self.root, self.agent)

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
        release = facts(self.version) if self.version is not None else None
        if release is not None and release.workspace_in_user_home:
            return Path.home() / ".openclaw" / name
        # The SQLite era with OPENCLAW_STATE_DIR set: <state>/workspace (-<id> for other agents).
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
        if not (layout.sessions_dir(root, agent).is_dir() or layout.has_store(root, agent)):
            raise UsageError(f"{root}: not an OpenClaw state dir (no {OPENCLAW_CONFIG}, no agents/{agent}/ sessions)")
        return OpenClawState(root, {}, agent, version)
    try:
        config = json.loads(read_no_follow(config_path))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{config_path}: not JSON Kurahi can read ({exc})") from exc
    if not isinstance(config, dict):
        raise UsageError(f"{config_path}: not an OpenClaw config (not a JSON object)")
    return OpenClawState(root, config, agent, version)
