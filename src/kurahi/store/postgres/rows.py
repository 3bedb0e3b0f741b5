"""A transcript as rows: the statements that create one and insert its lines, and its bytes cut into lines.

Shared by appending (:mod:`kurahi.store.postgres.transcripts`) and by replacing a transcript
whole under a claim (:mod:`kurahi.store.postgres.claims`).
"""

from __future__ import annotations

__all__ = ["SQL_CREATE", "SQL_INSERT_LINES", "split_lines"]

SQL_CREATE = """
INSERT INTO kurahi.transcripts (agent_id, name, size, last_seq) VALUES (%s, %s, %s, %s)
ON CONFLICT (agent_id, name) DO NOTHING
RETURNING id
"""
SQL_INSERT_LINES = """
INSERT INTO kurahi.entries (transcript_id, seq, line)
SELECT %s, s, l FROM unnest(%s::bigint[], %s::bytea[]) AS u (s, l)
"""


def split_lines(data: bytes) -> list[bytes]:
    r"""``data`` cut after every ``\n`` (a last piece without one is kept as it is); joined, they are ``data``."""
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines
