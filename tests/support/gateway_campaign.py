"""A SIGKILL campaign against the gateway under a mixed workload, and the checks after each restart.

A client thread drives the gateway over HTTP with chat turns that call tools (``write`` and
``memory_append``), background jobs, session resets, config applies and device pairings,
recording what the gateway acknowledged. In some rounds a second thread also activates a
reconstructed session (``lineage stitch`` + ``activate plan`` in the campaign, ``kurahi
activate apply`` as a subprocess, which stops and restarts the gateway itself). At a random
moment everything of the resident is killed with SIGKILL, as a power cut would: the gateway
(whichever process holds the home's lock, and any gateway an apply was starting) and an apply
in flight. An interrupted activation is finished by rerunning ``activate apply`` (offline:
nothing runs), the gateway is restarted, and before the load resumes the files are checked:

* every acknowledged chat message is in one of the agent's transcripts;
* every acknowledged device pairing is in ``devices.json`` and every acknowledged config
  apply's value is in ``config.json``;
* the catalog parses and the audit chain verifies;
* no job is left ``queued`` or ``running``;
* no side effect ran twice: each ``memory_append`` action tag appears at most once;
* the activated key points at the candidate of the last activation that was acknowledged or
  finished by a rerun, its file holds that activation's marker, and ``activate verify`` agrees.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from kurahi.gateway.lock import gateway_info
from kurahi.lifecycle.activation import plan_activation, verify_package
from kurahi.lineage.stitch import stitch
from kurahi.resident.home import Home
from kurahi.store.audit.log_file import AuditChain
from kurahi.store.catalog import Catalog
from kurahi.testing import build_session
from support.gateways import KURAHI, run_kurahi, start_gateway

ACT_KEY = "agent:alice:activated"
"""The key activations replace; nothing else writes to it, so its expected state is known."""

_TAG = re.compile(r"<!-- kurahi:action (\S+) -->")
_SAID = re.compile(rb"msg \d+ \[\[tool:(?:memory_append|write) \{[^}]*\}\]\]")
"""A chat message of the load, as it appears in a transcript once JSON's quote escapes are undone."""


@dataclass
class GatewayCampaign:
    kills: int = 0
    chats: set[str] = field(default_factory=set)
    devices: set[str] = field(default_factory=set)
    caps: list[int] = field(default_factory=list)
    """Acknowledged queue caps, in order."""
    last_acked: int = -1
    """Index in ``tried`` of the last acknowledged apply."""
    tried: list[int] = field(default_factory=list)
    """Every cap sent, acknowledged or not, in order."""
    jobs_started: int = 0
    resets: int = 0
    activations_started: int = 0
    """Applies started (a round may end while its activation is still being planned)."""
    activations: int = 0
    """Applies that exited 0 before the kill."""
    finished_by_rerun: int = 0
    """Applies the kill interrupted, finished by rerunning ``activate apply``."""
    active: tuple[Path, str, str] | None = None
    """(package, candidate session id, marker) of the last activation known to be complete."""
    inflight: tuple[Path, str, str, subprocess.Popen[bytes]] | None = None
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kills": self.kills,
            "acknowledgedChats": len(self.chats),
            "acknowledgedPairings": len(self.devices),
            "acknowledgedConfigApplies": len(self.caps),
            "jobsStarted": self.jobs_started,
            "resets": self.resets,
            "activationsStarted": self.activations_started,
            "acknowledgedActivations": self.activations,
            "activationsFinishedByRerun": self.finished_by_rerun,
            "failures": self.failures,
        }


