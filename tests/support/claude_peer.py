"""The real Claude Code from npm, run offline, for tests on sessions it writes itself.

``make peer`` installs ``@anthropic-ai/claude-code@2.1.332`` into ``.peer/claude-code-2.1.332/``
with scripts off; the CLI is the native binary of the platform package npm picked
(``node_modules/@anthropic-ai/claude-code-linux-x64/claude``), run directly: no node at run
time. :class:`ClaudePeer` runs it the way a user would, but sealed off:

- its only API is a :class:`~support.claude_api.MessagesStandIn` on loopback
  (``ANTHROPIC_BASE_URL``), shared by every peer of a test run; each run of the CLI carries
  an API key of its own, so the requests it made are told apart from any other's;
- ``HOME`` and ``TMPDIR`` are throwaway folders under the test's; the environment keeps only
  ``PATH`` and the locale of the caller, and turns off telemetry, non-essential traffic,
  the auto-updater and error reporting, without which the CLI tries ``api.anthropic.com``;
- each run is ``claude -p PROMPT --output-format json`` (plus ``--session-id``,
  ``--resume``, ``--continue``, ``--resume-session-at``, ``/compact`` as asked) in the
  project folder, with its own deadline, stdin closed, and the Bash tool allowed for
  ``echo`` only.

A session's transcript is ``$HOME/.claude/projects/<slug>/<session-id>.jsonl``, the slug being
the real cwd with every character that is not a letter or digit replaced by ``-``
(:func:`slug`). :meth:`ClaudePeer.next_request` is the premise test's probe: ``claude --resume
SID -p PROMPT`` and the body of the request it sent, i.e. the messages the model would see.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.claude_api import MessagesStandIn, Request
from support.peer import PEER_DIR
from support.tiers import no_peer_in_the_fast_tier

CLAUDE_VERSION = "2.1.332"
PREFIX = PEER_DIR / f"claude-code-{CLAUDE_VERSION}"
"""Where ``make peer`` installs it (``.complete`` is made only after a whole install)."""
WRAPPER = PREFIX / "node_modules" / "@anthropic-ai" / "claude-code"
RUN_DEADLINE = 180.0
"""Seconds one run of the CLI may take (a turn takes about one here; a loaded machine, more)."""
ALLOWED_TOOLS = "Bash(echo:*)"
"""What the CLI may run without asking: the stand-in's tool calls are ``echo`` commands."""
QUIET = {
    "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
"""Without these the CLI tries ``api.anthropic.com`` (and carries on after ``ENOTFOUND``)."""


class ClaudeUnavailable(RuntimeError):
    """Claude Code cannot run here; :attr:`skip` says whether that is the machine's lack (no npm,
    a loud skip) or a missing ``make peer`` (a failure)."""

    def __init__(self, reason: str, *, skip: bool) -> None:
        super().__init__(reason)
        self.skip = skip


class ClaudeError(RuntimeError):
    """The real CLI did not do what the harness asked (its output is in the message)."""


def binary() -> Path | None:
    """The native CLI npm installed for this platform, or ``None``."""
    for candidate in sorted((PREFIX / "node_modules" / "@anthropic-ai").glob("claude-code-*/claude")):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def unavailable() -> ClaudeUnavailable | None:
    """Why Claude Code cannot run here, or ``None`` when it can.

    Only a machine without npm, where ``make peer`` cannot install it, is a reason to skip;
    with npm present, a missing or unfinished install means ``make peer`` was not run, which
    must fail rather than pass as a skip (as for OpenClaw).
    """
    try:
        found = json.loads((WRAPPER / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        found = None
    if found is None and shutil.which("npm") is None:
        return ClaudeUnavailable("npm is not installed: `make peer` cannot install Claude Code here", skip=True)
    if found is None:
        why = f"Claude Code {CLAUDE_VERSION} is not installed at {PREFIX}: run `make peer`"
        return ClaudeUnavailable(why, skip=False)
    if found != CLAUDE_VERSION:
        why = f"{PREFIX} holds Claude Code {found}, not {CLAUDE_VERSION}: run `make peer`"
        return ClaudeUnavailable(why, skip=False)
    if not (PREFIX / ".complete").exists():
        why = f"the install of Claude Code {CLAUDE_VERSION} at {PREFIX} is unfinished: run `make peer`"
        return ClaudeUnavailable(why, skip=False)
    if binary() is None:
        why = f"{PREFIX} has no native claude binary for this platform (@anthropic-ai/claude-code-<platform>/claude)"
        return ClaudeUnavailable(why, skip=False)
    return None


def require() -> None:
    """In a test: skip loudly when this machine cannot have Claude Code (no npm), fail when
    ``make peer`` was not run."""
    import pytest  # only tests call this

    no_peer_in_the_fast_tier(f"Claude Code {CLAUDE_VERSION}")
    why = unavailable()
    if why is None:
        return
    if why.skip:
        pytest.skip(f"!!! {why} !!!")
    pytest.fail(str(why), pytrace=False)


def slug(cwd: Path) -> str:
    """The project folder's name under ``~/.claude/projects``: the real cwd, every character
    that is not an ASCII letter or digit replaced by ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(Path(cwd).resolve()))


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a transcript, one per line; a line that does not parse is left out."""
    rows: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def write_rows(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write ``rows`` as a transcript, one compact JSON line each, as Claude Code does."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows))


def append_rows(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with path.open("a", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")


def request_text(body: dict[str, Any]) -> str:
    """Everything the model is shown in ``messages`` (every role), as one string to search."""
    return json.dumps(body.get("messages", []), ensure_ascii=False)


def phrases_in(body: dict[str, Any], phrases: Iterable[str]) -> set[str]:
    """Which of ``phrases`` the request's ``messages`` hold."""
    seen = request_text(body)
    return {p for p in phrases if p in seen}


@dataclass
class Run:
    """One run of the CLI: its arguments, exit code, output, and the requests it made."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    requests: list[Request]

    @property
    def result(self) -> dict[str, Any]:
        """The ``--output-format json`` result document."""
        try:
            doc = json.loads(self.stdout)
        except ValueError as exc:
            raise ClaudeError(f"claude {' '.join(self.args)}: not JSON on stdout:\n{self.stdout[-2000:]}") from exc
        if not isinstance(doc, dict):
            raise ClaudeError(f"claude {' '.join(self.args)}: unexpected output {doc!r}")
        return doc

    @property
    def session(self) -> str:
        return str(self.result["session_id"])

    @property
    def messages_requests(self) -> list[Request]:
        """Its ``POST /v1/messages`` requests, in order."""
        return [r for r in self.requests if r.is_messages]

    @property
    def first_body(self) -> dict[str, Any]:
        """The body of its first ``/v1/messages`` request: what the model was shown first."""
        found = self.messages_requests
        if not found:
            raise ClaudeError(f"claude {' '.join(self.args)} sent no request\nstderr: {self.stderr[-2000:]}")
        body = found[0].body
        assert isinstance(body, dict)
        return body


class ClaudePeer:
    """One throwaway ``HOME`` (and project folder) under ``root``, on the shared stand-in ``api``."""

    def __init__(self, api: MessagesStandIn, root: Path, *, project: Path | None = None) -> None:
        require_installed = unavailable()
        if require_installed is not None:
            raise require_installed
        found = binary()
        assert found is not None
        self.binary = found
        self.api = api
        self.root = root
        self.home = root / "home"
        self.tmp = root / "tmp"
        self.project = project or root / "project"
        for folder in (self.home, self.tmp, self.project):
            folder.mkdir(parents=True, exist_ok=True)

    def __repr__(self) -> str:
        return f"ClaudePeer({self.root})"

    @property
    def config_dir(self) -> Path:
        """``~/.claude``: projects, session-env, settings."""
        return self.home / ".claude"

    def env(self, key: str) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
        return {
            **keep,
            "HOME": str(self.home),
            # Its messaging socket (cc-socks/<pid>.sock) goes here, not to /tmp: a killed CLI leaves it.
            "TMPDIR": str(self.tmp),
            "SHELL": "/bin/bash",
            "ANTHROPIC_BASE_URL": self.api.base,
            "ANTHROPIC_API_KEY": key,
            **QUIET,
        }

    def run(self, *args: str, cwd: Path | None = None, deadline: float = RUN_DEADLINE, check: bool = True) -> Run:
        """``claude ARGS`` in ``cwd`` (the project folder by default); ``check`` fails on a non-zero
        exit or anything on stderr."""
        no_peer_in_the_fast_tier(f"Claude Code {CLAUDE_VERSION}")
        key = f"sk-ant-standin-{uuid.uuid4().hex}"
        try:
            proc = subprocess.run(
                [str(self.binary), *args],
                cwd=cwd or self.project,
                env=self.env(key),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=deadline,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ClaudeError(f"claude {' '.join(args)} did not finish in {deadline:.0f} s") from exc
        run = Run(list(args), proc.returncode, proc.stdout, proc.stderr, self.api.of_key(key))
        if check and (proc.returncode != 0 or proc.stderr.strip()):
            raise ClaudeError(
                f"claude {' '.join(args)} exited {proc.returncode}\nstderr: {proc.stderr[-3000:]}\n"
                f"stdout: {proc.stdout[-3000:]}"
            )
        return run

    def spawn(self, *args: str, cwd: Path | None = None) -> Running:
        """Start ``claude ARGS`` and return at once (stdin closed, output to pipes); the caller
        :meth:`Running.finish` es it. For looking at a process while its turn is in flight
        (with :meth:`~support.claude_api.MessagesStandIn.hold`)."""
        no_peer_in_the_fast_tier(f"Claude Code {CLAUDE_VERSION}")
        key = f"sk-ant-standin-{uuid.uuid4().hex}"
        proc = subprocess.Popen(
            [str(self.binary), *args],
            cwd=cwd or self.project,
            env=self.env(key),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        return Running(self, list(args), proc, key)

    def prompt(
        self,
        text: str,
        *,
        session: str | None = None,
        resume: str | None = None,
        resume_at: str | None = None,
        continue_: bool = False,
        cwd: Path | None = None,
        extra: Sequence[str] = (),
        check: bool = True,
    ) -> Run:
        """One ``claude -p TEXT`` turn: a new session (``session=`` names its id), ``resume=SID``,
        ``continue_`` (the cwd's newest session), ``resume_at=UUID`` (a rewind to that row)."""
        args = ["-p", text, "--output-format", "json", "--allowedTools", ALLOWED_TOOLS]
        if session is not None:
            args += ["--session-id", session]
        if resume is not None:
            args += ["--resume", resume]
        if resume_at is not None:
            args += ["--resume-session-at", resume_at]
        if continue_:
            args.append("--continue")
        run = self.run(*args, *extra, cwd=cwd, check=check)
        if check and run.result.get("is_error"):
            raise ClaudeError(f"claude {' '.join(args)} reported an error: {run.stdout[-3000:]}")
        return run

    def session(self, prompts: Sequence[str], *, cwd: Path | None = None) -> str:
        """A new session of one turn per prompt (the first with ``--session-id``, then ``--resume``); its id."""
        sid = str(uuid.uuid4())
        for n, text in enumerate(prompts):
            self.prompt(text, session=sid if n == 0 else None, resume=sid if n else None, cwd=cwd)
        return sid

    def compact(self, sid: str, *, cwd: Path | None = None) -> Run:
        """``claude --resume SID -p /compact``."""
        return self.prompt("/compact", resume=sid, cwd=cwd)

    def transcript(self, sid: str, *, cwd: Path | None = None) -> Path:
        """Where the CLI keeps session ``sid`` begun in ``cwd`` (the project folder by default)."""
        return self.config_dir / "projects" / slug(cwd or self.project) / f"{sid}.jsonl"

    def rows(self, sid: str, *, cwd: Path | None = None) -> list[dict[str, Any]]:
        return read_rows(self.transcript(sid, cwd=cwd))

    def next_request(
        self, sid: str, prompt: str = "next", *, cwd: Path | None = None, **options: Any
    ) -> dict[str, Any]:
        """``claude --resume SID -p PROMPT``: the body of the request it sent (the messages the
        model would see). Exit 0 and an empty stderr are required."""
        return self.prompt(prompt, resume=sid, cwd=cwd, **options).first_body

    def copy(self, root: Path) -> ClaudePeer:
        """A peer whose HOME and project folder are copies of this one's, under ``root``.

        The project folder keeps its path (sessions are filed under the cwd's slug), so a copy
        shares it: only the HOME is copied.
        """
        shutil.copytree(self.home, root / "home", symlinks=True)
        return ClaudePeer(self.api, root, project=self.project)


@dataclass
class Running:
    """A CLI run started by :meth:`ClaudePeer.spawn`."""

    peer: ClaudePeer
    args: list[str]
    proc: subprocess.Popen[str]
    key: str

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_for_request(self, count: int = 1, deadline: float = RUN_DEADLINE) -> list[Request]:
        """Block until it has sent ``count`` requests."""
        return self.peer.api.wait_for(self.key, count, deadline)

    def finish(self, deadline: float = RUN_DEADLINE) -> Run:
        """Wait for it to exit (killing its process group after ``deadline`` s)."""
        try:
            out, err = self.proc.communicate(timeout=deadline)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            out, err = self.proc.communicate()
        return Run(self.args, self.proc.returncode, out, err, self.peer.api.of_key(self.key))
