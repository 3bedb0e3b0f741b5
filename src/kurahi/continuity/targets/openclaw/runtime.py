"""Driving an OpenClaw gateway through OpenClaw's own surfaces, for the continuity suite.

Kurahi never changes an OpenClaw state dir by itself here: every change goes through OpenClaw
(``openclaw gateway run`` for the process, ``openclaw agent`` for a turn, ``openclaw gateway
call sessions.reset`` for a reset, ``openclaw gateway call config.patch`` for a model swap).

**Supervised** (the default): Kurahi starts ``openclaw gateway run --bind loopback`` on a
free port with ``OPENCLAW_STATE_DIR`` set, and a gateway token it draws for the run. The token
is passed in the environment (``OPENCLAW_GATEWAY_TOKEN``) of the gateway and of each CLI call,
never on a command line, never in a file. **Attached**: the gateway already runs; the CLI
finds it as the user's own CLI does (the config's port, ``OPENCLAW_GATEWAY_PORT``) with the
user's ``OPENCLAW_GATEWAY_TOKEN``, and a restart is OpenClaw's own ``gateway.restart.request``.

Both releases answer ``/readyz`` without a token with the gateway server's ``uptimeMs``, which
starts again at every restart, in process or not: the time the serving server started
(:meth:`OpenClawRuntime.server_started_ms`) is what proves a restart Kurahi did not do itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from kurahi.errors import ContinuityError, UsageError
from kurahi.runtimes.openclaw.versions import DRIVEN_VERSIONS, facts, known

__all__ = [
    "DEFAULT_PORT",
    "DRIVEN_VERSIONS",
    "OpenClawRuntime",
    "attached_port",
    "free_port",
    "openclaw_version",
    "which_openclaw",
]


START_DEADLINE = 180.0
CALL_DEADLINE = 180.0
STOP_DEADLINE = 60.0
DEFAULT_PORT = 18789
"""The port both known releases listen on when neither the config nor the environment names one."""
_VERSION = re.compile(r"\b(\d{4}\.\d{1,2}\.\d{1,2})\b")
_TOKEN_ENV = "OPENCLAW_GATEWAY_TOKEN"


def openclaw_version(binary: str) -> str:
    """The release of ``binary`` (``openclaw --version``), refused unless Kurahi knows it.

    Raises:
        UsageError: not found, not runnable, no version in its output, or a release Kurahi does not know.
    """
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"--openclaw-bin {binary}: cannot run it ({exc})") from exc
    found = _VERSION.search(out.stdout)
    if out.returncode != 0 or found is None:
        raise UsageError(f"--openclaw-bin {binary}: `--version` printed no OpenClaw version (exit {out.returncode})")
    version = found.group(1)
    if not known(version):
        raise UsageError(f"OpenClaw {version} is a release Kurahi does not know; it knows {', '.join(DRIVEN_VERSIONS)}")
    return version


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (for a gateway about to bind it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"


def _json_in(text: str) -> Any:
    """The JSON document a CLI printed (after any banner lines)."""
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        return json.loads(text[start:])
    except ValueError:
        return None


class OpenClawRuntime:
    """One OpenClaw gateway on one state dir, supervised or attached.

    Args:
        binary: the ``openclaw`` executable.
        state_dir: the state dir (``OPENCLAW_STATE_DIR``).
        supervised: start and stop the gateway here.
        logs: where the gateway's output and each call's stderr go (a private temp dir by default).
    """

    def __init__(
        self,
        binary: str,
        state_dir: Path,
        *,
        supervised: bool,
        logs: Path | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.binary = binary
        self.version = openclaw_version(binary)
        self.state_dir = state_dir
        self.supervised = supervised
        self.logs = logs or Path(tempfile.mkdtemp(prefix="kurahi-openclaw-"))
        self.logs.mkdir(parents=True, exist_ok=True)
        self.port = 0
        if supervised:
            self.token = secrets.token_hex(24)
        else:
            given = os.environ.get(_TOKEN_ENV)
            if not given:
                raise UsageError(f"attached mode needs the gateway's token in {_TOKEN_ENV} (never a flag)")
            self.token = given
            self.port = attached_port(config or {}, where=state_dir / "openclaw.json")
        self.outputs: list[tuple[str, str]] = []
        """``(what, text)`` of everything OpenClaw printed to the suite, for the leak scan."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._calls = 0

    # -- environment ----------------------------------------------------------------------------

    def env(self, *, token: str | None = None) -> dict[str, str]:
        """The caller's environment with this state dir, this gateway and its token."""
        env = dict(os.environ)
        env["OPENCLAW_STATE_DIR"] = str(self.state_dir)
        env[_TOKEN_ENV] = self.token if token is None else token
        if self.port:
            env["OPENCLAW_GATEWAY_PORT"] = str(self.port)
        # OpenClaw respawns itself on some restarts; the suite must own the one process it watches.
        env["OPENCLAW_NO_RESPAWN"] = "1"
        return env

    # -- the gateway process (supervised) -----------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The supervised gateway's pid."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the gateway; return once ``/readyz`` answers 200.

        Raises:
            ContinuityError: it exited or was not ready in time (with the tail of its output).
        """
        if self._proc is not None:
            return
        self.port = free_port()
        log = self.logs / "gateway.log"
        with log.open("ab") as out:
            self._proc = subprocess.Popen(
                [self.binary, "gateway", "run", "--bind", "loopback", "--port", str(self.port), "--auth", "token"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env(),
                cwd=self.state_dir,
                start_new_session=True,
            )
        self._wait_ready(log)
        # The CLI pairs with the gateway on its first connection, silently on loopback, with
        # the scopes that connection asks for; a method the CLI does not know makes it ask for
        # its whole operator set, which sessions.reset (operator.admin) needs on 2026.5.
        self.call("kurahi.continuity.pair", check=False)

    def _wait_ready(self, log: Path) -> None:
        import httpx

        end = time.monotonic() + START_DEADLINE
        while True:
            assert self._proc is not None
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                raise ContinuityError(f"the OpenClaw {self.version} gateway did not start (exit {code}):\n{_tail(log)}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=5, trust_env=False).status_code == 200:
                    return
            except httpx.HTTPError:
                pass  # not listening yet, or not ready (503)
            if time.monotonic() > end:
                self.kill()
                raise ContinuityError(f"the OpenClaw gateway was not ready in {START_DEADLINE:.0f} s:\n{_tail(log)}")
            time.sleep(0.25)  # a poll interval; readiness is decided by /readyz above

    def server_started_ms(self) -> int | None:
        """When the gateway server now answering started (ms since the epoch), from ``/readyz``.

        ``None`` when it does not answer ready, or publishes no ``uptimeMs``.
        """
        import httpx

        if not self.port:
            return None
        try:
            r = httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=5, trust_env=False)
            uptime = r.json().get("uptimeMs") if r.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        if isinstance(uptime, bool) or not isinstance(uptime, int | float):
            return None
        return time.time_ns() // 1_000_000 - int(uptime)

    def request_restart(self) -> dict[str, Any]:
        """Restart the gateway through OpenClaw's own ``gateway.restart.request``.

        It returns once a gateway server that started after the request answers ready, with
        ``requestedAt`` (ms), ``startedAt`` (the new server's start, ms) and what OpenClaw
        answered (``pid``, ``signal``).

        Raises:
            ContinuityError: OpenClaw refused, or no restarted server was ready in time.
        """
        asked = time.time_ns() // 1_000_000
        doc = self.call("gateway.restart.request", {"reason": "kurahi continuity suite: restart"})
        answer: dict[str, Any] = {}
        if isinstance(doc, dict) and isinstance(doc.get("restart"), dict):
            answer = doc["restart"]
        end = time.monotonic() + START_DEADLINE
        while (started := self.server_started_ms()) is None or started <= asked:
            if time.monotonic() > end:
                raise ContinuityError(
                    f"OpenClaw accepted gateway.restart.request but no restarted gateway was ready in "
                    f"{START_DEADLINE:.0f} s (port {self.port})"
                )
            time.sleep(0.25)  # a poll interval; the restart is decided by the server's start time
        return {"requestedAt": asked, "startedAt": started, "pid": answer.get("pid"), "signal": answer.get("signal")}

    def stop(self) -> int | None:
        """SIGTERM the gateway and wait for it (kill its group past the deadline)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_DEADLINE)
            except subprocess.TimeoutExpired:
                self._kill_group(proc)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever it left in its group
        return proc.returncode

    def kill(self) -> None:
        """Leave nothing running, whatever happened."""
        proc, self._proc = self._proc, None
        if proc is not None:
            self._kill_group(proc)

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)

    def move_to(self, new_dir: Path) -> None:
        """Point every later process at ``new_dir`` (the caller renamed the state dir)."""
        self.state_dir = new_dir

    # -- the CLI ----------------------------------------------------------------------------------

    def cli(
        self, *args: str, token: str | None = None, deadline: float = CALL_DEADLINE
    ) -> subprocess.CompletedProcess[str]:
        """``openclaw ARGS`` in a process group of its own, killed whole when it returns or times out."""
        self._calls += 1
        err_path = self.logs / f"cli-{self._calls:03d}-{args[0]}.log"
        with err_path.open("wb") as err:
            proc = subprocess.Popen(
                [self.binary, *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                env=self.env(token=token),
                cwd=self.state_dir,
                start_new_session=True,
            )
            try:
                out, _ = proc.communicate(timeout=deadline)
            except subprocess.TimeoutExpired:
                self._kill_group(proc)
                raise ContinuityError(f"openclaw {args[0]} took over {deadline:.0f} s") from None
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
        text = out.decode("utf-8", "replace")
        stderr = _tail(err_path)
        self.outputs.append((f"openclaw {' '.join(args[:3])}", text + "\n" + stderr))
        return subprocess.CompletedProcess(proc.args, proc.returncode, text, stderr)

    def call(self, method: str, params: dict[str, Any] | None = None, *, check: bool = True) -> Any:
        """``openclaw gateway call METHOD --params JSON --json``; the decoded answer.

        Raises:
            ContinuityError: with ``check``, OpenClaw refused or failed (its own message).
        """
        args = ["gateway", "call", method, "--json"]
        if params is not None:
            args += ["--params", json.dumps(params)]
        res = self.cli(*args)
        doc = _json_in(res.stdout)
        if check and (res.returncode != 0 or (isinstance(doc, dict) and doc.get("ok") is False)):
            raise ContinuityError(f"OpenClaw refused {method}: {_refusal(doc, res)}")
        return doc

    def turn(self, key: str, text: str) -> str:
        """One turn on session ``key`` through ``openclaw agent``; the reply's text."""
        res = self.cli("agent", "--session-key", key, "--message", text, "--json")
        doc = _json_in(res.stdout)
        if res.returncode != 0 or not isinstance(doc, dict):
            raise ContinuityError(f"openclaw agent failed (exit {res.returncode}): {_refusal(doc, res)}")
        result = doc.get("result")
        body: dict[str, Any] = result if isinstance(result, dict) else doc
        replies = [p.get("text") for p in body.get("payloads") or [] if isinstance(p, dict)]
        return "\n".join(r for r in replies if isinstance(r, str))

    def reset(self, key: str) -> dict[str, Any]:
        """``sessions.reset`` of ``key`` through the gateway RPC (both releases take it)."""
        doc = self.call("sessions.reset", {"key": key, "reason": "reset"})
        return doc if isinstance(doc, dict) else {}

    def compact(self, key: str) -> dict[str, Any]:
        """Compact session ``key`` as OpenClaw's user does: ``openclaw sessions compact KEY``.

        That is its ``sessions.compact`` RPC; the configured model writes the summary.

        Raises:
            ContinuityError: OpenClaw refused or the compaction failed (its own message).
        """
        res = self.cli("sessions", "compact", key, "--json", deadline=CALL_DEADLINE)
        doc = _json_in(res.stdout)
        if res.returncode != 0 or (isinstance(doc, dict) and doc.get("ok") is False):
            raise ContinuityError(f"OpenClaw refused to compact {key}: {_refusal(doc, res)}")
        return doc if isinstance(doc, dict) else {}

    def user_reset(self, key: str) -> str:
        """Reset ``key`` as its user does: ``/reset`` typed into the session (2026.9), else the RPC.

        2026.5's ``agent`` connection lacks the admin scope a typed ``/reset`` needs, so there
        the user's way from the CLI is ``sessions.reset``.
        """
        release = facts(self.version)
        if release is not None and release.reset_by_rpc:
            self.reset(key)
            return "sessions.reset"
        res = self.cli("agent", "--session-key", key, "--message", "/reset", "--json")
        if res.returncode != 0:
            raise ContinuityError(f"OpenClaw refused /reset: {_refusal(_json_in(res.stdout), res)}")
        return "/reset typed into the session"

    def set_model(self, ref: str) -> dict[str, Any]:
        """Put the default agent on model ``ref`` through ``config.patch``.

        ``config.patch`` is the merge form of ``config.apply`` (same parameters, same write
        and reload path in the gateway): it carries only the change, so no secret of the
        config ever passes through a command line.
        """
        current = self.call("config.get", {})
        base = current.get("hash") if isinstance(current, dict) else None
        params: dict[str, Any] = {"raw": json.dumps({"agents": {"defaults": {"model": {"primary": ref}}}})}
        if isinstance(base, str):
            params["baseHash"] = base
        doc = self.call("config.patch", params)
        return doc if isinstance(doc, dict) else {}

    def wrong_token(self) -> dict[str, Any]:
        """What the gateway says to a caller with a wrong token (it must refuse)."""
        res = self.cli("gateway", "call", "health", "--json", token="kurahi-wrong-" + secrets.token_hex(8))
        doc = _json_in(res.stdout)
        err = doc.get("error") if isinstance(doc, dict) else None
        details = err.get("details") if isinstance(err, dict) else None
        code = details.get("code") if isinstance(details, dict) else None
        refused = res.returncode != 0 and not (isinstance(doc, dict) and doc.get("ok") is True)
        return {"refused": refused, "code": code or (err.get("code") if isinstance(err, dict) else None)}


def _refusal(doc: Any, res: subprocess.CompletedProcess[str]) -> str:
    err = doc.get("error") if isinstance(doc, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])[:300]
    lines = [ln for ln in (res.stderr or "").splitlines() if ln.strip()]
    return (lines[-1] if lines else res.stdout.strip()[-300:]) or f"exit {res.returncode}"


