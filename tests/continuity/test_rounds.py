"""Repetition (seed 000's next test): rollovers with compactions in between, each boundary scored.

A throwaway gateway runs three rounds; every boundary must stay unmarked, the round-1 facts
must still be in the model's view (the deterministic model quotes them back from its
context) and reachable through the kept transcripts, and the report must verify. A rollover
that carries nothing marks every boundary, and the model no longer sees the facts.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kurahi.cli.continuity import _checker
from kurahi.continuity.report import markdown, verify_report
from kurahi.continuity.targets.kurahi import SuiteOptions, report_signer, run_suite
from kurahi.errors import UsageError


def _rounds(n: int, **kw: Any) -> dict[str, Any]:
    return run_suite(
        SuiteOptions(throwaway=True, disruptions=[], rounds=n, **kw),
        check_manifest=_checker(),
        signer_for=report_signer,
    )


@pytest.fixture(scope="module")
def three() -> dict[str, Any]:
    return _rounds(3)


def test_three_rounds_stay_unmarked_and_verify(three: dict[str, Any]) -> None:
    body = three["body"]
    assert body["summary"]["verdict"] == "PASS", [r["verdict"] for r in body["rounds"]]
    assert body["summary"]["rounds"]["rounds"] == body["summary"]["rounds"]["unmarked"] == 3
    assert "rounds=3/3 unmarked" in body["badge"]
    for ev in body["rounds"]:
        assert ev["compactions"] >= 1 and ev["carry"]["ok"], ev["carry"]
        assert ev["oldSessionId"] != ev["newSessionId"]
        assert ev["tokensAfter"] <= ev["threshold"]
        for marker in ev["markers"]:
            assert marker["inView"], marker["probeReply"]
            # The original statement sits in round 1's session: one rollover further back each round.
            assert marker["foundIn"]["hops"] == ev["round"]
    assert verify_report(three, check_manifest=_checker()).ok
    assert "## Rounds" in markdown(three)


def test_an_edited_round_fails_verify(three: dict[str, Any]) -> None:
    forged = copy.deepcopy(three)
    forged["body"]["rounds"][1]["tokensAfter"] = forged["body"]["rounds"][1]["threshold"] + 1
    check = verify_report(forged, check_manifest=_checker())
    assert not check.ok and check.problems[0].startswith("rounds[1].verdict")


def test_a_rollover_that_carries_nothing_marks_every_boundary() -> None:
    report = _rounds(2, rounds_carry="none")
    body = report["body"]
    assert body["summary"]["verdict"] == "FAIL" and body["summary"]["rounds"]["unmarked"] == 0
    for ev in body["rounds"]:
        assert not ev["verdict"]["ok"]
        assert "the boundary is marked" in ev["verdict"]["detail"]
        assert not any(m["inView"] for m in ev["markers"])  # the model no longer sees them...
        assert all(m["inLineage"] for m in ev["markers"])  # ...though nothing was deleted
    assert verify_report(report, check_manifest=_checker()).ok


def test_nothing_to_run_is_refused() -> None:
    with pytest.raises(UsageError, match="nothing to run"):
        _rounds(0)
    with pytest.raises(UsageError, match="--rounds"):
        _rounds(-1)
