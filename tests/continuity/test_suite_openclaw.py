"""The continuity suite against real OpenClaw residents (2026.5.28 and 2026.9.6), supervised.

Each era gets one state dir with a stand-in model (two model ids, so a swap has somewhere to
go), a workspace with memory files, and one module-scoped run of ``kurahi continuity run
--openclaw`` as a user runs it: the four disruptions and ``reset --repair``. The report must
verify, every applicable invariant must be scored with nothing failing, and the reset must be
measured: the pre-reset marker in the runtime's view before, gone after the reset, back after
the repair, and the stand-in model's request log must agree. Then the negative runs: a
planted break (an identity file edited and a transcript deleted between the manifests), a
reset that OpenClaw refuses half-way, a gateway that will not start, a state dir that is not
OpenClaw's and an OpenClaw release Kurahi does not know.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kurahi.cli.continuity import _checker
from kurahi.continuity.report import verify_report
from kurahi.continuity.targets.openclaw.target import OpenClawOptions, run_openclaw_suite
from support.openclaw_model import MODEL_ID, REPLY_PREFIX
from support.openclaw_peer import JSON_ERA, OPENCLAW_VERSIONS, SQLITE_ERA, phrases_in
from support.openclaw_resident import SECOND_MODEL, Resident, kurahi, make_resident

pytestmark = pytest.mark.openclaw

DEFAULT_RESET_KEY = "agent:main:continuity-reset"
"""What ``--reset-key`` defaults to: a session of the suite's own, so a user's conversations are never reset."""


@dataclass
class EraRun:
    res: Resident
    report: dict[str, Any]
    out: Path
    cli: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module", params=OPENCLAW_VERSIONS)
def era_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EraRun]:
    """One supervised run per era on a fresh resident: all four disruptions, then reset with --repair
    on the default reset key (no ``--reset-key``: the default must work on each era)."""
    version = request.param
    res = make_resident(version, tmp_path_factory.mktemp(f"openclaw-{version}"))
    out = res.state.parent / "continuity-out"
    try:
        cli = kurahi(
            res,
            "continuity", "run", "--openclaw", str(res.state), "--openclaw-bin", res.binary,
            "--disruption", "all,reset", "--repair", "--out", str(out),
        )  # fmt: skip
        report = json.loads((out / "continuity-report.json").read_text())
        yield EraRun(res, report, out, cli)
    finally:
        res.peer.close()


def _statuses(run: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["status"] for r in run["invariants"]}


def test_every_applicable_invariant_scored_and_verified(era_run: EraRun) -> None:
    """Nothing fails but what OpenClaw really breaks: 2026.5.28 keeps each session's absolute
    ``sessionFile`` in ``sessions.json``, so after a move it writes the probe's transcript into
    the old state dir (C8 of move fails, naming the files; they are kept beside)."""
    body = era_run.report["body"]
    broken = {("move", "C8")} if era_run.res.peer.version == JSON_ERA else set()
    fails = {(run["disruption"], r["id"]) for run in body["runs"] for r in run["invariants"] if r["status"] == "fail"}
    assert fails == broken, json.dumps([r["invariants"] for r in body["runs"]], indent=1)
    assert era_run.cli.returncode == (1 if broken else 0), era_run.cli.stdout + era_run.cli.stderr
    assert body["summary"]["verdict"] == ("FAIL" if broken else "PASS")
    assert body["mode"] == "supervised" and body["target"]["version"] == era_run.res.peer.version
    assert [r["disruption"] for r in body["runs"]] == ["model-swap", "restart", "move", "close", "reset"]
    for run in body["runs"]:
        got = _statuses(run)
        # What OpenClaw cannot support is skipped with the reason; everything else is scored.
        assert got["C4"] == "skip" and got["C5"] == "skip", run["invariants"]
        for cid in ("C0", "C1", "C2", "C3", "C6", "C7", "C8"):
            want = "fail" if (run["disruption"], cid) in broken else "pass"
            assert got[cid] == want, (run["disruption"], cid, run["invariants"])
        if (run["disruption"], "C8") in broken:
            assert "wrote" in run["invariants"][8]["detail"] and ".jsonl" in run["invariants"][8]["detail"]
        assert got["C9"] == ("pass" if run["disruption"] == "reset" else "skip"), run["invariants"]
    verified = kurahi(era_run.res, "continuity", "verify", str(era_run.out / "continuity-report.json"))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # Signed by Kurahi's observer key, which lives in Kurahi's home, not in the state dir.
    key_file = era_run.res.kurahi_home / "identity" / "continuity-observer.json"
    assert key_file.is_file() and body["observerKey"] == str(key_file)
    assert not list(era_run.res.state.rglob("continuity-observer.json"))
    # The state dir is back where it was after the move; what OpenClaw wrote elsewhere is kept.
    assert era_run.res.state.is_dir() and not era_run.res.state.with_name("state-moved").exists()
    assert bool(list(era_run.res.state.parent.glob("state-stray-*"))) == bool(broken)


def test_model_swap_reached_the_model(era_run: EraRun) -> None:
    swap = era_run.report["body"]["runs"][0]
    assert swap["outcome"]["swapTo"] == f"standin/{SECOND_MODEL}"
    models = {body.get("model") for body in era_run.res.peer.requests()}
    assert {MODEL_ID, SECOND_MODEL} <= models, models


def test_reset_measured_and_repaired(era_run: EraRun) -> None:
    """The pre-reset marker is in view before, gone after the reset, back after --repair; the request log agrees."""
    reset = era_run.report["body"]["runs"][-1]
    view = reset["view"]
    assert view["key"] == DEFAULT_RESET_KEY and DEFAULT_RESET_KEY in reset["outcome"]["detail"], reset["outcome"]
    a, b = view["markers"]
    assert view["before"]["markers"] == {a: True, b: False}
    assert view["reset"]["markers"] == {a: False, b: True}
    assert view["repaired"]["markers"] == {a: True, b: True}
    assert view["repaired"]["messages"] > view["reset"]["messages"]
    requests = era_run.res.peer.requests()
    after_reset = [r for r in requests if phrases_in(r, [b]) and not phrases_in(r, [view["confirm"]["phrase"]])]
    assert after_reset and all(phrases_in(r, [a]) == set() for r in after_reset), "A reached the model after reset"
    confirm = [r for r in requests if phrases_in(r, [view["confirm"]["phrase"]])]
    assert confirm and phrases_in(confirm[-1], [a, b]) == {a, b}, "after the repair OpenClaw's request lacks A"
    assert view["confirm"]["reply"].startswith(REPLY_PREFIX)


def _library_run(res: Resident, monkeypatch: pytest.MonkeyPatch, **options: Any) -> dict[str, Any]:
    for k, v in res.env.items():
        monkeypatch.setenv(k, v)
    opts = OpenClawOptions(state_dir=res.state, binary=res.binary, **options)
    return run_openclaw_suite(opts, check_manifest=_checker())


def test_planted_break_fails_its_invariants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An identity file edited and a transcript deleted between the manifests: C1 and C8 fail; it verifies."""
    res = make_resident(JSON_ERA, tmp_path / "break")

    def sabotage(state: Path, disruption: str) -> None:
        (res.peer.home / ".openclaw" / "workspace" / "SOUL.md").write_text("someone else entirely\n")
        (archive,) = (state / "agents" / "main" / "sessions").glob("*.jsonl.reset.*")
        archive.unlink()

    try:
        report = _library_run(res, monkeypatch, disruptions=["close"], sabotage=sabotage)
    finally:
        res.peer.close()
    (run,) = report["body"]["runs"]
    got = _statuses(run)
    assert got["C1"] == "fail" and "SOUL.md" in run["invariants"][1]["detail"], run["invariants"]
    assert got["C8"] == "fail" and "transcripts lost" in run["invariants"][8]["detail"], run["invariants"]
    assert report["body"]["summary"]["verdict"] == "FAIL"
    assert verify_report(report, check_manifest=_checker()).ok


