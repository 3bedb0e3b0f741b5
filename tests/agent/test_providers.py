"""The real providers through their official SDKs, against local servers speaking the wire protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.agent.config import Config
from kurahi.agent.providers.anthropic_messages import AnthropicProvider
from kurahi.agent.providers.openai_chat import OpenAIProvider
from kurahi.agent.providers.wire import to_anthropic, to_openai
from kurahi.agent.runtime import Runtime
from kurahi.agent.types import Finished, ModelRequest, TextDelta, ToolCallReady, ToolSpec
from kurahi.errors import ProviderError, ProviderTimeoutError
from support.residents import make_home, run, with_runtime
from support.wire_servers import anthropic_text, anthropic_tool_call, openai_text, openai_tool_call, serve

KEY = "agent:alice:main"


async def _collect(provider: Any, request: ModelRequest) -> list[Any]:
    return [e async for e in provider.stream(request)]


def _request(**kw: Any) -> ModelRequest:
    base: dict[str, Any] = {
        "system": "marker: X",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}],
        "model": "m1",
        "tools": [ToolSpec("write", "write a file", {"type": "object", "properties": {}})],
    }
    base.update(kw)
    return ModelRequest(**base)


def test_openai_streams_text_and_reports_usage() -> None:
    with serve() as (url, script):
        script.replies.append(openai_text("hello from the server"))
        events = run(_collect(OpenAIProvider("m1", base_url=url + "/v1"), _request()))
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(texts) == "hello from the server" and len(texts) > 1
    done = events[-1]
    assert isinstance(done, Finished) and done.stop_reason == "stop" and done.usage.input == 42
    body = script.requests[0]["body"]
    assert script.requests[0]["path"] == "/v1/chat/completions"
    assert body["stream"] is True and body["model"] == "m1"
    assert body["messages"][0] == {"role": "system", "content": "marker: X"}
    assert body["tools"][0]["function"]["name"] == "write"


def test_openai_joins_streamed_tool_call_arguments() -> None:
    args = json.dumps({"path": "a.md", "content": "x"})
    with serve() as (url, script):
        script.replies.append(openai_tool_call("call_9", "write", args))
        events = run(_collect(OpenAIProvider("m1", base_url=url + "/v1"), _request()))
    calls = [e for e in events if isinstance(e, ToolCallReady)]
    assert calls == [ToolCallReady("call_9", "write", args)]
    assert isinstance(events[-1], Finished) and events[-1].stop_reason == "toolUse"


def test_anthropic_streams_text_and_tool_calls() -> None:
    args = json.dumps({"path": "b.md", "content": "y"})
    with serve() as (url, script):
        script.replies.append(anthropic_text("hello anthropic"))
        script.replies.append(anthropic_tool_call("toolu_1", "write", args))
        p = AnthropicProvider("claude-test", base_url=url)
        first = run(_collect(p, _request()))
        second = run(_collect(p, _request()))
    assert "".join(e.text for e in first if isinstance(e, TextDelta)) == "hello anthropic"
    assert isinstance(first[-1], Finished) and first[-1].usage.input == 31 and first[-1].usage.output == 9
    assert [e for e in second if isinstance(e, ToolCallReady)] == [ToolCallReady("toolu_1", "write", args)]
    body = script.requests[0]["body"]
    assert script.requests[0]["path"] == "/v1/messages"
    assert body["system"] == "marker: X" and body["tools"][0]["input_schema"] == {"type": "object", "properties": {}}


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_http_errors_and_timeouts_become_provider_errors(kind: str) -> None:
    with serve() as (url, script):
        script.replies.append({"status": 500, "error": "boom"})
        script.replies.append({"sleep": 1.5, "status": 500, "error": "late"})
        if kind == "openai":
            p: Any = OpenAIProvider("m1", base_url=url + "/v1", timeout=0.5)
        else:
            p = AnthropicProvider("m1", base_url=url, timeout=0.5)
        with pytest.raises(ProviderError, match="HTTP 500") as err:
            run(_collect(p, _request()))
        assert err.value.status == 500
        with pytest.raises(ProviderTimeoutError):
            run(_collect(p, _request()))


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_full_turn_with_a_tool_call_through_a_real_provider(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KURAHI_TEST_KEY", "sk-test-provider-key")
    args = json.dumps({"path": "notes/todo.md", "content": "1. plan\n"})
    with serve() as (url, script):
        if kind == "openai":
            script.replies += [openai_tool_call("call_1", "write", args), openai_text("Saved the checklist.")]
            profile = {
                "provider": "openai",
                "model": "gpt-test",
                "baseUrl": url + "/v1",
                "apiKeyEnv": "KURAHI_TEST_KEY",
            }
        else:
            script.replies += [anthropic_tool_call("toolu_1", "write", args), anthropic_text("Saved the checklist.")]
            profile = {"provider": "anthropic", "model": "claude-test", "baseUrl": url, "apiKeyEnv": "KURAHI_TEST_KEY"}
        import msgspec

        cfg = msgspec.convert({"models": {"real": profile}, "agents": {"alice": {"model": "real"}}}, Config)
        home = make_home(tmp_path)

        async def go(rt: Runtime) -> Any:
            return await rt.send(KEY, "save my checklist")

        r = run(with_runtime(home, go, config=cfg))
    assert r.status == "ok" and r.reply == "Saved the checklist." and r.steps == 2
    assert (home / "agents/alice/workspace/notes/todo.md").read_text() == "1. plan\n"
    second = script.requests[1]["body"]["messages"]
    headers = {k.lower(): v for k, v in script.requests[0]["headers"].items()}
    sent_key = headers.get("x-api-key") or headers.get("authorization", "")
    assert sent_key.endswith("sk-test-provider-key")  # the variable the profile names, never a placeholder
    if kind == "openai":
        assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_1"
        assert second[-2]["tool_calls"][0]["function"]["name"] == "write"
    else:
        assert second[-1]["role"] == "user" and second[-1]["content"][0]["type"] == "tool_result"
        assert second[-1]["content"][0]["tool_use_id"] == "toolu_1"
    lines = [json.loads(x) for x in next((home / "agents/alice/sessions").glob("*.jsonl")).read_text().splitlines()]
    assistant = [x["message"] for x in lines if x.get("type") == "message" and x["message"]["role"] == "assistant"]
    assert assistant[0]["provider"] == kind and assistant[0]["content"][0]["type"] == "toolCall"


def test_wire_conversion_pairs_results_and_merges_user_turns() -> None:
    msgs = [
        {"role": "user", "content": "go", "timestamp": 1},
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "a", "name": "read", "arguments": {"path": "x"}}],
            "stopReason": "toolUse",
        },
        {
            "role": "toolResult",
            "toolCallId": "a",
            "toolName": "read",
            "content": [{"type": "text", "text": "X"}],
            "isError": False,
        },
        {"role": "user", "content": [{"type": "text", "text": "and?"}]},
        {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "boom"},
    ]
    oa = to_openai("sys", msgs)
    assert [m["role"] for m in oa] == ["system", "user", "assistant", "tool", "user"]
    assert oa[2]["tool_calls"][0]["function"]["arguments"] == '{"path": "x"}'
    an = to_anthropic(msgs)
    assert [m["role"] for m in an] == ["user", "assistant", "user"]
    assert an[2]["content"][0]["type"] == "tool_result" and an[2]["content"][1] == {"type": "text", "text": "and?"}
