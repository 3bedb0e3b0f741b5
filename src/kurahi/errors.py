"""One error tree for Kurahi.

Every error Kurahi raises on purpose is a :class:`KurahiError`. Errors carry the
file, line and field they are about, so a message can name what is wrong without
a traceback. Foreign errors (``OSError``, ``msgspec.DecodeError``) are translated
at the room boundary and chained with ``raise ... from exc`` (``OSError`` through
:func:`kurahi.fs.os_errors.os_errors`).

What an error means to a caller is written once, on its family, as class attributes
(as Starlette's ``HTTPException`` carries its status): ``exit_code`` (:class:`EXIT`)
for the CLI and ``http_status``, ``http_code`` (and ``http_retry_after``) for the
gateway. ``cli.common.translate_errors`` and ``gateway.http.from_kurahi`` read them
and keep no table of their own, so the two cannot disagree. The rule behind the
pairs: the exit code says what kind of problem it is to the person who owns the home;
the HTTP status says whose side it is on to a client: 4xx when the request can be
put right, 5xx (with a code naming it, never ``internal``, which is kept for what no
family claims) when the home is damaged. Only two cases add to them in
``from_kurahi``: a turn interrupted (``stored``, ``idempotencyKey``) and a store out
of reach (503 ``store_unavailable`` with ``Retry-After``, whatever the error on top).

Hierarchy::

    KurahiError
    ├── StoreError                    the `store` room
    │   ├── TranscriptError           a transcript file (path, line)
    │   │   ├── NotASessionError      first parseable line is not a session header
    │   │   ├── TranscriptReadError   missing, a directory, unreadable, oversized line
    │   │   │   └── SqliteStoreError  an OpenClaw SQLite store that cannot be read or written
    │   │   │       ├── SqliteStoreBusyError    locked, or kept changing while it was copied
    │   │   │       ├── SqliteStoreFullError    the disk refused a write (full): rolled back, nothing changed
    │   │   │       └── SqliteSchemaError       a schema version Kurahi does not know
    │   │   ├── TreeError             parent cycles, unknown entry ids
    │   │   │   ├── ParentCycleError
    │   │   │   └── EntryNotFoundError
    │   │   ├── AppendError           an append could not be made durable
    │   │   │   └── AppendOutcomeUnknownError  the store went away mid-append: stored or not, unknown
    │   │   ├── TranscriptChangedError  a whole-transcript swap whose expected sha256 no longer holds
    │   │   ├── TranscriptWriteError  a whole transcript that could not be written (a full disk): nothing changed
    │   │   └── ContextEditError      a context_edit refused on write (nothing appended)
    │   ├── JournalWriteError         a journal record (ledger, jobs, queue) could not be appended durably
    │   ├── JournalReadError          a journal file that cannot be read
    │   ├── LockError                 lock files
    │   │   └── LockHeldError         another live process holds the lock
    │   │       ├── LeaseLostError    a database lease taken over: this writer is fenced off, nothing written
    │   │       └── OwnerInUseError   another live gateway runs with the same lease owner id
    │   ├── CatalogError              sessions.json
    │   │   ├── CatalogCorruptError   exists but does not parse: never overwritten
    │   │   ├── CatalogEntryError     an entry or key is not acceptable
    │   │   └── CatalogWriteError     cannot be written now (chats refused until it can)
    │   ├── UnsafeFileError           a home file that is a symlink, a directory or not plain: never followed
    │   ├── StoreDatabaseError        the PostgreSQL backend's database (never a password in the message)
    │   │   ├── DatabaseUnavailableError  cannot connect, or the connection dropped (names host and database)
    │   │   └── SchemaVersionError    the schema is newer than this code (refused) or not migrated
    │   ├── StoreCopyError            a copy between stores refused (non-empty target) or not verified
    │   └── AuditError                the audit chain, a store of its own backends (path, line)
    │       ├── AuditChainError       a record or line that breaks the chain (path, line, seq)
    │       ├── AuditNotFoundError    no chain file where one is expected
    │       └── AuditWriteError       a record could not be appended durably
    ├── LineageError                  the `lineage` room
    │   ├── StitchError               sources that cannot be stitched as asked
    │   ├── CheckError                a file check cannot vouch for (a version-1/2 session)
    │   └── ProvenanceError           a provenance question that cannot be answered as asked
    ├── LifecycleError                the `lifecycle` room
    │   └── ActivationError           activating a candidate session (plan, apply, verify, rollback)
    │       ├── CandidateError        the candidate is not a usable session (header, path, markers)
    │       ├── PackageError          an activation package that cannot be used
    │       │   ├── PackageNotFoundError   no package at the path
    │       │   ├── PackageTamperedError   a file missing, added or changed since planning
    │       │   └── WrongHomeError         planned for another home or agent
    │       ├── PreconditionError     the live state is neither what was planned against nor the new state
    │       ├── GatewayStopError      the gateway did not stop in time (nothing was changed)
    │       ├── OpenClawRunningError  an OpenClaw gateway runs on the state dir (nothing was changed)
    │       ├── ClaudeRunningError    a claude process has the session open (nothing was changed)
    │       └── PreTurnValidationError  the live session did not project as planned (rolled back)
    │   └── RescueError               bringing a loss back (`kurahi rescue`)
    │       ├── LossNotFoundError     no loss with that id (or a prefix naming several)
    │       └── GuessNotAcceptedError a loss linked by clocks alone, not accepted with --accept-guess
    ├── AgentError                    the `agent` room
    │   ├── ProviderError             a model call failed (network, status, malformed reply)
    │   │   ├── ProviderTimeoutError  no answer in time
    │   │   └── ProviderConnectionError  the provider could not be reached (names the host, never the key)
    │   ├── ToolError                 a tool call that cannot run as asked
    │   │   ├── ToolDeniedError       the agent's tool policy denies it
    │   │   ├── UnknownToolError      no tool by that name
    │   │   └── PathRefusedError      a path that leaves the workspace
    │   ├── PairingRefusedError       an unsettled tool call and policy `refuse`
    │   ├── QueueFullError            the session's queue is at its cap (policy `reject`)
    │   ├── TurnInterruptedError      a turn stopped by its store (database away, lease lost); what was stored
    │   ├── UnknownAgentError         no agent by that id
    │   └── ConfigError               a config file or value that cannot be used
    ├── GatewayError                  talking to a gateway
    │   ├── GatewayUnavailableError   none runs for this home, or it cannot be reached
    │   └── GatewayRequestError       it answered with an error (status, code)
    ├── CanonicalJSONError            a value with no RFC 8785 form (NaN, Infinity, unsafe integer, ...)
    ├── ContinuityError               the `continuity` room: reports and runs that cannot be used
    │   ├── ManifestError             a manifest that is not in the manifest format (field)
    │   └── SigningKeyError           the signing key file: unreadable, malformed, too open
    ├── MissingExtraError             a command needs an optional extra that is not installed (names it)
    ├── SecretFileError               the owner token, device registry or home open to other users
    └── UsageError                    a caller passed something that cannot work
"""

