"""The signed continuity manifest: shape, chaining, tamper evidence, secrets, the key, the hash cache."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from kurahi.agent.jobs import JobStore
from kurahi.continuity import (
    KINDS,
    HashCache,
    SigningKey,
    build_manifest,
    load_signing_key,
    verify_manifest,
)
from kurahi.continuity.manifest import MANIFEST_KEYS, seal_manifest
from kurahi.errors import ManifestError, SigningKeyError, UnknownAgentError
from kurahi.js.jcs import ZERO_HASH
from kurahi.resident.devices import DeviceRegistry
from kurahi.resident.home import Home
from kurahi.store.audit.log_file import AuditChain
from kurahi.store.catalog import Catalog
from kurahi.store.record_log import FileRecordLog
from support.gateways import make_gateway_home

T1 = datetime(2026, 1, 1, tzinfo=UTC)
T2 = datetime(2026, 6, 1, 12, 30, tzinfo=UTC)
PLANTED_SECRET = "PLANTED-SECRET-3b9f0c"
BEARER = "Bearer sk-LEAKED-8d1e44"


def _age(path: Path, seconds: float = 100.0) -> None:
    """Put a file's mtime in the past, so the hash cache may keep its digest (it is not racy)."""
    t = time.time() - seconds
    os.utime(path, (t, t))


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """A resident with memory files, a job, two sessions and transcripts, a device and an audit chain."""
    h = make_gateway_home(tmp_path)
    paths = h.agent("alice")
    (paths.workspace / "USER.md").write_text("the owner\n")
    (paths.workspace / "memory" / "notes.md").write_text("- the launch code word is heron\n")
    (paths.workspace / "memory" / "2026-01-01.md").write_text("- new year\n")
    (paths.workspace / ".IDENTITY.md.1234.tmp").write_text("half-written\n")
    catalog = Catalog(paths.catalog)
    for key, sid in (("agent:alice:main", "s-main"), ("agent:alice:other", "s-other")):
        (paths.sessions / f"{sid}.jsonl").write_bytes(b'{"type":"session","version":3,"id":"' + sid.encode() + b'"}\n')
        catalog.upsert(key, {"sessionId": sid, "sessionFile": f"{sid}.jsonl", "label": f"label {sid}"})
    jobs = JobStore(FileRecordLog(paths.jobs))
    jid = jobs.create("agent:alice:main")
    jobs.mark(jid, "running")
    jobs.mark(jid, "failed", error="boom")
    jobs.close()
    DeviceRegistry(h.devices).pair("phone", ["read", "chat"])
    AuditChain(h.audit).append("owner", "config.apply", {"keys": ["agents"]})
    for p in (*paths.workspace.rglob("*"), *paths.sessions.glob("*.jsonl")):
        if p.is_file():
            _age(p)
    return h


def _names(manifest: dict[str, Any], kind: str) -> list[str]:
    return [e["name"] for e in manifest["entries"] if e["kind"] == kind]


def _value(manifest: dict[str, Any], kind: str, name: str) -> Any:
    (value,) = [e["value"] for e in manifest["entries"] if e["kind"] == kind and e["name"] == name]
    return value


# -- shape ---------------------------------------------------------------------------------


