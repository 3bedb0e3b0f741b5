"""Pi's ``byId``: the index of the *last* entry line carrying each id, built lazily.

A dict of 200k fresh strings costs as much as a third of the whole scan, and a path walk
needs only a few hundred lookups, nearly all of them for the entry just before the one
asking. So when every id is a string of one length, the ids are joined into one string
and a walk searches it backwards from where it stands; afterwards it confirms that the
ids it found occur once (then the nearest occurrence is the last one, Pi's answer). A
caller doing many unrelated lookups, a file with odd ids, or a repeated id on the path
gets a real dict instead. Both answer the same.

Skeletons from the C scanner bring their own index (a hash table in C, the last line
winning), which answers string lookups directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from kurahi.store.scan import id_key

__all__ = ["IdIndex"]

_SEP = "\x00"
_get_id = attrgetter("id")
_DICT_AFTER = 64
"""Lookups without a position hint after which a dict pays for itself."""


class IdIndex:
    """Map ids to entry positions as Pi's ``byId`` does (a later line wins).

    Args:
        skeletons: the entries in file order (anything with an ``id`` attribute;
            ``msgspec.UNSET`` for an entry without one).
    """

    def __init__(self, skeletons: Sequence[Any]) -> None:
        self._sks = skeletons
        self._dict: dict[Any, int] | None = None
        self._blob: str | None = None
        self._ids: list[str] | None = None
        self._width = 0
        self._far_lookups = 0
        self._tried_blob = False
        # Only when every entry came from the C scanner: then every id is a string.
        self._table: Any = getattr(skeletons, "table", None)

    # -- building -----------------------------------------------------------------------

    def as_dict(self) -> dict[Any, int]:
        """The full mapping (id key -> position), built on first use."""
        if self._dict is None:
            id_list = getattr(self._sks, "id_list", None)
            ids = id_list() if id_list is not None else list(map(_get_id, self._sks))
            if all(type(k) is str for k in ids):
                self._dict = dict(zip(ids, range(len(ids)), strict=True))
            else:
                self._dict = {k if type(k) is str else id_key(k): i for i, k in enumerate(ids)}
            self._blob = None
            self._ids = None
        return self._dict

    def _try_blob(self) -> bool:
        self._tried_blob = True
        id_list = getattr(self._sks, "id_list", None)
        ids = id_list() if id_list is not None else list(map(_get_id, self._sks))
        if not ids or set(map(type, ids)) != {str}:
            return False
        width = len(ids[0])
        if width == 0 or min(map(len, ids)) != width or max(map(len, ids)) != width:
            return False
        tail = getattr(self._sks, "tail_ids_joined", "")
        if tail:
            # The scan's other half arrived already joined: join only the head.
            head = ids[: len(ids) - tail.count(_SEP) - 1]
            blob = _SEP + _SEP.join(head) + _SEP + tail + _SEP
        else:
            blob = _SEP + _SEP.join(ids) + _SEP
        if blob.count(_SEP) != len(ids) + 1:  # an id holding the separator itself
            return False
        self._ids, self._blob, self._width = ids, blob, width
        return True

    def confirm_unique(self, found: set[str]) -> bool:
        """Whether each of ``found`` occurs once; if not, switch to the dict for good.

        The blob search answers with the occurrence nearest the asker. That is Pi's answer
        (the last one in the file) exactly when the id occurs once: checking the few ids a
        walk found is much cheaper than proving every id unique up front.
        """
        if self._blob is None or self._ids is None:
            return True
        hits = sum(1 for _ in filter(found.__contains__, self._ids))
        if hits == len(found):
            return True
        self.as_dict()
        return False

    # -- lookups ------------------------------------------------------------------------

    def get(self, entry_id: Any, near: int | None = None) -> int | None:
        """Position of the last entry with ``entry_id``, or ``None``.

        Args:
            entry_id: the id (``MISSING``/``UNSET`` for entries without one).
            near: a position the answer is probably just before (a child's), to search from.
        """
        if self._table is not None and self._dict is None:
            if type(entry_id) is not str:
                return None  # every id is a string, and a Map never matches a string to anything else
            pos: int = self._table.get(entry_id)
            return None if pos < 0 else pos
        if self._dict is None and type(entry_id) is str:
            if not self._tried_blob:
                self._try_blob()
            if self._blob is not None and (near is not None or self._far_lookups < _DICT_AFTER):
                return self._blob_get(entry_id, near)
        key = entry_id if type(entry_id) is str else id_key(entry_id)
        return self.as_dict().get(key)

    def _blob_get(self, entry_id: str, near: int | None) -> int | None:
        blob = self._blob
        assert blob is not None
        if len(entry_id) != self._width or _SEP in entry_id:
            return None
        token = _SEP + entry_id + _SEP
        step = self._width + 1
        if near is None:
            # From the end: the last occurrence, Pi's answer, whatever repeats.
            self._far_lookups += 1
            pos = blob.rfind(token)
        else:
            # Nearest the asker first; a walk confirms afterwards that what it found is
            # unique (confirm_unique), which makes this Pi's answer too.
            split = min(near, len(self._sks)) * step + 1
            pos = blob.rfind(token, 0, split + self._width)
            if pos < 0:
                pos = blob.find(token, split - 1)
        return None if pos < 0 else pos // step
