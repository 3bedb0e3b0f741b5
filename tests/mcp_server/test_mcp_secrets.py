"""Secrets said in a transcript, and the paths of the state, never reach an agent through MCP.

Each secret below is said in a message of a Kurahi home's live session, next to a marker word;
the official MCP client recalls the marker and reads the transcript slice around the hit, and
neither holds the secret's value (the marker and the words around it stay readable). The
values are made up, in the shapes the real ones have.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kurahi.mcp_server.served import Served
from kurahi.mcp_server.server import build_server
from kurahi.pi.transcript import Transcript
from support.mcp_states import kurahi_home, structured
from support.testdata import openclaw_state_copy

SECRETS = {
    "openssh": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "QyNTUxOQAAACDfakefakefakefakefakefakefakefakefakefakefakefakeAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
    ),
    "rsa": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
        "-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMx",
    ),
    "jwt": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWZha2UtMTIz", "eyJzdWIiOiJhbGljZSJ9"),
    "google": ("AIzaSyD-fake0123456789abcdefghijklmnopq", "fake0123456789abcdefghijklmnop"),
    "aws": ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYFAKEKEY99", "wJalrXUtnFEMI"),
    "stripe": ("sk_live_51HabcdefghijklmnopqrstuVWXYZ", "51HabcdefghijklmnopqrstuVWXYZ"),
    "huggingface": ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    "github": ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "11ABCDEFG0123456789_abcdefghij"),
    "postgres": ("postgres://kurahi:Sup3rS3cretPW@db.example:5432/app", "Sup3rS3cretPW"),
    "basic": ("Authorization: Basic a3VyYWhpOmh1bnRlcjJodW50ZXIy", "a3VyYWhpOmh1bnRlcjJodW50ZXIy"),
}


MS = 1_791_536_400_000
"""When the secrets are said (2026-10-09T09:00:00Z, in milliseconds)."""


def _say(path: Path, texts: list[str]) -> None:
    """Append user messages saying ``texts`` to the transcript, one after another from its leaf."""
    with Transcript.open(path) as t:
        leaf = t.leaf_id
    with open(path, "ab") as f:
        for i, text in enumerate(texts):
            entry = {
                "type": "message",
                "id": f"5ec{i:05x}",
                "parentId": leaf,
                "timestamp": "2026-10-09T09:00:00.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": MS},
            }
            f.write(json.dumps(entry).encode() + b"\n")
            leaf = entry["id"]


@pytest.fixture
def served(tmp_path: Path) -> Served:
    home = kurahi_home(tmp_path / "home", tmp_path)
    folder = home / "agents" / "alice" / "sessions"
    (live,) = folder.glob("*.jsonl")  # the live session (the archive is *.jsonl.reset.*)
    _say(live, [f"marker{name}x here is it: {secret} keep it safe" for name, (secret, _) in SECRETS.items()])
    return Served("home", home)


def _talk(served: Served, names: list[str]) -> dict[str, tuple[str, str]]:
    async def run() -> dict[str, tuple[str, str]]:
        out = {}
        async with Client(build_server(served)) as c:
            for name in names:
                answer = structured(await c.call_tool("recall", {"query": f"marker{name}x", "limit": 1}))
                hit = answer["hits"][0]
                assert f"marker{name}x" in hit["text"] and "keep it safe" in hit["text"]
                res = await c.read_resource(hit["around"])
                out[name] = (json.dumps(answer), res.contents[0].text)
        return out

    return asyncio.run(run())


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_a_secret_said_in_a_transcript_is_redacted_in_recall_and_in_the_slice(served: Served, name: str) -> None:
    answer, slice_text = _talk(served, [name])[name]
    value = SECRETS[name][1]
    assert value not in answer and "[redacted]" in answer
    assert value not in slice_text and "[redacted]" in slice_text
    assert f"marker{name}x" in slice_text


def test_the_pattern_set_keeps_what_is_not_a_secret() -> None:
    from kurahi.store.redact import scrub_text

    plain = "inputTokens: 123456, the sky-blue house, postgres://db.example/app, ssh-rsa is a key type"
    assert scrub_text(plain) == plain
    assert scrub_text("postgres://alice:pw123456@h/db") == "postgres://alice:[redacted]@h/db"
    assert scrub_text("password = hunter2hunter2") == "password = [redacted]"


@pytest.mark.parametrize("sample", ["2026.9.6-reset", "2026.5.28-reset-idle"])
def test_losses_return_no_catalog_field_and_no_absolute_path(tmp_path: Path, sample: str) -> None:
    root = openclaw_state_copy(sample, tmp_path / "state")

    async def run() -> Any:
        async with Client(build_server(Served("openclaw", root))) as c:
            return structured(await c.call_tool("losses", {})), structured(await c.call_tool("lineage", {}))

    losses, lineage = asyncio.run(run())
    assert losses["total"] >= 1
    for answer in (losses, lineage):
        text = json.dumps(answer)
        assert str(tmp_path) not in text and str(root.resolve()) not in text
        assert "/home/ava" not in text  # the 2026.5.28 sample catalog's sessionFile, as OpenClaw wrote it
        assert not re.search(r"(?<![\w:/])/(?:[\w.-]+/)+[\w.-]+", text), text