def check(home: Home, report: GatewayCampaign) -> None:
    """The invariants on the files as they are now (the gateway has restarted since the kill)."""
    paths = home.agent("alice")
    # Every file is read again after every kill (nothing is cached between checks), but the
    # chats are matched as a set: substring searches would make 1,000 kills quadratic.
    said = {
        m.decode() for p in paths.sessions.glob("*.jsonl") for m in _SAID.findall(p.read_bytes().replace(b'\\"', b'"'))
    }
    for chat in sorted(report.chats - said):
        report.failures.append(f"acknowledged chat {chat!r} is in no transcript")
    registry = json.loads(home.devices.read_bytes()) if home.devices.exists() else {"devices": []}
    for dev in report.devices - {d["id"] for d in registry["devices"]}:
        report.failures.append(f"acknowledged device {dev} is missing from devices.json")
    if report.caps:
        cap = json.loads(home.config.read_text()).get("defaults", {}).get("queue", {}).get("cap")
        # The last acknowledged value, or one sent after it whose answer the kill cut off
        # (an unacknowledged write may land or not; an acknowledged one must not be lost).
        if cap not in report.tried[report.last_acked :]:
            report.failures.append(
                f"config.json has queue cap {cap}, the last acknowledged apply set {report.caps[-1]}"
            )
    try:
        Catalog(paths.catalog).items()
    except Exception as exc:
        report.failures.append(f"catalog does not parse: {exc}")
    v = AuditChain(home.audit).verify()
    if not v.ok:
        report.failures.append(f"audit chain does not verify: {v.reason}")
    states: dict[str, str] = {}
    if paths.jobs.exists():
        for line in paths.jobs.read_bytes().split(b"\n"):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") == "created":
                states[rec["id"]] = "queued"
            elif states.get(rec.get("id")) in ("queued", "running"):
                states[rec["id"]] = rec.get("event", "?")
    for jid, state in states.items():
        if state in ("queued", "running"):
            report.failures.append(f"job {jid} is still {state}")
    memory = "".join(p.read_text(errors="replace") for p in (paths.workspace / "memory").glob("*.md"))
    for tag, n in Counter(_TAG.findall(memory)).items():
        if n > 1:
            report.failures.append(f"side effect of {tag} ran {n} times")
    if report.active is not None:
        package, session_id, marker = report.active
        entry = Catalog(paths.catalog).get(ACT_KEY)
        if entry is None or entry.get("sessionId") != session_id:
            got = entry and entry.get("sessionId")
            report.failures.append(f"{ACT_KEY} points at {got}, the last activation installed {session_id}")
        elif marker.encode() not in (paths.sessions / entry["sessionFile"]).read_bytes():
            report.failures.append(f"the activated transcript of {ACT_KEY} lacks {marker}")
        elif not (v := verify_package(package, home.root)).ok:
            report.failures.append(f"activate verify {package.name}: {[p['part'] for p in v.parts if not p['ok']]}")


def _load(home: Home, report: GatewayCampaign, stop: threading.Event, rng: random.Random, n0: int) -> None:
    info = gateway_info(home.lock)
    if info is None:
        return
    token = home.token_file.read_text().strip()
    with httpx.Client(
        base_url=f"http://127.0.0.1:{info.port}", headers={"Authorization": f"Bearer {token}"}, timeout=10
    ) as c:
        n = n0
        while not stop.is_set():
            n += 1
            kind = rng.random()
            try:
                if kind < 0.55:
                    text = f'msg {n} [[tool:memory_append {{"text": "note {n}", "file": "notes.md"}}]]'
                    if n % 2:
                        text = f'msg {n} [[tool:write {{"path": "w{n % 5}.md", "content": "v{n}"}}]]'
                    r = c.post("/api/agents/alice/chat", json={"message": text, "key": f"agent:alice:k{n % 3}"})
                    if r.status_code == 200 and r.json()["status"] == "ok":
                        report.chats.add(text)
                elif kind < 0.7:
                    r = c.post(
                        "/api/agents/alice/jobs", json={"message": f"job {n} [[slow:300]]", "key": "agent:alice:jobs"}
                    )
                    report.jobs_started += r.status_code == 202
                elif kind < 0.8:
                    r = c.post("/api/agents/alice/sessions/reset", json={"key": f"agent:alice:k{n % 3}"})
                    report.resets += r.status_code == 200
                elif kind < 0.9:
                    cap = 10 + n % 50
                    report.tried.append(cap)
                    r = c.post("/api/config/apply", json={"patch": {"defaults": {"queue": {"cap": cap}}}})
                    if r.status_code == 200:
                        report.caps.append(cap)
                        report.last_acked = len(report.tried) - 1
                else:
                    r = c.post("/api/devices", json={"name": f"dev{n}", "scopes": ["read"]})
                    if r.status_code == 201:
                        report.devices.add(r.json()["device"]["id"])
            except httpx.HTTPError:
                # The gateway died under us (the kill, or an apply restarting it on the same
                # port). Nothing unacknowledged is recorded; try again until the round ends.
                stop.wait(0.05)


