"""Routing a message to its session: the freshness decision, and a rollover when it says so.

The decision itself is :func:`kurahi.lifecycle.freshness.policy.decide` (pure); this module gathers
its facts from the runtime's catalog and open sessions and carries out a rollover: a new
transcript linked to the old one (``parentSession``, ``previousSessionId``), carrying what
the policy asks (:mod:`kurahi.lifecycle.freshness.carry`), recorded as ``session.rollover``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kurahi.agent.config import AgentSettings
from kurahi.agent.conversation import Conversation, PathItem
from kurahi.agent.layout import AgentPaths
from kurahi.errors import KurahiError, LockHeldError
from kurahi.lifecycle.freshness.carry import carry_into
from kurahi.lifecycle.freshness.facts import session_facts
from kurahi.lifecycle.freshness.policy import Decision, Inbound, decide
from kurahi.pi.ids import session_id as new_session_id
from kurahi.store.base import AgentStore, SessionCatalog, transcript_name

__all__ = ["RoutingHost", "rollover", "route"]


class RoutingHost(Protocol):
    """What routing reads and asks of the runtime (:class:`~kurahi.agent.runtime.Runtime`).

    Routing decides; the runtime holds the sessions and does what it decides.
    """

    paths: AgentPaths
    settings: AgentSettings
    store: AgentStore
    catalog: SessionCatalog
    on_event: Callable[[str, dict[str, Any]], None] | None

    def conversation(self, key: str) -> Conversation:
        """The open session of ``key``, opening it if need be."""
        ...

    def open_conversation(self, key: str) -> Conversation | None:
        """The open session of ``key``, if one is open."""
        ...

    def detach_conversation(self, key: str) -> Conversation | None:
        """Take ``key``'s open session out of the runtime, still open."""
        ...

    def drop_conversation(self, key: str) -> None:
        """Close and forget ``key``'s open session."""
        ...

    def attach_conversation(self, key: str, conv: Conversation) -> None:
        """Make ``conv`` the open session of ``key``."""
        ...


def route(rt: RoutingHost, key: str, text: str) -> Decision:
    """Decide reuse / rollover / new for a message to an idle session, and carry it out."""
    entry = rt.catalog.get(key)
    conv = rt.open_conversation(key)
    if conv is not None and (conv.session.fenced or transcript_name(entry) not in (None, conv.name)):
        # Its writer's claim was taken (an activation on a shared store fences this gateway
        # off, then points the key at another session): nothing more can be written through
        # it. Let it go, so the key's session is opened afresh, as the catalog names it now.
        rt.drop_conversation(key)
        conv = None
    path: list[PathItem] | None = None
    header: str | None = None
    name = conv.name if conv is not None else transcript_name(entry)
    info = rt.store.transcripts.info(name) if name is not None else None
    if conv is not None:
        path, header = conv.path, conv.session_id
    elif entry is not None and info is not None:
        try:
            conv = rt.conversation(key)
            path, header = conv.path, conv.session_id
        except LockHeldError:
            raise  # another process writes this session: busy, never a reason to replace it
        except KurahiError:
            path = None  # missing, unreadable or not a session: the decision rolls it over
    facts = session_facts(
        entry, info.modified_ms if info is not None else None, path, header_id=header, session_type=_session_type(key)
    )
    now = int(time.time() * 1000)
    msg = Inbound(text, now, _local_offset_minutes(now))
    decision = decide(facts, msg, rt.settings.lifecycle)
    if decision.action != "reuse" and entry is not None:
        rollover(rt, key, decision)
    return decision


def rollover(rt: RoutingHost, key: str, decision: Decision) -> tuple[str | None, str]:
    """Replace ``key``'s session with a new one that carries what ``decision.carry`` asks; keep and link the old."""
    transcripts = rt.store.transcripts
    conv = rt.detach_conversation(key)
    if conv is None:
        name = transcript_name(rt.catalog.get(key))
        if name is not None and transcripts.exists(name):
            # Only the session's writer may replace it: take the old session's claim first (a
            # database shared by gateways: busy while another gateway holds it), and keep it
            # until the catalog names the new one, so nobody writes on in the old one unseen.
            try:
                rt.conversation(key)
            except LockHeldError:
                raise
            except KurahiError:
                pass  # unreadable or not a session: replaced without being opened, as before
            conv = rt.detach_conversation(key)
    old_entry = rt.catalog.get(key)
    try:
        return _replace(rt, key, decision, conv, old_entry)
    finally:
        if conv is not None:
            with contextlib.suppress(KurahiError):
                conv.close()


def _replace(
    rt: RoutingHost, key: str, decision: Decision, conv: Conversation | None, old_entry: Mapping[str, Any] | None
) -> tuple[str | None, str]:
    transcripts = rt.store.transcripts
    old_name = conv.name if conv is not None else transcript_name(old_entry)
    old_path: list[PathItem] | None = conv.path if conv is not None else None
    if conv is None and old_name is not None and decision.carry != "none":
        try:
            with transcripts.read(old_name) as t:
                old_path = [PathItem(e.id, e.type, e.data, e.line) for e in t.path()]
        except KurahiError:
            old_path = None  # unusable: nothing to carry
    old_id = old_entry.get("sessionId") if old_entry is not None else None
    sid = new_session_id()
    name = f"{sid}.jsonl"
    now = int(time.time() * 1000)
    old_exists = old_name is not None and transcripts.exists(old_name)
    parent = transcripts.locator(old_name) if old_name is not None and old_exists else None
    conv = Conversation.create_in(
        transcripts, name, fsync=rt.settings.fsync, cwd=str(rt.paths.workspace), session_id=sid, parent_session=parent
    )
    carried = None
    if old_path and decision.carry != "none" and isinstance(old_id, str) and parent is not None:
        carried = carry_into(
            old_path,
            conv.session,
            decision.carry,
            old_session_id=old_id,
            old_file=parent,
            keep_recent_tokens=rt.settings.compaction.keep_recent_tokens,
        )
        conv.reload()
    conv.sync()
    fields: dict[str, Any] = {
        "sessionId": sid,
        "sessionFile": name,
        "sessionStartedAt": now,
        "updatedAt": now,
        "lastInteractionAt": now,
    }
    if isinstance(old_id, str):
        fields["previousSessionId"] = old_id
    # The key moves on only from the session replaced here: if another writer switched it
    # meanwhile (possible only for one whose claim lapsed unseen), nothing is switched.
    switched = False

    def swap(cur: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        nonlocal switched
        if transcript_name(cur) != old_name:
            return cur
        switched = True
        return {**_carryable(cur or {}), **fields}

    rt.catalog.update(key, swap)
    if not switched:
        conv.close()
        raise LockHeldError(f"session {key!r} was switched by another writer meanwhile; nothing was replaced")
    rt.attach_conversation(key, conv)
    if rt.on_event is not None:
        rt.on_event(
            "session.rollover",
            {
                "agent": rt.paths.agent_id,
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