from __future__ import annotations

TYPE_CHECKING = False  # mypy reads it as typing.TYPE_CHECKING; a projection imports this module
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, ClassVar

__all__ = [
    "EXIT",
    "ActivationError",
    "AgentError",
    "AppendError",
    "AppendOutcomeUnknownError",
    "AuditChainError",
    "AuditError",
    "AuditNotFoundError",
    "AuditWriteError",
    "CandidateError",
    "CanonicalJSONError",
    "CatalogCorruptError",
    "CatalogEntryError",
    "CatalogError",
    "CatalogWriteError",
    "CheckError",
    "ClaudeRunningError",
    "ConfigError",
    "ContextEditError",
    "ContinuityError",
    "DatabaseUnavailableError",
    "EntryNotFoundError",
    "GatewayError",
    "GatewayRequestError",
    "GatewayStopError",
    "GatewayUnavailableError",
    "GuessNotAcceptedError",
    "JournalReadError",
    "JournalWriteError",
    "KurahiError",
    "LeaseLostError",
    "LifecycleError",
    "LineageError",
    "LockError",
    "LockHeldError",
    "LossNotFoundError",
    "ManifestError",
    "MissingExtraError",
    "NotASessionError",
    "OpenClawRunningError",
    "OwnerInUseError",
    "PackageError",
    "PackageNotFoundError",
    "PackageTamperedError",
    "PairingRefusedError",
    "ParentCycleError",
    "PathRefusedError",
    "PreTurnValidationError",
    "PreconditionError",
    "ProvenanceError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeoutError",
    "QueueFullError",
    "RescueError",
    "SchemaVersionError",
    "SecretFileError",
    "SigningKeyError",
    "SqliteSchemaError",
    "SqliteStoreBusyError",
    "SqliteStoreError",
    "SqliteStoreFullError",
    "StitchError",
    "StoreCopyError",
    "StoreDatabaseError",
    "StoreError",
    "ToolDeniedError",
    "ToolError",
    "TranscriptChangedError",
    "TranscriptError",
    "TranscriptReadError",
    "TranscriptWriteError",
    "TreeError",
    "TurnInterruptedError",
    "UnknownAgentError",
    "UnknownToolError",
    "UnsafeFileError",
    "UsageError",
    "WrongHomeError",
    "store_unreachable",
]


