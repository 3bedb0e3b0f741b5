"""The one runner and the declared capabilities, on a target made here (no gateway, no peer).

The two real targets are driven end to end by the suite's other tests; these show what the
runner itself owns (a run cut short is signed INCOMPLETE and verifies, the target is closed
whatever happens, a bad plan changes nothing) and that what a target declares decides how
its evidence is scored, the same when ``verify`` re-scores it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kurahi.cli.continuity import _checker
from kurahi.continuity.capabilities import KURAHI, OPENCLAW, Declared, declared_for
from kurahi.continuity.invariants import INVARIANTS, NEEDS, score
from kurahi.continuity.report import verify_report
from kurahi.continuity.runner import Plan, check_plan, key_signer, run
from kurahi.continuity.signing import SigningKey, load_key_file
from kurahi.errors import ContinuityError, UsageError


def _manifest(key: SigningKey, session: int) -> dict[str, Any]:
    from kurahi.continuity.manifest import seal_manifest

    items = [
        ("identity", "IDENTITY.md", {"sha256": "a" * 64, "size": 1}),
        ("memory", "MEMORY.md", {"sha256": "b" * 64, "size": 2}),
        ("role", "agent", {}),
        ("model", "primary", {"provider": "p", "model": "m", "profile": None}),
        ("session", "agent:main:continuity-probe", {"sessionId": f"s{session}", "updatedAt": 1}),
        *(("transcript", f"s{n}.jsonl", {"sha256": "c" * 64, "size": 3}) for n in range(session + 1)),
    ]
    return seal_manifest("main", items, key=key)


class _Fake:
    """A target with an OpenClaw's capabilities whose every ``close`` opens a new session."""

    declared = OPENCLAW
    failures: tuple[type[BaseException], ...] = (ContinuityError,)

    def __init__(self, key: SigningKey, *, fail_on: str | None = None) -> None:
        self.key = key
        self.fail_on = fail_on
        self.said: list[str] = []
        self.calls: list[str] = []
        self.session = 0

    def say(self, text: str) -> None:
        self.said.append(text)

    def start(self) -> None:
        self.calls.append("start")

    def _side(self) -> dict[str, Any]:
        return {
            "manifest": _manifest(self.key, self.session),
            "probes": {"chat": {"status": "answered", "reply": "hello"}},
            "probeSessionId": f"s{self.session}",
            "job": None,
            "audit": None,
            "gateway": {"pid": 1, "bootId": None, "generation": None, "home": "/x"},
        }

    def run_one(self, disruption: str) -> dict[str, Any]:
        self.calls.append(disruption)
        if disruption == self.fail_on:
            raise ContinuityError("the gateway stopped answering")
        before = self._side()
        self.session += 1
        after = {**self._side(), "wrongToken": {"refused": True, "code": "AUTH_TOKEN_MISMATCH"}}
        return {
            "target": "openclaw",
            "disruption": disruption,
            "before": before,
            "outcome": {"ok": True, "detail": "reset"},
            "after": after,
            "drivenSessions": [f"s{self.session - 1}", f"s{self.session}"],
            "leakScan": {"scannedBytes": 10, "found": []},
        }

    def rounds(self, count: int, out: list[dict[str, Any]]) -> None:
        raise AssertionError("no rounds asked for")

    def report_fields(self, runs: list[dict[str, Any]]) -> dict[str, Any]:
        return {"mode": "supervised", "fingerprint": self.key.fingerprint}

    def signer(self) -> Any:
        return key_signer(self.key)

    def close(self) -> None:
        self.calls.append("close")


@pytest.fixture
def key(tmp_path: Path) -> SigningKey:
    return load_key_file(tmp_path / "key.json", create=True)


def _plan(*disruptions: str) -> Plan:
    return Plan("main", disruptions, 0, 0.8, _checker())


def test_a_run_is_scored_as_its_target_declares_and_verifies(key: SigningKey) -> None:
    target = _Fake(key)
    report = run(target, _plan("close", "close"))
    assert target.calls == ["start", "close", "close", "close"]  # started, two disruptions, closed
    body = report["body"]
    assert body["summary"]["verdict"] == "PASS"
    statuses = {r["id"]: (r["status"], r["detail"]) for r in body["runs"][0]["invariants"]}
    # What the target lacks is skip with the reason it declares; the rest is scored.
    assert statuses["C4"] == ("skip", OPENCLAW.lacks["jobs"])
    assert statuses["C5"] == ("skip", OPENCLAW.lacks["audit-chain"])
    assert statuses["C0"] == ("pass", "session s0 -> s1 (a new session)")
    assert statuses["C8"][1].endswith("(by session id)")
    assert verify_report(report, check_manifest=_checker()).ok


def test_the_same_evidence_is_read_by_the_target_it_names(key: SigningKey) -> None:
    ev = _Fake(key).run_one("close")
    ev["before"]["audit"] = {"verified": True, "entries": 1, "headSeq": None}
    ev["after"]["audit"] = {"verified": True, "entries": 2}

    def scored() -> dict[str, tuple[str, str]]:
        return {r["id"]: (r["status"], r["detail"]) for r in score(ev, threshold=0.8, check_manifest=_checker())}

    as_openclaw = scored()
    del ev["target"]  # now Kurahi's gateway: a job API, an audit chain, a new session id on every close
    assert declared_for(ev) is KURAHI
    as_kurahi = scored()
    assert list(as_openclaw) == list(as_kurahi) == list(INVARIANTS)
    assert as_openclaw["C0"][1] == "session s0 -> s1 (a new session)"
    assert as_kurahi["C0"] == ("pass", "probe session s0 -> s1")
    assert as_openclaw["C5"][0] == "skip"
    assert as_kurahi["C5"][0] == "pass"
    assert as_kurahi["C4"] == ("skip", "no job was running when the disruption hit")


def test_a_run_cut_short_is_signed_incomplete_and_the_target_closed(key: SigningKey) -> None:
    target = _Fake(key, fail_on="restart")
    report = run(target, _plan("close", "restart", "move"))
    body = report["body"]
    assert target.calls == ["start", "close", "restart", "close"]  # move never ran; closed anyway
    assert [r["disruption"] for r in body["runs"]] == ["close"]
    assert body["interrupted"] == {"disruption": "restart", "reason": "ContinuityError: the gateway stopped answering"}
    assert body["summary"]["verdict"] == "INCOMPLETE"
    assert "restart: interrupted: the gateway stopped answering" in target.said
    assert verify_report(report, check_manifest=_checker()).ok


def test_an_error_that_is_not_the_targets_failure_closes_it_and_propagates(key: SigningKey) -> None:
    target = _Fake(key)
    target.failures = (UsageError,)
    target.fail_on = "close"
    with pytest.raises(ContinuityError):
        run(target, _plan("close"))
    assert target.calls == ["start", "close", "close"]


@pytest.mark.parametrize(
    ("disruptions", "rounds", "message"),
    [
        ((), 0, "nothing to run"),
        (("close",), -1, "--rounds must be 0 or more"),
        (("close", "nap"), 0, "unknown disruption 'nap'; use close, move or all"),
    ],
)
def test_a_bad_plan_is_refused_before_anything_runs(disruptions: tuple[str, ...], rounds: int, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        check_plan(disruptions, rounds, ("close", "move"))


@pytest.mark.parametrize("target", [KURAHI, OPENCLAW])
def test_every_target_offers_or_explains_what_each_invariant_needs(target: Declared) -> None:
    for cid, capability in NEEDS.items():
        assert capability in target or target.lacks.get(capability), (target.name, cid)
