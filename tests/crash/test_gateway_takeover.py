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

from kurahi.gateway.lock import gateway_info
from kurahi.resident.home import Home
from support.multi_gateway_campaign import AGENT, KURAHI, MultiGatewayCampaign
from support.waiting import wait_for

pytestmark = pytest.mark.postgres

KEY = f"agent:{AGENT}:takeover"


class Gateway:
    """One ``kurahi gateway run`` process on a home, with a client for its API."""

    def __init__(self, home: Home, gateway_id: str, url: str, lease: float = 600) -> None:
        self.home = home
        self.log = home.root / f"gateway-{gateway_id}.log"
        env = {**os.environ, "KOLO_HOME": str(home.root), "KOLO_STORE": url, "KOLO_LEASE_SECONDS": f"{lease:g}"}
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

    def chat(self, text: str, ik: str | None = None) -> httpx.Response:
        assert self.client is not None
        body = {"message": text, "key": KEY} if ik is None else {"message": text, "key": KEY, "idempotencyKey": ik}
        return self.client.post(f"/api/agents/{AGENT}/chat", json=body)

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
def gateways(tmp_path: Path, pg_url: str) -> Iterator[Callable[..., Gateway]]:
    campaign = MultiGatewayCampaign(tmp_path, pg_url, gateways=3, sessions=1, seconds=0)
    campaign._setup()
    started: list[Gateway] = []

    def start(home: int, gateway_id: str, lease: float = 600) -> Gateway:
        gw = Gateway(campaign.homes[home], gateway_id, pg_url, lease)
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
    gateways: Callable[..., Gateway], pg_url: str
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


def test_a_second_gateway_with_a_live_gateways_id_is_refused(gateways: Callable[..., Gateway]) -> None:
    gateways(0, "gw-a").ready()
    twin = gateways(1, "gw-a")  # another home, the same lease owner id
    assert twin.proc.wait(60) == 5
    text = twin.log.read_text()
    assert "lease owner id 'gw-a' is in use by another live process" in text
    assert "Traceback" not in text


def user_lines(pg_url: str, marker: bytes) -> int:
    """How many user-message lines in the database hold ``marker``."""
    return sum(1 for line in transcript_text(pg_url).split(b"\n") if b'"role":"user"' in line and marker in line)


def test_a_database_that_drops_mid_turn_answers_503_and_the_session_recovers_by_itself(
    gateways: Callable[..., Gateway], pg_url: str
) -> None:
    a = gateways(0, "gw-a").ready()
    assert a.chat("one tk-1-tk").status_code == 200
    db = urlsplit(pg_url).path.lstrip("/")
    admin = pg_url.rsplit("/", 1)[0] + "/postgres"
    answer: list[httpx.Response] = []
    # A turn whose model takes 3 s: the database goes away between its first line and its answer.
    turn = threading.Thread(target=lambda: answer.append(a.chat("two tk-2-tk [[slow:3000]]", "ik-two")))
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
        # Not acknowledged, and a client can act on it: 503 with Retry-After, saying the
        # message was stored and under which key to send it again.
        assert r.status_code == 503 and r.headers["retry-after"].isdigit(), r.text
        assert body["error"]["code"] == "store_unavailable" and "cannot reach the database" in body["error"]["message"]
        assert body["error"]["stored"] is True and body["error"]["idempotencyKey"] == "ik-two"
        assert "Traceback" not in r.text
        # While the database is away, other requests say so the same way (not 500).
        down = a.chat("meanwhile tk-m-tk")
        assert down.status_code == 503 and down.json()["error"]["code"] == "store_unavailable", down.text
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS true')
    # The message sent again with its key: the stored turn goes on (no second copy of it).
    again = a.chat("two tk-2-tk [[slow:3000]]", "ik-two")
    assert again.status_code == 200 and again.json()["status"] == "ok", again.text
    assert user_lines(pg_url, b"tk-2-tk") == 1
    # The session was not left stuck: the next message is served, with no restart.
    wait_for(served(a, "three tk-3-tk"), "the gateway to reconnect and serve the session")
    assert a.proc.poll() is None
    data = transcript_text(pg_url)
    assert b"tk-1-tk" in data and b"tk-3-tk" in data
    log = a.log.read_text()
    assert "Traceback" not in log and "error connecting in" not in log
    assert log.count("cannot be reached (") == 1 and "is reachable again after" in log


def test_a_gateway_that_loses_the_session_mid_turn_says_what_it_stored_and_a_retry_elsewhere_stores_nothing_twice(
    gateways: Callable[..., Gateway], pg_url: str, tmp_path: Path
) -> None:
    # Issue 29: A stalls mid-turn past its lease, after the message and the tool's side effect
    # were stored; B takes the session. A's answer must not be "nothing was appended", and the
    # client's retry on B (same idempotency key) must neither store the message again nor run
    # the side effect again.
    a = gateways(0, "gw-a", lease=2).ready()
    b = gateways(1, "gw-b", lease=2).ready()
    memory = tmp_path / "workspace" / "memory" / "tk.md"
    text = 'one tk-1-tk [[tool:memory_append {"text": "tk-side-1", "file": "tk.md"}]] [[slow:1500]]'
    answer: list[httpx.Response] = []
    turn = threading.Thread(target=lambda: answer.append(a.chat(text, "ik-one")))
    turn.start()
    wait_for(lambda: memory.is_file() and "tk-side-1" in memory.read_text(), "the side effect")
    os.killpg(a.proc.pid, signal.SIGSTOP)
    try:
        # B takes the session once A's lease has run out, and answers another message on it.
        wait_for(served(b, "two tk-2-tk"), "B to take the session over")
    finally:
        os.killpg(a.proc.pid, signal.SIGCONT)
    turn.join(60)
    r = answer[0]
    assert r.status_code == 409, r.text
    err = r.json()["error"]
    assert err["code"] == "busy" and err["stored"] is True and err["idempotencyKey"] == "ik-one", r.text
    assert "nothing was appended" not in err["message"]
    # The client sends it again where the session lives now, as the docs say.
    retry = b.chat(text, "ik-one")
    assert retry.status_code == 200 and retry.json()["replayed"] is True, retry.text
    assert user_lines(pg_url, b"tk-1-tk") == 1
    assert memory.read_text().count("tk-side-1") == 1