class EXIT:
    """Exit codes with one meaning each, the same in every command (each family names its own)."""

    OK = 0
    FAILED = 1
    """The check or operation ran and its answer is "no" (or it failed part-way)."""
    USAGE = 2
    """Bad options or arguments (Click's own code)."""
    NOT_FOUND = 3
    """A file, entry or key that does not exist or cannot be read."""
    INVALID = 4
    """Input that exists but is not what it should be (not a session, corrupt catalog)."""
    BUSY = 5
    """Someone else holds the lock."""


class KurahiError(Exception):
    """Base of every error Kurahi raises on purpose."""

    exit_code: int = EXIT.FAILED
    """The CLI's exit code for it (:class:`EXIT`); a class attribute, which an error whose kind is
    known only when raised (:class:`ProvenanceError`) sets on the instance."""
    http_status: ClassVar[int] = 500
    """The gateway's HTTP status for it."""
    http_code: ClassVar[str] = "internal"
    """The ``code`` of the gateway's error body; ``internal`` is kept for what no family claims (a bug)."""
    http_retry_after: ClassVar[int | None] = None
    """Seconds for the ``Retry-After`` header, when asking again later can help."""


class UsageError(KurahiError):
    """A caller asked for something that cannot work (bad option, bad value)."""

    exit_code = EXIT.USAGE
    http_status = 400
    http_code = "bad_request"


class StoreError(KurahiError):
    """Something about stored session data."""


class _AtFileLine(KurahiError):
    """An error about one file and maybe one of its lines (``path:line: message``).

    Attributes:
        path: the file, when known.
        line: the 1-based line number in that file, when the problem has one.
        detail: the message without the location.
    """

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.detail = message
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        super().__init__(where + message)


class TranscriptError(_AtFileLine, StoreError):
    """A problem with one transcript file (``path``, ``line``)."""


class NotASessionError(TranscriptError):
    """The first parseable line of a file is not a session header (or the file is empty)."""

    exit_code = EXIT.INVALID
    http_code = "not_a_session"


class TranscriptReadError(TranscriptError):
    """A transcript could not be read at all: missing, a directory, unreadable, oversized."""

    exit_code = EXIT.NOT_FOUND
    # Decided once (issue 31): for the CLI the path was named by its user, so a transcript
    # that is not there or cannot be read is "not found or unreadable". The gateway reads
    # only transcripts its own catalog names: one it cannot read is the home's damage, not
    # the request's (a 404 would tell the client the session does not exist), so a 5xx,
    # named, rather than the ``internal`` of a bug.
    http_status = 500
    http_code = "transcript_unreadable"


class SqliteStoreError(TranscriptReadError):
    """An OpenClaw agent store (``openclaw-agent.sqlite``) cannot be read: missing, not SQLite, corrupt."""


class SqliteStoreBusyError(SqliteStoreError):
    """A writer held the store's lock past the busy timeout, or it kept changing while being copied."""

    exit_code = EXIT.BUSY
    http_status = 409
    http_code = "busy"


class SqliteStoreFullError(SqliteStoreError):
    """The disk refused a write to the store (full, or failing); the transaction was rolled back."""

    exit_code = EXIT.FAILED
    http_status = 507
    http_code = "disk_full"


