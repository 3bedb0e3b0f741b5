"""Kill apply (and rollback) after every file operation; the state is old or new, and reruns finish it.

Each run is a subprocess whose ``kurahi.fs.durable.ops`` (write, fsync, fdatasync, rename,
ftruncate: every durable operation goes through them) call ``os._exit`` right after the Nth
operation, for N = 1 .. the number a clean run makes. Right after the kill the sessions
directory must be, byte for byte, the old state or the new one, apart from leftovers that
nothing refers to (a temporary file of this package, or the installed candidate while the
catalog still points at the old session). Rerunning ``apply`` must then give exactly the new
state, and rerunning ``rollback`` exactly the old one, leftovers gone.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kurahi.gateway.activation_host import OfflineHost
from kurahi.lifecycle.activation import apply_package, plan_activation, rollback_package, verify_package
from kurahi.lineage.stitch import stitch
from kurahi.store.audit.log_file import AuditChain, chain_path
from kurahi.store.catalog_format import parse_catalog, serialize_catalog
from support.activations import OC_NEW, OC_OLD, OPENCLAW, make_home, snapshot

CRASH_EXIT = 77
SCRIPT = """
import os, sys
from kurahi.fs import durable as fsio

n, op, package, home = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
count = 0

def counted(fn):
    def call(*args):
        global count
        out = fn(*args)
        count += 1
        if count == n:
            os._exit(CRASH_EXIT)
        return out
    return call

for name in ("write", "fsync", "fdatasync", "rename", "ftruncate"):
    setattr(fsio.ops, name, counted(getattr(fsio.ops, name)))

from kurahi.lifecycle.activation import apply_package, rollback_package
from kurahi.gateway.activation_host import OfflineHost

(apply_package if op == "apply" else rollback_package)(package, home, OfflineHost(home))
print(count)
""".replace("CRASH_EXIT", str(CRASH_EXIT))


class Case:
    """One copy of a home with a planned package, its old and its expected new state."""

    def __init__(self, template: Path, where: Path, layout: str) -> None:
        shutil.copytree(template, where)
        self.root = where
        if layout == "kurahi":
            self.home, self.agent, self.key = where / "home", "alice", "agent:alice:main"
            markers = ["LATE"]
        else:
            self.home, self.agent, self.key = where / "state", "main", "agent:main:main"
            markers = ["PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"]
        self.sessions = self.home / "agents" / self.agent / "sessions"
        self.pkg = plan_activation(self.home, self.agent, self.key, where / "C.jsonl", where / "pkg", markers=markers)
        self.old = snapshot(self.sessions)
        store = parse_catalog(self.old["sessions.json"])
        store[self.key] = self.pkg.plan.new_entry
        self.new = {**self.old, "sessions.json": serialize_catalog(store)}
        self.new[self.pkg.plan.target_file] = (where / "C.jsonl").read_bytes()

    def run(self, n: int, op: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", SCRIPT, str(n), op, str(self.pkg.root), str(self.home)],
            capture_output=True,
            text=True,
            timeout=120,
        )

    def classify(self) -> str:
        """``old``/``new``, plus what unreferenced leftovers there are; ``broken`` if neither."""
        now = snapshot(self.sessions)
        tag = f"activation-{self.pkg.plan.id}.tmp"
        extra = []
        if any(name.endswith(tag) for name in now):
            extra.append("temp file")
            now = {k: v for k, v in now.items() if not k.endswith(tag)}
        if now == self.old:
            return "old" + "".join(f" + {e}" for e in extra)
        if now == self.new:
            return "new" + "".join(f" + {e}" for e in extra)
        target = self.pkg.plan.target_file
        if now.get(target) == self.new[target] and {k: v for k, v in now.items() if k != target} == self.old:
            return "old + unreferenced candidate" + "".join(f" + {e}" for e in extra)
        return "broken"

    def audit_ok(self) -> None:
        chain = AuditChain(chain_path(self.home))
        if chain.path.exists():
            assert chain.verify().ok
            nonces = [r.details.get("nonce") for r in chain.tail(1000) if r.action.startswith("session.")]
            assert len(nonces) == len(set(nonces)), "an audit record was written twice"


@pytest.fixture(scope="module", params=["kurahi", "openclaw"])
def template(request: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    where = tmp_path_factory.mktemp(f"template-{request.param}")
    if request.param == "kurahi":
        make_home(where, chain=True)
    else:
        shutil.copytree(OPENCLAW, where / "state")
        sessions = where / "state" / "agents" / "main" / "sessions"
        stitch([sessions / OC_OLD, sessions / OC_NEW], where / "C.jsonl")
    return where, request.param


def test_a_crash_after_any_file_operation_of_apply_is_finished_by_apply_or_undone_by_rollback(
    template: tuple[Path, str], tmp_path: Path
) -> None:
    src, layout = template
    clean = Case(src, tmp_path / "clean", layout)
    done = clean.run(0, "apply")
    assert done.returncode == 0, done.stderr
    total = int(done.stdout.split()[-1])
    assert snapshot(clean.sessions) == clean.new and total >= 8
    outcomes: Counter[str] = Counter()
    for n in range(1, total + 1):
        for rerun in ("apply", "rollback"):
            case = Case(src, tmp_path / f"{n}-{rerun}", layout)
            crashed = case.run(n, "apply")
            assert crashed.returncode == CRASH_EXIT, (n, crashed.stderr)
            state = case.classify()
            assert state != "broken", f"after operation {n} of {total} the state is neither old nor new"
            outcomes[state] += 1
            if rerun == "apply":
                res = apply_package(case.pkg.root, case.home, OfflineHost(case.home))
                assert res.outcome in ("applied", "already-applied") and snapshot(case.sessions) == case.new, n
                assert verify_package(case.pkg.root, case.home).ok
            else:
                rollback_package(case.pkg.root, case.home, OfflineHost(case.home))
                assert snapshot(case.sessions) == case.old, n
            case.audit_ok()
            shutil.rmtree(case.root)
    print(f"\n{layout}: apply killed after each of {total} file operations (x2 reruns): {dict(outcomes)}")
    assert outcomes["old"] and outcomes["new"]


def test_a_crash_after_any_file_operation_of_rollback_is_finished_by_rollback(
    template: tuple[Path, str], tmp_path: Path
) -> None:
    src, layout = template
    clean = Case(src, tmp_path / "clean", layout)
    assert clean.run(0, "apply").returncode == 0
    done = clean.run(0, "rollback")
    assert done.returncode == 0, done.stderr
    total = int(done.stdout.split()[-1])
    assert snapshot(clean.sessions) == clean.old
    outcomes: Counter[str] = Counter()
    for n in range(1, total + 1):
        case = Case(src, tmp_path / f"rb-{n}", layout)
        assert case.run(0, "apply").returncode == 0
        crashed = case.run(n, "rollback")
        assert crashed.returncode == CRASH_EXIT, (n, crashed.stderr)
        state = case.classify()
        assert state != "broken", f"after operation {n} of {total} of rollback the state is neither old nor new"
        outcomes[state] += 1
        rollback_package(case.pkg.root, case.home, OfflineHost(case.home))
        assert snapshot(case.sessions) == case.old, n
        case.audit_ok()
        shutil.rmtree(case.root)
    print(f"\n{layout}: rollback killed after each of {total} file operations: {dict(outcomes)}")
    assert outcomes["old"] and outcomes["new"]
