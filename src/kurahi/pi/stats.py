"""Facts about a transcript: sizes, shape of the tree, what kinds of entries it holds.

Pi 1.6.0's kinds are counted on their own: ``context_edit`` entries (what the model sees
differs from the bytes), ``usage`` entries and system-role messages.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec

from kurahi.js.values import MISSING
from kurahi.pi.transcript import Transcript, is_leaf_marker
from kurahi.pi.vocab import COMPACTION, CONTEXT_EDIT, CUSTOM, MESSAGE

__all__ = ["transcript_stats"]


class _RoleOnly(msgspec.Struct):
    message: msgspec.Raw = msgspec.Raw(b"null")


class _Role(msgspec.Struct):
    role: Any = None


_role_decode = msgspec.json.Decoder(_RoleOnly).decode
_inner_decode = msgspec.json.Decoder(_Role).decode


def _role_of(t: Transcript, index: int) -> str:
    # Decoding just the role skips building the message's content (most of the bytes).
    try:
        role = _inner_decode(_role_decode(t.raw_line(index)).message).role
    except (msgspec.DecodeError, msgspec.ValidationError):
        msg = t.entry_at(index).data.get("message")
        role = msg.get("role") if isinstance(msg, dict) else None
    if role == "hookMessage" and t.migrated_from is not None:
        role = "custom"
    return role if isinstance(role, str) else "(none)"


def transcript_stats(t: Transcript) -> dict[str, Any]:
    """Summarise a transcript in one JSON-ready dict (one pass over the skeletons).

    Message roles, labels and the session name need the entries themselves; those few are
    decoded, the rest of the file is not.
    """
    type_column, ids, parents = t.columns()
    n = len(ids)
    types: Counter[str] = Counter()
    children: Counter[Any] = Counter()
    roots = 0
    orphans = 0
    by_id = t.id_positions()
    for type_, pid in zip(type_column, parents, strict=True):
        types[type_ if isinstance(type_, str) else "(none)"] += 1
        if pid is None:
            roots += 1
        elif isinstance(pid, str) and pid:
            if pid in by_id:
                children[pid] += 1
            else:
                orphans += 1
    duplicate_ids = n - len(by_id)
    branch_points = sum(1 for c in children.values() if c > 1)
    leaves = sum(1 for id_ in ids if isinstance(id_, str) and children.get(id_, 0) == 0)
    roles: Counter[str] = Counter()
    markers = 0
    for i, type_ in enumerate(type_column):
        if type_ == MESSAGE:
            roles[_role_of(t, i)] += 1
        elif type_ == CUSTOM and is_leaf_marker(type_, t.entry_at(i).data, t.entry_at(i).parent_id):
            markers += 1
    leaf = t.leaf_id
    path_len = 0
    cycles = t.find_cycles()
    if leaf is not None and not cycles:
        path_len = len(t.path_indices(n - 1))
    first_ts = t.entry_at(0).data.get("timestamp") if n else None
    last_ts = t.entry_at(n - 1).data.get("timestamp") if n else None
    labels = {k: v for k, v in t.labels().items() if isinstance(k, str)}
    return {
        "file": t.name,
        "sessionId": t.session_id,
        "version": t.version if t.version is not MISSING else None,
        "migratedFrom": t.migrated_from,
        "cwd": t.header.get("cwd"),
        "parentSession": t.header.get("parentSession"),
        "created": t.header.get("timestamp"),
        "name": t.session_name,
        "bytes": t.size,
        "entries": n,
        "types": dict(sorted(types.items())),
        "roles": dict(sorted(roles.items())),
        "roots": roots,
        "orphans": orphans,
        "branchPoints": branch_points,
        "leaves": leaves,
        "leafId": None if leaf is MISSING else leaf,
        "pathLength": path_len,
        "compactions": types.get(COMPACTION, 0),
        "contextEdits": types.get(CONTEXT_EDIT, 0),
        "usageEntries": types.get("usage", 0),
        "systemMessages": roles.get("system", 0),
        "labels": len(labels),
        "leafMarkers": markers,
        "duplicateIds": duplicate_ids,
        "cycles": cycles,
        "firstEntryAt": first_ts,
        "lastEntryAt": last_ts,
        "tornTail": t.torn_tail is not None,
        "endsWithNewline": t.ends_with_newline,
        "warnings": [{"line": w.line, "message": w.message} for w in t.warnings],
    }
