"""Hypothesis on the readers of the files a home keeps, read from real files on disk.

Devices, config, the three journals (ledger, jobs, queue), the audit chain and the hash cache:
whatever bytes or JSON values the file holds, the reader gives a value or one of Kurahi's
own errors, never another exception. And two promises that must hold on any input: a
device registry whose revoked device's ``revokedAt`` was changed never lets its token in,
and an audit append onto a damaged chain never changes the bytes already there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kurahi.agent.config import load_config
from kurahi.agent.jobs import JobStore
from kurahi.agent.ledger import Ledger
from kurahi.agent.queue import pending_from_journal
from kurahi.continuity.hashcache import HashCache
from kurahi.errors import KurahiError
from kurahi.resident.devices import DeviceRegistry, token_hash
from kurahi.store.audit.log_file import AuditChain
from kurahi.store.record_log import FileRecordLog

FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=24,
)


def _doc(keys: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects that hold the real field names with values of any type (how hand edits go wrong)."""
    return st.fixed_dictionaries({}, optional={k: st.one_of(st.just(v), json_values) for k, v in keys.items()})


_DEVICE = {
    "id": "dev_0123456789ab",
    "name": "phone",
    "scopes": ["read"],
    "tokenSha256": token_hash("kd_x"),
    "createdAt": 1,
    "revokedAt": None,
}
files = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v).encode()),
)


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(data)
    os.chmod(path, 0o600)
    return path


@FUZZ
@given(st.one_of(files, st.lists(_doc(_DEVICE), max_size=3).map(lambda ds: json.dumps({"devices": ds}).encode())))
def test_device_registry_on_any_file(tmp_path: Path, data: bytes) -> None:
    path = _write(tmp_path / "dev" / "devices.json", data)
    try:
        devices = DeviceRegistry(path).devices()
    except KurahiError:
        return
    for d in devices:
        assert isinstance(d.id, str) and isinstance(d.created_at, int) and not isinstance(d.created_at, bool)
        assert d.revoked_at is None or (isinstance(d.revoked_at, int) and not isinstance(d.revoked_at, bool))
        assert set(d.scopes) <= {"read", "chat", "admin"}


@FUZZ
@given(json_values)
def test_a_revoked_device_never_comes_back_whatever_revokedAt_holds(tmp_path: Path, revoked: Any) -> None:
    path = tmp_path / "rev" / "devices.json"
    if revoked is None:
        revoked = 0  # null is the one value that means "active"; every other value must not
    _write(path, json.dumps({"devices": [{**_DEVICE, "revokedAt": revoked}]}).encode())
    try:
        found = DeviceRegistry(path).authenticate("kd_x")
    except KurahiError:
        return
    assert found is None, revoked


_CONFIG = {"models": {}, "defaults": {"maxSteps": 3, "queue": {"cap": 2}}, "agents": {"alice": {"model": "alpha"}}}


@FUZZ
@given(st.one_of(files, _doc(_CONFIG).map(lambda d: json.dumps(d).encode())))
def test_config_loader_on_any_file(tmp_path: Path, data: bytes) -> None:
    home = tmp_path / "cfg"
    _write(home / "config.json", data)
    try:
        config = load_config(home)
        config.check_agents(["alice"])
    except KurahiError:
        return
    assert config.agent("alice").max_steps >= 1


def _journal_lines() -> st.SearchStrategy[bytes]:
    record = st.one_of(
        _doc({"op": "put", "qid": "q1", "key": "agent:alice:main", "message": {"text": "x"}, "ts": 1}),
        _doc({"op": "done", "qids": ["q1"], "ts": 2}),
        _doc({"id": "job_1", "event": "created", "kind": "turn", "sessionKey": "k", "ts": 1}),
        _doc({"kind": "intent", "actionId": "a1", "tool": "write", "args": {}, "sessionId": "s", "toolCallId": "c"}),
        _doc({"kind": "outcome", "actionId": "a1", "status": "ok", "result": "r", "ts": 2}),
    ).map(lambda d: json.dumps(d).encode())
    return st.lists(st.one_of(record, st.binary(max_size=60)), max_size=6).map(lambda ls: b"\n".join(ls))


