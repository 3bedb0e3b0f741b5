"""A transcript's vocabulary, spelled once: the entry kinds and the fields that carry entry ids.

Every room that reads or writes entries names kinds and id fields through this module, so a
kind Pi adds, or a field that starts pointing at another entry (which stitch, rename and
replay must then remap), is added in one place. Plain strings, no imports: the quick
projection (:mod:`kurahi.pi.read.quick`) loads it in a fresh process.
"""

from __future__ import annotations

__all__ = [
    "BRANCH_SUMMARY",
    "COMPACTION",
    "CONTEXT_EDIT",
    "CUSTOM",
    "CUSTOM_MESSAGE",
    "FIRST_KEPT_ENTRY_ID",
    "FROM_ID",
    "ID",
    "ID_FIELDS",
    "KINDS",
    "LABEL",
    "LEAF_ID",
    "LEAF_MARKER_TYPE",
    "MAX_LINE_BYTES",
    "MESSAGE",
    "MODEL_CHANGE",
    "PARENT_ID",
    "REFERENCE_FIELDS",
    "RESET",
    "SESSION",
    "SESSION_INFO",
    "TARGET_ID",
    "THINKING_LEVEL_CHANGE",
    "USAGE",
]

# -- entry kinds: the ``type`` of a line ----------------------------------------------------

SESSION = "session"
"""The header (the first parseable line); a later one is ignored."""
MESSAGE = "message"
"""A user, assistant, tool result or system message (``message``)."""
THINKING_LEVEL_CHANGE = "thinking_level_change"
MODEL_CHANGE = "model_change"
COMPACTION = "compaction"
"""A summary of what came before ``firstKeptEntryId``."""
BRANCH_SUMMARY = "branch_summary"
"""A summary of the branch left at ``fromId``."""
CUSTOM = "custom"
"""An extension's state; not in the context (Kurahi's leaf moves are ``custom``)."""
CUSTOM_MESSAGE = "custom_message"
"""An extension's message, in the context."""
LABEL = "label"
"""A label on ``targetId``."""
SESSION_INFO = "session_info"
"""The session's display name."""
CONTEXT_EDIT = "context_edit"
"""Pi 1.6.0: replaces (or with ``replacement: null`` removes) what ``targetId`` contributes."""
USAGE = "usage"
"""Pi 1.6.0: token usage; no context."""
RESET = "reset"
"""OpenClaw 2026.9: the session was reset here; its runtime sends only what follows."""

KINDS = frozenset(
    {
        SESSION,
        MESSAGE,
        THINKING_LEVEL_CHANGE,
        MODEL_CHANGE,
        COMPACTION,
        BRANCH_SUMMARY,
        CUSTOM,
        CUSTOM_MESSAGE,
        LABEL,
        SESSION_INFO,
        CONTEXT_EDIT,
        USAGE,
        RESET,
    }
)
"""Every kind Kurahi knows; any other is kept and copied as it is, and contributes nothing."""

LEAF_MARKER_TYPE = "kurahi.leaf"
"""``customType`` of the ``custom`` entry Kurahi appends to persist a leaf move."""

# -- fields that carry entry ids ------------------------------------------------------------

ID = "id"
PARENT_ID = "parentId"
FIRST_KEPT_ENTRY_ID = "firstKeptEntryId"
"""In a ``compaction``: the first entry it keeps."""
TARGET_ID = "targetId"
"""In a ``label`` or ``context_edit``: the entry it applies to."""
FROM_ID = "fromId"
"""In a ``branch_summary``: the entry the branch was left from (``"root"`` for none)."""
LEAF_ID = "leafId"
"""In the ``data`` of a leaf move (:data:`LEAF_MARKER_TYPE`): the leaf it moves to."""

REFERENCE_FIELDS = (TARGET_ID, FIRST_KEPT_ENTRY_ID, FROM_ID)
"""Top-level fields, other than ``parentId``, whose value is another entry's id."""
ID_FIELDS = (ID, PARENT_ID, *REFERENCE_FIELDS)
"""Every top-level field whose value is an entry id: what renaming an id must rewrite
(and :data:`LEAF_ID` inside a leaf move's ``data``)."""

MAX_LINE_BYTES = (1 << 29) - 24
"""Longest line Kurahi reads: V8's longest string (``buffer.constants.MAX_STRING_LENGTH``,
the same in Node 20 and 24), so the longest line Pi's loader can hold. Every shorter line is
read, whatever its size; a file with a longer line is refused whole, naming the line (Pi's
loader throws on it too). Kurahi counts bytes, V8 UTF-16 units: a line of multi-byte
characters just over the limit in bytes is refused though Pi might read it; refused, never
dropped. (:mod:`kurahi.pi.read.scan` gives it its meaning; every reader reads it here.)"""
