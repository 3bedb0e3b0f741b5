"""kurahi.testing.postgres: the throwaway PostgreSQL the suite (and users) test against.

It starts, psycopg connects with its URL, create_database isolates, a second one runs beside
the first, stopping removes everything, and the password is nowhere but the URL and the
passfile: not on any process's command line, not in the server's environment, its log or
its files, not in a repr or in the message of a failed start.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from kurahi.errors import KurahiError, UsageError
from kurahi.testing import postgres as testing_pg
from kurahi.testing.postgres import PostgresUnavailableError, ThrowawayPostgres


def _password(pg: ThrowawayPostgres) -> str:
    pw = urlsplit(pg.url).password
    assert pw and len(pw) >= 32
    return pw


def _unique(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(4)}"


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d.name))
    return out


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A directory every user can reach (under root the server runs as postgres, which cannot enter pytest's)."""
    d = Path(tempfile.mkdtemp(prefix="kurahi-pgtest-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_error_is_in_the_tree() -> None:
    assert issubclass(PostgresUnavailableError, KurahiError)


def test_psycopg_connects_with_the_url(pg_server: ThrowawayPostgres, pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        user, db = conn.execute("select current_user, current_database()").fetchone() or ("", "")
        assert user == "kurahi" and db.startswith("test_")
        assert conn.execute("show listen_addresses").fetchone() == ("127.0.0.1",)
        assert conn.execute("show port").fetchone() == (str(pg_server.port),)
        assert conn.execute("show unix_socket_directories").fetchone() == (str(pg_server.directory),)
        assert conn.execute("show password_encryption").fetchone() == ("scram-sha-256",)
        verifier = conn.execute("select rolpassword from pg_authid where rolname = 'kurahi'").fetchone()
        assert verifier and str(verifier[0]).startswith("SCRAM-SHA-256$")
    hba = (pg_server.directory / "data" / "pg_hba.conf").read_text().splitlines()
    rules = [line.split() for line in hba if line.strip() and not line.startswith("#")]
    assert rules and all(rule[-1] == "scram-sha-256" for rule in rules)


def test_no_password_no_connection(pg_server: ThrowawayPostgres) -> None:
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(pg_server.dsn_without_password, connect_timeout=10)
    wrong = pg_server.url.replace(_password(pg_server), "not-the-password")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(wrong, connect_timeout=10)


def test_create_database_isolates(pg_server: ThrowawayPostgres, pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("create table only_here (x int)")
        conn.execute("insert into only_here values (1)")
    other = pg_server.create_database(_unique("iso"))
    assert other != pg_url
    with psycopg.connect(other) as conn:
        assert conn.execute("select to_regclass('only_here')").fetchone() == (None,)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("select count(*) from only_here").fetchone() == (1,)


def test_create_database_refuses_odd_names_and_duplicates(pg_server: ThrowawayPostgres) -> None:
    for bad in ("", "Upper", "1st", "a-b", "x; drop", "a" * 64):
        with pytest.raises(UsageError):
            pg_server.create_database(bad)
    name = _unique("dup")
    pg_server.create_database(name)
    with pytest.raises(PostgresUnavailableError) as err:
        pg_server.create_database(name)
    assert err.value.reason == "createdb" and "already exists" in str(err.value)
    assert _password(pg_server) not in str(err.value)


def test_password_not_on_any_command_line_or_in_the_server_environment(
    pg_server: ThrowawayPostgres, pg_url: str
) -> None:
    pw = _password(pg_server).encode()
    with psycopg.connect(pg_url) as conn:  # a backend process is up while we look
        conn.execute("select 1")
        backends = _children(pg_server.pid)
        assert backends, "the postmaster has no children?"
        scanned = 0
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    cmdline = (d / "cmdline").read_bytes()
                except OSError:
                    continue
                scanned += 1
                assert pw not in cmdline, f"the password is on the command line of pid {d.name}"
        assert scanned > len(backends)
        for pid in [pg_server.pid, *backends]:
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue  # exited meanwhile
            assert pw not in environ, f"the password is in the environment of postgres pid {pid}"


def test_password_not_in_the_log_or_any_server_file(pg_server: ThrowawayPostgres, pg_url: str) -> None:
    pw = _password(pg_server)
    with pytest.raises(psycopg.OperationalError):  # a failed login is logged: it must not quote anything secret
        psycopg.connect(pg_server.url.replace(pw, pw[::-1]), connect_timeout=10)
    with psycopg.connect(pg_url) as conn:
        conn.execute("checkpoint")
    log = pg_server.log_path.read_text(errors="replace")
    assert "password authentication failed" in log
    assert pw not in log and pw[::-1] not in log
    scanned = 0
    for p in pg_server.directory.rglob("*"):
        if p.is_file() and p != pg_server.passfile:
            scanned += 1
            assert pw.encode() not in p.read_bytes(), f"the password is in {p}"
    assert scanned > 100  # the whole cluster: catalogs, WAL, config, log
    assert not (pg_server.directory / "pwfile").exists()


def test_repr_str_and_dsns_hold_no_password(pg_server: ThrowawayPostgres) -> None:
    pw = _password(pg_server)
    for text in (repr(pg_server), str(pg_server), pg_server.dsn_without_password, pg_server.redacted_url):
        assert pw not in text
        assert str(pg_server.port) in text
    assert pg_server.redacted_url == pg_server.url.replace(pw, "***")
    assert pg_server.scrub(f"a {pw} b") == "a *** b"
    assert pg_server.dsn_without_password == f"postgresql://kurahi@127.0.0.1:{pg_server.port}/kurahi"


def test_the_passfile_gives_a_child_the_password_through_a_file(pg_server: ThrowawayPostgres, pg_url: str) -> None:
    mode = pg_server.passfile.stat()
    assert stat.S_IMODE(mode.st_mode) == 0o600 and mode.st_uid == os.geteuid()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    dbname = urlsplit(pg_url).path.lstrip("/")
    done = subprocess.run(
        [str(pg_server.bindir / "psql"), "-w", "-tA", "-c", "select current_database()"],
        env={**env, **pg_server.env(dbname)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == dbname
    assert _password(pg_server) not in "".join(pg_server.env().values())


def test_a_second_server_runs_beside_the_first(pg_server: ThrowawayPostgres, pg_url: str) -> None:
    with ThrowawayPostgres(dbname="second") as other:
        assert other.port != pg_server.port
        assert other.directory != pg_server.directory
        assert _password(other) != _password(pg_server)
        with psycopg.connect(other.url) as a, psycopg.connect(pg_url) as b:
            assert a.execute("select current_database()").fetchone() == ("second",)
            assert b.execute("select 1").fetchone() == (1,)
            assert a.execute("show port").fetchone() != b.execute("show port").fetchone()


def test_stopping_removes_the_directory_also_after_a_failure(pg_server: ThrowawayPostgres) -> None:
    pg = ThrowawayPostgres()
    with pytest.raises(RuntimeError, match="in the body"), pg:
        directory, pid = pg.directory, pg.pid
        assert pg.running and (directory / "data" / "PG_VERSION").exists()
        raise RuntimeError("in the body")
    assert not pg.running
    assert not directory.exists()
    assert not Path(f"/proc/{pid}").exists() or str(directory).encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    pg.stop()  # again: nothing to do
    with pytest.raises(UsageError):
        pg.url  # noqa: B018
    assert "not running" in repr(pg)


def test_started_twice_is_a_usage_error(pg_server: ThrowawayPostgres) -> None:
    with pytest.raises(UsageError, match="running already"):
        pg_server.start()


@pytest.mark.skipif(os.geteuid() != 0, reason="only under root is the server run as another user")
def test_under_root_the_server_runs_as_postgres(pg_server: ThrowawayPostgres) -> None:
    postgres = pwd.getpwnam("postgres")
    status = Path(f"/proc/{pg_server.pid}/status").read_text()
    uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
    assert set(uids) == {str(postgres.pw_uid)}
    groups = next(line for line in status.splitlines() if line.startswith("Groups:")).split()[1:]
    assert "0" not in groups  # root's supplementary groups were dropped
    d = pg_server.directory.stat()
    assert (d.st_uid, stat.S_IMODE(d.st_mode)) == (postgres.pw_uid, 0o700)
    with pytest.raises(PostgresUnavailableError, match="no user 'no_such_user_kurahi'") as err:
        ThrowawayPostgres(run_as="no_such_user_kurahi").start()
    assert err.value.reason == "user"


def test_a_bad_bindir_says_so_and_leaves_nothing(tmp_path: Path, world_dir: Path) -> None:
    (tmp_path / "initdb").write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(PostgresUnavailableError) as err:
        ThrowawayPostgres(bindir=tmp_path, base_dir=world_dir).start()
    assert err.value.reason == "binaries"
    assert str(tmp_path) in str(err.value) and "pg_ctl" in str(err.value)
    assert list(world_dir.iterdir()) == []


def test_a_failed_initdb_quotes_its_output_scrubbed(
    world_dir: Path, monkeypatch: pytest.MonkeyPatch, pg_server: ThrowawayPostgres
) -> None:
    # An initdb that prints the password file it was given, then fails: the error quotes its
    # output, and the password in it must come out as ***.
    pw = "Sekret-" + secrets.token_urlsafe(24)
    monkeypatch.setattr(testing_pg, "_new_password", lambda: pw)
    bindir = world_dir / "bin"
    bindir.mkdir(mode=0o755)
    bindir.chmod(0o755)
    fake = (
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in --pwfile=*) f="${a#--pwfile=}";; esac; done\n'
        'echo "initdb: reading the password file $f" >&2\n'
        'echo "initdb: it says: $(cat "$f")" >&2\n'
        'echo "initdb: error: simulated failure" >&2\n'
        "exit 1\n"
    )
    for name in ("initdb", "pg_ctl", "postgres"):
        (bindir / name).write_text(fake)
        (bindir / name).chmod(0o755)
    base = world_dir / "base"
    base.mkdir()
    base.chmod(0o755)
    with pytest.raises(PostgresUnavailableError) as err:
        ThrowawayPostgres(bindir=bindir, base_dir=base).start()
    message = str(err.value)
    assert err.value.reason == "initdb"
    assert "simulated failure" in message and "it says: ***" in message
    assert pw not in message and pw not in repr(err.value) and all(pw not in line for line in err.value.log_tail)
    assert list(base.iterdir()) == []  # the directory went, with the password file


def test_a_taken_port_is_retried_then_reported(
    world_dir: Path, monkeypatch: pytest.MonkeyPatch, pg_server: ThrowawayPostgres
) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    real_free_port = testing_pg._free_port
    try:
        ports = iter([taken])
        monkeypatch.setattr(testing_pg, "_free_port", lambda: next(ports, None) or real_free_port())
        with ThrowawayPostgres(base_dir=world_dir) as pg:
            assert pg.port != taken
            assert "could not bind" not in pg.log_path.read_text()
        monkeypatch.setattr(testing_pg, "_free_port", lambda: taken)
        pw = "Sekret-" + secrets.token_urlsafe(24)
        monkeypatch.setattr(testing_pg, "_new_password", lambda: pw)
        with pytest.raises(PostgresUnavailableError) as err:
            ThrowawayPostgres(base_dir=world_dir).start()
        assert err.value.reason == "start"
        assert "could not bind" in str(err.value) and f"port {taken}" in str(err.value)
        assert pw not in str(err.value)
        assert list(world_dir.iterdir()) == []
    finally:
        busy.close()


def test_the_script_prints_the_bindir(pg_server: ThrowawayPostgres) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kurahi.testing.postgres"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == pg_server.bindir
