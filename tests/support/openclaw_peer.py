"""A real OpenClaw from npm, driven offline, for end-to-end tests on state dirs it writes itself.

``make peer`` installs three releases, each in its own prefix under ``.peer/``:
``openclaw-2026.5.28/`` (the JSON session era: ``sessions.json`` + ``<id>.jsonl``),
``openclaw-2026.9.5/`` (the SQLite era's schema 21, which 2026.9.6 migrates; only the migration
test runs it) and ``openclaw-2026.9.6/`` (the SQLite era: ``agents/<id>/agent/openclaw-agent.sqlite``,
schema 23). They run on the node 24 that ``make peer`` puts in ``.peer/node_modules/.bin`` when
the system's is older.

:class:`OpenClawPeer` runs one of them the way a user would, but sealed off:

- its only model provider is a :class:`~openclaw_model.StandInModel` on loopback that logs
  every request body (the evidence of what OpenClaw really sent the model);
- HOME, the state dir and the logs live under the folder the test gives it;
- every non-loopback fetch goes to a proxy address on loopback where nothing listens;
- ``openclaw gateway run --bind loopback`` is started in a process group of its own, ready when
  its ``/readyz`` answers 200 (polled against a deadline), stopped by SIGTERM, and the whole
  group is killed on :meth:`OpenClawPeer.close` whatever happened before;
- turns and resets go through OpenClaw's own CLI (``openclaw agent --session-key ...``).

``docs/openclaw-peer.md`` says how it works and what OpenClaw does in each era.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from kurahi.continuity.targets.openclaw.runtime import free_port
from support.openclaw_model import MODEL_ID, StandInModel, request_messages, text_of
from support.peer import PEER_DIR
from support.tiers import no_peer_in_the_fast_tier

OpenClawVersion = Literal["2026.5.28", "2026.9.4", "2026.9.5", "2026.9.6"]
OPENCLAW_VERSIONS: tuple[OpenClawVersion, ...] = ("2026.5.28", "2026.9.6")
"""The releases every peer suite runs on (2026.9.5 only starts in the migration test)."""
JSON_ERA: OpenClawVersion = "2026.5.28"
SQLITE_ERA: OpenClawVersion = "2026.9.6"
SCHEMA_19: OpenClawVersion = "2026.9.4"
"""The newest release whose store is schema 19 (2026.8.1-2026.9.4 write it). ``make peer`` does not
install it: only ``python tests/support/openclaw_samples.py schema19 OUT``, run by hand with it
installed beside the others, starts it (the ``2026.9.4-reset`` sample)."""
SCHEMA_21: OpenClawVersion = "2026.9.5"
"""The SQLite era's release whose store (schema 21) 2026.9.6 migrates when its gateway starts on it."""
MIN_NODE: dict[OpenClawVersion, tuple[int, int]] = {
    "2026.5.28": (24, 0),
    "2026.9.4": (24, 16),
    "2026.9.5": (24, 16),
    "2026.9.6": (24, 16),
}
"""The node each release needs: 2026.9.4's, 2026.9.5's and 2026.9.6's ``engines`` say 24.16; 2026.5.28's says
22.19, but it has only been run offline on 24, so the harness asks for 24 (``make peer`` provides it)."""

AGENT = "main"
MAIN_KEY = f"agent:{AGENT}:main"
SQLITE_STORE = Path("agents") / AGENT / "agent" / "openclaw-agent.sqlite"
"""Where 2026.9 keeps an agent's sessions, relative to the state dir."""
SESSIONS_DIR = Path("agents") / AGENT / "sessions"
"""Where 2026.5 keeps an agent's catalog and transcripts (and where leftovers stay after an upgrade)."""

