"""The 12,000-character cap holds on the text an agent receives, not on a more compact form of it.

Through the official MCP client: a 20-hit ``recall`` of long passages, and a 40-entry
transcript slice of long entries, each cut to fit; the text received is what is measured.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from mcp import Client

from kurahi.mcp_server.answers import MAX_ANSWER, answer_text
from kurahi.mcp_server.served import Served
from kurahi.mcp_server.server import build_server
from kurahi.pi.transcript import Transcript
from support.mcp_states import kurahi_home


def _say_long(path: Path, n: int) -> None:
    """Append ``n`` long user messages, each holding the word 'heron' and non-ASCII text."""
    with Transcript.open(path) as t:
        leaf = t.leaf_id
    with open(path, "ab") as f:
        for i in range(n):
            text = f"heron {i} " + 'the grey bird waded by the reeds, ä ö ü "quoted" ' * 40
            entry = {
                "type": "message",
                "id": f"c0ffee{i:02x}",
                "parentId": leaf,
                "timestamp": f"2026-10-09T09:{i:02d}:00.000Z",
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": text}],
                    "timestamp": 1_791_536_400_000,
                },
            }
            f.write(json.dumps(entry).encode() + b"\n")
            leaf = entry["id"]


def test_a_full_recall_and_a_full_slice_fit_the_cap_as_sent(tmp_path: Path) -> None:
    home = kurahi_home(tmp_path / "home", tmp_path)
    (live,) = (home / "agents" / "alice" / "sessions").glob("*.jsonl")
    _say_long(live, 45)

    async def run() -> Any:
        async with Client(build_server(Served("home", home))) as c:
            recall = await c.call_tool("recall", {"query": "heron", "limit": 20})
            body = json.loads(recall.content[0].text)
            piece, last = body["hits"][0]["piece"], body["hits"][0]["entry"]
            uri = f"kurahi://transcript/agent:alice:support/{piece}/{last - 39}-{last + 1}"
            return recall, await c.read_resource(uri)

    recall, res = asyncio.run(run())
    sent = recall.content[0].text
    body = json.loads(sent)
    assert body["cut"] is True and 0 < body["shown"] < 20  # the cap bit: this is the case that matters
    assert len(sent) <= MAX_ANSWER, f"recall sent {len(sent):,} characters"
    assert sent == answer_text(body)  # the measured text is the text sent
    slice_text = res.contents[0].text
    slice_body = json.loads(slice_text)
    assert slice_body["cut"] is True
    assert len(slice_text) <= MAX_ANSWER, f"the slice sent {len(slice_text):,} characters"
