"""The places an activation writes, and which one a state or a package takes.

Each has a planning half (:class:`~kurahi.lifecycle.activation.target.Planner`) and a half
bound to an opened package (:class:`~kurahi.lifecycle.activation.target.ActivationTarget`):
:mod:`.backend` writes a Kurahi backend and the file layouts that share it, :mod:`.sqlite_store`
a runtime's SQLite store. The runtime a state dir belongs to says which one writes it
(:meth:`~kurahi.runtimes.base.Runtime.activation_store`); a package's plan says which one opens
it (``store``). The driver asks here and names neither.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from kurahi.lifecycle.activation.package import store_of

if TYPE_CHECKING:
    from kurahi.lifecycle.activation.target import ActivationTarget, Host, Planner
    from kurahi.store.base import Backend

__all__ = ["planner", "stops_gateway", "target"]


def planner(root: Path, agent: str, backend: Backend | None) -> Planner:
    """The planner for ``agent`` of the state at ``root`` (or of ``backend`` when not in the home's files)."""
    from kurahi.lifecycle.activation.targets.backend.plan import BackendPlanner
    from kurahi.lifecycle.activation.targets.sqlite_store.target import SqlitePlanner
    from kurahi.runtimes.registry import for_state_dir

    if backend is not None and backend.directory is None:
        return BackendPlanner.in_store(root, agent, backend)
    if for_state_dir(root).activation_store(root, agent) == "sqlite":
        return SqlitePlanner(root, agent)
    return BackendPlanner.in_files(root, agent)


def target(
    package: str | os.PathLike[str],
    home: str | os.PathLike[str],
    host: Host | None,
    backend: Backend | None,
    stop_timeout: float = 30.0,
) -> ActivationTarget:
    """The package opened on the target its plan names."""
    from kurahi.lifecycle.activation.targets.backend.target import BackendTarget
    from kurahi.lifecycle.activation.targets.sqlite_store.plan import STORE_KIND
    from kurahi.lifecycle.activation.targets.sqlite_store.target import SqliteTarget

    if store_of(package) == STORE_KIND:
        return SqliteTarget(package, home)
    return BackendTarget(package, home, host, backend, stop_timeout=stop_timeout)


def stops_gateway(package: str | os.PathLike[str]) -> bool:
    """Whether applying ``package`` may stop a gateway (a runtime's own store is never stopped by Kurahi)."""
    from kurahi.lifecycle.activation.targets.sqlite_store.plan import STORE_KIND

    return store_of(package) != STORE_KIND