class SqliteSchemaError(SqliteStoreError):
    """The store's ``schema_meta`` names a schema version Kurahi does not know (or it has none).

    Attributes:
        version: the version found (``None`` when the store has no ``schema_meta`` row).
        known: the versions Kurahi reads.
    """

    exit_code = EXIT.INVALID
    http_code = "unknown_schema"

    def __init__(
        self, message: str, *, path: str | Path | None = None, version: int | None = None, known: tuple[int, ...] = ()
    ) -> None:
        self.version = version
        self.known = known
        super().__init__(message, path=path)


class TreeError(TranscriptError):
    """The entry tree is not usable as asked."""


class ParentCycleError(TreeError):
    """Following ``parentId`` from an entry comes back to an entry already seen.

    Attributes:
        cycle: the entry ids that form the loop, in walk order.
    """

    def __init__(self, message: str, *, cycle: list[str], path: str | Path | None = None) -> None:
        self.cycle = cycle
        super().__init__(message, path=path)


class EntryNotFoundError(TreeError):
    """An entry id that is not in the transcript.

    Attributes:
        entry_id: the id that was asked for.
    """

    exit_code = EXIT.NOT_FOUND
    # The transcript is there; the entry id came with the request.
    http_status = 404
    http_code = "entry_not_found"

    def __init__(self, entry_id: str, *, path: str | Path | None = None) -> None:
        self.entry_id = entry_id
        super().__init__(f"no entry with id {entry_id!r}", path=path)


class AppendError(TranscriptError):
    """An entry could not be appended durably; the file still holds every earlier entry."""


class AppendOutcomeUnknownError(AppendError):
    """The store went away during an append and nobody could tell whether it was stored.

    The writer that raised it appends nothing more: the transcript must be opened again, and
    what is read back then (its last line) says whether the append happened.
    """


class TranscriptChangedError(TranscriptError):
    """A whole-transcript swap found other bytes than it expected; nothing was changed.

    Attributes:
        expected: the sha256 the caller expected (``None``: no transcript by that name).
        actual: the sha256 there now (``None``: none).
    """

    def __init__(
        self, message: str, *, path: str | Path | None = None, expected: str | None, actual: str | None
    ) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(f"{message} (expected {expected or 'absent'}, found {actual or 'absent'})", path=path)


class TranscriptWriteError(TranscriptError):
    """A whole transcript could not be written (a full disk, a read-only folder); the old one, if any, is untouched."""


class ContextEditError(TranscriptError):
    """A ``context_edit`` that Pi 1.6.0 would refuse to write; nothing was appended.

    Attributes:
        target_id: the entry the edit names.
        reason: ``not-found`` (no such entry), ``off-branch`` (not on the active branch),
            ``not-editable`` (it carries no editable model content: only user, assistant
            and toolResult messages and ``custom_message`` entries do) or ``replacement``
            (the replacement is not text, content blocks or ``None``).
    """

    REASONS = ("not-found", "off-branch", "not-editable", "replacement")

    def __init__(
        self, message: str, *, target_id: str, reason: str, path: str | Path | None = None, line: int | None = None
    ) -> None:
        self.target_id = target_id
        self.reason = reason
        super().__init__(message, path=path, line=line)


class JournalWriteError(StoreError):
    """A journal record (ledger, jobs, queue) could not be appended durably.

    The file still holds every earlier record, and the next append starts on a line of its own.

    Attributes:
        path: the journal file.
    """

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)


class JournalReadError(StoreError):
    """A journal file (ledger, jobs, queue) that cannot be read (permissions, I/O error).

    Attributes:
        path: the journal file.
    """

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)


class LockError(StoreError):
    """A lock file could not be taken or released."""

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)


class LockHeldError(LockError):
    """Another live process holds the lock.

    Attributes:
        holder_pid: the pid written by the holder, when it could be read.
    """

    exit_code = EXIT.BUSY
    http_status = 409
    http_code = "busy"

    def __init__(self, message: str, *, path: str | Path | None = None, holder_pid: int | None = None) -> None:
        self.holder_pid = holder_pid
        super().__init__(message, path=path)


