"""The backend conformance suite, bound to each backend (file, memory, PostgreSQL) by ``any_backend``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kurahi.store.base import Backend
from kurahi.store.file_backend import FileBackend
from kurahi.store.memory_backend import MemoryBackend
from kurahi.testing import BackendConformance
from support.backends import BackendMaker


class TestEachBackend(BackendConformance):
    @pytest.fixture(autouse=True)
    def _maker(self, any_backend: BackendMaker, tmp_path: Path) -> None:
        self.maker = any_backend
        self.home = tmp_path / "home"

    def make_backend(self) -> Backend:
        return self.maker(self.home)


# (shared, fences_writers, persistent, directory is the home) of each backend
CAPABILITIES = {
    "file": (False, False, True, True),
    "memory": (False, True, False, False),
    "postgres": (True, True, True, False),
}


def test_each_backend_says_what_it_can_do(any_backend: BackendMaker, tmp_path: Path) -> None:
    backend = any_backend(tmp_path / "home")
    shared, fences, persistent, in_home = CAPABILITIES[any_backend.kind]
    assert (backend.shared, backend.fences_writers, backend.persistent) == (shared, fences, persistent)
    assert backend.directory == (tmp_path / "home" if in_home else None)
    assert backend.kind == any_backend.kind  # still the label messages print


def test_what_a_persistent_backend_holds_outlives_it(any_backend: BackendMaker, tmp_path: Path) -> None:
    first = any_backend(tmp_path / "home")
    first.agent("main", create=True).transcripts.import_bytes("s1.jsonl", b'{"type":"session"}\n')
    first.close()
    again = any_backend(tmp_path / "home")  # the same home or database, opened afresh
    assert again.agent("main").transcripts.exists("s1.jsonl") == again.persistent


def test_the_default_backend_is_the_homes_files(tmp_path: Path) -> None:
    from kurahi.store.open import default_backend, open_backend

    backend = default_backend(tmp_path)
    assert isinstance(backend, FileBackend) and backend.directory == tmp_path
    assert isinstance(open_backend(tmp_path), FileBackend)


def test_open_backend_picks_by_name(tmp_path: Path) -> None:
    from kurahi.errors import UsageError
    from kurahi.store.open import open_backend, url_has_password

    assert isinstance(open_backend(tmp_path), FileBackend)
    assert isinstance(open_backend(tmp_path, f"file:{tmp_path}"), FileBackend)
    assert isinstance(open_backend(tmp_path, "memory:"), MemoryBackend)
    with pytest.raises(UsageError, match="another home"):
        open_backend(tmp_path, f"file:{tmp_path / 'elsewhere'}")
    with pytest.raises(UsageError) as info:
        open_backend(tmp_path, "mysql://root:hunter2@db/x")
    assert "hunter2" not in str(info.value) and "mysql" in str(info.value)
    assert url_has_password("postgres://u:hunter2@h/db")
    assert url_has_password("postgresql://u@h/db?password=hunter2")
    assert not url_has_password("postgres://u@h/db")


def test_gateway_run_refuses_a_password_on_the_command_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    home = tmp_path / "home"
    subprocess.run([sys.executable, "-m", "kurahi.cli", "init", "--home", str(home)], check=True, capture_output=True)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "kurahi.cli",
            "gateway",
            "run",
            "--home",
            str(home),
            "--store",
            "postgres://u:hunter2@h/db",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in __import__("os").environ.items() if k != "KOLO_STORE"},
    )
    assert r.returncode == 2, r.stderr
    assert "process list" in r.stderr and "hunter2" not in r.stderr + r.stdout


def test_sessions_are_listed_from_a_database_backend(tmp_path: Path) -> None:
    from kurahi.locations.listing import list_sessions
    from kurahi.store.session import Session

    backend = MemoryBackend(tmp_path)
    store = backend.agent("main", create=True)
    Session.create_in(store.transcripts, "s1.jsonl", cwd="/", session_id_="s1").close()
    store.catalog.upsert("agent:main:main", {"sessionId": "s1", "sessionFile": "s1.jsonl", "updatedAt": 5})
    store.catalog.upsert("agent:main:gone", {"sessionId": "s2", "updatedAt": 6})
    rows = [r.to_dict() for r in list_sessions(tmp_path, backend=backend)]
    assert [(r["key"], r["transcript"], r["transcriptExists"]) for r in rows] == [
        ("agent:main:main", "memory:main/s1.jsonl", True),
        ("agent:main:gone", "memory:main/s2.jsonl", False),
    ]
