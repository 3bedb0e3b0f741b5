"""What an OpenClaw agent store's schema means, and whether activation may write into it.

A schema version names the tables, not everything in the file: a trigger or a unique index
someone added keeps the version and changes what a write does (an extra trigger on
``transcript_events`` can delete other sessions' rows as activation inserts its own). Yet the
text of the ``CREATE`` statements is no measure either: OpenClaw's own upgrade from 2026.9.5
leaves ``CREATE TABLE "transcript_events"`` quoted (SQLite writes it so after ``ALTER TABLE …
RENAME``), other indentation, a column added by ``ALTER TABLE … ADD COLUMN`` at the end of its
table, and ``sqlite_stat1``; the store means exactly what a fresh 2026.9.6 store means.

So the schema is read through SQLite itself into what it means (:func:`describe`): each
table's columns by name with their declared type, ``NOT NULL``, default and primary-key
place, its foreign keys, ``STRICT`` and ``WITHOUT ROWID``; each unique index by its columns
and its partial ``WHERE`` (normalised); each trigger by its normalised statement. The
reference is OpenClaw 2026.9.6's, built the same way from its ``CREATE`` statements of the
tables activation writes (:data:`ACTIVATION_TABLES`), shipped beside this module
(``reference-2026.9.6.sql``, each statement pinned by :data:`KNOWN_OBJECTS`), and
:func:`schema_problems` names every difference a write would notice:

- a table activation writes missing, or of another kind (``STRICT``, ``WITHOUT ROWID``,
  another full-text definition), or with other foreign keys;
- a column of it missing (but one of :data:`FIRST_USE_COLUMNS`), or with another type, ``NOT
  NULL``, default or key place; a column the reference lacks that is ``NOT NULL`` without a
  default (activation's inserts name their columns and would not fill it);
- a unique index (or ``UNIQUE``/``PRIMARY KEY`` constraint) on those tables missing, added or
  defined otherwise: it decides which insert fails;
- a trigger on those tables missing, added or defined otherwise;
- a ``CHECK`` constraint on those tables that OpenClaw 2026.9.6 does not have and that reads a
  column activation fills (it may refuse a row; one of OpenClaw's that is missing refuses
  nothing, and is accepted).

Everything else is accepted: whitespace and quoting, the order of columns and of objects, an
additive nullable column, SQLite's own ``sqlite_*`` objects, plain indexes (they never change
what a write does), and the tables, indexes and triggers of tables activation never writes
(OpenClaw creates some lazily, on first use, and rebuilds others between releases).

:data:`KNOWN_OBJECTS` was read from a store OpenClaw 2026.9.6 wrote
(``tests/data/openclaw/2026.9.6-full``; a test reads it again and compares): type, name,
table and the first 24 hex digits of the sha256 of the ``CREATE`` statement's UTF-8.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sqlite3
from dataclasses import dataclass
from importlib import resources

__all__ = [
    "ACTIVATION_TABLES",
    "FIRST_USE_COLUMNS",
    "KNOWN_OBJECTS",
    "Column",
    "Schema",
    "Table",
    "describe",
    "normalised_sql",
    "reference",
    "reference_sql",
    "schema_objects",
    "schema_problems",
]

_KNOWN = """
index idx_agent_acp_parent_stream_run acp_parent_stream_events ef38b003f71bf22a77a8d780
index idx_agent_board_widgets_tab_position board_widgets 1f21fce2626d07ce45282daf
index idx_agent_cache_expiry cache_entries 0681f3ea5c84cd5347ed324e
index idx_agent_cache_updated cache_entries fc9314a1470d16c41df22578
index idx_agent_context_engine_turn_outbox_engine context_engine_turn_outbox 0fd82715250530ee40a2f808
index idx_agent_conversation_deliveries_reply conversation_deliveries 48ea675893355624f5a65dc7
index idx_agent_conversation_deliveries_updated conversation_deliveries e620c8e529310f6b1b0b61a2
index idx_agent_conversations_identity conversations a9282d173b48903dac3d4757
index idx_agent_conversations_lookup conversations 2bc3f14db461a3596c058e1c
index idx_agent_conversations_updated conversations 8dd11313b268b415d10f0b2a
index idx_agent_message_tool_run_outcomes_occurred message_tool_run_outcomes 34bdba2266236fd9f6610108
index idx_agent_session_conversations_conversation session_conversations 6d26609ceb571c9582e2ee6f
index idx_agent_session_conversations_primary session_conversations d0d5ce6148c770ce1d048c9d
index idx_agent_session_goal_operations_expiry session_goal_operations e3f8fb8cb7f13dd3680098b6
index idx_agent_session_members_identity session_members ee350d6a00b216217f8df15a
index idx_agent_session_nodes_active session_nodes 098bbe411a2948f648e45c52
index idx_agent_session_nodes_archived_at session_nodes 2b8c7df0877caf5d0301e347
index idx_agent_session_nodes_current_session_id session_nodes 2696e6aabd9af51e30667cbb
index idx_agent_session_nodes_entry_not_valid session_nodes 7dd44b7af34d7ec53fd45d10
index idx_agent_session_nodes_entry_valid_pending session_nodes 895deb23b62c93f771cf6c84
index idx_agent_session_nodes_label session_nodes 13ddff4ef8afc9c89193a96a
index idx_agent_session_nodes_last_interaction_at session_nodes ac504947790437f8021a0e82
index idx_agent_session_nodes_parent_session_key session_nodes a252437dfbc1b87d2d34f882
index idx_agent_session_nodes_spawned_by session_nodes 51567088d3f577846078fe0d
index idx_agent_session_nodes_status session_nodes 9e7ee0963ad2409d030a6b33
index idx_agent_session_nodes_updated_at session_nodes 32fb1f7b3480f84b1a9e7d1f
index idx_agent_session_pending_inputs_session session_pending_inputs fd4183fea72c2b4eeb7f6387
index idx_agent_session_suggestions_author_created session_suggestions 3b5395605a786545e36100d8
index idx_agent_session_suggestions_session_state_created session_suggestions 524499029d140486020d06d8
index idx_agent_session_transcript_archives_pending session_transcript_archives 547bdcc5272fab15750d2ba1
index idx_agent_session_transcript_archives_retention session_transcript_archives 8fe8a2a7d32b7fec80fe19ea
index idx_agent_session_windows_conversation session_windows 553a7b8cfaecd5517723e9d5
index idx_agent_session_windows_created_at session_windows 81b2d0da92b6a1132576f893
index idx_agent_session_windows_session_key session_windows 05094170ea2781ef9bae489e
index idx_agent_session_windows_updated_at session_windows 884a38aa758b587b55583ebb
index idx_agent_trajectory_runtime_run trajectory_runtime_events a5c704c6dcc4210e78da6de3
index idx_agent_transcript_active_event_seq session_transcript_active_events f16ed1ff7e5cd74911712b6e
index idx_agent_transcript_active_messages session_transcript_active_events 4171c5d447672c6471d38040
index idx_agent_transcript_context_pending session_transcript_active_events e679281edda411383c4feb40
index idx_agent_transcript_event_identity_sequence transcript_event_identities 08d89bca9c067941702cea94
index idx_agent_transcript_event_parent transcript_event_identities 324156fe705ac7ac851dd393
index idx_agent_transcript_event_sequence transcript_event_identities 5483ca4148630349806a8d03
index idx_agent_transcript_message_idempotency transcript_event_identities 08084d8ae2d65ce752c53fbf
index idx_memory_embedding_cache_updated_at memory_embedding_cache a579b153a0b571f6868babc1
index idx_memory_index_chunks_path memory_index_chunks 55d8889937c2e49ac19318c7
index idx_memory_index_chunks_path_source memory_index_chunks 8184ca80be0e0d8ce4e28b48
index idx_memory_index_chunks_source memory_index_chunks 5bde189b67989b787971a541
index idx_memory_index_sources_source memory_index_sources 50c5cb03f88f22a49b1dd961
index idx_session_transcript_fts_rows_session_message session_transcript_fts_rows 6dec9fccf9eb8aeb4f00f314
index idx_standing_intents_lifecycle standing_intents c57aa8e1c705c3a3bade943b
index idx_standing_intents_scope standing_intents 0edf65a73796c5dd1b6aeaf3
table acp_parent_stream_events acp_parent_stream_events 0196c429814cd77cf458f969
table auth_profile_state auth_profile_state e26c6f58bfa7b80083221516
table auth_profile_store auth_profile_store 4a129e717ae1002b2adc0441
table board_tabs board_tabs 160321775423923ca44a8201
table board_widgets board_widgets 4dc67f0d50eb370b8581ed28
table cache_entries cache_entries 72eae09ffe2ee13bbaed4490
table context_engine_turn_outbox context_engine_turn_outbox 1808ef180cea57cbddef0641
table conversation_deliveries conversation_deliveries 8403fb9ea1153ba864032183
table conversations conversations 109eb8e9e42079c19f768497
table heartbeat_outcomes heartbeat_outcomes 6163e85b37216d969db01a95
table memory_embedding_cache memory_embedding_cache 241449f444271ca5d99c1b8e
table memory_entry_origins memory_entry_origins ef3252644488ae7587447d56
table memory_index_chunk_provenance memory_index_chunk_provenance 34ebfafa73a2f553d7cf860a
table memory_index_chunk_recall_metadata memory_index_chunk_recall_metadata 288693efa0b023d1f0ea2ca9
table memory_index_chunks memory_index_chunks aa7281b10f540fd1cbe545a6
table memory_index_chunks_fts memory_index_chunks_fts b2f96676ad239798499cc987
table memory_index_chunks_fts_config memory_index_chunks_fts_config 079d7f050dc31bda828fbec8
table memory_index_chunks_fts_content memory_index_chunks_fts_content b377089626fe0ea4cab9518f
table memory_index_chunks_fts_data memory_index_chunks_fts_data a893f9abcd876e68bfd84bc2
table memory_index_chunks_fts_docsize memory_index_chunks_fts_docsize ee288591e9e3804e8912c757
table memory_index_chunks_fts_idx memory_index_chunks_fts_idx 917088d171b0cbddb08869cc
table memory_index_meta memory_index_meta 46f2fabdafa9d0825cd4b035
table memory_index_paths_fts memory_index_paths_fts cacc3fafebceb013f249122b
table memory_index_paths_fts_config memory_index_paths_fts_config 092a9384384a82cf93070289
table memory_index_paths_fts_content memory_index_paths_fts_content 6708ccd5af3e78f49a573e58
table memory_index_paths_fts_data memory_index_paths_fts_data 00503d61a1d9528c50984e99
table memory_index_paths_fts_docsize memory_index_paths_fts_docsize b4357a671aedbde5234f81bb
table memory_index_paths_fts_idx memory_index_paths_fts_idx 93dce74deab0bf12f75a9572
table memory_index_sources memory_index_sources 749755558f02a0cb8d39852b
table memory_index_state memory_index_state 3ef3ca675d3a1923cd1b3d65
table memory_session_tombstones memory_session_tombstones 9cb64cd6eb6808553fc46374
table message_tool_run_outcomes message_tool_run_outcomes eb7130db21bdb05254137074
table schema_meta schema_meta 4e667e40fdd9c726a00ba2b4
table session_canonical_validation_pending session_canonical_validation_pending 25b9d1ecf6fa42f080b82683
table session_conversations session_conversations 271b2b3007554fd4bf2cbe2c
table session_goal_operations session_goal_operations d1b5cc1e571b489fc08aba2d
table session_input_completions session_input_completions 02e54856bd8d54fc4fc5466b
table session_key_contract session_key_contract ea8f63f0b33fd8d520c3a456
table session_members session_members e24fe24ad507524331ff52a1
table session_nodes session_nodes d2e18f0dd07eefa0fa16ddec
table session_participants session_participants b735551a22c6f3794f471fdd
table session_pending_inputs session_pending_inputs fce710e3964cac06d2af5d5a
table session_progress_cards session_progress_cards 7fa9fc7c0be146bbf71a6f42
table session_suggestions session_suggestions 2f13bc56f270dc67dfe54d4d
table session_transcript_active_events session_transcript_active_events 4968e71877c12c457304c7b1
table session_transcript_archives session_transcript_archives 20a03f1a149b20fbda2d1579
table session_transcript_cold_archives session_transcript_cold_archives d6c31017091640838d397e83
table session_transcript_fts session_transcript_fts 651ac05de2498465f881a7e9
table session_transcript_fts_config session_transcript_fts_config c16ddaf2c37cdb23eb5591a9
table session_transcript_fts_content session_transcript_fts_content f937d3c39f337dc63574c565
table session_transcript_fts_data session_transcript_fts_data c17dd4aa90f2ec0b6bb97fd6
table session_transcript_fts_docsize session_transcript_fts_docsize 2208877afa8b74f42eac2f68
table session_transcript_fts_idx session_transcript_fts_idx c992cece0b825b229b6ae5f0
table session_transcript_fts_rows session_transcript_fts_rows 940dc7fa0bd99da6c380571f
table session_transcript_index_state session_transcript_index_state 14f4fe1889041a49dcd7b52c
table session_windows session_windows 5d6108734f5aab9387e434a5
table standing_intents standing_intents f219552456bb706af989ce46
table standing_intents_fts standing_intents_fts 574b71683c35ec37c4a58e7d
table standing_intents_fts_config standing_intents_fts_config a82b5f0a3fcb57ab8e322e3c
table standing_intents_fts_data standing_intents_fts_data 6e31d9bd97ccd9a2adcbed2a
table standing_intents_fts_docsize standing_intents_fts_docsize 297f4f36a1af4da51316bab0
table standing_intents_fts_idx standing_intents_fts_idx a5bb8c24e1a4136a7f1f4efb
table trajectory_runtime_events trajectory_runtime_events 77b5df5d2cd1670c7a71bfd8
table transcript_event_identities transcript_event_identities f5c9c34d3ed7033a206cc399
table transcript_events transcript_events b517756908b39d399860191c
table transcript_rewrite_watermarks transcript_rewrite_watermarks e9ad4a208931e9321395f28c
trigger memory_index_chunks_fts_after_delete memory_index_chunks bdc99f93a0d8ace3a293b970
trigger memory_index_chunks_fts_after_insert memory_index_chunks 47c56795cdb90cf5d52be419
trigger memory_index_chunks_fts_after_update memory_index_chunks f34720a85ece22006252f280
trigger memory_index_chunks_revision_after_delete memory_index_chunks f4b36be6201a1bdef05ed75c
trigger memory_index_chunks_revision_after_insert memory_index_chunks 2f7151461eba8ba874181297
trigger memory_index_chunks_revision_after_update memory_index_chunks 1438ac049c10538f96ba0d77
trigger memory_index_paths_fts_after_delete memory_index_sources 8b711da5bf46e2bf9351f8ca
trigger memory_index_paths_fts_after_insert memory_index_sources 2147655f77bffaabb3c90483
trigger memory_index_paths_fts_after_update memory_index_sources f62a3801030267c1e859a17e
trigger memory_index_sources_revision_after_delete memory_index_sources e0bab8013afe6004176be2ab
trigger memory_index_sources_revision_after_insert memory_index_sources 9c2389c7e5f6e95cd67408e7
trigger memory_index_sources_revision_after_update memory_index_sources ec90ba9c111a3d0459b87454
trigger session_conversations_route_context_invalidate_after_update session_conversations 0b4d0d460b3a5b2182b95429
trigger session_key_contract_canonical_pending_after_delete session_key_contract a2c4289325345685aed51f06
trigger session_key_contract_canonical_pending_after_insert session_key_contract 70ba583befd9de5c8e7bd169
trigger session_key_contract_canonical_pending_after_update session_key_contract 7902f1e3f306b14767f75421
trigger session_nodes_canonical_pending_after_delete session_nodes 0a2ecce5960ccba09243b239
trigger session_nodes_canonical_pending_after_insert session_nodes 6ec5ffd3fff0195ae3db46a9
trigger session_nodes_canonical_pending_after_update session_nodes 3ffb5f45df0fdf1bb0815967
trigger session_nodes_entry_valid_after_entry_update session_nodes ca1c11813b45cf96d831a327
trigger session_nodes_entry_valid_after_identity_update session_nodes 00fcba6972f736218f779224
trigger session_nodes_entry_valid_after_insert session_nodes 98af215a1148e59fdf743052
trigger session_transcript_fts_rows_after_delete session_transcript_fts_rows 44c850bdc1f67887c5afa7f4
trigger session_windows_canonical_pending_after_delete session_windows 940baecb03b3d944079ad363
trigger session_windows_canonical_pending_after_insert session_windows b97ff2c77f45346165836a8c
trigger session_windows_canonical_pending_after_update session_windows 8d433478bb869c5277f350b2
trigger standing_intents_fts_after_delete standing_intents e0224aa5aac3e00e61f0cbb6
trigger standing_intents_fts_after_insert standing_intents c0b415ae12ac0616bb101b29
trigger standing_intents_fts_after_update standing_intents 78f9f4f0ab7d3d8ac087efcd
"""

KNOWN_OBJECTS: dict[tuple[str, str], tuple[str, str]] = {
    (kind, name): (table, digest) for kind, name, table, digest in (line.split() for line in _KNOWN.split("\n") if line)
}
"""``(type, name)`` -> ``(table, sha256 of its SQL, 24 hex digits)`` of every object OpenClaw 2026.9.6 creates."""

ACTIVATION_TABLES = frozenset(
    {
        "schema_meta",
        "session_nodes",
        "session_canonical_validation_pending",
        "session_windows",
        "transcript_events",
        "transcript_event_identities",
        "transcript_rewrite_watermarks",
        "session_transcript_active_events",
        "session_transcript_index_state",
        "session_transcript_fts_rows",
        "session_transcript_fts",
    }
)
"""Tables activation reads or writes, and the ones the triggers on them write: their meaning must be 2026.9.6's."""

