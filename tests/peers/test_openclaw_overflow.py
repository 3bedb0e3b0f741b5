"""What real OpenClaw sends of a history larger than the window equals what Kurahi predicts.

Per era: a real OpenClaw on a small window (the stand-in model's ``contextWindow``), one real
turn, a restored history of a few hundred turns activated into its state dir by Kurahi (each
turn with a phrase of its own, in the user line and in the reply), then one turn. Kurahi's
``lineage check --json`` names the messages the runtime sends (``sent``); the request OpenClaw
then sent the stand-in must carry exactly those of the history's messages: the same count and
the same phrases.

- 2026.9.6 loads a byte-bounded tail of the session (8 bytes per window token) and sends it.
- 2026.5.28 loads everything, finds it over its prompt budget, compacts (the stand-in writes the
  summary), and sends the summary and the part the compaction kept (Pi's cut point).
"""

from __future__ import annotations

import json
import secrets
import string
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.context.reference import reference_projection
from support.openclaw_model import SUMMARY_SECTIONS, request_messages, text_of
from support.openclaw_peer import JSON_ERA, MAIN_KEY, SQLITE_ERA, OpenClawFactory, OpenClawPeer

pytestmark = pytest.mark.openclaw

runner = CliRunner()
SYSTEM_PROMPT_TOKENS = 9_500
"""About what OpenClaw 2026.5.28's own system prompt and tools cost in the harness (its log says
9,286 tokens for an empty session): what ``--system-prompt-tokens`` adds to the budget."""


def letters(n: int = 10) -> str:
    """A phrase without digits: the stand-in's compaction summary repeats every token that has one."""
    return "".join(secrets.choice(string.ascii_uppercase) for _ in range(n))


def kurahi(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, f"kurahi {' '.join(args[:2])} exited {res.exit_code}:\n{res.output}"
    return res.stdout


def restored_history(peer: OpenClawPeer, tmp_path: Path, turns: int) -> tuple[Path, list[str]]:
    """The live session after one real turn, with ``turns`` more appended, as a new session (candidate C)."""
    peer.start()
    peer.turn("Hello there.")
    assert peer.stop() == 0
    export = tmp_path / "export"
    found = json.loads(
        kurahi(
            "lineage", "find", "--state-dir", str(peer.state_dir), "--agent", "main", "--export", str(export), "--json"
        )
    )
    # The SQLite era's session is exported; the JSON era's is the transcript file itself.
    live = next(p for p in found["pieces"] if p["sessionId"] == found["currentSessionId"])
    source = export / f"{live['sessionId']}.jsonl" if live["source"].startswith("sqlite:") else Path(live["source"])
    lines = source.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0]) | {"id": str(uuid.uuid4())}
    out = [json.dumps(header), *lines[1:]]
    parent = json.loads(lines[-1])["id"]
    phrases = []
    for i in range(turns):
        p = letters()
        phrases.append(p)
        ms = 1_796_000_000_000 + 2_000 * i
        stamp = "2026-12-01T00:00:00.000Z"
        words = " ".join(letters(7).lower() for _ in range(40))
        user = {"role": "user", "content": [{"type": "text", "text": f"Remember {p}: {words}"}], "timestamp": ms}
        reply = {
            "role": "assistant",
            "content": [{"type": "text", "text": f"Noted {p}."}],
            "api": "openai-completions",
            "provider": "standin",
            "model": "stand-in",
            "stopReason": "stop",
            "timestamp": ms + 1,
        }
        for message in (user, reply):
            entry = {"type": "message", "id": uuid.uuid4().hex[:8], "parentId": parent, "timestamp": stamp}
            out.append(json.dumps(entry | {"message": message}))
            parent = json.loads(out[-1])["id"]
    candidate = tmp_path / "C.jsonl"
    candidate.write_text("\n".join(out) + "\n", encoding="utf-8")
    return candidate, phrases


def activate(peer: OpenClawPeer, candidate: Path, pkg: Path) -> None:
    state = str(peer.state_dir)
    kurahi("activate", "plan", "--home", state, "--agent", "main", "--key", MAIN_KEY,
           "--candidate", str(candidate), "--out", str(pkg))  # fmt: skip
    applied = json.loads(kurahi("activate", "apply", str(pkg), "--home", state, "--offline", "--json"))
    assert applied["outcome"] == "applied", applied


