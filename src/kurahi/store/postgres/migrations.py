"""Applying :data:`~kurahi.store.postgres.schema.MIGRATIONS`, and refusing a schema newer than the code.

All pending migrations run in one transaction, under a transaction-scoped advisory lock, so two
gateways starting on a fresh database do not both create it, and a migration that fails
leaves the schema as it was. (A transaction-scoped lock ends with its transaction: unlike a
session-level one it cannot leak through a pooler such as PgBouncer.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from kurahi.errors import SchemaVersionError
from kurahi.store.postgres.schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION

__all__ = ["MigrationResult", "check_version", "current_version", "migrate"]

_LOCK_KEY = 0x6B75726168690001  # "kurahi" + 1: the migration lock's advisory key

SQL_SCHEMA_EXISTS = "SELECT to_regclass('kurahi.schema_version') IS NOT NULL"
SQL_CURRENT_VERSION = "SELECT coalesce(max(version), 0) FROM kurahi.schema_version"
SQL_LOCK = "SELECT pg_advisory_xact_lock(%s)"
SQL_CREATE_VERSION_TABLE = (
    f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
    """CREATE TABLE IF NOT EXISTS kurahi.schema_version (
        version integer PRIMARY KEY,
        description text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
    )""",
)
SQL_RECORD_VERSION = "INSERT INTO kurahi.schema_version (version, description) VALUES (%s, %s)"


@dataclass(frozen=True, slots=True)
class MigrationResult:
    """What :func:`migrate` did."""

    before: int
    """The version found (0: a database Kurahi had never used)."""
    after: int
    """The version now (always :data:`SCHEMA_VERSION`)."""

    @property
    def applied(self) -> list[int]:
        """The versions applied by this call."""
        return list(range(self.before + 1, self.after + 1))


def current_version(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
    """The database's schema version (0 when Kurahi never created its tables there)."""
    row = conn.execute(SQL_SCHEMA_EXISTS).fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute(SQL_CURRENT_VERSION).fetchone()
    return int(found[0]) if found else 0


def _refuse_newer(found: int, where: str) -> None:
    if found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the database's schema is version {found}, newer than this Kurahi knows ({SCHEMA_VERSION}); "
            "refusing to read or write it (upgrade Kurahi)",
            where=where,
            found=found,
            known=SCHEMA_VERSION,
        )


def check_version(conn: psycopg.Connection[tuple[Any, ...]], where: str) -> int:
    """The version, after refusing one newer than the code or older than it (with the way out).

    Raises:
        SchemaVersionError: not :data:`SCHEMA_VERSION`.
    """
    found = current_version(conn)
    _refuse_newer(found, where)
    if found < SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the database's schema is version {found}, this Kurahi needs {SCHEMA_VERSION}: "
            "run `kurahi store migrate --store URL`",
            where=where,
            found=found,
            known=SCHEMA_VERSION,
        )
    return found


def migrate(conn: psycopg.Connection[tuple[Any, ...]], where: str) -> MigrationResult:
    """Bring the database to :data:`SCHEMA_VERSION` in one transaction (commits it).

    Args:
        conn: a connection with no transaction open.
        where: the database, for messages (no password).

    Raises:
        SchemaVersionError: the schema is newer than the code; nothing was changed.
    """
    with conn.transaction():
        conn.execute(SQL_LOCK, (_LOCK_KEY,))
        for statement in SQL_CREATE_VERSION_TABLE:
            conn.execute(statement)
        before = current_version(conn)
        _refuse_newer(before, where)
        for version in range(before + 1, SCHEMA_VERSION + 1):
            description, statements = MIGRATIONS[version - 1]
            for statement in statements:
                conn.execute(statement)
            conn.execute(SQL_RECORD_VERSION, (version, description))
    return MigrationResult(before, SCHEMA_VERSION)