FIRST_USE_COLUMNS = frozenset(
    {
        "session_nodes.legacy_acp_migration_json",
        "session_nodes.owner_actor_type",
        "session_nodes.owner_actor_id",
        "session_nodes.owner_assigned_by_type",
        "session_nodes.owner_assigned_by_id",
        "session_nodes.owner_assigned_at",
    }
)
"""Nullable columns of :data:`ACTIVATION_TABLES` that a 2026.9.6 store may lack: OpenClaw 2026.9.6
adds them on first use, and its own schema check lets them be missing. Its migration of a schema-19
store (2026.8.1-2026.9.4) leaves ``legacy_acp_migration_json`` out, gateway and doctor alike.
Activation neither names nor needs them (it changes a node's session ids and ``entry_json``;
putting a node back sets the columns the node has), so their absence is no problem. Its other
allowed-missing columns are not here: activation names ``context_eligible``, and the rest are in
tables it never writes."""


_TOKEN = re.compile(
    r"""\s+|--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]|[A-Za-z_][A-Za-z0-9_$]*|[0-9.]+|.""",
    re.S,
)
_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


def _tokens(sql: str) -> list[str]:
    out = []
    for token in _TOKEN.findall(sql):
        if token.isspace() or token.startswith(("--", "/*")):
            continue
        if token[0] in '"`[' and len(token) >= 2:
            inner = token[1:-1].replace('""', '"') if token[0] == '"' else token[1:-1]
            # A quoted name reads as the bare one when it could be written bare.
            token = inner.lower() if _BARE.fullmatch(inner) else '"' + inner.replace('"', '""') + '"'
        elif token[0] != "'":
            token = token.lower()
        out.append(token)
    return out


