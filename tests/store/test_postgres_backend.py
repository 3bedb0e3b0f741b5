"""The PostgreSQL backend: the conformance suite bound to it, and what only a database shared by gateways needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kurahi.store.backend import Backend
from kurahi.store.postgres import PostgresBackend
from kurahi.testing import BackendConformance


class TestPostgresBackend(BackendConformance):
    @pytest.fixture(autouse=True)
    def _db(self, pg_url: str, tmp_path: Path) -> object:
        self.url = pg_url
        self.home = tmp_path / "home"
        self.made: list[Backend] = []
        yield
        for b in self.made:
            b.close()

    def make_backend(self) -> Backend:
        backend = PostgresBackend(self.url, home=self.home)
        self.made.append(backend)
        return backend
