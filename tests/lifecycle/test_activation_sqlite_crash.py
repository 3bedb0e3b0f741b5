"""Kill SQLite-store apply (and rollback) at every step; the store is old or new, and reruns finish it.

The style of ``test_activation_crash.py``, for OpenClaw 2026.9's store. A step is each durable
file operation of the package (``kurahi.fs.durable.ops``: the journal's writes, fsyncs and
truncations) and each writing SQL statement Kurahi runs on the store (``BEGIN``, every
``INSERT`` / ``UPDATE`` / ``DELETE``, ``COMMIT``, the checkpoint; what OpenClaw's triggers and
the full-text module run inside a statement is part of it), in the order they happen. Each run
is a subprocess that calls ``os._exit`` at the Nth step (after a file operation; as SQLite
starts a statement), for N = 1 .. the number a clean run takes. The reruns happen in this
process. Right after the
kill, the store's whole content (:func:`~kurahi.runtimes.openclaw.sqlite.write.content_sha256`,
read on a copy of the database with its write-ahead log, as the next opener would see it) must
be exactly the old content or exactly the new one, never a mix. Rerunning ``apply`` must then
give the new content and ``verify`` must pass; rerunning ``rollback`` must give the old.

The clock and the random rewrite watermark are fixed in every run, so that "the new content"
is one hash: the same candidate written at the same time gives the same rows.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import kurahi.lifecycle.activation.targets.sqlite_store.target as sqlite_apply
from kurahi.gateway.activation_host import OfflineHost
from kurahi.lifecycle.activation import apply_package, plan_activation, rollback_package, verify_package
from kurahi.runtimes.openclaw.sqlite import write as openclaw_sqlite_write
from support.sqlite_activations import KEY, PHRASE_A, PHRASE_B, sqlite_setup, store_content

pytestmark = pytest.mark.slow

CRASH_EXIT = 77
NOW_MS = 1764489600000
SCRIPT = """
import os, sqlite3, sys

n, op, package, home = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
count = 0

def step():
    global count
    count += 1
    if count == n:
        os._exit(CRASH_EXIT)

def after(fn):
    def call(*args):
        out = fn(*args)
        step()
        return out
    return call

last = None

def trace(statement):
    # Kurahi's own writing statements: not reads, not what a trigger or the FTS module runs
    # inside one (reported as "-- ..."), and a statement once however many triggers it fires
    # (SQLite reports it again as each one starts).
    global last
    text = statement.strip()
    if text.startswith(("SELECT", "--", "PRAGMA table_info", "PRAGMA 'main'")) or text == last:
        return
    last = text
    step()

_connect = sqlite3.connect
def connect(*args, **kwargs):
    con = _connect(*args, **kwargs)
    if "mode=rw" in str(args[0]):
        con.set_trace_callback(trace)
    return con
sqlite3.connect = connect

from kurahi.fs import durable as fsio
from kurahi.runtimes.openclaw.sqlite import write as openclaw_sqlite_write
for name in ("write", "fsync", "fdatasync", "rename", "ftruncate"):
    setattr(fsio.ops, name, after(getattr(fsio.ops, name)))
openclaw_sqlite_write.secrets.token_hex = lambda nbytes=16: "5a" * nbytes
import kurahi.lifecycle.activation.targets.sqlite_store.target as sqlite_apply
sqlite_apply._now_ms = lambda: NOW_MS

from kurahi.lifecycle.activation import apply_package, rollback_package
from kurahi.gateway.activation_host import OfflineHost

if op == "apply":
    apply_package(package, home, OfflineHost(home))
else:
    rollback_package(package, home, OfflineHost(home), force=True)