class UnsafeFileError(StoreError):
    """A file Kurahi keeps in the home is not a plain file of its own: refused, never followed.

    A symlink (it could point anywhere, and writing through it would change a file outside
    the home), a directory, a FIFO or device, or (for lock files, which are truncated) a file
    with other hard links. Nothing is opened through it, truncated or ``chmod``-ed.

    Attributes:
        path: the file.
    """

    # Decided once (issue 31): a file of the home Kurahi refuses to open is input that exists
    # but is not what it should be. The CLI's user owns the home and can put it right: exit 4,
    # like a corrupt catalog. An HTTP client cannot (it is the server's file, and the request
    # was fine): a 5xx naming the refusal, never ``internal``, which would read as a bug.
    exit_code = EXIT.INVALID
    http_status = 500
    http_code = "unsafe_file"

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.detail = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


class CatalogError(StoreError):
    """A problem with a ``sessions.json`` catalog."""

    def __init__(self, message: str, *, path: str | Path | None = None, key: str | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.key = key
        where = f"{self.path}: " if self.path else ""
        what = f"key {key!r}: " if key is not None else ""
        super().__init__(where + what + message)


class CatalogCorruptError(CatalogError):
    """The catalog exists but does not parse as a JSON object; it is never overwritten."""

    exit_code = EXIT.INVALID
    http_code = "catalog_corrupt"


class CatalogEntryError(CatalogError):
    """A catalog key or entry is not acceptable."""


class CatalogWriteError(CatalogError):
    """The catalog cannot be written now (a full disk, a damaged lock file): retried, never lost quietly.

    A runtime whose activity clocks could not be written refuses the next turn with it (HTTP
    503) until they can, rather than acknowledge chats whose clocks it cannot keep.
    """

    http_status = 503
    http_code = "catalog_unwritable"
    http_retry_after = 5  # the gateway retries the write on its own


class LeaseLostError(LockHeldError):
    """A writer's lease on a transcript was taken over (it had expired): the writer is fenced off.

    Raised by an append whose transaction found the lease no longer held with this
    writer's fencing token: nothing was written, and nothing this handle appends will be.
    Open the transcript again (once the new holder lets go) to write to it.
    """


class OwnerInUseError(LockHeldError):
    """Another live gateway is using the same lease owner id on this database; this one is refused.

    Two processes with one owner id could not be told apart by their leases. The other
    one's heartbeat is recent; once it stops (and its claim expires), the id is free.
    """


class StoreDatabaseError(StoreError):
    """The PostgreSQL backend's database could not be used as asked.

    Messages name the server and database (``postgresql://user@host:port/db``), never a
    password: everything quoted from the driver is scrubbed of it first.

    Attributes:
        where: the database, without a password.
    """

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class DatabaseUnavailableError(StoreDatabaseError):
    """The database cannot be reached: down at start, or the connection dropped; nothing was acknowledged.

    Attributes:
        unsent: no connection could be had, so nothing was sent (a write certainly did not happen).
    """

    http_status = 503
    http_code = "store_unavailable"
    http_retry_after = 1
    """The pool reconnects within about a second of the database coming back, so asking again
    sooner only adds load, and much later only adds delay. Any error with one of these in its
    chain answers the same (:func:`store_unreachable`)."""

    def __init__(self, message: str, *, where: str | None = None, unsent: bool = False) -> None:
        self.unsent = unsent
        super().__init__(message, where=where)


class SchemaVersionError(StoreDatabaseError):
    """The database's schema version is not the code's.

    A schema newer than this code knows is refused (an older Kurahi must not write a newer
    layout); an older one needs ``kurahi store migrate`` when the backend does not migrate.

    Attributes:
        found: the database's version.
        known: the newest version this code knows.
    """

    def __init__(self, message: str, *, where: str | None = None, found: int, known: int) -> None:
        self.found = found
        self.known = known
        super().__init__(message, where=where)


class StoreCopyError(StoreError):
    """A copy between stores was refused (a non-empty target without ``force``) or did not verify."""


class LineageError(KurahiError):
    """Something about rebuilding one history from several transcripts."""


class CheckError(_AtFileLine, LineageError):
    """``lineage check`` cannot vouch for this file: a version-1/2 session.

    Pi rewrites such a file to version 3 when it opens it; the reference walk reads version
    3 only, so the two projections could not be compared. Stitch output is always version 3.
    """

    exit_code = EXIT.INVALID
    http_status = 422
    http_code = "cannot_check"


class StitchError(LineageError):
    """The sources cannot be stitched as asked; nothing was written.

    The same file twice, an output that exists, colliding ids, a later source whose root
    already has a parent, or one older than the source before it (without ``--force``).
    """


class ProvenanceError(LineageError):
    """A provenance question that cannot be answered as asked; nothing was written.

    A reply id that is not an assistant message, a phrase too short to mean anything, a
    workspace or catalog key that does not exist.

    Attributes:
        kind: ``"usage"`` (bad arguments), ``"not-found"`` (a file, key or entry that is not
            there) or ``"invalid"`` (input that exists but is not what it should be).
        path: the file or directory the problem is about, when there is one.
    """

    exit_code = EXIT.USAGE
    _EXIT_OF_KIND: ClassVar[dict[str, int]] = {
        "usage": EXIT.USAGE,
        "not-found": EXIT.NOT_FOUND,
        "invalid": EXIT.INVALID,
    }

    def __init__(self, message: str, *, kind: str = "usage", path: str | Path | None = None) -> None:
        self.kind = kind
        self.exit_code = self._EXIT_OF_KIND.get(kind, EXIT.FAILED)
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)