def _activate(home: Home, report: GatewayCampaign, guard: threading.Lock, stop: threading.Event, n: int) -> None:
    """One activation: stitch a new older history A_n onto the key's live session, plan, apply."""
    scratch = home.root.parent / "activations"
    scratch.mkdir(exist_ok=True)
    sessions = home.agent("alice").sessions
    entry = Catalog(sessions / "sessions.json").get(ACT_KEY)
    assert entry is not None, f"{ACT_KEY} has no session"
    marker = f"ACT-MARK-{n}"
    a, c, pkg = scratch / f"A{n}.jsonl", scratch / f"C{n}.jsonl", scratch / f"pkg{n}"
    try:
        build_session(a, entries=24, seed=n, branch_chance=0, compact_every=10**9, markers=[marker])
        stitch([a, sessions / entry["sessionFile"]], c, force=True)  # build_session's clock runs ahead
        plan = plan_activation(home.root, "alice", ACT_KEY, c, pkg, markers=[marker])
    except Exception as exc:  # the live state is not changed by planning; say why it failed
        report.failures.append(f"planning activation {n}: {exc!r}")
        return
    session_id = plan.plan.candidate_session_id
    with guard:
        if stop.is_set():
            return  # the round ended while planning: nothing was applied
        env = {**os.environ, "KOLO_HOME": str(home.root)}
        env.pop("KOLO_GATEWAY_TOKEN", None)
        proc = subprocess.Popen(
            [*KURAHI, "activate", "apply", str(pkg), "--json", "--timeout", "20"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        report.inflight = (pkg, session_id, marker, proc)
        report.activations_started += 1
    _, err = proc.communicate()
    with guard:
        if proc.returncode == 0:
            report.inflight = None
            report.activations += 1
            report.active = (pkg, session_id, marker)
        elif not stop.is_set():
            report.inflight = None
            report.failures.append(f"activate apply {pkg.name} exited {proc.returncode}: {err.decode()[-500:]}")
        # else: killed mid-way; the campaign reruns it after the kill


def _kill_everything(home: Home, proc: subprocess.Popen[bytes], report: GatewayCampaign) -> None:
    """SIGKILL the apply in flight, every gateway of ``home`` and ``proc``; wait until the lock is free."""
    if report.inflight is not None:
        report.inflight[3].kill()
        report.inflight[3].wait()
    proc.kill()
    proc.wait()
    # An apply starts its gateway detached (a session of its own), so killing the apply does
    # not reach it; find every gateway of this home by its command line.
    needle = str(home.root).encode()
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit() or int(pid_dir.name) == os.getpid():
            continue
        try:
            cmd = (pid_dir / "cmdline").read_bytes()
            environ = (pid_dir / "environ").read_bytes()
        except OSError:
            continue
        if b"gateway\0run" in cmd and (needle in cmd or b"KOLO_HOME=" + needle + b"\0" in environ):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_dir.name), signal.SIGKILL)
    deadline = time.monotonic() + 30
    while gateway_info(home.lock) is not None:
        assert time.monotonic() < deadline, "a gateway of the home survived SIGKILL"
        time.sleep(0.02)


def _finish_interrupted_activation(home: Home, report: GatewayCampaign) -> None:
    """Rerun ``activate apply`` on an apply the kill interrupted (offline: nothing runs now)."""
    if report.inflight is None:
        return
    pkg, session_id, marker, _ = report.inflight
    report.inflight = None
    rerun = run_kurahi("activate", "apply", str(pkg), "--offline", "--json", home=home)
    if rerun.returncode == 0:
        report.finished_by_rerun += 1
        report.active = (pkg, session_id, marker)
    else:
        report.failures.append(f"rerunning activate apply {pkg.name} exited {rerun.returncode}: {rerun.stderr}")


def run_gateway_campaign(
    home: Home, kills: int, *, seed: int = 1, max_kill_after: float = 1.0, activate_share: float = 0.2
) -> GatewayCampaign:
    """Kill the resident ``kills`` times at random moments under load; check after every restart.

    ``activate_share`` is the share of rounds that also run an activation; those rounds last
    up to four times longer, so the kill can land anywhere in the apply.
    """
    # Two streams: the load thread draws from its own, so which rounds activate and when
    # the kills come depend on the seed alone, not on how far the load got.
    rng, load_rng = random.Random(seed), random.Random(seed + 1)
    report = GatewayCampaign()
    if activate_share > 0:
        proc = start_gateway(home, grace=0.2)
        made = run_kurahi("chat", "--agent", "alice", "--key", ACT_KEY, "the key activations replace", home=home)
        assert made.returncode == 0, made.stderr
        proc.send_signal(signal.SIGTERM)  # a graceful stop writes the turn's activity clocks
        proc.wait(timeout=30)
    n = 0
    for _ in range(kills):
        proc = start_gateway(home, grace=0.2)
        check(home, report)
        stop, guard = threading.Event(), threading.Lock()
        workers = [threading.Thread(target=_load, args=(home, report, stop, load_rng, n), daemon=True)]
        activating = rng.random() < activate_share
        if activating:
            workers.append(threading.Thread(target=_activate, args=(home, report, guard, stop, n), daemon=True))
        for w in workers:
            w.start()
        time.sleep(rng.uniform(0.05, max_kill_after * (4 if activating else 1)))
        with guard:
            stop.set()
            _kill_everything(home, proc, report)
        report.kills += 1
        for w in workers:
            w.join(30)
        _finish_interrupted_activation(home, report)
        n += 10_000
    proc = start_gateway(home, grace=0.2)
    check(home, report)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    return report
