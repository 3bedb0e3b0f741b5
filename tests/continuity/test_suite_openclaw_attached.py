"""The continuity suite attached to an OpenClaw 2026.9.6 gateway that the test, not Kurahi, runs.

The test starts the gateway itself (through the harness, as a user's service manager would),
then runs ``kurahi continuity run --openclaw STATE --attached`` with the gateway's token in
``OPENCLAW_GATEWAY_TOKEN``, as its user would. Kurahi does what OpenClaw's surfaces allow
without owning the process: the model swap (``config.patch``), the restart (OpenClaw's own
``gateway.restart.request``, proven by a gateway server that started after the request),
the close (``sessions.reset``) and the reset; it says what it could not: the move (ten skips)
and the reset's repair (the gateway would have to stop). The report verifies, and the gateway
is still the test's and still running at the end.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kurahi.cli.continuity import _checker
from kurahi.continuity.invariants import INVARIANTS, score
from support.openclaw_peer import MAIN_KEY, SQLITE_ERA, phrases_in
from support.openclaw_resident import SECOND_MODEL, Resident, kurahi, make_resident

pytestmark = pytest.mark.openclaw


@dataclass
class AttachedRun:
    res: Resident
    report: dict[str, Any]
    out: Path
    returncode: int
    pid: int | None


@pytest.fixture(scope="module")
def attached(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AttachedRun]:
    res = make_resident(SQLITE_ERA, tmp_path_factory.mktemp("openclaw-attached"))
    out = res.state.parent / "continuity-out"
    try:
        res.peer.start()  # the test's gateway: its port goes into openclaw.json, where the CLI finds it
        pid = res.peer.pid
        cli = kurahi(
            res,
            "continuity", "run", "--openclaw", str(res.state), "--openclaw-bin", res.binary, "--attached",
            "--disruption", "all,reset", "--repair", "--reset-key", MAIN_KEY, "--out", str(out),
            env={"OPENCLAW_GATEWAY_TOKEN": res.peer.token},
        )  # fmt: skip
        report = json.loads((out / "continuity-report.json").read_text())
        assert res.peer.running and res.peer.pid == pid, "the suite stopped or replaced a gateway it does not own"
        yield AttachedRun(res, report, out, cli.returncode, pid)
    finally:
        res.peer.close()


def _run(body: dict[str, Any], name: str) -> dict[str, Any]:
    (run,) = [r for r in body["runs"] if r["disruption"] == name]
    return run


def _status(run: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["status"] for r in run["invariants"]}


def test_attached_does_what_openclaw_allows_and_says_what_it_could_not(attached: AttachedRun) -> None:
    body = attached.report["body"]
    assert body["mode"] == "attached" and body["target"]["version"] == SQLITE_ERA
    assert "interrupted" not in body, body.get("interrupted")
    assert [r["disruption"] for r in body["runs"]] == ["model-swap", "restart", "move", "close", "reset"]
    for name in ("model-swap", "restart", "close"):
        got = _status(_run(body, name))
        assert all(got[c] == "pass" for c in ("C0", "C1", "C2", "C3", "C6", "C7", "C8")), (name, got)
        assert got["C4"] == got["C5"] == got["C9"] == "skip", (name, got)
    move = _run(body, "move")
    assert [r["status"] for r in move["invariants"]] == ["skip"] * len(INVARIANTS)
    assert all("attached mode cannot move the state dir" in r["detail"] for r in move["invariants"])
    verified = kurahi(attached.res, "continuity", "verify", str(attached.out / "continuity-report.json"))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_restart_is_openclaws_own_and_proven_by_a_new_server(attached: AttachedRun) -> None:
    restart = _run(attached.report["body"], "restart")
    assert restart["outcome"]["detail"].startswith("gateway.restart.request: OpenClaw restarted itself")
    assert restart["outcome"]["detail"].find(f"pid {attached.pid}") > 0, restart["outcome"]
    before, after = restart["before"]["gateway"]["serverStartedAt"], restart["after"]["gateway"]["serverStartedAt"]
    assert before < restart["outcome"]["requestedAt"] < after
    c0 = restart["invariants"][0]
    assert c0["status"] == "pass" and "a new one" in c0["detail"], c0
    # The gateway log of the test's own process says it restarted in process (OPENCLAW_NO_RESPAWN).
    log = (attached.res.peer.logs / f"gateway-{SQLITE_ERA}.log").read_text()
    assert "restart mode: in-process restart" in log


def test_the_reset_is_measured_and_its_repair_skipped_with_the_reason(attached: AttachedRun) -> None:
    """A + B measured on the key the user named; the repair needs OpenClaw stopped, so it is not
    done, and C9 says the marker left the view and why it was not given back."""
    body = attached.report["body"]
    reset = _run(body, "reset")
    view = reset["view"]
    a, b = view["markers"]
    assert view["key"] == MAIN_KEY
    assert view["before"]["markers"] == {a: True, b: False} and view["reset"]["markers"] == {a: False, b: True}
    assert "repaired" not in view and view["repairSkipped"] == "attached mode cannot stop the gateway for an activation"
    got = _status(reset)
    assert got["C0"] == "pass", reset["invariants"]
    assert got["C9"] == "fail" and "attached mode cannot stop the gateway" in reset["invariants"][9]["detail"]
    assert body["summary"]["verdict"] == "FAIL" and attached.returncode == 1
    after_reset = [r for r in attached.res.peer.requests() if phrases_in(r, [b])]
    assert after_reset and not any(phrases_in(r, [a]) for r in after_reset), "A reached the model after the reset"


def test_the_model_swap_went_through_the_running_gateway(attached: AttachedRun) -> None:
    swap = _run(attached.report["body"], "model-swap")
    assert swap["outcome"]["swapTo"] == f"standin/{SECOND_MODEL}"
    assert SECOND_MODEL in {r.get("model") for r in attached.res.peer.requests()}


def test_a_restart_that_restarted_nothing_fails_c0_and_one_that_cannot_be_seen_is_skipped(
    attached: AttachedRun,
) -> None:
    """The restart's real evidence, scored again with the server after it being the one from before."""
    restart = copy.deepcopy(_run(attached.report["body"], "restart"))
    gateway = restart["after"]["gateway"]
    gateway["serverStartedAt"] = restart["before"]["gateway"]["serverStartedAt"]
    c0 = score(restart, threshold=0.8, check_manifest=_checker())[0]
    assert c0["status"] == "fail" and "started before the restart was asked for" in c0["detail"], c0
    gateway["serverStartedAt"] = None  # a gateway that publishes no uptime, and a pid that is not Kurahi's
    c0 = score(restart, threshold=0.8, check_manifest=_checker())[0]
    assert c0["status"] == "skip" and "cannot be proven" in c0["detail"], c0
