"""``kurahi mcp --http``'s token: the same minimum from a file as from the environment, and only a regular file.

The command runs as a client would start it (a subprocess); a refusal comes before any bind,
so nothing listens. The ``timeout`` only stops a command that hangs (the bug this guards).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kurahi.cli.common import EXIT
from support.mcp_states import server_args
from support.testdata import openclaw_state_copy


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _run(state: Path, token_file: Path, env_token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KURAHI_MCP_TOKEN"}
    if env_token is not None:
        env["KURAHI_MCP_TOKEN"] = env_token
    args = server_args("openclaw", state, "--http", "--port", str(_free_port()), "--token-file", str(token_file))
    try:
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"kurahi mcp --token-file {token_file.name} did not refuse: it started or hung")


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return openclaw_state_copy("2026.9.6-reset", tmp_path / "state")


@pytest.mark.parametrize("token", ["a", "Zq7-short-tok15"])
def test_a_short_token_in_the_file_is_refused_as_from_the_environment(state: Path, tmp_path: Path, token: str) -> None:
    f = tmp_path / "token"
    f.write_text(token + "\n")
    done = _run(state, f)
    assert done.returncode == EXIT.USAGE, done.stderr
    assert "--token-file" in done.stderr and "at least 16" in done.stderr and "Traceback" not in done.stderr
    assert len(token) == 1 or token not in done.stderr  # the token itself is never printed


def test_a_fifo_as_token_file_is_refused_at_once(state: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "token.fifo"
    os.mkfifo(fifo)
    done = _run(state, fifo)
    assert done.returncode == EXIT.USAGE, done.stderr
    assert "not a regular file" in done.stderr and "FIFO" in done.stderr and "Traceback" not in done.stderr


def test_a_device_or_directory_as_token_file_is_refused(state: Path, tmp_path: Path) -> None:
    for path in (Path("/dev/zero"), tmp_path):
        done = _run(state, path)
        assert done.returncode == EXIT.USAGE, done.stderr
        assert "not a regular file" in done.stderr and "Traceback" not in done.stderr