START_DEADLINE = 180.0
TURN_DEADLINE = 180.0
STOP_DEADLINE = 60.0
DAILY_AT_HOUR = 4
"""The hour of a daily reset policy (OpenClaw's default)."""
CLOCK_SHIFT = Path(__file__).resolve().parent / "clock_shift.cjs"
"""Preloaded into OpenClaw's processes when a peer's clock is shifted: ``Date`` reads real time
plus ``KURAHI_CLOCK_SHIFT_MS``. It is how a test makes a daily reset boundary lie between two
turns without waiting for the hour."""
CONTEXT_WINDOW = 128_000
"""The stand-in's ``contextWindow`` unless a peer is given another (a small one makes a short
history overflow it)."""
IDLE_MINUTES = 10 * 365 * 24 * 60
"""The idle reset window the harness configures unless told otherwise: ten years, so that no
session rolls over during a test unless the test asks for it (OpenClaw's smallest is 1). It was a
week, and the kept samples age with the repository: a week after `2026.5.28-upgraded` was made,
OpenClaw rolled its activated session over on the next turn and the repair test failed."""


class OpenClawUnavailable(RuntimeError):
    """OpenClaw cannot run here; :attr:`skip` says whether that is the machine's lack (no node or
    npm at all, a loud skip) or a missing ``make peer`` (a failure)."""

    def __init__(self, reason: str, *, skip: bool) -> None:
        super().__init__(reason)
        self.skip = skip


class OpenClawError(RuntimeError):
    """A real OpenClaw did not do what the harness asked (its output tail is in the message)."""


OpenClawFactory = Callable[..., "OpenClawPeer"]
"""What the ``openclaw`` fixture gives a test: ``openclaw(version, root=None, **options)``."""


def package_dir(version: OpenClawVersion) -> Path:
    """Where ``make peer`` puts this release."""
    return PEER_DIR / f"openclaw-{version}" / "node_modules" / "openclaw"


