"""Keeping secrets out of what is recorded: values under secret-looking keys become ``"[redacted]"``.

The audit chain is append-only and hashed, so a secret that entered it could never be taken
out again without breaking the chain. Redaction therefore happens before hashing, on the way
in, and errs on the side of hiding: a key is secret when, lowercased and without ``_`` and
``-``, it ends in ``token``, ``secret``, ``password``, ``passwd``, ``apikey``,
``authorization``, ``cookie`` or ``privatekey`` (``token``, ``ownerToken``, ``api_key``,
``apiKey``, ``Authorization``, ``clientSecret``, ``db-password``). A string that starts with
``Bearer `` is redacted wherever it is. Counts such as ``inputTokens`` or ``maxTokens`` are
not secrets and are kept.

Free text (a transcript's messages, a reset reason, evidence) has no keys to go by: it passes
through :func:`scrub_text`, the one set of secret patterns every output that can carry
transcript text uses (``kurahi mcp``'s answers and resources, ``rescue --html``, logs). It
replaces, with ``[redacted]``: private-key blocks (``-----BEGIN ... PRIVATE KEY-----`` to its
``END`` line, or to the end of the text when the block was cut), bare JWTs (``eyJ...`` in three
dotted parts), ``Authorization: Bearer/Basic`` values and any ``Bearer <token>``, OpenAI,
Anthropic and Stripe keys (``sk-``, ``sk_live_``, ``rk_test_``...), GitHub tokens (``ghp_``...,
``github_pat_``), Slack tokens (``xox?-``), Google API keys (``AIza`` + 35), Hugging Face tokens
(``hf_``), AWS access key ids (``AKIA``) and secret keys written as ``aws_secret_access_key=...``,
``password=``/``secret:``/``token=`` assignments, and the password of a URL's
``user:password@`` (the rest of the URL is kept). Its limits: it recognises shapes, so a
secret with no known prefix or label (a random password said in a sentence, a key split over
two messages, one spelled out or encoded) passes; a token-like string that is not a secret
may be hidden.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "looks_secret", "redact", "scrub_text"]

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


_SECRET_TEXT = re.compile(
    # a private key block, whole, or to the end of the text when it was cut
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)"
    r"|\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"  # a JWT (header.payload.signature)
    r"|(?i:\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,})"  # an Authorization header's value, anywhere
    r"|\b(?:sk|rk|pk)[-_](?:ant-(?:api\d+-)?|proj-|live[-_]|test[-_])?[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic, Stripe
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"  # GitHub tokens
    r"|\bxox[abpr]-[A-Za-z0-9-]{10,}"  # Slack tokens
    r"|\bAIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|\bhf_[A-Za-z0-9]{20,}"  # Hugging Face tokens
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key ids
    # a labelled secret (aws_secret_access_key=..., password: ..., "api_key": "..."): the label stays
    r"|(?P<label>(?i:\b[\w.-]*(?:secret|password|passwd|api[_-]?key|access[_-]?key|token)[\"']?\s*[:=]\s*[\"']?))"
    r"[^\s\"',;}]{6,}"
    r"|(?P<user>(?<=://)[^\s/:@]*):[^\s/@]+(?=@)",  # a URL's user:password@: the user stays
    re.DOTALL,
)


def _hide(m: re.Match[str]) -> str:
    if m.group("label") is not None:
        return m.group("label") + REDACTED
    if m.group("user") is not None:
        return m.group("user") + ":" + REDACTED
    return REDACTED


def scrub_text(text: str) -> str:
    """``text`` with every secret-shaped substring replaced by :data:`REDACTED` (see the module docstring)."""
    return _SECRET_TEXT.sub(_hide, text)
