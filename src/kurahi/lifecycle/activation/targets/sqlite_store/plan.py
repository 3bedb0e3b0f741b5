"""The plan of an activation into OpenClaw 2026.9's SQLite store: ``activation.json``'s second kind.

Its package has the same layout, manifest and journal as a backend's
(:mod:`~kurahi.lifecycle.activation.package`); its plan records the store's facts instead
of files: the key's session and events, its ``session_nodes`` row, the whole store's hash.
``store: "openclaw-sqlite"`` says which kind a package is (:func:`is_sqlite_package`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import PackageError, PackageTamperedError, WrongHomeError
from kurahi.lifecycle.activation.package import PACKAGE_VERSION, Package, PlanHead, Projection, check_package_files
from kurahi.runtimes.openclaw import layout
from kurahi.runtimes.openclaw.sqlite.activation import SqlitePreconditions
from kurahi.store.catalog_format import validate_agent_id, validate_key

__all__ = ["STORE_KIND", "SqlitePlan", "SqlitePreconditions", "is_sqlite_package", "open_package"]

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


def is_sqlite_package(package: str | os.PathLike[str]) -> bool:
    """Whether ``package`` is a SQLite-store package (reads only its plan's ``store`` field)."""
    try:
        doc = json.loads((Path(package) / "activation.json").read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("store") == STORE_KIND


def open_package(
    package: str | os.PathLike[str], home: str | os.PathLike[str]
) -> tuple[Package[SqlitePlan], SqlitePlan]:
    """Open a SQLite-store package planned for ``home``.

    Raises:
        PackageNotFoundError, PackageTamperedError: see :func:`check_package_files`.
        WrongHomeError: planned for another state dir.
    """
    root = check_package_files(package)
    try:
        plan = msgspec.json.decode((root / "activation.json").read_bytes(), type=SqlitePlan)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise PackageTamperedError(f"activation.json: {exc}", path=root) from exc
    if plan.version != PACKAGE_VERSION:
        raise PackageError(f"package version {plan.version}, this tool reads {PACKAGE_VERSION}", path=root)
    try:
        validate_agent_id(plan.agent)
        validate_key(plan.key)
    except Exception as exc:
        raise PackageTamperedError(f"activation.json: {exc}", path=root) from None
    if plan.db != layout.store_relative(plan.agent):
        raise PackageTamperedError(f"activation.json: db {plan.db!r} is not the agent's store", path=root)
    if Path(plan.home) != Path(home).resolve():
        raise WrongHomeError(f"planned for the home {plan.home}, not {Path(home).resolve()}", path=root)
    return Package(root, plan), plan
