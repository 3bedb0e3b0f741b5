"""Each storage backend in turn: what the ``any_backend`` fixture (tests/conftest.py) hands a test.

A test that must hold on every backend asks for ``any_backend`` and runs three times, as
``[file]``, ``[memory]`` and ``[postgres]``; one that needs what only some backends do
narrows it (``parametrize("any_backend", FENCING_KINDS, indirect=True)``). The PostgreSQL
case opens a fresh database of the run's throwaway server (``pg_url``), is marked
``postgres`` (so the fast tier leaves it out) and is skipped loudly, as every PostgreSQL
test is, when no server can start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kurahi.store.base import Backend
from kurahi.store.file_backend import FileBackend
from kurahi.store.memory_backend import MemoryBackend

__all__ = ["BACKEND_KINDS", "FENCING_KINDS", "BackendMaker"]

_POSTGRES = pytest.param("postgres", marks=pytest.mark.postgres)

BACKEND_KINDS = ["file", "memory", _POSTGRES]
"""The fixture's parameters, one per backend, in this order."""

FENCING_KINDS = ["memory", _POSTGRES]
"""The backends whose claims fence off a writer still open (a file home's writer holds a lock that
cannot be taken from it), for ``@pytest.mark.parametrize("any_backend", FENCING_KINDS, indirect=True)``."""


class BackendMaker:
    """Makes backends of one kind; every one made is closed when the test ends.

    Example::

        def test_x(any_backend: BackendMaker, tmp_path: Path) -> None:
            backend = any_backend(tmp_path / "home")
    """

    def __init__(self, kind: str, url: str | None = None) -> None:
        if (kind == "postgres") != (url is not None):
            raise ValueError("a PostgreSQL maker needs the database's URL, and only it")
        self.kind = kind
        """``file``, ``memory`` or ``postgres``: the backend's ``kind`` too."""
        self.url = url
        """The PostgreSQL database's URL, with its password (never print it); ``None`` otherwise."""
        self.made: list[Backend] = []

    def __repr__(self) -> str:
        return f"BackendMaker({self.kind!r})"

    @property
    def store(self) -> str | None:
        """What ``--store`` (or ``open_backend``) takes for this kind: ``None`` (files), ``memory:``, the URL.

        ``memory:`` opened again is a new, empty store: only a test that stays in one process
        with the backend it opened can use it.
        """
        return {"file": None, "memory": "memory:"}.get(self.kind, self.url)

    def __call__(self, home: Path, **options: Any) -> Backend:
        """A backend of this kind for ``home``; ``options`` go to ``PostgresBackend`` (``owner_id``, ...)."""
        if options and self.kind != "postgres":
            raise TypeError(f"the {self.kind} backend takes no options, got {sorted(options)}")
        backend: Backend
        if self.kind == "file":
            backend = FileBackend(home)
        elif self.kind == "memory":
            backend = MemoryBackend(home)
        else:
            from kurahi.store.postgres import PostgresBackend

            assert self.url is not None
            backend = PostgresBackend(self.url, home=home, **options)
        self.made.append(backend)
        return backend

    def close(self) -> None:
        """Close every backend made (a PostgreSQL one gives back its connections and leases)."""
        while self.made:
            self.made.pop().close()