def test_refused_reset_makes_an_incomplete_report_that_verifies(tmp_path: Path) -> None:
    """OpenClaw refuses the reset half-way through the run: INCOMPLETE, the reason named, still verifies."""
    res = make_resident(JSON_ERA, tmp_path / "refuse")
    wrapper = tmp_path / "openclaw-refusing-reset"
    wrapper.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do if [ "$a" = sessions.reset ]; then\n'
        '  echo \'{"ok": false, "error": {"message": "reset refused by policy"}}\'; exit 1\n'
        "fi; done\n"
        f'exec "{res.binary}" "$@"\n'
    )
    wrapper.chmod(0o755)
    out = tmp_path / "out"
    try:
        cli = kurahi(
            res, "continuity", "run", "--openclaw", str(res.state), "--openclaw-bin", str(wrapper),
            "--disruption", "restart,reset", "--out", str(out),
        )  # fmt: skip
    finally:
        res.peer.close()
    assert cli.returncode == 1, cli.stdout + cli.stderr
    body = json.loads((out / "continuity-report.json").read_text())["body"]
    assert body["summary"]["verdict"] == "INCOMPLETE"
    assert [r["disruption"] for r in body["runs"]] == ["restart"]
    assert body["interrupted"]["disruption"] == "reset"
    assert "OpenClaw refused sessions.reset: reset refused by policy" in body["interrupted"]["reason"]
    verified = kurahi(res, "continuity", "verify", str(out / "continuity-report.json"))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_gateway_that_will_not_start(tmp_path: Path) -> None:
    res = make_resident(JSON_ERA, tmp_path / "nostart")
    config_path = res.state / "openclaw.json"
    config = json.loads(config_path.read_text())
    config["models"]["catalogRefresh"] = {"enabled": False}  # a key 2026.5.28 rejects
    config_path.write_text(json.dumps(config))
    try:
        cli = kurahi(res, "continuity", "run", "--openclaw", str(res.state), "--openclaw-bin", res.binary)
    finally:
        res.peer.close()
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert f"the OpenClaw {JSON_ERA} gateway did not start" in cli.stderr, cli.stderr


def test_not_an_openclaw_state_dir_and_an_unknown_release(tmp_path: Path) -> None:
    res = make_resident(SQLITE_ERA, tmp_path / "bad")
    res.peer.close()
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("not OpenClaw\n")
    cli = kurahi(res, "continuity", "run", "--openclaw", str(plain), "--openclaw-bin", res.binary)
    assert (
        cli.returncode == 2 and "not an OpenClaw state dir (no openclaw.json, no agents/main/ sessions)" in cli.stderr
    ), cli.stderr
    future = tmp_path / "openclaw-future"
    future.write_text('#!/bin/sh\necho "OpenClaw 2027.1.4 (0000000)"\n')
    future.chmod(0o755)
    cli = kurahi(res, "continuity", "run", "--openclaw", str(res.state), "--openclaw-bin", str(future))
    assert cli.returncode == 2, cli.stderr
    assert "OpenClaw 2027.1.4 is a release Kurahi does not know; it knows 2026.5.28, 2026.9.6" in cli.stderr
