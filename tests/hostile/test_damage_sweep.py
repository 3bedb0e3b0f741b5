"""The generated sweep: every file Kurahi reads from a home, times every way to damage it.

For each pair the real gateway is started on a copy of a lived-in home (``kurahi gateway run``
in a subprocess) and, when it starts, asked what an owner asks (agents, a chat turn, the
session, the audit chain, a continuity manifest); then the commands that read the file
(``audit verify|tail``, ``sessions ls``, ``actions ls``, ``agent jobs``) run. The rule:

- no traceback anywhere (gateway log, command output, HTTP bodies), every HTTP error JSON;
- a refusal to start is exit 4 (damaged input) or 1 (a check that failed, an audit chain
  that does not verify) with one line naming the file;
- the gateway starts whenever the damage is limited to one session, one record or a cache;
- no file outside the home changes (content, mode, mtime): a symlink's target included.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from kurahi.continuity.api import install as continuity_api
from kurahi.gateway.lock import gateway_info
from kurahi.resident.home import Home
from kurahi.resident.init import init_home
from support.gateways import KURAHI, serve_in_thread
from support.home_damage import DAMAGES, HOME_FILES, HomeFile, applies, copy_home, damage_file, snapshot

KEY = "agent:alice:main"
CASES = [(f, d) for f in HOME_FILES for d in DAMAGES if applies(f, d)]


@pytest.fixture(scope="module")
def lived_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with every file Kurahi keeps: turns with tool calls, a job, a device, a config apply, a manifest."""
    root = tmp_path_factory.mktemp("lived") / "kolo"
    init_home(root, "alice", marker="ALICE-7F3A")
    home = Home(root)
    with serve_in_thread(home, plugins=[continuity_api]) as s, s.client() as c:
        for message in (
            'save [[tool:write {"path": "todo.md", "content": "1. a"}]]',
            'note [[tool:memory_append {"text": "the lantern is cobalt", "file": "notes.md"}]]',
            "hello again",
        ):
            assert c.post("/api/agents/alice/chat", json={"message": message}).json()["status"] == "ok"
        job = c.post("/api/agents/alice/jobs", json={"message": "background"}).json()["id"]
        deadline = time.monotonic() + 30
        while c.get(f"/api/agents/alice/jobs/{job}").json()["status"] != "succeeded":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert c.post("/api/devices", json={"name": "phone", "scopes": ["read"]}).status_code == 201
        assert c.post("/api/config/apply", json={"patch": {"defaults": {"queue": {"cap": 10}}}}).status_code == 200
        # The hash cache keeps only digests of files that were not changing as they were hashed.
        past = time.time() - 3600
        for p in (root / "agents").rglob("*"):
            if p.is_file():
                os.utime(p, (past, past))
        assert c.get("/api/continuity/manifest", params={"agent": "alice"}).status_code == 200
    queue = root / "agents/alice/queue/queue.jsonl"
    queue.parent.mkdir(exist_ok=True, mode=0o700)
    if not queue.exists():  # nothing was ever busy: the records a busy session leaves
        put = {"op": "put", "qid": "q1", "key": KEY, "mode": "followup", "message": {"text": "x"}, "ts": 1}
        queue.write_text(json.dumps(put) + "\n" + json.dumps({"op": "done", "qids": ["q1"], "ts": 2}) + "\n")
        os.chmod(queue, 0o600)
    # A stale lock, as a killed gateway leaves it (the flock is gone, the file stays).
    home.lock.write_text(json.dumps({"pid": 1, "port": 1, "startedAt": "2026-01-01T00:00:00.000Z"}))
    os.chmod(home.lock, 0o600)
    for f in HOME_FILES:
        assert _path(root, f).is_file(), f.rel
    return root


def _path(root: Path, f: HomeFile) -> Path:
    if "{session}" in f.rel:
        catalog = json.loads((root / "agents/alice/sessions/sessions.json").read_text())
        return root / f.rel.format(session=catalog[KEY]["sessionFile"])
    return root / f.rel


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KOLO_HOME": str(home)}
    env.pop("KOLO_GATEWAY_TOKEN", None)
    return subprocess.run([*KURAHI, *args], capture_output=True, text=True, timeout=120, env=env)


