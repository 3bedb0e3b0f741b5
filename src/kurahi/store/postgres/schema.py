"""The database layout, as an ordered list of migrations (each a list of SQL statements).

Everything lives in the schema ``kurahi``, so the tables share a database with anything else.
A migration is never edited once released: a change to the layout is a new migration at the
end of :data:`MIGRATIONS`, and :data:`SCHEMA_VERSION` is their count. ``kurahi.schema_version``
holds one row per migration applied (see :mod:`kurahi.store.postgres.migrations`).

The layout (version 1, and what later versions added)::

    agents            id                                          one row per agent
    transcripts       id, agent_id, name, created_at, modified_at, size, last_seq
    entries           transcript_id, seq, line (bytea)            each line once, as written
    leases            transcript_id, owner_id, token, expires_at  one writer per transcript
    owners            owner_id, instance, started_at, expires_at  one live process per owner id
                      conn_pid, conn_start (version 2)            its liveness connection
    catalog_entries   agent_id, key, position, value (json)       sessions.json, in order
    records           id, agent_id, log, line (bytea)             the ledger, jobs and queue logs
    audit_chain       seq, line (bytea)                           the hash-chained audit log

``entries.line`` is the transcript's line exactly as written, newline included (a torn last
line of an imported file has none), so a transcript is the concatenation of its lines in
``seq`` order, byte for byte; nothing else holds a copy of an entry, so storage grows with
the entries and nothing more. Catalog values are ``json`` (not ``jsonb``): ``json`` keeps the
text as given, so an entry's fields keep their order.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "SCHEMA", "SCHEMA_VERSION", "Migration"]

SCHEMA = "kurahi"
"""The PostgreSQL schema every table lives in."""

Migration = tuple[str, tuple[str, ...]]
"""A migration: what it does (one line) and its statements, run in order in one transaction."""

_V1: tuple[str, ...] = (
    """CREATE TABLE kurahi.agents (
        id text PRIMARY KEY,
        created_at timestamptz NOT NULL DEFAULT now()
    )""",
    """CREATE TABLE kurahi.transcripts (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        agent_id text NOT NULL REFERENCES kurahi.agents (id),
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        size bigint NOT NULL DEFAULT 0,
        last_seq bigint NOT NULL DEFAULT 0,
        UNIQUE (agent_id, name)
    )""",
    """CREATE TABLE kurahi.entries (
        transcript_id bigint NOT NULL REFERENCES kurahi.transcripts (id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        line bytea NOT NULL,
        PRIMARY KEY (transcript_id, seq)
    )""",
    """CREATE TABLE kurahi.leases (
        transcript_id bigint PRIMARY KEY REFERENCES kurahi.transcripts (id) ON DELETE CASCADE,
        owner_id text,
        token bigint NOT NULL,
        expires_at timestamptz NOT NULL
    )""",
    "CREATE INDEX leases_owner ON kurahi.leases (owner_id) WHERE owner_id IS NOT NULL",
    """CREATE TABLE kurahi.owners (
        owner_id text PRIMARY KEY,
        instance text NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
    )""",
    """CREATE TABLE kurahi.catalog_entries (
        agent_id text NOT NULL REFERENCES kurahi.agents (id),
        key text NOT NULL,
        position bigint NOT NULL,
        value json NOT NULL,
        PRIMARY KEY (agent_id, key)
    )""",
    "CREATE INDEX catalog_entries_order ON kurahi.catalog_entries (agent_id, position)",
    """CREATE TABLE kurahi.records (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        agent_id text NOT NULL REFERENCES kurahi.agents (id),
        log text NOT NULL CHECK (log IN ('ledger', 'jobs', 'queue')),
        line bytea NOT NULL
    )""",
    "CREATE INDEX records_log ON kurahi.records (agent_id, log, id)",
    """CREATE TABLE kurahi.audit_chain (
        seq bigint PRIMARY KEY,
        line bytea NOT NULL
    )""",
)

_V2: tuple[str, ...] = ("ALTER TABLE kurahi.owners ADD COLUMN conn_pid integer, ADD COLUMN conn_start timestamptz",)

MIGRATIONS: tuple[Migration, ...] = (
    ("agents, transcripts and entries, leases, catalog, record logs, audit chain", _V1),
    ("owners name their liveness connection, so a dead gateway is known dead when it dies", _V2),
)
"""Every migration, oldest first; version ``n`` is ``MIGRATIONS[n - 1]``."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The version this code reads and writes."""