def normalised_sql(sql: str | None) -> str:
    """``sql`` with its meaning kept and its spelling dropped.

    No comments, one space between tokens, names and keywords in lower case, quotes only
    where a name needs them, no ``IF NOT EXISTS``, no final ``;``.
    """
    tokens = _tokens(sql or "")
    while tokens and tokens[-1] == ";":
        tokens.pop()
    for i in range(len(tokens) - 2):
        if tokens[i : i + 3] == ["if", "not", "exists"]:
            del tokens[i : i + 3]
            break
    return " ".join(tokens)


@dataclass(frozen=True, slots=True)
class Column:
    """One column as SQLite reads its definition (``PRAGMA table_xinfo``)."""

    type: str
    """Declared type, upper case, spaces collapsed ("" for none)."""
    not_null: bool
    default: str | None
    """The default's expression, normalised."""
    key: int
    """Its place in the primary key (0: not in it)."""
    hidden: int
    """0 for an ordinary column (a generated or virtual table's hidden one otherwise)."""

    def __str__(self) -> str:
        parts = [self.type or "(no type)"]
        parts += ["NOT NULL"] if self.not_null else []
        parts += [f"DEFAULT {self.default}"] if self.default is not None else []
        parts += [f"PRIMARY KEY #{self.key}"] if self.key else []
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Table:
    """One table's meaning."""

    columns: dict[str, Column]
    """By name (order left out: activation names its columns)."""
    kind: str
    """``table``, ``table strict``, ``table without rowid`` (both may be named) or, for a virtual
    table, its normalised ``CREATE VIRTUAL TABLE`` statement."""
    foreign_keys: frozenset[str]
    """Each as ``(columns) -> table(columns) on update … on delete … match …``."""
    unique: frozenset[str]
    """Each unique index and ``UNIQUE``/``PRIMARY KEY`` constraint as ``(columns) where …``."""
    triggers: dict[str, str]
    """By name: the normalised ``CREATE TRIGGER`` statement."""
    checks: frozenset[str] = frozenset()
    """Each ``CHECK`` constraint, of a column or of the table, as its normalised expression."""


