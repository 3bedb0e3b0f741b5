"""The gateway's state: one runtime per agent, the devices, the audit chain, config apply.

Routes call into a :class:`Gateway`; it knows nothing of HTTP. Lifecycle events and every
mutating call (config apply, session reset, model swap, pairing, revocation, job state
changes, start and stop) are appended to the audit chain. Chat turns are recorded in their
transcripts, which are their own durable log, not in the chain.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from kurahi import __version__
from kurahi.agent.config import MAX_CONFIG_BYTES, Config, check_api_keys, load_config, read_config_bytes
from kurahi.agent.runtime import Runtime
from kurahi.errors import ConfigError, KurahiError
from kurahi.fs import durable as fsio
from kurahi.fs.leftovers import remove_leftovers
from kurahi.fs.os_errors import os_errors
from kurahi.js.decode import DECODE_ERRORS
from kurahi.resident.devices import DeviceRegistry
from kurahi.resident.home import Home
from kurahi.store.base import Backend
from kurahi.store.open import default_backend

__all__ = ["Gateway", "merge_patch"]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: ``null`` deletes, objects merge, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class Gateway:
    """Everything a running gateway holds (see the module docstring)."""

    def __init__(
        self, home: Home, *, runtime_options: dict[str, Any] | None = None, backend: Backend | None = None
    ) -> None:
        """Load the home's config and devices.

        ``backend`` holds sessions, record logs and the audit chain (default: files in the home).

        Raises:
            SecretFileError: the home's token, devices or directories are open to other users,
                or the owner token is empty or unusable.
            ConfigError: the config cannot be used (a profile's ``apiKeyEnv`` names an unset variable, say).
            CatalogError: an agent's catalog is corrupt or too large (checked here, so that
                ``gateway run`` says so in one line instead of failing its start-up with a traceback).
        """
        home.check_private()
        home.check_owner_token()
        self.home = home
        self.devices = DeviceRegistry(home.devices)
        self.backend = backend if backend is not None else default_backend(home.root)
        self.audit = self.backend.audit()
        self.config: Config = load_config(home.root)
        check_api_keys(self.config)
        for agent in home.agents():
            self.backend.agent(agent).catalog.items()
        self.runtimes: dict[str, Runtime] = {}
        self._runtime_options = runtime_options or {}
        self._lock = asyncio.Lock()
        self.stop_grace = 5.0
        """Seconds running turns get to finish when the gateway stops."""
        self.start_error: KurahiError | None = None
        """Why :meth:`start` failed, when it did (see :meth:`abandon`)."""
        self.on_start_failed: Callable[[], None] | None = None
        """Called when :meth:`start` failed (the server stops then)."""
        self.problems: list[str] = []
        """What :meth:`start` could not serve (a session whose files are damaged), one line each."""
        self.stop_problems: list[str] = []
        """What closing the runtimes could not do (activity clocks not written), one line each."""
        self.on_started: Callable[[], None] | None = None
        """Called once every runtime has started (the server publishes its port then)."""
        self.started = False
        """Every runtime has started and the gateway has not begun to stop (``/api/ready``)."""
        self.runtime_hooks: list[Callable[[str, Runtime], None]] = []
        """Each told of every runtime as it is created, before it starts (metrics attach here)."""
        self.boot_id = secrets.token_hex(8)
        """New in every process: a changed boot id proves the process was restarted."""
        self.generation = 1
        """Counts in-process restarts (:meth:`restart`); with the boot id, proves one happened."""
        self.started_at_ms = int(time.time() * 1000)
        self._serving = asyncio.Event()
        self._serving.set()

    # -- credentials ------------------------------------------------------------------------

    def owner_token(self) -> str:
        """The owner token (read on every request, so a rotated token takes effect at once)."""
        return self.home.owner_token() or ""

    # -- lifetime ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Start a runtime for every agent of the home and record the start."""
        removed = remove_leftovers(self._leftover_places())
        for agent in self.home.agents():
            await self.runtime(agent)
        # A damaged session (or queued record) disables that session only; the rest start.
        self.problems = [
            f"agent {agent}: session {key!r} not served: {message}"
            for agent, rt in sorted(self.runtimes.items())
            for key, message in sorted(rt.open_errors.items())
        ]
        details: dict[str, Any] = {"version": __version__, "agents": sorted(self.runtimes)}
        if self.problems:
            details["sessionsNotServed"] = len(self.problems)
        if removed:
            details["leftoverTempFilesRemoved"] = len(removed)
        self.record("gateway", "gateway.start", details)
        self.started = True
        if self.on_started is not None:
            self.on_started()

    def _leftover_places(self) -> list[tuple[Path, bool]]:
        """Where atomic writes stage temporary files: the home's own folders, each agent's sessions and workspace."""
        h = self.home
        places = [(h.root, False), (h.lock.parent, False), (h.secrets, False), (h.signing_key.parent, False)]
        for agent in h.agents():
            paths = h.agent(agent)
            places += [(paths.sessions, False), (paths.workspace, True)]
        return places

    async def abandon(self, error: KurahiError) -> None:
        """A start that failed: close the runtimes that did start, record nothing, keep ``error``.

        The server then stops at once and raises :attr:`start_error` (see
        :func:`kurahi.gateway.server.serve`).
        """
        self.start_error = error
        for rt in list(self.runtimes.values()):
            with contextlib.suppress(Exception):
                await rt.close(grace=0)
        self.runtimes.clear()
        if self.on_start_failed is not None:
            self.on_start_failed()

    async def stop(self, *, grace: float | None = None) -> None:
        """Let running turns finish (``grace`` seconds), interrupt the rest, record the stop."""
        self.started = False
        await self._close_runtimes(grace)
        self.record("gateway", "gateway.stop", {})

    async def _close_runtimes(self, grace: float | None) -> None:
        """Close every runtime (running turns get ``grace`` seconds, default ``stop_grace``) and forget them.

        What a runtime could not do at close (clocks it could not write) goes to
        :attr:`stop_problems`, which the server prints once it has stopped.
        """
        for rt in list(self.runtimes.values()):
            await rt.close(grace=self.stop_grace if grace is None else grace)
            if rt.close_problem is not None:
                self.stop_problems.append(rt.close_problem)
        self.runtimes.clear()

    def boot(self) -> dict[str, Any]:
        """What proves a restart: the process's boot id and pid, the in-process generation."""
        return {
            "bootId": self.boot_id,
            "generation": self.generation,
            "pid": os.getpid(),
            "startedAtMs": self.started_at_ms,
        }

    async def restart(self, actor: str, *, grace: float | None = None) -> dict[str, Any]:
        """Restart in process: stop every runtime, reload config and devices, start them again.

        What a restart of the process would do, but the listener: running turns get
        ``grace`` seconds, the rest are interrupted (their jobs say so), every file is closed,
        and the runtimes are rebuilt from what is stored. Requests that arrive meanwhile wait
        for the new runtimes. The generation goes up by one, which is what proves (in
        ``/api/health`` and in the manifest) that a restart happened.

        Raises:
            ConfigError: the stored config no longer loads, or names an unset API key variable
                (the old runtimes are stopped; the gateway answers again once the config is
                fixed and restarted).
        """
        async with self._lock:
            before = self.boot()
            self.started = False  # /api/ready says so until the new runtimes are up
            self._serving.clear()
            try:
                await self._close_runtimes(grace)
                self.config = load_config(self.home.root)
                check_api_keys(self.config)
                self.devices = DeviceRegistry(self.home.devices)
                self.generation += 1
                self.started_at_ms = int(time.time() * 1000)
                self.record(actor, "gateway.restart", {"inProcess": True, "generation": self.generation})
            finally:
                self._serving.set()
        for agent in self.home.agents():
            await self.runtime(agent)
        self.started = True
        return {"before": before, "after": self.boot()}

    def record(self, actor: str, action: str, details: dict[str, Any]) -> None:
        """Append to the audit chain."""
        self.audit.append(actor, action, details)

    async def runtime(self, agent: str) -> Runtime:
        """The started runtime of ``agent``.

        Raises:
            UsageError: an unsafe agent id.
            UnknownAgentError: no such agent in this home.
        """
        await self._serving.wait()  # an in-process restart is replacing the runtimes
        rt = self.runtimes.get(agent)
        if rt is not None:
            return rt
        self.home.agent(agent, must_exist=True)
        async with self._lock:
            rt = self.runtimes.get(agent)
            if rt is None:
                rt = Runtime(
                    self.home.root,
                    agent,
                    config=self.config,
                    on_event=lambda action, details: self.record("gateway", action, details),
                    backend=self.backend,
                    **self._runtime_options,
                )
                for hook in self.runtime_hooks:
                    hook(agent, rt)
                await rt.start()
                self.runtimes[agent] = rt
        return rt

    # -- config -----------------------------------------------------------------------------

    def config_json(self) -> dict[str, Any]:
        """The config as stored (defaults filled in)."""
        out: dict[str, Any] = msgspec.to_builtins(self.config)
        return out

    async def apply_config(self, patch: dict[str, Any], actor: str) -> dict[str, Any]:
        """Validate a merge patch, write the config atomically, and reload every runtime.

        Nothing is written, and nothing changes, unless the patched config loads and works
        for every agent of the home (each agent's settings, its model profile) and every
        profile's ``apiKeyEnv`` names a variable set in the gateway's environment.

        Raises:
            ConfigError: the patched config would not work (the message says where).
        """
        raw = read_config_bytes(self.home.config)
        try:
            current = msgspec.json.decode(raw) if raw is not None else {}
        except DECODE_ERRORS as exc:
            raise ConfigError(f"the stored config does not parse: {exc}", path=self.home.config) from exc
        merged = merge_patch(current, patch)
        if not isinstance(merged, dict):
            raise ConfigError("the patched config is not a JSON object")
        # Validate what will be written, not what was sent: Python's JSON reader takes NaN,
        # Infinity (1e999) and lone surrogate escapes, which a config file cannot hold (the
        # first two would be written as null, and the gateway could not load its config).
        try:
            data = msgspec.json.format(msgspec.json.encode(merged)) + b"\n"
        except UnicodeEncodeError as exc:
            raise ConfigError("the patch holds a string that is not valid Unicode (a lone surrogate)") from exc
        if msgspec.json.decode(data) != merged:
            raise ConfigError("the patch holds a number JSON cannot hold (NaN or Infinity; 1e999 reads as Infinity)")
        try:
            candidate = msgspec.convert(merged, Config)
        except msgspec.ValidationError as exc:
            raise ConfigError(str(exc)) from exc
        base = Config()
        base.models.update(candidate.models)
        candidate.models = base.models
        # Every agent the patched file configures, and ``defaults`` on its own, not only the
        # agents this home has now: a `defaults.maxSteps: 0` would break the next agent made.
        candidate.check_agents(self.home.agents())
        check_api_keys(candidate)
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(f"the patched config would be {len(data)} bytes; the limit is {MAX_CONFIG_BYTES}")
        with os_errors(ConfigError, "cannot write the config", path=self.home.config):
            fsio.atomic_write(self.home.config, data, mode=0o600)
        self.config = candidate
        for rt in self.runtimes.values():
            await rt.reconfigure(candidate)
        self.record(actor, "config.apply", {"keys": sorted(patch)})
        return self.config_json()

    async def swap_model(self, agent: str, profile: str, actor: str) -> str:
        """Put ``agent`` on another model profile for the turns that follow (recorded in the chain)."""
        rt = await self.runtime(agent)
        before = rt.model_name
        rt.set_model(profile)
        self.record(actor, "agent.model", {"agent": agent, "from": before, "to": profile})
        return profile
