"""Write a rescue scenario as a committed sample under ``tests/data/openclaw/`` (run by hand).

``python tests/support/openclaw_samples.py OUT`` builds the 2026.5.28 and 2026.9.6 scenarios with real
OpenClaw (:mod:`rescue_scenarios`, about five minutes) and writes ``OUT/2026.5.28-reset-idle``
and ``OUT/2026.9.6-reset-idle``; ``... cold STATE OUT`` writes ``2026.9.6-cold`` from a state dir
with a cold archive (:func:`write_cold_sample`); ``... schema19 OUT`` writes ``2026.9.4-reset``
and its schema dump (:func:`write_schema19_sample`). The files a session tool reads, the run's turn log as
``cap/turns.jsonl``, absolute paths rewritten as ``tests/data/openclaw/README.md`` says.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

SAMPLE_STATE = "/home/ava/.openclaw"
"""Where the samples say their state dir was (the README's convention)."""
SAMPLE_HOME = "/home/ava"
SAMPLE_PACKAGE = "/usr/lib/node_modules/openclaw"
SAMPLE_NODE = "/usr/bin/node"
"""Where the samples say OpenClaw was installed (its skills' paths are in the session entry)."""


def _swaps(root: Path, package: Path, node: str | None = None) -> list[tuple[str, str]]:
    # Longest first, so that the state dir is not rewritten as the home it lies under.
    pairs = [(str((root / "state").resolve()), SAMPLE_STATE), (str(package.resolve()), SAMPLE_PACKAGE),
             (str(package), SAMPLE_PACKAGE), (str(root.resolve()), SAMPLE_HOME)]  # fmt: skip
    if node is not None:  # the run's command line is in 2026.9's trajectory events
        pairs += [(node, SAMPLE_NODE), (str(Path(node).resolve()), SAMPLE_NODE)]
    return pairs


def _rewrite_text(data: bytes, swaps: list[tuple[str, str]]) -> bytes:
    for old, new in swaps:
        data = data.replace(old.encode(), new.encode())
    return data


def write_json_sample(root: Path, package: Path, node: str | None, turns: list[dict[str, object]], out: Path) -> None:
    """A 2026.5 dir's catalog, transcripts and reset archives (not the run traces), and its turn log."""
    swaps = _swaps(root, package, node)
    src = root / "state" / "agents" / "main" / "sessions"
    dst = out / "state" / "agents" / "main" / "sessions"
    dst.mkdir(parents=True)
    for path in sorted(src.iterdir()):
        wanted = path.name == "sessions.json" or (".jsonl" in path.name and ".trajectory" not in path.name)
        if path.is_file() and wanted:
            (dst / path.name).write_bytes(_rewrite_text(path.read_bytes(), swaps))
    _write_turns(turns, out, swaps)


def write_sqlite_sample(root: Path, package: Path, node: str | None, turns: list[dict[str, object]], out: Path) -> None:
    """A 2026.9 store, whole, with its absolute paths rewritten through SQLite itself."""
    swaps = _swaps(root, package, node)
    store = Path("agents") / "main" / "agent" / "openclaw-agent.sqlite"
    _store_sample(root / "state" / store, out / "state" / store, swaps)
    _write_turns(turns, out, swaps)


def _store_sample(src: Path, dst: Path, swaps: list[tuple[str, str]]) -> None:
    """``src`` (with its ``-wal``) rewritten by :func:`rewrite_store` into ``dst``, beside the empty
    ``-wal`` a clean stop of OpenClaw 2026.9.5+ leaves (2026.9.4 leaves none: then none)."""
    dst.parent.mkdir(parents=True)
    had_wal = Path(f"{src}-wal").exists()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch) / src.name
        for suffix in ("", "-wal"):
            if Path(f"{src}{suffix}").exists():
                shutil.copyfile(f"{src}{suffix}", f"{work}{suffix}")
        rewrite_store(work, swaps)
        shutil.copyfile(work, dst)
    if had_wal:
        dst.with_name(dst.name + "-wal").write_bytes(b"")


PATH_COLUMNS = (
    ("session_nodes", "entry_json"),
    ("transcript_events", "event_json"),
    ("trajectory_runtime_events", "event_json"),
)
"""Where OpenClaw 2026.9.6 keeps absolute paths in a store (found by searching every column)."""


