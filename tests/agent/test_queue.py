"""Per-session lanes: steer, followup, collect, interrupt, caps, and queued messages across a restart."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from kurahi.agent.providers.deterministic import DeterministicProvider, message_text
from kurahi.agent.runtime import Runtime
from kurahi.agent.tools import BUILTIN_TOOLS, Tool, ToolContext
from kurahi.agent.types import ModelRequest, ToolOutput
from kurahi.context.files import project_file
from kurahi.errors import QueueFullError
from support.peer import PiPeer
from support.residents import config, make_home, run, with_runtime

KEY = "agent:alice:main"


class SlowTool(Tool):
    """A tool that runs until the test lets it finish: whatever the test does in between happens while it runs."""

    name = "slow"
    description = "waits"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.finished = 0

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.started.set()
        assert self.release.wait(60), "the test never let the tool finish"
        self.finished += 1
        return ToolOutput("slept")


class Watched(DeterministicProvider):
    """The deterministic model, telling when a call has begun and whether one was cancelled."""

    def __init__(self) -> None:
        super().__init__("alpha")
        self.calling = asyncio.Event()
        self.cancelled = 0

    async def stream(self, request: ModelRequest) -> Any:
        self.calling.set()
        try:
            async for event in super().stream(request):
                yield event
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


class Recording(DeterministicProvider):
    def __init__(self) -> None:
        super().__init__("alpha")
        self.calls: list[list[str]] = []

    def stream(self, request: ModelRequest) -> Any:
        self.calls.append([message_text(m) for m in request.messages])
        return super().stream(request)


def _tools(slow: SlowTool) -> list[Tool]:
    return [slow, *(c() for c in BUILTIN_TOOLS)]


async def _when(event: threading.Event) -> None:
    assert await asyncio.to_thread(event.wait, 60), "the tool never started"


def test_steer_reaches_the_next_model_call_of_the_same_turn(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    slow, rec = SlowTool(), Recording()

    async def go(rt: Runtime) -> Any:
        first = rt.submit(KEY, 'refine the list [[tool:slow {}]] [[tool:write {"path": "todo.md", "content": "v2"}]]')
        await _when(slow.started)
        steer = rt.submit(KEY, "don't change it yet", mode="steer")
        slow.release.set()
        return await first, await steer

    a, b = run(with_runtime(home, go, tools=_tools(slow), providers={"alpha": rec}))
    assert a is b and a.status == "ok"
    assert "don't change it yet" not in rec.calls[0]
    assert rec.calls[1][-1] == "don't change it yet"  # in context at the very next model call
    assert rec.calls[1][-2] == "slept"  # after the tool result, never before it
    # The deterministic model follows the latest user message: told to wait, it does not write.
    assert len(rec.calls) == 2 and "don't change it yet" in a.reply
    assert not (home / "agents/alice/workspace/todo.md").exists()


def test_followup_runs_after_as_its_own_turn(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    slow = SlowTool()

    async def go(rt: Runtime) -> Any:
        a = rt.submit(KEY, "first [[tool:slow {}]]")
        await _when(slow.started)
        b = rt.submit(KEY, "second", mode="followup")
        slow.release.set()
        return await a, await b, rt.conversation(KEY).file

    a, b, file = run(with_runtime(home, go, tools=_tools(slow)))
    assert a is not b and a.status == b.status == "ok"
    users = [json.loads(x)["message"] for x in file.read_text().splitlines()[1:]]
    texts = [message_text(m) for m in users if m["role"] in ("user", "assistant")]
    assert texts.index("second") > texts.index(a.reply)


def test_collect_batches_waiting_messages_into_one_turn(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    slow, rec = SlowTool(), Recording()

    async def go(rt: Runtime) -> Any:
        a = rt.submit(KEY, "busy [[tool:slow {}]]")
        await _when(slow.started)
        parts = [rt.submit(KEY, f"part {i}", mode="collect") for i in range(3)]
        slow.release.set()
        return await a, [await p for p in parts]

    cfg = config(queue={"debounceMs": 100})
    first, parts = run(with_runtime(home, go, tools=_tools(slow), providers={"alpha": rec}, config=cfg))
    assert first.status == "ok" and first is not parts[0]
    assert parts[0] is parts[1] is parts[2] and parts[0].steps == 1
    assert rec.calls[-1][-3:] == ["part 0", "part 1", "part 2"]


def test_interrupt_during_a_model_call_records_the_abort(tmp_path: Path, pi: PiPeer) -> None:
    home = make_home(tmp_path)
    model = Watched()

    async def go(rt: Runtime) -> Any:
        a = rt.submit(KEY, "think long [[slow:60000]]")
        await model.calling.wait()
        b = rt.submit(KEY, "stop, new plan", mode="interrupt")
        return await a, await b, rt.conversation(KEY).file

    a, b, file = run(with_runtime(home, go, providers={"alpha": model}))
    assert a.status == "aborted" and b.status == "ok" and "stop, new plan" in b.reply
    assert model.cancelled == 1  # the minute-long call was cut short, not waited out
    msgs = [json.loads(x)["message"] for x in file.read_text().splitlines()[1:]]
    aborted = [m for m in msgs if m["role"] == "assistant" and m["stopReason"] == "aborted"]
    assert len(aborted) == 1 and aborted[0]["errorMessage"] == "interrupted by a newer message"
    assert pi.context(file)["messages"] == project_file(file).context.to_dict()["messages"]


def test_interrupt_during_a_tool_lets_the_tool_finish_and_runs_no_more_calls(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    slow = SlowTool()

    async def go(rt: Runtime) -> Any:
        a = rt.submit(KEY, '[[tool:slow {}]] [[tool:write {"path": "x.md", "content": "x"}]]')
        await _when(slow.started)
        b = rt.submit(KEY, "halt", mode="interrupt")
        slow.release.set()  # the interrupt came while the tool ran
        return await a, await b

    a, b = run(with_runtime(home, go, tools=_tools(slow)))
    assert a.status == "aborted" and b.status == "ok"
    assert slow.finished == 1
    assert not (home / "agents/alice/workspace/x.md").exists()  # the second call never ran


@pytest.mark.parametrize("drop", ["reject", "drop-oldest"])
def test_cap_and_drop_policy(tmp_path: Path, drop: str) -> None:
    home = make_home(tmp_path)
    slow = SlowTool()

    async def go(rt: Runtime) -> Any:
        a = rt.submit(KEY, "[[tool:slow {}]]")
        await _when(slow.started)
        w1 = rt.submit(KEY, "w1")
        w2 = rt.submit(KEY, "w2")
        if drop == "reject":
            with pytest.raises(QueueFullError, match="cap"):
                rt.submit(KEY, "w3")
            slow.release.set()
            return [await a, await w1, await w2]
        w3 = rt.submit(KEY, "w3")
        slow.release.set()
        return [await a, await w1, await w2, await w3]

    results = run(with_runtime(home, go, tools=_tools(slow), config=config(queue={"cap": 2, "drop": drop})))
    if drop == "drop-oldest":
        assert results[1].status == "error" and "dropped" in (results[1].error or "")
        assert [r.status for r in results[2:]] == ["ok", "ok"]
    else:
        assert all(r.status == "ok" for r in results)


def test_queued_messages_survive_a_restart_exactly_once(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    journal = home / "agents/alice/queue/queue.jsonl"

    async def first(rt: Runtime) -> Path:
        await rt.send(KEY, "hello")
        return rt.conversation(KEY).file

    file = run(with_runtime(home, first))
    # What a crash can leave: one message queued and never taken, one taken (its entry is in
    # the transcript) whose "done" record never reached the journal.
    taken_qid = json.loads(file.read_text().splitlines()[1])["kurahi"]["queueId"]
    msg = {"role": "user", "content": [{"type": "text", "text": "waiting one"}], "timestamp": 1}
    with journal.open("a") as f:
        f.write(json.dumps({"op": "put", "qid": "q_waiting", "key": KEY, "mode": "followup", "message": msg}) + "\n")
        f.write(json.dumps({"op": "put", "qid": taken_qid, "key": KEY, "mode": "followup", "message": msg}) + "\n")
        f.write('{"op": "put", "qid": "torn')

    async def second(rt: Runtime) -> Any:
        recovered = await rt.start()
        await rt.lane(KEY).wait_idle()
        return recovered

    async def noop(rt: Runtime) -> None:
        return None

    rt_result = run(with_runtime(home, second))
    assert rt_result["requeuedMessages"] == 1
    texts = [message_text(json.loads(x).get("message", {})) for x in file.read_text().splitlines()[1:]]
    assert texts.count("waiting one") == 1
    run(with_runtime(home, noop))  # a third start runs nothing again
    texts = [message_text(json.loads(x).get("message", {})) for x in file.read_text().splitlines()[1:]]
    assert texts.count("waiting one") == 1


def test_recovery_ignores_the_cap_and_drops_messages_of_interrupted_jobs(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    journal = home / "agents/alice/queue/queue.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    with journal.open("w") as f:
        for i in range(5):  # more than the cap of 2: all were accepted before the crash
            msg = {"role": "user", "content": [{"type": "text", "text": f"waited {i}"}], "timestamp": 1}
            f.write(json.dumps({"op": "put", "qid": f"q{i}", "key": KEY, "mode": "followup", "message": msg}) + "\n")
        job_msg = {"role": "user", "content": [{"type": "text", "text": "job work"}], "timestamp": 1}
        f.write(
            json.dumps({"op": "put", "qid": "qj", "key": KEY, "mode": "followup", "message": job_msg, "job": "job_1"})
            + "\n"
        )

    async def go(rt: Runtime) -> Any:
        await rt.lane(KEY).wait_idle()
        return rt.recovered, rt.conversation(KEY).file

    recovered, file = run(with_runtime(home, go, config=config(queue={"cap": 2})))
    assert recovered["requeuedMessages"] == 5
    texts = [message_text(json.loads(x).get("message", {})) for x in file.read_text().splitlines()[1:]]
    assert [t for t in texts if t.startswith("waited")] == [f"waited {i}" for i in range(5)]
    assert "job work" not in texts
    records = [json.loads(x) for x in journal.read_text().splitlines() if x.strip()]
    assert any(r.get("op") == "dropped" and r.get("qid") == "qj" for r in records)
