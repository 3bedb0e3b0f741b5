"""The audit chain as rows: ``seq`` and the record's line (canonical JSON, without its newline).

The chain's rules are :class:`~kurahi.store.audit.lines.LineAuditLog`'s; this supplies the
lines and the atomic "read the last, append the next": a transaction that takes
``SHARE ROW EXCLUSIVE`` on the table (one appender at a time across gateways, readers never
wait; released at commit, so no lock outlives its transaction).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import psycopg

from kurahi.errors import AuditWriteError, DatabaseUnavailableError
from kurahi.store.audit.lines import LineAuditLog

if TYPE_CHECKING:
    from kurahi.store.postgres.db import Database

__all__ = ["PostgresAudit"]

SQL_LINES = "SELECT line FROM kurahi.audit_chain ORDER BY seq"
SQL_LOCK = "LOCK TABLE kurahi.audit_chain IN SHARE ROW EXCLUSIVE MODE"
SQL_LAST = "SELECT seq, line FROM kurahi.audit_chain ORDER BY seq DESC LIMIT 1"
SQL_INSERT = (
    "INSERT INTO kurahi.audit_chain (seq, line) SELECT %s + n, l FROM unnest(%s::bytea[]) WITH ORDINALITY u (l, n)"
)


class PostgresAudit(LineAuditLog):
    """The audit chain in the database (see the module docstring)."""

    def __init__(self, db: Database, where: str, *, clock: Callable[[], datetime] | None = None) -> None:
        super().__init__(f"{where}#audit", clock=clock)
        self._db = db

    def __repr__(self) -> str:
        return f"PostgresAudit({self.locator!r})"

    def _lines(self) -> list[bytes] | None:
        lines = [bytes(r[0]) for r in self._db.query(SQL_LINES, binary=True)]
        return lines or None

    def _append_after_last(self, make: Callable[[bytes | None], bytes]) -> None:
        try:
            with self._db.transaction() as conn:
                conn.execute(SQL_LOCK)
                row = conn.execute(SQL_LAST).fetchone()
                seq, last = (int(row[0]), bytes(row[1])) if row else (0, None)
                conn.execute(SQL_INSERT, (seq, [make(last)]))
        except DatabaseUnavailableError as exc:
            raise AuditWriteError(f"not appended: {exc}", path=self.locator) from exc
        except psycopg.Error as exc:
            raise AuditWriteError(f"not appended: {self._db.failed(exc, 'audit append')}", path=self.locator) from None

    def import_lines(self, lines: Sequence[bytes]) -> None:
        r"""Store records made elsewhere (a copy), after the last one, in one transaction.

        Lines are taken as they are (with or without their ``\n``); :meth:`verify` checks them.
        """
        clean = [line.rstrip(b"\n") for line in lines]
        with self._db.transaction() as conn:
            conn.execute(SQL_LOCK)
            row = conn.execute(SQL_LAST).fetchone()
            conn.execute(SQL_INSERT, (int(row[0]) if row else 0, clean))
