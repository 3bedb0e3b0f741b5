"""The backend conformance suite, bound to the file and memory backends (PostgreSQL: test_postgres_backend.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kurahi.store.backend import Backend
from kurahi.store.file_backend import FileBackend
from kurahi.store.memory_backend import MemoryBackend
from kurahi.testing import BackendConformance


class TestFileBackend(BackendConformance):
    @pytest.fixture(autouse=True)
    def _home(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"

    def make_backend(self) -> Backend:
        return FileBackend(self.home)


class TestMemoryBackend(BackendConformance):
    def make_backend(self) -> Backend:
        return MemoryBackend()
