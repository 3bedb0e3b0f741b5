"""What OpenClaw's own records say about a state: its reset policy, a key's window, a boundary's kind.

The answers behind :class:`~kurahi.runtimes.base.Agent`'s ``reset_policy``, ``window``,
``view`` and ``boundary`` for an OpenClaw state dir (and a Kurahi home, which shares its layout).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kurahi.errors import UsageError
from kurahi.locations.dirs import read_no_follow
from kurahi.runtimes.base import Boundary, ResetPolicy, View
from kurahi.runtimes.openclaw import layout
from kurahi.runtimes.openclaw.versions import of_era
from kurahi.runtimes.pi.facts import VIEW as PI_VIEW
from kurahi.runtimes.pieces import Lineage, Piece

__all__ = ["boundary", "config_window", "recorded_window", "reset_policy", "view_of_state"]


def view_of_state(root: Path, lineage: Lineage) -> View:
    """The view of the runtime that loads this state: the SQLite era's for a store, else the JSON era's or Pi's."""
    if "sqlite" in lineage.layout:
        return of_era("sqlite").view
    if (root / layout.CONFIG).is_file() or not (root / "config.json").is_file():
        return of_era("json").view
    return PI_VIEW  # a Kurahi home: its runtime projects the path as Pi does


def reset_policy(root: Path, sqlite_era: bool) -> ResetPolicy:
    """OpenClaw's reset policy as it resolves it (``reset-*.js`` / ``reset-policy-*.mjs``).

    Without a ``session.reset`` block the JSON era resets daily (a legacy ``session.idleMinutes``
    alone makes it idle) and the SQLite era does not reset by itself; a block without ``mode`` is daily.
    """
    path = root / layout.CONFIG
    if not path.is_file():
        return ResetPolicy()  # no config here: the policy OpenClaw ran with is not known
    try:
        config = json.loads(read_no_follow(path))
    except (UsageError, ValueError):
        config = {}
    session = config.get("session") if isinstance(config, dict) else None
    session = session if isinstance(session, dict) else {}
    reset = session.get("reset")
    if not isinstance(reset, dict):
        legacy = session.get("idleMinutes")
        if isinstance(legacy, (int, float)) and not isinstance(legacy, bool):
            return ResetPolicy("idle", float(legacy))
        return ResetPolicy("daily" if of_era("sqlite" if sqlite_era else "json").resets_by_itself else None)
    idle = reset.get("idleMinutes")
    mode = reset.get("mode", "daily")
    return ResetPolicy(
        mode if isinstance(mode, str) else None,
        float(idle) if isinstance(idle, (int, float)) and not isinstance(idle, bool) else None,
    )


def config_window(root: Path, agent: str) -> tuple[int, str] | None:
    """The window ``openclaw.json`` gives the agent's model, when there is a readable config that says."""
    from kurahi.runtimes.view import openclaw_context_window

    if not (root / layout.CONFIG).is_file():
        return None
    try:
        return openclaw_context_window(root, agent)
    except UsageError:
        return None


def recorded_window(entry: Any, where: str) -> tuple[int, str]:
    """The ``contextTokens`` OpenClaw recorded in a key's entry when it last ran, else its default."""
    from kurahi.runtimes.view import DEFAULT_CONTEXT_WINDOW

    value = entry.get("contextTokens") if isinstance(entry, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value, f"the contextTokens OpenClaw recorded in the {where} entry"
    return DEFAULT_CONTEXT_WINDOW, "OpenClaw's default (nothing in the state names a window)"


def boundary(
    lineage: Lineage, piece: Piece, after: Piece | None, policy: ResetPolicy, reasons: Mapping[str, str | None]
) -> Boundary:
    """The boundary after ``piece``, by what OpenClaw recorded (a reset entry inside it is the caller's)."""
    if piece.current:
        return Boundary(
            "moved",
            piece.last_ms,
            [f"the catalog's sessionFile is {lineage.moved_from}, outside {lineage.state_dir}"],
        )
    if any(rule.startswith("recovered key") for rule in piece.found_by) or (
        piece.db_path is None and "sqlite" in lineage.layout
    ):
        return Boundary(
            "migration", after.sort_ms if after else piece.last_ms, ["left behind by the upgrade to the SQLite store"]
        )
    if piece.kind == "reset-archive":
        return Boundary("reset", piece.archived_ms, ["a .reset. archive (OpenClaw renames a transcript on reset)"])
    if piece.kind == "deleted-archive":
        return Boundary("unknown", piece.archived_ms, ["a .deleted. archive"])
    at = after.sort_ms if after is not None else piece.last_ms
    reason = reasons.get(after.session_id) if after is not None and after.db_path else None
    if reason == "reset":
        return Boundary("reset", at, [f"session_windows reason reset for {after.session_id if after else '?'}"])
    gap_min = (at - piece.last_ms) / 60000 if at is not None and piece.last_ms is not None else None
    if piece.db_path and after is not None and after.db_path:
        recorded = f"session_windows: {after.session_id} follows it, reason {reason or 'not recorded'}"
    else:
        recorded = "an unreferenced transcript left in place"
    idle = policy.idle_minutes
    if policy.mode == "idle" and idle is not None and gap_min is not None and gap_min >= idle:
        return Boundary("idle", at, [recorded, f"{gap_min:.0f} min idle >= idleMinutes {idle:g}"])
    if policy.mode == "daily":
        return Boundary("daily", at, [recorded, "reset policy: daily"])
    if reason == "rollover" or piece.kind == "transcript" or (piece.db_path and after and after.db_path):
        return Boundary("rollover", at, [recorded, "cause not recorded"])
    return Boundary("unknown", at, [])