class LifecycleError(KurahiError):
    """Something about a session's lifecycle: freshness, rollover, activation, rollback."""


class ActivationError(LifecycleError):
    """Activating a candidate session could not be planned, applied, verified or rolled back as asked."""


class CandidateError(ActivationError):
    """The candidate transcript is not a usable session: broken header or path, markers missing.

    Attributes:
        path: the candidate file.
    """

    exit_code = EXIT.INVALID

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)


class PackageError(ActivationError):
    """An activation package that cannot be used.

    Attributes:
        path: the package directory (or the file in it the problem is about).
    """

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)


class PackageNotFoundError(PackageError):
    """There is no package (no directory, or no plan in it)."""

    exit_code = EXIT.NOT_FOUND


class PackageTamperedError(PackageError):
    """A file of the package is missing, added, or differs from the manifest (``SHA256SUMS``)."""

    exit_code = EXIT.INVALID


class WrongHomeError(PackageError):
    """The package was planned for another home or agent; it is refused, nothing is touched."""

    exit_code = EXIT.INVALID


class PreconditionError(ActivationError):
    """The live state is not what the package expects; nothing more was changed.

    Attributes:
        part: what differs (``transcript``, ``catalogEntry``, ``target``, ``candidate``).
        expected: the sha256 (or ``absent``) the package expects.
        actual: what is there now.
    """

    def __init__(self, message: str, *, part: str, expected: str, actual: str) -> None:
        self.part = part
        self.expected = expected
        self.actual = actual
        super().__init__(f"{part}: {message} (expected {expected}, found {actual})")


class GatewayStopError(ActivationError):
    """The running gateway did not stop within the timeout; nothing was changed."""

    exit_code = EXIT.BUSY


class OpenClawRunningError(ActivationError):
    """An OpenClaw gateway runs on the state directory; its store is written only while it is stopped."""

    exit_code = EXIT.BUSY


class ClaudeRunningError(ActivationError):
    """A ``claude`` process has the session open (by the note it keeps); Kurahi appends only while none does."""

    exit_code = EXIT.BUSY


class PreTurnValidationError(ActivationError):
    """The live session, re-read before any user turn, did not project as planned; apply rolled back.

    Attributes:
        differences: one line per part that differs (message count, hash, markers).
        result: the JSON-ready result of the apply that rolled back, when known.
    """

    def __init__(self, message: str, *, differences: list[str]) -> None:
        self.differences = differences
        self.result: dict[str, Any] | None = None
        super().__init__(message + ": " + "; ".join(differences))


class RescueError(LifecycleError):
    """Bringing a loss back could not be done as asked (nothing was changed)."""


class LossNotFoundError(RescueError):
    """No loss with that id in the state directory (or an id prefix that names several)."""

    exit_code = EXIT.NOT_FOUND


class GuessNotAcceptedError(RescueError):
    """A loss linked by clocks alone; ``--accept-guess ID`` is the user's confirmation."""

    exit_code = EXIT.USAGE


class AgentError(KurahiError):
    """Something about running a resident's turns."""


