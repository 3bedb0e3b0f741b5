"""The session catalog as rows: one per key, its entry as ``json`` text, a position keeping the order.

:class:`~kurahi.store.catalog.CatalogBase` holds the rules (keys, fields, clocks, no-op
changes); this supplies its two primitives. A change locks the agent's row
(``SELECT ... FOR UPDATE``, released at commit), reads every entry, applies the change and
writes only what differs: deleted keys, changed entries, new keys after the last position.
So changes to one agent's catalog are serialised across gateways, and readers never wait.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
import psycopg

from kurahi.errors import CatalogCorruptError, CatalogError, DatabaseUnavailableError
from kurahi.store.catalog import CatalogBase
from kurahi.store.catalog_format import Entry, Store, parse_catalog
from kurahi.store.postgres.scope import AgentScope

__all__ = ["PostgresCatalog", "decode_entry", "encode_entry"]

T = TypeVar("T")

SQL_LOAD = "SELECT key, position, value::text FROM kurahi.catalog_entries WHERE agent_id = %s ORDER BY position"
SQL_LOCK_AGENT = "SELECT 1 FROM kurahi.agents WHERE id = %s FOR UPDATE"
SQL_DELETE = "DELETE FROM kurahi.catalog_entries WHERE agent_id = %s AND key = ANY(%s)"
SQL_UPSERT = """
INSERT INTO kurahi.catalog_entries (agent_id, key, position, value)
SELECT %s, k, p, v::json FROM unnest(%s::text[], %s::bigint[], %s::text[]) AS u (k, p, v)
ON CONFLICT (agent_id, key) DO UPDATE SET position = excluded.position, value = excluded.value
"""

_ENCODER = msgspec.json.Encoder()


def encode_entry(entry: Entry) -> str:
    r"""An entry's JSON text, compact, fields in order (a lone surrogate written as its ``\uXXXX`` escape)."""
    try:
        return _ENCODER.encode(entry).decode("utf-8")
    except (msgspec.EncodeError, UnicodeEncodeError, OverflowError, TypeError):
        return json.dumps(entry, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def decode_entry(text: str, *, path: str, key: str) -> Entry:
    """Parse a stored entry as the file catalog parses ``sessions.json`` (leniently, as ``JSON.parse`` does).

    Raises:
        CatalogCorruptError: it is not a JSON object; nothing is ever written over it.
    """
    data = text.encode("utf-8", "surrogatepass")
    store = parse_catalog(b'{"e":' + data + b"}", path=path)
    entry: Any = store.get("e")
    if not isinstance(entry, dict):
        raise CatalogCorruptError("stored entry is not a JSON object", path=path, key=key)
    return entry


class PostgresCatalog(CatalogBase):
    """One agent's catalog in the database (see the module docstring)."""

    def __init__(self, agent: AgentScope, *, clock: Callable[[], int] | None = None) -> None:
        self._agent = agent
        self.path = f"{agent.backend.describe()}#{agent.agent_id}/sessions.json"
        self._clock = clock or (lambda: time.time_ns() // 1_000_000)

    def __repr__(self) -> str:
        return f"PostgresCatalog({self.path!r})"

    def _rows(self, conn: psycopg.Connection[tuple[Any, ...]]) -> tuple[Store, dict[str, int]]:
        return self._decode(conn.execute(SQL_LOAD, (self._agent.agent_id,)).fetchall())

    def _decode(self, rows: list[tuple[Any, ...]]) -> tuple[Store, dict[str, int]]:
        store: Store = {}
        positions: dict[str, int] = {}
        for key, position, text in rows:
            store[key] = decode_entry(text, path=str(self.path), key=key)
            positions[key] = int(position)
        return store, positions

    def _load(self) -> Store:
        try:
            rows = self._agent.backend.db.query(SQL_LOAD, (self._agent.agent_id,))
            return self._decode(rows)[0]
        except DatabaseUnavailableError as exc:
            raise CatalogError(str(exc), path=self.path) from exc

    def _transaction(self, change: Callable[[Store], tuple[T, bool]]) -> T:
        try:
            with self._agent.backend.db.transaction() as conn:
                self._agent.ensure_agent(conn)
                conn.execute(SQL_LOCK_AGENT, (self._agent.agent_id,))
                store, positions = self._rows(conn)
                before = dict(store)
                result, changed = change(store)
                if changed:
                    self._write(conn, before, positions, store)
                return result
        except DatabaseUnavailableError as exc:
            raise CatalogError(str(exc), path=self.path) from exc
        except psycopg.Error as exc:
            raise CatalogError(str(self._agent.backend.db.failed(exc, "catalog change")), path=self.path) from None

    def _write(
        self, conn: psycopg.Connection[tuple[Any, ...]], before: Store, positions: dict[str, int], after: Store
    ) -> None:
        gone = [k for k in before if k not in after]
        if gone:
            conn.execute(SQL_DELETE, (self._agent.agent_id, gone))
        kept = [k for k in after if k in positions]
        in_order = all(positions[a] < positions[b] for a, b in itertools.pairwise(kept))
        keys: list[str] = []
        places: list[int] = []
        values: list[str] = []
        top = max(positions.values(), default=0)
        for index, (key, entry) in enumerate(after.items(), 1):
            if not in_order:  # the change reordered keys: number them all again
                place = index
            elif key in positions:
                place = positions[key]
            else:
                top += 1
                place = top
            if key in positions and place == positions[key] and before[key] is entry:
                continue  # the same object: unchanged
            keys.append(key)
            places.append(place)
            values.append(encode_entry(entry))
        if keys:
            conn.execute(SQL_UPSERT, (self._agent.agent_id, keys, places, values))
