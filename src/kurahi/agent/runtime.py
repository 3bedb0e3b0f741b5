"""The runtime of one agent: its sessions, lanes, ledger, jobs and model, in one event loop.

Usage::

    rt = Runtime(home, "alice")
    await rt.start()                 # settles what the last stop left: jobs, queue, tool calls
    result = await rt.send("agent:alice:main", "hello")
    job_id = rt.start_job("agent:alice:main", "summarize my notes")
    await rt.close()

Sessions are found through the agent's ``sessions.json`` by key and created on first use.
The catalog's activity clocks are written after turns, at most once a second per key (and
at close), so a busy session does not pay for a catalog rewrite on every turn. When that
write fails (a full disk, a damaged lock file), the clocks are kept and retried, and every
later turn of the agent is refused (:class:`~kurahi.errors.CatalogWriteError`, nothing
appended) until they can be written: chats are not acknowledged while their clocks cannot
be kept. At close, clocks that still cannot be written are named in :attr:`Runtime.close_problem`
instead of failing the close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from kurahi.agent import routing
from kurahi.agent.config import Config, ModelProfile, QueueMode, load_config
from kurahi.agent.conversation import Conversation
from kurahi.agent.idempotency import KEY_FIELD, check_idempotency_key, interrupted, not_yet_stored
from kurahi.agent.jobs import JobStatus, JobStore
from kurahi.agent.layout import AgentPaths, check_session_key
from kurahi.agent.ledger import Ledger
from kurahi.agent.pairing import Settlement, settle
from kurahi.agent.providers.base import Provider
from kurahi.agent.queue import Lane, pending_from_journal
from kurahi.agent.tools import BUILTIN_TOOLS, Tool
from kurahi.agent.turn import Listener, RetryHook, TurnControl, TurnResult, run_turn, user_message
from kurahi.errors import (
    AppendOutcomeUnknownError,
    AuditError,
    CatalogWriteError,
    ConfigError,
    KurahiError,
    LeaseLostError,
    LockHeldError,
    PairingRefusedError,
    StoreDatabaseError,
    StoreError,
    store_unreachable,
)
from kurahi.fs.durable import FsyncPolicy
from kurahi.lifecycle.freshness.carry import Carry
from kurahi.lifecycle.freshness.policy import Decision
from kurahi.pi.ids import session_id as new_session_id
from kurahi.store.base import Backend, transcript_name
from kurahi.store.open import default_backend

__all__ = ["Runtime", "make_provider"]

_log = logging.getLogger(__name__)
_MARK_TRIES = 30
"""Seconds (one try a second) a job's state change waits for a store that is away."""


