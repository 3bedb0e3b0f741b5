"""Record logs (the ledger, jobs, queue) as rows: one row per record, its JSON bytes as encoded once.

Records are ordered by an identity column, so a log reads back in the order its appends
committed; appending never reads the log. A record that belongs with a transcript entry (a
tool call's intent) is inserted in the entry's transaction instead (see
:mod:`kurahi.store.postgres.transcripts`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import msgspec
import psycopg

from kurahi.errors import DatabaseUnavailableError, JournalWriteError
from kurahi.store.base import RecordLog
from kurahi.store.postgres.scope import AgentScope
from kurahi.store.record_log import decode_records, encode_record

if TYPE_CHECKING:
    from kurahi.store.postgres.db import Conn

__all__ = ["SQL_APPEND_RECORDS", "SQL_RECORDS", "SQL_RECORDS_CONTAINING", "PostgresLog"]

SQL_APPEND_RECORDS = """
INSERT INTO kurahi.records (agent_id, log, line)
SELECT %s, %s, l FROM unnest(%s::bytea[]) WITH ORDINALITY AS u (l, n) ORDER BY n
"""
"""Append records to one log, in the order given."""
SQL_RECORDS = "SELECT line FROM kurahi.records WHERE agent_id = %s AND log = %s ORDER BY id"
SQL_RECORDS_CONTAINING = (
    "SELECT line FROM kurahi.records WHERE agent_id = %s AND log = %s AND position(%s IN line) > 0 ORDER BY id"
)
"""The records of one log whose bytes contain a needle (a superset of what is asked: decoded and checked after)."""
_PLAIN = re.compile(r"[ -~]*")


class PostgresLog(RecordLog):
    """One agent's record log ``name`` in the database."""

    def __init__(self, agent: AgentScope, name: str, *, durable: bool = True) -> None:
        self.name = name
        self.agent_id = agent.agent_id
        self._agent = agent
        self.db = agent.backend.db
        self._durable = durable
        self.locator = f"{agent.backend.describe()}#{agent.agent_id}/{name}"

    def __repr__(self) -> str:
        return f"PostgresLog({self.locator!r})"

    def ensure_agent(self, conn: Conn) -> None:
        """Make the agent's row (once per agent store) inside ``conn``'s transaction."""
        self._agent.ensure_agent(conn)

    def append(self, rec: Mapping[str, Any]) -> None:
        """See :meth:`RecordLog.append`."""
        self.append_many([rec])

    def append_many(self, recs: Iterable[Mapping[str, Any]]) -> None:
        """Append several records in one transaction (all or none), in order.

        Raises:
            JournalWriteError: one is not JSON, or the database refused; nothing was appended.
        """
        try:
            lines = [encode_record(r) for r in recs]
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            raise JournalWriteError(f"not a JSON record: {exc}", path=self.locator) from exc
        if not lines:
            return
        try:
            with self.db.transaction(durable=self._durable) as conn:
                self.ensure_agent(conn)
                conn.execute(SQL_APPEND_RECORDS, (self.agent_id, self.name, lines))
            self._agent.known()
        except DatabaseUnavailableError as exc:
            raise JournalWriteError(f"not appended: {exc}", path=self.locator) from exc
        except psycopg.Error as exc:
            raise JournalWriteError(f"not appended: {self.db.failed(exc, 'append')}", path=self.locator) from None

    def lines(self) -> list[bytes]:
        """Every record's stored bytes, in order."""
        return [bytes(r[0]) for r in self.db.query(SQL_RECORDS, (self.agent_id, self.name), binary=True)]

    def records(self) -> Iterator[dict[str, Any]]:
        """See :meth:`RecordLog.records`."""
        yield from decode_records(self.lines())

    def records_where(self, field: str, value: str) -> Iterator[dict[str, Any]]:
        """See :meth:`RecordLog.records_where`: only the rows that hold ``value`` leave the database."""
        if not _PLAIN.fullmatch(value) or '"' in value or "\\" in value:
            yield from super().records_where(field, value)  # escapes would differ: read it all
            return
        needle = b'"' + value.encode() + b'"'
        rows = self.db.query(SQL_RECORDS_CONTAINING, (self.agent_id, self.name, needle), binary=True)
        for rec in decode_records(bytes(r[0]) for r in rows):
            if rec.get(field) == value:
                yield rec

    def close(self) -> None:
        """Nothing to release (connections belong to the backend's pool)."""
