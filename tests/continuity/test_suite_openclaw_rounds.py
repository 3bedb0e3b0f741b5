"""``kurahi continuity run --openclaw STATE --rounds 2`` on a real OpenClaw 2026.9.6 resident.

Each round chats, compacts through OpenClaw's own ``sessions compact``, resets the session as
its user does and repairs it with Kurahi's stitch and activation; the report scores each
boundary (the view reproduced, the round-1 markers in view and on the path, tokens under the
threshold) and verifies. The stand-in model's request log must agree: after the last repair,
OpenClaw's next request carries the round-1 markers. Attached mode and the JSON era are refused
before anything runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.openclaw_peer import JSON_ERA, SQLITE_ERA, phrases_in
from support.openclaw_resident import Resident, kurahi, make_resident

pytestmark = pytest.mark.openclaw

ROUNDS = 2


@dataclass
class RoundsRun:
    res: Resident
    report: dict[str, Any]
    out: Path
    returncode: int
    output: str


@pytest.fixture(scope="module")
def rounds_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RoundsRun]:
    res = make_resident(SQLITE_ERA, tmp_path_factory.mktemp("openclaw-rounds"))
    out = res.state.parent / "continuity-out"
    try:
        cli = kurahi(
            res, "continuity", "run", "--openclaw", str(res.state), "--openclaw-bin", res.binary,
            "--disruption", "none", "--rounds", str(ROUNDS), "--out", str(out),
        )  # fmt: skip
        assert (out / "continuity-report.json").is_file(), cli.stdout + cli.stderr
        report = json.loads((out / "continuity-report.json").read_text())
        yield RoundsRun(res, report, out, cli.returncode, cli.stdout + cli.stderr)
    finally:
        res.peer.close()


def test_every_round_is_scored_unmarked_and_the_report_verifies(rounds_run: RoundsRun) -> None:
    body = rounds_run.report["body"]
    assert "interrupted" not in body, body.get("interrupted")
    rounds = body["rounds"]
    assert [r["round"] for r in rounds] == list(range(1, ROUNDS + 1))
    for ev in rounds:
        assert ev["verdict"]["ok"], ev["verdict"]
        assert ev["compactions"] >= 1 and ev["carry"]["ok"], ev
        assert all(m["inView"] and m["inLineage"] for m in ev["markers"]), ev["markers"]
        assert ev["tokensAfter"] <= ev["threshold"] and ev["newSessionId"] != ev["oldSessionId"], ev
    assert body["summary"]["rounds"] == {
        "rounds": ROUNDS,
        "unmarked": ROUNDS,
        "maxTokensAfter": max(r["tokensAfter"] for r in rounds),
    }
    assert body["summary"]["verdict"] == "PASS" and rounds_run.returncode == 0, rounds_run.output
    assert f"rounds={ROUNDS}/{ROUNDS} unmarked" in body["badge"]
    verified = kurahi(rounds_run.res, "continuity", "verify", str(rounds_run.out / "continuity-report.json"))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_openclaw_sends_the_round_one_markers_after_the_last_repair(rounds_run: RoundsRun) -> None:
    """The request log: the turn after the last reset lacks them; after the repair OpenClaw sends them again."""
    last = rounds_run.report["body"]["rounds"][-1]
    phrases = [m["phrase"] for m in last["markers"]]
    requests = rounds_run.res.peer.requests()
    after_reset = [r for r in requests if phrases_in(r, [f"Round {ROUNDS}: a new topic after the reset."])]
    assert after_reset and not phrases_in(after_reset[0], phrases), "the reset did not take them out of the request"
    confirm = [r for r in requests if phrases_in(r, [last["confirm"]["phrase"]])]
    assert confirm and phrases_in(confirm[-1], phrases) == set(phrases), "after the repair OpenClaw's request lacks one"


@pytest.mark.parametrize(("version", "extra", "words"), [
    (SQLITE_ERA, ("--attached",), "supervised mode only"),
    (JSON_ERA, (), "built for 2026.9 (the SQLite era), not 2026.5.28"),
])  # fmt: skip
def test_rounds_refused_where_not_built(tmp_path: Path, version: Any, extra: tuple[str, ...], words: str) -> None:
    res = make_resident(version, tmp_path / "refused")
    try:
        cli = kurahi(
            res, "continuity", "run", "--openclaw", str(res.state), "--openclaw-bin", res.binary, *extra,
            "--disruption", "none", "--rounds", "2", "--out", str(tmp_path / "out"),
            env={"OPENCLAW_GATEWAY_TOKEN": "not-used-the-run-is-refused-first"},
        )  # fmt: skip
    finally:
        res.peer.close()
    assert cli.returncode == 2 and words in cli.stderr, cli.stderr
    assert not (tmp_path / "out").exists()
