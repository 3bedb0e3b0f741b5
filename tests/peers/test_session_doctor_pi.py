"""`kurahi session doctor` on sessions both Pis wrote themselves, proved by Pi's own next request.

Each broken session is written by Pi's own ``SessionManager`` (1.6.0 and 0.73.1). Before the
mend, Pi's own projection and provider conversion (``pi_request.mjs``: ``buildSessionContext``,
``convertToLlm``, pi-ai's provider for the family) sends a request the stand-in servers refuse
with 400, for exactly the families the doctor names; ``session doctor`` exits 1 naming the
entry. ``--fix`` appends; every old byte stays; then both Pis' requests are accepted (for a
``context_edit`` mend, Pi 1.6.0's, the one runtime that honours it).
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from support.peer import PiPeer
from support.provider_standins import pi_requests, standins

pytestmark = pytest.mark.pi

APIS = ("anthropic-messages", "openai-completions", "openai-responses")


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args), terminal_width=300)
    return res.exit_code, res.output


def call(cid: str, name: str = "read") -> dict[str, Any]:
    return {"type": "toolCall", "id": cid, "name": name, "arguments": {"path": f"{cid}.txt"}}


def result(cid: str, text: str = "contents", **kw: Any) -> dict[str, Any]:
    return {"op": "toolResult", "toolCallId": cid, "toolName": "read", "text": text, **kw}


# Each scenario: the ops Pi runs, and the name ("as") of the entry the doctor must name.
SCENARIOS: dict[str, tuple[list[dict[str, Any]], str]] = {
    # The case: the compaction keeps from a tool result whose call it summarised.
    "compaction-mid-pair": (
        [
            {"op": "user", "text": "read a.txt please"},
            {"op": "assistant", "content": [call("call_1")]},
            {**result("call_1"), "as": "bad"},
            {"op": "assistant", "text": "a.txt says contents"},
            {
                "op": "appendCompaction",
                "summary": "SUMMARY-1: read a.txt",
                "firstKeptEntryId": "$bad",
                "tokensBefore": 900,
            },
            {"op": "user", "text": "and now?"},
        ],
        "bad",
    ),
    # Two compactions in a row each cut a pair (pi #6832 had 33); the later one counts.
    "second-compaction-mid-pair": (
        [
            {"op": "user", "text": "go"},
            {"op": "assistant", "content": [call("c1")]},
            result("c1"),
            {"op": "assistant", "content": [call("c2"), call("c3")]},
            result("c2"),
            {**result("c3"), "as": "bad"},
            {"op": "assistant", "text": "done"},
            {"op": "appendCompaction", "summary": "S1", "firstKeptEntryId": "$bad", "tokensBefore": 500},
            {"op": "user", "text": "more"},
            {"op": "assistant", "text": "sure"},
            {"op": "appendCompaction", "summary": "S2 (after S1)", "firstKeptEntryId": "$bad", "tokensBefore": 700},
            {"op": "user", "text": "next"},
        ],
        "bad",
    ),
    # A turn that failed after its call was stored: Pi drops the errored assistant, not its result.
    "result-of-errored-turn": (
        [
            {"op": "user", "text": "list files"},
            {
                "op": "assistant",
                "content": [call("toolu_err", "ls")],
                "stopReason": "error",
                "errorMessage": "overloaded",
            },
            {**result("toolu_err"), "as": "bad"},
            {"op": "user", "text": "try again"},
        ],
        "bad",
    ),
    # The user spoke between a call and its result: Pi answers the call with a synthetic result,
    # then sends the real one later, out of place.
    "displaced-result": (
        [
            {"op": "user", "text": "read b"},
            {"op": "assistant", "content": [call("call_b")]},
            {"op": "user", "text": "actually, wait"},
            {**result("call_b"), "as": "bad"},
            {"op": "assistant", "text": "ok"},
            {"op": "user", "text": "go on"},
        ],
        "bad",
    ),
    # A same-model call id that Anthropic's id pattern refuses (Pi sends same-model ids as stored).
    "bad-call-id": (
        [
            {"op": "user", "text": "read c"},
            {"op": "assistant", "content": [call("call.1:x")], "as": "bad"},
            result("call.1:x"),
            {"op": "assistant", "text": "c read"},
            {"op": "user", "text": "thanks"},
        ],
        "bad",
    ),
}


def write(peer: PiPeer, out: Path, ops: list[dict[str, Any]]) -> dict[str, str]:
    (done,) = peer.batch("write", json.dumps([{"out": str(out), "script": ops}]))
    assert "error" not in done, done
    return dict(done["ids"])


def refused(peer: PiPeer, files: list[Path]) -> list[set[str]]:
    """For each file, the families whose stand-in refused Pi's own next request."""
    with standins() as s:
        items = [{"file": str(f), "api": a, "baseUrl": s.url(a)} for f in files for a in APIS]
        answers = pi_requests(peer, items)
        assert len(s.verdicts) == len(items), answers
        verdicts = list(s.verdicts)
    out: list[set[str]] = []
    for n in range(len(files)):
        chunk = list(zip(answers[n * 3 : n * 3 + 3], verdicts[n * 3 : n * 3 + 3], strict=True))
        for answer, verdict in chunk:
            assert answer["api"] == verdict.api
            # Pi saw what the stand-in said: an error for a 400, a normal stop otherwise.
            assert (answer["stopReason"] == "error") == (not verdict.accepted), (answer, verdict.errors)
        out.append({v.api for _, v in chunk if not v.accepted})
    return out