@FUZZ
@given(_journal_lines())
def test_journal_readers_on_any_lines(tmp_path: Path, data: bytes) -> None:
    for name in ("queue", "jobs", "ledger"):
        journal = FileRecordLog(_write(tmp_path / "j" / f"{name}.jsonl", data), name=name)
        try:
            if name == "queue":
                pending = pending_from_journal(journal)
                assert all(isinstance(k, str) for k in pending)
            elif name == "jobs":
                store = JobStore(journal)
                store.jobs()
                store.recover()
            else:
                Ledger(journal).actions()
        except KurahiError:
            pass
        finally:
            journal.close()


def _chain_bytes(tmp_path: Path) -> bytes:
    path = tmp_path / "seed" / "chain.jsonl"
    if not path.exists():
        chain = AuditChain(path)
        for n in range(3):
            chain.append("owner", "config.apply", {"n": n})
    return path.read_bytes()


@FUZZ
@given(st.data())
def test_audit_chain_on_damaged_files(tmp_path: Path, data: st.DataObject) -> None:
    good = _chain_bytes(tmp_path)
    lines = good.split(b"\n")[:-1]
    cut = data.draw(st.integers(min_value=0, max_value=len(good)))
    extra = data.draw(st.one_of(st.binary(max_size=80), json_values.map(lambda v: json.dumps(v).encode())))
    edited = data.draw(st.sampled_from(range(len(lines))))
    record = json.loads(lines[edited])
    field = data.draw(st.sampled_from(sorted(record)))
    record[field] = data.draw(json_values)
    mutated = b"\n".join([*lines[:edited], json.dumps(record).encode(), *lines[edited + 1 :]]) + b"\n"
    variant = data.draw(st.sampled_from(["cut", "append", "edit", "edit+append"]))
    body = {
        "cut": good[:cut],
        "append": good + extra,
        "edit": mutated,
        "edit+append": mutated + extra + b"\n",
    }[variant]
    path = _write(tmp_path / "chain" / "chain.jsonl", body)
    chain = AuditChain(path, lock_timeout=5)
    for read in (chain.verify, chain.head, lambda: chain.tail(5), lambda: chain.get(2)):
        with contextlib.suppress(KurahiError):
            read()
    before = path.read_bytes()
    try:
        chain.append("owner", "x.y", {})
    except KurahiError:
        assert path.read_bytes() == before  # refused: nothing written
        return
    after = path.read_bytes()
    # An append keeps every complete line that was there; only a torn tail moves aside (to a sidecar).
    kept = before[: before.rfind(b"\n") + 1]
    assert after.startswith(kept)
    assert chain.verify().ok or not AuditChain(_write(tmp_path / "k" / "chain.jsonl", kept)).verify().ok


@FUZZ
@given(st.one_of(files, st.just(b"[" * 50_000 + b"]" * 50_000)))
def test_hash_cache_on_any_file(tmp_path: Path, data: bytes) -> None:
    root = tmp_path / "hc"
    _write(root / "run" / "hash-cache.json", data)
    target = _write(root / "f.txt", b"hello")
    cache = HashCache.for_home(root)
    digest = cache.digests([target])
    assert digest[0].sha256 == hashlib.sha256(b"hello").hexdigest()
    cache.save()


def test_a_done_record_of_the_wrong_shape_settles_nothing(tmp_path: Path) -> None:
    # Found by the journal property above: `qids: true` made the fold raise TypeError, and the
    # gateway could not start over one hand-edited queue record.
    put = {"op": "put", "qid": "q1", "key": "agent:alice:main", "message": {"text": "x"}, "ts": 1}
    lines = [put, {"op": "done", "qids": True}, {"op": "done", "qids": [5, None]}, {"op": "dropped", "qid": [1]}]
    journal = FileRecordLog(_write(tmp_path / "q" / "queue.jsonl", b"\n".join(json.dumps(r).encode() for r in lines)))
    try:
        assert [r["qid"] for r in pending_from_journal(journal)["agent:alice:main"]] == ["q1"]
    finally:
        journal.close()
