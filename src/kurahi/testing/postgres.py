"""A throwaway PostgreSQL server, for tests that need a real one.

:class:`ThrowawayPostgres` makes a new cluster in a temporary directory, starts it on a free
loopback port, and on exit stops it and removes the directory (also when starting failed
halfway)::

    from kurahi.testing.postgres import ThrowawayPostgres

    with ThrowawayPostgres() as pg:
        url = pg.create_database("case_1")  # a fresh database for one test
        run_the_code_under_test(url)        # the URL holds the password: never print it
        print(pg.dsn_without_password)      # this one is for messages

The cluster:

* Server binaries (``initdb``, ``pg_ctl``, ``postgres``) from ``pg_config --bindir``, else the
  highest version under ``/usr/lib/postgresql/*/bin`` (Debian's layout), else ``pg_ctl`` on
  ``PATH`` (:func:`find_bindir`). On Debian they come with the ``postgresql`` package, which
  ``make test`` installs when it is missing and it runs as root.
* A superuser ``kurahi`` with a random password, given to ``initdb`` in a 0600 file
  (``--pwfile``), never on a command line; every connection, TCP or Unix socket, must
  authenticate with ``scram-sha-256``.
* It listens on 127.0.0.1 only, on a free port, with its Unix socket in the temporary
  directory. ``fsync`` is off, ``synchronous_commit`` on (see :meth:`ThrowawayPostgres.start`).
* Faults for tests of what a database going away does: :meth:`~ThrowawayPostgres.crash` and
  :meth:`~ThrowawayPostgres.restart` (``pg_ctl stop -m immediate``, then start on the same
  port and data), :meth:`~ThrowawayPostgres.freeze` and :meth:`~ThrowawayPostgres.thaw`
  (SIGSTOP and SIGCONT of every server process).
* Under root (``initdb`` and ``postgres`` refuse to run as root) the directory is handed to
  the ``postgres`` system user and the server programs run as that user, with no
  supplementary groups; the client programs (``createdb``) run as the caller.

Secrets: the password is in :attr:`ThrowawayPostgres.url` (and :meth:`~ThrowawayPostgres.url_for`),
for the code under test, and in :attr:`ThrowawayPostgres.passfile`, a 0600 libpq password
file that child processes can be pointed at (:meth:`~ThrowawayPostgres.env`). Nothing else
holds it: not the ``repr``, not any error message (tool output is scrubbed before it is
quoted), not the server's command line, environment or log.

As a script, ``python -m kurahi.testing.postgres`` prints the server binaries' directory it would
use, or why there is none (exit status 1).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from kurahi.errors import KurahiError, UsageError

__all__ = ["PostgresUnavailableError", "ThrowawayPostgres", "find_bindir", "main"]

SUPERUSER = "kurahi"
"""The superuser every throwaway cluster is made with."""

_HOST = "127.0.0.1"
_SERVER_PROGRAMS = ("initdb", "pg_ctl", "postgres")
_DEBIAN_ROOT = Path("/usr/lib/postgresql")
_DBNAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_TAIL = 15  # lines of a tool's output or of the server log quoted in an error
_PORT_ATTEMPTS = 3  # a free port can be taken by someone else before the server binds it
_SOCKET_PATH_MAX = 107  # sun_path, less its terminating NUL


class PostgresUnavailableError(KurahiError):
    """A throwaway PostgreSQL server could not be started or used.

    Defined here, not in :mod:`kurahi.errors`: only tests and benchmarks start a throwaway
    server, so the error is no part of the tree users catch (issue 31).

    The message says why: no server binaries found, no user to run the server as (under
    root), ``initdb`` or ``pg_ctl start`` failed (with the last lines of their output or of
    the server log), or a database could not be created. It never holds the password: every
    line taken from a tool's output is scrubbed of it first.

    Attributes:
        reason: ``binaries``, ``user``, ``directory``, ``initdb``, ``start``, ``createdb`` or
            ``fault`` (a crash or restart a test asked for).
        log_tail: the last lines of the output or log concerned (scrubbed), oldest first.
    """

    REASONS = ("binaries", "user", "directory", "initdb", "start", "createdb", "fault")

    def __init__(self, message: str, *, reason: str, log_tail: list[str] | None = None) -> None:
        self.reason = reason
        self.log_tail = list(log_tail or [])
        tail = "".join(f"\n    {line}" for line in self.log_tail)
        super().__init__(message + (f"; last lines:{tail}" if tail else ""))


def _has_server(bindir: Path) -> bool:
    return all((bindir / name).is_file() and os.access(bindir / name, os.X_OK) for name in _SERVER_PROGRAMS)


def _version_key(name: str) -> tuple[int, ...] | None:
    parts = name.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def find_bindir() -> Path:
    """The directory of the PostgreSQL server binaries (``initdb``, ``pg_ctl``, ``postgres``).

    Tried in order: ``pg_config --bindir``; the highest version of ``/usr/lib/postgresql/*/bin``;
    the directory ``pg_ctl`` on ``PATH`` resolves to. A candidate counts only when all three
    programs are there (a ``pg_config`` from a client-only package names a directory without them).

    Raises:
        PostgresUnavailableError: none found (``reason="binaries"``); the message says what was tried.
    """
    tried: list[str] = []
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        tried.append("no pg_config on PATH")
    else:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            tried.append(f"{pg_config} --bindir failed: {exc}")
        else:
            bindir = Path(out.stdout.strip())
            if out.returncode == 0 and out.stdout.strip() and _has_server(bindir):
                return bindir
            tried.append(f"pg_config --bindir gave {out.stdout.strip() or '(nothing)'}, which lacks them")
    versions = []
    if _DEBIAN_ROOT.is_dir():
        for d in _DEBIAN_ROOT.iterdir():
            key = _version_key(d.name)
            if key is not None and _has_server(d / "bin"):
                versions.append((key, d / "bin"))
    if versions:
        return max(versions)[1]
    tried.append(f"none in {_DEBIAN_ROOT}/*/bin")
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl is None:
        tried.append("no pg_ctl on PATH")
    else:
        bindir = Path(pg_ctl).resolve().parent
        if _has_server(bindir):
            return bindir
        tried.append(f"pg_ctl on PATH is in {bindir}, which lacks them")
    raise PostgresUnavailableError(
        "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found: "
        + "; ".join(tried)
        + " (on Debian: apt-get install postgresql)",
        reason="binaries",
    )


