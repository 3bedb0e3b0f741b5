"""The real OpenClaw 2026.9.6 reaching its own past through ``kurahi mcp``, with no repair made.

``openclaw mcp add`` registers the server (it probes it first), ``openclaw mcp doctor --probe``
passes; a phrase is said, the key is reset, and after the reset the stand-in model is scripted
to call Kurahi's ``recall`` (through OpenClaw's default Tool Search ``tool_call``) with a cue.
OpenClaw runs the tool, and its next model request holds the result carrying the pre-reset
phrase, which the request before the call did not. The phrase is made for the run.
"""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest

from support.openclaw_model import request_messages, text_of

pytestmark = pytest.mark.openclaw


def _kurahi() -> str:
    script = Path(sys.executable).with_name("kurahi")
    assert script.is_file(), f"the kurahi console script is not beside {sys.executable} (make install)"
    return str(script)


def test_openclaw_recalls_a_pre_reset_phrase_through_kurahi_mcp(openclaw: Any) -> None:
    phrase = f"SLATE-KINGFISHER-{secrets.token_hex(4).upper()}"
    cue = f"cue-{secrets.token_hex(3)}: what was the bird phrase before the reset?"
    peer = openclaw("2026.9.6")
    peer.model.tool_rules = [(cue, "tool_call", {"id": "kurahi__recall", "args": {"query": "bird phrase is"}})]
    peer.start()
    args = ["mcp", "--openclaw", str(peer.state_dir)]
    peer.cli("mcp", "add", "kurahi", "--command", _kurahi(), *(f"--arg={a}" for a in args))
    doctor = peer.cli("mcp", "doctor", "kurahi", "--probe")
    assert "kurahi: ok" in doctor.stdout, doctor.stdout + doctor.stderr
    peer.turn(f"Hello. The bird phrase is {phrase}; keep it.")
    peer.reset()
    seen = len(peer.requests())
    peer.turn(cue)
    after = peer.requests()[seen:]
    asked = next(i for i, body in enumerate(after) if cue in json.dumps(body))
    assert phrase not in json.dumps(after[asked]), "the phrase was still in view: the reset did not take it away"
    results = [
        text_of(m.get("content"))
        for body in after[asked + 1 :]
        for m in request_messages(body)
        if m.get("role") == "tool"
    ]
    assert results, "OpenClaw sent no tool result back to the model"
    assert any(phrase in r for r in results), results[0][:2000]
    assert any("before a reset" in r for r in results)  # Kurahi's provenance came through
