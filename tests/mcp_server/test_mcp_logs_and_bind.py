"""``kurahi mcp``'s own output: "serving" only after the bind, and log lines bounded and redacted.

The real command over stdio and over HTTP, as a client starts it; ``timeout`` only stops a
command that does not end (the HTTP case must refuse before serving).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from support.mcp_states import server_args
from support.testdata import openclaw_state_copy

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
SECRET = "sk-ant-api03-ZZZZZZZZZZZZZZZZZZZZZZZZZZZZ"


def test_a_100kb_uri_writes_a_bounded_redacted_log_line_and_error(tmp_path: Path) -> None:
    state = openclaw_state_copy("2026.9.6-reset", tmp_path / "state")
    uri = "kurahi://transcript/agent:main:main/p0/0-3" + "A" * 100_000 + SECRET
    with_secret = f"kurahi://transcript/agent:main:{SECRET}/p0/0-3"
    lines = [
        json.dumps(INIT),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": uri}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": with_secret}}),
    ]
    # One request at a time, each answer read before the next is sent: stdin closes only after
    # the last answer, so no request is cut off by the end of input.
    answers = {}
    log = tmp_path / "stderr.txt"  # a file, not a pipe: a server logging 440 KB never blocks on it
    with (
        log.open("w") as err,
        subprocess.Popen(
            [sys.executable, *server_args("openclaw", state)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        ) as proc,
    ):
        assert proc.stdin is not None and proc.stdout is not None
        for line in lines:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            if '"id"' in line:
                answer = json.loads(proc.stdout.readline())
                answers[answer["id"]] = answer
        proc.stdin.close()
    stderr = log.read_text()
    # The SDK's own refusal echoed the URI twice, whole (200 KB, the secret in it): now bounded.
    refused = json.dumps(answers[2]["error"])
    assert "unknown resource" in refused and len(refused) < 500 and SECRET not in refused, refused[:300]
    assert "key" in answers[4]["error"]["message"] and SECRET not in answers[4]["error"]["message"]
    assert "tools" in answers[3]["result"]
    assert len(stderr) < 5_000, f"{len(stderr):,} characters of log for one bad URI"
    assert SECRET not in stderr and "Traceback" not in stderr


def test_a_port_in_use_is_an_error_and_serving_is_never_said(tmp_path: Path) -> None:
    state = openclaw_state_copy("2026.9.6-reset", tmp_path / "state")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        env = {**os.environ, "KURAHI_MCP_TOKEN": "kurahi-test-token-3f9a1c77e2b54d08"}
        done = subprocess.run(
            [sys.executable, *server_args("openclaw", state, "--http", "--port", str(port))],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert done.returncode != 0
    assert "serving" not in done.stderr, done.stderr
    assert f"127.0.0.1:{port}" in done.stderr and "in use" in done.stderr and "Traceback" not in done.stderr
