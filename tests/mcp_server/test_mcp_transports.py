"""``kurahi mcp`` as a client starts it: the command over stdio, and over Streamable HTTP with a bearer token.

The official ``mcp`` client, every tool and the resource, on the three kinds of state; the raw
wire for what that client cannot send (a lone surrogate, garbage lines); the command's own
refusals (no token, a remote address without ``--allow-remote``).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from kurahi.cli.common import EXIT
from support.mcp_states import (
    HOME_BEFORE,
    JSON_A,
    SQLITE_BEFORE,
    server_args,
    states,
    structured,
)
from support.testdata import tree_hash
from support.waiting import wait_for

PHRASE = {"sqlite": SQLITE_BEFORE, "json": JSON_A, "home": HOME_BEFORE}
TOKEN = "kurahi-test-token-3f9a1c77e2b54d08"


def _env() -> dict[str, str]:
    # The SDK's client passes the child only an allow-listed environment, as OpenClaw does.
    src = str(Path(__file__).resolve().parents[2] / "src")
    return {"PYTHONPATH": src, "HOME": os.environ.get("HOME", "/tmp")}


async def _every_tool(c: Client, phrase: str) -> dict[str, Any]:
    names = sorted(t.name for t in (await c.list_tools()).tools)
    lineage = structured(await c.call_tool("lineage", {}))
    recall = structured(await c.call_tool("recall", {"query": phrase}))
    check = structured(await c.call_tool("check", {"markers": [phrase]}))
    losses = structured(await c.call_tool("losses", {}))
    around = await c.read_resource(recall["hits"][0]["around"])
    bad = await c.call_tool("recall", {"query": "x", "key": "../../x"})
    after = structured(await c.call_tool("recall", {"query": phrase}))
    return {
        "names": names,
        "lineage": lineage,
        "recall": recall,
        "check": check,
        "losses": losses,
        "around": json.loads(around.contents[0].text),
        "bad": bad,
        "after": after,
    }


def _assert_served(out: dict[str, Any], phrase: str) -> None:
    assert out["names"] == ["check", "lineage", "losses", "recall"]
    assert out["lineage"]["leftView"]["messages"] > 0 and len(out["lineage"]["pieces"]) >= 1
    top = out["recall"]["hits"][0]
    assert phrase in top["text"] and top["inViewNow"] is False
    assert out["check"]["markers"][0]["sentNext"] is False
    assert out["losses"]["total"] >= 1
    assert any(e["entryId"] == top["entryId"] for e in out["around"]["entries"])
    assert out["bad"].is_error and "looks like a path" in out["bad"].content[0].text
    assert out["after"] == out["recall"]


@pytest.mark.parametrize("name", ["sqlite", "json", "home"])
def test_stdio_every_tool_on_each_kind_of_state(tmp_path: Path, name: str) -> None:
    kind, path = states(tmp_path)[name]
    before = tree_hash(path)
    params = StdioServerParameters(command=sys.executable, args=server_args(kind, path), env=_env())

    async def run() -> dict[str, Any]:
        async with Client(params) as c:
            return await _every_tool(c, PHRASE[name])

    _assert_served(asyncio.run(run()), PHRASE[name])
    assert tree_hash(path) == before


def _raw_stdio(path: Path, lines: list[bytes], last_id: int) -> list[dict[str, Any]]:
    """Send JSON-RPC lines as bytes; every answer the server gave up to the one for ``last_id``."""
    proc = subprocess.Popen(
        [sys.executable, *server_args("openclaw", path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **_env()},
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(line + b"\n" for line in lines))
    proc.stdin.flush()
    answers = []
    while True:  # stdin stays open until the last answer is in (EOF would end the server first)
        line = proc.stdout.readline()
        assert line, "the server stopped before answering"
        answers.append(json.loads(line))
        if answers[-1].get("id") == last_id:
            break
    proc.stdin.close()
    assert proc.stderr is not None
    err = proc.stderr.read()  # to EOF: the server ends when its stdin does
    proc.wait(timeout=60)
    proc.stdout.close()
    proc.stderr.close()
    assert b"Traceback" not in err, err.decode(errors="replace")[-2000:]
    return answers


def test_stdio_raw_garbage_and_a_lone_surrogate_leave_it_serving(tmp_path: Path) -> None:
    path = states(tmp_path)["sqlite"][1]
    init = _initialize()
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": SQLITE_BEFORE}},
    }
    lines = [
        json.dumps(init).encode(),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b"not json at all",
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall","arguments":{"query":"pur\\ud800ple"}}}',
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"recall","arguments":"nope"}}',
        json.dumps(call).encode(),
    ]
    answers = {a.get("id"): a for a in _raw_stdio(path, lines, 2)}
    assert answers[3]["error"]["code"] == -32602
    result = answers[2]["result"]
    assert not result["isError"] and SQLITE_BEFORE in result["content"][0]["text"]
    # The SDK drops the unparsable surrogate request without an answer (it cannot reach Kurahi).
    assert 1 not in answers or "error" in answers[1] or answers[1]["result"]["isError"]


def _initialize() -> dict[str, Any]:
    """A handshake-era ``initialize``, as OpenClaw's client sends it."""
    client = {"name": "raw", "version": "0"}
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client}
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    path = states(tmp_path)["sqlite"][1]
    port = _free_port()
    log = open(tmp_path / "server.err", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [sys.executable, *server_args("openclaw", path, "--http", "--port", str(port))],
        env={**os.environ, **_env(), "KURAHI_MCP_TOKEN": TOKEN},
        stdout=subprocess.DEVNULL,
        stderr=log,
    )

    def up() -> bool:
        assert proc.poll() is None, (tmp_path / "server.err").read_text()
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_for(up, "kurahi mcp --http listening")
        yield f"http://127.0.0.1:{port}/mcp", path
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    assert TOKEN not in (tmp_path / "server.err").read_text()


