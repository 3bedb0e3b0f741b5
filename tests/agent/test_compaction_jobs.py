"""Compaction in the turn loop (Pi opens the result the same) and jobs that never lie about their status."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import msgspec

from kurahi.agent.config import Config
from kurahi.agent.jobs import JobStore
from kurahi.agent.runtime import Runtime
from kurahi.context.files import project_file
from kurahi.store.record_log import FileRecordLog
from support.peer import PiPeer
from support.residents import config, make_home, run, with_runtime

KEY = "agent:alice:main"


def test_compaction_cuts_at_a_turn_boundary_and_pi_projects_the_same(tmp_path: Path, pi: PiPeer) -> None:
    home = make_home(tmp_path)
    cfg = msgspec.convert(
        {
            "models": {"alpha": {"provider": "deterministic", "model": "alpha", "contextWindow": 9000}},
            "agents": {"alice": {"compaction": {"reserveTokens": 3000, "keepRecentTokens": 2000}}},
        },
        Config,
    )
    filler = " ".join(["lantern harbour orchard cobalt meridian quartz"] * 40)

    async def go(rt: Runtime) -> Any:
        for i in range(30):
            tool = ' [[tool:list {"path": "."}]]' if i % 4 == 0 else ""
            r = await rt.send(KEY, f"step {i}: {filler}{tool}")
            assert r.status == "ok", r.error
        conv = rt.conversation(KEY)
        return conv.file, conv.context_tokens()

    file, tokens = run(with_runtime(home, go, config=cfg))
    entries = [json.loads(x) for x in file.read_text().splitlines()]
    compactions = [e for e in entries if e.get("type") == "compaction"]
    assert len(compactions) >= 2
    by_id = {e.get("id"): e for e in entries}
    for c in compactions:
        kept = by_id[c["firstKeptEntryId"]]
        assert kept["type"] == "message" and kept["message"]["role"] != "toolResult"  # never cut before a result
        assert c["summary"].startswith("Summary of ") and c["tokensBefore"] > 6000
    assert tokens <= 9000 - 3000 + 2000  # the live context stayed near the budget
    mine = project_file(file).context.to_dict()
    assert mine["messages"][0]["role"] == "compactionSummary"
    assert pi.context(file)["messages"] == mine["messages"]


def test_jobs_succeed_and_fail_with_their_reasons(tmp_path: Path) -> None:
    home = make_home(tmp_path)

    async def go(rt: Runtime) -> Any:
        ok = rt.start_job(KEY, "background work")
        bad = rt.start_job(KEY, "[[fail:error]]")
        await rt.wait_job(ok)
        await rt.wait_job(bad)
        return rt.jobs.get(ok), rt.jobs.get(bad)

    ok, bad = run(with_runtime(home, go))
    assert ok.status == "succeeded" and ok.reply_entry_id and ok.started_at and ok.ended_at
    assert bad.status == "failed" and "scripted failure" in bad.error


def test_a_job_running_when_the_process_dies_is_interrupted_at_the_next_start(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    script = textwrap.dedent(
        f"""
        import asyncio, os, signal, sys
        from kurahi.agent.runtime import Runtime
        async def main():
            written = asyncio.Event()  # the job's message is in the transcript: its model call has begun
            rt = Runtime({str(home)!r}, "alice", listener=lambda kind, payload: kind == "entry" and written.set())
            await rt.start()
            rt.start_job({KEY!r}, "long one [[slow:60000]]")
            await written.wait()
            os.kill(os.getpid(), signal.SIGKILL)
        asyncio.run(main())
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9, proc.stderr
    [job] = JobStore(FileRecordLog(home / "agents/alice/jobs/jobs.jsonl")).jobs().values()
    assert job.status == "running"  # what the dead process left on disk

    async def go(rt: Runtime) -> Any:
        return rt.recovered, rt.jobs.get(job.id)

    recovered, after = run(with_runtime(home, go))
    assert recovered["interruptedJobs"] == [job.id]
    assert after.status == "interrupted" and "while the job was running" in (after.error or "")


def test_closing_the_runtime_interrupts_a_running_job_and_records_it(tmp_path: Path) -> None:
    import asyncio

    home = make_home(tmp_path)

    async def go() -> str:
        written = asyncio.Event()
        rt = Runtime(home, "alice", config=config(), listener=lambda kind, payload: kind == "entry" and written.set())
        await rt.start()
        jid = rt.start_job(KEY, "long one [[slow:60000]]")
        await written.wait()  # its message is written and its minute-long model call has begun
        await rt.close(grace=0.1)  # far shorter than the job: it must be interrupted, not waited for
        return jid

    jid = run(go())
    job = JobStore(FileRecordLog(home / "agents/alice/jobs/jobs.jsonl")).get(jid)
    assert job is not None and job.status == "interrupted"
    file = next((home / "agents/alice/sessions").glob("*.jsonl"))
    last = json.loads(file.read_text().splitlines()[-1])
    assert last["message"]["stopReason"] == "aborted"  # the interrupted turn is recorded
