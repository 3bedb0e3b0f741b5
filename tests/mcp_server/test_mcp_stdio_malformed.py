"""``kurahi mcp`` over stdio answers every request it cannot read with a JSON-RPC error, and keeps serving.

The real command as a client starts it, fed raw lines: a request holding a lone surrogate
(``"\\ud800"``, valid JSON text that no UTF-8 holds) and a line that is not JSON at all each
get an error response (the request's id, or ``null`` when there is none to read), then the
next request is answered. each answer is read before the next request is written, then stdin is closed
and the server exits.
"""

from __future__ import annotations

import json
import select
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
    requests = [
        (json.dumps(INIT), 1),
        (json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), None),
        (surrogate, 2),
        ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rec', "parse error"),
        (json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}), 4),
    ]
    answers: list[dict[str, object]] = []
    with subprocess.Popen(
        [sys.executable, *server_args("openclaw", state)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            for line, wait_for in requests:
                proc.stdin.write(line + "\n")
                proc.stdin.flush()
                if wait_for is None:
                    continue  # a notification: nothing comes back
                # Each answer is read before the next request goes: the server is never raced to exit.
                # A request the server drops would leave readline() waiting forever: wait on the pipe
                # for a minute at most, then say which request went unanswered.
                ready, _, _ = select.select([proc.stdout], [], [], 60)
                assert ready, f"no answer within a minute to {line[:60]!r}"
                answer = proc.stdout.readline()
                assert answer, f"the server closed stdout instead of answering {line[:60]!r}"
                answers.append(json.loads(answer))
        finally:
            proc.stdin.close()
            stderr = proc.stderr.read()
            proc.wait(timeout=120)
    by_id = {a.get("id"): a for a in answers}
    assert 2 in by_id, f"no answer to the lone surrogate request: {answers}"
    assert by_id[2]["error"]["code"] in (-32600, -32602) and "surrogate" in by_id[2]["error"]["message"]  # type: ignore[index]
    assert None in by_id and by_id[None]["error"]["code"] == -32700  # type: ignore[index]  # the broken line
    assert "tools" in by_id[4]["result"]  # type: ignore[operator]  # and it keeps serving
    assert "Traceback" not in stderr
