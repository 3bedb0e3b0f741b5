"""``kurahi mcp`` over stdio answers every request it cannot read with a JSON-RPC error, and keeps serving.

The real command as a client starts it, fed raw lines: a request holding a lone surrogate
(``"\\ud800"``, valid JSON text that no UTF-8 holds) and a line that is not JSON at all each
get an error response (the request's id, or ``null`` when there is none to read), then the
next request is answered. stdin is closed at the end, so the server exits and every answer
it wrote is read; the ``timeout`` only stops a server that does not.
"""

from __future__ import annotations

import json
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


def test_a_lone_surrogate_and_a_broken_line_get_errors_and_the_next_request_an_answer(tmp_path: Path) -> None:
    state = openclaw_state_copy("2026.9.6-reset", tmp_path / "state")
    surrogate = (
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall","arguments":{"query":"\\ud800"}}}'
    )
    lines = [
        json.dumps(INIT),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        surrogate,
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rec',
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    ]
    done = subprocess.run(
        [sys.executable, *server_args("openclaw", state)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    by_id = {a.get("id"): a for a in answers}
    assert 2 in by_id, f"no answer to the lone surrogate request: {answers}"
    assert by_id[2]["error"]["code"] in (-32600, -32602) and "surrogate" in by_id[2]["error"]["message"]
    assert None in by_id and by_id[None]["error"]["code"] == -32700  # the broken line: a parse error
    assert "tools" in by_id[4]["result"]  # and it keeps serving
    assert "Traceback" not in done.stderr