@dataclass(frozen=True, slots=True)
class Schema:
    """What a store's schema means: its tables by (lower-case) name."""

    tables: dict[str, Table]


def _where(sql: str | None) -> str:
    """A partial index's ``WHERE`` clause, normalised ("" for a full index)."""
    tokens = _tokens(sql or "")
    depth, seen = 0, False
    for i, token in enumerate(tokens):
        if token == "(":
            depth, seen = depth + 1, True
        elif token == ")":
            depth -= 1
        elif token == "where" and depth == 0 and seen:
            return " ".join(t for t in tokens[i:] if t != ";")
    return ""


def _checks(sql: str | None) -> frozenset[str]:
    """Every ``CHECK (…)`` of a ``CREATE TABLE`` statement, normalised, constraint names left out.

    Columns added later are included: SQLite appends their definitions to the statement.
    """
    tokens = _tokens(sql or "")
    found = set()
    for i, token in enumerate(tokens[:-1]):
        if token != "check" or tokens[i + 1] != "(":
            continue
        depth = 0
        for j in range(i + 1, len(tokens)):
            depth += tokens[j] == "("
            depth -= tokens[j] == ")"
            if depth == 0:
                found.add(" ".join(tokens[i + 2 : j]))
                break
    return frozenset(found)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _table(con: sqlite3.Connection, name: str, kind: str, sql: str | None) -> Table:
    columns = {
        str(col_name).lower(): Column(
            " ".join(str(ctype or "").upper().split()),
            bool(notnull),
            None if default is None else normalised_sql(str(default)),
            int(pk),
            int(hidden),
        )
        for _, col_name, ctype, notnull, default, pk, hidden in con.execute(f"PRAGMA table_xinfo({_q(name)})")
    }
    fks: dict[int, list[tuple[str, str, str, str, str, str]]] = {}
    for fk_id, _, parent, frm, to, on_update, on_delete, match in con.execute(f"PRAGMA foreign_key_list({_q(name)})"):
        fks.setdefault(fk_id, []).append((str(frm), str(to), str(parent), on_update, on_delete, match))
    foreign = frozenset(
        f"({', '.join(r[0].lower() for r in rows)}) -> {rows[0][2].lower()}"
        f"({', '.join(str(r[1]).lower() for r in rows)}) on update {rows[0][3].lower()} "
        f"on delete {rows[0][4].lower()} match {rows[0][5].lower()}"
        for rows in fks.values()
    )
    unique = set()
    for _, index, is_unique, _, _ in con.execute(f"PRAGMA index_list({_q(name)})"):
        if not is_unique:
            continue
        keys = []
        for _, cid, col_name, desc, coll, key in con.execute(f"PRAGMA index_xinfo({_q(index)})"):
            if key:
                what = str(col_name).lower() if col_name is not None else f"expr#{cid}"
                keys.append(f"{what}{' desc' if desc else ''} collate {str(coll).lower()}")
        row = con.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (index,)).fetchone()
        text = row[0] if row else None
        exprs = " [" + normalised_sql(text) + "]" if any(k.startswith("expr#") for k in keys) else ""
        unique.add(f"({', '.join(keys)}){' ' + _where(text) if _where(text) else ''}{exprs}")
    triggers = {
        str(t).lower(): normalised_sql(body)
        for t, body in con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE", (name,)
        )
    }
    return Table(columns, kind, foreign, frozenset(unique), triggers, _checks(sql))


