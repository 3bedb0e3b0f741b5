"""Markers Kurahi chooses for a rescue: distinctive phrases that prove a lost stretch came back.

A marker for a lost stretch must be in that stretch and absent from what the runtime sends
now (otherwise finding it after the repair proves nothing); ``lineage check`` then verifies it
is in the runtime's view of the candidate. What people say is preferred to what the model
answered: a user text first, then an assistant text.

Candidates, best first: a token that looks like a code or a name (``PURPLE-GIRAFFE-ALPHA``,
``4711-b``, ``ALLCAPS``); two adjacent content words (``copper sextant``); one long word.
Among equals, the longer and then the rarer in the history wins.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from kurahi.store.redact import REDACTED, scrub_text

__all__ = ["candidates", "choose"]

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_'’-]*[A-Za-z0-9]|[A-Za-z0-9]")
_STOP = frozenset(
    (
        "about",
        "above",
        "after",
        "again",
        "against",
        "also",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "could",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "from",
        "further",
        "have",
        "having",
        "here",
        "into",
        "itself",
        "just",
        "like",
        "more",
        "most",
        "other",
        "over",
        "please",
        "same",
        "should",
        "some",
        "such",
        "than",
        "that",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "under",
        "until",
        "very",
        "what",
        "when",
        "where",
        "which",
        "while",
        "with",
        "would",
        "your",
        "yours",
        "said",
        "says",
        "keep",
        "mind",
        "back",
        "later",
        "remember",
        "topic",
        "hello",
        "thanks",
        "thank",
        "turn",
        "message",
        "received",
    )
)
_MAX_TEXT = 4_000
"""Characters of one text looked at (a long tool dump holds no better phrase than its start)."""


def _code_like(word: str) -> bool:
    letters = any(c.isalpha() for c in word)
    return (
        ("-" in word.strip("-") and letters and len(word) >= 6)
        or (letters and any(c.isdigit() for c in word) and len(word) >= 4)
        or (word.isupper() and len(word) >= 5)
    )


def _content(word: str) -> bool:
    return word.isalpha() and len(word) >= 4 and word.lower() not in _STOP


def candidates(texts: Iterable[str]) -> Iterator[str]:
    """Every candidate phrase of some texts, with repeats (the caller counts and ranks them).

    Never a secret: a marker is printed, kept in the package and the audit chain, so each text is
    read with every secret-shaped part taken out (:func:`kurahi.store.redact.scrub_text`, the one
    pattern set), and no phrase spans the gap one left.
    """
    for text in texts:
        for part in scrub_text(text[:_MAX_TEXT]).split(REDACTED):
            words = _WORD.findall(part)
            for n, word in enumerate(words):
                if _code_like(word) or (_content(word) and len(word) >= 7):
                    yield word
                if n + 1 < len(words) and _content(word) and _content(words[n + 1]):
                    yield f"{word} {words[n + 1]}"


def _rank(phrase: str, counts: Counter[str]) -> tuple[int, int, int]:
    # Length first: a long code or name is what a person recognises, and what nothing else says.
    kind = 0 if _code_like(phrase) else 1 if " " in phrase else 2
    return (kind, -len(phrase), counts[phrase])


def choose(
    texts: Sequence[tuple[str, str]],
    *,
    absent_from: str,
    history: Sequence[str] = (),
    avoid: Iterable[str] = (),
    limit: int = 5,
) -> list[str]:
    """Up to ``limit`` phrases of ``texts``, best first, none of them in ``absent_from``.

    Args:
        texts: ``(role, text)`` of the stretch, user texts preferred.
        absent_from: the text of what the runtime sends now.
        history: the texts around (the lost stretches, the latest ones sent), to tell a rare phrase
            from a common one.
        avoid: phrases already chosen (for another stretch).
        limit: how many to return at most (the caller verifies them in order).
    """
    counts: Counter[str] = Counter(candidates(history))
    taken = set(avoid)
    out: list[str] = []
    for role in ("user", "assistant"):
        pool = Counter(candidates(t for r, t in texts if r == role))
        for phrase in sorted(pool, key=lambda p: _rank(p, counts)):
            if phrase in taken or phrase in absent_from or any(phrase in t or t in phrase for t in out):
                continue
            out.append(phrase)
            if len(out) >= limit:
                return out
    return out