class ProviderError(AgentError):
    """A model call failed: unreachable, an error status, or a reply that is not well-formed.

    Attributes:
        provider: the provider kind (``openai``, ``anthropic``, ``deterministic``).
        status: the HTTP status, when there was one.
        retry_after: seconds the provider asked to wait before trying again (``Retry-After``), when it said.
    """

    def __init__(
        self, message: str, *, provider: str = "", status: int | None = None, retry_after: float | None = None
    ) -> None:
        self.provider = provider
        self.status = status
        self.retry_after = retry_after
        super().__init__(f"{provider}: {message}" if provider else message)


class ProviderTimeoutError(ProviderError):
    """The provider did not answer in time."""


class ProviderConnectionError(ProviderError):
    """The provider could not be reached: refused, reset, DNS. The message names the host, never the key.

    Attributes:
        host: ``host:port`` of the endpoint.
    """

    def __init__(self, message: str, *, provider: str = "", host: str = "") -> None:
        self.host = host
        super().__init__(message, provider=provider)


class ToolError(AgentError):
    """A tool call that cannot run as asked (its result says so; the turn goes on).

    Attributes:
        tool: the tool's name.
    """

    def __init__(self, message: str, *, tool: str = "") -> None:
        self.tool = tool
        super().__init__(f"{tool}: {message}" if tool else message)


class ToolDeniedError(ToolError):
    """The agent's tool policy denies this tool."""


class UnknownToolError(ToolError):
    """No tool by that name is registered."""


class PathRefusedError(ToolError):
    """A path argument that is absolute, leaves the workspace, or goes through a symlink out of it."""


class PairingRefusedError(AgentError):
    """A tool call on the path has no result, nothing can settle it, and the policy is ``refuse``.

    Attributes:
        tool_call_ids: the unsettled calls.
    """

    def __init__(self, message: str, *, tool_call_ids: list[str]) -> None:
        self.tool_call_ids = tool_call_ids
        super().__init__(message)


class QueueFullError(AgentError):
    """The session's queue is at its cap and the drop policy is ``reject``."""

    http_status = 429
    http_code = "queue_full"


class TurnInterruptedError(AgentError):
    """A turn stopped because its session's store failed under it; the caller may send the message again.

    The session was let go, so the next message on the key opens it afresh from the store
    (here or on another gateway). Sending the same message again with the same idempotency
    key finds what was stored of it instead of storing it twice.

    Attributes:
        stored: ``True`` when some of the turn was stored (its message at least), ``False``
            when none of it was, ``None`` when nobody can tell yet.
        idempotency_key: the message's idempotency key (``None`` when it had none).
        unavailable: the store could not be reached (try again shortly), rather than the
            session being held by another writer now.
        retry_after: seconds a caller should wait before sending it again.
    """

    # Held by another writer now; a store out of reach is a 503 with ``Retry-After`` (the
    # gateway's ``from_kurahi``, which also adds ``stored`` and ``idempotencyKey``).
    http_status = 409
    http_code = "busy"

    def __init__(
        self,
        message: str,
        *,
        stored: bool | None,
        idempotency_key: str | None,
        unavailable: bool,
        retry_after: float = 1.0,
    ) -> None:
        self.stored = stored
        self.idempotency_key = idempotency_key
        self.unavailable = unavailable
        self.retry_after = retry_after
        super().__init__(message)


class UnknownAgentError(AgentError):
    """No agent by that id in this home."""

    exit_code = EXIT.NOT_FOUND
    http_status = 404
    http_code = "unknown_agent"


