"""A database URL without its secret: what may be printed, and scrubbing what may not.

A ``postgres://`` URL can carry a password (``postgres://user:pw@host/db``); libpq can also
find one in ``PGPASSWORD``, a password file or the caller's ``password=``. The backend keeps
the full connection string to itself and shows only :func:`safe_url`'s form; any text that
came from the driver goes through :func:`scrub` before it reaches a message.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote

import psycopg.conninfo

from kurahi.errors import UsageError

__all__ = ["connection_string", "safe_url", "scrub"]


def connection_string(url: str, *, password: str | None = None) -> tuple[str, dict[str, str]]:
    """The libpq connection string for ``url`` (with ``password`` when given) and its parsed parameters.

    Raises:
        UsageError: not a connection URL libpq understands (the message never repeats the URL).
    """
    try:
        extra = {"password": password} if password is not None else {}
        conninfo = psycopg.conninfo.make_conninfo(url, **extra)
        params = {k: str(v) for k, v in psycopg.conninfo.conninfo_to_dict(conninfo).items() if v is not None}
    except psycopg.ProgrammingError as exc:
        raise UsageError("not a PostgreSQL URL libpq can read (postgres://user@host:port/db)") from exc
    return conninfo, params


def safe_url(params: dict[str, str]) -> str:
    """``postgresql://user@host:port/db``: the database's address, never the password."""
    user = params.get("user")
    host = params.get("host") or params.get("hostaddr") or "localhost"
    port = params.get("port")
    db = params.get("dbname") or user or ""
    who = f"{quote(user, safe='')}@" if user else ""
    if host.startswith("/"):
        return f"postgresql://{who}/{quote(db, safe='')}?host={quote(host, safe='/')}"
    hostport = f"[{host}]" if ":" in host and "," not in host else host
    return f"postgresql://{who}{hostport}{f':{port}' if port else ''}/{quote(db, safe='')}"


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret replaced by ``***`` (and its URL-quoted form too)."""
    for secret in secrets:
        if secret:
            for form in {secret, quote(secret, safe=""), quote(secret)}:
                text = text.replace(form, "***")
    return text
