"""The PostgreSQL backend (psycopg 3 and its pool): one database for many gateways.

* :mod:`~kurahi.store.postgres.backend`: :class:`PostgresBackend` and its agent stores.
* :mod:`~kurahi.store.postgres.transcripts`: transcripts as lines, appended under a lease.
* :mod:`~kurahi.store.postgres.leases`: one writer per transcript (lease rows, fencing tokens, owners).
* :mod:`~kurahi.store.postgres.catalog`, :mod:`~kurahi.store.postgres.logs`, :mod:`~kurahi.store.postgres.audit`:
  the session catalog, record logs and audit chain.
* :mod:`~kurahi.store.postgres.schema` and :mod:`~kurahi.store.postgres.migrations`: the tables and their migrations.
* :mod:`~kurahi.store.postgres.db` and :mod:`~kurahi.store.postgres.url`: the pool, errors, and URLs without secrets.
"""

from __future__ import annotations

from kurahi.store.postgres.backend import DEFAULT_LEASE_SECONDS, PostgresAgentStore, PostgresBackend
from kurahi.store.postgres.schema import SCHEMA_VERSION

__all__ = ["DEFAULT_LEASE_SECONDS", "SCHEMA_VERSION", "PostgresAgentStore", "PostgresBackend"]
