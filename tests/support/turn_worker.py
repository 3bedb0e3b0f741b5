"""A resident runtime in a loop of turns with tool calls, for SIGKILL campaigns.

Usage: python turn_worker.py HOME FIRST LAST

Sends ``turn <i>`` for i in FIRST..LAST-1 on one session; every turn calls the counting
write tool, every 3rd a notify tool that has no lookup, every 5th appends to memory, every
10th runs as a job. After a turn's reply is back (durable) it prints ``ACK <i>`` and
flushes, so the parent knows what the runtime acknowledged. After start-up (recovery and
the pairing guard) it prints ``START`` and waits for a line on stdin, so the parent can
check the files while nothing moves.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from kurahi.agent.runtime import Runtime
from kurahi.agent.tools import BUILTIN_TOOLS, Tool, ToolContext, WriteTool
from kurahi.agent.types import ToolOutput

KEY = "agent:alice:main"


def _effect(ctx: ToolContext) -> None:
    fd = os.open(ctx.workspace.parent / "effects.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (ctx.action_id + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


class CountingWrite(WriteTool):
    """The write tool, plus one line per real write in ``effects.log`` (to count side effects)."""

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        out = super().run(args, ctx)
        _effect(ctx)
        return out


class Notify(Tool):
    """A side effect the world cannot be asked about (no lookup): a crash mid-call is "unknown"."""

    name = "notify"
    side_effecting = True

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        _effect(ctx)
        time.sleep(0.002)  # a little time between the effect and the result, as a real send has
        return ToolOutput("sent")


def message(i: int) -> str:
    text = f'turn {i} [[tool:write {{"path": "f{i % 7}.md", "content": "v{i}"}}]]'
    if i % 3 == 0:
        text += f' [[tool:notify {{"n": {i}}}]]'
    if i % 5 == 0:
        text += f' [[tool:memory_append {{"text": "fact {i}", "file": "facts.md"}}]]'
    return text


async def main(home: Path, first: int, last: int) -> None:
    tools = [CountingWrite(), Notify(), *(c() for c in BUILTIN_TOOLS if c is not WriteTool)]
    rt = Runtime(home, "alice", tools=tools)
    recovered = await rt.start()
    print("START " + json.dumps(recovered), flush=True)
    # Wait while the parent checks what the last kill left (nothing may change meanwhile).
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    for i in range(first, last):
        if i % 10 == 0:
            jid = rt.start_job(KEY, message(i))
            await rt.wait_job(jid)
            job = rt.jobs.get(jid)
            ok = job is not None and job.status == "succeeded"
        else:
            ok = (await rt.send(KEY, message(i))).status == "ok"
        if ok:
            print(f"ACK {i}", flush=True)
    await rt.close()
    print("DONE", flush=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
