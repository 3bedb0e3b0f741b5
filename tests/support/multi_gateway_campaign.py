"""Several gateways on one PostgreSQL database under mixed load, a random one SIGKILLed every so often.

The harness behind ``benchmarks/multi_gateway.py`` (full size) and ``test_multi_gateway.py``
(a short run in the suite). It starts ``gateways`` processes of ``kurahi gateway run`` on
one database, each with a home of its own (same agent id, same config, same identity
marker), and drives them over HTTP from ``workers`` client threads:

* chat turns on ``sessions`` session keys, each carrying a unique nonce and calling
  ``memory_append`` (a side effect we can count, see below), sent to a random live gateway
  as ``docs/backends.md`` tells a client to: with an idempotency key of its own, the next
  gateway on ``409 busy`` (the session's lease is held by another gateway) or no answer,
  and, with ``retry_for``, the same message with the same key again after a ``503``
  (the database away) until it is acknowledged or that many seconds have passed;
* background jobs (``POST /jobs``, the same kind of turn), sent to the gateway that served
  the key last;
* session resets (``POST /sessions/reset``), like chats.

Every ``kill_every`` seconds (uniform in the range) one live gateway is SIGKILLed, its
whole process group, as a power cut would, and started again ``down`` seconds later (with
the same ``--gateway-id``; should the database not have seen the dead instance's connection
close yet, the start is refused, and it is started again half a second later, as a
supervisor would). With
``stall_share`` some disruptions instead SIGSTOP a gateway for ``stall_seconds`` (longer than
a lease) and SIGCONT it: it wakes up holding stale leases, with turns in flight, and fencing
must refuse whatever it then tries to write.

**Shared workspace.** The homes' workspaces are one directory (``agents/<id>/workspace`` of
every home is a symlink to ``<root>/workspace``): a side effect is done in the world, not in
a gateway, and the gateway that takes a session over must be able to look up whether an
interrupted call's side effect happened (``memory_append`` tags each append with its action
id and its lookup searches for that tag). With a workspace per gateway a takeover could not
know, and the count below would be per gateway, not per world. So a deployment of several
gateways on one database shares the workspace too (documented in ``docs/backends.md``).

**What is checked at the end**, with every gateway stopped, reading the database through
the backend (``PostgresBackend(...).agent(id)``) and the shared workspace:

* *stored twice*: no nonce is in more than one user message, in all the transcripts
  together, and no nonce is in the shared memory files more than once (a side effect run
  twice under another action id, a retried turn calling the tool afresh, counts here);
* *lost*: every acknowledged chat (HTTP 200 and ``status: ok``) and every job the jobs log
  says ``succeeded`` has its nonce in the lineage of its key: the transcript the catalog
  names for the key, or one of its predecessors through the headers' ``parentSession``
  (resets). A nonce found only in a transcript outside that lineage is reported as
  *orphaned* (lost to the key), one found nowhere as *missing*;
* *fencing*: a trigger installed by the harness on ``kurahi.entries`` records, for every line
  inserted, who wrote it (the connection's ``application_name``, one per gateway start) and
  the lease row of its transcript as the inserting transaction sees it. A line whose writer
  is not the lease's owner, or whose fencing token is lower than that of a line before it in
  the same transcript, is a write accepted from a stale lease. Also: every transcript's
  entry ids are unique and every ``parentId`` names an earlier entry (one writer's chain);
  ``409`` answers that say a lease was lost, and ``LeaseLostError`` in the gateways' logs,
  are counted (refusals: the fencing working, not failures);
* *side effects*: each ``memory_append`` action tag is in the shared workspace at most once;
  the ledger has at most one intent and at most one definite outcome per action id; on
  every key's leaf path each tool call has at most one result; a tag in the workspace has
  an intent in the ledger, and no call whose tag is in the workspace was settled as
  "never started";
* *served again*: at each kill the sessions whose lease the killed gateway held (asked of
  the database just before the kill) are probed by a thread of their own; the time from the
  kill to the first acknowledged write on each of them (by any gateway) must be at most
  ``serve_bar`` seconds (max and p99 are reported);
* no job is left ``queued`` or ``running`` in the jobs log.

**Where the served-again time goes** (diagnostics in the report, not checked): how much
lease each session a killed gateway held had left when it was killed (``leaseLeftAtKill``:
the wait if only expiry freed it), how long the killed gateway took to listen again
(``restartReady``), who served each session first (``servedByRestarted`` /
``servedBySurvivor``), the first line another gateway committed (``firstLineAgain*``), and,
sampled every 0.1 s, how long ago each live gateway last renewed its owner claim
(``ownerRenewalAge``: how close the load brought a healthy gateway to losing its leases).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
import psycopg

from kurahi.gateway.lock import gateway_info
from kurahi.pi.transcript import Transcript
from kurahi.resident.home import Home
from kurahi.resident.init import init_home
from kurahi.store.postgres import PostgresBackend
from kurahi.store.postgres.backend import DEFAULT_LEASE_SECONDS

AGENT = "alice"
KURAHI = [sys.executable, "-m", "kurahi.cli"]
_NONCE = re.compile(rb"mg-(n\d+-\d+)-mg")
_TEXT_NONCE = re.compile(r"mg-(n\d+-\d+)-mg")
_MEMORY_NONCE = re.compile(r"\b(n\d+-\d+)\b")
_TAG = re.compile(r"<!-- kurahi:action (\S+) -->")

AUDIT_SQL = """
CREATE TABLE IF NOT EXISTS public.mg_entry_audit (
    transcript_id bigint NOT NULL,
    seq bigint NOT NULL,
    writer text NOT NULL,
    lease_owner text,
    lease_token bigint,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE OR REPLACE FUNCTION public.mg_audit_entry() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE o text; t bigint;
BEGIN
    SELECT owner_id, token INTO o, t FROM kurahi.leases WHERE transcript_id = NEW.transcript_id;
    INSERT INTO public.mg_entry_audit (transcript_id, seq, writer, lease_owner, lease_token)
    VALUES (NEW.transcript_id, NEW.seq, current_setting('application_name'), o, t);
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS mg_audit_entry ON kurahi.entries;
CREATE CONSTRAINT TRIGGER mg_audit_entry AFTER INSERT ON kurahi.entries
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.mg_audit_entry();
"""
"""Who wrote each line, and its transcript's lease as the writing transaction sees it when it commits.

Deferred to the commit: a transcript's first lines are inserted before its lease in the
transaction that creates both, and an append's statement locks the lease row until its
commit, so what the trigger sees then is what the write was accepted under. (The harness's
instrument, not Kurahi's.)"""

SQL_HELD_KEYS = """
SELECT c.key, t.id, clock_timestamp(), extract(epoch FROM l.expires_at - clock_timestamp())::float8
FROM kurahi.leases l
JOIN kurahi.transcripts t ON t.id = l.transcript_id
JOIN kurahi.catalog_entries c ON c.agent_id = t.agent_id AND (c.value ->> 'sessionFile') = t.name
WHERE l.owner_id = %s AND l.expires_at > now()
"""


def with_app_name(url: str, name: str) -> str:
    """``url`` with ``application_name=name`` in its query (libpq passes it to the server)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "application_name"]
    query.append(("application_name", name))
    return urlunsplit(parts._replace(query=urlencode(query)))


def _refused_owner(proc: subprocess.Popen[bytes], log_path: Path, start: int) -> bool:
    """Whether ``proc`` exited (within a few seconds) refusing a gateway id still claimed by a dead instance."""
    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        with log_path.open("rb") as f:
            f.seek(start)
            if b"listening on" in f.read():
                return False
        time.sleep(0.02)
    if proc.poll() != 5:
        return False
    with log_path.open("rb") as f:
        f.seek(start)
        return b"is in use by another live process" in f.read()


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def _summary(values: list[float]) -> dict[str, float] | None:
    """p50, p99 and max of ``values`` (seconds, rounded), or None when there are none."""
    if not values:
        return None
    p50, p99 = _percentile(values, 0.5), _percentile(values, 0.99)
    assert p50 is not None and p99 is not None
    return {"p50": round(p50, 3), "p99": round(p99, 3), "max": round(max(values), 3), "n": len(values)}


@dataclass
class Incarnation:
    """One start of one gateway."""

    gateway: int
    n: int
    proc: subprocess.Popen[bytes]
    port: int
    token: str
    owner_id: str

    @property
    def name(self) -> str:
        return f"mg-gw{self.gateway}-{self.n}"


@dataclass
class MultiGatewayReport:
    gateways: int = 0
    sessions: int = 0
    seconds: float = 0.0
    kills: int = 0
    restarts: int = 0
    stalls: int = 0
    chats_sent: int = 0
    chats_acked: int = 0
    resets_acked: int = 0
    jobs_started: int = 0
    jobs_succeeded: int = 0
    jobs_failed: int = 0
    jobs_interrupted: int = 0
    busy_answers: int = 0
    lease_lost_answers: int = 0
    unavailable_answers: int = 0
    """``503 store_unavailable`` answers (the database away): the client sends the message again."""
    stored_answers: int = 0
    """Error answers that said the message had been stored (or might have been): sent again with its key."""
    replayed_answers: int = 0
    """Acknowledgements answered from a turn stored earlier for the same idempotency key."""
    stored_twice: int = 0
    effects_by_text_twice: int = 0
    other_errors: Counter[str] = field(default_factory=Counter)
    lease_lost_in_logs: int = 0
    lost_missing: int = 0
    lost_orphaned: int = 0
    stale_writes: int = 0
    entries_audited: int = 0
    chain_breaks: int = 0
    forks: int = 0
    side_effects: int = 0
    side_effects_twice: int = 0
    results_twice: int = 0
    settlements: Counter[str] = field(default_factory=Counter)
    served_again: list[float] = field(default_factory=list)
    first_line_again: list[float] = field(default_factory=list)
    """Seconds from a disruption to the first line another gateway committed to the session (diagnostic)."""
    never_served_again: int = 0
    lease_left_at_kill: list[float] = field(default_factory=list)
    """Seconds each lease a killed gateway held still had to run when it was killed (diagnostic)."""
    restart_ready: list[float] = field(default_factory=list)
    """Seconds from each kill to its gateway listening again, refused starts included (diagnostic)."""
    served_by_restarted: int = 0
    served_by_survivor: int = 0
    renewal_age: list[float] = field(default_factory=list)
    """Samples (every 0.1 s) of how long ago each live gateway last renewed its owner claim (diagnostic)."""
    jobs_unfinished: int = 0
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gateways": self.gateways,
            "sessions": self.sessions,
            "seconds": round(self.seconds, 1),
            "kills": self.kills,
            "restarts": self.restarts,
            "stalls": self.stalls,
            "chatsSent": self.chats_sent,
            "chatsAcknowledged": self.chats_acked,
            "resetsAcknowledged": self.resets_acked,
            "jobsStarted": self.jobs_started,
            "jobsSucceeded": self.jobs_succeeded,
            "jobsFailed": self.jobs_failed,
            "jobsInterrupted": self.jobs_interrupted,
            "busyAnswers": self.busy_answers,
            "leaseLostAnswers": self.lease_lost_answers,
            "unavailableAnswers": self.unavailable_answers,
            "storedAnswers": self.stored_answers,
            "replayedAnswers": self.replayed_answers,
            "storedTwice": self.stored_twice,
            "sideEffectTextTwice": self.effects_by_text_twice,
            "leaseLostInLogs": self.lease_lost_in_logs,
            "otherErrors": dict(self.other_errors),
            "lostMissing": self.lost_missing,
            "lostOrphaned": self.lost_orphaned,
            "staleWrites": self.stale_writes,
            "entriesAudited": self.entries_audited,
            "chainBreaks": self.chain_breaks,
            "forks": self.forks,
            "sideEffects": self.side_effects,
            "sideEffectsTwice": self.side_effects_twice,
            "toolResultsTwice": self.results_twice,
            "settlements": dict(self.settlements),
            "servedAgainCount": len(self.served_again),
            "servedAgainMaxSeconds": round(max(self.served_again), 3) if self.served_again else None,
            "servedAgainP99Seconds": round(p, 3) if (p := _percentile(self.served_again, 0.99)) is not None else None,
            "servedAgainP50Seconds": round(p, 3) if (p := _percentile(self.served_again, 0.5)) is not None else None,
            "neverServedAgain": self.never_served_again,
            "firstLineAgainCount": len(self.first_line_again),
            "firstLineAgainMaxSeconds": round(max(self.first_line_again), 3) if self.first_line_again else None,
            "firstLineAgainP99Seconds": round(p, 3)
            if (p := _percentile(self.first_line_again, 0.99)) is not None
            else None,
            "servedByRestarted": self.served_by_restarted,
            "servedBySurvivor": self.served_by_survivor,
            "leaseLeftAtKill": _summary(self.lease_left_at_kill),
            "restartReady": _summary(self.restart_ready),
            "ownerRenewalAge": _summary(self.renewal_age),
            "jobsUnfinished": self.jobs_unfinished,
            "failures": self.failures,
        }


@dataclass
class _Ack:
    key: str
    nonce: str
    gateway: str
    at: float


class MultiGatewayCampaign:
    """See the module docstring; :meth:`run` does everything and returns the report."""

    def __init__(
        self,
        root: Path,
        url: str,
        *,
        gateways: int = 3,
        sessions: int = 64,
        seconds: float = 600.0,
        workers: int = 16,
        kill_every: tuple[float, float] = (20.0, 40.0),
        down: tuple[float, float] = (0.5, 2.0),
        serve_bar: float = 5.0,
        seed: int = 1,
        job_share: float = 0.15,
        reset_share: float = 0.05,
        stall_share: float = 0.0,
        stall_seconds: float = 6.0,
        retry_for: float = 0.0,
        log: Any = None,
    ) -> None:
        self.root = root
        self.url = url
        self.n_gateways = gateways
        self.keys = [f"agent:{AGENT}:mg{i}" for i in range(sessions)]
        self.seconds = seconds
        self.n_workers = workers
        self.kill_every = kill_every
        self.down = down
        self.serve_bar = serve_bar
        self.rng = random.Random(seed)
        self.seed = seed
        self.job_share = job_share
        self.reset_share = reset_share
        self.stall_share = stall_share
        self.stall_seconds = stall_seconds
        self.retry_for = retry_for
        self.log = log or (lambda msg: None)
        self.report = MultiGatewayReport(gateways=gateways, sessions=sessions)
        self.homes: list[Home] = []
        self.live: dict[int, Incarnation] = {}
        self.incarnations: list[Incarnation] = []
        self.mutex = threading.Lock()
        self.stop = threading.Event()
        self.acks: list[_Ack] = []
        self.jobs: dict[str, tuple[str, str, str]] = {}
        """job id -> (key, nonce, gateway name)."""
        self.last_owner: dict[str, int] = {}
        self.pending: dict[str, float] = {}
        """Key -> when the gateway holding it was killed (until it is served again)."""
        self.pending_from: dict[str, int] = {}
        """Key -> the gateway that held it when it was killed."""
        self.counter = 0
        self.probing: set[str] = set()
        self.disruptions: list[tuple[int, str, Any]] = []
        """(transcript id, incarnation, database time) for each session a disruption took away."""
        self.probed: dict[str, float] = {}
        self.has_gateway_id = False

    # -- setup -------------------------------------------------------------------------------

    def _setup(self) -> None:
        shared = self.root / "workspace"
        for i in range(self.n_gateways):
            home = Home(self.root / f"gw{i}")
            init_home(home.root, AGENT, marker="MULTI-GW-7F3A")
            ws = home.agent(AGENT).workspace
            if i == 0:
                ws.rename(shared)
            else:
                shutil.rmtree(ws)
            ws.symlink_to(shared, target_is_directory=True)
            if i > 0:  # the same config in every home
                shutil.copyfile(self.homes[0].config, home.config)
            self.homes.append(home)
        help_text = subprocess.run([*KURAHI, "gateway", "run", "--help"], capture_output=True, text=True).stdout
        self.has_gateway_id = "--gateway-id" in help_text
        # Make the schema (as a gateway would), then the harness's audit trigger on it.
        PostgresBackend(with_app_name(self.url, "mg-setup"), home=self.homes[0].root).close()
        with psycopg.connect(with_app_name(self.url, "mg-harness"), autocommit=True) as conn:
            conn.execute(AUDIT_SQL)

    def _start(self, i: int) -> Incarnation:
        n = sum(1 for inc in self.incarnations if inc.gateway == i)
        home = self.homes[i]
        name = f"mg-gw{i}-{n}"
        env = {**os.environ, "KOLO_HOME": str(home.root), "KOLO_STORE": with_app_name(self.url, name)}
        env.pop("KOLO_GATEWAY_TOKEN", None)
        env.pop("PGPASSWORD", None)
        cmd = [*KURAHI, "gateway", "run", "--port", "0", "--grace", "0.5"]
        if self.has_gateway_id:
            cmd += ["--gateway-id", f"mg-gw{i}"]
        log_path = home.root / "gateway.log"
        deadline = time.monotonic() + 60
        while True:
            with log_path.open("ab") as log:
                log.write(f"\n=== {name} ===\n".encode())
                start = log.tell()
                proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env, start_new_session=True)
            if proc.wait() if _refused_owner(proc, log_path, start) else False:
                # The dead instance's claim on the gateway id has not expired yet (it lasts a
                # lease): a supervisor starts it again a moment later, and so do we.
                time.sleep(0.5)
                continue
            break
        while (info := gateway_info(home.lock)) is None or info.pid != proc.pid:
            if proc.poll() is not None or time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                raise RuntimeError(
                    f"gateway {name} did not start (exit {proc.poll()}):\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(0.02)
        owner = f"mg-gw{i}" if self.has_gateway_id else self._owner_of(proc.pid)
        inc = Incarnation(i, n, proc, info.port, home.token_file.read_text().strip(), owner)
        with self.mutex:
            self.incarnations.append(inc)
            self.live[i] = inc
        self.log(f"started {inc.name} (pid {proc.pid}, port {info.port}, owner {owner})")
        return inc

    def _owner_of(self, pid: int) -> str:
        like = f"{socket.gethostname()}-{pid}-%"
        with psycopg.connect(with_app_name(self.url, "mg-harness"), autocommit=True) as conn:
            row = conn.execute("SELECT owner_id FROM kurahi.owners WHERE owner_id LIKE %s", (like,)).fetchone()
        if row is None:
            raise RuntimeError(f"no lease owner row for gateway pid {pid}")
        return str(row[0])

    def _held(self, inc: Incarnation) -> list[str]:
        """The session keys whose lease ``inc`` holds now; notes each one's transcript and the database's clock."""
        with psycopg.connect(with_app_name(self.url, "mg-harness"), autocommit=True) as conn:
            rows = conn.execute(SQL_HELD_KEYS, (inc.owner_id,)).fetchall()
        for _, tid, at, left in rows:
            self.disruptions.append((int(tid), inc.name, at))
            self.report.lease_left_at_kill.append(max(0.0, float(left)))
        return [str(r[0]) for r in rows]

    def _kill(self, i: int) -> float:
        with self.mutex:
            inc = self.live.pop(i)
        held = self._held(inc)
        t = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(inc.proc.pid, signal.SIGKILL)
        inc.proc.wait()
        with self.mutex:
            for k in held:
                self.pending.setdefault(k, t)
                self.pending_from.setdefault(k, i)
        self.report.kills += 1
        self.log(f"killed {inc.name}: it held {len(held)} sessions")
        return t

    def _stall(self, i: int) -> None:
        """SIGSTOP gateway ``i`` for longer than a lease, then SIGCONT: it wakes up with stale leases.

        Its sessions are taken over meanwhile; what it tries to write when it wakes (turns in
        flight, renewals) must be refused by fencing, never accepted.
        """
        with self.mutex:
            inc = self.live.pop(i)  # not offered to the load while frozen
        held = self._held(inc)
        t = time.monotonic()
        os.killpg(inc.proc.pid, signal.SIGSTOP)
        with self.mutex:
            for k in held:
                self.pending.setdefault(k, t)
        self.report.stalls += 1
        self.log(f"stopped {inc.name} for {self.stall_seconds:g} s: it held {len(held)} sessions")
        time.sleep(self.stall_seconds)
        os.killpg(inc.proc.pid, signal.SIGCONT)
        with self.mutex:
            self.live[i] = inc
        self.log(f"continued {inc.name}")

    # -- load --------------------------------------------------------------------------------

    def _nonce(self) -> str:
        with self.mutex:
            self.counter += 1
            return f"n{self.seed}-{self.counter}"

    def _post(
        self, clients: dict[str, httpx.Client], inc: Incarnation, path: str, body: dict[str, Any]
    ) -> httpx.Response:
        c = clients.get(inc.name)
        if c is None:
            c = clients[inc.name] = httpx.Client(
                base_url=f"http://127.0.0.1:{inc.port}", headers={"Authorization": f"Bearer {inc.token}"}, timeout=15
            )
        return c.post(path, json=body)

    def _order(self, rng: random.Random, prefer: int | None = None) -> list[Incarnation]:
        with self.mutex:
            live = list(self.live.values())
        rng.shuffle(live)
        if prefer is not None:
            live.sort(key=lambda inc: inc.gateway != prefer)
        return live

    def _served(self, key: str, inc: Incarnation, at: float) -> None:
        with self.mutex:
            self.last_owner[key] = inc.gateway
            since = self.pending.get(key)
            if since is not None and at > since:
                del self.pending[key]
                self.report.served_again.append(at - since)
                if self.pending_from.pop(key, None) == inc.gateway:
                    self.report.served_by_restarted += 1
                else:
                    self.report.served_by_survivor += 1

    def _refused(self, r: httpx.Response) -> None:
        with self.mutex:
            self.report.busy_answers += 1
            if "taken over" in r.text:  # LeaseLostError: a stale writer refused by fencing
                self.report.lease_lost_answers += 1
            with contextlib.suppress(ValueError, AttributeError):
                self.report.stored_answers += r.json()["error"].get("stored") is True

    def _chat(self, clients: dict[str, httpx.Client], rng: random.Random, key: str, *, kind: str = "chat") -> bool:
        """One chat turn on ``key``, as ``docs/backends.md`` says a client sends one; whether acknowledged.

        Its idempotency key goes with every try: the next gateway on ``409 busy`` or no answer;
        after a ``503`` (and, with ``retry_for``, after a pass that found no gateway to serve
        it) the same message again, until acknowledged or ``retry_for`` seconds have passed. A
        ``200`` is final either way (``status`` other than ``ok``: answered, not acknowledged).
        """
        nonce = self._nonce()
        idx = key.rsplit("mg", 1)[1]
        text = f'{kind} mg-{nonce}-mg [[tool:memory_append {{"text": "{nonce}", "file": "s{idx}.md"}}]]'
        if kind == "probe":  # asking to be served: a plain turn, checked like every other
            text = f"{kind} mg-{nonce}-mg"
        body = {"message": text, "key": key, "idempotencyKey": f"ik-{nonce}"}
        with self.mutex:
            self.report.chats_sent += 1
        deadline = time.monotonic() + self.retry_for
        while True:
            wait = 0.05
            # A probe asks one gateway at a time: once the dead one's lease has run out any live
            # gateway takes the session, so asking them all in turn would only slow the asking.
            for inc in self._order(rng)[: 1 if kind == "probe" else None]:
                try:
                    r = self._post(clients, inc, f"/api/agents/{AGENT}/chat", body)
                except httpx.HTTPError:
                    continue  # killed under us, or no answer in time: not acknowledged, try the next one
                at = time.monotonic()
                if r.status_code == 200 and r.json().get("status") == "ok":
                    with self.mutex:
                        self.acks.append(_Ack(key, nonce, inc.name, time.time()))
                        self.report.chats_acked += 1
                        self.report.replayed_answers += bool(r.json().get("replayed"))
                    self._served(key, inc, at)
                    return True
                if r.status_code == 409:
                    self._refused(r)
                    continue
                if r.status_code == 503:
                    self._unavailable(r)
                    wait = float(r.headers.get("retry-after", "1"))
                    break
                self._error(f"chat {r.status_code}", r)
                return False
            if kind == "probe" or time.monotonic() + wait > deadline or self.stop.is_set():
                return False
            self.stop.wait(wait)

    def _unavailable(self, r: httpx.Response) -> None:
        err = r.json().get("error", {})
        with self.mutex:
            self.report.unavailable_answers += 1
            self.report.stored_answers += err.get("stored") is not False

    def _error(self, what: str, r: httpx.Response) -> None:
        try:
            body = r.json()
        except ValueError:
            body = None
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict):  # an error answer
            code, detail = err.get("code"), err.get("message")
        elif isinstance(body, dict):  # a turn answered with a status other than ok
            code, detail = body.get("status"), err
        else:
            code, detail = "?", r.text[:200]
        with self.mutex:
            self.report.other_errors[f"{what} {code}"] += 1
        self.log(f"{what} {code}: {str(detail)[:300]}")

    def _reset(self, clients: dict[str, httpx.Client], rng: random.Random, key: str) -> None:
        for inc in self._order(rng):
            try:
                r = self._post(clients, inc, f"/api/agents/{AGENT}/sessions/reset", {"key": key})
            except httpx.HTTPError:
                continue
            if r.status_code == 200:
                with self.mutex:
                    self.report.resets_acked += 1
                self._served(key, inc, time.monotonic())
                return
            if r.status_code == 409:
                self._refused(r)
                continue
            self._error(f"reset {r.status_code}", r)
            return

    def _job(self, clients: dict[str, httpx.Client], rng: random.Random, key: str) -> None:
        nonce = self._nonce()
        idx = key.rsplit("mg", 1)[1]
        text = f'job mg-{nonce}-mg [[tool:memory_append {{"text": "{nonce}", "file": "s{idx}.md"}}]]'
        with self.mutex:
            prefer = self.last_owner.get(key)
        for inc in self._order(rng, prefer)[:1]:
            try:
                r = self._post(clients, inc, f"/api/agents/{AGENT}/jobs", {"message": text, "key": key})
            except httpx.HTTPError:
                return
            if r.status_code == 202:
                with self.mutex:
                    self.jobs[r.json()["id"]] = (key, nonce, inc.name)
                    self.report.jobs_started += 1
            else:
                self._error(f"job {r.status_code}", r)

    def _worker(self, w: int) -> None:
        rng = random.Random(self.seed * 1000 + w)
        clients: dict[str, httpx.Client] = {}
        try:
            while not self.stop.is_set():
                key = rng.choice(self.keys)
                x = rng.random()
                if x < self.reset_share:
                    self._reset(clients, rng, key)
                elif x < self.reset_share + self.job_share:
                    self._job(clients, rng, key)
                elif not self._chat(clients, rng, key):
                    self.stop.wait(0.05)
        finally:
            for c in clients.values():
                c.close()

    def _prober(self, p: int) -> None:
        """Ask for the sessions of killed gateways until each is served again (least recently asked first).

        The bar is the time from a kill to the first acknowledged write on each of its sessions;
        ``probers`` threads share them, so a kill that freed 64 sessions is asked about at
        once, not one session after another.
        """
        rng = random.Random(self.seed * 7919 + p)
        clients: dict[str, httpx.Client] = {}
        try:
            while not self.stop.is_set():
                with self.mutex:
                    free = [k for k in self.pending if k not in self.probing]
                    key = min(free, key=lambda k: self.probed.get(k, 0.0)) if free else None
                    if key is not None:
                        self.probing.add(key)
                        self.probed[key] = time.monotonic()
                if key is None:
                    self.stop.wait(0.05)
                    continue
                try:
                    if not self._chat(clients, rng, key, kind="probe"):
                        self.stop.wait(0.05)
                finally:
                    with self.mutex:
                        self.probing.discard(key)
        finally:
            for c in clients.values():
                c.close()

    def _watch_renewals(self) -> None:
        """Sample, every 0.1 s, how long ago each live gateway renewed its owner claim (on the database's clock).

        A healthy gateway under load must renew well within its lease; the largest age seen
        is how close the load brought it to losing its sessions.
        """
        with psycopg.connect(with_app_name(self.url, "mg-harness"), autocommit=True) as conn:
            while not self.stop.wait(0.1):
                with self.mutex:
                    live = {inc.owner_id for inc in self.live.values()}
                rows = conn.execute(
                    "SELECT owner_id, extract(epoch FROM clock_timestamp() - expires_at)::float8 FROM kurahi.owners"
                ).fetchall()
                with self.mutex:
                    still = {inc.owner_id for inc in self.live.values()}
                for owner, past in rows:
                    if owner in live and owner in still:  # not killed or restarted while we asked
                        self.report.renewal_age.append(max(0.0, float(past) + DEFAULT_LEASE_SECONDS))

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> MultiGatewayReport:
        t0 = time.monotonic()
        self._setup()
        for i in range(self.n_gateways):
            self._start(i)
        workers = [threading.Thread(target=self._worker, args=(w,), daemon=True) for w in range(self.n_workers)]
        workers += [threading.Thread(target=self._prober, args=(p,), daemon=True) for p in range(self.n_workers)]
        workers.append(threading.Thread(target=self._watch_renewals, daemon=True))
        for w in workers:
            w.start()
        end = time.monotonic() + self.seconds
        try:
            while True:
                wait = self.rng.uniform(*self.kill_every)
                if time.monotonic() + wait >= end:
                    time.sleep(max(0.0, end - time.monotonic()))
                    break
                time.sleep(wait)
                victim = self.rng.choice(sorted(self.live))
                if self.rng.random() < self.stall_share:
                    self._stall(victim)
                    continue
                killed_at = self._kill(victim)
                time.sleep(self.rng.uniform(*self.down))
                self._start(victim)
                self.report.restart_ready.append(time.monotonic() - killed_at)
                self.report.restarts += 1
            # Give the sessions of the last kill their chance to be served before the load stops.
            deadline = time.monotonic() + self.serve_bar * 3
            while self.pending and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            self.stop.set()
            for w in workers:
                w.join(30)
            with self.mutex:
                self.report.never_served_again = len(self.pending)
            self._stop_all()
        self.report.seconds = time.monotonic() - t0
        self._check()
        return self.report

    def _stop_all(self) -> None:
        for inc in list(self.live.values()):
            with contextlib.suppress(ProcessLookupError):
                inc.proc.send_signal(signal.SIGTERM)
        for inc in list(self.live.values()):
            try:
                inc.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(inc.proc.pid, signal.SIGKILL)
                inc.proc.wait()
                self.report.failures.append(f"{inc.name} did not stop within 30 s of SIGTERM")
        self.live.clear()

    # -- the checks --------------------------------------------------------------------------

    def _check(self) -> None:
        rep = self.report
        backend = PostgresBackend(
            with_app_name(self.url, "mg-check"), home=self.homes[0].root, renew_in_background=False
        )
        try:
            store = backend.agent(AGENT)
            catalog = dict(store.catalog.items())
            raw = {n: store.transcripts.export(n) for n in store.transcripts.names()}
            transcripts = {n: Transcript.from_bytes(data, name=n) for n, data in raw.items()}
            ledger = list(store.log("ledger").records())
            job_recs = list(store.log("jobs").records())
        finally:
            backend.close()
        self._check_lost(catalog, raw, transcripts, job_recs)
        self._check_fencing(transcripts)
        self._check_effects(catalog, transcripts, ledger)
        for i, home in enumerate(self.homes):
            text = (home.root / "gateway.log").read_text(errors="replace")
            rep.lease_lost_in_logs += text.count("LeaseLostError")
            for m in re.finditer(
                r"Traceback \(most recent call last\):\n(?:.*\n){0,60}?(\w+(?:Error|Exception)[^\n]*)", text
            ):
                rep.other_errors[f"gw{i} log: {m.group(1)[:120]}"] += 1
        if rep.never_served_again:
            rep.failures.append(f"{rep.never_served_again} sessions of killed gateways were never served again")
        slow = [s for s in rep.served_again if s > self.serve_bar]
        if slow:
            rep.failures.append(
                f"{len(slow)} sessions served again later than {self.serve_bar:g} s after their gateway died "
                f"(max {max(slow):.2f} s)"
            )

    def _check_lost(
        self,
        catalog: dict[str, Any],
        raw: dict[str, bytes],
        transcripts: dict[str, Transcript],
        job_recs: list[Any],
    ) -> None:
        rep = self.report
        nonces_in = {n: {m.decode() for m in _NONCE.findall(data)} for n, data in raw.items()}
        parent_of: dict[str, str | None] = {}
        for n, data in raw.items():
            try:
                header = json.loads(data.split(b"\n", 1)[0])
            except ValueError:
                header = {}
            p = header.get("parentSession") if isinstance(header, dict) else None
            parent_of[n] = p.rsplit("/", 1)[-1] if isinstance(p, str) else None

        def lineage(key: str) -> set[str]:
            entry = catalog.get(key)
            seen: set[str] = set()
            name = entry.get("sessionFile") if entry else None
            while isinstance(name, str) and name not in seen and name in transcripts:
                seen.add(name)
                name = parent_of.get(name)
            return seen

        lineages = {k: lineage(k) for k in self.keys}
        stored: Counter[str] = Counter()
        for t in transcripts.values():
            for e in t.entries():
                msg = e.data.get("message") if e.data.get("type") == "message" else None
                if isinstance(msg, dict) and msg.get("role") == "user":
                    blocks = msg.get("content") if isinstance(msg.get("content"), list) else []
                    said = "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
                    stored.update(set(_TEXT_NONCE.findall(said)))
        for nonce, times in stored.items():
            if times > 1:
                rep.stored_twice += 1
                rep.failures.append(f"message {nonce} stored {times} times")
        everywhere = set().union(*nonces_in.values()) if nonces_in else set()

        def judge(key: str, nonce: str, what: str) -> None:
            if any(nonce in nonces_in[n] for n in lineages.get(key, ())):
                return
            if nonce in everywhere:
                rep.lost_orphaned += 1
                where = [n for n, s in nonces_in.items() if nonce in s]
                rep.failures.append(f"acknowledged {what} {nonce} on {key} is outside its lineage (in {where})")
            else:
                rep.lost_missing += 1
                rep.failures.append(f"acknowledged {what} {nonce} on {key} is in no transcript")

        for a in self.acks:
            judge(a.key, a.nonce, f"chat (by {a.gateway})")
        states: dict[str, str] = {}
        events: dict[str, list[str]] = defaultdict(list)
        for rec in job_recs:
            jid, ev = rec.get("id"), rec.get("event")
            if isinstance(jid, str) and isinstance(ev, str):
                events[jid].append(ev)
                if ev == "created":
                    states[jid] = "queued"
                elif states.get(jid) in ("queued", "running"):
                    states[jid] = ev
        for jid, (key, nonce, gw) in self.jobs.items():
            state = states.get(jid)
            if state == "succeeded":
                rep.jobs_succeeded += 1
                judge(key, nonce, f"job {jid} (by {gw})")
            elif state == "failed":
                rep.jobs_failed += 1
            elif state == "interrupted":
                rep.jobs_interrupted += 1
            finals = [e for e in events[jid] if e in ("succeeded", "failed", "interrupted")]
            if len(finals) > 1:
                rep.other_errors[f"job with several final events: {'+'.join(finals)}"] += 1
        unfinished = [j for j, s in states.items() if s in ("queued", "running")]
        rep.jobs_unfinished = len(unfinished)
        if unfinished:
            rep.failures.append(f"{len(unfinished)} jobs left queued or running: {unfinished[:5]}")

    def _check_fencing(self, transcripts: dict[str, Transcript]) -> None:
        rep = self.report
        owner_of = {inc.name: inc.owner_id for inc in self.incarnations}
        with psycopg.connect(with_app_name(self.url, "mg-harness"), autocommit=True) as conn:
            rows = conn.execute(
                "SELECT a.transcript_id, a.seq, a.writer, a.lease_owner, a.lease_token, t.name "
                "FROM public.mg_entry_audit a JOIN kurahi.transcripts t ON t.id = a.transcript_id "
                "ORDER BY a.transcript_id, a.seq"
            ).fetchall()
            n_entries = conn.execute("SELECT count(*) FROM kurahi.entries").fetchone()
            for tid, name_, at in self.disruptions:
                # The session's transcript, or its successor if another gateway reset it first.
                row = conn.execute(
                    "SELECT extract(epoch FROM min(a.at) - %(at)s)::float8 FROM public.mg_entry_audit a "
                    "WHERE a.writer <> %(w)s AND a.at > %(at)s AND (a.transcript_id = %(t)s OR a.transcript_id IN ("
                    "  SELECT e.transcript_id FROM kurahi.entries e, kurahi.transcripts t"
                    "  WHERE t.id = %(t)s AND e.seq = 1 AND position(convert_to(t.name, 'UTF8') IN e.line) > 0))",
                    {"at": at, "t": tid, "w": name_},
                ).fetchone()
                if row is not None and row[0] is not None:
                    rep.first_line_again.append(float(row[0]))
        rep.entries_audited = len(rows)
        if n_entries is not None and n_entries[0] != len(rows):
            rep.failures.append(f"{n_entries[0]} entries in the database, {len(rows)} audited")
        top: dict[int, tuple[int, int, str]] = {}
        for tid, seq, writer, lease_owner, token, name in rows:
            want = owner_of.get(writer)
            if want is None:
                rep.stale_writes += 1
                rep.failures.append(f"{name} line {seq} written by {writer!r}, not a gateway of the campaign")
                continue
            if lease_owner != want:
                rep.stale_writes += 1
                rep.failures.append(f"{name} line {seq} written by {writer} while the lease was {lease_owner!r}")
                continue
            prev = top.get(tid)
            if prev is not None and token < prev[0]:
                rep.stale_writes += 1
                rep.failures.append(
                    f"{name} line {seq} written by {writer} with token {token} "
                    f"after line {prev[1]} with token {prev[0]}"
                )
            if prev is not None and token == prev[0] and writer != prev[2]:
                rep.stale_writes += 1
                rep.failures.append(f"{name} line {seq}: {writer} and {prev[2]} both wrote under token {token}")
            top[tid] = (max(token, prev[0]) if prev else token, seq, writer)
        for name, t in transcripts.items():
            ids: set[str] = set()
            children: Counter[str] = Counter()
            for e in t.entries():
                d = e.data
                if d.get("type") == "session":
                    continue
                eid, parent = d.get("id"), d.get("parentId")
                if eid in ids:
                    rep.chain_breaks += 1
                    rep.failures.append(f"{name}: entry id {eid} twice")
                if parent is not None and parent not in ids:
                    rep.chain_breaks += 1
                    rep.failures.append(f"{name}: entry {eid} names parent {parent}, not an earlier entry")
                if isinstance(parent, str):
                    children[parent] += 1
                if isinstance(eid, str):
                    ids.add(eid)
            rep.forks += sum(1 for n in children.values() if n > 1)

    def _check_effects(self, catalog: dict[str, Any], transcripts: dict[str, Transcript], ledger: list[Any]) -> None:
        rep = self.report
        memory = self.root / "workspace" / "memory"
        text = "".join(p.read_text(errors="replace") for p in memory.glob("*.md")) if memory.is_dir() else ""
        tags = Counter(_TAG.findall(text))
        rep.side_effects = len(tags)
        for nonce, n in Counter(_MEMORY_NONCE.findall(text)).items():
            if n > 1:
                rep.effects_by_text_twice += 1
                rep.failures.append(f"the side effect of message {nonce} is in the memory files {n} times")
        for tag, n in tags.items():
            if n > 1:
                rep.side_effects_twice += 1
                rep.failures.append(f"side effect of {tag} ran {n} times")
        intents: Counter[str] = Counter()
        definite: Counter[str] = Counter()
        for rec in ledger:
            aid = rec.get("actionId")
            if rec.get("kind") == "intent":
                intents[aid] += 1
            elif rec.get("kind") == "outcome":
                rep.settlements[f"outcome via {rec.get('via')} ({rec.get('status')})"] += 1
                if rec.get("status") in ("ok", "error"):
                    definite[aid] += 1
        for aid, n in intents.items():
            if n > 1:
                rep.side_effects_twice += 1
                rep.failures.append(f"action {aid}: {n} intents in the ledger")
        for aid, n in definite.items():
            if n > 1:
                rep.failures.append(f"action {aid}: {n} definite outcomes in the ledger")
        for rec in ledger:
            if (
                rec.get("kind") == "outcome"
                and rec.get("via") == "lookup"
                and rec.get("status") == "error"
                and rec.get("actionId") in tags
            ):
                rep.failures.append(
                    f"action {rec.get('actionId')}: settled by a lookup as not done, but its side effect is done"
                )
        for tag in tags:
            if tag not in intents:
                rep.failures.append(f"side effect {tag} is in the workspace with no intent in the ledger")
        for name, t in transcripts.items():
            sid = t.session_id
            results: Counter[str] = Counter()
            for e in t.path():
                msg = e.data.get("message") or {}
                if e.data.get("type") == "message" and msg.get("role") == "toolResult":
                    cid = msg.get("toolCallId")
                    results[cid] += 1
                    body = json.dumps(msg.get("content"))
                    if "never started" in body and f"{sid}:{cid}" in tags:
                        rep.failures.append(f"{name}: call {cid} settled as never started, but its side effect is done")
            for cid, n in results.items():
                if n > 1:
                    rep.results_twice += 1
                    rep.failures.append(f"{name}: tool call {cid} has {n} results on the leaf path")