def describe(con: sqlite3.Connection, tables: frozenset[str] | None = None) -> Schema:
    """The meaning of ``con``'s schema (of ``tables`` only, when given), read through SQLite.

    SQLite's own ``sqlite_*`` tables are left out.
    """
    found = {}
    for name, ttype, strict, without_rowid in con.execute(
        "SELECT name, type, strict, wr FROM pragma_table_list WHERE schema = 'main'"
    ):
        name = str(name)
        if name.lower().startswith("sqlite_") or (tables is not None and name.lower() not in tables):
            continue
        sql = con.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
        if ttype == "virtual":
            kind = normalised_sql(sql[0] if sql else "")
        elif ttype == "table":
            kind = "table" + (" strict" if strict else "") + (" without rowid" if without_rowid else "")
        else:
            continue  # views, and FTS shadow tables
        found[name.lower()] = _table(con, name, kind, sql[0] if sql else None)
    return Schema(found)


_REFERENCE_FILE = "reference-2026.9.6.sql"


def reference_sql() -> str:
    """OpenClaw 2026.9.6's ``CREATE`` statements of :data:`ACTIVATION_TABLES`, their indexes and triggers."""
    return resources.files(__package__).joinpath(_REFERENCE_FILE).read_text(encoding="utf-8")


@functools.cache
def reference() -> Schema:
    """What OpenClaw 2026.9.6's schema means for the tables activation writes, built in memory."""
    con = sqlite3.connect(":memory:")
    try:
        # Only for the CHECK constraints' sake while creating (SQLite before 3.43 lacks it).
        con.create_function("octet_length", 1, lambda value: None, deterministic=True)
        con.executescript(reference_sql())
        return describe(con, ACTIVATION_TABLES)
    finally:
        con.close()


