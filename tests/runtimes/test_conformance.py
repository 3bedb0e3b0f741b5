"""The runtime conformance suite (:mod:`support.runtime_conformance`) bound once per runtime, on real samples.

Pi: a folder of session files Pi itself wrote (``tests/fixtures/pi``). OpenClaw: its state dir
of each era, made by real OpenClaw 2026.5.28 and 2026.9.6 (``tests/data/openclaw``), each with a
``/reset`` whose history left the model's view. Claude Code: a session the real 2.1.332 wrote
(``tests/data/claude-code``), and a copy of it whose last prompt lost its parent.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest

from kurahi.runtimes.openclaw import layout
from support.claude_sessions import claude_process, real_sample
from support.runtime_conformance import RuntimeConformance, sqlite_lock, tree
from support.testdata import JSON_ERA, data_path

SQLITE_ERA = "2026.9.6-full"
"""The complete 2026.9.6 store (every table and index OpenClaw makes), with a ``/reset`` inside its session."""

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pi"


def _copy(sample: str, dst: Path) -> Path:
    shutil.copytree(data_path("openclaw", sample, "state"), dst)
    for path in [dst, *dst.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)
    return dst


class TestPi(RuntimeConformance):
    runtime_name = "pi"
    variable = "PI_CODING_AGENT_SESSION_DIR"

    def make_state(self, dst: Path) -> Path:
        # Pi's layout: one folder per working directory, one file per session.
        folder = dst / "--home-ava-work--"
        folder.mkdir(parents=True)
        for name in ("branch_summary.jsonl", "bom_header.jsonl"):
            shutil.copy(FIXTURES / name, folder / f"2026-12-01T10-00-00-000Z_{name}")
        return dst


class TestClaudeCode(RuntimeConformance):
    runtime_name = "claude"
    variable = "CLAUDE_CONFIG_DIR"

    def make_state(self, dst: Path) -> Path:
        # A session the real 2.1.332 wrote, and a copy of it whose last prompt lost its parent.
        return real_sample(dst, damaged=True)[0]

    def hold_running(self, state: Path) -> Any:
        work = state.parent / "work"
        work.mkdir(exist_ok=True)
        return claude_process(state, work, state.parent / "bin")


class _OpenClaw(RuntimeConformance):
    runtime_name = "openclaw"
    variable = "OPENCLAW_STATE_DIR"
    agent = "main"
    key = "agent:main:main"


class TestOpenClawJsonEra(_OpenClaw):
    def make_state(self, dst: Path) -> Path:
        return _copy(JSON_ERA, dst)

    def hold_running(self, state: Path) -> Any:
        return _pid_lock(state)


class TestOpenClawSqliteEra(_OpenClaw):
    def make_state(self, dst: Path) -> Path:
        return _copy(SQLITE_ERA, dst)

    def hold_running(self, state: Path) -> Any:
        return sqlite_lock(state / "tmp" / f"openclaw-{os.getuid()}" / "gateway.0123abcd.lock.sqlite")

    def fingerprint(self, state: Path) -> dict[str, str]:
        # A rollback gives the store's content back exactly; its file may keep freed pages.
        from kurahi.runtimes.openclaw.sqlite.write import content_sha256, open_store

        db = layout.store_path(state, self.agent or "main")
        out = {k: v for k, v in tree(state).items() if not k.startswith(db.relative_to(state).as_posix())}
        with open_store(db, write=False) as con:
            out["store content"] = content_sha256(con)
        return out


@contextmanager
def _pid_lock(state: Path) -> Iterator[None]:
    """The lock a running OpenClaw 2026.5 gateway writes: its pid, in ``$TMPDIR/openclaw-<uid>/``."""
    folder = Path(tempfile.gettempdir()) / f"openclaw-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    name = f"gateway.{sha256(str(state / layout.CONFIG).encode()).hexdigest()[:8]}.lock"
    (folder / name).write_text(json.dumps({"pid": os.getpid()}), encoding="utf-8")
    try:
        yield
    finally:
        (folder / name).unlink()


def test_every_runtime_in_the_registry_is_bound() -> None:
    from kurahi.runtimes.registry import RUNTIMES

    bound = {c.runtime_name for c in (TestPi, TestClaudeCode, TestOpenClawJsonEra, TestOpenClawSqliteEra)}
    assert {r.name for r in RUNTIMES} == bound


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in list(os.environ):
        if name.startswith(("KOLO_", "KURAHI_", "OPENCLAW_", "PI_CODING_AGENT", "CLAUDE_")):
            monkeypatch.delenv(name)
