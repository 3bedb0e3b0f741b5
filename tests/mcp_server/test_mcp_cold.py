"""``kurahi mcp`` on a state whose history OpenClaw 2026.9's cold storage archived (issue 38).

Through the official MCP client, in process, on a copy of ``2026.9.6-cold``: the phrases are
in ``sessions/cold/<sha256>.jsonl.zst`` only (the store holds no event of the session).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import Client

from kurahi.mcp_server.served import Served
from kurahi.mcp_server.server import build_server
from support.mcp_states import structured
from support.testdata import SQLITE_COLD, openclaw_state_copy, tree_hash

BEFORE_RESET, AFTER_RESET = "PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"


def talk(served: Served, script: Callable[[Client], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        async with Client(build_server(served)) as c:
            return await script(c)

    return asyncio.run(run())


def call(served: Served, name: str, args: dict[str, Any]) -> dict[str, Any]:
    async def script(c: Client) -> Any:
        return await c.call_tool(name, args)

    return structured(talk(served, script))


def test_recall_finds_what_only_the_cold_archive_holds(tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_COLD, tmp_path / "state")
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    assert BEFORE_RESET.encode() not in db.read_bytes()  # only the archive holds it
    before = tree_hash(state)
    served = Served("openclaw", state)
    hits = call(served, "recall", {"query": BEFORE_RESET})["hits"]
    top = hits[0]
    assert BEFORE_RESET in top["text"] and top["match"] == "exact phrase"
    assert top["inViewNow"] is False and top["standing"] == "before a reset"
    after = call(served, "recall", {"query": AFTER_RESET})["hits"]
    assert any(h["inViewNow"] and AFTER_RESET in h["text"] for h in after)
    lineage = call(served, "lineage", {})
    assert [p["kind"] for p in lineage["pieces"]] == ["sqlite-cold"]
    losses = call(served, "losses", {})
    assert losses["total"] == 1 and losses["losses"][0]["kind"] == "reset"

    async def read(c: Client) -> Any:
        return await c.read_resource(top["around"])

    slice_ = talk(served, read)
    assert BEFORE_RESET in "".join(getattr(part, "text", "") for part in slice_.contents)
    assert tree_hash(state) == before, "kurahi mcp changed the state directory"


def test_a_bad_archive_is_said_not_searched(tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_COLD, tmp_path / "state")
    (archive,) = (state / "agents" / "main" / "sessions" / "cold").iterdir()
    data = bytearray(archive.read_bytes())
    data[100] ^= 0x01
    archive.write_bytes(bytes(data))
    served = Served("openclaw", state)
    answer = call(served, "recall", {"query": BEFORE_RESET})
    assert not [h for h in answer["hits"] if BEFORE_RESET in h["text"]]
    lineage = call(served, "lineage", {})
    assert lineage["pieces"] == []
    assert any(archive.name in n and "failed verification" in n for n in lineage["notes"]), lineage["notes"]
