"""``kurahi store``: the storage backend itself: bring a database's schema up to date, copy a store.

A store is named as on ``gateway run --store``: ``file:<home>`` (a Kurahi home as files) or
``postgres://user@host:port/db``. A password never goes on the command line (every user of
the machine can read it in the process list): it comes from ``PGPASSWORD``, libpq's
``~/.pgpass``, or a file named by a ``--password-file`` option, and it is never printed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kurahi.cli.common import EXIT, err_console, fail, print_json, translate_errors
from kurahi.cli.output import say, table

if TYPE_CHECKING:
    from kurahi.store.base import Backend

__all__ = ["app", "copy_command", "migrate_command"]

app = typer.Typer(
    help="The storage backend: migrate a PostgreSQL schema, copy a store (files <-> PostgreSQL), verified by hashes.",
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")]


def _password(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{path}: cannot read the password file: {getattr(exc, 'strerror', None) or exc}", EXIT.NOT_FOUND)
    lines = text.splitlines()
    if not lines or not lines[0]:
        fail(f"{path}: the password file is empty (the password is its first line)", EXIT.INVALID)
    return lines[0]


def _refuse_password_in(option: str, url: str) -> None:
    from kurahi.store.open import url_has_password

    if url_has_password(url):
        fail(
            f"{option} holds a password, which every user of this machine can read in the process list: "
            "put it in PGPASSWORD or ~/.pgpass, or in a file named by the password-file option",
            EXIT.USAGE,
        )


def _is_database(store: str) -> bool:
    return store.startswith(("postgres://", "postgresql://"))


def _open(option: str, store: str, password: Path | None, *, source: bool = False) -> Backend:
    """The backend ``store`` names (``file:HOME`` or a database URL); a file source must exist."""
    if store.startswith("file:") and store != "file:":
        from kurahi.store.open import default_backend

        home = Path(store[len("file:") :]).expanduser()
        if source and not home.is_dir():
            fail(f"{option} {store}: no such home; nothing to copy", EXIT.NOT_FOUND)
        return default_backend(home)
    if _is_database(store):
        from kurahi.store.open import postgres_backend

        _refuse_password_in(option, store)
        return postgres_backend()(
            store,
            home=Path.cwd(),  # the database holds everything a copy touches; no home file is read
            owner_id=f"kurahi-store-{os.getpid()}",
            password=_password(password),
        )
    if store in ("memory", "memory:"):
        fail(f"{option} memory: holds nothing once this command ends; name file:HOME or a postgres:// URL", EXIT.USAGE)
    fail(f"{option}: not a store (use file:HOME or postgres://user@host:port/db)", EXIT.USAGE)


@contextmanager
def _store_errors() -> Iterator[None]:
    from kurahi.errors import SchemaVersionError, StoreCopyError

    with translate_errors():
        try:
            yield
        except SchemaVersionError as exc:
            fail(str(exc), EXIT.INVALID)
        except StoreCopyError as exc:
            fail(str(exc), EXIT.FAILED)


@app.command("migrate")
def migrate_command(
    store: Annotated[
        str,
        typer.Option(
            "--store",
            envvar="KOLO_STORE",
            show_envvar=True,
            help="The database: postgres://user@host:port/db (password from PGPASSWORD, ~/.pgpass or --password-file).",
        ),
    ],
    password_file: Annotated[
        Path | None, typer.Option("--password-file", help="A file whose first line is the database password.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create Kurahi's tables in a database, or bring them to this version's schema (one transaction).

    A schema newer than this Kurahi knows is refused (exit 4) and left as it is.
    """
    if not _is_database(store):
        fail("--store must be a postgres:// URL (a file store has no schema to migrate)", EXIT.USAGE)
    if store != os.environ.get("KOLO_STORE"):
        _refuse_password_in("--store", store)
    with _store_errors():
        from kurahi.store.open import postgres_backend

        postgres_backend()  # a clear error when the driver is not installed
        from kurahi.store.postgres.db import Database
        from kurahi.store.postgres.migrations import migrate

        db = Database(store, password=_password(password_file), max_connections=1)
        try:
            with db.connect() as conn:
                result = migrate(conn, db.where)
        finally:
            db.close()
    if as_json:
        print_json({"store": db.where, "before": result.before, "after": result.after, "applied": result.applied})
    elif result.applied:
        say(f"{db.where}: schema version {result.before} -> {result.after} (applied {result.applied})")
    else:
        say(f"{db.where}: schema already at version {result.after}; nothing to do")


@app.command("copy")
def copy_command(
    source: Annotated[str, typer.Option("--from", help="The store to copy: file:HOME or postgres://user@host/db.")],
    target: Annotated[str, typer.Option("--to", help="Where to: file:HOME or postgres://user@host/db.")],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Copy into a store that is not empty: identical items are skipped, a shorter log or chain "
            "is completed, catalog entries are set; anything that differs is never overwritten.",
        ),
    ] = False,
    from_password_file: Annotated[
        Path | None, typer.Option("--from-password-file", help="The source database's password (first line).")
    ] = None,
    to_password_file: Annotated[
        Path | None, typer.Option("--to-password-file", help="The target database's password (first line).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy every agent's transcripts, catalog and record logs, and the audit chain, then verify them.

    Transcripts are copied byte for byte and checked by SHA-256, catalogs entry by entry and
    in order, logs by SHA-256 of their records, and the audit chain must verify with the
    source's head hash. A target that is not empty is refused unless --force (exit 1).
    """
    from kurahi.store.transfer import copy_store

    with _store_errors():
        src = _open("--from", source, from_password_file, source=True)
        try:
            dst = _open("--to", target, to_password_file)
            try:
                if sys.stderr.isatty() and not as_json:
                    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

                    with Progress(
                        TextColumn("{task.description}"),
                        BarColumn(),
                        MofNCompleteColumn(),
                        TimeElapsedColumn(),
                        console=err_console.get(),
                        transient=True,
                    ) as bar:
                        task = bar.add_task("copying", total=None)
                        report = copy_store(
                            src,
                            dst,
                            force=force,
                            progress=lambda what, done, total: bar.update(
                                task, description=what[-40:], completed=done, total=total
                            ),
                        )
                else:
                    report = copy_store(src, dst, force=force)
            finally:
                dst.close()
        finally:
            src.close()
    if as_json:
        print_json(report.to_dict())
        return
    totals = report.to_dict()["totals"]
    rows = []
    for agent in report.agents:
        ts = [t for t in report.transcripts if t["agent"] == agent]
        cat = next((c["entries"] for c in report.catalogs if c["agent"] == agent), 0)
        recs = sum(x["records"] for x in report.logs if x["agent"] == agent)
        rows.append([agent, str(len(ts)), str(sum(t["bytes"] for t in ts)), str(cat), str(recs)])
    say(f"copied {report.source} -> {report.target}")
    if rows:
        table(["agent", "transcripts", "bytes", "catalog entries", "records"], rows, right=(1, 2, 3, 4))
    audit = (
        f"audit chain: {report.audit['records']} records, head {report.audit['headHash']}"
        if report.audit
        else "audit chain: none in the source"
    )
    say(audit)
    say(
        ("verified", "bold green"),
        f": {totals['transcripts']} transcripts and {len(report.logs)} logs by SHA-256, "
        f"{totals['catalogEntries']} catalog entries, the audit chain's head hash",
    )
