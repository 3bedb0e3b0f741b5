"""Per-session lanes: one run at a time per session key, and what happens to messages that wait.

Modes for a message that arrives while its session is busy:

* ``steer``: handed to the running turn, which appends it at its next tool boundary so the
  model's next call in that same turn sees it ("don't change it yet" reaches the agent
  before it writes);
* ``followup``: waits and runs as its own turn afterwards;
* ``collect``: waits; once no new ``collect`` message has come for the debounce time, all of
  them run as one turn;
* ``interrupt``: stops the running turn (the abort is recorded in the transcript) and runs
  next.

A lane holds at most ``cap`` waiting messages; beyond that the drop policy refuses the new
one (``reject``) or drops the oldest waiting one (``drop-oldest``), and either way the
sender is told. Waiting messages are written to the agent's queue journal first, and each
one's entry in the transcript carries its queue id, so after a restart every message is
delivered exactly once: re-queued if its entry is missing, marked done if it is there.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from kurahi.agent.config import AgentSettings, QueueMode
from kurahi.agent.idempotency import KEY_FIELD, STEERED_FIELD
from kurahi.agent.turn import Listener, TurnControl, TurnResult
from kurahi.errors import LockHeldError, QueueFullError, StoreError, TurnInterruptedError
from kurahi.store.base import Backend, RecordLog

__all__ = ["Lane", "LaneHost", "Pending", "queue_extra"]


class LaneHost(Protocol):
    """What a :class:`Lane` uses of the runtime that owns it (:class:`~kurahi.agent.runtime.Runtime`)."""

    settings: AgentSettings
    backend: Backend

    async def run_turn(
        self, key: str, inputs: list[dict[str, Any]], control: TurnControl, *, listener: Listener | None = None
    ) -> TurnResult:
        """Run one turn on ``key`` now."""
        ...


def queue_extra(qid: str, idempotency_key: str | None = None) -> dict[str, Any]:
    """The entry-level field that ties a transcript entry to its queued message (and its idempotency key)."""
    meta: dict[str, Any] = {"queueId": qid}
    if idempotency_key is not None:
        meta[KEY_FIELD] = idempotency_key
    return {"kurahi": meta}


@dataclass
class Pending:
    """A message on its way into a turn."""

    qid: str
    message: dict[str, Any]
    mode: QueueMode
    future: asyncio.Future[TurnResult]
    at: float = field(default_factory=time.monotonic)
    persisted: bool = False
    listener: Listener | None = None
    """Told about the entries and streamed text of the turn that takes this message."""
    job_id: str | None = None
    """The job the message belongs to, if any."""
    idempotency_key: str | None = None
    """Stored with the message's entry: the same message sent again finds its turn (see idempotency)."""
    lookup: bool = False
    """Whether the key may be on the path already (the sender gave it; one made here is new)."""

    def item(self) -> dict[str, Any]:
        """The turn's input for this message."""
        return {"message": self.message, "extra": queue_extra(self.qid, self.idempotency_key), "lookup": self.lookup}