def make_provider(name: str, profile: ModelProfile) -> Provider:
    """The provider for a model profile.

    Raises:
        ConfigError: the profile names an API key variable that is not set.
    """
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
            require_key=profile.api_key_env is not None,
        )
    if profile.provider == "anthropic":
        from kurahi.agent.providers.anthropic_messages import AnthropicProvider

        return AnthropicProvider(
            profile.model,
            base_url=profile.base_url,
            api_key_env=profile.api_key_env or "ANTHROPIC_API_KEY",
            timeout=profile.timeout_s,
            require_key=profile.api_key_env is not None,
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
        backend: where sessions, the catalog and the record logs live (default: files in
            ``home``); the workspace and config are files in ``home`` whatever the backend.
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
        backend: Backend | None = None,
    ) -> None:
        self.paths = AgentPaths.of(home, agent_id).ensure()
        self.backend = backend if backend is not None else default_backend(home)
        self.store = self.backend.agent(agent_id, create=True)
        self.on_event = on_event
        self.config = config if config is not None else load_config(home)
        self.settings = self.config.agent(agent_id)
        self.model_name = self.settings.model
        durable = self.settings.fsync != "never"
        self.ledger = Ledger(self.store.log("ledger", durable=durable))
        self.jobs = JobStore(
            self.store.log("jobs", durable=durable), on_mark=self._job_event, instance=self.backend.instance
        )
        self.queue_journal = self.store.log("queue", durable=durable)
        self.catalog = self.store.catalog
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
        self.catalog_fault: KurahiError | None = None
        """Why the last write of the activity clocks failed (``None`` once one succeeds)."""
        self.close_problem: str | None = None
        """What :meth:`close` could not do (clocks it could not write), for the caller to report."""
        self._opening: dict[str, asyncio.Future[None]] = {}
        self._open_locks: dict[str, threading.Lock] = {}
        """Keys whose session is being opened off the event loop (see :meth:`send`)."""
        self.decisions: dict[str, Decision] = {}
        """The last freshness decision per session key."""
        self.open_errors: dict[str, str] = {}
        """Sessions :meth:`start` could not open, with the reason."""
        self.recovered: dict[str, Any] | None = None
        """What :meth:`start` found and did (``None`` before it ran)."""
        self.settlements: list[Settlement] = []
        """Every repair the pairing guard made when sessions were opened."""
        self.on_turn: Callable[[TurnResult, float], None] | None = None
        """Told of every turn that ran, with its duration in seconds (metrics)."""
        self.on_retry: RetryHook | None = None
        """Told of every retried model call (metrics)."""

    # -- start and stop ----------------------------------------------------------------------

    async def start(self) -> dict[str, Any]:
        """Settle what the last stop left behind; returns what was done.

        Jobs left ``queued``/``running`` by dead writers become ``interrupted``; every session
        in the catalog is opened, so the pairing guard answers its unanswered tool calls (on a
        store gateways share, a session is opened when it is asked for instead); queued
        messages whose entry is already in their transcript are marked done and the others are
        queued again. A session that cannot be opened is reported in ``openErrors`` and left
        as it is; so are the queued messages of a dead writer on a session a live gateway has
        taken over, counted in ``queuedElsewhere``.
        """
        if self.recovered is not None:
            return self.recovered  # started already: recovering twice would queue messages twice
        # What dead writers left is settled here; a live gateway on the same database keeps its own.
        live = self.backend.live_instances()
        interrupted = self.jobs.recover(live)
        # Open every session now, not on its first message: the pairing guard runs on open,
        # so no transcript is left with an unanswered tool call while it waits for a message.
        # Not on a store other gateways share: a gateway (re)starting would take every session
        # that is free at that moment and serve none until all were open, while the gateways
        # already running could have; there a session is opened, and settled, by whichever
        # gateway it is next asked of.
        for key, _ in self.catalog.items() if live is None else ():
            try:
                self.conversation(key)
            except (KurahiError, OSError) as exc:
                self.open_errors[key] = str(exc)
        requeued = 0
        held_elsewhere = 0
        for key, recs in pending_from_journal(self.queue_journal, live).items():
            try:
                conv = self.conversation(key)
            except LockHeldError as exc:
                # A live gateway on the same database holds the session (it took it over from
                # the dead writer that queued these): they stay queued, for a start that can
                # open it; failing here would keep this gateway from starting at all.
                self.open_errors.setdefault(key, str(exc))
                held_elsewhere += 1
                continue
            except (KurahiError, OSError) as exc:
                # One damaged session (a transcript that cannot be opened for writing) or one
                # damaged record (a key no session can have) disables that session only: its
                # messages stay queued, untouched, and every other session starts.
                where = getattr(self.queue_journal, "path", self.queue_journal.name)
                self.open_errors.setdefault(key, f"{len(recs)} queued message(s) in {where} left queued: {exc}")
                continue
            seen = {
                (p.data.get("kurahi") or {}).get("queueId") for p in conv.path if isinstance(p.data.get("kurahi"), dict)
            }
            done = [r["qid"] for r in recs if r["qid"] in seen]
            if done:
                self.queue_journal.append({"op": "done", "qids": done, "ts": int(time.time() * 1000)})
            for r in recs:
                if r["qid"] not in seen and r.get("job") is not None:
                    # Its job was just marked interrupted; running the message anyway would do
                    # work the job says was not done.
                    self.queue_journal.append(
                        {
                            "op": "dropped",
                            "qid": r["qid"],
                            "reason": "its job was interrupted",
                            "ts": int(time.time() * 1000),
                        }
                    )
                elif r["qid"] not in seen and isinstance(r.get("message"), dict):
                    ik = r.get(KEY_FIELD)
                    # A key kept with it: the sender may have sent it again elsewhere meanwhile.
                    ik = ik if isinstance(ik, str) else None
                    self.lane(key).submit(
                        r["message"], "followup", qid=r["qid"], idempotency_key=ik, lookup=ik is not None
                    )
                    requeued += 1
        self.recovered = {
            "interruptedJobs": interrupted,
            "requeuedMessages": requeued,
            "queuedElsewhere": held_elsewhere,
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
        jobs = list(self._job_tasks.values())
        for t in jobs:
            t.cancel()
        # Let each cancelled job record that it was interrupted before its store is closed.
        await asyncio.gather(*jobs, return_exceptions=True)
        if self._flusher is not None and not self._flusher.done():
            self._flusher.cancel()
        unsaved = sorted(self._dirty)
        try:
            self._flush()
        except KurahiError as exc:
            # The turns are stored; only their activity clocks are lost. Said, not raised: a
            # close that fails here would leave every file below open and the process a traceback.
            self.close_problem = (
                f"agent {self.paths.agent_id}: the activity clocks of {len(unsaved)} session(s) "
                f"({', '.join(unsaved[:5])}) could not be written to the catalog (the turns are stored): {exc}"
            )
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
        # A key's session may be opened off the event loop (:meth:`send`) while the loop asks
        # for it too (a job, a reset): the second waits for the first and gets its session.
        with self._open_locks.setdefault(key, threading.Lock()):
            conv = self._convs.get(key)
            if conv is not None:
                return conv
            return self._open_and_settle(key)

    def _open_and_settle(self, key: str) -> Conversation:
        conv = self._open_or_create(key)
        # Handed out only once settled: a turn must never run on a session whose pairing
        # guard is still at work (in another thread), and one that failed is closed, so the
        # next message opens and settles it again instead of being served unsettled.
        try:
            # Policy "refuse" leaves the calls as they are; every turn on the session then says why it will not run.
            with contextlib.suppress(PairingRefusedError):
                self.settlements.extend(
                    settle(conv, self.ledger, self.tools, self.paths.workspace, policy=self.settings.pairing)
                )
            conv.sync()
        except BaseException:
            with contextlib.suppress(KurahiError):
                conv.close()
            raise
        self._convs[key] = conv
        return conv

    def _open_or_create(self, key: str) -> Conversation:
        """Open the session the catalog names for ``key``, or create one and name it there.

        Several gateways may share the catalog (a database store), and the key's session is
        switched only by a writer holding it (a reset holds the old session's claim, see
        :func:`kurahi.agent.routing.rollover`). So the catalog is read again once the session
        is ours: a session the key left meanwhile (reset elsewhere between the read and the
        open) is let go and the new one opened. A new session is named in the catalog only if
        the entry is still the one read (compare-and-set): of two gateways creating the
        key's first session at once, one wins and the other opens the winner's.

        Raises:
            LockHeldError: another writer holds the session (or keeps switching it).
        """
        fsync = self.settings.fsync
        transcripts = self.store.transcripts
        for _ in range(5):
            entry = self.catalog.get(key)
            name = transcript_name(entry)
            if name is not None and transcripts.exists(name):
                conv = Conversation.open_in(transcripts, name, fsync=fsync)
                if transcript_name(self.catalog.get(key)) == name:
                    return conv
                conv.close()  # the key moved on to another session while we opened this one
                continue
            now = int(time.time() * 1000)
            sid = new_session_id()
            name = f"{sid}.jsonl"
            conv = Conversation.create_in(transcripts, name, fsync=fsync, cwd=str(self.paths.workspace), session_id=sid)
            fields = {
                "sessionId": sid,
                "sessionFile": name,
                "sessionStartedAt": now,
                "lastInteractionAt": now,
                "updatedAt": now,
            }
            if self.catalog.compare_and_set(key, entry, {**dict(entry or {}), **fields}):
                return conv
            conv.close()  # another writer named a session for the key first: use that one
        raise LockHeldError(f"session {key!r} keeps being switched by another writer; try again")

    def open_conversation(self, key: str) -> Conversation | None:
        """``key``'s session if it is open now (never opens one)."""
        return self._convs.get(key)

    def detach_conversation(self, key: str) -> Conversation | None:
        """Take ``key``'s open session out of the runtime (a rollover closes it and attaches another)."""
        return self._convs.pop(key, None)

    def drop_conversation(self, key: str) -> None:
        """Close ``key``'s open session without writing to it (its writer's claim is gone)."""
        conv = self._convs.pop(key, None)
        if conv is not None:
            with contextlib.suppress(KurahiError):
                conv.close()

    def attach_conversation(self, key: str, conv: Conversation) -> None:
        """Make ``conv`` the open session of ``key``."""
        self._convs[key] = conv

    def lane(self, key: str) -> Lane:
        """The lane of a session key."""
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = Lane(self, check_session_key(key), self.queue_journal)
        return lane

    def queue_load(self) -> tuple[int, int]:
        """``(messages waiting in the lanes, sessions busy)`` right now (read by metrics at scrape time)."""
        waiting = busy = 0
        for lane in list(self._lanes.values()):
            waiting += len(lane.waiting)
            busy += lane.busy
        return waiting, busy

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
        return routing.route(self, key, text)

    def _rollover(self, key: str, decision: Decision) -> tuple[str | None, str]:
        return routing.rollover(self, key, decision)

    # -- turns ---------------------------------------------------------------------------------

    def submit(
        self,
        key: str,
        text: str,
        *,
        mode: QueueMode | None = None,
        listener: Listener | None = None,
        job_id: str | None = None,
        idempotency_key: str | None = None,
        lookup: bool = True,
    ) -> asyncio.Future[TurnResult]:
        """Queue a message for ``key``; the future resolves with the turn that took it.

        Args:
            key: the session key.
            text: the message.
            mode: what to do if the session is busy (default: the agent's queue mode).
            listener: told about the turn's entries and streamed text.
            job_id: the job the message belongs to.
            idempotency_key: stored with the message; a message sent again with the same key
                is answered from the turn stored for it (:mod:`kurahi.agent.idempotency`).
            lookup: look for the key on the session first (``False`` for a key just made).

        Raises:
            UsageError: an empty or oversized message, a bad session key or idempotency key.
            QueueFullError: see :class:`Lane`.
        """
        msg = user_message(text, max_bytes=self.settings.max_message_bytes)
        if idempotency_key is not None:
            check_idempotency_key(idempotency_key)
        lane = self.lane(key)
        if not lane.busy:
            self.decisions[key] = self.route(key, text)
        return lane.submit(
            msg,
            mode or self.settings.queue.mode,
            listener=listener,
            job_id=job_id,
            idempotency_key=idempotency_key,
            lookup=lookup and idempotency_key is not None,
        )

    async def send(
        self,
        key: str,
        text: str,
        *,
        mode: QueueMode | None = None,
        listener: Listener | None = None,
        idempotency_key: str | None = None,
        lookup: bool = True,
    ) -> TurnResult:
        """Queue a message and wait for the turn that answers it (arguments as :meth:`submit`).

        Raises:
            CatalogWriteError: the agent's catalog cannot be written (nothing queued or appended).
        """
        if self.catalog_fault is not None:
            await self._clocks_or_refuse()  # refused before it is queued: the caller gets the error itself
        await self._open_off_the_loop(key)
        return await self.submit(
            key, text, mode=mode, listener=listener, idempotency_key=idempotency_key, lookup=lookup
        )

    async def _open_off_the_loop(self, key: str) -> None:
        """Open ``key``'s session in a worker thread if it is not open yet (errors are left to the turn).

        Opening a session is reading it and running the pairing guard: store round trips that
        would otherwise hold the event loop, and every other session this gateway serves,
        while a gateway takes over the sessions of one that died. Done here, the opens of
        several sessions overlap and the loop goes on serving; whatever fails is left for
        :meth:`submit`, which opens it again on the loop and answers as it always has.
        """
        lane = self._lanes.get(key)
        if key in self._convs or (lane is not None and lane.busy):
            return
        running = self._opening.get(key)
        if running is not None:
            await asyncio.shield(running)
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._opening[key] = done
        try:
            with contextlib.suppress(KurahiError):
                await asyncio.to_thread(self._open_existing, key)
        finally:
            del self._opening[key]
            done.set_result(None)

    def _open_existing(self, key: str) -> None:
        # Only a session the catalog names and that exists: what routing would open anyway.
        # A key without one is left to routing, which decides how its first session starts.
        name = transcript_name(self.catalog.get(key))
        if name is not None and self.store.transcripts.exists(name):
            self.conversation(key)

    async def run_turn(
        self, key: str, inputs: list[dict[str, Any]], control: TurnControl, *, listener: Listener | None = None
    ) -> TurnResult:
        """Run one turn on ``key`` now (lanes call this; one at a time per key).

        A message whose idempotency key is on the session already is not appended again: the
        stored turn's answer is given again, or, if that turn broke off, it goes on from what
        is stored. A session whose writer's claim turns out to be gone before this turn wrote
        anything (an activation on a shared store replaced it in place and let it go) is
        opened afresh once, and the turn runs there; one that another gateway holds answers
        busy. When the store fails under the turn (a database gone, a lease taken over after
        the turn wrote something) the session is let go, so that the next message opens it
        again from what the store holds, and the caller hears what was stored.

        Raises:
            LockHeldError: another writer holds the session and nothing of this turn was stored.
            TurnInterruptedError: the store failed under the turn (it says whether anything was stored).
        """
        if self.catalog_fault is not None:
            await self._clocks_or_refuse()
        for last in (False, True):
            conv = self._open_for_turn(key, inputs)
            before = conv.session.entry_count
            todo, stored = not_yet_stored(conv.path, inputs)
            if stored is not None and stored.result is not None and not todo:
                stored.result.session_id = conv.session_id
                return stored.result  # answered before: nothing is appended, nothing runs
            try:
                result = await self._turn_on(conv, key, todo, control, listener)
            except LockHeldError as exc:
                # This writer lost the session (a lease taken over): nothing more may be written
                # through it. Drop it, so the session is opened afresh, as busy while another
                # gateway holds it.
                self.drop_conversation(key)
                wrote = conv.session.entry_count != before
                if wrote or stored is not None:
                    raise interrupted(inputs, exc, stored=True, unavailable=False) from exc
                if last or not isinstance(exc, LeaseLostError):
                    raise
                continue
            except AuditError:
                raise  # a StoreError, but not this session's store: it does not interrupt the turn
            except StoreError as exc:
                self.drop_conversation(key)
                wrote = conv.session.entry_count != before or stored is not None
                known = wrote or not isinstance(exc, AppendOutcomeUnknownError)
                raise interrupted(inputs, exc, stored=True if wrote else (False if known else None)) from exc
            if stored is not None:
                result.entries[:0] = stored.entries
            result.session_id = conv.session_id
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _open_for_turn(self, key: str, inputs: list[dict[str, Any]]) -> Conversation:
        """The key's session for a turn; a database out of reach interrupts the turn (nothing stored).

        Any other error opening it (a damaged transcript, another writer holding it) is the
        turn's answer as it always was.
        """
        try:
            return self.conversation(key)
        except StoreError as exc:
            if isinstance(exc, (LockHeldError, AuditError)) or not store_unreachable(exc):
                raise
            raise interrupted(inputs, exc, stored=False) from exc

    async def _turn_on(
        self,
        conv: Conversation,
        key: str,
        inputs: list[dict[str, Any]],
        control: TurnControl,
        listener: Listener | None,
    ) -> TurnResult:
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

        started = time.perf_counter()
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
            on_retry=self.on_retry,
        )
        self._touch(key)
        if self.on_turn is not None:
            self.on_turn(result, time.perf_counter() - started)
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
        # A key touched while the flush ran in its thread found this task not yet done and
        # started no other: go round again for it, or its clock would wait for the next turn.
        while True:
            await asyncio.sleep(1.0)
            dirty, self._dirty = self._dirty, {}
            try:
                await asyncio.to_thread(self._write_activity, dirty)
            except KurahiError as exc:
                # The store is away (a database that dropped, a catalog that cannot be written):
                # nobody waits for these clocks, so they are kept for the next round (newer ones
                # win) instead of failing a task nobody awaits; turns are refused meanwhile.
                self._dirty = {**dirty, **self._dirty}
                self.catalog_fault = exc
            else:
                self.catalog_fault = None
            if not self._dirty:
                return

    async def _clocks_or_refuse(self) -> None:
        """Write the clocks a failed flush kept, or refuse the turn (nothing appended).

        Raises:
            CatalogWriteError: they still cannot be written (a database error as it is).
        """
        dirty, self._dirty = self._dirty, {}
        try:
            await asyncio.to_thread(self._write_activity, dirty)
        except KurahiError as exc:
            self._dirty = {**dirty, **self._dirty}
            self.catalog_fault = exc
            if isinstance(exc, StoreDatabaseError):
                raise
            raise CatalogWriteError(
                f"the session catalog cannot be written ({exc}), so this agent's chats are refused until it "
                "can be (nothing was appended); earlier turns are stored, their activity clocks are retried"
            ) from exc
        self.catalog_fault = None

    def _flush(self) -> None:
        dirty, self._dirty = self._dirty, {}
        self._write_activity(dirty)

    def _write_activity(self, dirty: dict[str, int]) -> None:
        if dirty:
            self.catalog.upsert_many({k: {"lastInteractionAt": ms, "updatedAt": ms} for k, ms in dirty.items()})

    # -- jobs ----------------------------------------------------------------------------------

    def _job_event(self, job_id: str, event: str, details: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(f"job.{event}", {"agent": self.paths.agent_id, "jobId": job_id, **details})

    def start_job(self, key: str, text: str) -> str:
        """Run a turn in the background as a job; returns the job id at once.

        Raises:
            UsageError: an empty or oversized message, or a bad session key (before any job exists).
        """
        user_message(text, max_bytes=self.settings.max_message_bytes)  # refuse bad input now, not in the job
        check_session_key(key)
        jid = self.jobs.create(key)

        async def mark(state: JobStatus, **kw: Any) -> None:
            # The jobs log may be in a database that is away for a moment: try again for a
            # while rather than let the task die with nobody to hear it (a traceback in the log).
            for attempt in range(_MARK_TRIES):
                try:
                    self.jobs.mark(jid, state, **kw)
                    return
                except AuditError:
                    raise  # as before the audit chain was a StoreError: not the jobs log's to retry
                except StoreError as exc:
                    if attempt == _MARK_TRIES - 1:
                        _log.warning("job %s: could not record %s: %s", jid, state, exc)
                        return
                await asyncio.sleep(1.0)

        async def run() -> None:
            await mark("running")
            try:
                result = await self.submit(key, text, mode="followup", job_id=jid)  # routed like any message
            except asyncio.CancelledError:
                with contextlib.suppress(StoreError):  # stopping: no time to wait for a database
                    self.jobs.mark(jid, "interrupted", error="the runtime stopped while the job was running")
                raise
            except Exception as exc:
                await mark("failed", error=f"{type(exc).__name__}: {exc}")
                return
            if result.status == "ok":
                await mark("succeeded", reply_entry_id=result.reply_entry_id)
            elif result.status == "aborted":
                await mark("interrupted", error=result.error)
            else:
                await mark("failed", error=result.error)

        self._job_tasks[jid] = asyncio.get_running_loop().create_task(run(), name=f"job {jid}")
        return jid

    async def wait_job(self, job_id: str) -> None:
        """Wait for a background job's task to end."""
        task = self._job_tasks.get(job_id)
        if task is not None:
            await asyncio.shield(task)
