"""The places an activation writes, and which one a state or a package takes.

Each has a planning half (:class:`~kurahi.lifecycle.activation.target.Planner`) and a half
bound to an opened package (:class:`~kurahi.lifecycle.activation.target.ActivationTarget`):
:mod:`.backend` writes a Kurahi backend and the file layouts that share it, :mod:`.sqlite_store`
a runtime's SQLite store, :mod:`.session_append` one append-only session file (rows a runtime's
:class:`~kurahi.runtimes.base.SessionAppend` names). The runtime a state dir belongs to says
which one writes it (:meth:`~kurahi.runtimes.base.Runtime.activation_store`); a package's plan
says which one opens it (``store``). The driver asks here and names none.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from kurahi.errors import UsageError
from kurahi.lifecycle.activation.package import store_of

if TYPE_CHECKING:
    from kurahi.lifecycle.activation.target import ActivationTarget, Host, Planner
    from kurahi.runtimes.base import SessionAppend
    from kurahi.store.base import Backend

__all__ = ["appender", "homed", "planner", "stops_gateway", "target"]


def appender(store: str | None) -> SessionAppend | None:
    """The runtime's statements for a session-append package of ``store`` (``None``: not one)."""
    from kurahi.runtimes.registry import RUNTIMES

    return next((r.session_append for r in RUNTIMES if r.session_append and r.session_append.store == store), None)


def homed(package: str | os.PathLike[str]) -> bool:
    """Whether ``package`` is applied to a home (or state dir); one into a session file has none."""
    return appender(store_of(package)) is None


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
    home: str | os.PathLike[str] | None,
    host: Host | None,
    backend: Backend | None,
    stop_timeout: float = 30.0,
) -> ActivationTarget:
    """The package opened on the target its plan names."""
    from kurahi.lifecycle.activation.targets.backend.target import BackendTarget
    from kurahi.lifecycle.activation.targets.session_append.target import SessionAppendTarget
    from kurahi.lifecycle.activation.targets.sqlite_store.plan import STORE_KIND
    from kurahi.lifecycle.activation.targets.sqlite_store.target import SqliteTarget

    store = store_of(package)
    rules = appender(store)
    if rules is not None:
        return SessionAppendTarget(package, rules)
    if home is None:
        raise UsageError(f"{package}: this package is applied to a state directory: give its --home")
    if store == STORE_KIND:
        return SqliteTarget(package, home)
    return BackendTarget(package, home, host, backend, stop_timeout=stop_timeout)


def stops_gateway(package: str | os.PathLike[str]) -> bool:
    """Whether applying ``package`` may stop a gateway (a runtime's own store is never stopped by Kurahi).

    A session file's package says yes: ``--timeout`` is accepted and has nothing to stop, as before
    it reached the driver.
    """
    from kurahi.lifecycle.activation.targets.sqlite_store.plan import STORE_KIND

    return store_of(package) != STORE_KIND
