"""``POST .../sessions/reset`` with ``carry`` and kept transcripts read back by session id."""

from __future__ import annotations

import json
from pathlib import Path

from support.gateways import make_gateway_home, serve_in_thread


def test_reset_with_carry_lineage_and_the_kept_transcripts(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    with serve_in_thread(home) as s, s.client() as c:
        key = "agent:alice:carry"
        for text in ("first fact: the kiln is blue", "second fact: the gate is north"):
            assert c.post("/api/agents/alice/chat", json={"message": text, "key": key}).json()["status"] == "ok"
        plain = c.post("/api/agents/alice/sessions/reset", json={"key": key})
        assert plain.status_code == 200
        first = plain.json()["oldSessionId"]
        assert c.post("/api/agents/alice/chat", json={"message": "third", "key": key}).status_code == 200
        carried = c.post("/api/agents/alice/sessions/reset", json={"key": key, "carry": "lineage"})
        assert carried.status_code == 200, carried.text
        new = c.get("/api/agents/alice/session/transcript", params={"key": key}).content
        lines = [json.loads(x) for x in new.splitlines()]
        assert lines[0]["parentSession"].endswith(f"{carried.json()['oldSessionId']}.jsonl")
        assert any(e["type"] == "compaction" for e in lines)  # the carried summary opens the new context
        # The session before the plain reset is kept, and readable by its id; its text is all there.
        kept = c.get("/api/agents/alice/session/transcript", params={"sessionId": first})
        assert kept.status_code == 200 and b"the kiln is blue" in kept.content
        # What the plain reset started carried nothing: it holds no compaction.
        middle = c.get("/api/agents/alice/session/transcript", params={"sessionId": carried.json()["oldSessionId"]})
        assert b'"compaction"' not in middle.content and b"third" in middle.content
        chain = c.get("/api/audit/chain").json()
        assert chain["verified"]
        # Bad input: an unknown carry, an unknown id, an id that is a path.
        bad = c.post("/api/agents/alice/sessions/reset", json={"key": key, "carry": "everything"})
        assert bad.status_code == 422
        assert c.get("/api/agents/alice/session/transcript", params={"sessionId": "nope"}).status_code == 404
        for hostile in ("../../secrets/gateway", "a/b", ".hidden", "x\x00y"):
            r = c.get("/api/agents/alice/session/transcript", params={"sessionId": hostile})
            assert r.status_code == 422, (hostile, r.status_code)
