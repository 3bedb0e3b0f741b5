"""The runtime of one agent: its sessions, lanes, ledger, jobs and model, in one event loop.

Usage::

    rt = Runtime(home, "alice")
    await rt.start()                 # settles what the last stop left: jobs, queue, tool calls
    result = await rt.send("agent:alice:main", "hello")
    job_id = rt.start_job("agent:alice:main", "summarize my notes")
    await rt.close()

Sessions are found through the agent's ``sessions.json`` by key and created on first use.
The catalog's activity clocks are written after turns, at most once a second per key (and
at close), so a busy session does not pay for a catalog rewrite on every turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kurahi.agent.config import Config, ModelProfile, QueueMode, load_config
from kurahi.agent.conversation import Conversation, PathItem
from kurahi.agent.jobs import JobStore
from kurahi.agent.journal import Journal
from kurahi.agent.layout import AgentPaths, check_session_key
from kurahi.agent.ledger import Ledger
from kurahi.agent.pairing import Settlement, settle
from kurahi.agent.providers.base import Provider
from kurahi.agent.queue import Lane, pending_from_journal
from kurahi.agent.tools import BUILTIN_TOOLS, Tool
from kurahi.agent.turn import Listener, TurnControl, TurnResult, run_turn, user_message
from kurahi.errors import ConfigError, KurahiError, PairingRefusedError
from kurahi.lifecycle.carry import Carry, carry_into
from kurahi.lifecycle.facts import session_facts
from kurahi.lifecycle.policy import Decision, Inbound, decide
from kurahi.store.catalog import Catalog
from kurahi.store.fsio import FsyncPolicy
from kurahi.store.ids import session_id as new_session_id
from kurahi.store.transcript import Transcript

__all__ = ["Runtime", "make_provider"]


def make_provider(name: str, profile: ModelProfile) -> Provider:
    """The provider for a model profile."""
    if profile.provider == "deterministic":
        from kurahi.agent.providers.deterministic import DeterministicProvider

        return DeterministicProvider(name, profile.model or name, delay_ms=profile.delay_ms)
    if profile.provider == "openai":
        from kurahi.agent.providers.openai_chat import OpenAIProvider

        return OpenAIProvider(
            profile.model,
            base_url=profile.base_url,
            api_key_env=profile.api_key_env or "OPENAI_API_KEY",
            timeout=profile.timeout_s,
        )
    if profile.provider == "anthropic":
        from kurahi.agent.providers.anthropic_messages import AnthropicProvider

        return AnthropicProvider(
            profile.model,
            base_url=profile.base_url,
            api_key_env=profile.api_key_env or "ANTHROPIC_API_KEY",
            timeout=profile.timeout_s,
        )
    raise ConfigError(f"unknown provider {profile.provider!r}")  # pragma: no cover - the struct forbids it


class Runtime:
    """One agent's turns (see the module docstring).

    Args:
        home: the Kurahi home.
        agent_id: the agent.
        config: settings (default: read ``<home>/config.json``).
        tools: the tools (default: the built-in ones).
        providers: providers by profile name, overriding what the config would build (tests).
        listener: told about every entry and streamed piece of text, with the session key.
        on_event: told about job state changes (``job.<status>``) for an audit log.
    """

    def __init__(
        self,
        home: str | os.PathLike[str],
        agent_id: str,
        *,
        config: Config | None = None,
        tools: Iterable[Tool] | None = None,
        providers: dict[str, Provider] | None = None,
        listener: Listener | None = None,
        on_event: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.paths = AgentPaths.of(home, agent_id).ensure()
        self.on_event = on_event
        self.config = config if config is not None else load_config(home)
        self.settings = self.config.agent(agent_id)
        self.model_name = self.settings.model
        durable = self.settings.fsync != "never"
        self.ledger = Ledger(self.paths.ledger, durable=durable)
        self.jobs = JobStore(self.paths.jobs, durable=durable, on_mark=self._job_event)
        self.queue_journal = Journal(self.paths.queue, durable=durable)
        self.catalog = Catalog(self.paths.catalog)
        self.tools: dict[str, Tool] = {
            t.name: t for t in (tools if tools is not None else [c() for c in BUILTIN_TOOLS])
        }
        self._providers: dict[str, Provider] = dict(providers or {})
        self.listener = listener
        self._convs: dict[str, Conversation] = {}
        self._lanes: dict[str, Lane] = {}
        self._job_tasks: dict[str, asyncio.Task[None]] = {}
        self._dirty: dict[str, int] = {}
        self._flusher: asyncio.Task[None] | None = None
        self.decisions: dict[str, Decision] = {}
        """The last freshness decision per session key."""
        self.open_errors: dict[str, str] = {}
        """Sessions :meth:`start` could not open, with the reason."""
        self.recovered: dict[str, Any] | None = None
        """What :meth:`start` found and did (``None`` before it ran)."""
        self.settlements: list[Settlement] = []
        """Every repair the pairing guard made when sessions were opened."""

    # -- start and stop ----------------------------------------------------------------------

    async def start(self) -> dict[str, Any]:
        """Settle what the last stop left behind; returns what was done.

        Jobs left ``queued``/``running`` become ``interrupted``; every session in the catalog
        is opened, so the pairing guard answers its unanswered tool calls; queued messages
        whose entry is already in their transcript are marked done and the others are queued
        again. A session that cannot be opened is reported in ``openErrors`` and left as it is.
        """
        if self.recovered is not None:
            return self.recovered  # started already: recovering twice would queue messages twice
        interrupted = self.jobs.recover()
        # Open every session now, not on its first message: the pairing guard runs on open,
        # so no transcript is left with an unanswered tool call while it waits for a message.
        for key, _ in self.catalog.items():
            try:
                self.conversation(key)
            except KurahiError as exc:
                self.open_errors[key] = str(exc)
        requeued = 0
        for key, recs in pending_from_journal(self.queue_journal).items():
            conv = self.conversation(key)
            seen = {
                (p.data.get("kurahi") or {}).get("queueId") for p in conv.path if isinstance(p.data.get("kurahi"), dict)
            }
            done = [r["qid"] for r in recs if r["qid"] in seen]
            if done:
                self.queue_journal.append({"op": "done", "qids": done, "ts": int(time.time() * 1000)})
            for r in recs:
                if r["qid"] not in seen and isinstance(r.get("message"), dict):
                    self.lane(key).submit(r["message"], "followup", qid=r["qid"])
                    requeued += 1
        self.recovered = {
            "interruptedJobs": interrupted,
            "requeuedMessages": requeued,
            "settled": [s.tool_call_id for s in self.settlements],
            "openErrors": dict(self.open_errors),
        }
        return self.recovered

    async def close(self, *, grace: float = 5.0) -> None:
        """Let running turns finish for ``grace`` seconds, then interrupt them; close every file."""
        lanes = list(self._lanes.values())
        if lanes:
            _, pending = await asyncio.wait([asyncio.ensure_future(lane.wait_idle()) for lane in lanes], timeout=grace)
            for f in pending:
                f.cancel()
            for lane in lanes:
                await lane.close()
        for t in self._job_tasks.values():
            t.cancel()
        if self._flusher is not None and not self._flusher.done():
            self._flusher.cancel()
        self._flush()
        for conv in self._convs.values():
            conv.close()
        self._convs.clear()
        for p in self._providers.values():
            await p.aclose()
        self.ledger.close()
        self.jobs.close()
        self.queue_journal.close()

    # -- sessions -----------------------------------------------------------------------------

    def conversation(self, key: str) -> Conversation:
        """The open session for ``key``, opening or creating it (the pairing guard runs on open)."""
        conv = self._convs.get(key)
        if conv is not None:
            return conv
        check_session_key(key)
        entry = self.catalog.get(key)
        now = int(time.time() * 1000)
        fsync = self.settings.fsync
        file = None
        if entry is not None and isinstance(entry.get("sessionId"), str):
            name = entry.get("sessionFile") or f"{entry['sessionId']}.jsonl"
            file = self.paths.sessions / os.path.basename(str(name))
        if file is not None and file.exists():
            conv = Conversation.open(file, fsync=fsync)
        else:
            sid = new_session_id()
            file = self.paths.sessions / f"{sid}.jsonl"
            conv = Conversation.create(file, fsync=fsync, cwd=str(self.paths.workspace), session_id=sid)
            self.catalog.upsert(
                key,
                {
                    "sessionId": sid,
                    "sessionFile": file.name,
                    "sessionStartedAt": now,
                    "lastInteractionAt": now,
                    "updatedAt": now,
                },
            )
        self._convs[key] = conv
        # Policy "refuse" leaves the calls as they are; every turn on the session then says why it will not run.
        with contextlib.suppress(PairingRefusedError):
            self.settlements.extend(
                settle(conv, self.ledger, self.tools, self.paths.workspace, policy=self.settings.pairing)
            )
        conv.sync()
        return conv

    def lane(self, key: str) -> Lane:
        """The lane of a session key."""
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = Lane(self, check_session_key(key), self.queue_journal)
        return lane

    def provider(self) -> tuple[Provider, ModelProfile]:
        """The current model's provider and profile."""
        profile = self.config.profile(self.model_name)
        p = self._providers.get(self.model_name)
        if p is None:
            p = self._providers[self.model_name] = make_provider(self.model_name, profile)
        return p, profile

    def set_model(self, name: str) -> None:
        """Swap the model for the turns that follow.

        Raises:
            ConfigError: no such profile.
        """
        self.config.profile(name)
        self.model_name = name

    async def reconfigure(self, config: Config) -> None:
        """Take a new config without losing sessions, lanes or jobs.

        Settings and the model change for the turns that follow; providers are rebuilt from
        the new profiles.

        Raises:
            ConfigError: the new config does not work for this agent (nothing changes then).
        """
        settings = config.agent(self.paths.agent_id)
        config.profile(settings.model)
        old = self._providers
        self.config, self.settings, self.model_name = config, settings, settings.model
        self._providers = {}
        for p in old.values():
            await p.aclose()
        for conv in self._convs.values():
            conv.session.fsync = FsyncPolicy(settings.fsync)

    async def reset_session(self, key: str, *, carry: Carry = "none") -> tuple[str | None, str]:
        """Close ``key``'s session and start a new one; the old transcript is kept and linked.

        The new header's ``parentSession`` names the old file and the catalog entry gets
        ``previousSessionId``, so ``kurahi lineage find`` follows the history across it. Waits
        for the session's running turn to finish first.

        Returns:
            ``(old session id or None, new session id)``.
        """
        check_session_key(key)
        lane = self._lanes.get(key)
        if lane is not None:
            await lane.wait_idle()
        decision = Decision("rollover", "explicit-reset", "reset through the API", carry)
        return self._rollover(key, decision)

    def route(self, key: str, text: str) -> Decision:
        """Decide reuse / rollover / new for a message to an idle session, and carry it out."""
        entry = self.catalog.get(key)
        conv = self._convs.get(key)
        path: list[PathItem] | None = None
        header: str | None = None
        file = conv.file if conv is not None else self._file_of(entry)
        if conv is not None:
            path, header = conv.path, conv.session_id
        elif entry is not None and file is not None and file.exists():
            try:
                conv = self.conversation(key)
                path, header = conv.path, conv.session_id
            except KurahiError:
                path = None
        facts = session_facts(entry, file, path, header_id=header, session_type=_session_type(key))
        now = int(time.time() * 1000)
        msg = Inbound(text, now, _local_offset_minutes(now))
        decision = decide(facts, msg, self.settings.lifecycle)
        if decision.action != "reuse" and entry is not None:
            self._rollover(key, decision)
        return decision

    def _file_of(self, entry: Mapping[str, Any] | None) -> Path | None:
        if entry is None or not isinstance(entry.get("sessionId"), str):
            return None
        name = entry.get("sessionFile") or f"{entry['sessionId']}.jsonl"
        return self.paths.sessions / os.path.basename(str(name))

    def _rollover(self, key: str, decision: Decision) -> tuple[str | None, str]:
        old_entry = self.catalog.get(key)
        conv = self._convs.pop(key, None)
        old_file = self._file_of(old_entry)
        old_path: list[PathItem] | None = conv.path if conv is not None else None
        if conv is not None:
            old_file = conv.file
            conv.close()
        elif old_file is not None and decision.carry != "none":
            try:
                with Transcript.open(old_file) as t:
                    old_path = [PathItem(e.id, e.type, e.data, e.line) for e in t.path()]
            except KurahiError:
                old_path = None  # unusable: nothing to carry
        old_id = old_entry.get("sessionId") if old_entry is not None else None
        sid = new_session_id()
        file = self.paths.sessions / f"{sid}.jsonl"
        now = int(time.time() * 1000)
        parent = str(old_file) if old_file is not None and old_file.exists() else None
        conv = Conversation.create(
            file, fsync=self.settings.fsync, cwd=str(self.paths.workspace), session_id=sid, parent_session=parent
        )
        carried = None
        if old_path and decision.carry != "none" and isinstance(old_id, str) and old_file is not None:
            carried = carry_into(
                old_path,
                conv.session,
                decision.carry,
                old_session_id=old_id,
                old_file=old_file,
                keep_recent_tokens=self.settings.compaction.keep_recent_tokens,
            )
            conv.reload()
        conv.sync()
        fields: dict[str, Any] = {
            "sessionId": sid,
            "sessionFile": file.name,
            "sessionStartedAt": now,
            "updatedAt": now,
            "lastInteractionAt": now,
        }
        if isinstance(old_id, str):
            fields["previousSessionId"] = old_id
        if old_entry is not None:
            self.catalog.update(key, lambda cur: {**_carryable(cur or {}), **fields})
        else:
            self.catalog.upsert(key, fields)
        self._convs[key] = conv
        if self.on_event is not None:
            self.on_event(
                "session.rollover",
                {
                    "agent": self.paths.agent_id,
                    "key": key,
                    "kind": decision.kind,
                    "reason": decision.reason,
                    "carry": decision.carry,
                    "from": old_id,
                    "to": sid,
                    "carried": carried.to_dict() if carried is not None else None,
                },
            )
        return (old_id if isinstance(old_id, str) else None), sid

    # -- turns ---------------------------------------------------------------------------------

    def submit(
        self, key: str, text: str, *, mode: QueueMode | None = None, listener: Listener | None = None
    ) -> asyncio.Future[TurnResult]:
        """Queue a message for ``key``; the future resolves with the turn that took it.

        Raises:
            UsageError: an empty or oversized message, or a bad session key.
            QueueFullError: see :class:`Lane`.
        """
        msg = user_message(text, max_bytes=self.settings.max_message_bytes)
        lane = self.lane(key)
        if not lane.busy:
            self.decisions[key] = self.route(key, text)
        return lane.submit(msg, mode or self.settings.queue.mode, listener=listener)

    async def send(
        self, key: str, text: str, *, mode: QueueMode | None = None, listener: Listener | None = None
    ) -> TurnResult:
        """Queue a message and wait for the turn that answers it."""
        return await self.submit(key, text, mode=mode, listener=listener)

    async def run_turn(
        self, key: str, inputs: list[dict[str, Any]], control: TurnControl, *, listener: Listener | None = None
    ) -> TurnResult:
        """Run one turn on ``key`` now (lanes call this; one at a time per key)."""
        conv = self.conversation(key)
        provider, profile = self.provider()
        current = {"provider": provider.provider_name, "modelId": profile.model}
        if conv.context.model is not None and conv.context.model != current:
            # A swapped model is recorded on the path, as Pi records a switch, before it answers.
            conv.append_model_change(provider.provider_name, profile.model)

        def listen(kind: str, payload: dict[str, Any]) -> None:
            if self.listener is not None:
                self.listener(kind, {"sessionKey": key, **payload})
            if listener is not None:
                listener(kind, payload)

        result = await run_turn(
            conv,
            inputs,
            provider=provider,
            profile=profile,
            settings=self.settings,
            tools=self.tools,
            ledger=self.ledger,
            workspace=self.paths.workspace,
            listener=listen if self.listener is not None or listener is not None else None,
            control=control,
            offload_sync=self._others_busy,
        )
        self._touch(key)
        return result

    def _others_busy(self) -> bool:
        # With one busy session a blocking fdatasync costs nobody anything and a thread hop
        # costs the turn; with several, the others' turns go on while the disk flushes.
        busy = 0
        for lane in self._lanes.values():
            busy += lane.busy
            if busy > 1:
                return True
        return False

    def _touch(self, key: str) -> None:
        # Activity clocks go to the catalog at most once a second, all busy keys in one write.
        self._dirty[key] = int(time.time() * 1000)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_later())

    async def _flush_later(self) -> None:
        await asyncio.sleep(1.0)
        await asyncio.to_thread(self._flush)

    def _flush(self) -> None:
        dirty, self._dirty = self._dirty, {}
        if dirty:
            self.catalog.upsert_many({k: {"lastInteractionAt": ms, "updatedAt": ms} for k, ms in dirty.items()})

    # -- jobs ----------------------------------------------------------------------------------

    def _job_event(self, job_id: str, event: str, details: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(f"job.{event}", {"agent": self.paths.agent_id, "jobId": job_id, **details})

    def start_job(self, key: str, text: str) -> str:
        """Run a turn in the background as a job; returns the job id at once."""
        msg = user_message(text, max_bytes=self.settings.max_message_bytes)
        jid = self.jobs.create(key)

        async def run() -> None:
            self.jobs.mark(jid, "running")
            try:
                result = await self.lane(key).submit(msg, "followup")
            except asyncio.CancelledError:
                self.jobs.mark(jid, "interrupted", error="the runtime stopped while the job was running")
                raise
            except Exception as exc:
                self.jobs.mark(jid, "failed", error=f"{type(exc).__name__}: {exc}")
                return
            if result.status == "ok":
                self.jobs.mark(jid, "succeeded", reply_entry_id=result.reply_entry_id)
            elif result.status == "aborted":
                self.jobs.mark(jid, "interrupted", error=result.error)
            else:
                self.jobs.mark(jid, "failed", error=result.error)

        self._job_tasks[jid] = asyncio.get_running_loop().create_task(run(), name=f"job {jid}")
        return jid

    async def wait_job(self, job_id: str) -> None:
        """Wait for a background job's task to end."""
        task = self._job_tasks.get(job_id)
        if task is not None:
            await asyncio.shield(task)


# Catalog fields of a finished run that must not follow the session into its successor.
_RUN_FIELDS = ("status", "endedAt", "abortedLastRun", "startedAt", "runId")


def _carryable(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in _RUN_FIELDS and k != "compactionCount"}


def _session_type(key: str) -> str:
    """``main`` for ``agent:<id>:main`` keys, else the key's third part (``group``, ``thread``, ...)."""
    parts = key.split(":")
    return parts[2] if len(parts) >= 3 and parts[0] == "agent" and parts[2] else "main"


_offset_cache: tuple[int, int] = (-1, 0)


def _local_offset_minutes(now_ms: int) -> int:
    """The gateway's UTC offset in minutes (looked up at most once a minute)."""
    global _offset_cache
    minute = now_ms // 60_000
    if _offset_cache[0] != minute:
        offset = dt.datetime.now().astimezone().utcoffset()
        _offset_cache = (minute, int(offset.total_seconds() // 60) if offset is not None else 0)
    return _offset_cache[1]
