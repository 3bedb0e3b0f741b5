"""Keeping secrets out of what is recorded: values under secret-looking keys become ``"[redacted]"``.

The audit chain is append-only and hashed, so a secret that entered it could never be taken
out again without breaking the chain. Redaction therefore happens before hashing, on the way
in, and errs on the side of hiding: a key is secret when, lowercased and without ``_`` and
``-``, it ends in ``token``, ``secret``, ``password``, ``passwd``, ``apikey``,
``authorization``, ``cookie`` or ``privatekey`` (``token``, ``ownerToken``, ``api_key``,
``apiKey``, ``Authorization``, ``clientSecret``, ``db-password``). A string that starts with
``Bearer `` is redacted wherever it is. Counts such as ``inputTokens`` or ``maxTokens`` are
not secrets and are kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "looks_secret", "redact"]

REDACTED = "[redacted]"
"""What a secret value is replaced by."""

_SECRET_SUFFIXES = ("token", "secret", "password", "passwd", "apikey", "authorization", "cookie", "privatekey")


def looks_secret(key: str) -> bool:
    """Whether a value under ``key`` must not be recorded (see the module docstring for the rule)."""
    norm = key.lower().replace("_", "").replace("-", "")
    return norm.endswith(_SECRET_SUFFIXES)


def redact(value: Any) -> Any:
    """A copy of ``value`` with every secret replaced by :data:`REDACTED`, at any depth.

    Mappings become ``dict``, tuples become ``list`` (JSON has only arrays); other values
    are returned as they are.
    """
    if isinstance(value, Mapping):
        return {k: REDACTED if isinstance(k, str) and looks_secret(k) else redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str) and value[:7].lower() == "bearer ":
        return REDACTED
    return value
