"""End to end with a real gateway process: chat, stitch, plan, apply (stop, restart, validate), chat, Pi."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli.activate import app as activate_app
from kurahi.cli.common import EXIT
from kurahi.errors import PreTurnValidationError
from kurahi.gateway.activation_host import GatewayHost
from kurahi.gateway.lock import gateway_info
from kurahi.lifecycle.activation import apply_package, plan_activation
from kurahi.lineage.stitch import stitch
from kurahi.resident.home import Home
from kurahi.store.audit.log_file import AuditChain
from kurahi.store.catalog import Catalog
from kurahi.testing import build_session
from support.activations import snapshot
from support.gateways import make_gateway_home, run_kurahi, start_gateway
from support.peer import PiPeer

KEY = "agent:alice:main"


def _stop_any(home: Home) -> None:
    """Stop whatever gateway runs on ``home`` (the one apply restarted is not our child)."""
    info = gateway_info(home.lock)
    if info is None:
        return
    os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while gateway_info(home.lock) is not None:
        assert time.monotonic() < deadline, "the restarted gateway did not stop"
        time.sleep(0.05)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[Home, subprocess.Popen[bytes]]]:
    home = make_gateway_home(tmp_path)
    proc = start_gateway(home)
    try:
        yield home, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        _stop_any(home)


def _settled_entry(sessions: Path, key: str) -> dict[str, Any]:
    entry = Catalog(sessions / "sessions.json").get(key)
    assert entry is not None
    lines = [json.loads(x) for x in (sessions / entry["sessionFile"]).read_text().splitlines()]
    replied = max(e["message"]["timestamp"] for e in lines if e.get("type") == "message")
    deadline = time.monotonic() + 30
    while (entry := Catalog(sessions / "sessions.json").get(key)) is None or entry["lastInteractionAt"] < replied:
        assert time.monotonic() < deadline, f"the turn's clock never reached the catalog: {entry}"
        time.sleep(0.02)
    return dict(entry)


def _candidate(home: Home, tmp_path: Path) -> Path:
    """C = an older history A (with a phrase said only there) stitched onto the live session B."""
    first = run_kurahi("chat", "--agent", "alice", "good morning", home=home)  # the session's first turn creates it
    assert first.returncode == 0, first.stderr
    chat = run_kurahi("chat", "--agent", "alice", "the tide tables say ORANGE-WALRUS-OMEGA", home=home)
    assert chat.returncode == 0, chat.stderr
    # The runtime writes a turn's activity clocks to the catalog up to a second later; a plan made
    # before that would (rightly) be refused by apply, since the catalog entry changed. So wait
    # until the catalog holds this turn's clock: no earlier than its reply's timestamp (the
    # session was created a whole command earlier, so its own clock is older than that).
    sessions = home.agent("alice").sessions
    entry = _settled_entry(sessions, KEY)
    a = tmp_path / "A.jsonl"
    build_session(
        a, entries=200, seed=3, compact_every=50, markers=[*(f"x{i}" for i in range(7)), "PURPLE-GIRAFFE-ALPHA"]
    )
    c = tmp_path / "C.jsonl"
    stitch([a, sessions / entry["sessionFile"]], c, force=True)  # build_session's clock runs ahead
    return c


def test_activation_through_a_real_gateway_then_a_turn_and_pi_agree(
    running: tuple[Home, subprocess.Popen[bytes]], tmp_path: Path, pi: PiPeer
) -> None:
    home, proc = running
    c = _candidate(home, tmp_path)
    old_port = gateway_info(home.lock).port  # type: ignore[union-attr]
    runner = CliRunner()
    args = ["--home", str(home.root), "--agent", "alice", "--candidate", str(c), "--out", str(tmp_path / "pkg")]
    markers = ["--marker", "PURPLE-GIRAFFE-ALPHA", "--marker", "ORANGE-WALRUS-OMEGA"]
    res = runner.invoke(activate_app, ["plan", *args, *markers])
    assert res.exit_code == 0, res.output
    res = runner.invoke(activate_app, ["apply", str(tmp_path / "pkg"), "--home", str(home.root), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["steps"] == ["stop-gateway", "install", "catalog", "start-gateway", "validate"]
    assert out["validation"]["ok"] and out["validation"]["source"] == "gateway"
    assert out["validation"]["live"]["markersFound"] == ["PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"]
    assert proc.wait(30) == 0  # the old gateway stopped gracefully
    info = gateway_info(home.lock)
    assert info is not None and info.pid != proc.pid and info.port == old_port
    assert runner.invoke(activate_app, ["verify", str(tmp_path / "pkg"), "--home", str(home.root)]).exit_code == 0
    chain = [r.action for r in AuditChain(home.audit).tail(50)]
    assert (
        chain.index("gateway.stop") < chain.index("session.activate") < len(chain) - chain[::-1].index("gateway.start")
    )
    # The first user turn on the key runs on the activated session.
    turn = run_kurahi("chat", "--agent", "alice", "what did the tide tables say?", home=home)
    assert turn.returncode == 0, turn.stderr
    entry = Catalog(home.agent("alice").sessions / "sessions.json").get(KEY)
    assert (
        entry is not None
        and entry["sessionId"] == json.loads((tmp_path / "pkg" / "activation.json").read_text())["candidateSessionId"]
    )
    activated = home.agent("alice").sessions / entry["sessionFile"]
    assert activated.read_bytes().startswith(c.read_bytes())
    ctx = run_kurahi("session", "context", str(activated), "--json", home=home)
    assert ctx.returncode == 0, ctx.stderr
    mine, theirs = json.loads(ctx.stdout), pi.context(activated)
    assert theirs["messages"] == mine["messages"] and theirs["leafId"] == mine["leafId"]
    assert "PURPLE-GIRAFFE-ALPHA" in json.dumps(theirs["messages"])


def test_a_failed_validation_through_a_real_gateway_rolls_back_to_the_exact_old_bytes(
    running: tuple[Home, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    home, proc = running
    c = _candidate(home, tmp_path)
    sessions = home.agent("alice").sessions
    pkg = plan_activation(home.root, "alice", KEY, c, tmp_path / "pkg", markers=["PURPLE-GIRAFFE-ALPHA"])
    old = snapshot(sessions)
    target = sessions / pkg.plan.target_file

    class Tampering(GatewayHost):
        """The installed file loses its marker just before the gateway comes back (once)."""

        def start_gateway(self, port: int) -> None:
            if target.exists():
                target.write_bytes(target.read_bytes().replace(b"PURPLE-GIRAFFE-ALPHA", b"GONE"))
            super().start_gateway(port)

    with pytest.raises(PreTurnValidationError, match="PURPLE-GIRAFFE-ALPHA") as info:
        apply_package(pkg.root, home.root, Tampering(home.root))
    assert info.value.result is not None and info.value.result["validation"]["source"] == "gateway"
    assert proc.wait(30) == 0
    assert snapshot(sessions) == old  # catalog and transcripts byte for byte; the candidate gone
    assert gateway_info(home.lock) is not None  # it was running before, so it runs again
    turn = run_kurahi("chat", "--agent", "alice", "still here?", home=home)
    assert turn.returncode == 0, turn.stderr
    actions = [r.action for r in AuditChain(home.audit).tail(50)]
    assert actions.index("session.activate") < actions.index("session.rollback")
    res = CliRunner().invoke(activate_app, ["verify", str(pkg.root), "--home", str(home.root)])
    assert res.exit_code == EXIT.FAILED