def test_shape_order_and_values(home: Home) -> None:
    m = build_manifest(home, "alice", now=T1)
    assert list(m) == list(MANIFEST_KEYS)
    assert m["version"] == 1 and m["agent"] == "alice" and m["createdAt"] == "2026-01-01T00:00:00.000Z"
    kinds = [e["kind"] for e in m["entries"]]
    assert kinds == sorted(kinds, key=KINDS.index), "entries come kind by kind, in the fixed order"
    for kind in KINDS:
        assert _names(m, kind) == sorted(_names(m, kind)), f"names within {kind} are sorted"
    for e in m["entries"]:
        assert list(e) == ["kind", "name", "value", "hash"]

    ws = home.agent("alice").workspace
    assert _names(m, "identity") == ["AGENTS.md", "IDENTITY.md", "SOUL.md", "USER.md"]  # no MEMORY.md, no dot-file
    assert _names(m, "memory") == ["MEMORY.md", "memory/2026-01-01.md", "memory/notes.md"]
    notes = (ws / "memory" / "notes.md").read_bytes()
    assert _value(m, "memory", "memory/notes.md") == {"sha256": hashlib.sha256(notes).hexdigest(), "size": len(notes)}
    assert _names(m, "role") == ["agent", "defaults", "devices", "tools"]
    assert "model" not in _value(m, "role", "agent") and "model" not in _value(m, "role", "defaults")
    assert _value(m, "role", "tools") == {"allow": ["*"], "deny": []}
    (device,) = _value(m, "role", "devices")
    assert device["name"] == "phone" and device["scopes"] == ["read", "chat"] and device["revoked"] is False
    assert set(device) == {"id", "name", "scopes", "revoked"}
    assert _value(m, "model", "primary") == {"provider": "deterministic", "model": "alpha", "profile": "alpha"}
    (jid,) = _names(m, "job")
    job = _value(m, "job", jid)
    assert job["status"] == "failed" and job["error"] == "boom" and job["sessionKey"] == "agent:alice:main"
    assert set(job) == {"status", "kind", "sessionKey", "createdAt", "startedAt", "endedAt", "error"}
    assert _names(m, "session") == ["agent:alice:main", "agent:alice:other"]
    s = _value(m, "session", "agent:alice:main")
    assert s["sessionId"] == "s-main" and s["label"] == "label s-main" and s["model"] is None
    assert isinstance(s["updatedAt"], int)
    assert _names(m, "transcript") == ["s-main.jsonl", "s-other.jsonl"]
    assert _value(m, "audit", "chain") == {
        "verified": True,
        "entries": 1,
        "lastSeq": 1,
        "headHash": AuditChain(home.audit).head().hash,  # type: ignore[union-attr]
    }


def test_model_argument_wins_over_the_config(home: Home) -> None:
    m = build_manifest(home, "alice", model=("openai", "qwen2.5", "local"))
    assert _value(m, "model", "primary") == {"provider": "openai", "model": "qwen2.5", "profile": "local"}


def test_a_missing_audit_chain_is_recorded_unverified(home: Home) -> None:
    home.audit.unlink()
    m = build_manifest(home, "alice")
    assert _value(m, "audit", "chain") == {"verified": False, "entries": 0, "lastSeq": 0, "headHash": None}


def test_unknown_agent(home: Home) -> None:
    with pytest.raises(UnknownAgentError):
        build_manifest(home, "bob")


# -- chaining, recomputed with hashlib + rfc8785 + cryptography only -----------------------


def test_chain_root_signature_and_fingerprint_recompute_independently(home: Home) -> None:
    m = build_manifest(home, "alice")
    prev = "0" * 64
    for e in m["entries"]:
        body = {k: e[k] for k in ("kind", "name", "value")}
        prev = hashlib.sha256(prev.encode("ascii") + rfc8785.dumps(body)).hexdigest()
        assert e["hash"] == prev
    assert m["root"] == prev
    public = base64.b64decode(m["publicKey"])
    assert len(public) == 32
    Ed25519PublicKey.from_public_bytes(public).verify(base64.b64decode(m["signature"]), bytes.fromhex(m["root"]))
    assert m["fingerprint"] == hashlib.sha256(public).hexdigest()
    check = verify_manifest(m)
    assert check.ok and check.root_ok and check.signature_ok and check.fingerprint_ok, check.reason
    assert check.to_dict()["firstBadIndex"] is None and check.entries == len(m["entries"])


def test_no_entries_root_is_zero() -> None:
    m = seal_manifest("alice", [], key=SigningKey.generate())
    assert m["root"] == ZERO_HASH and m["entries"] == []
    assert verify_manifest(m).ok


