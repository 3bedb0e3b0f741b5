"""The stand-in Anthropic Messages API the Claude Code peer tests run against (support.claude_api):
its rules refuse what the API refuses and take what Claude Code 2.1.332 sends, and its replies
are what the peer tests count on. In-process on loopback: no Claude Code needed."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from support.claude_api import (
    COMPACTION_ASK,
    SESSION_HEADER,
    SUMMARY_MARK,
    MessagesStandIn,
    messages_standin,
    reply_for,
    request_errors,
    text,
    tool_use,
)

REMINDER = {"type": "text", "text": "<system-reminder>\nattribution\n</system-reminder>\n"}
ENV = {"role": "system", "content": [{"type": "text", "text": "# Environment"}]}


def _use(n: int) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {}}]}


def _result(n: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "ok"}]}


def _said(words: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": words}]}


def test_what_claude_code_sends_is_taken() -> None:
    # The shape of a resumed session's request: system entries right after user turns, a tool pair.
    messages = [
        {"role": "user", "content": [REMINDER, {"type": "text", "text": "remember A"}]},
        ENV,
        _said("noted"),
        {"role": "user", "content": "please run it"},
        {"role": "system", "content": "UserPromptSubmit hook success"},
        _use(1),
        _result(1),
        _said("done"),
        {"role": "user", "content": [{"type": "text", "text": "next"}]},
        {"role": "system", "content": []},
    ]
    assert request_errors({"messages": messages}) == []


def test_what_the_api_refuses_is_refused() -> None:
    user = {"role": "user", "content": "hi"}
    cases: dict[str, list[dict[str, Any]]] = {
        "a system message cannot be the first message": [ENV, user],
        "a system message must follow a user message": [user, _said("a"), ENV, user],
        "unexpected `tool_use_id`": [user, _said("a"), _result(9)],
        "without `tool_result` blocks immediately after": [user, _use(1), user],
        "the first message must use the user role": [_said("a"), user],
        "Input should be 'user', 'assistant' or 'system'": [user, {"role": "tool", "content": "x"}],
    }
    for says, messages in cases.items():
        errors = request_errors({"messages": messages})
        assert any(says in e for e in errors), (says, errors)


def _post(api: MessagesStandIn, body: Any, *, session: str = "s-1", path: str = "/v1/messages?beta=true") -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(api.base + path, raw, {"x-api-key": "k-1", SESSION_HEADER: session})
    with urllib.request.urlopen(req, timeout=30) as answer:
        data = answer.read().decode()
    if path.startswith("/v1/messages?"):
        return [json.loads(line[6:]) for line in data.splitlines() if line.startswith("data: ")]
    return json.loads(data)


def _reply(events: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    said = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
    uses = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    return said, [u for u in uses if u["type"] == "tool_use"]


def test_replies_follow_the_prompt_and_every_request_is_logged(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with messages_standin(log) as api:
        ask = {"role": "user", "content": [REMINDER, {"type": "text", "text": "please run `echo W-1`"}]}
        said, uses = _reply(_post(api, {"messages": [ask, ENV]}))
        assert said == "" and uses[0]["name"] == "Bash"
        use = _reply(_post(api, {"messages": [ask, ENV]}))[1][0]  # ids differ from one reply to the next
        assert use["id"] != uses[0]["id"]
        done = [ask, ENV, {"role": "assistant", "content": [{**use, "input": {"command": "echo W-1"}}]}]
        done.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "W-1"}]})
        assert _reply(_post(api, {"messages": done}))[0] == reply_for("please run `echo W-1`", after_tool=True)
        asked = {"role": "user", "content": f"CRITICAL: text only. Your task is to {COMPACTION_ASK}."}
        assert SUMMARY_MARK in _reply(_post(api, {"messages": [ask, _said("x"), asked]}))[0]
        plain = {"role": "user", "content": "plain W-2"}
        api.script("s-2", text("scripted"), tool_use("Read", {"file_path": "/x"}))
        assert _reply(_post(api, {"messages": [plain]}, session="s-2"))[0] == "scripted"
        assert _reply(_post(api, {"messages": [plain]}, session="s-2"))[1][0]["name"] == "Read"
        assert _reply(_post(api, {"messages": [plain]}, session="s-2"))[0] == reply_for("plain W-2")
        assert _post(api, {"messages": [ask]}, path="/v1/messages/count_tokens")["input_tokens"] > 0
        try:
            _post(api, {"messages": [ENV, ask]})
        except urllib.error.HTTPError as refused:
            assert refused.code == 400
            assert json.loads(refused.read())["error"]["type"] == "invalid_request_error"
        else:
            raise AssertionError("a system message first was answered")
        head = urllib.request.Request(api.base + "/", method="HEAD")
        with urllib.request.urlopen(head, timeout=30) as answer:
            assert answer.status == 200
        assert [r.errors != [] for r in api.of_key("k-1")] == [False] * 8 + [True]
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(logged) == 10 and logged[-1]["method"] == "HEAD" and logged[0]["session"] == "s-1"
