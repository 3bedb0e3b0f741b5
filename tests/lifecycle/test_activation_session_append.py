"""The session-append target through the one activation driver: a Claude Code repair package applied,
verified and rolled back by ``apply_package``/``verify_package``/``rollback_package`` with no home or host,
the journal in the driver's phases, and a rerun or a grown file each said as it stands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kurahi.errors import ActivationError
from kurahi.lifecycle.activation import apply_package, rollback_package, verify_package
from kurahi.lifecycle.activation.outcome import journal_phase
from kurahi.lifecycle.activation.package import Package
from kurahi.lifecycle.activation.targets import homed, stops_gateway
from kurahi.lifecycle.rescue.appending import plan_append
from kurahi.runtimes.claude.losses import find_losses
from kurahi.runtimes.registry import named
from support.claude_sessions import four_turns

KEYS = {"action", "package", "file", "outcome", "verified", "problems", "rollback"}


def _planned(tmp_path: Path) -> tuple[Path, Path, bytes]:
    s, turns = four_turns()
    s.row(turns[2].tool_result)["parentUuid"] = None
    root = tmp_path / "claude"
    path = s.write(root)
    [loss] = find_losses(root).losses
    plan_append(named("claude"), root, loss.id, tmp_path / "pkg")
    return tmp_path / "pkg", path, path.read_bytes()


def _phase(pkg: Path) -> str:
    return journal_phase(Package(pkg, None).journal.records()).name  # type: ignore[type-var]


def test_the_driver_applies_verifies_and_rolls_back_a_session_file_without_a_home(tmp_path: Path) -> None:
    pkg, path, before = _planned(tmp_path)
    assert not homed(pkg) and stops_gateway(pkg)
    res = apply_package(pkg, None, None)
    assert res.report is not None and set(res.report) == KEYS and res.to_dict() == res.report
    assert res.report["verified"] and res.report["outcome"].startswith("appended ")
    assert res.steps == ["append", "validate"]
    assert path.read_bytes().startswith(before) and len(path.read_bytes()) > len(before)
    assert _phase(pkg) == "applied" and find_losses(path.parents[2]).losses == []
    again = apply_package(pkg, None, None)
    assert again.outcome == "already-applied" and again.report is not None
    assert again.report["outcome"] == "already applied (the file ends with the repair)" and again.report["verified"]
    rep = verify_package(pkg, None)
    assert rep.ok and rep.report is not None and rep.report["outcome"] == "the file holds the repair"
    back = rollback_package(pkg, None, None)
    assert back.report is not None and "byte for byte" in back.report["outcome"] and back.report["rollback"] == ""
    assert path.read_bytes() == before and _phase(pkg) == "rolled-back"
    assert not verify_package(pkg, None).ok
    twice = rollback_package(pkg, None, None)
    assert twice.outcome == "already-rolled-back" and twice.report is not None
    assert twice.report["outcome"].startswith("nothing to undo")
    assert apply_package(pkg, None, None).report["verified"]  # type: ignore[index]  # the same package, again


def test_a_rollback_after_the_file_grew_appends_the_rows_as_they_were_once(tmp_path: Path) -> None:
    pkg, path, _ = _planned(tmp_path)
    apply_package(pkg, None, None)
    with path.open("ab") as f:
        f.write(b'{"type":"last-prompt","lastPrompt":"x"}\n')  # claude wrote after the repair
    grown = path.read_bytes()
    again = apply_package(pkg, None, None)
    assert again.report is not None and "appended since" in again.report["outcome"]
    res = rollback_package(pkg, None, None)
    assert res.report is not None and "appended again" in res.report["outcome"]
    added = path.read_bytes()[len(grown) :]
    assert path.read_bytes().startswith(grown) and [json.loads(x)["uuid"] for x in added.splitlines()]
    with pytest.raises(ActivationError, match="not applied"):  # not twice: refused, nothing changed
        rollback_package(pkg, None, None)
    assert path.read_bytes() == grown + added


def test_a_state_dir_package_without_a_home_is_a_usage_error(tmp_path: Path) -> None:
    from kurahi.errors import UsageError
    from kurahi.lifecycle.activation import targets

    (tmp_path / "pkg").mkdir()
    with pytest.raises(UsageError, match="--home"):
        targets.target(tmp_path / "pkg", None, None, None)


def test_a_rollback_over_a_file_changed_otherwise_is_refused_and_the_package_stays_applied(tmp_path: Path) -> None:
    from kurahi.errors import PreconditionError

    pkg, path, _ = _planned(tmp_path)
    apply_package(pkg, None, None)
    changed = b"x" + path.read_bytes()[1:]
    path.write_bytes(changed)
    with pytest.raises(PreconditionError, match="changed otherwise"):
        rollback_package(pkg, None, None)
    assert path.read_bytes() == changed and _phase(pkg) == "applied"  # the journal has no rollback begun
