"""Above ``store``, nothing reads or writes a store file by path (issue 17's boundary, checked on the source).

Every call of ``open``, ``os.open``, ``os.fdopen`` or ``Path.read_bytes/read_text/write_bytes/write_text``
in a module of a room above ``kurahi.store`` (:mod:`kurahi._rooms`) must be on a file that is not a transcript, journal,
catalog or audit chain: workspace files a tool touches, keys and tokens, reports, packages.
Each such place is listed below with what it reads. A new call anywhere else fails this
test: route it through the backend (``kurahi.store.base``) or add it here with a reason
a reviewer can check.
"""

from __future__ import annotations

import ast
from pathlib import Path

from kurahi._rooms import ROOMS

SRC = Path(__file__).resolve().parents[2] / "src" / "kurahi"

# (module relative to src/kurahi, enclosing function) -> what it opens (none of them a store file)
ALLOWED: dict[tuple[str, str], str] = {
    ("agent/tools.py", "lookup"): "a workspace file the write/append tools check after a restart",
    ("agent/tools.py", "run"): "workspace files the read/write/append tools touch",
    ("agent/tools.py", "_locked"): "memory_append's lock on the workspace's memory directory, and the file it reads",
    ("agent/tools.py", "_append"): "memory_append's block (or void mark) appended to a workspace memory file",
    ("cli/__init__.py", "main"): "/dev/null for a closed stdout",
    ("cli/common.py", "readable"): "stdin copied to a temp file for a command given -",
    ("cli/continuity.py", "run_command"): "the user's --facts JSON file",
    ("cli/demo.py", "demo"): "the demo's own scratch transcript, torn on purpose to show the repair",
    ("cli/store.py", "_password"): "a --password-file: the database password for store migrate/copy",
    ("cli/mcp.py", "_read_token_file"): "kurahi mcp --token-file: the bearer token HTTP clients must present",
    ("cli/rescue.py", "_prepare"): "rescue watch --prepare: rescue.json in the user's own folder",
    (
        "continuity/targets/openclaw/manifest.py",
        "_digest",
    ): "an OpenClaw state dir's files, hashed read-only (never a link)",
    ("continuity/targets/openclaw/runtime.py", "_tail"): "the log of an OpenClaw gateway the suite started",
    ("continuity/hashcache.py", "hash_file"): "any file named in a manifest, hashed without following links",
    ("continuity/report.py", "read_report"): "a continuity report",
    ("continuity/rounds.py", "_context"): "a temp copy of a transcript fetched over HTTP, to project it",
    ("continuity/report.py", "write_report"): "a continuity report and its badge",
    ("continuity/signing.py", "_create"): "a new signing key (0600)",
    ("continuity/signing.py", "_read"): "the signing key",
    ("continuity/targets/throwaway.py", "seed_home"): "a throwaway home's config and memory files",
    ("continuity/targets/kurahi.py", "run_suite"): "the owner token of a throwaway home",
    ("gateway/activation_host.py", "start_gateway"): "the log of a gateway the activation started",
    ("gateway/lock.py", "gateway_info"): "run/gateway.lock",
    ("gateway/static_files.py", "_add"): "the package's own static files (the viewer, /docs)",
    ("gateway/vendored.py", "check_vendored"): "Swagger UI's files inside the package, hashed",
    ("gateway/vendored.py", "read_manifest"): "the manifest of Swagger UI's files inside the package",
    ("lifecycle/activation/package.py", "_read_manifest"): "a package's checksum list",
    ("lifecycle/activation/package.py", "write_package_file"): "a new package file (plan, rollback copies, evidence)",
    ("lifecycle/activation/journal.py", "add"): "the package's own activation journal",
    ("lifecycle/activation/package.py", "copy_durably"): "copying a candidate into its package",
    ("lifecycle/activation/package.py", "open"): "an activation package's plan",
    ("lifecycle/activation/journal.py", "records"): "the package's own activation journal",
    (
        "lifecycle/activation/targets/backend/state.py",
        "_keep",
    ): "the replaced transcript's bytes kept in the package's evidence/",
    ("lifecycle/activation/targets/backend/state.py", "_package_bytes"): "the package's candidate and rollback copies",
    (
        "lifecycle/activation/targets/sqlite_store/target.py",
        "_candidate_lines",
    ): "the candidate inside a SQLite package",
    ("lifecycle/activation/targets/sqlite_store/target.py", "_evidence"): "the package's evidence file",
    ("lifecycle/activation/targets/sqlite_store/target.py", "backward"): "the package's journal",
    ("lifecycle/activation/targets/sqlite_store/target.py", "forward"): "the candidate inside a SQLite package",
    ("lifecycle/activation/targets/session_append/plan.py", "open_plan"): "a session-append package's plan",
    ("lineage/packet.py", "verify_packet"): "an evidence packet's checksums and manifest",
    ("lineage/provenance.py", "_read_text"): "workspace files searched for a quoted fact",
    ("runtimes/openclaw/running.py", "_pid_lock"): "OpenClaw 2026.5's gateway lock in $TMPDIR (its pid)",
    ("runtimes/openclaw/state.py", "session_file"): "a private temp file holding a SQLite session exported",
    ("runtimes/openclaw/state.py", "transcript_bytes"): "that private export (a file piece is read through pi)",
    ("runtimes/openclaw/state.py", "export_piece"): "the exported piece, a new file the user named",
    ("lifecycle/activation/package.py", "store_of"): "an activation package's plan, to tell which target opens it",
    ("runtimes/sources.py", "materialize"): "a temp file holding a SQLite session exported through store",
    ("lineage/stitch.py", "_write"): "the stitched candidate C (a new file the user named with --out)",
    ("locations/dirs.py", "read_no_follow"): "an OpenClaw state dir's config and catalogs, read-only (never a link)",
    ("locations/listing.py", "first_line"): "the header of a transcript an OpenClaw catalog names (read-only listing)",
    ("locations/listing.py", "last_lines"): "the tail of a transcript an OpenClaw catalog names (read-only listing)",
    ("runtimes/claude/files.py", "_open"): "a Claude Code session file, opened read-only (O_NOFOLLOW, O_NOATIME)",
    ("runtimes/own_files.py", "starts_as_transcript"): "a file's first 4 KB, to send a Pi transcript straight on",
    ("runtimes/claude/doctor.py", "_append"): "rows appended to a Claude Code session file by session doctor --fix",
    ("runtimes/claude/files.py", "read_session"): "that file's bytes, read-only (Claude Code's rows, not a store file)",
    ("runtimes/claude/running.py", "_read_note"): "the note a running claude keeps in sessions/<pid>.json (read-only)",
    (
        "runtimes/claude/running.py",
        "_proc_start",
    ): "/proc/<pid>/stat, to tell the note's process is alive (not a reused pid)",
    ("runtimes/pi/sessions.py", "_first_line"): "the header of a session in Pi's own sessions folder, read-only",
    ("resident/home.py", "read_private_file"): "secrets/ and other private files of the home",
    ("resident/init.py", "init_home"): "the seeded IDENTITY.md",
    ("ui/homefiles.py", "list_folders"): "the home's reports/ and repairs/ folders (never through a link)",
    ("ui/homefiles.py", "read_file"): "a report or repair file under them (never through a link)",
}

