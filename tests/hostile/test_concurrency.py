"""Concurrency: 16 clients on one session keep the queue's order; a CLI writer honours the gateway's locks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from support.gateways import make_gateway_home, serve_in_thread

KEY = "agent:alice:main"


def test_sixteen_clients_on_one_session_are_served_one_turn_at_a_time(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    results: list[Any] = []
    with serve_in_thread(home) as s:
        barrier = threading.Barrier(16)

        def client(i: int) -> None:
            with httpx.Client(base_url=s.url, headers={"Authorization": f"Bearer {s.token}"}, timeout=60) as c:
                barrier.wait()
                r = c.post("/api/agents/alice/chat", json={"message": f"client {i} [[slow:20]]", "mode": "followup"})
                results.append((i, r.status_code, r.json()))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert sorted(i for i, _, _ in results) == list(range(16))
    assert all(code == 200 and body["status"] == "ok" for _, code, body in results)
    for i, _, body in results:
        assert f"client {i}" in body["reply"]  # each got the answer to its own message
    [file] = home.agent("alice").sessions.glob("*.jsonl")
    msgs = [json.loads(x)["message"] for x in file.read_text().splitlines()[1:] if '"message"' in x]
    roles = [m["role"] for m in msgs]
    assert roles == ["user", "assistant"] * 16  # one turn at a time: never two user messages in a row
    for user, reply in zip(msgs[::2], msgs[1::2], strict=True):
        said = user["content"][0]["text"].split(" [[")[0]
        assert said in reply["content"][0]["text"]  # each reply answers the message right before it


def test_a_cli_writer_is_refused_while_the_gateway_holds_the_session(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    with (
        serve_in_thread(home) as s,
        httpx.Client(base_url=s.url, headers={"Authorization": f"Bearer {s.token}"}, timeout=60) as c,
    ):
        assert c.post("/api/agents/alice/chat", json={"message": "hello"}).status_code == 200
        [file] = home.agent("alice").sessions.glob("*.jsonl")
        before = file.read_bytes()
        env = {**os.environ, "KOLO_HOME": str(home.root)}
        started = time.monotonic()
        cli = subprocess.run(
            [sys.executable, "-m", "kurahi.cli", "agent", "send", "--agent", "alice", "sneaky write"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert cli.returncode == 5, cli.stderr  # busy: the transcript's writer lock is held
        assert "locked by" in cli.stderr and time.monotonic() - started < 30
        assert file.read_bytes() == before  # nothing written behind the gateway's back
        assert c.post("/api/agents/alice/chat", json={"message": "still fine"}).json()["status"] == "ok"