def _json_answers(url: str, token: str) -> list[httpx.Response]:
    """What an owner asks a gateway: every answer must be JSON, whatever its status."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as c:
        return [
            c.get("/api/agents"),
            c.post("/api/agents/alice/chat", json={"message": "a new session", "key": "agent:alice:sweep"}),
            c.post("/api/agents/alice/chat", json={"message": "the main session"}),
            c.get("/api/agents/alice/session"),
            c.get("/api/audit/chain"),
            c.get("/api/continuity/manifest", params={"agent": "alice"}),
        ]


@pytest.mark.parametrize(("f", "damage"), CASES, ids=[f"{f.rel.split('/')[-1]}-{d}" for f, d in CASES])
def test_a_damaged_file_does_no_harm(lived_in: Path, tmp_path: Path, f: HomeFile, damage: str) -> None:
    root = tmp_path / "kolo"
    copy_home(lived_in, root)
    outside = tmp_path / "outside"
    outside.mkdir()
    token = Home(root).token_file.read_text().strip()
    path = _path(root, f)
    damage_file(path, f.kind, damage, outside)
    before = snapshot(outside)

    log_path = tmp_path / "gateway.log"
    env = {**os.environ, "KOLO_HOME": str(root)}
    env.pop("KOLO_GATEWAY_TOKEN", None)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [*KURAHI, "gateway", "run", "--port", "0", "--grace", "1"], stdout=log, stderr=log, env=env
        )
    deadline = time.monotonic() + 60
    answers: list[httpx.Response] = []
    try:
        while (info := gateway_info(Home(root).lock)) is None or info.pid != proc.pid:
            if proc.poll() is not None:
                break
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.02)
        started = proc.poll() is None
        if started:
            answers = _json_answers(f"http://127.0.0.1:{info.port}", token)  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(60)
    log = log_path.read_text(errors="replace")
    assert "Traceback" not in log, log
    # A journal replaced whole (a link, a directory) is the agent's, not one record's.
    scope = "agent" if f.scope == "record" and damage in ("symlink", "directory") else f.scope
    if not started:
        assert scope in ("home", "agent"), f"the gateway refused to start over {f.rel} ({f.scope}): {log}"
        assert proc.returncode in (1, 4), (proc.returncode, log)
        assert str(path) in log, log
    for r in answers:
        assert r.headers.get("content-type", "").startswith("application/json"), (r.request.url, r.status_code, r.text)
        assert "Traceback" not in r.text
        if r.status_code >= 500:
            assert r.json()["error"]["code"] != "internal", (r.request.url, r.text)
    if started and scope in ("session", "record", "cache"):
        # Limited damage: everything else still works, a fresh session above all.
        assert answers[0].status_code == 200 and answers[1].status_code == 200, [a.text for a in answers[:2]]
        assert answers[1].json()["status"] == "ok"

    readers = {
        "audit/chain.jsonl": [("audit", "verify"), ("audit", "tail")],
        "agents/alice/sessions/sessions.json": [("sessions", "ls", "--home", str(root), "--agent", "alice")],
        "agents/alice/sessions/{session}": [("sessions", "ls", "--home", str(root), "--agent", "alice")],
        "agents/alice/actions/ledger.jsonl": [("actions", "ls", "--home", str(root), "--agent", "alice")],
        "agents/alice/jobs/jobs.jsonl": [("agent", "jobs", "--home", str(root), "--agent", "alice")],
    }
    for cmd in readers.get(f.rel, []):
        r = _run(root, *cmd)
        assert "Traceback" not in r.stderr + r.stdout, (cmd, r.stderr)
        assert r.returncode in (0, 1, 3, 4), (cmd, r.returncode, r.stderr)
    assert snapshot(outside) == before, "a file outside the home changed"
    _record(f, damage, started, proc.returncode, log, answers)


def _record(f: HomeFile, damage: str, started: bool, code: int | None, log: str, answers: list[httpx.Response]) -> None:
    """With ``KURAHI_DAMAGE_TABLE`` set, append what happened (one JSON line) for docs/hostile.md's table."""
    out = os.environ.get("KURAHI_DAMAGE_TABLE")
    if not out:
        return
    warnings = [line for line in log.splitlines() if line.startswith(("warning:", "error:"))]
    row = {
        "file": f.rel,
        "damage": damage,
        "started": started,
        "exit": None if started else code,
        "message": warnings[0][:200] if warnings else "",
        "http": [r.status_code for r in answers],
        "codes": [r.json()["error"]["code"] for r in answers if r.status_code >= 400],
    }
    with open(out, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")
