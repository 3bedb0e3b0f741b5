"""TEMPORARY (until kurahi.testing_pg lands on main): pg_url from a server named by KURAHI_DEV_PG."""

from __future__ import annotations

import itertools
import os
import uuid

import psycopg
import pytest

_n = itertools.count()


@pytest.fixture
def pg_url() -> str:
    admin = os.environ.get("KURAHI_DEV_PG")
    if not admin:
        pytest.skip("!!! no PostgreSQL: set KURAHI_DEV_PG !!!")
    name = f"t_{uuid.uuid4().hex[:12]}_{next(_n)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return admin.rsplit("/", 1)[0] + "/" + name