def rewrite_store(db: Path, swaps: list[tuple[str, str]]) -> None:
    """Replace each path in :data:`PATH_COLUMNS` through SQLite, then ``VACUUM``, so that no old
    copy of a row is left in a free page, and leave no ``-wal``."""
    from kurahi.runtimes.openclaw.sqlite.write import register_octet_length

    con = sqlite3.connect(db)
    try:
        register_octet_length(con)
        for table, column in PATH_COLUMNS:
            for old, new in swaps:
                con.execute(f"UPDATE {table} SET {column} = replace({column}, ?, ?) WHERE instr({column}, ?)",
                            (old, new, old))  # fmt: skip
        con.commit()
        con.execute("VACUUM")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    data = db.read_bytes()
    left = [old for old, _ in swaps if old.encode() in data]
    assert not left, f"{db}: still holds {left}"


def _write_turns(turns: list[dict[str, object]], out: Path, swaps: list[tuple[str, str]]) -> None:
    cap = out / "cap"
    cap.mkdir(parents=True)
    text = "".join(json.dumps(turn, ensure_ascii=False) + "\n" for turn in turns)
    (cap / "turns.jsonl").write_bytes(_rewrite_text(text.encode(), swaps))


def write_upgraded_sample(sample: Path, out: Path) -> None:
    """``sample`` (a JSON-era sample) upgraded by 2026.9.6's own ``openclaw doctor --fix``.

    The sample's state is put at a real place with its paths pointing there (OpenClaw follows
    ``sessionFile``), the doctor runs on it, and what it left is written back with the
    sample's paths: the store, ``sessions/`` (less ``skills-prompts/``) and the import
    archive (less the run traces), with the sample's turn log.
    """
    from support.openclaw_peer import SQLITE_ERA, OpenClawPeer, find_node, package_dir

    with tempfile.TemporaryDirectory(prefix="openclaw-upgrade-") as scratch:
        root = Path(scratch)
        shutil.copytree(sample / "state", root / "state")
        to_real = [(SAMPLE_STATE, str((root / "state").resolve())), (SAMPLE_HOME, str(root.resolve()))]
        for path in (root / "state").rglob("*"):
            if path.is_file():
                path.write_bytes(_rewrite_text(path.read_bytes(), to_real))
        peer = OpenClawPeer(SQLITE_ERA, root)
        try:
            peer.doctor("--fix", "--non-interactive", deadline=300)
        finally:
            peer.close()
        swaps = _swaps(root, package_dir(SQLITE_ERA), find_node(SQLITE_ERA))
        agent = root / "state" / "agents" / "main"
        store = Path("agent") / "openclaw-agent.sqlite"
        _store_sample(agent / store, out / "state" / "agents" / "main" / store, swaps)
        for folder in ("sessions", "session-sqlite-import-archive"):
            for path in sorted((agent / folder).iterdir()):
                if path.is_file() and ".trajectory.jsonl" not in path.name:
                    (out / "state" / "agents" / "main" / folder).mkdir(parents=True, exist_ok=True)
                    dst = out / "state" / "agents" / "main" / folder / path.name
                    dst.write_bytes(_rewrite_text(path.read_bytes(), swaps))
    (out / "cap").mkdir(parents=True)
    shutil.copyfile(sample / "cap" / "turns.jsonl", out / "cap" / "turns.jsonl")


READER_TABLES = (
    "schema_meta", "session_key_contract", "session_nodes", "session_windows", "transcript_events",
    "transcript_event_identities", "session_transcript_archives", "session_transcript_cold_archives",
)  # fmt: skip
"""The tables a session reader needs (``2026.9.6-reset``'s, and the cold archives'): the rest is dropped."""

COLD_SWAPS = (
    ("/work/research38/run95/state", SAMPLE_STATE),
    ("/work/research38/oc-2026.9.5/node_modules/openclaw", SAMPLE_PACKAGE),
    ("/work/main/.peer/node_modules/node/bin/node", SAMPLE_NODE),
    ("/work/research38/run95", SAMPLE_HOME),
    ("/work/research38", SAMPLE_HOME),
)
"""The paths of the run that made ``2026.9.6-cold`` (longest first)."""