def test_http_needs_the_token_and_serves_every_tool(http_server: tuple[str, Path]) -> None:
    url, path = http_server
    before = tree_hash(path)
    init = _initialize()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": TOKEN}):
        r = httpx2.post(url, json=init, headers={**headers, **auth}, timeout=30)
        assert r.status_code == 401 and r.json()["error"] == "invalid_token"
    evil = httpx2.post(
        url, json=init, headers={**headers, "Authorization": f"Bearer {TOKEN}", "Host": "evil.example:80"}, timeout=30
    )
    assert evil.status_code == 421

    async def run() -> dict[str, Any]:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=auth, timeout=httpx2.Timeout(60)) as hc,
            Client(streamable_http_client(url, http_client=hc)) as c,
        ):
            return await _every_tool(c, SQLITE_BEFORE)

    _assert_served(asyncio.run(run()), SQLITE_BEFORE)
    raw = httpx2.post(
        url,
        content=b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"recall","arguments":{"query":"a\\ud800"}}}',
        headers={**headers, "Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert raw.status_code in (400, 200) and "Traceback" not in raw.text
    assert tree_hash(path) == before


def test_the_command_refuses_http_without_a_token_or_remote_without_leave(tmp_path: Path) -> None:
    path = states(tmp_path)["sqlite"][1]
    env = {k: v for k, v in os.environ.items() if k != "KURAHI_MCP_TOKEN"}
    no_token = subprocess.run(
        [sys.executable, *server_args("openclaw", path, "--http")], capture_output=True, text=True, env=env, timeout=60
    )
    assert (
        no_token.returncode == EXIT.USAGE
        and "KURAHI_MCP_TOKEN" in no_token.stderr
        and "Traceback" not in no_token.stderr
    )
    remote = subprocess.run(
        [sys.executable, *server_args("openclaw", path, "--http", "--host", "0.0.0.0")],
        capture_output=True, text=True, env={**env, "KURAHI_MCP_TOKEN": TOKEN}, timeout=60,
    )  # fmt: skip
    assert remote.returncode == EXIT.USAGE and "--allow-remote" in remote.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "kurahi.cli", "mcp", "--openclaw", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert (
        missing.returncode == EXIT.NOT_FOUND
        and "no such directory" in missing.stderr
        and "Traceback" not in missing.stderr
    )
