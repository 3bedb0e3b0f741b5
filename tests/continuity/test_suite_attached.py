"""Attached mode, honestly: the suite run on a gateway it did not start.

The gateway is started separately (``kurahi gateway run`` as its own process); the suite
restarts it in process, which C0 proves by the generation the gateway publishes, and skips
what it cannot do (move a state dir it does not own) instead of passing or failing it. A
"restart" that restarts nothing fails C0, and a run cut short says so and still verifies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kurahi.cli.continuity import _checker
from kurahi.continuity.invariants import score
from kurahi.continuity.report import markdown, verify_report
from kurahi.continuity.targets.kurahi import SuiteOptions, report_signer, run_suite
from kurahi.continuity.targets.throwaway import FACTS
from kurahi.continuity.targets.throwaway import seed_home as _seed
from kurahi.gateway.lock import gateway_info
from kurahi.resident.home import Home
from support.gateways import start_gateway


@pytest.fixture
def resident(tmp_path: Path) -> Iterator[tuple[Home, subprocess.Popen[bytes]]]:
    home = Home(tmp_path / "kolo")
    _seed(home, "alice")
    proc = start_gateway(home, grace=0.5)
    try:
        yield home, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


def _facts(tmp_path: Path) -> Path:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps([{"query": q, "expect": e} for _, q, e in FACTS]))
    return path


def _kurahi(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KOLO_HOME": str(home.root)}
    env.pop("KOLO_GATEWAY_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "kurahi.cli", *args], env=env, capture_output=True, text=True, timeout=600
    )


def _run(run: dict[str, Any], cid: str) -> dict[str, Any]:
    return next(r for r in run["invariants"] if r["id"] == cid)


def test_attached_run_on_a_separate_gateway_passes_and_verifies(
    resident: tuple[Home, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    home, proc = resident
    out = tmp_path / "out"
    ran = _kurahi(
        home, "continuity", "run", "--disruption", "all", "--chat", "--facts", str(_facts(tmp_path)), "--out", str(out)
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    verified = _kurahi(home, "continuity", "verify", str(out / "continuity-report.json"))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    body = json.loads((out / "continuity-report.json").read_text())["body"]
    assert body["mode"] == "attached"
    # model-swap, restart and close are scored in full; move is not ours to do: ten skips, with the reason.
    assert body["summary"] == {"pass": 30, "fail": 0, "skip": 10, "verdict": "PASS"}
    runs = {r["disruption"]: r for r in body["runs"]}
    assert all(r["status"] == "skip" and "cannot move" in r["detail"] for r in runs["move"]["invariants"])
    restart = runs["restart"]
    c0 = _run(restart, "C0")
    assert c0["status"] == "pass" and "restarted in process: generation" in c0["detail"], c0
    before, after = restart["before"]["gateway"], restart["after"]["gateway"]
    # The same process answered before and after: what changed is the generation, and the
    # manifests, which the gateway took, carry it too.
    assert before["pid"] == after["pid"] == proc.pid and before["bootId"] == after["bootId"]
    assert after["generation"] == before["generation"] + 1
    assert restart["after"]["manifest"]["gateway"]["generation"] == after["generation"]
    # The slow job was cut by the restart and says so, or ended within the restart's grace.
    c4 = _run(restart, "C4")
    assert c4["status"] == "pass" and ("interrupted" in c4["detail"] or "finished" in c4["detail"]), c4
    assert _run(runs["model-swap"], "C9")["status"] == "pass"
    assert _run(runs["model-swap"], "C2")["detail"].endswith("recall 10/10 (threshold 80%)")
    assert proc.poll() is None  # still the gateway the owner started


def test_a_restart_that_restarts_nothing_fails_c0(resident: tuple[Home, subprocess.Popen[bytes]]) -> None:
    home, _ = resident
    report = run_suite(
        SuiteOptions(throwaway=False, disruptions=["restart"], skip_disruption=True, chat=True, job_ms=500),
        check_manifest=_checker(),
        signer_for=report_signer,
        home=home,
    )
    body = report["body"]
    c0 = _run(body["runs"][0], "C0")
    assert c0["status"] == "fail" and c0["detail"].startswith("nothing restarted"), c0
    assert body["summary"]["verdict"] == "FAIL"
    assert verify_report(report, check_manifest=_checker()).ok  # FAIL, honestly signed


def test_an_interrupted_run_says_so_and_still_verifies(resident: tuple[Home, subprocess.Popen[bytes]]) -> None:
    home, proc = resident

    def pull_the_plug(_: Home, disruption: str) -> None:
        if disruption == "close":
            proc.kill()
            proc.wait()

    report = run_suite(
        SuiteOptions(
            throwaway=False, disruptions=["model-swap", "close"], chat=True, job_ms=500, sabotage=pull_the_plug
        ),
        check_manifest=_checker(),
        signer_for=report_signer,
        home=home,
    )
    body = report["body"]
    assert [r["disruption"] for r in body["runs"]] == ["model-swap"]
    assert body["interrupted"]["disruption"] == "close"
    assert "does not answer" in body["interrupted"]["reason"]
    assert body["summary"]["verdict"] == "INCOMPLETE" and body["badge"].startswith("continuity INCOMPLETE")
    assert verify_report(report, check_manifest=_checker()).ok
    assert "**Interrupted** during close" in markdown(report)
    # Taking the interruption out of the signed body is caught.
    forged = json.loads(json.dumps(report))
    del forged["body"]["interrupted"]
    assert not verify_report(forged, check_manifest=_checker()).ok


def test_the_restart_endpoint_needs_the_owner(resident: tuple[Home, subprocess.Popen[bytes]]) -> None:
    home, _ = resident
    info = gateway_info(home.lock)
    assert info is not None
    url = f"http://127.0.0.1:{info.port}"
    health = httpx.get(f"{url}/api/health").json()
    assert health["generation"] == 1 and len(health["bootId"]) == 16
    assert httpx.post(f"{url}/api/gateway/restart").status_code == 401
    assert httpx.post(f"{url}/api/gateway/restart", headers={"Authorization": "Bearer nope"}).status_code == 401
    token = home.token_file.read_text().strip()
    r = httpx.post(f"{url}/api/gateway/restart", headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert r.status_code == 200 and r.json()["after"]["generation"] == 2
    assert httpx.get(f"{url}/api/health").json()["generation"] == 2


def _evidence(disruption: str, before: dict[str, Any], after: dict[str, Any], **outcome: Any) -> dict[str, Any]:
    manifest = {"entries": []}
    side = {"manifest": manifest, "probes": {}, "audit": {"verified": True}, "probeSessionId": None}
    return {
        "disruption": disruption,
        "outcome": {"ok": True, **outcome},
        "before": {**side, "gateway": before},
        "after": {**side, "gateway": after},
    }


def test_c0_judges_gateways_that_publish_no_boot_id_by_their_pid() -> None:
    def c0(ev: dict[str, Any]) -> dict[str, Any]:
        return score(ev, threshold=0.8, check_manifest=lambda m: (True, ""))[0]

    # Reports from before boot ids still score as they did: a new pid passes, the same one fails.
    assert c0(_evidence("restart", {"pid": 1}, {"pid": 2}))["status"] == "pass"
    assert c0(_evidence("restart", {"pid": 1}, {"pid": 1}))["status"] == "fail"
    # An in-process restart of such a gateway cannot be proven: skip, never a pass or a false fail.
    skipped = c0(_evidence("restart", {"pid": 1}, {"pid": 1}, inProcess=True))
    assert skipped["status"] == "skip" and "cannot be proven" in skipped["detail"]
    # A new boot id proves a new process even where the pid was reused.
    new_boot = c0(
        _evidence("restart", {"pid": 1, "bootId": "a", "generation": 1}, {"pid": 1, "bootId": "b", "generation": 1})
    )
    assert new_boot["status"] == "pass"
    # A generation that went down is no restart.
    back = c0(
        _evidence("restart", {"pid": 1, "bootId": "a", "generation": 3}, {"pid": 1, "bootId": "a", "generation": 2})
    )
    assert back["status"] == "fail"
    unsupported = score(
        {**_evidence("restart", {}, {}), "outcome": {"ok": False, "unsupported": True, "detail": "no restart here"}},
        threshold=0.8,
        check_manifest=lambda m: (True, ""),
    )
    assert [r["status"] for r in unsupported] == ["skip"] * 10
    assert all(r["detail"] == "not run: no restart here" for r in unsupported)
