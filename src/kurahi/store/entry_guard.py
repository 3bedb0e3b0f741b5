"""Compare-and-set on one catalog entry: where the entry stands, and a guard that refuses the rest.

An activation switches a key's entry only from a state it expects (the entry it planned
against, the one it wrote, or that one used since). The guard is handed to
:meth:`~kurahi.store.base.SessionCatalog.set_entry`, which runs it under the catalog's lock;
it is built here, below the store's interface, so the store never calls back into its caller.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from kurahi.errors import PreconditionError
from kurahi.js.jcs import canonical_json, sha256_hex

__all__ = ["ABSENT", "entry_guard", "entry_sha256", "entry_state"]

ABSENT = "absent"
"""The hash of a file or entry that is not there."""


def entry_sha256(entry: dict[str, Any] | None) -> str:
    """The sha256 of a catalog entry's canonical JSON (RFC 8785), or ``absent``."""
    return ABSENT if entry is None else sha256_hex(canonical_json(entry))


def entry_state(entry: dict[str, Any] | None, *, old_sha: str, new_entry: dict[str, Any]) -> str:
    """``old`` (as planned), ``new`` (as written), ``used`` (the written session, used since) or ``other``."""
    sha = entry_sha256(entry)
    if sha == old_sha:
        return "old"
    if sha == entry_sha256(new_entry):
        return "new"
    if entry is not None and all(entry.get(k) == new_entry[k] for k in ("sessionId", "sessionFile")):
        return "used"
    return "other"


def entry_guard(
    key: str, *, old_sha: str, new_entry: dict[str, Any], accept: Collection[str]
) -> Callable[[dict[str, Any] | None], None]:
    """A check for ``set_entry`` that refuses an entry whose :func:`entry_state` is not in ``accept``.

    Raises (when called):
        PreconditionError: the entry was changed by someone else.
    """

    def check(current: dict[str, Any] | None) -> None:
        if entry_state(current, old_sha=old_sha, new_entry=new_entry) not in accept:
            raise PreconditionError(
                f"the catalog entry of {key!r} was changed by someone else",
                part="catalogEntry",
                expected=" or ".join(sorted(accept)),
                actual=entry_sha256(current),
            )

    return check