def sha(path: Path, size: int) -> str:
    return hashlib.sha256(path.read_bytes()[:size]).hexdigest()


def doctor_json(path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out = run("session", "doctor", str(path), "--json", *extra)
    return code, json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("version", ["1.6.0", "0.73.1"])
def test_each_broken_session_is_found_mended_by_appending_and_then_accepted(tmp_path: Path, version: str) -> None:
    writer = PiPeer(version)  # type: ignore[arg-type]
    pis = [PiPeer("1.6.0"), PiPeer("0.73.1")]
    broken: list[Path] = []
    bad_ids: list[str] = []
    for name, (ops, bad) in SCENARIOS.items():
        f = tmp_path / f"{name}.jsonl"
        bad_ids.append(write(writer, f, ops)[bad])
        broken.append(f)

    before = [refused(pi, broken) for pi in pis]
    mended_any: list[Path] = []
    mended_16: list[Path] = []
    for k, f in enumerate(broken):
        code, report = doctor_json(f)
        assert code == 1, report
        named = {x["entryId"] for x in report["failing"]}
        assert bad_ids[k] in named, (f.name, report["failing"])
        refused_by = {fam for x in report["failing"] for fam in x["refusedBy"]}
        # Both Pis' requests are refused by the stand-ins, for the families the doctor names.
        for per_pi in before:
            assert per_pi[k], f.name
            assert per_pi[k] <= refused_by, (f.name, per_pi[k], refused_by)

        for runtime, into in ((None, mended_any), ("pi-1.6", mended_16)):
            copy = tmp_path / f"{f.stem}.{runtime or 'any'}.jsonl"
            copy.write_bytes(f.read_bytes())
            size = copy.stat().st_size
            old = sha(copy, size)
            args = ("--fix",) if runtime is None else ("--fix", "--runtime", runtime)
            code, mend = doctor_json(copy, *args)
            assert code == 0, mend
            assert mend["method"] == ("compaction" if runtime is None else "context_edit"), mend
            assert mend["after"] == []
            assert copy.stat().st_size > size and sha(copy, size) == old == mend["prefixSha256"]
            assert run("session", "doctor", str(copy))[0] == 0
            into.append(copy)

    # The compaction mend: both Pis now send a request every stand-in accepts.
    for pi in pis:
        assert refused(pi, mended_any) == [set()] * len(mended_any), pi
    # The context_edit mend: Pi 1.6.0 honours it; Pi 0.73.1 ignores context_edit (as the doctor says).
    assert refused(pis[0], mended_16) == [set()] * len(mended_16)


def test_compaction_mend_keeps_pi_16s_system_prompt_and_the_previous_summary(tmp_path: Path) -> None:
    pi = PiPeer("1.6.0")
    f = tmp_path / "sys.jsonl"
    ops = [
        {"op": "system", "text": "SYSTEM PROMPT v1"},
        *SCENARIOS["compaction-mid-pair"][0],
    ]
    write(pi, f, ops)
    assert run("session", "doctor", str(f))[0] == 1
    code, out = run("session", "doctor", str(f), "--fix", "--runtime", "pi-0.73")
    assert code == 0, out
    ctx = pi.context(f)
    roles = [m["role"] for m in ctx["messages"]]
    assert roles == ["system", "compactionSummary", "assistant", "user"], roles
    assert ctx["messages"][0]["content"] == "SYSTEM PROMPT v1"
    assert ctx["messages"][1]["summary"].startswith("SUMMARY-1: read a.txt")
    assert refused(pi, [f]) == [set()]


def _random_session(rng: random.Random) -> tuple[list[dict[str, Any]], str]:
    """A session of random turns with one failure at a random place, in a random shape."""
    ops: list[dict[str, Any]] = [{"op": "user", "text": "start"}]
    results: list[str] = []
    n = 0
    for _ in range(rng.randint(2, 6)):
        calls = [f"call_{(n := n + 1)}" for _ in range(rng.randint(0, 3))]
        if calls:
            ops.append({"op": "assistant", "content": [{"type": "text", "text": "let me look"}, *map(call, calls)]})
            for c in calls:
                ops.append({**result(c), "as": f"r_{c}"})
                results.append(c)
            ops.append({"op": "assistant", "text": "seen"})
        else:
            ops.append({"op": "assistant", "text": "hello"})
        ops.append({"op": "user", "text": rng.choice(["ok", "and?", "more please"])})
    shape = rng.choice(["compaction", "errored", "displaced"])
    if shape == "compaction" and results:
        target = rng.choice(results)
        # A result that is not its turn's first: the compaction cuts a pair in the middle.
        ops.append(
            {
                "op": "appendCompaction",
                "summary": f"summary {rng.random()}",
                "firstKeptEntryId": f"$r_{target}",
                "tokensBefore": 42,
            }
        )
        ops.append({"op": "user", "text": "continue"})
        return ops, f"r_{target}"
    if shape == "errored":
        cid = f"toolu_{rng.randrange(10**6)}"
        ops.append({"op": "assistant", "content": [call(cid)], "stopReason": rng.choice(["error", "aborted"])})
        ops.append({**result(cid), "as": "bad"})
    else:
        cid = f"call_x{rng.randrange(10**6)}"
        ops.append({"op": "assistant", "content": [call(cid)]})
        ops.append({"op": "user", "text": "interrupting"})
        ops.append({**result(cid), "as": "bad"})
        ops.append({"op": "assistant", "text": "ok"})
    ops.append({"op": "user", "text": "next"})
    return ops, "bad"


@pytest.mark.parametrize("version", ["1.6.0", "0.73.1"])
def test_random_failures_pi_wrote_are_mended_for_both_pis(tmp_path: Path, version: str) -> None:
    rng = random.Random(f"doctor-{version}")
    writer = PiPeer(version)  # type: ignore[arg-type]
    pis = [PiPeer("1.6.0"), PiPeer("0.73.1")]
    files: list[Path] = []
    sizes: list[tuple[int, str]] = []
    for i in range(10):
        ops, bad = _random_session(rng)
        f = tmp_path / f"r{i}.jsonl"
        bad_id = write(writer, f, ops)[bad]
        code, report = doctor_json(f)
        assert code == 1 and bad_id in {x["entryId"] for x in report["failing"]}, (ops, report)
        files.append(f)
    for pi in pis:
        assert all(refused(pi, files)), pi
    for f in files:
        size = f.stat().st_size
        sizes.append((size, sha(f, size)))
        code, mend = doctor_json(f, "--fix")
        assert code == 0, mend
    for f, (size, digest) in zip(files, sizes, strict=True):
        assert sha(f, size) == digest
    for pi in pis:
        assert refused(pi, files) == [set()] * len(files), pi