# Store files still read by path above store: none. (The file home's activation swaps its
# catalog entry and transcripts through kurahi.store's TranscriptClaim and
# SessionCatalog.set_entry; the lineage tools read the transcript files a user names through
# kurahi.pi.transcript.)
KNOWN_GAPS: dict[tuple[str, str], str] = {}

_PATH_IO = {"read_bytes", "read_text", "write_bytes", "write_text"}


def _is_file_io(f: ast.expr) -> bool:
    return (
        (isinstance(f, ast.Name) and f.id == "open")
        or (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id == "os"
            and f.attr in ("open", "fdopen")
        )
        or (isinstance(f, ast.Attribute) and f.attr in _PATH_IO)
    )


def _visit(node: ast.AST, rel: str, stack: list[str], found: dict[tuple[str, str], list[int]]) -> None:
    named = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    if named:
        stack.append(node.name)  # type: ignore[attr-defined]
    if isinstance(node, ast.Call) and _is_file_io(node.func):
        found.setdefault((rel, stack[-1] if stack else "<module>"), []).append(node.lineno)
    for child in ast.iter_child_nodes(node):
        _visit(child, rel, stack, found)
    if named:
        stack.pop()


# A runtime's own store is not a Kurahi backend: its room reads it (and an activation writes it)
# through the statements it holds, which is the runtime room's whole business.
FOREIGN_STORES = ("runtimes/openclaw/sqlite/",)

# The rooms the store is built on, the store itself and the package root below them all read
# and write its files: only the rooms above it are held to the boundary. ``testing`` builds
# stores for tests.
_NAMES = [name for name, _ in ROOMS]
_BELOW = (*(f"{name}/" for name in _NAMES[: _NAMES.index("store") + 1]), "testing/", *FOREIGN_STORES)


def _calls() -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if "/" in rel and not rel.startswith(_BELOW):
            _visit(ast.parse(path.read_text(), filename=rel), rel, [], found)
    return found


def test_no_store_file_is_opened_above_store() -> None:
    found = _calls()
    unexpected = {where: lines for where, lines in found.items() if where not in ALLOWED and where not in KNOWN_GAPS}
    assert not set(ALLOWED) & set(KNOWN_GAPS)
    assert not unexpected, (
        "file I/O above kurahi.store that is not on the list of non-store files; go through the backend: "
        + "; ".join(f"{m}:{lines} in {fn}()" for (m, fn), lines in sorted(unexpected.items()))
    )


def test_the_list_has_no_stale_entries() -> None:
    found = _calls()
    stale = sorted((set(ALLOWED) | set(KNOWN_GAPS)) - set(found))
    assert not stale, f"listed but no longer doing file I/O (remove them): {stale}"