def write_cold_sample(state: Path, out: Path, swaps: tuple[tuple[str, str], ...] = COLD_SWAPS) -> None:
    """``state`` (a 2026.9.6 state dir with cold archives) reduced to its store and ``sessions/cold/``.

    The store is rewritten as :func:`rewrite_store` does. Each archive it records is checked
    against its row, inflated, its paths rewritten, compressed again (zstd, as OpenClaw's
    ``zlib.createZstdCompress`` writes it: one frame), and renamed for its new SHA-256, with the
    row's ``archive_name``, ``archive_sha256``, ``archive_bytes`` and ``raw_bytes`` updated to
    match, so that the archive verifies as OpenClaw checks it. Every table but
    :data:`READER_TABLES` is dropped (with its indexes and triggers), so the sample is small.
    """
    import hashlib

    import zstandard

    from kurahi.runtimes.openclaw.sqlite.write import register_octet_length

    src_db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    dst_db = out / "state" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    _store_sample(src_db, dst_db, list(swaps))
    cold_src = state / "agents" / "main" / "sessions" / "cold"
    cold_dst = out / "state" / "agents" / "main" / "sessions" / "cold"
    cold_dst.mkdir(parents=True)
    con = sqlite3.connect(dst_db)
    try:
        register_octet_length(con)
        rows = con.execute(
            "SELECT session_id, archive_name, archive_sha256, archive_bytes FROM session_transcript_cold_archives "
            "WHERE storage = 'file'"
        ).fetchall()
        for sid, name, sha, size in rows:
            data = (cold_src / name).read_bytes()
            assert len(data) == size and hashlib.sha256(data).hexdigest() == sha, f"{name}: not its row's"
            text = _rewrite_text(zstandard.ZstdDecompressor().stream_reader(data).read(), list(swaps))
            events = [json.loads(line)["row"]["event_json"] for line in text.splitlines() if b'"kind":"event"' in line]
            raw = sum(len(e.encode()) for e in events) + len(events) - 1
            packed = zstandard.ZstdCompressor().compress(text)
            digest = hashlib.sha256(packed).hexdigest()
            (cold_dst / f"{digest}.jsonl.zst").write_bytes(packed)
            con.execute(
                "UPDATE session_transcript_cold_archives SET archive_name = ?, archive_sha256 = ?, "
                "archive_bytes = ?, raw_bytes = ? WHERE session_id = ?",
                (f"{digest}.jsonl.zst", digest, len(packed), raw, sid),
            )
        con.commit()
        con.execute("PRAGMA foreign_keys = OFF")
        for kind, virtual in (("trigger", 0), ("view", 0), ("table", 1), ("table", 0)):
            # Full-text tables first: their shadow tables go with them.
            names = [n for (n,) in con.execute(
                "SELECT name FROM sqlite_master WHERE type = ? AND (sql LIKE 'CREATE VIRTUAL%') = ?", (kind, virtual)
            )]  # fmt: skip
            for name in names:
                exists = con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
                if exists and name not in READER_TABLES and not name.startswith("sqlite_"):
                    con.execute(f'DROP {kind.upper()} "{name}"')
        con.execute("DROP TABLE IF EXISTS sqlite_stat1")
        con.commit()
        con.execute("VACUUM")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    dst_db.with_name(dst_db.name + "-wal").write_bytes(b"")  # as a clean stop of OpenClaw leaves it
    for path in out.rglob("*"):
        if path.is_file():
            left = [old for old, _ in swaps if old.encode() in path.read_bytes()]
            assert not left, f"{path}: still holds {left}"
            if path.suffix == ".zst":
                inflated = zstandard.ZstdDecompressor().stream_reader(path.read_bytes()).read()
                assert not [old for old, _ in swaps if old.encode() in inflated], f"{path}: still holds paths"


def schema_sql(db: Path) -> str:
    """The ``CREATE`` statements of store ``db`` as ``tests/data/openclaw/schemas/`` keeps them.

    In ``sqlite_master`` order, each ended by ``;`` and a blank line between; SQLite's own
    ``sqlite_*`` objects and the full-text tables' shadow tables (``<fts>_data``, ``_idx``,
    ``_content``, ``_docsize``, ``_config``) left out. Read through ``immutable=1``: not a byte of
    the store changes.
    """
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        rows = con.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    finally:
        con.close()
    virtual = {name for kind, name, sql in rows if kind == "table" and (sql or "").upper().startswith("CREATE VIRTUAL")}
    shadow = {f"{v}_{part}" for v in virtual for part in ("data", "idx", "content", "docsize", "config")}
    kept = [sql for _, name, sql in rows if sql and not name.startswith("sqlite_") and name not in shadow]
    return ";\n\n".join(kept) + ";\n"


