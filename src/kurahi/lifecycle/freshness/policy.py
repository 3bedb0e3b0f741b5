"""Freshness: for every inbound message, reuse the session, roll it over, or start a new one.

:func:`decide` is a pure function: facts about the session and the message in, a
:class:`Decision` out. The gateway calls it for every inbound message; tests call it for
every combination of its inputs (:mod:`kurahi.lifecycle.freshness.matrix`).

Reset modes (per session type, overridden per channel): ``none`` and ``manual`` never expire
a session; ``daily`` expires it at the first ``atHour`` (gateway-local) after its last
interaction; ``idle`` after ``idleMinutes`` without one; ``adaptive`` is both. ``/new`` and
``/reset`` are always obeyed. A clock in the future is ignored (it cannot be trusted), and
only ``lastInteractionAt`` (else ``sessionStartedAt``) counts as activity: ``updatedAt`` is
bookkeeping and never makes a session look fresh.

The rollover guard (on by default): a main session whose last run ended terminal (killed,
timed out, or without a final reply) and whose transcript was written after the catalog's
``updatedAt`` is, without the guard, rolled over even when fresh. That timing mismatch is
what an interrupted run leaves behind, not a reason to drop the live past, so with the
guard such a session is reused when it is otherwise fresh and usable. The guard never
keeps a stale session, never overrides ``/new`` or ``/reset``, and never reuses an unusable
entry (transcript missing or unreadable, header id not the entry's ``sessionId``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec

__all__ = [
    "Decision",
    "FreshnessConfig",
    "Inbound",
    "ResetPolicy",
    "SessionFacts",
    "decide",
    "explicit_command",
]

Action = Literal["reuse", "rollover", "new"]
LastRun = Literal["done", "killed", "timeout", "no-done", "none"]
Carry = Literal["lineage", "summary", "none"]
Kind = Literal["fresh", "no-session", "explicit-new", "explicit-reset", "daily", "idle", "unusable", "terminal-timing"]

_TERMINAL: tuple[LastRun, ...] = ("killed", "timeout", "no-done")


class ResetPolicy(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """When a session expires."""

    mode: Literal["none", "manual", "daily", "idle", "adaptive"] = "adaptive"
    at_hour: Annotated[int, msgspec.Meta(ge=0, le=23)] = 4
    """``daily``: the hour (0-23, gateway-local) at which sessions expire."""
    idle_minutes: Annotated[int, msgspec.Meta(ge=1)] = 24 * 60
    """``idle``: minutes without interaction after which a session expires."""


def _default_carry() -> dict[str, Carry]:
    return {"explicit-new": "none", "explicit-reset": "none", "daily": "lineage", "idle": "lineage"}


class FreshnessConfig(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """The freshness settings of an agent (``lifecycle`` in its config)."""

    default: ResetPolicy = msgspec.field(default_factory=ResetPolicy)
    by_type: dict[str, ResetPolicy] = msgspec.field(default_factory=dict)
    """Per session type (``main``, ``group``, ``thread``, ...)."""
    by_channel: dict[str, ResetPolicy] = msgspec.field(default_factory=dict)
    """Per channel; wins over the session type."""
    guard: bool = True
    """The rollover guard (see the module docstring)."""
    carry: dict[str, Carry] = msgspec.field(default_factory=_default_carry)
    """What a rolled-over session inherits, per reason: ``lineage``, ``summary`` or ``none``."""

    def policy_for(self, session_type: str, channel: str | None) -> ResetPolicy:
        """The policy of a session: its channel's, else its type's, else the default."""
        if channel is not None and channel in self.by_channel:
            return self.by_channel[channel]
        return self.by_type.get(session_type, self.default)


@dataclass(frozen=True)
class SessionFacts:
    """What is known about the session a message is for."""

    exists: bool = True
    """The catalog has an entry for the key."""
    session_type: str = "main"
    channel: str | None = None
    last_interaction_at: int | None = None
    """ms since the epoch."""
    session_started_at: int | None = None
    updated_at: int | None = None
    transcript_mtime: int | None = None
    """ms since the epoch; ``None`` when there is no transcript."""
    transcript_ok: bool = True
    """The transcript exists and opens as a session."""
    header_matches: bool = True
    """The transcript header's id is the entry's ``sessionId``."""
    last_run: LastRun = "done"
    """How the last run on the session ended (``none``: there was none)."""


@dataclass(frozen=True)
class Inbound:
    """The message being routed."""

    text: str
    now: int
    """ms since the epoch."""
    utc_offset_minutes: int = 0
    """The gateway's local offset from UTC, for ``daily``."""