def attached_port(config: dict[str, Any], *, where: Path | str = "openclaw.json") -> int:
    """The port a running gateway listens on, found as OpenClaw's CLI finds it.

    ``OPENCLAW_GATEWAY_PORT``, else ``gateway.port`` of the state dir's config (``config``,
    as :func:`~kurahi.continuity.targets.openclaw.manifest.open_state` read it; ``where`` names it in
    an error), else :data:`DEFAULT_PORT`.

    Raises:
        UsageError: a port that is not a number from 1 to 65535.
    """
    given: Any = os.environ.get("OPENCLAW_GATEWAY_PORT")
    named = "OPENCLAW_GATEWAY_PORT"
    if not given:
        gateway = config.get("gateway")
        given = gateway.get("port") if isinstance(gateway, dict) else None
        named = f"{where}: gateway.port"
    if given is None or given == "":
        return DEFAULT_PORT
    try:
        port = int(given)
    except (TypeError, ValueError):
        port = 0
    if isinstance(given, bool) or not 0 < port < 65536:
        raise UsageError(f"{named}: {given!r} is not a port")
    return port


def which_openclaw(given: str | None) -> str:
    """The ``openclaw`` to run: ``--openclaw-bin``, else the one on PATH.

    Raises:
        UsageError: none found.
    """
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise UsageError(f"--openclaw-bin {given}: no such file")
        return str(path)
    found = shutil.which("openclaw")
    if found is None:
        raise UsageError("no `openclaw` on PATH; install OpenClaw or pass --openclaw-bin")
    return found
