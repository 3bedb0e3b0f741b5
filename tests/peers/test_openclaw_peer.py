"""The OpenClaw peer harness drives a real OpenClaw: what it sent the model, and what it left on disk.

Each era runs turns with one phrase, a reset, turns with another phrase, and a clean stop. The
stand-in model's request log must show the reset as OpenClaw applies it (nothing of the
pre-reset phrase afterwards), and the state dir must have that era's shape. The upgraded-dir
test builds the state dir most users of 2026.9 really have. Phrases are made per run.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from support.openclaw_model import REPLY_PREFIX, StandInModel
from support.openclaw_peer import (
    JSON_ERA,
    MAIN_KEY,
    OPENCLAW_VERSIONS,
    SQLITE_ERA,
    OpenClawFactory,
    OpenClawPeer,
    build_upgraded_dir,
    phrases_in,
    read_sqlite_copy,
    require,
)

pytestmark = pytest.mark.openclaw

RESET_ARCHIVE = re.compile(r"^(?P<id>[0-9a-f-]{36})\.jsonl\.reset\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z$")


def phrase(tag: str) -> str:
    """A phrase no earlier run (and nothing in OpenClaw's own prompt) can contain."""
    return f"{tag}-{secrets.token_hex(5).upper()}"


def assert_group_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def events(peer: OpenClawPeer, session_id: str, scratch: Path) -> list[dict[str, Any]]:
    """A session's transcript events from the SQLite store, by ``seq`` (read from a copy)."""
    rows = read_sqlite_copy(
        peer.sqlite_store,
        scratch,
        "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq",
        (session_id,),
    )
    return [json.loads(r[0]) for r in rows]


def current_sessions(peer: OpenClawPeer, scratch: Path) -> dict[str, str]:
    """Session key -> current session id, from the SQLite store's ``session_nodes``."""
    rows = read_sqlite_copy(peer.sqlite_store, scratch, "SELECT session_key, current_session_id FROM session_nodes")
    return {str(k): str(v) for k, v in rows}


def run_reset_scenario(peer: OpenClawPeer) -> tuple[str, str, int]:
    """Two turns saying ``before``, a reset, two saying ``after``, a clean stop.

    Returns the two phrases and how many model requests came before the reset.
    """
    before, after = phrase("BEFORE"), phrase("AFTER")
    peer.start()
    assert peer.running
    pid = peer.pid
    assert pid is not None
    reply = peer.turn(f"Please keep {before} in mind.")
    assert reply.startswith(REPLY_PREFIX) and before in reply, reply
    peer.turn(f"Say {before} back later.")
    cut = len(peer.requests())
    peer.reset()
    peer.turn(f"New topic: {after}.")
    peer.turn(f"And again {after}.")
    assert peer.stop() == 0, "OpenClaw did not stop cleanly on SIGTERM"
    assert not peer.running
    assert_group_gone(pid)
    token = peer.token.encode()
    holding = [str(f) for f in peer.root.rglob("*") if f.is_file() and token in f.read_bytes()]
    assert not holding, f"the gateway token was written to {holding}"
    return before, after, cut


def assert_reset_seen_by_model(peer: OpenClawPeer, before: str, after: str, cut: int) -> None:
    requests = peer.requests()
    assert cut == 2, f"expected one model request per turn before the reset, got {cut}"
    # Before the reset the second request still carries the first turn: history is sent.
    assert phrases_in(requests[cut - 1], [before, after]) == {before}
    after_reset = requests[cut:]
    assert len(after_reset) >= 2
    for body in after_reset:
        assert before not in phrases_in(body, [before]), "OpenClaw sent the pre-reset phrase after the reset"
    # The last request holds both post-reset turns: the session goes on after the reset.
    last = requests[-1]
    users = [m for m in last["messages"] if m.get("role") == "user" and after in json.dumps(m)]
    assert len(users) == 2, f"expected both post-reset turns in the last request, got {len(users)}"


def test_stand_in_model_echoes_and_logs(tmp_path: Path) -> None:
    """The stand-in alone (no node needed): deterministic echo, streamed or not, every body logged."""
    model = StandInModel(tmp_path / "requests.jsonl")
    model.start()
    try:
        said = phrase("HELLO")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

        def post(body: dict[str, Any]) -> bytes:
            req = urllib.request.Request(
                f"{model.base_url}/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with opener.open(req, timeout=10) as resp:
                return bytes(resp.read())

        stamped = [{"role": "user", "content": [{"type": "text", "text": f"[Mon 2026-11-30 08:24 UTC] {said}"}]}]
        plain = json.loads(post({"model": "stand-in", "messages": stamped}))
        assert plain["choices"][0]["message"]["content"] == f"{REPLY_PREFIX}1: {said}"
        streamed = post({"model": "stand-in", "messages": [{"role": "user", "content": said}], "stream": True})
        assert f"{REPLY_PREFIX}2: {said}".encode() in streamed and streamed.rstrip().endswith(b"data: [DONE]")
    finally:
        model.stop()
    assert len(model.requests()) == 2
    logged = [json.loads(line) for line in model.log_path.read_text().splitlines()]
    assert [e["body"] for e in logged] == model.requests()
    assert phrases_in(model.requests()[0], [said, "ABSENT"]) == {said}


def test_json_era_reset(openclaw: OpenClawFactory, tmp_path: Path) -> None:
    """2026.5.28: a reset starts a new session and renames the old transcript to an archive."""
    peer = openclaw(JSON_ERA)
    before, after, cut = run_reset_scenario(peer)
    assert_reset_seen_by_model(peer, before, after, cut)

    catalog = json.loads((peer.sessions_dir / "sessions.json").read_text(encoding="utf-8"))
    live_id = catalog[MAIN_KEY]["sessionId"]
    live = peer.sessions_dir / f"{live_id}.jsonl"
    archives = [m for p in peer.sessions_dir.iterdir() if (m := RESET_ARCHIVE.match(p.name))]
    assert len(archives) == 1, sorted(p.name for p in peer.sessions_dir.iterdir())
    assert archives[0]["id"] != live_id
    archive_text = (peer.sessions_dir / archives[0].string).read_text(encoding="utf-8")
    live_text = live.read_text(encoding="utf-8")
    assert before in archive_text and after not in archive_text
    assert after in live_text and before not in live_text
    assert not peer.sqlite_store.exists()


def test_sqlite_era_reset(openclaw: OpenClawFactory, tmp_path: Path) -> None:
    """2026.9.6: a reset keeps the session id and appends a ``reset`` event to its transcript."""
    peer = openclaw(SQLITE_ERA)
    before, after, cut = run_reset_scenario(peer)
    assert_reset_seen_by_model(peer, before, after, cut)

    assert peer.sqlite_store.is_file()
    assert not (peer.sessions_dir / "sessions.json").exists()
    store = peer.sqlite_store
    untouched = {p.name: p.read_bytes() for p in store.parent.iterdir() if p.name.startswith(store.name)}
    sessions = current_sessions(peer, tmp_path / "copy")
    assert list(sessions) == [MAIN_KEY]
    timeline = events(peer, sessions[MAIN_KEY], tmp_path / "copy")
    resets = [i for i, e in enumerate(timeline) if e.get("type") == "reset"]
    assert len(resets) == 1, [e.get("type") for e in timeline]
    head, tail = json.dumps(timeline[: resets[0]]), json.dumps(timeline[resets[0] :])
    assert before in head and after not in head
    assert after in tail and before not in tail
    # Reading went through a copy: the store's own files are as OpenClaw left them.
    assert {p.name: p.read_bytes() for p in store.parent.iterdir() if p.name.startswith(store.name)} == untouched


def test_upgraded_dir(tmp_path: Path) -> None:
    """2026.5.28 (reset, then an idle rollover) upgraded by 2026.9.6's doctor: SQLite store,
    the pre-reset archive left in ``sessions/``, the orphan under ``agent:main:recovered:<id>``;
    2026.9.6 then runs on it and sends only the live session's history."""
    for version in OPENCLAW_VERSIONS:
        require(version)
    pre, post, idle, later = phrase("PRE"), phrase("POST"), phrase("IDLE"), phrase("LATER")
    peer, doctor = build_upgraded_dir(
        tmp_path / "upgraded", pre_reset=[f"Keep {pre}."], post_reset=[f"Now {post}."], after_idle=f"Back: {idle}."
    )
    with peer:
        assert doctor.returncode == 0, doctor.stdout[-3000:]
        archives = [m for p in peer.sessions_dir.iterdir() if (m := RESET_ARCHIVE.match(p.name))]
        assert len(archives) == 1, sorted(p.name for p in peer.sessions_dir.iterdir())
        assert pre in (peer.sessions_dir / archives[0].string).read_text(encoding="utf-8")
        assert not list(peer.sessions_dir.glob("*.jsonl")), "a live transcript was left unimported"

        sessions = current_sessions(peer, tmp_path / "copy")
        recovered = [k for k in sessions if k.startswith(f"{MAIN_KEY.rsplit(':', 1)[0]}:recovered:")]
        assert sorted(sessions) == sorted([MAIN_KEY, *recovered]) and len(recovered) == 1, sessions
        assert recovered[0].endswith(sessions[recovered[0]])
        orphan = json.dumps(events(peer, sessions[recovered[0]], tmp_path / "copy"))
        live = json.dumps(events(peer, sessions[MAIN_KEY], tmp_path / "copy"))
        assert post in orphan and pre not in orphan
        assert idle in live and pre not in live and post not in live
        assert archives[0]["id"] not in sessions.values()

        peer.start()
        pid = peer.pid
        assert pid is not None
        assert later in peer.turn(f"Still there? {later}")
        assert peer.stop() == 0
        assert_group_gone(pid)
        (first,) = peer.requests()
        assert phrases_in(first, [pre, post, idle, later]) == {idle, later}


def test_close_kills_a_running_gateway(openclaw: OpenClawFactory) -> None:
    """Teardown leaves no OpenClaw process, even when a test never stops the gateway."""
    peer = openclaw(JSON_ERA)
    peer.start()
    pid = peer.pid
    assert pid is not None
    os.killpg(pid, 0)  # alive
    peer.close()
    assert not peer.running
    assert_group_gone(pid)
