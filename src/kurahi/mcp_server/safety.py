"""What the server refuses and what it never hands out: argument checks and secret scrubbing.

Arguments come from a model, so every refusal names the argument and what is wrong with it in
words a model can act on (:class:`Refusal`). Text handed back passes through :func:`scrub` on
its way out (the one secret-pattern set, :func:`kurahi.store.redact.scrub_text`), whole, before it is cut to a
snippet, so a cut never leaves half a token readable; values under secret-looking keys (tool
arguments) are dropped by :func:`kurahi.store.redact.redact` when the text is extracted.
"""

from __future__ import annotations

import re
import unicodedata

from kurahi.store.redact import scrub_text

__all__ = ["MAX_KEY", "MAX_QUERY", "Refusal", "check_key_text", "check_text", "quoted", "scrub", "tidy"]

MAX_QUERY = 1000
"""Characters in a recall query or a check marker (the schema's bound too)."""
MAX_KEY = 300
"""Characters in a session key."""


class Refusal(Exception):
    """An argument the server will not act on; the message is for the model and names the argument."""


def scrub(text: str) -> str:
    """``text`` with secret-shaped substrings replaced by ``[redacted]`` (:func:`kurahi.store.redact.scrub_text`)."""
    return scrub_text(text)


_ABSOLUTE_PATH = re.compile(r"(?<![\w:/.~-])/(?:[^\s/,;'\"()]+/)+([^\s/,;'\"()]+)")


def tidy(text: str) -> str:
    """A finding about the state (evidence, a reset reason, a note), fit to hand out.

    Scrubbed like transcript text, and every absolute path cut to its last name: where the
    state or a catalog's ``sessionFile`` lies on this machine is not the agent's to know.
    """
    return _ABSOLUTE_PATH.sub(lambda m: "…/" + m.group(1), scrub(text))


def quoted(value: str, limit: int = 40) -> str:
    """``value`` as a refusal quotes it: ``repr``, scrubbed, and cut (a 100 KB URI is not echoed back)."""
    value = scrub(value)
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}… ({len(value):,} characters)"


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