class Lane:
    """The queue and the running turn of one session key."""

    def __init__(self, runtime: LaneHost, key: str, journal: RecordLog) -> None:
        self.rt = runtime
        self.key = key
        self.journal = journal
        self.waiting: deque[Pending] = deque()
        self.control: TurnControl | None = None
        self.turn_task: asyncio.Task[TurnResult] | None = None
        self._pump_task: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        """A turn is running or messages are waiting."""
        return self._pump_task is not None and not self._pump_task.done()

    def submit(
        self,
        message: dict[str, Any],
        mode: QueueMode,
        *,
        qid: str | None = None,
        listener: Listener | None = None,
        job_id: str | None = None,
        idempotency_key: str | None = None,
        lookup: bool = False,
    ) -> asyncio.Future[TurnResult]:
        """Hand a user message to the lane; the future resolves with the turn that took it.

        Args:
            message: the user message.
            mode: what to do if the lane is busy.
            qid: the queue id of a message recovered from the journal (already accepted once:
                the cap does not apply to it again).
            listener: told about the turn's entries and text.
            job_id: the job this message belongs to (recorded, so a restart can tell).
            idempotency_key: stored with the message's entry (see :class:`Pending`).
            lookup: the key may be stored already (it came from the sender): look for it first.

        Raises:
            QueueFullError: the lane is at its cap and the drop policy is ``reject``.
        """
        loop = asyncio.get_running_loop()
        p = Pending(
            qid or "q_" + secrets.token_hex(8),
            message,
            mode,
            loop.create_future(),
            persisted=qid is not None,
            listener=listener,
            job_id=job_id,
            idempotency_key=idempotency_key,
            lookup=lookup,
        )
        if not self.busy:
            self.waiting.append(p)
            self._start()
            return p.future
        settings = self.rt.settings.queue
        c = self.control
        if mode == "steer" and c is not None and c.phase != "idle":
            self._persist(p)
            item = p.item()
            item["extra"]["kurahi"][STEERED_FIELD] = True  # part of the running turn (see idempotency)
            c.steer.append({**item, "pending": p})
            return p.future
        if len(self.waiting) >= settings.cap and qid is None:
            if settings.drop == "reject":
                raise QueueFullError(f"session {self.key!r} has {settings.cap} messages waiting (the cap)")
            dropped = self.waiting.popleft()
            self.journal.append({"op": "dropped", "qid": dropped.qid, "ts": _now()})
            if not dropped.future.done():
                dropped.future.set_result(TurnResult("error", error="dropped: the session's queue was full"))
        self._persist(p)
        if mode == "interrupt":
            self.waiting.appendleft(p)
            self.interrupt()
        else:
            self.waiting.append(p)
        return p.future

    def interrupt(self, reason: str = "interrupted by a newer message") -> bool:
        """Stop the running turn: at once during a model call, after the tool during a tool call."""
        c, task = self.control, self.turn_task
        if c is None or task is None or task.done():
            return False
        c.stop_reason = reason
        if c.phase == "model":
            task.cancel()
        else:
            c.stop_requested = True
        return True

    def _persist(self, p: Pending) -> None:
        if not p.persisted:
            rec = {"op": "put", "qid": p.qid, "key": self.key, "mode": p.mode, "message": p.message, "ts": _now()}
            rec["gateway"] = self.rt.backend.instance
            if p.job_id is not None:
                rec["job"] = p.job_id
            if p.idempotency_key is not None:
                rec[KEY_FIELD] = p.idempotency_key
            self.journal.append(rec)
            p.persisted = True

    def _start(self) -> None:
        self._pump_task = asyncio.get_running_loop().create_task(self._pump(), name=f"lane {self.key}")

    async def _pump(self) -> None:
        debounce = self.rt.settings.queue.debounce_ms / 1000
        while self.waiting:
            head = self.waiting[0]
            if head.mode == "collect":
                while True:
                    latest = max(p.at for p in self.waiting if p.mode == "collect")
                    delay = latest + debounce - time.monotonic()
                    if delay <= 0:
                        break
                    await asyncio.sleep(delay)
                batch = [p for p in self.waiting if p.mode == "collect"]
                self.waiting = deque(p for p in self.waiting if p.mode != "collect")
            else:
                batch = [self.waiting.popleft()]
            await self._run(batch)

    async def _run(self, batch: list[Pending]) -> None:
        steered: list[Pending] = []

        def taken(items: list[dict[str, Any]]) -> None:
            steered.extend(i["pending"] for i in items if "pending" in i)

        control = TurnControl(on_steer_taken=taken)
        self.control = control
        inputs = [p.item() for p in batch]

        def fan_out(kind: str, payload: dict[str, Any]) -> None:
            for p in (*batch, *steered):
                if p.listener is not None:
                    p.listener(kind, payload)

        wanted = any(p.listener is not None for p in batch) or any(
            isinstance(i.get("pending"), Pending) and i["pending"].listener is not None for i in control.steer
        )
        try:
            self.turn_task = asyncio.get_running_loop().create_task(
                self.rt.run_turn(self.key, inputs, control, listener=fan_out if wanted else None)
            )
            try:
                result = await asyncio.shield(self.turn_task)
            except asyncio.CancelledError:
                # The lane itself is being shut down: let the turn record its abort, then go.
                if not self.turn_task.done():
                    self.interrupt("the runtime stopped (gateway shutdown) while the turn was running")
                    result = await self.turn_task
                else:
                    result = self.turn_task.result()
                self._finish(batch + steered, result)
                raise
        except (LockHeldError, TurnInterruptedError) as exc:
            # The session belongs to another writer now (a gateway took it over), or its store
            # failed under the turn (the runtime says what was stored): these messages were not
            # answered here. Their senders hear
            # why (busy, or the store unavailable, and what was stored) and may send them again,
            # here or where the session lives, so the journal drops them: a restart must not
            # deliver them again. A journal that cannot be written (the same store, away) keeps
            # them; a redelivery then carries their idempotency key and finds what was stored.
            for p in batch + steered:
                if p.persisted:
                    with contextlib.suppress(StoreError):
                        self.journal.append(
                            {"op": "dropped", "qid": p.qid, "reason": f"not answered here: {exc}", "ts": _now()}
                        )
                if not p.future.done():
                    p.future.set_exception(exc)
            self.control = None
            self.turn_task = None
            return
        except Exception as exc:  # an error outside the turn's own handling: tell every sender
            result = TurnResult("error", error=f"{type(exc).__name__}: {exc}")
        finally:
            self.control = None
            self.turn_task = None
        # Steered messages the turn never reached run next, in order, as follow-ups.
        for item in reversed(control.steer):
            pending = item["pending"]
            pending.mode = "followup"
            self.waiting.appendleft(pending)
        self._finish(batch + steered, result)

    def _finish(self, done: list[Pending], result: TurnResult) -> None:
        persisted = [p.qid for p in done if p.persisted]
        if persisted:
            # A journal that cannot be written now (its database away) must not keep the
            # senders from their answers: the entries carry the queue ids, so a restart finds
            # these messages delivered and marks them done then.
            with contextlib.suppress(StoreError):
                self.journal.append({"op": "done", "qids": persisted, "ts": _now()})
        for p in done:
            if not p.future.done():
                p.future.set_result(result)

    async def wait_idle(self) -> None:
        """Return once no turn runs and nothing waits."""
        while self._pump_task is not None and not self._pump_task.done():
            await asyncio.shield(self._pump_task)

    async def close(self) -> None:
        """Interrupt the running turn (its abort is recorded) and stop; waiting messages stay queued."""
        task = self._pump_task
        if task is None or task.done():
            return
        self.waiting.clear()  # they stay in the journal and run after the next start
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def pending_from_journal(journal: RecordLog, live: frozenset[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Messages put in the journal and neither done nor dropped, by session key, in order.

    ``live``: the writers alive now; messages one of them queued are its own to deliver and
    are left out (``None``: no other writer).
    """
    puts: dict[str, dict[str, Any]] = {}
    for rec in journal.records():
        op = rec.get("op")
        if op == "put" and isinstance(rec.get("qid"), str):
            puts[rec["qid"]] = rec
        elif op == "done":
            qids = rec.get("qids")
            # A hand-edited record of the wrong shape settles nothing (it must not stop the start).
            for q in qids if isinstance(qids, list) else ():
                if isinstance(q, str):
                    puts.pop(q, None)
        elif op == "dropped" and isinstance(rec.get("qid"), str):
            puts.pop(rec["qid"], None)
    out: dict[str, list[dict[str, Any]]] = {}
    for rec in puts.values():
        if live is not None and rec.get("gateway") in live:
            continue
        key = rec.get("key")
        if isinstance(key, str):  # a record without a usable key names no session: left as it is
            out.setdefault(key, []).append(rec)
    return out


def _now() -> int:
    return int(time.time() * 1000)
