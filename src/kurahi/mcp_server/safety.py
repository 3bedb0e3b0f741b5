"""What the server refuses and what it never hands out: argument checks and secret scrubbing.

Arguments come from a model, so every refusal names the argument and what is wrong with it in
words a model can act on (:class:`Refusal`). Text handed back passes through :func:`scrub` on
its way out (bearer tokens and API-key shaped strings go), whole, before it is cut to a
snippet, so a cut never leaves half a token readable; values under secret-looking keys (tool
arguments) are dropped by :func:`kurahi.store.redact.redact` when the text is extracted.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["MAX_KEY", "MAX_QUERY", "Refusal", "check_key_text", "check_text", "scrub"]

MAX_QUERY = 1000
"""Characters in a recall query or a check marker (the schema's bound too)."""
MAX_KEY = 300
"""Characters in a session key."""


class Refusal(Exception):
    """An argument the server will not act on; the message is for the model and names the argument."""


_SECRET_TEXT = re.compile(
    r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"  # an Authorization header's value, anywhere
    r"|\b(?:sk|rk|pk)-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}"  # OpenAI / Anthropic / Stripe style keys
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|\bxox[abpr]-[A-Za-z0-9-]{10,}"  # Slack tokens
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key ids
)


def scrub(text: str) -> str:
    """``text`` with token-shaped substrings replaced by ``[redacted]``."""
    return _SECRET_TEXT.sub("[redacted]", text)


def check_text(value: str, what: str, *, limit: int = MAX_QUERY) -> str:
    """``value`` if a model may search for it; else :class:`Refusal` naming ``what``.

    Refused: empty or blank text, more than ``limit`` characters, control characters other
    than tab and newline, and lone surrogates (half a UTF-16 pair, which no UTF-8 store holds).
    """
    if not value.strip():
        raise Refusal(f"{what}: empty; give words or a phrase to look for")
    if len(value) > limit:
        raise Refusal(f"{what}: {len(value):,} characters, more than the {limit:,} allowed")
    for i, ch in enumerate(value):
        cat = unicodedata.category(ch)
        if cat == "Cs":
            raise Refusal(f"{what}: a lone surrogate (U+{ord(ch):04X}) at character {i}; send valid Unicode text")
        if cat == "Cc" and ch not in "\t\n":
            raise Refusal(f"{what}: control character U+{ord(ch):04X} at character {i}; send plain text")
    return value


def check_key_text(key: str, agent: str | None) -> str:
    """A session key's shape, before it is looked up: not a path, not another agent's."""
    check_text(key, "key", limit=MAX_KEY)
    if "/" in key or "\\" in key or key.startswith(".") or "\x00" in key:
        raise Refusal(f"key {key!r}: looks like a path; a key is a session key such as 'agent:main:main'")
    parts = key.split(":")
    if agent is not None and len(parts) >= 2 and parts[0] == "agent" and parts[1] != agent:
        raise Refusal(f"key {key!r}: belongs to agent {parts[1]!r}; this server serves agent {agent!r} only")
    return key
