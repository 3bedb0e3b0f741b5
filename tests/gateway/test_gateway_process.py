"""`kurahi gateway run|status|stop` and `kurahi chat` as real processes: one gateway per home, graceful stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kurahi.gateway.lock import gateway_info
from kurahi.resident.home import Home
from support.gateways import KURAHI, LeakWatch, make_gateway_home, run_kurahi, start_gateway


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    h = make_gateway_home(tmp_path)
    yield h
    watch = LeakWatch()
    watch.add(h.token_file.read_text().strip())
    watch.check(h.root)


def test_one_gateway_per_home_chat_cli_and_graceful_stop(home: Home) -> None:
    proc = start_gateway(home)
    try:
        info = json.loads(home.lock.read_text())
        assert set(info) == {"pid", "port", "startedAt"} and info["pid"] == proc.pid
        second = run_kurahi("gateway", "run", "--port", "0", home=home)
        assert second.returncode == 5 and "already running" in second.stderr and str(proc.pid) in second.stderr
        status = run_kurahi("gateway", "status", "--json", home=home)
        assert status.returncode == 0 and json.loads(status.stdout)["healthy"] is True
        chat = run_kurahi("chat", "--agent", "alice", "hello through the gateway", home=home)
        assert chat.returncode == 0, chat.stderr
        assert "[ALICE-7F3A] (alpha) You said: hello through the gateway" in chat.stdout
        as_json = run_kurahi("chat", "--agent", "alice", "--json", "again", home=home)
        assert json.loads(as_json.stdout)["status"] == "ok"
        bad = run_kurahi("chat", "--agent", "ghost", "hi", home=home)
        assert bad.returncode != 0 and "no agent 'ghost'" in bad.stderr
        stop = run_kurahi("gateway", "stop", home=home)
        assert stop.returncode == 0, stop.stderr
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    actions = [json.loads(x)["action"] for x in home.audit.read_text().splitlines()]
    assert actions[0] == "gateway.start" and actions[-1] == "gateway.stop"
    assert run_kurahi("gateway", "status", home=home).returncode == 1
    assert run_kurahi("chat", "hi", home=home).returncode == 3  # no gateway: clear error, not a traceback


def test_a_lock_left_by_a_killed_gateway_is_reclaimed(home: Home) -> None:
    proc = start_gateway(home)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert home.lock.exists() and gateway_info(home.lock) is None  # stale file, nobody holds it
    again = start_gateway(home)
    try:
        assert gateway_info(home.lock) is not None and gateway_info(home.lock).pid == again.pid  # type: ignore[union-attr]
    finally:
        again.send_signal(signal.SIGTERM)
        assert again.wait(timeout=30) == 0


def test_sigterm_interrupts_a_long_turn_and_records_it(home: Home) -> None:
    from kurahi.gateway.client import GatewayClient

    proc = start_gateway(home)
    try:
        with GatewayClient.for_home(home, timeout=30) as c:
            job = c.start_job("alice", "long [[slow:20000]]")
            # Stopped once its message is in the transcript: its 20 s model call has begun.
            sessions, deadline = home.agent("alice").sessions, time.monotonic() + 30
            while not any("long [[slow:20000]]" in f.read_text() for f in sessions.glob("*.jsonl")):
                assert time.monotonic() < deadline, "the job's turn never began"
                time.sleep(0.02)
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = [json.loads(x) for x in home.audit.read_text().splitlines()]
    assert ("job.interrupted", job["id"]) in [(r["action"], r["details"].get("jobId")) for r in lines]
    session = next(home.agent("alice").sessions.glob("*.jsonl"))
    last = json.loads(session.read_text().splitlines()[-1])
    assert last["message"]["stopReason"] == "aborted"


def test_devices_cli_and_interactive_chat(home: Home) -> None:
    pair = run_kurahi("devices", "pair", "--name", "laptop", "--scopes", "read,chat", "--json", home=home)
    assert pair.returncode == 0, pair.stderr
    paired = json.loads(pair.stdout)
    token = paired["token"]
    assert paired["device"]["scopes"] == ["read", "chat"] and token not in home.devices.read_text()
    bad = run_kurahi("devices", "pair", "--name", "x", "--scopes", "root", home=home)
    assert bad.returncode == 2 and "scopes must be some of" in bad.stderr
    listed = json.loads(run_kurahi("devices", "ls", "--json", home=home).stdout)
    assert [d["name"] for d in listed] == ["laptop"] and "tokenSha256" not in json.dumps(listed)
    proc = start_gateway(home)
    try:
        env = {**os.environ, "KOLO_HOME": str(home.root), "KOLO_GATEWAY_TOKEN": token}
        chat = subprocess.run(
            [*KURAHI, "chat", "--agent", "alice"],
            input="first line\nsecond line\n",
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert chat.returncode == 0, chat.stderr
        assert "You said: first line" in chat.stdout and "You said: second line" in chat.stdout
        revoke = run_kurahi("devices", "revoke", paired["device"]["id"], home=home)
        assert revoke.returncode == 0
        denied = subprocess.run([*KURAHI, "chat", "--agent", "alice", "hi"], capture_output=True, text=True, env=env)
        assert denied.returncode == 1 and "401 unauthorized" in denied.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    actions = [json.loads(x)["action"] for x in home.audit.read_text().splitlines()]
    assert "device.pair" in actions and "device.revoke" in actions
    watch = LeakWatch()
    watch.add(token)
    watch.saw("chat output", chat.stdout + chat.stderr)
    watch.check(home.root)