def schema_objects(con: sqlite3.Connection) -> dict[tuple[str, str], tuple[str, str]]:
    """The store's objects as :data:`KNOWN_OBJECTS` lists them (SQLite's own ``sqlite_*`` left out)."""
    return {
        (kind, name): (table, hashlib.sha256((sql or "").encode("utf-8", "surrogatepass")).hexdigest()[:24])
        for kind, name, table, sql in con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
        if not name.startswith("sqlite_")
    }


_WHO = "OpenClaw 2026.9.6"


def _table_problems(name: str, ref: Table, got: Table) -> list[str]:
    problems = []
    if got.kind != ref.kind:
        problems.append(f"table {name} is `{got.kind}`, {_WHO} has `{ref.kind}`")
    for col, want in ref.columns.items():
        have = got.columns.get(col)
        if have is None:
            if f"{name}.{col}" not in FIRST_USE_COLUMNS:
                problems.append(f"column {name}.{col} is missing")
        elif have != want:
            problems.append(f"column {name}.{col} is {have}, {_WHO} has {want}")
    for col, have in got.columns.items():
        if col not in ref.columns and have.hidden == 0 and ((have.not_null and have.default is None) or have.key):
            problems.append(f"column {name}.{col} is not one {_WHO} has, and a write that does not name it fails")
    for fk in sorted(got.foreign_keys - ref.foreign_keys):
        problems.append(f"foreign key {name}{fk} is not one {_WHO} has")
    for fk in sorted(ref.foreign_keys - got.foreign_keys):
        problems.append(f"foreign key {name}{fk} is missing")
    for key in sorted(got.unique - ref.unique):
        problems.append(f"unique index on {name}{key} is not one {_WHO} has")
    for key in sorted(ref.unique - got.unique):
        problems.append(f"unique index on {name}{key} is missing")
    for check in sorted(got.checks - ref.checks):
        # One OpenClaw lacks may refuse a row a write makes, when it reads a column the write fills
        # (a column added with its CHECK keeps its default there); one it has that is missing
        # refuses nothing.
        if any(token in ref.columns for token in check.split()):
            problems.append(f"CHECK ({check}) on {name} is not one {_WHO} has, and may refuse what a write inserts")
    for trigger, body in sorted(got.triggers.items()):
        if trigger not in ref.triggers:
            problems.append(f"trigger {trigger} on {name} is not one {_WHO} creates")
        elif body != ref.triggers[trigger]:
            problems.append(f"trigger {trigger} on {name} is not defined as {_WHO} defines it")
    for trigger in sorted(set(ref.triggers) - set(got.triggers)):
        problems.append(f"trigger {trigger} on {name} is missing")
    return problems


def schema_problems(con: sqlite3.Connection) -> list[str]:
    """Each way the store's schema would make activation's write differ from OpenClaw 2026.9.6's.

    One line each, named (empty: none; see the module docstring).
    """
    ref = reference()
    got = describe(con, ACTIVATION_TABLES)
    problems = []
    for name, table in sorted(ref.tables.items()):
        found = got.tables.get(name)
        if found is None:
            problems.append(f"table {name} is missing")
        else:
            problems += _table_problems(name, table, found)
    return problems