print(count)
""".replace("CRASH_EXIT", str(CRASH_EXIT)).replace("NOW_MS", str(NOW_MS))


class Case:
    """A copy of the full store and its candidate, with a package planned on the copy."""

    def __init__(self, template: Path, where: Path) -> None:
        shutil.copytree(template, where)
        self.root = where
        self.home = where / "state"
        self.db = self.home / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
        self.pkg = where / "pkg"
        plan_activation(self.home, "main", KEY, where / "C.jsonl", self.pkg, markers=[PHRASE_A, PHRASE_B])

    def run(self, n: int, op: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", SCRIPT, str(n), op, str(self.pkg), str(self.home)],
            capture_output=True,
            text=True,
            timeout=120,
        )

    def content(self) -> str:
        return store_content(self.db)

    def rerun(self, op: str) -> None:
        """Apply or roll back in this process (the clock fixed by :func:`fixed_clock`)."""
        if op == "apply":
            res = apply_package(self.pkg, self.home, OfflineHost(self.home))
            assert res.outcome in ("applied", "already-applied"), res.outcome
        else:
            rollback_package(self.pkg, self.home, OfflineHost(self.home), force=True)


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same clock and watermark as the subprocesses: the new content is one hash."""
    monkeypatch.setattr(openclaw_sqlite_write.secrets, "token_hex", lambda nbytes=16: "5a" * nbytes)
    monkeypatch.setattr(sqlite_apply, "_now_ms", lambda: NOW_MS)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, int, int]:
    """The full store and a candidate; old and new content; steps of a clean apply and rollback."""
    where = tmp_path_factory.mktemp("sqlite-crash-template")
    sqlite_setup(where)
    clean = Case(where, tmp_path_factory.mktemp("sqlite-crash-clean") / "case")
    old = clean.content()
    done = clean.run(0, "apply")
    assert done.returncode == 0, done.stderr
    applied = int(done.stdout.split()[-1])
    new = clean.content()
    assert new != old and verify_package(clean.pkg, clean.home).ok
    again = Case(where, tmp_path_factory.mktemp("sqlite-crash-again") / "case")
    assert again.run(0, "apply").returncode == 0
    assert again.content() == new, "two clean applies with the same clock wrote different content"
    done = clean.run(0, "rollback")
    assert done.returncode == 0, done.stderr
    assert clean.content() == old
    return where, old, new, applied, int(done.stdout.split()[-1])


def test_a_crash_at_any_step_of_apply_leaves_old_or_new_and_a_rerun_finishes_or_undoes_it(
    template: tuple[Path, str, str, int, int], tmp_path: Path
) -> None:
    src, old, new, total, _ = template
    assert total >= 30, f"a clean apply took only {total} steps: the injection is not reaching the store"
    started = time.monotonic()
    outcomes: Counter[str] = Counter()
    for n in range(1, total + 1):
        for rerun in ("apply", "rollback"):
            case = Case(src, tmp_path / f"{n}-{rerun}")
            crashed = case.run(n, "apply")
            assert crashed.returncode == CRASH_EXIT, (n, crashed.stdout, crashed.stderr)
            now = case.content()
            assert now in (old, new), f"after step {n} of {total} of apply the store is neither old nor new"
            outcomes["old" if now == old else "new"] += 1
            case.rerun(rerun)
            if rerun == "apply":
                assert case.content() == new, f"rerun apply after step {n} did not give the new store"
                assert verify_package(case.pkg, case.home).ok, n
            else:
                assert case.content() == old, f"rerun rollback after step {n} did not give the old store"
            shutil.rmtree(case.root)
    took = time.monotonic() - started
    print(f"\nSQLite apply killed at each of {total} steps (x2 reruns) in {took:.0f} s: {dict(outcomes)}")
    assert outcomes["old"] and outcomes["new"]


def test_a_crash_at_any_step_of_rollback_leaves_old_or_new_and_a_rerun_finishes_it(
    template: tuple[Path, str, str, int, int], tmp_path: Path
) -> None:
    src, old, new, _, total = template
    assert total >= 5, f"a clean rollback took only {total} steps: the injection is not reaching the store"
    started = time.monotonic()
    outcomes: Counter[str] = Counter()
    for n in range(1, total + 1):
        case = Case(src, tmp_path / f"rb-{n}")
        assert case.run(0, "apply").returncode == 0
        crashed = case.run(n, "rollback")
        assert crashed.returncode == CRASH_EXIT, (n, crashed.stdout, crashed.stderr)
        now = case.content()
        assert now in (old, new), f"after step {n} of {total} of rollback the store is neither old nor new"
        outcomes["old" if now == old else "new"] += 1
        case.rerun("rollback")
        assert case.content() == old, f"rerun rollback after step {n} did not give the old store"
        assert not verify_package(case.pkg, case.home).ok
        shutil.rmtree(case.root)
    took = time.monotonic() - started
    print(f"\nSQLite rollback killed at each of {total} steps in {took:.0f} s: {dict(outcomes)}")
    assert outcomes["old"] and outcomes["new"]
