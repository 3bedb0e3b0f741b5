"""Gateways on one database, one at a time disrupted by hand: the takeover paths the campaign relies on.

Each test starts real ``kurahi gateway run`` processes (homes made by the campaign's
``_setup``: one agent, one shared workspace) on a throwaway PostgreSQL, and talks to them
over HTTP on loopback. Leases are ten minutes long here (``KOLO_LEASE_SECONDS``), so a
session freed before the test ends was freed by a proof that its gateway is dead, not by
its lease running out.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest
from multi_gateway_campaign import AGENT, KURAHI, MultiGatewayCampaign

from kurahi.gateway.lock import gateway_info
from kurahi.resident.home import Home
from waiting import wait_for

pytestmark = pytest.mark.postgres

KEY = f"agent:{AGENT}:takeover"


class Gateway:
    """One ``kurahi gateway run`` process on a home, with a client for its API."""

    def __init__(self, home: Home, gateway_id: str, url: str) -> None:
        self.home = home
        self.log = home.root / f"gateway-{gateway_id}.log"
        env = {**os.environ, "KOLO_HOME": str(home.root), "KOLO_STORE": url, "KOLO_LEASE_SECONDS": "600"}
        env.pop("KOLO_GATEWAY_TOKEN", None)
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [*KURAHI, "gateway", "run", "--port", "0", "--grace", "0.5", "--gateway-id", gateway_id],
                stdout=log,
                stderr=log,
                env=env,
                start_new_session=True,
            )
        self.client: httpx.Client | None = None

    def ready(self) -> Gateway:
        """Wait until it listens (or fail with its log)."""

        def listening() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"gateway exited {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            info = gateway_info(self.home.lock)
            return info is not None and info.pid == self.proc.pid

        wait_for(listening, "the gateway to listen")
        info = gateway_info(self.home.lock)
        assert info is not None
        token = self.home.token_file.read_text().strip()
        self.client = httpx.Client(
            base_url=f"http://127.0.0.1:{info.port}", headers={"Authorization": f"Bearer {token}"}, timeout=60
        )
        return self

    def chat(self, text: str) -> httpx.Response:
        assert self.client is not None
        return self.client.post(f"/api/agents/{AGENT}/chat", json={"message": text, "key": KEY})

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def gateways(tmp_path: Path, pg_url: str) -> Iterator[Callable[[int, str], Gateway]]:
    campaign = MultiGatewayCampaign(tmp_path, pg_url, gateways=3, sessions=1, seconds=0)
    campaign._setup()
    started: list[Gateway] = []

    def start(home: int, gateway_id: str) -> Gateway:
        gw = Gateway(campaign.homes[home], gateway_id, pg_url)
        started.append(gw)
        return gw

    yield start
    for gw in started:
        gw.stop()


def served(gw: Gateway, text: str) -> Callable[[], bool]:
    """A condition: ``gw`` answered a chat turn with ``text`` (a 409 busy is an answer to ask again)."""

    def ask() -> bool:
        r = gw.chat(text)
        if r.status_code == 409:
            return False
        assert r.status_code == 200 and r.json().get("status") == "ok", r.text
        return True

    return ask


def transcript_text(pg_url: str) -> bytes:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = conn.execute("SELECT line FROM kurahi.entries ORDER BY transcript_id, seq").fetchall()
    return b"".join(bytes(r[0]) for r in rows)


def test_a_killed_gateways_session_is_served_by_another_at_once_and_its_id_restarts_at_once(
    gateways: Callable[[int, str], Gateway], pg_url: str
) -> None:
    a = gateways(0, "gw-a").ready()
    b = gateways(1, "gw-b").ready()
    r = a.chat("one tk-1-tk")
    assert r.status_code == 200 and r.json()["status"] == "ok", r.text
    busy = b.chat("two tk-2-tk")
    assert busy.status_code == 409  # A holds the session's lease (for ten minutes)
    a.kill()
    # B serves it as soon as the database has seen A's liveness connection close: long
    # before a ten-minute lease could run out.
    wait_for(served(b, "three tk-3-tk"), "B to take the session over")
    # A started again with the same gateway id is not refused: its dead instance is proven dead.
    again = gateways(0, "gw-a").ready()
    assert again.chat("four tk-4-tk").status_code == 409  # B holds the session now
    data = transcript_text(pg_url)
    assert b"tk-1-tk" in data and b"tk-3-tk" in data and b"tk-2-tk" not in data and b"tk-4-tk" not in data
    assert b"is in use by another live process" not in again.log.read_bytes()


def test_a_second_gateway_with_a_live_gateways_id_is_refused(gateways: Callable[[int, str], Gateway]) -> None:
    gateways(0, "gw-a").ready()
    twin = gateways(1, "gw-a")  # another home, the same lease owner id
    assert twin.proc.wait(60) == 5
    text = twin.log.read_text()
    assert "lease owner id 'gw-a' is in use by another live process" in text
    assert "Traceback" not in text


def test_a_database_that_drops_mid_turn_fails_the_turn_cleanly_and_the_gateway_reconnects(
    gateways: Callable[[int, str], Gateway], pg_url: str
) -> None:
    a = gateways(0, "gw-a").ready()
    assert a.chat("one tk-1-tk").status_code == 200
    db = urlsplit(pg_url).path.lstrip("/")
    admin = pg_url.rsplit("/", 1)[0] + "/postgres"
    answer: list[httpx.Response] = []
    # A turn whose model takes 3 s: the database goes away between its first line and its answer.
    turn = threading.Thread(target=lambda: answer.append(a.chat("two tk-2-tk [[slow:3000]]")))
    turn.start()
    wait_for(lambda: b"tk-2-tk" in transcript_text(pg_url), "the turn's first line")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS false')
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [db])
    try:
        turn.join(60)
        assert answer, "the turn did not answer"
        r = answer[0]
        body: Any = r.json()
        # The turn ends in an error that says why, not a 500 or a hang: not acknowledged.
        assert r.status_code == 200 and body["status"] == "error", r.text
        assert "cannot reach the database" in body["error"] and "Traceback" not in r.text
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS true')
    wait_for(served(a, "three tk-3-tk"), "the gateway to reconnect and serve the session")
    assert a.proc.poll() is None
    data = transcript_text(pg_url)
    assert b"tk-1-tk" in data and b"tk-3-tk" in data
    assert "Traceback" not in a.log.read_text()