def _new_password() -> str:
    # 32 URL-safe characters (A-Z a-z 0-9 - _): nothing to escape in a URL, a pgpass line or a file.
    return secrets.token_urlsafe(24)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((_HOST, 0))
        return int(s.getsockname()[1])


def _conf_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _tail(text: str, n: int = _TAIL) -> list[str]:
    return [line for line in text.splitlines() if line.strip()][-n:]


class ThrowawayPostgres:
    """A PostgreSQL cluster of its own in a temporary directory, for the length of a ``with``.

    Args:
        bindir: the server binaries' directory; by default :func:`find_bindir`.
        dbname: the database made at start, which :attr:`url` names.
        base_dir: where the temporary directory goes (default: the system's, ``tempfile``).
            Keep it short: the Unix socket's path must fit in 107 bytes (if it would not, the
            server gets no Unix socket, TCP only). Under root, the ``postgres`` user must be
            able to reach it.
        run_as: under root, the user the server runs as (default ``postgres``); ignored
            otherwise (the server then runs as the caller).
        timeout: seconds each step (``initdb``, start, stop, ``createdb``) may take.

    :meth:`start` (or entering the ``with``) raises :class:`PostgresUnavailableError`
    naming why the server could not start, with nothing left behind.
    """

    def __init__(
        self,
        *,
        bindir: str | Path | None = None,
        dbname: str = "kurahi",
        base_dir: str | Path | None = None,
        run_as: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        if not _DBNAME.fullmatch(dbname):
            raise UsageError(f"database name {dbname!r}: use 1 to 63 of a-z, 0-9 and _, not starting with a digit")
        self._bindir_arg = Path(bindir) if bindir is not None else None
        self._dbname = dbname
        self._base_dir = Path(base_dir) if base_dir is not None else None
        self._run_as = run_as
        self._timeout = timeout
        self._bindir: Path | None = None
        self._dir: Path | None = None
        self._password: str | None = None
        self._port: int | None = None
        self._server_ids: tuple[int, int] | None = None  # (uid, gid) to run the server programs as, under root
        self._server_home: str | None = None
        self._started = False

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> ThrowawayPostgres:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> ThrowawayPostgres:
        """Make the cluster, start it and create :attr:`dbname`; returns ``self``.

        ``fsync`` and ``full_page_writes`` are off: the machine does not lose power under a
        test, so the disk's own durability buys nothing, and without it a run does not wait
        on the disk for every commit. ``synchronous_commit`` stays on: a commit is
        acknowledged only once its WAL is written, so a server that crashes (:meth:`crash`)
        keeps every commit it acknowledged, as a production server does, and a crash test
        measures Kurahi, not a server allowed to forget.

        Raises:
            PostgresUnavailableError: why it could not start; everything made so far is
                stopped and removed first.
            UsageError: it is running already.
        """
        if self._dir is not None:
            raise UsageError(f"{self!r} is running already")
        self._bindir = self._find_bindir()
        self._server_ids, self._server_home = self._server_user()
        self._password = _new_password()
        parent = self._base_dir or Path(tempfile.gettempdir())
        try:
            self._dir = Path(tempfile.mkdtemp(prefix="kurahi-pg-", dir=parent))
        except OSError as exc:
            raise PostgresUnavailableError(f"cannot make a directory in {parent}: {exc}", reason="directory") from exc
        atexit.register(self.stop)
        try:
            if self._server_ids is not None:
                os.chown(self._dir, *self._server_ids)
            self._initdb()
            self._configure_and_start()
            self._write_passfile()
            self._started = True
            self.create_database(self._dbname)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server (``pg_ctl stop -m fast``, then ``immediate``, then SIGKILL) and remove its directory.

        Never raises; stopping what is not running does nothing.
        """
        directory = self._dir
        if directory is None:
            return
        atexit.unregister(self.stop)
        try:
            if self._postmaster_pid() is not None:
                for mode in ("fast", "immediate"):
                    try:
                        done = self._run_server(
                            ["stop", "-D", str(self._data), "-m", mode, "-w", "-t", str(int(self._timeout))],
                            program="pg_ctl",
                        )
                    except (OSError, subprocess.SubprocessError):
                        continue
                    if done.returncode == 0:
                        break
                else:
                    self._kill_postmaster()
        finally:
            self._started = False
            self._port = None
            self._dir = None
            shutil.rmtree(directory, ignore_errors=True)

    # -- what the tests use ------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the server was started and not yet stopped."""
        return self._started

    @property
    def url(self) -> str:
        """``postgresql://kurahi:PASSWORD@127.0.0.1:PORT/DBNAME``: secret, pass it by env or file, never print it."""
        return self.url_for(self._dbname)

    def url_for(self, dbname: str) -> str:
        """The URL of another database of this server, with the password (as secret as :attr:`url`)."""
        self._require_running()
        assert self._password is not None
        return f"postgresql://{SUPERUSER}:{quote(self._password, safe='')}@{_HOST}:{self.port}/{quote(dbname)}"

    @property
    def dsn_without_password(self) -> str:
        """``postgresql://kurahi@127.0.0.1:PORT/DBNAME``: the URL for messages and reports.

        It connects too, given the password by other means (:attr:`passfile`, :meth:`env`).
        """
        self._require_running()
        return f"postgresql://{SUPERUSER}@{_HOST}:{self.port}/{quote(self._dbname)}"

    @property
    def redacted_url(self) -> str:
        """:attr:`url` with the password shown as ``***`` (for messages; it does not connect)."""
        self._require_running()
        return f"postgresql://{SUPERUSER}:***@{_HOST}:{self.port}/{quote(self._dbname)}"

    def scrub(self, text: str) -> str:
        """``text`` with this server's password replaced by ``***`` (for quoting output in messages)."""
        if not self._password:
            return text
        return text.replace(self._password, "***").replace(quote(self._password, safe=""), "***")

    @property
    def dbname(self) -> str:
        """The database made at start, which :attr:`url` names."""
        return self._dbname

    @property
    def user(self) -> str:
        """The superuser's name (``kurahi``)."""
        return SUPERUSER

    @property
    def host(self) -> str:
        """``127.0.0.1``: the only address the server listens on."""
        return _HOST

    @property
    def port(self) -> int:
        """The TCP port, chosen free at start."""
        self._require_running()
        assert self._port is not None
        return self._port

    @property
    def directory(self) -> Path:
        """The temporary directory: ``data/`` (the cluster), ``server.log``, the Unix socket, :attr:`passfile`."""
        self._require_running()
        assert self._dir is not None
        return self._dir

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return self.directory / "server.log"

    @property
    def passfile(self) -> Path:
        """A libpq password file (``PGPASSFILE``, mode 0600, owned by the caller) for this server's superuser."""
        return self.directory / "client.pgpass"

    @property
    def bindir(self) -> Path:
        """The directory of the server binaries in use."""
        self._require_running()
        assert self._bindir is not None
        return self._bindir

    @property
    def server_version(self) -> str:
        """The cluster's major version (``PG_VERSION``), such as ``"15"``."""
        return (self.directory / "data" / "PG_VERSION").read_text().strip()

    @property
    def pid(self) -> int:
        """The postmaster's process id."""
        self._require_running()
        pid = self._postmaster_pid()
        if pid is None:
            raise UsageError(f"{self!r}: no postmaster.pid")
        return pid

    # -- faults ------------------------------------------------------------------------------

    def crash(self) -> None:
        """Stop the server as a crash would (``pg_ctl stop -m immediate``: no checkpoint, clients cut off).

        The data directory stays; :meth:`restart` starts it again, with crash recovery.

        Raises:
            PostgresUnavailableError: ``pg_ctl`` failed (its output quoted, scrubbed).
        """
        self._require_running()
        self._pg_ctl(["stop", "-D", str(self._data), "-m", "immediate", "-w", "-t", str(int(self._timeout))])

    def restart(self) -> None:
        """Start the server again on the same port and data after :meth:`crash`.

        Raises:
            PostgresUnavailableError: ``pg_ctl`` failed (its output quoted, scrubbed).
        """
        self._require_running()
        log = self.directory / "server.log"
        self._pg_ctl(["start", "-w", "-t", str(int(self._timeout)), "-D", str(self._data), "-l", str(log)])

    def server_pids(self) -> list[int]:
        """The postmaster and every process it started (backends, writers), postmaster first."""
        top = self.pid
        children: list[int] = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The command name, in parentheses, may hold spaces: the fields after it are fixed.
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) > 1 and fields[1] == str(top):
                children.append(int(entry.name))
        return [top, *sorted(children)]

    def freeze(self) -> list[int]:
        """SIGSTOP the postmaster, then every server process: connections stay open and nothing answers.

        The postmaster goes first, so it starts no new process meanwhile. Returns the pids
        stopped, for :meth:`thaw`.
        """
        stopped: list[int] = []
        for pid in self.server_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
        return stopped

    def thaw(self, pids: Sequence[int]) -> None:
        """SIGCONT what :meth:`freeze` stopped (children first, the postmaster last)."""
        for pid in reversed(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def _pg_ctl(self, args: Sequence[str]) -> None:
        try:
            done = self._run_server(args, program="pg_ctl")
        except (OSError, subprocess.SubprocessError) as exc:
            raise PostgresUnavailableError(f"pg_ctl {args[0]} failed: {self.scrub(str(exc))}", reason="fault") from None
        if done.returncode != 0:
            raise PostgresUnavailableError(
                f"pg_ctl {args[0]} failed (exit {done.returncode})",
                reason="fault",
                log_tail=_tail(self.scrub(done.stdout + done.stderr)),
            )

    def env(self, dbname: str | None = None) -> dict[str, str]:
        """The libpq variables for a child process: ``PGHOST``, ``PGPORT``, ``PGUSER``, ``PGDATABASE``, ``PGPASSFILE``.

        The password reaches the child through the file, not the environment.
        """
        self._require_running()
        return {
            "PGHOST": _HOST,
            "PGPORT": str(self.port),
            "PGUSER": SUPERUSER,
            "PGDATABASE": dbname or self._dbname,
            "PGPASSFILE": str(self.passfile),
        }

    def create_database(self, name: str) -> str:
        """Create the database ``name`` (a-z, 0-9, _) and return its URL (with the password, see :attr:`url`).

        Raises:
            UsageError: a name outside a-z, 0-9 and _, or the server is not running.
            PostgresUnavailableError: ``createdb`` failed (``reason="createdb"``), e.g. the name is taken.
        """
        if not _DBNAME.fullmatch(name):
            raise UsageError(f"database name {name!r}: use 1 to 63 of a-z, 0-9 and _, not starting with a digit")
        self._require_running()
        assert self._bindir is not None
        try:
            done = subprocess.run(
                [str(self._bindir / "createdb"), "--no-password", "--maintenance-db=postgres", name],
                env={**_clean_env(), **self.env("postgres"), "PGCONNECT_TIMEOUT": "10"},
                capture_output=True,
                text=True,
                timeout=self._timeout,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise PostgresUnavailableError(
                f"{self.dsn_without_password}: could not run createdb: {self.scrub(str(exc))}", reason="createdb"
            ) from None
        if done.returncode != 0:
            raise PostgresUnavailableError(
                f"{self.dsn_without_password}: createdb {name} failed (exit {done.returncode})",
                reason="createdb",
                log_tail=_tail(self.scrub(done.stdout + done.stderr)),
            )
        return self.url_for(name)

    def __repr__(self) -> str:
        if not self._started or self._port is None:
            return f"ThrowawayPostgres({self._dbname!r}, not running)"
        return f"ThrowawayPostgres({self.dsn_without_password}, dir={self._dir})"

    # -- the steps ---------------------------------------------------------------------------

    @property
    def _data(self) -> Path:
        assert self._dir is not None
        return self._dir / "data"

    def _require_running(self) -> None:
        if not self._started or self._dir is None:
            raise UsageError(f"{self!r}: start it first (or use it in a with block)")

    def _find_bindir(self) -> Path:
        if self._bindir_arg is None:
            return find_bindir()
        if not _has_server(self._bindir_arg):
            missing = [n for n in _SERVER_PROGRAMS if not os.access(self._bindir_arg / n, os.X_OK)]
            raise PostgresUnavailableError(
                f"{self._bindir_arg}: not a PostgreSQL server bindir (no runnable {', '.join(missing) or 'programs'})",
                reason="binaries",
            )
        return self._bindir_arg

    def _server_user(self) -> tuple[tuple[int, int] | None, str | None]:
        if os.geteuid() != 0:
            return None, None
        name = self._run_as or "postgres"
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise PostgresUnavailableError(
                f"running as root, and there is no user {name!r} to run the server as "
                "(initdb and postgres refuse root; the Debian package postgresql makes the user postgres)",
                reason="user",
            ) from None
        if entry.pw_uid == 0:
            raise PostgresUnavailableError(f"user {name!r} is root, which postgres refuses", reason="user")
        return (entry.pw_uid, entry.pw_gid), entry.pw_dir

    def _run_server(self, args: Sequence[str], *, program: str) -> subprocess.CompletedProcess[str]:
        """Run a server program (``initdb``, ``pg_ctl``) as the server user, in the directory, no PG* variables."""
        assert self._bindir is not None and self._dir is not None
        env = {**_clean_env(), "LC_ALL": "C", "LANG": "C"}
        ids = self._server_ids
        if ids is not None:
            env["HOME"] = self._server_home or str(self._dir)
        return subprocess.run(
            [str(self._bindir / program), *args],
            env=env,
            cwd=self._dir,
            capture_output=True,
            text=True,
            timeout=self._timeout + 10,
            check=False,
            stdin=subprocess.DEVNULL,
            umask=0o077,
            # Under root: the server user, its group and no supplementary groups (root's are dropped).
            user=ids[0] if ids else None,
            group=ids[1] if ids else None,
            extra_groups=[] if ids else None,
        )

    def _private_file(self, path: Path, text: str, *, for_server: bool) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            if for_server and self._server_ids is not None:
                os.fchown(fd, *self._server_ids)
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def _as_server_hint(self) -> str:
        if self._server_ids is None:
            return ""
        name = self._run_as or "postgres"
        return f" (it runs as the user {name!r}, which must be able to reach {self._dir})"

    def _initdb(self) -> None:
        assert self._dir is not None and self._password is not None
        pwfile = self._dir / "pwfile"
        self._private_file(pwfile, self._password + "\n", for_server=True)
        try:
            done = self._run_server(
                [
                    "-D",
                    str(self._data),
                    "-U",
                    SUPERUSER,
                    f"--pwfile={pwfile}",
                    "--auth=scram-sha-256",
                    "--encoding=UTF8",
                    "--no-locale",
                    "--no-sync",
                ],
                program="initdb",
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise PostgresUnavailableError(
                f"could not run {self._bindir}/initdb{self._as_server_hint()}: {self.scrub(str(exc))}", reason="initdb"
            ) from None
        finally:
            pwfile.unlink(missing_ok=True)
        if done.returncode != 0:
            raise PostgresUnavailableError(
                f"{self._bindir}/initdb failed (exit {done.returncode}){self._as_server_hint()}",
                reason="initdb",
                log_tail=_tail(self.scrub(done.stdout + done.stderr)),
            )

    def _configure_and_start(self) -> None:
        assert self._dir is not None
        with open(self._data / "postgresql.conf", "a") as f:
            f.write("\n# kurahi.testing.postgres: a throwaway cluster\ninclude 'kurahi.conf'\n")
        socket_dir = str(self._dir)
        if len(socket_dir) + len("/.s.PGSQL.65535") > _SOCKET_PATH_MAX:
            socket_dir = ""  # the path would not fit in sun_path: TCP only
        log = self._dir / "server.log"
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            self._port = _free_port()
            conf = self._data / "kurahi.conf"
            conf.unlink(missing_ok=True)
            self._private_file(
                conf,
                f"listen_addresses = '{_HOST}'\n"
                f"port = {self._port}\n"
                f"unix_socket_directories = {_conf_string(socket_dir)}\n"
                "unix_socket_permissions = 0700\n"
                # Throwaway: deleted when it stops, never reopened after a crash. See start().
                "fsync = off\n"
                "synchronous_commit = on\n"
                "full_page_writes = off\n",
                for_server=True,
            )
            try:
                done = self._run_server(
                    ["start", "-w", "-t", str(int(self._timeout)), "-D", str(self._data), "-l", str(log)],
                    program="pg_ctl",
                )
            except (OSError, subprocess.SubprocessError) as exc:
                raise PostgresUnavailableError(
                    f"could not run {self._bindir}/pg_ctl start{self._as_server_hint()}: {self.scrub(str(exc))}",
                    reason="start",
                ) from None
            if done.returncode == 0:
                return
            logged = log.read_text(errors="replace") if log.exists() else ""
            if attempt < _PORT_ATTEMPTS and "could not bind" in logged and self._postmaster_pid() is None:
                log.write_text("")  # the next attempt's log starts clean
                continue
            raise PostgresUnavailableError(
                f"{self._bindir}/pg_ctl start failed (exit {done.returncode}, port {self._port}, "
                f"attempt {attempt}){self._as_server_hint()}",
                reason="start",
                log_tail=_tail(self.scrub(done.stdout + done.stderr + "\n" + logged)),
            )

    def _write_passfile(self) -> None:
        assert self._password is not None and self._port is not None and self._dir is not None
        pw = self._password.replace("\\", "\\\\").replace(":", "\\:")
        self._private_file(self._dir / "client.pgpass", f"*:{self._port}:*:{SUPERUSER}:{pw}\n", for_server=False)

    def _postmaster_pid(self) -> int | None:
        if self._dir is None:
            return None
        try:
            first = (self._data / "postmaster.pid").read_text().split("\n", 1)[0]
        except OSError:
            return None
        return int(first) if first.strip().isdigit() else None

    def _kill_postmaster(self) -> None:
        # The last resort when pg_ctl could not stop it; only a process whose command line
        # names this cluster's data directory (postmaster.pid may be stale and its pid reused).
        pid = self._postmaster_pid()
        if pid is None:
            return
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if str(self._data).encode() in cmdline:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _clean_env() -> dict[str, str]:
    """The environment without libpq's ``PG*`` variables (a caller's PGPASSWORD, PGDATA or PGPORT stays out)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def main(argv: Sequence[str] | None = None) -> int:
    """The script: print the server binaries' directory :func:`find_bindir` finds, or why there is none."""
    if argv is None:
        argv = sys.argv[1:]
    if argv:
        print("usage: python -m kurahi.testing.postgres  (prints the PostgreSQL server bindir, or why there is none)")
        return 2
    try:
        print(find_bindir())
    except PostgresUnavailableError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