@functools.cache
def _node_version(node: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    except OSError:
        return None
    parts = out.strip().lstrip("v").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def find_node(version: OpenClawVersion) -> str | None:
    """A node new enough for ``version``: ``.peer``'s own first, then the system's."""
    for candidate in (PEER_DIR / "node_modules" / ".bin" / "node", shutil.which("node")):
        if candidate is not None and Path(candidate).exists():
            found = _node_version(str(candidate))
            if found is not None and found >= MIN_NODE[version]:
                return str(candidate)
    return None


def unavailable(version: OpenClawVersion) -> OpenClawUnavailable | None:
    """Why ``version`` cannot run here, or ``None`` when it can.

    Only a machine without node or npm is a reason to skip: there ``make peer`` cannot install
    anything. With npm present, a missing package or node 24 means ``make peer`` was not run,
    which must fail rather than pass as a skip.
    """
    if shutil.which("node") is None and not (PEER_DIR / "node_modules" / ".bin" / "node").exists():
        return OpenClawUnavailable("node is not installed: the OpenClaw peer tests need node and npm", skip=True)
    if shutil.which("npm") is None and find_node(version) is None:
        return OpenClawUnavailable("npm is not installed: `make peer` cannot install OpenClaw here", skip=True)
    if find_node(version) is None:
        need = ".".join(map(str, MIN_NODE[version]))
        return OpenClawUnavailable(f"OpenClaw {version} needs node >= {need}: run `make peer`", skip=False)
    pkg = package_dir(version)
    try:
        found = json.loads((pkg / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        return OpenClawUnavailable(f"OpenClaw {version} is not installed at {pkg}: run `make peer`", skip=False)
    if found != version:
        return OpenClawUnavailable(f"{pkg} holds OpenClaw {found}, not {version}: run `make peer`", skip=False)
    if not (pkg.parents[1] / ".complete").exists():
        why = f"the install of OpenClaw {version} at {pkg} is unfinished: run `make peer`"
        return OpenClawUnavailable(why, skip=False)
    return None


def require(version: OpenClawVersion) -> None:
    """In a test: skip loudly when this machine cannot have OpenClaw (no node, no npm), fail
    when ``make peer`` was not run."""
    import pytest  # only tests call this; the harness itself does not need pytest

    no_peer_in_the_fast_tier(f"OpenClaw {version}")
    why = unavailable(version)
    if why is None:
        return
    if why.skip:
        pytest.skip(f"!!! {why} !!!")
    pytest.fail(str(why), pytrace=False)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no output)"
    return "\n".join(text.splitlines()[-lines:])


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    # Every OpenClaw process is started as the leader of its own session, so its group id is its
    # pid; killing the group also reaches the children it spawned (workers, plugin hosts).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


def _session_id(doc: Any) -> str | None:
    """The first ``sessionId`` in ``openclaw agent --json`` output (it sits in the run's metadata,
    whose shape differs between releases)."""
    if isinstance(doc, dict):
        found = doc.get("sessionId")
        if isinstance(found, str):
            return found
        doc = list(doc.values())
    if isinstance(doc, list):
        for value in doc:
            if (found := _session_id(value)) is not None:
                return found
    return None


def phrases_in(body: dict[str, Any], phrases: Iterable[str]) -> set[str]:
    """Which of ``phrases`` appear in the text of a logged request's messages (any role)."""
    texts = [text_of(m.get("content")) for m in request_messages(body)]
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        texts.append(instructions)
    joined = "\n".join(texts)
    return {p for p in phrases if p in joined}


def read_sqlite_copy(db: Path, scratch: Path, query: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Run ``query`` on a private copy of an SQLite store (with its ``-wal``), never on the store.

    Opening OpenClaw's own file would rewrite its ``-shm``; a copy leaves its dir untouched.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    copy = scratch / db.name
    for suffix in ("", "-wal"):
        src = db.with_name(db.name + suffix)
        dst = copy.with_name(copy.name + suffix)
        dst.unlink(missing_ok=True)
        if src.exists():
            shutil.copyfile(src, dst)
    con = sqlite3.connect(copy)
    try:
        return con.execute(query, tuple(args)).fetchall()
    finally:
        con.close()


class OpenClawPeer:
    """One OpenClaw release run on a private state dir against the stand-in model.

    ``root`` holds ``home/`` (HOME), ``state/`` (OPENCLAW_STATE_DIR, with ``openclaw.json``),
    ``logs/`` (the gateway's and every CLI call's output, the model request log). Two peers may
    share a root one after the other: that is how a state dir is upgraded from one release to
    the next (:meth:`upgrade_from`). Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        version: OpenClawVersion,
        root: Path,
        *,
        idle_minutes: int = IDLE_MINUTES,
        models: Sequence[str] = (MODEL_ID,),
        context_window: int = CONTEXT_WINDOW,
        reset_mode: Literal["idle", "daily"] = "idle",
        http_api: bool = False,
    ) -> None:
        no_peer_in_the_fast_tier(f"OpenClaw {version}")
        why = unavailable(version)
        if why is not None:
            raise why
        node = find_node(version)
        assert node is not None
        self.version: OpenClawVersion = version
        self.node = node
        self.package = package_dir(version)
        self.root = root
        self.home = root / "home"
        self.state_dir = root / "state"
        self.logs = root / "logs"
        for folder in (self.home, self.state_dir, self.logs):
            folder.mkdir(parents=True, exist_ok=True)
        self.idle_minutes = idle_minutes
        self.models = tuple(models)
        """The stand-in's model ids the config offers (the first is the default)."""
        self.context_window = context_window
        """The ``contextWindow`` (tokens) the config gives the stand-in's models."""
        self.reset_mode = reset_mode
        """``idle`` (after :attr:`idle_minutes`) or ``daily`` (at :data:`DAILY_AT_HOUR`, local time)."""
        self.http_api = http_api
        """Whether the gateway's OpenAI-compatible ``/v1/chat/completions`` is on (:meth:`http_turn`)."""
        self.clock_shift_hours = 0.0
        """How far from the real time the wall clock of the OpenClaw processes started from now on
        reads (:data:`CLOCK_SHIFT`); a negative shift makes what they do happen in the past."""
        self.last_turn_at: float | None = None
        """Wall-clock time (``time.time()``) at which the last turn's reply came back."""
        self.turn_log: list[dict[str, Any]] = []
        """Each turn and reset, oldest first, as ``cap/turns.jsonl`` of the samples logs them:
        ``message``, ``status``, the ``sessionId`` that answered (none for a reset by RPC), the
        ``replies``."""
        self.model = StandInModel(self.logs / f"model-requests-{version}.jsonl")
        self.port = 0
        self._token = secrets.token_hex(16)
        self._dead_proxy: socket.socket | None = None
        self._gateway: subprocess.Popen[bytes] | None = None
        self._gateway_log = self.logs / f"gateway-{version}.log"
        self._calls = 0

    def __repr__(self) -> str:
        return f"OpenClawPeer({self.version!r}, {str(self.root)!r})"

    def __enter__(self) -> OpenClawPeer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- environment -------------------------------------------------------------------

    @property
    def era(self) -> Literal["json", "sqlite"]:
        """Where this release keeps sessions."""
        return "json" if self.version == JSON_ERA else "sqlite"

    def _blocked_proxy(self) -> str:
        # A loopback port that is bound but never listens refuses every connection at once, so a
        # fetch that would leave the machine fails fast instead of hanging or reaching out.
        if self._dead_proxy is None:
            self._dead_proxy = socket.socket()
            self._dead_proxy.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{self._dead_proxy.getsockname()[1]}"

    def env(self) -> dict[str, str]:
        """The environment of every OpenClaw process: sealed HOME and state, no updates, no
        channels, no outside network, no model keys of the person running the tests."""
        keep = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "SYSTEMROOT")
        env = {k: v for k, v in os.environ.items() if k in keep}
        proxy = self._blocked_proxy()
        loopback = "127.0.0.1,localhost,::1"
        env |= {
            "PATH": f"{Path(self.node).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(self.home),
            "OPENCLAW_STATE_DIR": str(self.state_dir),
            "OPENCLAW_GATEWAY_TOKEN": self._token,
            "OPENCLAW_NO_AUTO_UPDATE": "1",
            "OPENCLAW_OFFLINE": "1",
            "OPENCLAW_DISABLE_BONJOUR": "1",
            "OPENCLAW_SKIP_CHANNELS": "1",
            "OPENCLAW_SKIP_CRON": "1",
            "OPENCLAW_SKIP_GMAIL_WATCHER": "1",
            "OPENCLAW_SKIP_CANVAS_HOST": "1",
            "OPENCLAW_SKIP_ACPX_RUNTIME_PROBE": "1",
            "OPENCLAW_NO_RESPAWN": "1",
            "NODE_USE_ENV_PROXY": "1",
            "HTTP_PROXY": proxy,
            "HTTPS_PROXY": proxy,
            "http_proxy": proxy,
            "https_proxy": proxy,
            "NO_PROXY": loopback,
            "no_proxy": loopback,
        }
        if self.clock_shift_hours:
            env["NODE_OPTIONS"] = f"--require {CLOCK_SHIFT}"
            env["KURAHI_CLOCK_SHIFT_MS"] = str(int(self.clock_shift_hours * 3_600_000))
        return env

    def write_config(self) -> Path:
        """Write ``openclaw.json``: the stand-in as the only model provider, the gateway on
        loopback, an explicit reset policy.

        A config already there (one an earlier release or its doctor wrote) is kept and only
        these settings are set in it, as a user's edits would be.
        """
        path = self.state_dir / "openclaw.json"
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            config = {}
        provider = {
            "baseUrl": self.model.base_url,
            "apiKey": "stand-in-key",
            "api": "openai-completions",
            "models": [
                {
                    "id": model,
                    "name": "Stand-in" if model == MODEL_ID else f"Stand-in {model}",
                    "reasoning": False,
                    "input": ["text"],
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                    "contextWindow": self.context_window,
                    "maxTokens": 4096,
                }
                for model in self.models
            ],
        }
        config.setdefault("update", {})["checkOnStart"] = False
        config.setdefault("logging", {})["file"] = str(self.logs / f"openclaw-{self.version}.log")
        gateway = config.setdefault("gateway", {})
        gateway |= {"mode": "local", "bind": "loopback", "port": self.port}
        gateway.setdefault("auth", {})["mode"] = "token"
        if self.http_api:
            endpoints = gateway.setdefault("http", {}).setdefault("endpoints", {})
            endpoints.setdefault("chatCompletions", {})["enabled"] = True
        # No browser UI: 2026.9 would otherwise unpack ~50 MB of its assets into every state dir.
        gateway.setdefault("controlUi", {})["enabled"] = False
        # Without a policy OpenClaw resets every session daily at 04:00 local time, which would
        # make a test that runs across that hour see a rollover nobody asked for.
        policy = {"mode": "idle", "idleMinutes": self.idle_minutes}
        if self.reset_mode == "daily":
            policy = {"mode": "daily", "atHour": DAILY_AT_HOUR}
        config.setdefault("session", {})["reset"] = policy
        defaults = config.setdefault("agents", {}).setdefault("defaults", {})
        defaults["workspace"] = str(self.state_dir / "workspace")
        defaults["model"] = {"primary": f"standin/{self.models[0]}"}
        models = config.setdefault("models", {})
        models["mode"] = "replace"
        models["providers"] = {"standin": provider}
        if self.version == JSON_ERA:
            models.pop("catalogRefresh", None)  # 2026.5 rejects a key it does not know
        else:
            models["catalogRefresh"] = {"enabled": False}  # else 2026.9 fetches a remote catalog
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        return path

    # ---- processes ---------------------------------------------------------------------

    def cli(self, *args: str, deadline: float = TURN_DEADLINE, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``openclaw ARGS`` (its own process group, killed whole on the deadline)."""
        self._calls += 1
        log = self.logs / f"cli-{self.version}-{self._calls:03d}-{args[0]}.log"
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [self.node, str(self.package / "openclaw.mjs"), *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                env=self.env(),
                cwd=self.root,
                start_new_session=True,
            )
            try:
                out, _ = proc.communicate(timeout=deadline)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                raise OpenClawError(f"openclaw {args[0]} took over {deadline:.0f} s:\n{_tail(log)}") from None
            finally:
                # A CLI call leaves nothing behind, whatever it spawned.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
        result = subprocess.CompletedProcess(proc.args, proc.returncode, out.decode("utf-8", "replace"), _tail(log))
        if check and result.returncode != 0:
            raise OpenClawError(
                f"openclaw {' '.join(args[:2])} exited {result.returncode}:\n{result.stdout[-2000:]}\n{result.stderr}"
            )
        return result

    @property
    def token(self) -> str:
        """The throwaway gateway token of this peer (in its processes' environment, never argv)."""
        return self._token

    @property
    def pid(self) -> int | None:
        """The gateway's process id (also its process group's), while it is started."""
        return None if self._gateway is None else self._gateway.pid

    @property
    def running(self) -> bool:
        """Whether the gateway process is alive."""
        return self._gateway is not None and self._gateway.poll() is None

    def start(self) -> None:
        """Start the stand-in model and ``openclaw gateway run --bind loopback``; return once
        ``/readyz`` answers 200 (or raise with the gateway's output when it dies or the deadline
        passes)."""
        if self.running:
            return
        self.model.start()
        self.port = free_port()
        self.write_config()
        out = self._gateway_log.open("ab")
        try:
            argv = ["gateway", "run", "--bind", "loopback", "--port", str(self.port), "--auth", "token"]
            self._gateway = subprocess.Popen(
                [self.node, str(self.package / "openclaw.mjs"), *argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env(),
                cwd=self.root,
                start_new_session=True,
            )
        finally:
            out.close()
        self._wait_ready()
        self._pair_cli()

    def _pair_cli(self) -> None:
        # The CLI is a device that the gateway pairs on its first connection: silently on
        # loopback, with the scopes that connection asks for, while a later request for more
        # scopes waits for a person to approve it. The CLI asks for the least scope a known
        # method needs (`agent`: write) but for its whole default set (admin included) when the
        # method is one it does not know. 2026.5 wants operator.admin for `/reset`, so the first
        # connection is a call of an unknown method: it fails, and leaves the CLI paired with
        # every operator scope.
        self.cli("gateway", "call", "kurahi.harness.pair-cli", "--json", check=False)

    def _wait_ready(self) -> None:
        url = f"http://127.0.0.1:{self.port}/readyz"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        end = time.monotonic() + START_DEADLINE
        while True:
            assert self._gateway is not None
            if self._gateway.poll() is not None:
                raise OpenClawError(
                    f"OpenClaw {self.version} gateway exited {self._gateway.returncode}:\n{_tail(self._gateway_log)}"
                )
            try:
                with opener.open(url, timeout=5) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass  # not listening yet, or listening but not ready (503)
            if time.monotonic() > end:
                self.close()
                raise OpenClawError(f"OpenClaw {self.version} not ready in {START_DEADLINE:.0f} s")
            # A poll interval, not a synchronisation: readiness is decided by /readyz above.
            time.sleep(0.25)

    def stop(self) -> int:
        """Stop the gateway cleanly (SIGTERM, wait), as a user's service manager does; kill its
        group if it does not end in time. Returns its exit code."""
        proc, self._gateway = self._gateway, None
        if proc is None:
            return 0
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_DEADLINE)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                raise OpenClawError(
                    f"OpenClaw {self.version} ignored SIGTERM for {STOP_DEADLINE:.0f} s:\n{_tail(self._gateway_log)}"
                ) from None
        # Anything the gateway left in its group goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        return proc.returncode

    def close(self) -> None:
        """Leave nothing running: the gateway's whole group killed, the stand-in stopped."""
        proc, self._gateway = self._gateway, None
        if proc is not None:
            _kill_group(proc)
        self.model.stop()
        if self._dead_proxy is not None:
            self._dead_proxy.close()
            self._dead_proxy = None

    # ---- conversation ------------------------------------------------------------------

    def turn(self, text: str, *, key: str = MAIN_KEY) -> str:
        """One turn through ``openclaw agent`` on session ``key``; returns the reply's text."""
        result = self.cli("agent", "--session-key", key, "--message", text, "--json")
        raw = result.stdout
        try:
            doc = json.loads(raw[raw.index("{") :])
        except ValueError:
            raise OpenClawError(f"openclaw agent printed no JSON:\n{raw[-2000:]}\n{result.stderr}") from None
        self.last_turn_at = time.time()
        body = doc.get("result") or doc
        replies = [p.get("text") for p in body.get("payloads") or [] if isinstance(p, dict)]
        texts = [r for r in replies if isinstance(r, str)]
        self.turn_log.append({"message": text, "status": "ok", "sessionId": _session_id(doc), "replies": texts})
        return "\n".join(texts)

    def http_turn(self, text: str, *, key: str = MAIN_KEY) -> str:
        """One turn through the gateway's ``/v1/chat/completions`` (``x-openclaw-session-key``:
        ``key``), as an integration sends it; returns the reply's text.

        No CLI process starts, so the turn reaches the gateway within a fraction of a second
        (``openclaw agent`` takes several seconds to start on a loaded machine). Needs the peer
        made with ``http_api=True``.
        """
        assert self.http_api, "the peer was made without http_api=True"
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/chat/completions",
            data=json.dumps({"model": "openclaw", "messages": [{"role": "user", "content": text}]}).encode(),
            headers={
                "Authorization": f"Bearer {self._token}",
                "Content-Type": "application/json",
                "x-openclaw-session-key": key,
            },
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=TURN_DEADLINE) as resp:
                doc = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise OpenClawError(f"/v1/chat/completions answered {exc.code}: {exc.read()[:2000]!r}") from None
        self.last_turn_at = time.time()
        reply = str(doc["choices"][0]["message"]["content"])
        self.turn_log.append({"message": text, "status": "ok", "sessionId": None, "replies": [reply], "via": "http"})
        return reply

    def reset(self, *, key: str = MAIN_KEY, via: Literal["command", "rpc"] | None = None) -> None:
        """Reset session ``key`` as a user does.

        ``via="command"`` sends ``/reset`` as a message (what a person types; 2026.9 accepts it
        from the CLI); ``via="rpc"`` calls the gateway's ``sessions.reset`` (what 2026.5 needs
        from the CLI: its ``agent`` connection carries only the write scope, and a reset wants
        operator.admin). The default is what the release accepts.
        """
        if via is None:
            via = "rpc" if self.version == JSON_ERA else "command"
        if via == "command":
            self.turn("/reset", key=key)
        else:
            params = json.dumps({"key": key, "reason": "reset"})
            self.cli("gateway", "call", "sessions.reset", "--params", params, "--json")
            self.turn_log.append({"message": f"<gateway call sessions.reset key={key} reason=reset>", "status": "ok"})

    def compact(self, *, key: str = MAIN_KEY) -> dict[str, Any]:
        """``openclaw sessions compact KEY --json`` through the running gateway (2026.9: the model
        is asked for a summary); returns what it printed."""
        raw = self.cli("sessions", "compact", key, "--json").stdout
        try:
            parsed = json.loads(raw[raw.index("{") :])
        except ValueError:
            raise OpenClawError(f"openclaw sessions compact printed no JSON:\n{raw[-2000:]}") from None
        if not isinstance(parsed, dict):
            raise OpenClawError(f"openclaw sessions compact printed {parsed!r}")
        return parsed

    def requests(self) -> list[dict[str, Any]]:
        """Every request body the stand-in model received from this peer, oldest first."""
        return self.model.requests()

    # ---- state dir ---------------------------------------------------------------------

    @property
    def sessions_dir(self) -> Path:
        """``agents/main/sessions`` (JSON era; leftovers after an upgrade)."""
        return self.state_dir / SESSIONS_DIR

    @property
    def sqlite_store(self) -> Path:
        """``agents/main/agent/openclaw-agent.sqlite`` (SQLite era)."""
        return self.state_dir / SQLITE_STORE

    def doctor(self, *args: str, deadline: float = TURN_DEADLINE) -> subprocess.CompletedProcess[str]:
        """``openclaw doctor ARGS`` on this state dir (the gateway must be stopped)."""
        assert not self.running, "openclaw doctor runs with the gateway stopped"
        return self.cli("doctor", *args, deadline=deadline)


def wait_past_idle_window(peer: OpenClawPeer) -> None:
    """Let the idle window after ``peer``'s last turn run out on the wall clock.

    This is time passing in the scenario (a user away longer than ``idle_minutes``), not a
    stand-in for synchronisation: OpenClaw decides staleness from real timestamps.
    """
    assert peer.last_turn_at is not None, "no turn yet"
    expires = peer.last_turn_at + peer.idle_minutes * 60 + 2
    while (left := expires - time.time()) > 0:
        time.sleep(min(left, 5.0))


def build_upgraded_dir(
    root: Path, *, pre_reset: Sequence[str], post_reset: Sequence[str], after_idle: str
) -> tuple[OpenClawPeer, subprocess.CompletedProcess[str]]:
    """A state dir a user ran on 2026.5.28 and then upgraded to 2026.9.6.

    On 2026.5.28 (idle reset window of one minute): a turn per ``pre_reset`` text, a reset,
    a turn per ``post_reset`` text, stop; then, past the idle window, start again and say
    ``after_idle`` (OpenClaw rolls the key over to a new session and leaves the post-reset
    transcript behind, unrenamed and referenced by nothing), stop. Then 2026.9.6's own upgrade
    path: ``openclaw doctor --fix --non-interactive`` with the gateway stopped, which imports the
    sessions into SQLite, keeps the pre-reset ``<id>.jsonl.reset.<ts>`` archive in ``sessions/``
    and files the orphan under ``agent:main:recovered:<id>``.

    Returns the 2026.9.6 peer (not started) and the doctor's result. Costs a minute of idle time.
    """
    with OpenClawPeer(JSON_ERA, root, idle_minutes=1) as old:
        old.start()
        for text in pre_reset:
            old.turn(text)
        old.reset()
        for text in post_reset:
            old.turn(text)
        old.stop()
        old.start()  # started inside the idle window: its start-up time is not waited twice
        wait_past_idle_window(old)
        old.turn(after_idle)
        old.stop()
    new = OpenClawPeer(SQLITE_ERA, root)
    return new, new.doctor("--fix", "--non-interactive", deadline=300)