SCHEMA19_BEFORE = (
    "Hello, this is turn 1. The pre-reset phrase is CRIMSON-IBEX-ALPHA.",
    "Turn 2: remember the number 9127 and my brass sextant (CRIMSON-IBEX-ALPHA).",
    "Turn 3: last turn before the reset. CRIMSON-IBEX-ALPHA",
)
SCHEMA19_AFTER = (
    "Turn 5: first turn after the reset. The post-reset phrase is SLATE-MARLIN-OMEGA.",
    "Turn 6: the post-reset number is 6502, the topic kelp forests. SLATE-MARLIN-OMEGA",
)
"""The turns of ``2026.9.4-reset`` (turn 4 is the ``/reset``)."""


def write_schema19_sample(out: Path) -> None:
    """Drive OpenClaw 2026.9.4 (schema 19) and write ``OUT/2026.9.4-reset`` and three schema dumps.

    On the main key: a turn per :data:`SCHEMA19_BEFORE`, ``/reset``, a turn per
    :data:`SCHEMA19_AFTER`, a clean stop. ``OUT/schemas/2026.9.4.sql`` is the store as OpenClaw
    left it; ``2026.9.4-migrated-by-2026.9.6-gateway.sql`` and ``...-doctor.sql`` are copies of the
    run's whole dir after OpenClaw 2026.9.6's gateway started and stopped once on one, and its
    ``openclaw doctor --fix --non-interactive`` ran on the other. The sample is the store rewritten
    by :func:`write_sqlite_sample` (paths, ``VACUUM``). Needs 2026.9.4 installed beside the other
    releases (``KURAHI_PEER_DIR``), which ``make peer`` does not do.
    """
    from support.openclaw_peer import SCHEMA_19, SQLITE_ERA, OpenClawPeer, find_node, package_dir

    schemas = out / "schemas"
    schemas.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="openclaw-schema19-") as scratch:
        root = Path(scratch) / "run"
        with OpenClawPeer(SCHEMA_19, root) as peer:
            peer.start()
            for text in SCHEMA19_BEFORE:
                peer.turn(text)
            peer.reset()
            for text in SCHEMA19_AFTER:
                peer.turn(text)
            assert peer.stop() == 0
            db = peer.sqlite_store
            turns = list(peer.turn_log)
        (schemas / f"{SCHEMA_19}.sql").write_text(schema_sql(db), encoding="utf-8")
        for how in ("gateway", "doctor"):
            copy = Path(scratch) / how
            shutil.copytree(root, copy, symlinks=True)
            with OpenClawPeer(SQLITE_ERA, copy) as new:
                if how == "gateway":
                    new.start()
                    assert new.stop() == 0
                else:
                    new.doctor("--fix", "--non-interactive", deadline=300)
                migrated = schema_sql(new.sqlite_store)
            (schemas / f"{SCHEMA_19}-migrated-by-{SQLITE_ERA}-{how}.sql").write_text(migrated, encoding="utf-8")
        write_sqlite_sample(root, package_dir(SCHEMA_19), find_node(SCHEMA_19), turns, out / f"{SCHEMA_19}-reset")


def main(out: Path) -> None:
    """Build both eras' scenarios and write the two reset-then-idle samples to ``out``."""
    from support.openclaw_peer import JSON_ERA, SQLITE_ERA, find_node, package_dir
    from support.rescue_builds import build_json, build_sqlite

    with tempfile.TemporaryDirectory(prefix="openclaw-samples-") as scratch:
        base = Path(scratch)
        for era, build, name, write in (
            (JSON_ERA, build_json, "json-reset-idle", write_json_sample),
            (SQLITE_ERA, build_sqlite, "sqlite-reset-idle", write_sqlite_sample),
        ):
            scenario = build(base / era)[name]
            target = out / f"{era}-reset-idle"
            write(scenario.root, package_dir(era), find_node(era), list(scenario.notes["turns"]), target)
            phrases = {p.ended_by or "live": p.phrases for p in scenario.pieces}
            print(f"{target}: {phrases}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: it imports support
    if sys.argv[1:2] == ["cold"]:  # python tests/support/openclaw_samples.py cold STATE OUT
        write_cold_sample(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1:2] == ["schema19"]:  # python tests/support/openclaw_samples.py schema19 OUT
        write_schema19_sample(Path(sys.argv[2]))
    else:
        main(Path(sys.argv[1]))
