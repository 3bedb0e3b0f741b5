"""The seven ways a damaged or hand-edited file in the home did harm (issue 20, item 5), each driven as a user would.

Every case runs the real ``kurahi`` command in a subprocess, or the gateway on loopback, on a
home whose file was damaged by hand. Files outside the home that a symlink points at are
checked byte for byte, mode and mtime, afterwards.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from kurahi.resident.home import Home
from support.gateways import make_gateway_home, run_kurahi, serve_in_thread, start_gateway

KEY = "agent:alice:main"


def _outside(tmp_path: Path, name: str = "victim.txt") -> Path:
    """A file outside the home, mode 0644, with an mtime in the past (so a touch shows)."""
    victim = tmp_path / "outside" / name
    victim.parent.mkdir(exist_ok=True)
    victim.write_text("the owner's own file\n")
    os.chmod(victim, 0o644)
    os.utime(victim, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    return victim


def _state(p: Path) -> tuple[bytes, int, int]:
    st = os.stat(p)
    return p.read_bytes(), stat.S_IMODE(st.st_mode), st.st_mtime_ns


def _no_traceback(r: Any) -> None:
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr


def _session_file(home: Home) -> Path:
    sessions = home.root / "agents/alice/sessions"
    entry = json.loads((sessions / "sessions.json").read_text())[KEY]
    return sessions / entry["sessionFile"]


def _home_with_session(tmp_path: Path) -> Home:
    home = make_gateway_home(tmp_path)
    r = run_kurahi("agent", "send", "--home", str(home.root), "--agent", "alice", "hello", home=home)
    assert r.returncode == 0, r.stderr
    return home


# -- 1. lock files that are symlinks ----------------------------------------------------------


@pytest.mark.parametrize("lock", ["run/gateway.lock", "audit/chain.jsonl.lock", "sessions.json.lock", "transcript"])
def test_a_lock_file_that_is_a_symlink_is_refused_and_its_target_untouched(tmp_path: Path, lock: str) -> None:
    home = _home_with_session(tmp_path)
    victim = _outside(tmp_path)
    before = _state(victim)
    send = ["agent", "send", "--home", str(home.root), "--agent", "alice"]
    transcript = _session_file(home)
    if lock == "sessions.json.lock":
        path = home.root / "agents/alice/sessions/sessions.json.lock"
        # A message to a new key names a new session in the catalog, under this lock: the
        # turn fails (exit 1, as a failed turn does) and says why.
        cmd, code = [*send, "--key", "agent:alice:other", "hi"], 1
    elif lock == "transcript":
        path = transcript.with_name(transcript.name + ".lock")
        # A session that cannot be opened is rolled over, the old one kept and linked, as
        # for any unreadable session: the turn succeeds on a new transcript.
        cmd, code = [*send, "again"], 0
    else:
        path = home.root / lock
        cmd, code = ["gateway", "run", "--port", "0"], 4
    old_transcript = transcript.read_bytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(victim, path)
    r = run_kurahi(*cmd, home=home, timeout=60)
    _no_traceback(r)
    assert r.returncode == code, (r.returncode, r.stderr)
    if code:
        assert str(path) in r.stderr and "symlink" in r.stderr
    else:
        assert _session_file(home) != transcript and transcript.read_bytes() == old_transcript
    assert _state(victim) == before
    assert path.is_symlink()  # left for the owner to look at


def test_a_lock_file_with_another_hard_link_is_refused(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    elsewhere = home.root / "run" / "notes.txt"
    elsewhere.parent.mkdir(exist_ok=True)
    elsewhere.write_text("kept\n")
    os.link(elsewhere, home.lock)
    r = run_kurahi("gateway", "run", "--port", "0", home=home, timeout=60)
    _no_traceback(r)
    assert r.returncode == 4 and "hard link" in r.stderr
    assert elsewhere.read_text() == "kept\n"


# -- 2. the audit chain as a symlink ----------------------------------------------------------


def test_an_audit_chain_that_is_a_symlink_is_refused_before_any_chmod(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    victim = _outside(tmp_path, "chain.jsonl")
    before = _state(victim)
    home.audit.parent.mkdir(exist_ok=True)
    os.symlink(victim, home.audit)
    r = run_kurahi("gateway", "run", "--port", "0", home=home, timeout=60)
    _no_traceback(r)
    assert r.returncode == 4 and str(home.audit) in r.stderr and "symlink" in r.stderr
    assert _state(victim) == before  # content, mode 0644 (not 0600) and mtime
    r = run_kurahi("audit", "verify", home=home)
    _no_traceback(r)
    assert r.returncode == 4 and "symlink" in r.stderr
    assert _state(victim) == before


# -- 3. devices.json with wrong-typed values ---------------------------------------------------


def _device(**over: Any) -> dict[str, Any]:
    d = {
        "id": "dev_0123456789ab",
        "name": "phone",
        "scopes": ["read"],
        "tokenSha256": "0" * 64,
        "createdAt": 1,
        "revokedAt": None,
    }
    d.update(over)
    return d


@pytest.mark.parametrize(
    ("field", "value"), [("createdAt", "abc"), ("scopes", 5), ("revokedAt", 1.5), ("tokenSha256", 7)]
)
def test_a_mistyped_device_registry_is_a_json_error_naming_the_field(tmp_path: Path, field: str, value: Any) -> None:
    home = make_gateway_home(tmp_path)
    with serve_in_thread(home) as s:
        with s.client() as owner:
            paired = owner.post("/api/devices", json={"name": "phone", "scopes": ["read"]}).json()
        s.watch.add(paired["token"])
        doc = json.loads(home.devices.read_text())
        doc["devices"][0][field] = value
        home.devices.write_text(json.dumps(doc))
        with s.client(paired["token"]) as device, s.client("wrong") as wrong, s.client() as owner:
            for c in (device, wrong):
                r = c.get("/api/agents")
                assert r.status_code == 500 and r.headers["content-type"] == "application/json", r.text
                err = r.json()["error"]
                assert err["code"] == "credentials_unusable"
                # Names the file, but not where the home is: the caller is not known (issue 29).
                assert "<home>/devices.json" in err["message"] and field in err["message"]
                assert str(home.root) not in err["message"]
                assert "Traceback" not in r.text
            # The owner is not locked out by a broken registry.
            assert owner.get("/api/agents").status_code == 200


def test_a_revoked_device_stays_revoked_whatever_its_revokedAt_became(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    with serve_in_thread(home) as s:
        with s.client() as owner:
            paired = owner.post("/api/devices", json={"name": "phone", "scopes": ["read"]}).json()
            s.watch.add(paired["token"])
            assert owner.delete(f"/api/devices/{paired['device']['id']}").status_code == 200
        with s.client(paired["token"]) as device:
            assert device.get("/api/agents").status_code == 401
            for revoked in (1.5, "yesterday", True, -1):
                doc = json.loads(home.devices.read_text())
                doc["devices"][0]["revokedAt"] = revoked
                home.devices.write_text(json.dumps(doc))
                r = device.get("/api/agents")
                assert r.status_code == 500 and r.json()["error"]["code"] == "credentials_unusable", (revoked, r.text)


# -- 4. access files that are directories ------------------------------------------------------


@pytest.mark.parametrize("which", ["devices", "token_file", "signing_key"])
def test_an_access_file_that_is_a_directory_is_a_clear_error(tmp_path: Path, which: str) -> None:
    home = make_gateway_home(tmp_path)
    path: Path = getattr(home, which)
    path.unlink(missing_ok=True)
    path.parent.mkdir(exist_ok=True, mode=0o700)
    path.mkdir(mode=0o700)
    for cmd in (["gateway", "run", "--port", "0"], ["init", "--home", str(home.root), "--agent", "alice"]):
        r = run_kurahi(*cmd, home=home, timeout=60)
        _no_traceback(r)
        assert r.returncode == 4, (cmd, r.returncode, r.stderr)
        assert str(path) in r.stderr and "directory" in r.stderr
    assert path.is_dir()


# -- 5. one damaged session or queued record does not stop the gateway -----------------------


def test_one_unwritable_transcript_and_one_nul_key_record_disable_only_themselves(tmp_path: Path) -> None:
    home = _home_with_session(tmp_path)
    victim = _outside(tmp_path)
    before = _state(victim)
    # alice's main session: its transcript replaced by a link out of the home, and a message
    # queued for it; then a queued record whose key holds a NUL (no session can have it).
    transcript = _session_file(home)
    transcript.unlink()
    os.symlink(victim, transcript)
    queue = home.root / "agents/alice/queue/queue.jsonl"
    queue.parent.mkdir(exist_ok=True)
    records = [
        {"op": "put", "qid": "q-main", "key": KEY, "mode": "followup", "message": {"text": "x"}, "ts": 1},
        {"op": "put", "qid": "q-nul", "key": "agent:alice:\x00x", "message": {"text": "y"}, "ts": 1},
    ]
    queue.write_text("".join(json.dumps(r) + "\n" for r in records))
    queue_bytes = queue.read_bytes()
    proc = start_gateway(home)
    try:
        log = (home.root / "gateway.log").read_text()
        assert str(transcript) in log and "symlink" in log, log
        assert str(queue) in log and "U+0000" in log, log
        assert "Traceback" not in log
        from kurahi.gateway.client import GatewayClient

        with GatewayClient.for_home(home) as c:
            other = c.chat("alice", "hello on another session", key="agent:alice:other")
            assert other["status"] == "ok"
        assert queue.read_bytes().startswith(queue_bytes)  # both records are still there, untouched
    finally:
        proc.terminate()
        proc.wait(30)
    assert _state(victim) == before
    assert transcript.is_symlink()


# -- 6. an empty owner token --------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"", b"\n  \n", b"two words\n", b"\xff\xfe\n"])
def test_an_empty_or_unusable_owner_token_is_refused_at_start(tmp_path: Path, content: bytes) -> None:
    home = make_gateway_home(tmp_path)
    home.token_file.write_bytes(content)
    r = run_kurahi("gateway", "run", "--port", "0", home=home, timeout=60)
    _no_traceback(r)
    assert r.returncode == 4 and str(home.token_file) in r.stderr, r.stderr
    assert home.token_file.read_bytes() == content


# -- 7. leftover temporary files; a config patch that would break every turn ------------------


def test_leftover_temp_files_are_removed_at_start_and_never_listed(tmp_path: Path) -> None:
    home = _home_with_session(tmp_path)
    ws = home.root / "agents/alice/workspace"
    old = time.time() - 3600
    leftovers = [
        ws / ".MEMORY.md.0a1b2c3d.tmp",
        ws / "memory" / ".today.md.deadbeef.tmp",
        home.root / ".config.json.0123abcd.tmp",
        home.root / "agents/alice/sessions/.sessions.json.89abcdef.tmp",
        home.root / "identity/.continuity-signing.json.0123456789ab.tmp",
    ]
    kept = [
        ws / "notes.deadbeef.tmp",  # no leading dot: not a name Kurahi gives
        ws / ".notes.tmp",
        ws / ".draft.md.DEADBEEF.tmp",  # upper-case hex: not Kurahi's
        ws / ".fresh.md.feedface.tmp",  # Kurahi's name, but young: a write may be in flight
    ]
    for p in [*leftovers, *kept]:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("half")
        if p.name != ".fresh.md.feedface.tmp":
            os.utime(p, (old, old))
    outside = _outside(tmp_path, ".victim.txt.0a1b2c3d.tmp")
    os.utime(outside, (old, old))
    link = ws / ".link.md.0a1b2c3d.tmp"
    os.symlink(outside, link)
    with serve_in_thread(home) as s, s.client() as c:
        for p in leftovers:
            assert not p.exists(), p
        for p in kept:
            assert p.exists(), p
        assert link.is_symlink() and outside.exists()  # a link is never Kurahi's temporary file
        r = c.post("/api/agents/alice/chat", json={"message": 'look [[tool:list {"path": "."}]]'}).json()
        assert r["status"] == "ok"
        listing = _tool_results(home)
        assert "notes.deadbeef.tmp" in listing and ".fresh.md.feedface.tmp" not in listing
        assert ".link.md.0a1b2c3d.tmp" not in listing


def _tool_results(home: Home) -> str:
    out = []
    for line in _session_file(home).read_text().splitlines():
        rec = json.loads(line)
        msg = rec.get("message") or {}
        if msg.get("role") == "toolResult":
            out += [c.get("text", "") for c in msg.get("content", [])]
    return "\n".join(out)


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"defaults": {"maxSteps": 0}}, "maxSteps"),
        ({"agents": {"alice": {"maxSteps": -3}}}, "maxSteps"),
        ({"defaults": {"queue": {"cap": 0}}}, "cap"),
        ({"agents": {"bob": {"maxMessageBytes": -1}}}, "maxMessageBytes"),
        ({"models": {"alpha": {"timeoutS": -1}}}, "timeoutS"),
        ({"defaults": {"compaction": {"reserveTokens": -5}}}, "reserveTokens"),
        ({"defaults": {"lifecycle": {"default": {"atHour": 24}}}}, "atHour"),
    ],
)
def test_a_config_patch_with_a_limit_out_of_range_is_refused_naming_the_field(
    tmp_path: Path, patch: dict[str, Any], field: str
) -> None:
    home = make_gateway_home(tmp_path)
    stored = home.config.read_bytes()
    with serve_in_thread(home) as s, s.client() as c:
        r = c.post("/api/config/apply", json={"patch": patch})
        assert r.status_code == 422, r.text
        assert r.json()["error"]["code"] == "invalid_config" and field in r.json()["error"]["message"]
        assert home.config.read_bytes() == stored
        assert c.post("/api/agents/alice/chat", json={"message": "still fine"}).json()["status"] == "ok"


def test_init_never_chmods_a_directory_a_symlink_points_at(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    elsewhere = tmp_path / "outside" / "run"
    elsewhere.mkdir(parents=True)
    os.chmod(elsewhere, 0o755)
    for p in home.lock.parent.iterdir():
        p.unlink()
    home.lock.parent.rmdir()
    os.symlink(elsewhere, home.lock.parent)
    r = run_kurahi("init", "--home", str(home.root), "--agent", "alice", home=home)
    _no_traceback(r)
    assert r.returncode == 4 and str(home.lock.parent) in r.stderr and "symlink" in r.stderr
    assert stat.S_IMODE(os.stat(elsewhere).st_mode) == 0o755


# -- 8. a transcript that is a symlink is not read either -------------------------------------


def test_a_transcript_replaced_by_a_symlink_is_never_read_through(tmp_path: Path) -> None:
    """Writers always refused a linked transcript; now readers do too (the carry of a rollover, export)."""
    from kurahi.errors import TranscriptReadError
    from kurahi.store.open import open_backend

    home = _home_with_session(tmp_path)
    transcript = _session_file(home)
    # A valid session outside the home, with a phrase that must never reach the resident.
    outside = tmp_path / "outside" / "elsewhere.jsonl"
    outside.parent.mkdir(exist_ok=True)
    lines = transcript.read_bytes().splitlines(keepends=True)
    secret = json.loads(lines[-1])
    secret["id"], secret["parentId"] = "feedf00d", secret["id"]
    secret["message"] = {"role": "user", "content": "OUTSIDE-SECRET-PHRASE", "timestamp": 1}
    outside.write_bytes(b"".join(lines) + json.dumps(secret).encode() + b"\n")
    os.utime(outside, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = _state(outside)
    transcript.unlink()
    transcript.symlink_to(outside)

    backend = open_backend(str(home.root))
    try:
        store = backend.agent("alice").transcripts
        assert store.exists(transcript.name)  # the name is taken: rolled over and kept, never replaced
        assert store.info(transcript.name) is None
        for read in (store.read, store.export):
            with pytest.raises(TranscriptReadError, match="symlink"):
                read(transcript.name)
    finally:
        backend.close()

    r = run_kurahi("agent", "send", "--home", str(home.root), "--agent", "alice", "again", home=home)
    _no_traceback(r)
    assert r.returncode == 0, r.stderr
    assert _state(outside) == before
    assert transcript.is_symlink()  # left for the owner to look at, not replaced through
    now = _session_file(home)
    assert now != transcript and not now.is_symlink()
    assert b"OUTSIDE-SECRET-PHRASE" not in now.read_bytes()
