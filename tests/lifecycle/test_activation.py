"""Activation with rollback on real files: plan, apply, verify, rollback, and every refusal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kurahi.cli.activate import app
from kurahi.cli.common import EXIT
from kurahi.errors import (
    CandidateError,
    GatewayStopError,
    PackageNotFoundError,
    PackageTamperedError,
    PreconditionError,
    PreTurnValidationError,
    WrongHomeError,
)
from kurahi.gateway.activation_host import OfflineHost
from kurahi.lifecycle.activation import (
    apply_package,
    plan_activation,
    project,
    rollback_package,
    verify_package,
)
from kurahi.lineage.stitch import stitch
from kurahi.store.catalog import Catalog
from support.activations import KEY, OC_NEW, OC_OLD, OPENCLAW, FakeHost, Setup, actions, make_home, snapshot

runner = CliRunner()


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args))


@pytest.fixture
def s(tmp_path: Path) -> Setup:
    return make_home(tmp_path, chain=True)


def plan(s: Setup, out: Path, **kw: Any) -> Any:
    return plan_activation(s.home, s.agent, s.key, s.candidate, out, markers=kw.pop("markers", s.markers), **kw)


# -- plan ---------------------------------------------------------------------------------------


def test_plan_writes_a_checked_package_and_touches_nothing(s: Setup, tmp_path: Path) -> None:
    before = snapshot(s.sessions)
    res = cli(
        "plan", "--home", str(s.home), "--agent", "alice", "--candidate", str(s.candidate), "--out",
        str(tmp_path / "pkg"), "--marker", "LATE", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert snapshot(s.sessions) == before
    plan_ = json.loads(res.output)["plan"]
    pkg = tmp_path / "pkg"
    assert sorted(p.relative_to(pkg).as_posix() for p in pkg.rglob("*") if p.is_file()) == [
        "SHA256SUMS", "activation.json", "candidate.jsonl", "rollback/sessions.json",
    ]  # fmt: skip
    assert (pkg / "candidate.jsonl").read_bytes() == s.candidate.read_bytes()
    assert (pkg / "rollback" / "sessions.json").read_bytes() == before["sessions.json"]
    old = Catalog(s.sessions / "sessions.json").get(KEY)
    assert old is not None and plan_["oldEntry"] == old and plan_["home"] == str(s.home.resolve())
    new = plan_["newEntry"]
    # Terminal-run fields go, the rest stays in order, the session fields are the candidate's.
    assert list(new) == ["sessionId", "sessionFile", "sessionStartedAt", "model", "updatedAt", "compactionCount"]
    assert new["compactionCount"] == 2 and new["sessionFile"] == f"{new['sessionId']}.jsonl"
    assert new["sessionStartedAt"] == old["sessionStartedAt"] and new["updatedAt"] == old["updatedAt"]
    pre = plan_["preconditions"]
    assert pre["liveTranscript"] == {"name": s.live.name, "sha256": _sha(s.live)}
    assert pre["target"]["sha256"] == "absent" and pre["candidate"] == _sha(s.candidate)
    p = project(s.candidate, ["LATE"])
    assert plan_["projection"]["messages"] == p.messages and plan_["projection"]["sha256"] == p.sha256
    assert plan_["projection"]["markersFound"] == ["LATE"]
    sums = (pkg / "SHA256SUMS").read_text().splitlines()
    assert sorted(line.split("  ")[1] for line in sums) == [
        "activation.json",
        "candidate.jsonl",
        "rollback/sessions.json",
    ]


def test_plan_reads_the_candidate_from_stdin(s: Setup, tmp_path: Path) -> None:
    before = snapshot(s.sessions)
    args = ["plan", "--home", str(s.home), "--agent", "alice", "--marker", "LATE", "--json", "--candidate", "-"]
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "pkg")], input=s.candidate.read_bytes())
    assert res.exit_code == 0, res.output
    assert snapshot(s.sessions) == before
    assert (tmp_path / "pkg" / "candidate.jsonl").read_bytes() == s.candidate.read_bytes()
    plan_ = json.loads(res.stdout)["plan"]
    assert plan_["preconditions"]["candidate"] == _sha(s.candidate)
    assert plan_["projection"]["markersFound"] == ["LATE"]
    # What stdin holds is checked as a file would be, and named <stdin>, never the private copy.
    bad = runner.invoke(app, [*args, "--out", str(tmp_path / "bad")], input=b'{"type":"message","id":"a"}\n')
    assert bad.exit_code == EXIT.INVALID, bad.output
    assert "<stdin>" in bad.stderr and "kurahi-stdin-" not in bad.stderr
    assert not (tmp_path / "bad").exists() and snapshot(s.sessions) == before


def _sha(p: Path) -> str:
    import hashlib

    return hashlib.sha256(p.read_bytes()).hexdigest()


def _write(p: Path, rows: list[dict[str, Any]]) -> Path:
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


HEADER = {"type": "session", "version": 3, "id": "cand-1", "timestamp": "2026-10-07T16:13:00.000Z", "cwd": "/w"}


def _msg(eid: str, parent: str | None, text: str) -> dict[str, Any]:
    m = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-10-07T16:13:01.000Z", "message": m}


@pytest.mark.parametrize(
    ("rows", "markers", "match"),
    [
        ([{"type": "message", "id": "a"}], [], "not a usable session"),
        ([HEADER, _msg("a", "b", "x"), _msg("b", "a", "y")], [], "parentId cycle"),
        ([HEADER, _msg("a", "gone", "x"), _msg("b", "a", "y")], [], "broken path: entry 'a'"),
        ([HEADER, _msg("a", None, "x")], ["never said"], "markers missing.*never said"),
        ([{**HEADER, "id": "../escape"}, _msg("a", None, "x")], [], "cannot name a session file"),
        ([{**HEADER, "version": 1}, _msg("a", None, "x")], [], "version-1/2"),
    ],
    ids=["no-header", "cycle", "dangling-parent", "missing-marker", "bad-id", "v1"],
)
def test_a_broken_candidate_is_refused_with_nothing_written(
    s: Setup, tmp_path: Path, rows: list[dict[str, Any]], markers: list[str], match: str
) -> None:
    bad = _write(tmp_path / "bad.jsonl", rows)
    before = snapshot(s.sessions)
    with pytest.raises(CandidateError, match=match):
        plan_activation(s.home, "alice", KEY, bad, tmp_path / "pkg", markers=markers)
    assert not (tmp_path / "pkg").exists() and not list(tmp_path.glob(".pkg.*"))
    flags = [a for m in markers for a in ("--marker", m)]
    res = cli("plan", "--home", str(s.home), "--agent", "alice", "--candidate", str(bad), "--out", "p", *flags)
    assert res.exit_code == EXIT.INVALID and "Traceback" not in res.output
    assert snapshot(s.sessions) == before


def test_plan_never_overwrites_a_different_target_or_an_existing_package(s: Setup, tmp_path: Path) -> None:
    pkg = plan(s, tmp_path / "pkg")
    (s.sessions / pkg.plan.target_file).write_text("someone else's file\n")
    with pytest.raises(PreconditionError, match="never overwritten"):
        plan(s, tmp_path / "pkg2")
    res = cli(
        "plan", "--home", str(s.home), "--agent", "alice", "--candidate", str(s.candidate), "--out", str(pkg.root)
    )
    assert res.exit_code == EXIT.USAGE and "exists" in res.output
    res = cli("plan", "--home", str(s.home), "--agent", "bob", "--candidate", str(s.candidate), "--out", "x")
    assert res.exit_code == EXIT.FAILED and "no sessions directory" in res.output


# -- apply / verify / rollback --------------------------------------------------------------------


def test_apply_verify_rollback_offline_round_trip_is_byte_exact(s: Setup, tmp_path: Path) -> None:
    old = snapshot(s.sessions)
    pkg = plan(s, tmp_path / "pkg")
    assert cli("verify", str(pkg.root), "--home", str(s.home)).exit_code == EXIT.FAILED
    res = cli("apply", str(pkg.root), "--home", str(s.home), "--offline", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["outcome"] == "applied" and out["steps"] == ["install", "catalog", "validate"]
    assert out["validation"]["ok"] and out["validation"]["source"] == "files" and out["audited"]
    new = snapshot(s.sessions)
    assert new[pkg.plan.target_file] == s.candidate.read_bytes() and new[s.live.name] == old[s.live.name]
    assert Catalog(s.sessions / "sessions.json").get(KEY) == pkg.plan.new_entry
    assert Catalog(s.sessions / "sessions.json").get("agent:alice:other") == {"sessionId": "other", "updatedAt": 1}
    res = cli("verify", str(pkg.root), "--home", str(s.home), "--json")
    assert res.exit_code == 0 and json.loads(res.output)["ok"]
    again = cli("apply", str(pkg.root), "--home", str(s.home), "--offline", "--json")
    assert json.loads(again.output)["outcome"] == "already-applied" and snapshot(s.sessions) == new
    res = cli("rollback", str(pkg.root), "--home", str(s.home), "--offline", "--json")
    assert res.exit_code == 0 and json.loads(res.output)["steps"] == ["catalog", "transcript"]
    assert snapshot(s.sessions) == old
    res = cli("verify", str(pkg.root), "--home", str(s.home), "--json")
    parts = {p["part"]: p["ok"] for p in json.loads(res.output)["parts"]}
    assert res.exit_code == EXIT.FAILED
    assert parts == {"catalogEntry": False, "sessionFile": False, "transcript": False, "projection": False}
    assert (
        json.loads(cli("rollback", str(pkg.root), "--home", str(s.home), "--offline", "--json").output)["outcome"]
        == "already-rolled-back"
    )
    assert actions(s.home) == ["test.setup", "session.activate", "session.rollback"]
    # A rolled-back package can be applied again while its preconditions hold.
    assert apply_package(pkg.root, s.home, OfflineHost(s.home)).outcome == "applied"
    assert snapshot(s.sessions) == new


def test_gateway_is_stopped_restarted_and_the_validator_reads_through_it(s: Setup, tmp_path: Path) -> None:
    pkg = plan(s, tmp_path / "pkg")
    host = FakeHost(s.home, port=4321)
    res = apply_package(pkg.root, s.home, host)
    assert host.calls == ["stop", "start:4321", "read"] and host.port == 4321
    assert res.validation is not None and res.validation["source"] == "gateway" and res.validation["ok"]
    assert res.steps == ["stop-gateway", "install", "catalog", "start-gateway", "validate"]
    host.calls.clear()
    rollback_package(pkg.root, s.home, host)
    assert host.calls == ["stop", "start:4321"]


def test_an_apply_cut_off_before_its_restart_is_finished_offline_from_the_files(s: Setup, tmp_path: Path) -> None:
    # Power cut between the switch and the gateway's restart; the owner finishes it with
    # `apply --offline` before anything is started again (found by the gateway crash campaign:
    # the rerun claimed a restart it never made, then failed to read through the missing gateway).
    pkg = plan(s, tmp_path / "pkg")

    def power_cut() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        apply_package(pkg.root, s.home, FakeHost(s.home, port=4321, on_start=power_cut))
    res = apply_package(pkg.root, s.home, OfflineHost(s.home))
    assert res.outcome == "applied" and res.steps[0] == "resume" and "start-gateway" not in res.steps
    assert res.validation is not None and res.validation["source"] == "files" and res.validation["ok"]
    assert verify_package(pkg.root, s.home).ok
    events = [(r.get("op"), r.get("event")) for r in pkg.journal.records()]
    assert ("apply", "gateway-started") not in events and events[-1] == ("apply", "committed")
    # Finished with a gateway host instead, it restarts the gateway and validates through it.
    pkg2 = plan(make_home(tmp_path / "again"), tmp_path / "pkg2")
    home2 = tmp_path / "again" / "home"
    with pytest.raises(KeyboardInterrupt):
        apply_package(pkg2.root, home2, FakeHost(home2, port=4321, on_start=power_cut))
    host = FakeHost(home2)
    res = apply_package(pkg2.root, home2, host)
    assert host.calls == ["start:4321", "read"] and res.validation is not None
    assert res.validation["source"] == "gateway" and res.validation["ok"]


def test_a_gateway_that_will_not_stop_changes_nothing(s: Setup, tmp_path: Path) -> None:
    before = snapshot(s.sessions)
    pkg = plan(s, tmp_path / "pkg")
    with pytest.raises(GatewayStopError, match="did not stop"):
        apply_package(pkg.root, s.home, FakeHost(s.home, port=1, stoppable=False), stop_timeout=0.1)
    with pytest.raises(GatewayStopError, match="stop it first"):
        apply_package(pkg.root, s.home, FakeHost(s.home, port=1), require_stopped=True)
    assert snapshot(s.sessions) == before
    assert apply_package(pkg.root, s.home, FakeHost(s.home, port=1)).outcome == "applied"


def test_preconditions_that_no_longer_hold_are_refused(s: Setup, tmp_path: Path) -> None:
    pkg = plan(s, tmp_path / "pkg")
    with s.live.open("ab") as fh:  # a turn after planning: the candidate lacks it
        fh.write(s.live.read_bytes().splitlines(keepends=True)[-1])
    before = snapshot(s.sessions)
    res = cli("apply", str(pkg.root), "--home", str(s.home), "--offline")
    assert res.exit_code == EXIT.FAILED and "live transcript" in res.output and "left as it was" in res.output
    assert snapshot(s.sessions) == before
    pkg2 = plan(s, tmp_path / "pkg2")
    Catalog(s.sessions / "sessions.json").upsert(KEY, {"model": "beta"})
    with pytest.raises(PreconditionError, match="catalogEntry"):
        apply_package(pkg2.root, s.home, FakeHost(s.home, port=9))
    # A change that lands while the gateway stops is caught by the second check; the gateway comes back.
    pkg3 = plan(s, tmp_path / "pkg3")
    host = FakeHost(s.home, port=9)
    real_stop = host.stop_gateway

    def stop_and_write(timeout: float) -> None:
        real_stop(timeout)
        Catalog(s.sessions / "sessions.json").upsert(KEY, {"model": "gamma"})

    host.stop_gateway = stop_and_write  # type: ignore[method-assign]
    with pytest.raises(PreconditionError):
        apply_package(pkg3.root, s.home, host)
    assert host.calls == ["stop", "start:9"] and not (s.sessions / pkg3.plan.target_file).exists()
    entry = Catalog(s.sessions / "sessions.json").get(KEY)
    assert entry is not None and entry["model"] == "gamma" and entry["sessionId"] == pkg3.plan.old_entry["sessionId"]  # type: ignore[index]


def test_tampered_missing_and_foreign_packages_are_refused(s: Setup, tmp_path: Path) -> None:
    before = snapshot(s.sessions)
    assert cli("rollback", str(tmp_path / "none"), "--home", str(s.home), "--offline").exit_code == EXIT.NOT_FOUND
    pkg = plan(s, tmp_path / "pkg")
    other = make_home(tmp_path / "elsewhere")
    res = cli("apply", str(pkg.root), "--home", str(other.home), "--offline")
    assert res.exit_code == EXIT.INVALID and "planned for the home" in res.output
    with pytest.raises(WrongHomeError):
        verify_package(pkg.root, other.home)

    def append(p: Path) -> None:
        with (p / "candidate.jsonl").open("a") as fh:
            fh.write("{}\n")

    for mutate, match in [
        (append, "candidate.jsonl changed"),
        (lambda p: (p / "extra.txt").write_text("x"), "not in SHA256SUMS"),
        (lambda p: (p / "rollback" / "sessions.json").unlink(), "missing"),
    ]:
        copy = tmp_path / f"copy-{match[:4]}"
        shutil.copytree(pkg.root, copy)
        mutate(copy)
        with pytest.raises(PackageTamperedError, match=match):
            apply_package(copy, s.home, OfflineHost(s.home))
        res = cli("rollback", str(copy), "--home", str(s.home), "--offline")
        assert res.exit_code == EXIT.INVALID and "Traceback" not in res.output
    with pytest.raises(PackageNotFoundError):
        apply_package(tmp_path, s.home, OfflineHost(s.home))
    assert snapshot(s.sessions) == before


def test_validator_mismatch_rolls_back_to_the_exact_old_bytes(s: Setup, tmp_path: Path) -> None:
    old = snapshot(s.sessions)
    pkg = plan(s, tmp_path / "pkg")
    target = s.sessions / pkg.plan.target_file

    def corrupt() -> None:  # the "gateway" rewrites the installed file as it starts: LATE is gone
        if target.exists():
            target.write_bytes(target.read_bytes().replace(b"LATE", b"LOST"))

    host = FakeHost(s.home, port=7, on_start=corrupt)
    with pytest.raises(PreTurnValidationError, match="marker 'LATE' is missing") as info:
        apply_package(pkg.root, s.home, host)
    assert snapshot(s.sessions) == old
    assert host.calls == ["stop", "start:7", "read", "stop", "start:7"] and host.port == 7
    assert info.value.result is not None and info.value.result["outcome"] == "rolled-back"
    assert actions(s.home)[-2:] == ["session.activate", "session.rollback"]
    kept = sorted(p.name for p in (pkg.root / "evidence").iterdir())
    assert kept[0].startswith("live-at-validation-") and kept[1] == f"replaced-{pkg.plan.target_file}"
    assert verify_package(pkg.root, s.home).phase == "rolled-back"


def test_validator_failure_through_the_cli_exits_1_with_the_comparison(s: Setup, tmp_path: Path) -> None:
    pkg = plan(s, tmp_path / "pkg")
    old = snapshot(s.sessions)
    target = s.sessions / pkg.plan.target_file
    import kurahi.cli.activate as mod

    def grow() -> None:  # the "gateway" appends to the installed file as it starts
        if target.exists():
            last = json.loads(target.read_bytes().splitlines()[-1])
            with target.open("a") as fh:
                fh.write(json.dumps(_msg("zz-extra", last["id"], "injected")) + "\n")

    def host(root: Path, offline: bool) -> FakeHost:
        return FakeHost(root, port=5, on_start=grow)

    orig, mod._host = mod._host, host  # type: ignore[assignment]
    try:
        res = cli("apply", str(pkg.root), "--home", str(s.home), "--json")
    finally:
        mod._host = orig
    assert res.exit_code == EXIT.FAILED
    out = json.loads(res.output.splitlines()[0])
    assert out["outcome"] == "rolled-back" and not out["validation"]["ok"]
    assert snapshot(s.sessions) == old


def test_rollback_after_use_needs_force_and_keeps_the_used_transcript(s: Setup, tmp_path: Path) -> None:
    old = snapshot(s.sessions)
    pkg = plan(s, tmp_path / "pkg")
    apply_package(pkg.root, s.home, OfflineHost(s.home))
    target = s.sessions / pkg.plan.target_file
    with target.open("ab") as fh:  # a turn on the activated session
        fh.write(target.read_bytes().splitlines(keepends=True)[-1])
    Catalog(s.sessions / "sessions.json").upsert(KEY, {}, touch=True)
    used = target.read_bytes()
    res = cli("rollback", str(pkg.root), "--home", str(s.home), "--offline")
    assert res.exit_code == EXIT.FAILED and "was used" in res.output and "--force" in res.output
    assert target.read_bytes() == used
    res = cli("rollback", str(pkg.root), "--home", str(s.home), "--offline", "--force")
    assert res.exit_code == 0, res.output
    assert snapshot(s.sessions) == old
    assert (pkg.root / "evidence" / f"replaced-{pkg.plan.target_file}").read_bytes() == used


def test_a_candidate_that_keeps_the_live_session_id_replaces_it_and_rollback_restores_it(
    s: Setup, tmp_path: Path
) -> None:
    old = snapshot(s.sessions)
    cand = tmp_path / "same-id.jsonl"
    lines = s.live.read_bytes().splitlines(keepends=True)
    cand.write_bytes(b"".join(lines[:-4]))  # the live session with its last turn cut: same header id
    pkg = plan_activation(s.home, "alice", KEY, cand, tmp_path / "pkg")
    assert pkg.plan.replaces_live and pkg.plan.target_file == s.live.name
    assert (pkg.root / "rollback" / "transcript.jsonl").read_bytes() == s.live.read_bytes()
    apply_package(pkg.root, s.home, OfflineHost(s.home))
    assert s.live.read_bytes() == cand.read_bytes() and verify_package(pkg.root, s.home).ok
    rollback_package(pkg.root, s.home, OfflineHost(s.home))
    assert snapshot(s.sessions) == old


def test_openclaw_json_era_state_directory_offline(tmp_path: Path) -> None:
    state = tmp_path / "state"
    shutil.copytree(OPENCLAW, state)
    sessions = state / "agents" / "main" / "sessions"
    old = snapshot(sessions)
    c = tmp_path / "C.jsonl"
    stitch([sessions / OC_OLD, sessions / OC_NEW], c)
    markers = ["PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"]
    pkg = plan_activation(state, "main", "agent:main:main", c, tmp_path / "pkg", markers=markers)
    new = pkg.plan.new_entry
    # The sample's entries name the dir it was made in (/home/ava/.openclaw): the new one names this dir.
    assert new["sessionFile"] == str(state.resolve() / "agents" / "main" / "sessions" / pkg.plan.target_file)
    assert not {"status", "endedAt", "abortedLastRun"} & set(new) and new["compactionCount"] == 0
    assert new["skillsSnapshot"] == pkg.plan.old_entry["skillsSnapshot"]  # type: ignore[index]
    res = cli("apply", str(pkg.root), "--home", str(state), "--offline", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["audited"] is False and not (state / "audit").exists()
    assert cli("verify", str(pkg.root), "--home", str(state)).exit_code == 0
    assert cli("rollback", str(pkg.root), "--home", str(state), "--offline").exit_code == 0
    assert snapshot(sessions) == old  # the catalog's layout included, byte for byte


def test_openclaw_state_directory_without_offline_gets_no_audit_folder(tmp_path: Path) -> None:
    state = tmp_path / "state"
    shutil.copytree(OPENCLAW, state)
    sessions = state / "agents" / "main" / "sessions"
    c = tmp_path / "C.jsonl"
    stitch([sessions / OC_OLD, sessions / OC_NEW], c)
    pkg = plan_activation(state, "main", "agent:main:main", c, tmp_path / "pkg")
    res = cli("apply", str(pkg.root), "--home", str(state), "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["audited"] is False
    assert not (state / "audit").exists() and not (state / "run").exists()
    assert cli("rollback", str(pkg.root), "--home", str(state)).exit_code == 0
    assert not (state / "audit").exists()


@pytest.mark.parametrize("command", ["plan", "verify"])
def test_help_offers_only_the_options_a_command_takes(command: str) -> None:
    res = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "--offline" not in res.output
    refused = cli(command, "--offline")
    assert refused.exit_code == EXIT.USAGE


# -- CLI surface ----------------------------------------------------------------------------------


def _commands() -> list[Any]:
    return list(typer.main.get_group(app).commands.items())  # type: ignore[attr-defined]


@pytest.mark.parametrize(("name", "cmd"), _commands(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_command_and_option_has_help(name: str, cmd: Any) -> None:
    assert cmd.help
    for param in cmd.params:
        if param.param_type_name == "option":
            assert param.help, f"activate {name} {param.opts[0]} has no help"
    res = runner.invoke(app, [name, "--help"])
    assert res.exit_code == 0 and "Usage" in res.output


def test_the_commands_are_the_four_of_the_issue() -> None:
    assert sorted(name for name, _ in _commands()) == ["apply", "plan", "rollback", "verify"]
    assert "Activate" in runner.invoke(app, ["--help"]).output


def test_the_lifecycle_room_exports_what_it_lists() -> None:
    import kurahi.lifecycle as room

    assert all(hasattr(room, name) for name in room.__all__)
    assert room.apply_package is apply_package
