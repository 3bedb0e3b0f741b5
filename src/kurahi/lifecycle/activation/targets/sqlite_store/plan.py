"""The plan of an activation into OpenClaw 2026.9's SQLite store: ``activation.json``'s second kind.

Its package has the same layout, manifest and journal as a backend's
(:mod:`~kurahi.lifecycle.activation.package`); its plan records the store's facts instead
of files: the key's session and events, its ``session_nodes`` row, the whole store's hash.
``store: "openclaw-sqlite"`` says which kind a package is (:func:`~kurahi.lifecycle.activation.package.store_of`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kurahi.errors import PackageTamperedError, WrongHomeError
from kurahi.lifecycle.activation.package import Package, PlanHead, Projection
from kurahi.runtimes.openclaw import layout
from kurahi.runtimes.openclaw.sqlite.activation import SqlitePreconditions
from kurahi.store.catalog_format import validate_agent_id, validate_key

__all__ = ["STORE_KIND", "SqlitePlan", "SqlitePreconditions", "open_package"]

STORE_KIND = "openclaw-sqlite"
"""``activation.json``'s ``store`` for a package that activates into the SQLite store."""


class SqlitePlan(PlanHead, frozen=True, kw_only=True):
    """``activation.json`` for the SQLite store (``store``: :data:`STORE_KIND`; ``home``: the state dir)."""

    db: str
    """The store, relative to ``home``."""
    old_session_id: str
    new_session_id: str
    """The candidate header's id: the session apply writes."""
    candidate_sha256: str
    candidate_events: int
    """Lines of the candidate (rows apply writes into ``transcript_events``)."""
    markers: list[str]
    preconditions: SqlitePreconditions
    old_node: dict[str, Any]
    """The key's ``session_nodes`` row before, every column (rollback writes it back)."""
    was_pending: bool
    """Whether ``session_canonical_validation_pending`` held the key before."""
    projection: Projection

    @property
    def session_after(self) -> str:
        """The session the key points at once applied."""
        return self.new_session_id


def open_package(
    package: str | os.PathLike[str], home: str | os.PathLike[str]
) -> tuple[Package[SqlitePlan], SqlitePlan]:
    """Open a SQLite-store package planned for ``home``.

    Raises:
        PackageNotFoundError, PackageTamperedError: see :func:`check_package_files`.
        WrongHomeError: planned for another state dir.
    """
    opened = Package.open(package, SqlitePlan)
    root, plan = opened.root, opened.plan
    try:
        validate_agent_id(plan.agent)
        validate_key(plan.key)
    except Exception as exc:
        raise PackageTamperedError(f"activation.json: {exc}", path=root) from None
    if plan.db != layout.store_relative(plan.agent):
        raise PackageTamperedError(f"activation.json: db {plan.db!r} is not the agent's store", path=root)
    if Path(plan.home) != Path(home).resolve():
        raise WrongHomeError(f"planned for the home {plan.home}, not {Path(home).resolve()}", path=root)
    return opened, plan
