"""A SIGKILL campaign against the runtime, and the checks run on what it leaves.

:func:`run_campaign` starts ``turn_worker.py`` as a subprocess, kills it with SIGKILL at
random moments, restarts it from the first unacknowledged turn, and after every restart
checks the invariants of the agent issue:

* every acknowledged user message is in the transcript;
* every tool call in the transcript has a result (real, or an explicit error such as an
  unknown outcome), once the restarted runtime has opened the session;
* no side effect ran twice: no action id appears twice in ``effects.log``;
* no job is left ``queued`` or ``running``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKER = Path(__file__).with_name("turn_worker.py")


@dataclass
class CampaignReport:
    turns: int = 0
    kills: int = 0
    acked: set[int] = field(default_factory=set)
    tool_calls: int = 0
    unknown_results: int = 0
    settled_on_restart: int = 0
    effects: int = 0
    interrupted_jobs: int = 0
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "kills": self.kills,
            "acknowledged": len(self.acked),
            "toolCalls": self.tool_calls,
            "unknownOutcomeResults": self.unknown_results,
            "settledOnRestart": self.settled_on_restart,
            "sideEffects": self.effects,
            "interruptedJobs": self.interrupted_jobs,
            "failures": self.failures,
        }


def _entries(home: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted((home / "agents/alice/sessions").glob("*.jsonl")):
        for line in f.read_bytes().split(b"\n"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def check(home: Path, report: CampaignReport) -> None:
    """Check the invariants on the files as they are now (the session must have been opened since the kill)."""
    entries = _entries(home)
    msgs = [e["message"] for e in entries if e.get("type") == "message" and isinstance(e.get("message"), dict)]
    texts = set()
    for m in msgs:
        if m.get("role") == "user":
            for b in m.get("content") or []:
                texts.add(b.get("text", "").split(" [[")[0])
    for i in sorted(report.acked):
        if f"turn {i}" not in texts:
            report.failures.append(f"acknowledged turn {i} is missing from the transcript")
    calls = {
        b["id"]
        for m in msgs
        if m.get("role") == "assistant"
        for b in m.get("content") or []
        if b.get("type") == "toolCall"
    }
    results = {m.get("toolCallId"): m for m in msgs if m.get("role") == "toolResult"}
    report.tool_calls = len(calls)
    for c in calls - set(results):
        report.failures.append(f"tool call {c} has no result")
    report.unknown_results = sum(
        1 for m in results.values() if m.get("isError") and "Outcome unknown" in json.dumps(m.get("content"))
    )
    report.settled_on_restart = sum(1 for m in results.values() if (m.get("details") or {}).get("kurahi"))
    effects_log = home / "agents/alice/effects.log"
    counts = Counter(effects_log.read_text().split()) if effects_log.exists() else Counter()
    report.effects = sum(counts.values())
    for aid, n in counts.items():
        if n > 1:
            report.failures.append(f"side effect of {aid} ran {n} times")
    jobs: dict[str, str] = {}
    jobs_file = home / "agents/alice/jobs/jobs.jsonl"
    if jobs_file.exists():
        for line in jobs_file.read_bytes().split(b"\n"):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") == "created":
                jobs[rec["id"]] = "queued"
            elif rec.get("id") in jobs and jobs[rec["id"]] in ("queued", "running"):
                jobs[rec["id"]] = rec.get("event", "?")
    report.interrupted_jobs = sum(1 for s in jobs.values() if s == "interrupted")
    for jid, s in jobs.items():
        if s in ("queued", "running"):
            report.failures.append(f"job {jid} is still {s} after a restart")


def run_campaign(
    home: Path, turns: int, *, seed: int = 1, max_kill_after: float = 0.6, min_kills: int = 0
) -> CampaignReport:
    """Run ``turns`` acknowledged-or-retried turns under random SIGKILLs; see the module docstring.

    With ``min_kills``, the campaign goes on, 20 turns at a time, until that many kills
    happened (on a fast machine a run may finish its turns before the random moments come).
    """
    rng = random.Random(seed)
    report = CampaignReport(turns=turns)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    nxt = 0
    while nxt < turns or (report.kills < min_kills and turns < 20 * report.turns):
        if nxt >= turns:
            turns += 20
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(home), str(nxt), str(turns)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdout is not None
        started = proc.stdout.readline()  # the runtime has opened, recovered and settled
        if not started.startswith("START"):
            proc.kill()
            raise RuntimeError(f"worker failed to start: {started!r} {proc.stderr.read() if proc.stderr else ''}")
        check(home, report)  # what the previous kill left, after the new runtime settled it
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        lines: list[str] = []
        reader = threading.Thread(target=lines.extend, args=(proc.stdout,), daemon=True)
        reader.start()
        try:
            proc.wait(timeout=rng.uniform(0.02, max_kill_after))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            report.kills += 1
            proc.wait()
        reader.join()
        proc.stdin.close()
        proc.stdout.close()
        if proc.stderr is not None:
            err = proc.stderr.read()
            proc.stderr.close()
        for line in lines:
            if line.startswith("ACK "):
                report.acked.add(int(line[4:]))
        if proc.returncode not in (0, -signal.SIGKILL):
            raise RuntimeError(f"worker exited {proc.returncode}: {err}")
        nxt = max(report.acked, default=-1) + 1
    report.turns = turns
    # One last start settles whatever the last kill left, then the final check.
    proc = subprocess.run(
        [sys.executable, str(WORKER), str(home), str(turns), str(turns)], input="go\n", capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    check(home, report)
    return report