def test_root_does_not_depend_on_created_at(home: Home) -> None:
    a = build_manifest(home, "alice", now=T1)
    b = build_manifest(home, "alice", now=T2)
    assert a["createdAt"] != b["createdAt"]
    assert a["entries"] == b["entries"] and a["root"] == b["root"]
    assert a["fingerprint"] == b["fingerprint"]


# -- tamper evidence -----------------------------------------------------------------------

_HEX_NEXT = {c: "0123456789abcdef"[("0123456789abcdef".index(c) + 1) % 16] for c in "0123456789abcdef"}


def _flip_text(s: str) -> str:
    """One character changed: hex stays hex, base64 stays base64 of the same length."""
    if not s:
        return "x"
    c = s[0]
    if c in _HEX_NEXT:
        return _HEX_NEXT[c] + s[1:]
    return ("B" if c == "A" else "A") + s[1:]


def _flip_value(v: Any) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, str):
        return _flip_text(v)
    if v is None:
        return 0
    if isinstance(v, list):
        return [_flip_value(v[0]), *v[1:]] if v else [None]
    if isinstance(v, dict):
        if not v:
            return {"": None}
        first = next(iter(v))
        return {**v, first: _flip_value(v[first])}
    raise AssertionError(type(v))


def _cases(m: dict[str, Any]) -> list[tuple[str, Any]]:
    cases: list[tuple[str, Any]] = []
    for i in range(len(m["entries"])):
        for f in ("kind", "name", "value", "hash"):
            cases.append((f"entries[{i}].{f}", (i, f)))
    for f in ("root", "signature", "publicKey", "fingerprint"):
        cases.append((f, f))
    return cases


def test_every_one_byte_change_fails_verification_naming_it(home: Home) -> None:
    m = build_manifest(home, "alice")
    cases = _cases(m)
    assert len(cases) > 40
    for label, target in cases:
        bad = copy.deepcopy(m)
        if isinstance(target, tuple):
            i, f = target
            entry = bad["entries"][i]
            entry[f] = _flip_value(entry[f]) if f == "value" else _flip_text(entry[f])
        else:
            bad[target] = _flip_text(bad[target])
        assert bad != m, label
        check = verify_manifest(bad)
        assert not check.ok, f"{label}: a change went unnoticed"
        assert check.reason is not None
        if isinstance(target, tuple):
            assert check.first_bad_index == target[0], f"{label}: {check.reason}"
            assert f"entries[{target[0]}]" in check.reason, f"{label}: {check.reason}"
        elif target == "publicKey":
            assert "publicKey" in check.reason and not check.signature_ok and not check.fingerprint_ok
        else:
            assert check.reason.startswith(target) or f"; {target}" in check.reason, f"{label}: {check.reason}"


def test_an_entry_rehashed_after_an_edit_still_breaks_the_root_or_the_signature(home: Home) -> None:
    m = build_manifest(home, "alice")
    bad = copy.deepcopy(m)
    entries = bad["entries"]
    entries[0]["value"]["size"] += 1
    prev = ZERO_HASH
    for e in entries:  # a forger recomputes every hash and the root, but cannot sign
        body = {k: e[k] for k in ("kind", "name", "value")}
        prev = e["hash"] = hashlib.sha256(prev.encode() + rfc8785.dumps(body)).hexdigest()
    bad["root"] = prev
    check = verify_manifest(bad)
    assert not check.ok and check.first_bad_index is None and check.root_ok and not check.signature_ok
    assert check.reason == "signature: does not verify over root with publicKey"