class ConfigError(AgentError):
    """A config file or value that cannot be used.

    Attributes:
        path: the config file, when known.
        field: the dotted field, when known.
    """

    exit_code = EXIT.INVALID
    http_status = 422
    http_code = "invalid_config"

    def __init__(self, message: str, *, path: str | Path | None = None, field: str | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.field = field
        where = f"{self.path}: " if self.path else ""
        what = f"{field}: " if field else ""
        super().__init__(where + what + message)


class GatewayError(KurahiError):
    """Something about talking to a running gateway."""


class GatewayUnavailableError(GatewayError):
    """No gateway runs for this home, or it cannot be reached, or there is no owner token."""

    exit_code = EXIT.NOT_FOUND
    http_status = 503
    http_code = "gateway_unavailable"


class GatewayRequestError(GatewayError):
    """The gateway answered with an error.

    Attributes:
        status: the HTTP status.
        code: the error code of the JSON body (``unauthorized``, ``forbidden``, ...).
    """

    def __init__(self, message: str, *, status: int, code: str) -> None:
        self.status = status
        self.code = code
        super().__init__(f"{status} {code}: {message}")


class CanonicalJSONError(KurahiError):
    """A value that has no canonical JSON form (RFC 8785).

    NaN and Infinity, integers beyond ±(2**53 - 1) (I-JSON), object keys that are not
    strings, strings that are not valid Unicode (lone surrogates) and types that are not
    JSON all land here.

    Attributes:
        field: where in the value the problem is, as a JSON path (``$.details.ratio``).
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


class AuditError(_AtFileLine, StoreError):
    """Something about the hash-chained audit log (``path``, ``line`` of the chain file).

    A :class:`StoreError` since issue 31: the chain is kept by the store's backends (a file,
    PostgreSQL), and a caller catching "stored data failed" means it too. Code that caught
    ``AuditError`` or ``KurahiError`` catches it as before.
    """


class AuditChainError(AuditError):
    """A record or line that breaks the chain; nothing is chained onto it.

    Attributes:
        seq: the seq of the record concerned, when known.
    """

    def __init__(
        self, message: str, *, path: str | Path | None = None, line: int | None = None, seq: int | None = None
    ) -> None:
        self.seq = seq
        super().__init__(message, path=path, line=line)


class AuditNotFoundError(AuditError):
    """There is no chain file at the path (an empty file is an empty chain, not a missing one)."""


class AuditWriteError(AuditError):
    """A record could not be appended durably; the file holds exactly the records before it."""


class ContinuityError(KurahiError):
    """Something about continuity evidence: a report or run that cannot be used, manifests, the signing key."""


class ManifestError(ContinuityError):
    """A manifest that is not in the manifest format, so nothing in it can be checked.

    A well-formed manifest whose hashes or signature do not hold is not an error: verifying
    it says which part fails. This is for what cannot even be read: an unknown version, a
    missing or foreign key, a field of the wrong type, base64 that does not decode.

    Attributes:
        field: where, as a JSON path (``$.entries[3].hash``), when known.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        self.detail = message
        super().__init__(f"{field}: {message}" if field else message)


class SigningKeyError(ContinuityError):
    """The signing key file cannot be used: unreadable, malformed, or readable by others.

    The message never holds key material.

    Attributes:
        path: the key file.
    """

    http_code = "signing_key_unusable"

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)


class MissingExtraError(KurahiError):
    """A feature needs an optional extra (``kurahi[gateway]``, ``kurahi[providers]``) that is not installed.

    The core (store, context, lineage, lifecycle and their commands) installs without the
    HTTP server and the model SDKs; the message names the extra and the pip command.

    Attributes:
        extra: the extra's name (``gateway``).
        modules: the modules of it that could not be imported.
    """

    def __init__(self, message: str, *, extra: str, modules: tuple[str, ...]) -> None:
        self.extra = extra
        self.modules = modules
        super().__init__(message)


class SecretFileError(KurahiError):
    """A file or directory that guards access is open to other users, or is not a plain file.

    The owner token (``secrets/gateway.token``) and the device registry (``devices.json``)
    with any group or other permission bit, and the home or ``secrets/`` writable by group or
    others (anyone could then put their own token or device in place). Like the signing key
    (:class:`SigningKeyError`) they are refused, never quietly ``chmod``-ed: a token others
    could read may have been copied, so the owner decides. The message never holds a secret.

    Attributes:
        path: the file or directory.
    """

    exit_code = EXIT.INVALID
    http_code = "insecure_secret_file"

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)


def store_unreachable(exc: BaseException) -> bool:
    """Whether a database out of reach is what ``exc`` comes down to (it, or a cause in its chain).

    A store error raised on top of a :class:`DatabaseUnavailableError` (an append that could
    not be made, a journal record not written) is worth sending again once the database is
    back; one that is not (a damaged transcript, a refused value) is not.
    """
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, DatabaseUnavailableError):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False
