"""A candidate whose next request a provider would refuse: `lineage check` says no, `activate plan` refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kurahi.cli import app as kurahi_app
from kurahi.cli.activate import app
from kurahi.cli.common import EXIT
from kurahi.errors import CandidateError
from kurahi.lifecycle.activation import plan_activation
from kurahi.lineage.check import check
from support.activations import KEY, Setup, make_home, snapshot
from support.refused import bricked


@pytest.fixture
def s(tmp_path: Path) -> Setup:
    return make_home(tmp_path, chain=True)


def test_lineage_check_is_not_ok_and_names_the_finding(tmp_path: Path) -> None:
    f = bricked(tmp_path / "c.jsonl")
    rep = check(f)
    assert not rep.ok and rep.projections_agree
    assert [(x["code"], x["entryId"]) for x in rep.refused] == [("result-without-call", "r1")]
    res = CliRunner().invoke(kurahi_app, ["lineage", "check", str(f)], terminal_width=300)
    assert res.exit_code == EXIT.FAILED and "REFUSED result-without-call at entry r1" in res.output
    # For OpenClaw, which drops the orphan before sending, the same file is fine.
    assert check(f, runtime="openclaw-2026.5").ok


def test_activate_plan_refuses_it_naming_the_finding_and_writes_nothing(s: Setup, tmp_path: Path) -> None:
    bad = bricked(tmp_path / "bad.jsonl")
    before = snapshot(s.sessions)
    with pytest.raises(
        CandidateError, match="a provider would refuse its next request: result-without-call at entry r1"
    ):
        plan_activation(s.home, "alice", KEY, bad, tmp_path / "pkg")
    assert not (tmp_path / "pkg").exists() and snapshot(s.sessions) == before
    res = CliRunner().invoke(
        app, ["plan", "--home", str(s.home), "--agent", "alice", "--candidate", str(bad), "--out", str(tmp_path / "p")]
    )
    assert res.exit_code == EXIT.INVALID and "session doctor --fix" in res.output
    # Mended by appending, the same candidate is planned.
    assert CliRunner().invoke(kurahi_app, ["session", "doctor", str(bad), "--fix"]).exit_code == EXIT.OK
    plan_activation(s.home, "alice", KEY, bad, tmp_path / "pkg2")
    assert (tmp_path / "pkg2" / "activation.json").exists()
