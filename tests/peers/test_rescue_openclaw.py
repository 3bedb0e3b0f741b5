"""``kurahi rescue`` against a real OpenClaw from npm: it notices a reset as it happens, refuses while
OpenClaw runs, and after ``rescue apply`` OpenClaw's own next model request holds the lost phrase.

One OpenClaw start-up per era serves the whole story (the suite's CI budget): talk, start
``rescue watch``, reset through OpenClaw, see the watch print the loss, try ``rescue apply``
while OpenClaw runs (exit 5, nothing changed), stop OpenClaw, apply, start it again and take
one turn. Phrases are made per run, so nothing in the repository can make the test pass.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.openclaw_model import REPLY_PREFIX
from support.openclaw_peer import (
    JSON_ERA,
    MAIN_KEY,
    SQLITE_ERA,
    OpenClawFactory,
    OpenClawPeer,
    OpenClawVersion,
    phrases_in,
)

pytestmark = pytest.mark.openclaw

KURAHI = [sys.executable, "-m", "kurahi.cli"]


def phrase(tag: str) -> str:
    return f"{tag}-{secrets.token_hex(4).upper()}"


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("KOLO_", "KURAHI_", "OPENCLAW_", "COLUMNS"))}


def kurahi(*args: str, code: int | None = 0) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([*KURAHI, *args], capture_output=True, text=True, env=env(), timeout=300)
    assert "Traceback" not in out.stderr, out.stderr
    if code is not None:
        assert out.returncode == code, f"kurahi {' '.join(args[:2])}: exit {out.returncode}\n{out.stdout}{out.stderr}"
    return out


def one_turn(peer: OpenClawPeer) -> dict[str, Any]:
    """Start, one turn with a fresh phrase, stop: the request that carried it."""
    probe = phrase("PROBE")
    seen = len(peer.requests())
    peer.start()
    reply = peer.turn(f"Do you remember? {probe}")
    assert peer.stop() == 0
    assert reply.startswith(REPLY_PREFIX), reply
    carrying = [body for body in peer.requests()[seen:] if phrases_in(body, [probe])]
    assert carrying, "OpenClaw sent the model no request for the turn"
    return carrying[-1]


@pytest.mark.parametrize("version", [JSON_ERA, SQLITE_ERA])
def test_watch_sees_a_reset_and_rescue_brings_it_back(
    version: OpenClawVersion, openclaw: OpenClawFactory, tmp_path: Path
) -> None:
    peer = openclaw(version)
    state = str(peer.state_dir)
    before, after = phrase("BEFORE"), phrase("AFTER")
    peer.start()
    peer.turn(f"Please keep {before} in mind.")
    peer.turn(f"Say {before} back later.")

    watch = subprocess.Popen(
        [*KURAHI, "rescue", "watch", "--openclaw", state, "--interval", "0.5", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    try:
        assert watch.stderr is not None and watch.stdout is not None
        assert "0 loss(es) already there" in watch.stderr.readline()
        peer.reset()
        peer.turn(f"New topic: {after}.")
        loss = json.loads(watch.stdout.readline())  # the watch prints once it has seen the reset
    finally:
        watch.terminate()
        _, err = watch.communicate(timeout=60)
    assert watch.returncode == 0 and "Traceback" not in err, err
    assert (loss["key"], loss["kind"]) == (MAIN_KEY, "reset"), loss

    # While OpenClaw runs, apply is refused and says how to stop it.
    refused = kurahi("rescue", "apply", loss["id"], "--openclaw", state, "--yes", code=5)
    assert "openclaw gateway stop" in refused.stderr
    assert peer.stop() == 0

    listed = json.loads(kurahi("rescue", "--openclaw", state, "--json", code=1).stdout)["losses"]
    assert [x["id"] for x in listed] == [loss["id"]], "the loss the watch printed is not the one listed"
    done = json.loads(
        kurahi(
            "rescue", "apply", loss["id"], "--openclaw", state, "--yes", "--json", "--out", str(tmp_path / "p")
        ).stdout
    )
    assert done["verified"], done
    lost = [m["text"] for m in done["plan"]["markers"] if m["part"] == "lost" and m["inView"]]
    assert lost == [before], done["plan"]["markers"]  # what the user said is the most distinctive phrase

    body = one_turn(peer)
    assert phrases_in(body, [before, after]) == {before, after}, "after rescue OpenClaw's request lacks a phrase"
    for marker in lost:
        assert phrases_in(body, [marker]) == {marker}, f"the marker {marker!r} Kurahi checked is not in the request"
    kurahi("rescue", "--openclaw", state, code=0)