def test_resigned_with_another_key_changes_the_fingerprint(home: Home) -> None:
    m = build_manifest(home, "alice")
    other = build_manifest(home, "alice", key=SigningKey.generate())
    assert verify_manifest(other).ok
    assert other["root"] == m["root"] and other["fingerprint"] != m["fingerprint"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda m: m.update(version=2), "$.version"),
        (lambda m: m.update(version="1"), "$.version"),
        (lambda m: m.update(extra=1), "$"),
        (lambda m: m.pop("root"), "$"),
        (lambda m: m.update(publicKey="not base64!"), "$.publicKey"),
        (lambda m: m.update(publicKey=base64.b64encode(b"\x01" * 31).decode()), "$.publicKey"),
        (lambda m: m.update(signature=base64.b64encode(b"\x01" * 63).decode()), "$.signature"),
        (lambda m: m.update(signature="@@@@"), "$.signature"),
        (lambda m: m.update(agent="../etc"), "$.agent"),
        (lambda m: m.update(entries={}), "$.entries"),
        (lambda m: m["entries"][0].update(extra=1), "$.entries[0]"),
        (lambda m: m["entries"][1].pop("hash"), "$.entries[1]"),
        (lambda m: m["entries"][2].update(name=7), "$.entries[2].name"),
        (lambda m: m["entries"][0].update(value=2**60), "$.entries[0].value"),
    ],
)
def test_what_is_not_a_manifest_is_refused_with_the_field(home: Home, change: Any, field: str) -> None:
    m = build_manifest(home, "alice")
    change(m)
    with pytest.raises(ManifestError) as info:
        verify_manifest(m)
    assert info.value.field == field, str(info.value)


def test_not_an_object_is_refused() -> None:
    with pytest.raises(ManifestError, match="JSON object"):
        verify_manifest([])


# -- secrets -------------------------------------------------------------------------------


def test_no_secret_and_nothing_under_secrets_appears(home: Home) -> None:
    (home.secrets / "provider.key").write_text(PLANTED_SECRET + "\n")
    ws = home.agent("alice").workspace
    os.symlink(home.secrets / "provider.key", ws / "LINKED.md")  # a symlink out of the workspace is skipped
    os.symlink(home.secrets / "provider.key", ws / "memory" / "linked.md")
    config = json.loads(home.config.read_text())
    config.setdefault("agents", {})["alice"] = {
        "tools": {"deny": [BEARER]},
        "lifecycle": {"byChannel": {"slackToken": {"mode": "idle", "idleMinutes": 5}}},
    }
    home.config.write_text(json.dumps(config))
    m = build_manifest(home, "alice")
    text = json.dumps(m)
    key_file = home.signing_key.read_text()
    private = json.loads(key_file)["privateKey"]
    owner = home.token_file.read_text().strip()
    for secret in (PLANTED_SECRET, BEARER, "sk-LEAKED", private, owner):
        assert secret not in text
    assert "secrets" not in text and "provider.key" not in text and "LINKED" not in text and "linked" not in text
    assert _value(m, "role", "tools")["deny"] == ["[redacted]"]
    assert _value(m, "role", "agent")["lifecycle"]["byChannel"] == {"slackToken": "[redacted]"}
    cache = (home.root / "run" / "hash-cache.json").read_text()
    assert "secrets" not in cache and PLANTED_SECRET not in cache


# -- the signing key -----------------------------------------------------------------------


def test_key_created_once_0600_in_a_0700_directory(home: Home) -> None:
    assert not home.signing_key.exists()
    first = build_manifest(home, "alice")
    st = home.signing_key.stat()
    assert st.st_mode & 0o777 == 0o600
    assert home.signing_key.parent.stat().st_mode & 0o777 == 0o700
    data = home.signing_key.read_bytes()
    doc = json.loads(data)
    assert set(doc) == {"version", "algorithm", "createdAt", "privateKey", "publicKey"}
    assert doc["publicKey"] == first["publicKey"]
    second = build_manifest(home, "alice")
    assert second["fingerprint"] == first["fingerprint"]
    assert home.signing_key.read_bytes() == data and home.signing_key.stat().st_ino == st.st_ino
    assert sorted(p.name for p in home.signing_key.parent.iterdir()) == ["continuity-signing.json"]


def test_key_created_in_a_home_without_identity_dir(tmp_path: Path) -> None:
    key = load_signing_key(tmp_path / "bare")
    assert (tmp_path / "bare" / "identity").stat().st_mode & 0o777 == 0o700
    assert load_signing_key(tmp_path / "bare").fingerprint == key.fingerprint