@dataclass(frozen=True)
class Decision:
    """What to do with the session, and why."""

    action: Action
    kind: Kind
    reason: str
    carry: Carry = "none"
    guarded: bool = False
    """The rollover guard changed the outcome (a rollover became a reuse)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "action": self.action,
            "kind": self.kind,
            "reason": self.reason,
            "carry": self.carry,
            "guarded": self.guarded,
        }


def explicit_command(text: str) -> Literal["new", "reset"] | None:
    """``new`` or ``reset`` when the message is the command ``/new`` or ``/reset`` (alone, any case)."""
    word = text.strip().split(maxsplit=1)[0].lower() if text.strip() else ""
    return "new" if word == "/new" else "reset" if word == "/reset" else None


def _activity(facts: SessionFacts, now: int) -> int | None:
    for ts in (facts.last_interaction_at, facts.session_started_at):
        if ts is not None and ts <= now:
            return ts
    return None  # every clock is missing or in the future: nothing to judge staleness by


def _daily_boundary(now: int, at_hour: int, offset_min: int) -> int:
    """The most recent ``at_hour:00`` (local) at or before ``now``, in ms since the epoch."""
    key = (now // 60_000, at_hour, offset_min)
    hit = _BOUNDARIES.get(key)
    if hit is None:
        if len(_BOUNDARIES) > 64:
            _BOUNDARIES.clear()
        hit = _BOUNDARIES[key] = _boundary(now - now % 60_000, at_hour, offset_min)
    return hit


_BOUNDARIES: dict[tuple[int, int, int], int] = {}


def _boundary(now: int, at_hour: int, offset_min: int) -> int:
    tz = dt.timezone(dt.timedelta(minutes=offset_min))
    local = dt.datetime.fromtimestamp(now / 1000, tz)
    boundary = local.replace(hour=at_hour % 24, minute=0, second=0, microsecond=0)
    if boundary > local:
        boundary -= dt.timedelta(days=1)
    return int(boundary.timestamp() * 1000)


def _stale(policy: ResetPolicy, facts: SessionFacts, msg: Inbound) -> Kind | None:
    if policy.mode in ("none", "manual"):
        return None
    last = _activity(facts, msg.now)
    if last is None:
        return None
    if policy.mode in ("daily", "adaptive") and last < _daily_boundary(msg.now, policy.at_hour, msg.utc_offset_minutes):
        return "daily"
    if policy.mode in ("idle", "adaptive") and msg.now - last > policy.idle_minutes * 60_000:
        return "idle"
    return None


def decide(facts: SessionFacts, msg: Inbound, config: FreshnessConfig) -> Decision:
    """Reuse, roll over, or start new (see the module docstring for the rules)."""
    command = explicit_command(msg.text)
    if command == "new":
        return Decision(
            "new", "explicit-new", "the message asks for a new session", config.carry.get("explicit-new", "none")
        )
    if not facts.exists:
        return Decision("new", "no-session", "no session for this key yet")
    if command == "reset":
        return Decision(
            "rollover", "explicit-reset", "the message asks for a reset", config.carry.get("explicit-reset", "none")
        )
    if not facts.transcript_ok:
        return Decision("rollover", "unusable", "the transcript is missing or unreadable", "none")
    if not facts.header_matches:
        return Decision("rollover", "unusable", "the transcript's header id is not the entry's sessionId", "none")
    stale = _stale(config.policy_for(facts.session_type, facts.channel), facts, msg)
    if stale is not None:
        why = "past the daily reset hour since the last interaction" if stale == "daily" else "idle for too long"
        return Decision("rollover", stale, why, config.carry.get(stale, "lineage"))
    timing = (
        facts.session_type == "main"
        and facts.last_run in _TERMINAL
        and facts.transcript_mtime is not None
        and facts.updated_at is not None
        and facts.transcript_mtime > facts.updated_at
    )
    if timing:
        if config.guard:
            return Decision(
                "reuse",
                "fresh",
                f"fresh; the last run ended {facts.last_run} and the transcript is newer than the catalog "
                "(the rollover guard keeps the session)",
                guarded=True,
            )
        return Decision(
            "rollover",
            "terminal-timing",
            f"the last run ended {facts.last_run} and the transcript is newer than the catalog",
            config.carry.get("terminal-timing", "none"),
        )
    return Decision("reuse", "fresh", "fresh and usable")
