"""A SIGKILL campaign against the gateway under a mixed workload, and the checks after each restart.

A client thread drives the gateway over HTTP with chat turns that call tools (``write`` and
``memory_append``), background jobs, session resets, config applies and device pairings,
recording what the gateway acknowledged. The gateway process is killed with SIGKILL at a
random moment, restarted, and before the load resumes the files are checked:

* every acknowledged chat message is in one of the agent's transcripts;
* every acknowledged device pairing is in ``devices.json`` and every acknowledged config
  apply's value is in ``config.json``;
* the catalog parses and the audit chain verifies;
* no job is left ``queued`` or ``running``;
* no side effect ran twice: each ``memory_append`` action tag appears at most once.
"""

from __future__ import annotations

import json
import random
import re
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from gateways import start_gateway
from kurahi.gateway.audit import AuditChain
from kurahi.gateway.lock import gateway_info
from kurahi.resident.home import Home
from kurahi.store.catalog import Catalog

_TAG = re.compile(r"<!-- kurahi:action (\S+) -->")


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
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kills": self.kills,
            "acknowledgedChats": len(self.chats),
            "acknowledgedPairings": len(self.devices),
            "acknowledgedConfigApplies": len(self.caps),
            "jobsStarted": self.jobs_started,
            "resets": self.resets,
            "failures": self.failures,
        }


def check(home: Home, report: GatewayCampaign) -> None:
    """The invariants on the files as they are now (the gateway has restarted since the kill)."""
    paths = home.agent("alice")
    texts = "".join(p.read_text(errors="replace") for p in paths.sessions.glob("*.jsonl"))
    for chat in sorted(report.chats):
        if json.dumps(chat)[1:-1] not in texts:
            report.failures.append(f"acknowledged chat {chat!r} is in no transcript")
    registry = home.devices.read_text() if home.devices.exists() else ""
    for dev in report.devices:
        if dev not in registry:
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
                return  # the gateway died under us: what was acknowledged is recorded


def run_gateway_campaign(home: Home, kills: int, *, seed: int = 1, max_kill_after: float = 1.0) -> GatewayCampaign:
    """Kill the gateway ``kills`` times at random moments under load; check after every restart."""
    rng = random.Random(seed)
    report = GatewayCampaign()
    n = 0
    for _ in range(kills):
        proc = start_gateway(home, grace=0.2)
        check(home, report)
        stop = threading.Event()
        worker = threading.Thread(target=_load, args=(home, report, stop, rng, n), daemon=True)
        worker.start()
        time.sleep(rng.uniform(0.05, max_kill_after))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        report.kills += 1
        stop.set()
        worker.join(15)
        n += 10_000
    proc = start_gateway(home, grace=0.2)
    check(home, report)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    return report