def test_concurrent_first_use_yields_one_key(tmp_path: Path) -> None:
    root = tmp_path / "kolo"
    go = tmp_path / "go"
    code = (
        "import os, sys, time\n"
        "from kurahi.continuity import load_signing_key\n"
        "print('ready', flush=True)\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.001)\n"
        f"print(load_signing_key({str(root)!r}).fingerprint)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    for p in procs:  # every one has imported and waits at the line: then all go at once
        assert p.stdout is not None and p.stdout.readline() == "ready\n", p.communicate()
    go.write_text("")
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    fingerprints = {out.strip() for out, _ in outs}
    assert len(fingerprints) == 1
    assert fingerprints == {load_signing_key(root).fingerprint}
    assert [p.name for p in (root / "identity").iterdir()] == ["continuity-signing.json"]  # no temp files left


def test_a_key_others_can_read_is_refused(home: Home) -> None:
    key = load_signing_key(home)
    private = json.loads(home.signing_key.read_text())["privateKey"]
    os.chmod(home.signing_key, 0o640)
    with pytest.raises(SigningKeyError, match="chmod 600") as info:
        build_manifest(home, "alice")
    assert private not in str(info.value) and "0640" in str(info.value)
    assert home.signing_key.stat().st_mode & 0o777 == 0o640, "not quietly changed"
    os.chmod(home.signing_key, 0o600)
    assert build_manifest(home, "alice")["fingerprint"] == key.fingerprint


def test_a_symlinked_key_file_is_refused(home: Home, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    load_signing_key(tmp_path / "other")
    os.rename(tmp_path / "other" / "identity" / "continuity-signing.json", elsewhere)
    os.symlink(elsewhere, home.signing_key)
    with pytest.raises(SigningKeyError, match="symbolic link"):
        load_signing_key(home)


def test_private_key_never_in_repr_or_error_messages(home: Home) -> None:
    key = load_signing_key(home)
    doc = json.loads(home.signing_key.read_text())
    assert doc["privateKey"] not in repr(key) and key.fingerprint[:16] in repr(key)
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(key)
    for field, value in (("privateKey", doc["privateKey"][:-2] + "!!"), ("publicKey", doc["privateKey"])):
        broken = {**doc, field: value}
        home.signing_key.write_text(json.dumps(broken))
        with pytest.raises(SigningKeyError) as info:
            load_signing_key(home)
        assert doc["privateKey"] not in str(info.value) and doc["privateKey"][:-2] not in str(info.value)
        assert field in str(info.value)
        assert info.value.__cause__ is None
        assert info.value.__context__ is None or info.value.__suppress_context__  # no decoder message shown


def test_load_without_create(tmp_path: Path) -> None:
    with pytest.raises(SigningKeyError, match="no signing key"):
        load_signing_key(tmp_path, create=False)


# -- the hash cache ------------------------------------------------------------------------


def _cache_rows(home: Home) -> dict[str, Any]:
    rows: dict[str, Any] = json.loads((home.root / "run" / "hash-cache.json").read_text())["files"]
    return rows


def test_cache_is_used_while_the_stat_holds_and_not_after_a_new_mtime(home: Home) -> None:
    ws = home.agent("alice").workspace
    soul = ws / "SOUL.md"
    build_manifest(home, "alice")
    rows = _cache_rows(home)
    assert "agents/alice/workspace/SOUL.md" in rows and "agents/alice/sessions/s-main.jsonl" in rows
    # Plant a wrong digest with the right stat: it is used (that is what a cache does)...
    doc = json.loads((home.root / "run" / "hash-cache.json").read_text())
    doc["files"]["agents/alice/workspace/SOUL.md"][5] = "f" * 64
    (home.root / "run" / "hash-cache.json").write_text(json.dumps(doc))
    assert _value(build_manifest(home, "alice"), "identity", "SOUL.md")["sha256"] == "f" * 64
    # ...until the file's mtime moves, even with the same size and content.
    st = soul.stat()
    os.utime(soul, ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))
    real = hashlib.sha256(soul.read_bytes()).hexdigest()
    assert _value(build_manifest(home, "alice"), "identity", "SOUL.md")["sha256"] == real


def test_a_same_size_rewrite_is_rehashed(home: Home) -> None:
    soul = home.agent("alice").workspace / "SOUL.md"
    before = _value(build_manifest(home, "alice"), "identity", "SOUL.md")
    data = soul.read_bytes()
    soul.write_bytes(data[:-2] + b"X\n")
    _age(soul, 50)
    after = _value(build_manifest(home, "alice"), "identity", "SOUL.md")
    assert after["size"] == before["size"] and after["sha256"] != before["sha256"]
    assert after["sha256"] == hashlib.sha256(soul.read_bytes()).hexdigest()


def test_a_corrupt_cache_file_is_ignored_and_rebuilt(home: Home) -> None:
    good = build_manifest(home, "alice")
    path = home.root / "run" / "hash-cache.json"
    for garbage in (b"{not json", b'{"version": 1, "files": {"x": [1]}}', b'{"version": 99, "files": {}}', b"\x00"):
        path.write_bytes(garbage)
        cache = HashCache.for_home(home.root)
        assert build_manifest(home, "alice", cache=cache)["entries"] == good["entries"]
        assert cache.ignored is not None and cache.hits == 0
        assert cache.save()
        assert json.loads(path.read_text())["version"] == 1
    warm = HashCache.for_home(home.root)
    build_manifest(home, "alice", cache=warm)
    assert warm.misses == 0 and warm.hits == 9
    assert not warm.save(), "nothing changed: nothing written"


def test_recently_changed_files_are_hashed_but_not_cached(home: Home) -> None:
    user = home.agent("alice").workspace / "USER.md"
    user.write_text("changed just now\n")
    m = build_manifest(home, "alice")
    assert _value(m, "identity", "USER.md")["sha256"] == hashlib.sha256(user.read_bytes()).hexdigest()
    assert "agents/alice/workspace/USER.md" not in _cache_rows(home)
    assert "agents/alice/workspace/SOUL.md" in _cache_rows(home)


def test_a_moved_home_keeps_its_cache_and_its_key(home: Home, tmp_path: Path) -> None:
    before = build_manifest(home, "alice")
    moved = Home(tmp_path / "moved")
    os.rename(home.root, moved.root)
    cache = HashCache.for_home(moved.root)
    after = build_manifest(moved, "alice", cache=cache)
    assert cache.misses == 0 and cache.hits == 9
    assert after["fingerprint"] == before["fingerprint"]
    assert after["entries"] == before["entries"] and after["root"] == before["root"]


def test_stale_cache_rows_are_dropped(home: Home) -> None:
    build_manifest(home, "alice")
    (home.agent("alice").sessions / "s-other.jsonl").unlink()
    notes = home.agent("alice").workspace / "memory" / "notes.md"
    notes.write_text("- more\n")
    _age(notes)
    build_manifest(home, "alice")
    rows = _cache_rows(home)
    assert "agents/alice/sessions/s-other.jsonl" not in rows
    assert rows["agents/alice/workspace/memory/notes.md"][5] == hashlib.sha256(notes.read_bytes()).hexdigest()


def test_many_files_hash_in_parallel_and_agree(tmp_path: Path) -> None:
    files = []
    for i in range(12):
        p = tmp_path / f"f{i}.bin"
        p.write_bytes(os.urandom(3 << 20 if i % 3 == 0 else 1000 + i))
        _age(p)
        files.append(p)
    cache = HashCache(tmp_path / "cache.json", root=tmp_path, workers=4)
    got = cache.digests(files)
    assert [d.sha256 for d in got] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in files]
    assert [d.size for d in got] == [p.stat().st_size for p in files]
    assert cache.misses == 12 and cache.save()
    again = HashCache(tmp_path / "cache.json", root=tmp_path)
    assert again.digests(files) == got and again.hits == 12
