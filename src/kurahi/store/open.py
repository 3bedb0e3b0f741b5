"""Choosing a backend: from a home, ``memory:``, or a ``postgres://`` URL.

``open_backend(home)`` is the file backend (a Kurahi home as files), as is
``default_backend(home)``, what code above ``store`` uses when it is handed no backend;
``--store`` on the command line and ``KOLO_STORE`` in the environment name another one. A database URL may
carry a password: it is kept inside the backend and never printed (``describe()`` hides it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from kurahi.errors import UsageError
from kurahi.store.base import Backend

if TYPE_CHECKING:
    from kurahi.store.postgres import PostgresBackend

__all__ = ["default_backend", "open_backend", "postgres_backend", "url_has_password"]


def default_backend(home: str | os.PathLike[str]) -> Backend:
    """The store of ``home`` when none is named: its own files.

    What the gateway, the runtime, the continuity manifest and the activation use when they
    are handed no backend; they learn what it can do from its capabilities (its
    :attr:`~kurahi.store.base.Backend.directory` is ``home``), not from its class.
    """
    from kurahi.store.file_backend import FileBackend

    return FileBackend(home)


def url_has_password(url: str) -> bool:
    """Whether a store URL carries a password (``postgres://user:secret@host/db``, or ``password=`` in its query)."""
    from urllib.parse import parse_qs, urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return bool(parts.password) or "password" in parse_qs(parts.query)


def postgres_backend() -> type[PostgresBackend]:
    """The PostgreSQL backend's class, or a clear error when its driver is not installed.

    Raises:
        UsageError: psycopg (the optional extra ``postgres``) is missing.
    """
    try:
        from kurahi.store.postgres import PostgresBackend
    except ImportError as exc:
        raise UsageError(
            f"the PostgreSQL backend needs psycopg 3 and psycopg-pool ({exc}): pip install 'kurahi[postgres]'"
        ) from exc
    return PostgresBackend


def open_backend(
    home: str | os.PathLike[str],
    store: str | None = None,
    *,
    owner_id: str | None = None,
    lease_seconds: float | None = None,
) -> Backend:
    """The backend for ``home``, stored where ``store`` says (default: files in the home).

    Args:
        home: the Kurahi home (identity, memory, config and secrets stay files there).
        store: ``None``, ``file:`` or ``file:<home>`` for files; ``memory:``; or a
            ``postgres://`` / ``postgresql://`` URL.
        owner_id: for a database, this gateway's lease owner id, unique among the live
            gateways on it (default: host, pid and a random part).
        lease_seconds: for a database, how long a lease outlives its last renewal (default
            :data:`~kurahi.store.postgres.backend.DEFAULT_LEASE_SECONDS`).

    Raises:
        UsageError: a store the name of which no backend answers to (the message never
            repeats a password).
    """
    if store is None or store in ("file", "file:"):
        return default_backend(home)
    if store.startswith("file:"):
        where = Path(store[len("file:") :])
        if where.resolve() != Path(home).resolve():
            raise UsageError(f"--store file:{where} names another home than {home}; use --home {where}")
        return default_backend(home)
    if store in ("memory", "memory:"):
        from kurahi.store.memory_backend import MemoryBackend

        return MemoryBackend(Path(home))
    if store.startswith(("postgres://", "postgresql://")):
        cls = postgres_backend()
        if lease_seconds is None:
            return cls(store, home=Path(home), owner_id=owner_id)
        return cls(store, home=Path(home), owner_id=owner_id, lease_seconds=lease_seconds)
    scheme = store.split(":", 1)[0] if ":" in store else store
    raise UsageError(f"unknown store {scheme!r}: use file:, memory: or postgres://user@host/db")
