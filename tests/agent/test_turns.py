"""Turns through the runtime: write-ahead order, errors recorded, files Pi agrees with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.agent.runtime import Runtime
from kurahi.context.files import project_file
from kurahi.errors import UnknownAgentError, UsageError
from support.peer import PiPeer
from support.residents import MARKER, config, make_home, run, with_runtime

KEY = "agent:alice:main"


def _ids_on_disk(file: Path) -> set[str]:
    return {json.loads(line).get("id") for line in file.read_text().splitlines() if line.strip()}


def test_reply_carries_identity_marker_and_profile(tmp_path: Path) -> None:
    home = make_home(tmp_path)

    async def go(rt: Runtime) -> Any:
        return await rt.send(KEY, "hello there")

    r = run(with_runtime(home, go))
    assert r.status == "ok"
    assert r.reply.startswith(f"[{MARKER}] (alpha)")
    assert "hello there" in r.reply


def test_listeners_hear_of_an_entry_only_once_it_is_in_the_file(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    seen: list[tuple[str, bool]] = []
    files: list[Path] = []

    def listener(kind: str, payload: dict[str, Any]) -> None:
        if kind == "entry" and files:
            seen.append((payload["id"], payload["id"] in _ids_on_disk(files[0])))

    async def go(rt: Runtime) -> Any:
        files.append(rt.conversation(KEY).file)
        return await rt.send(KEY, 'save [[tool:write {"path": "a.md", "content": "x"}]]')

    r = run(with_runtime(home, go, listener=listener))
    assert r.status == "ok" and len(seen) == 4  # user, assistant(toolCall), toolResult, assistant
    assert all(on_disk for _, on_disk in seen), seen


def test_intent_is_in_the_ledger_before_the_tool_runs(tmp_path: Path) -> None:
    from kurahi.agent.tools import Tool, ToolContext
    from kurahi.agent.types import ToolOutput

    home = make_home(tmp_path)
    ledger_file = home / "agents" / "alice" / "actions" / "ledger.jsonl"
    observed: list[str] = []

    class Probe(Tool):
        name = "probe"
        side_effecting = True

        def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
            observed.append(ledger_file.read_text())
            return ToolOutput("done")

    async def go(rt: Runtime) -> Any:
        return await rt.send(KEY, "[[tool:probe {}]]")

    r = run(with_runtime(home, go, tools=[Probe()]))
    assert r.status == "ok"
    assert len(observed) == 1 and '"kind":"intent"' in observed[0] and '"tool":"probe"' in observed[0]
    assert '"kind":"outcome"' not in observed[0]
    assert '"kind":"outcome"' in ledger_file.read_text()


def test_user_message_is_written_before_the_model_is_called(tmp_path: Path) -> None:
    from kurahi.agent.providers.deterministic import DeterministicProvider

    home = make_home(tmp_path)
    on_disk_at_call: list[bool] = []
    files: list[Path] = []

    class Watching(DeterministicProvider):
        def stream(self, request: Any) -> Any:
            on_disk_at_call.append("watch me" in files[0].read_text())
            return super().stream(request)

    async def go(rt: Runtime) -> Any:
        files.append(rt.conversation(KEY).file)
        return await rt.send(KEY, "watch me")

    run(with_runtime(home, go, providers={"alpha": Watching("alpha")}))
    assert on_disk_at_call == [True]


@pytest.mark.parametrize(
    ("text", "expect_status", "expect_in_file"),
    [
        ("[[fail:timeout]]", "error", "scripted timeout"),
        ("[[fail:error]]", "error", "scripted failure"),
        ("[[badargs:write]]", "ok", "not a valid JSON object"),
        ("[[tool:launch_missiles {}]]", "ok", "unknown tool 'launch_missiles'"),
        ('[[tool:write {"path": "/etc/passwd", "content": "x"}]]', "ok", "must be relative to the workspace"),
        ('[[tool:read {"path": "nope.md"}]]', "ok", "no such file"),
    ],
)
def test_bad_provider_and_tool_calls_are_recorded_and_pi_still_loads_the_file(
    tmp_path: Path, text: str, expect_status: str, expect_in_file: str, pi: PiPeer
) -> None:
    home = make_home(tmp_path)

    async def go(rt: Runtime) -> Any:
        r = await rt.send(KEY, text)
        after = await rt.send(KEY, "still there?")
        return r, after, rt.conversation(KEY).file

    r, after, file = run(with_runtime(home, go))
    assert r.status == expect_status
    assert expect_in_file in file.read_text()
    assert after.status == "ok"  # the session goes on
    mine = project_file(file)
    assert pi.context(file)["messages"] == mine.context.to_dict()["messages"]


def test_denied_tool_gets_an_error_result_and_is_not_offered(tmp_path: Path) -> None:
    from kurahi.agent.providers.deterministic import DeterministicProvider

    home = make_home(tmp_path)
    offered: list[list[str]] = []

    class Watching(DeterministicProvider):
        def stream(self, request: Any) -> Any:
            offered.append([t.name for t in request.tools])
            return super().stream(request)

    async def go(rt: Runtime) -> Any:
        return await rt.send(KEY, '[[tool:write {"path": "a.md", "content": "x"}]]')

    cfg = config(tools={"allow": ["*"], "deny": ["write"]})
    r = run(with_runtime(home, go, config=cfg, providers={"alpha": Watching("alpha")}))
    assert "denied by this agent's tool policy" in r.reply
    assert not (home / "agents/alice/workspace/a.md").exists()
    assert offered and all("write" not in names for names in offered)


def test_a_tool_that_raises_gives_an_error_result(tmp_path: Path) -> None:
    from kurahi.agent.tools import Tool, ToolContext
    from kurahi.agent.types import ToolOutput

    class Broken(Tool):
        name = "broken"

        def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
            raise RuntimeError("disk on fire")

    home = make_home(tmp_path)

    async def go(rt: Runtime) -> Any:
        return await rt.send(KEY, "[[tool:broken {}]]")

    r = run(with_runtime(home, go, tools=[Broken()]))
    assert r.status == "ok"
    assert "broken error: broken failed: RuntimeError: disk on fire" in r.reply


def test_oversized_and_empty_messages_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    home = make_home(tmp_path)

    async def go(rt: Runtime) -> Any:
        file = rt.conversation(KEY).file
        before = file.read_bytes()
        with pytest.raises(UsageError, match="limit is 1024"):
            rt.submit(KEY, "x" * 2000)
        with pytest.raises(UsageError, match="needs some text"):
            rt.submit(KEY, "   ")
        return before, file.read_bytes()

    before, after = run(with_runtime(home, go, config=config(maxMessageBytes=1024)))
    assert before == after


def test_unknown_agent_and_hostile_agent_ids(tmp_path: Path) -> None:
    from kurahi.agent.layout import AgentPaths

    with pytest.raises(UnknownAgentError, match="no agent 'bob'"):
        AgentPaths.of(tmp_path, "bob", must_exist=True)
    for bad in ["../etc", "a/b", "", ".hidden", "A" * 80, "x\x00y"]:
        with pytest.raises(UsageError, match="not allowed"):
            AgentPaths.of(tmp_path, bad)


def test_a_loop_of_tool_calls_stops_at_max_steps(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    calls = " ".join('[[tool:list {"path": "."}]]' for _ in range(5))

    async def go(rt: Runtime) -> Any:
        return await rt.send(KEY, calls)

    r = run(with_runtime(home, go, config=config(maxSteps=3)))
    assert r.status == "error" and r.error == "stopped after 3 model calls in one turn"


def test_a_reopened_session_continues_where_it_was(tmp_path: Path, pi: PiPeer) -> None:
    home = make_home(tmp_path)

    async def first(rt: Runtime) -> Any:
        await rt.send(KEY, "remember PURPLE-GIRAFFE")
        return rt.conversation(KEY).file

    async def second(rt: Runtime) -> Any:
        return await rt.send(KEY, "what did I say? [[recall:PURPLE]]")

    file = run(with_runtime(home, first))
    r = run(with_runtime(home, second))
    assert "recall PURPLE: " in r.reply and "PURPLE-GIRAFFE" in r.reply.split("recall PURPLE: ")[1]
    assert file == next((home / "agents/alice/sessions").glob("*.jsonl"))
    assert pi.context(file)["messages"] == project_file(file).context.to_dict()["messages"]


def test_a_model_swap_is_recorded_on_the_path_and_the_new_model_answers(tmp_path: Path, pi: PiPeer) -> None:
    from kurahi.errors import ConfigError

    home = make_home(tmp_path)

    async def go(rt: Runtime) -> Any:
        before = await rt.send(KEY, "on alpha")
        with pytest.raises(ConfigError, match="unknown model profile 'gamma'"):
            rt.set_model("gamma")
        rt.set_model("beta")
        after = await rt.send(KEY, "on beta")
        again = await rt.send(KEY, "still beta")
        return before, after, again, rt.conversation(KEY).file

    before, after, again, file = run(with_runtime(home, go))
    assert "(alpha)" in before.reply and "(beta)" in after.reply and "(beta)" in again.reply
    changes = [json.loads(x) for x in file.read_text().splitlines() if '"model_change"' in x]
    assert [(c["provider"], c["modelId"]) for c in changes] == [("deterministic", "beta")]  # once, not per turn
    assert pi.context(file)["model"] == {"provider": "deterministic", "modelId": "beta"}