def predicted(candidate: Path, runtime: str, window: int, phrases: list[str], *extra: str) -> tuple[int, set[str]]:
    """How many of the history's messages Kurahi says ``runtime`` sends, and their phrases."""
    report = json.loads(
        kurahi(
            "lineage", "check", str(candidate), "--runtime", runtime, "--context-window", str(window), "--json", *extra
        )
    )
    view = report["sent"]
    assert view["runtime"] == runtime and not view["fits"], view
    ref = reference_projection(candidate)
    sent = [ref.messages[i] for a, b in view["sent"] for i in range(a, b + 1)]
    carrying = [m for m in sent if any(p in json.dumps(m) for p in phrases)]
    return len(carrying), {p for p in phrases if any(p in json.dumps(m) for m in sent)}


def sent_by_openclaw(peer: OpenClawPeer, phrases: list[str]) -> tuple[int, set[str], list[dict[str, Any]]]:
    """One turn; of the request that carried it, the history's messages (summary aside) and their phrases."""
    probe = letters()
    seen = len(peer.requests())
    peer.start()
    peer.turn(f"Do you remember? {probe}")
    assert peer.stop() == 0
    bodies = [b for b in peer.requests()[seen:] if probe in json.dumps(b)]
    assert bodies, "OpenClaw sent the model no request for the turn"
    messages = request_messages(bodies[-1])
    texts = [text_of(m.get("content")) for m in messages]
    history = [t for t in texts if not t.lstrip().startswith(SUMMARY_SECTIONS[0]) and SUMMARY_SECTIONS[0] not in t]
    carrying = [t for t in history if any(p in t for p in phrases)]
    return len(carrying), {p for p in phrases if any(p in t for t in carrying)}, messages


def test_openclaw_2026_9_sends_the_byte_bounded_tail_kurahi_predicts(openclaw: OpenClawFactory, tmp_path: Path) -> None:
    window = 16_000
    peer = openclaw(SQLITE_ERA, context_window=window)
    candidate, phrases = restored_history(peer, tmp_path, 400)
    count, expected = predicted(candidate, "openclaw-2026.9", window, phrases)
    assert 0 < count < 800 and phrases[0] not in expected and phrases[-1] in expected
    activate(peer, candidate, tmp_path / "pkg")
    # Read from the store with the window OpenClaw's own config gives: the same prediction.
    found = json.loads(kurahi("lineage", "find", "--state-dir", str(peer.state_dir), "--agent", "main", "--json"))
    live = f"sqlite:{peer.sqlite_store}#{found['currentSessionId']}"
    res = runner.invoke(app, ["lineage", "check", live, "--marker", phrases[0], "--marker", phrases[-1], "--json"])
    report = json.loads(res.stdout)
    assert res.exit_code == 1 and report["runtime"] == "openclaw-2026.9", res.output
    assert report["window"] == window and report["windowFrom"].endswith(".contextWindow"), report["windowFrom"]
    first, last = report["markers"]
    assert (
        first["found"]
        and not first["sent"]
        and first["why"] == "in the history but not sent: past the 16,000-token window"
    )
    assert last["sent"]
    got, phrases_sent, _ = sent_by_openclaw(peer, phrases)
    assert (got, phrases_sent) == (count, expected)


def test_openclaw_2026_5_compacts_and_sends_the_kept_part_kurahi_predicts(
    openclaw: OpenClawFactory, tmp_path: Path
) -> None:
    window = 64_000
    peer = openclaw(JSON_ERA, context_window=window)
    candidate, phrases = restored_history(peer, tmp_path, 700)
    count, expected = predicted(
        candidate, "openclaw-2026.5", window, phrases, "--system-prompt-tokens", str(SYSTEM_PROMPT_TOKENS)
    )
    assert 0 < count < 1400 and phrases[0] not in expected and phrases[-1] in expected
    activate(peer, candidate, tmp_path / "pkg")
    got, phrases_sent, messages = sent_by_openclaw(peer, phrases)
    assert any(SUMMARY_SECTIONS[0] in text_of(m.get("content")) for m in messages), "no compaction summary was sent"
    assert (got, phrases_sent) == (count, expected)
