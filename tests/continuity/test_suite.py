"""The continuity suite end to end: a throwaway run passes 40/40 and verifies; every invariant can fail;
a one-byte edit anywhere in the report is caught."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli.continuity import _checker, app
from kurahi.continuity.report import read_report, verify_report
from kurahi.continuity.targets.kurahi import SuiteOptions, report_signer, run_suite
from kurahi.errors import ContinuityError, UsageError
from kurahi.resident.home import Home

runner = CliRunner()


def _run(disruptions: list[str], **kw: Any) -> dict[str, Any]:
    return run_suite(
        SuiteOptions(throwaway=True, disruptions=disruptions, job_ms=kw.pop("job_ms", 1500), **kw),
        check_manifest=_checker(),
        signer_for=report_signer,
    )


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("out")
    result = runner.invoke(app, ["run", "--throwaway", "--disruption", "all", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads((out / "continuity-report.json").read_text()), out


def test_throwaway_all_four_disruptions_pass_40_and_verify(full: tuple[dict[str, Any], Path]) -> None:
    report, out = full
    body = report["body"]
    assert body["summary"] == {"pass": 40, "fail": 0, "skip": 0, "verdict": "PASS"}
    assert [r["disruption"] for r in body["runs"]] == ["model-swap", "restart", "move", "close"]
    badge = (out / "continuity-badge.txt").read_text().strip()
    assert badge.startswith(
        "continuity PASS | resident=alice | model-swap,restart,move,close | pass=40 fail=0 skip=0 |"
    )
    assert runner.invoke(app, ["verify", str(out / "continuity-report.json")]).exit_code == 0
    printed = runner.invoke(app, ["badge", str(out / "continuity-report.json")])
    assert printed.exit_code == 0 and "UNVERIFIED" not in printed.output
    md = (out / "continuity-report.md").read_text()
    assert "## restart" in md and "What is not proven" in md
    restart = body["runs"][1]
    c4 = next(r for r in restart["invariants"] if r["id"] == "C4")
    assert "interrupted" in c4["detail"]  # a restart interrupts the job and says so
    swap = body["runs"][0]
    assert swap["after"]["probes"]["chat"]["profile"] == "beta"


def test_a_one_byte_edit_anywhere_fails_verify(full: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    _, out = full
    data = (out / "continuity-report.json").read_bytes()
    rng = random.Random(5)
    for offset in [*sorted(rng.sample(range(len(data)), 60)), 0, len(data) - 2]:
        edited = bytearray(data)
        edited[offset] = (edited[offset] + 1) % 256 if edited[offset] != 0x7F else 0x41
        path = tmp_path / "r.json"
        path.write_bytes(bytes(edited))
        try:
            report = read_report(path)
        except ContinuityError:
            continue
        assert not verify_report(report, check_manifest=_checker()).ok, f"edit at byte {offset} went unnoticed"
    badge = runner.invoke(app, ["badge", str(path)])
    assert badge.exit_code == 1


def test_bad_reports_and_options(full: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    _, out = full
    truncated = tmp_path / "t.json"
    truncated.write_bytes((out / "continuity-report.json").read_bytes()[:500])
    r = runner.invoke(app, ["verify", str(truncated)])
    assert r.exit_code != 0 and "not JSON" in r.output
    other = json.loads((out / "continuity-report.json").read_text())
    other["body"]["version"] = 99
    (tmp_path / "v.json").write_text(json.dumps(other))
    assert "version 99" in runner.invoke(app, ["verify", str(tmp_path / "v.json")]).output
    facts = tmp_path / "facts.json"
    facts.write_text('{"query": "x"}')
    r = runner.invoke(app, ["run", "--throwaway", "--facts", str(facts), "--out", str(tmp_path / "o")])
    assert r.exit_code == 4 and "JSON array" in r.output


def test_a_report_nested_too_deeply_is_refused_clearly(tmp_path: Path) -> None:
    # Found by fuzzing: the JSON parser's RecursionError escaped read_report as a traceback.
    path = tmp_path / "deep.json"
    path.write_bytes(b'{"body": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}")
    with pytest.raises(ContinuityError, match="nested too deeply"):
        read_report(path)


def test_smoke_home_must_end_in_kolo_test(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KOLO_SMOKE_HOME", str(tmp_path / "my-real-home"))
    with pytest.raises(UsageError, match=r"must end in '\.kolo-test'"):
        _run(["close"])


def _break_identity(home: Home, _: str) -> None:
    p = home.agent("alice").workspace / "SOUL.md"
    p.write_text(p.read_text() + "!")


def _lose_facts(home: Home, _: str) -> None:
    p = home.agent("alice").workspace / "memory" / "facts.md"
    p.write_text("\n".join(p.read_text().splitlines()[:4]) + "\n")


def _change_policy(home: Home, _: str) -> None:
    cfg = json.loads(home.config.read_text())
    cfg["agents"]["alice"]["tools"] = {"allow": ["*"], "deny": ["write"]}
    home.config.write_text(json.dumps(cfg))


def _rewrite_audit(home: Home, _: str) -> None:
    lines = home.audit.read_text().splitlines()
    lines[0] = lines[0].replace('"gateway.start"', '"gateway.strat"')
    home.audit.write_text("\n".join(lines) + "\n")


def _plant_secret(home: Home, _: str) -> None:
    token = home.token_file.read_text().strip()
    p = home.agent("alice").workspace / "memory" / "facts.md"
    p.write_text(p.read_text() + f"- The harbour lantern password is {token}\n")


def _new_signing_key(home: Home, _: str) -> None:
    home.signing_key.unlink()


def _lose_transcript(home: Home, _: str) -> None:
    sessions = home.agent("alice").sessions
    catalog = json.loads((sessions / "sessions.json").read_text())
    job = catalog["agent:alice:continuity-job"]["sessionId"]
    for f in sessions.glob("*.jsonl"):
        if not f.name.startswith(job):
            f.unlink()  # the closed probe session's old transcript, among others


def _wrong_marker(home: Home, _: str) -> None:
    p = home.agent("alice").workspace / "IDENTITY.md"
    p.write_text(p.read_text().replace("marker: ", "marker: IMPOSTOR-"))


NEGATIVE: list[tuple[str, dict[str, Any]]] = [
    ("C0", {"skip_disruption": True}),
    ("C1", {"sabotage": _break_identity}),
    ("C2", {"sabotage": _lose_facts}),
    ("C3", {"sabotage": _change_policy}),
    ("C4", {"job_ms": 20000, "settle_timeout": 0.0}),
    ("C5", {"sabotage": _rewrite_audit}),
    ("C6", {"sabotage": _plant_secret}),
    ("C7", {"sabotage": _new_signing_key}),
    ("C8", {"sabotage": _lose_transcript}),
    ("C9", {"sabotage": _wrong_marker}),
]


@pytest.mark.parametrize(("invariant", "kw"), NEGATIVE, ids=[n for n, _ in NEGATIVE])
def test_each_invariant_can_fail(invariant: str, kw: dict[str, Any]) -> None:
    report = _run(["close"], **kw)
    [run] = report["body"]["runs"]
    status = {r["id"]: r for r in run["invariants"]}
    assert status[invariant]["status"] == "fail", status[invariant]
    assert report["body"]["summary"]["verdict"] == "FAIL"
    assert verify_report(report, check_manifest=_checker()).ok  # a failing run still verifies: FAIL, honestly
