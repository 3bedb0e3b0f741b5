"""Signed continuity manifests: a resident as hashes and small values, chained and signed.

A manifest is one JSON object::

    {"version": 1, "agent": "alice", "createdAt": "2026-11-30T10:47:14.270Z",
     "entries": [{"kind": "identity", "name": "IDENTITY.md", "value": {"sha256": "…", "size": 812},
                  "hash": "…"}, …],
     "root": "…", "signature": "<base64>", "publicKey": "<base64>", "fingerprint": "…"}

Each entry's ``hash`` is ``sha256(previous hash ‖ canonical(entry without "hash"))``, the
first chained on 64 zeros (:func:`kurahi.js.jcs.chain_hash`); ``root`` is the last hash
(64 zeros for no entries); ``signature`` is Ed25519 over the 32 bytes of ``root``;
``publicKey`` is the raw 32-byte key and ``fingerprint`` its SHA-256. ``agent`` and
``createdAt`` are labels outside the chain: two manifests of an unchanged resident have the
same root whenever they were taken. So is ``gateway``, present when a running gateway took
the manifest: ``{"bootId", "generation"}``, which change when its process restarts or it
restarts in process (what the continuity suite's C0 scores a restart by).

Entries come in a fixed order, by kind as :data:`KINDS` lists them, by name within a kind:

==========  ===================================  ===========================================
kind        name                                 value
==========  ===================================  ===========================================
identity    each top-level workspace file        ``{"sha256", "size"}``
            but MEMORY.md
memory      ``MEMORY.md``, ``memory/<name>.md``  ``{"sha256", "size"}``
role        ``agent``, ``defaults``,             settings without ``model``; config
            ``devices``, ``tools``               defaults without ``model``; ``[{id, name,
                                                 scopes, revoked}]``; the tool policy
model       ``primary``                          ``{"provider", "model", "profile"}``
job         job id                               ``{"status", "kind", "sessionKey",
                                                 "createdAt", "startedAt", "endedAt", "error"}``
session     session key                          ``{"sessionId", "label", "model", "updatedAt"}``
transcript  ``<sessionId>.jsonl``                ``{"sha256", "size"}``
audit       ``chain``                            ``{"verified", "entries", "lastSeq", "headHash"}``
==========  ===================================  ===========================================

Never file contents, never anything under ``secrets/``: files are found only in the
agent's workspace and sessions directory, symlinks are skipped (one could point anywhere),
dot-files are skipped (the temporary files of atomic writes), and every structured value
passes through :func:`kurahi.store.redact.redact`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from kurahi.agent.config import load_config
from kurahi.agent.jobs import JobStore
from kurahi.agent.layout import check_agent_id
from kurahi.continuity.hashcache import FileDigest, HashCache
from kurahi.continuity.signing import SigningKey, fingerprint_of, load_signing_key, verify_signature
from kurahi.errors import AuditNotFoundError, CanonicalJSONError, ContinuityError, ManifestError, UsageError
from kurahi.fs.os_errors import os_error
from kurahi.js.jcs import ZERO_HASH, chain_hash
from kurahi.resident.devices import DeviceRegistry
from kurahi.resident.home import Home
from kurahi.store.audit.record import format_ts
from kurahi.store.base import AgentStore, Backend
from kurahi.store.open import default_backend
from kurahi.store.redact import redact

__all__ = [
    "KINDS",
    "MANIFEST_KEYS",
    "MANIFEST_VERSION",
    "ManifestCheck",
    "ModelRef",
    "build_manifest",
    "collect_entries",
    "regular_files",
    "seal_manifest",
    "verify_manifest",
]

MANIFEST_VERSION = 1
"""The ``version`` this module writes and the only one it verifies."""

KINDS = ("identity", "memory", "role", "model", "job", "session", "transcript", "audit")
"""Entry kinds, in manifest order."""

MANIFEST_KEYS = ("version", "agent", "createdAt", "entries", "root", "signature", "publicKey", "fingerprint")
"""The top-level keys of a manifest, all required; the only other one allowed is ``gateway``."""

OPTIONAL_KEYS = ("gateway",)
"""Labels a manifest may carry beside :data:`MANIFEST_KEYS`."""

_ENTRY_KEYS = frozenset(("kind", "name", "value", "hash"))

ModelRef = tuple[str, str, str]
"""``(provider, model id, profile name)`` of the model a resident runs on."""

Item = tuple[str, str, Any]


class ManifestCheck(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What :func:`verify_manifest` found."""

    ok: bool
    """Every entry hash, the root, the signature and the fingerprint hold."""
    reason: str | None = None
    """What fails, in words (every failing part, the first bad entry first); ``None`` when ok."""
    first_bad_index: int | None = None
    """Index in ``entries`` of the first entry whose hash does not match; ``None`` if all do."""
    root_ok: bool = False
    """``root`` is the last entry hash (64 zeros for none)."""
    signature_ok: bool = False
    """``signature`` verifies over the 32 bytes of ``root`` with ``publicKey``."""
    fingerprint_ok: bool = False
    """``fingerprint`` is the SHA-256 of ``publicKey``."""
    entries: int = 0
    """How many entries the manifest has."""
    root: str = ""
    """The root as claimed."""
    fingerprint: str = ""
    """The signer's fingerprint as claimed."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, camelCase keys."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


def build_manifest(
    home: Home | str | os.PathLike[str],
    agent: str,
    *,
    model: ModelRef | None = None,
    cache: HashCache | None = None,
    now: datetime | None = None,
    key: SigningKey | None = None,
    backend: Backend | None = None,
    gateway: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Take the signed manifest of one resident.

    Args:
        home: the state directory.
        agent: the resident's id.
        model: ``(provider, model id, profile)`` it runs on; default: what the config says.
        cache: file digests (default: the home's ``run/hash-cache.json``, saved afterwards).
        now: ``createdAt`` (default: now); outside the chain, so the root does not depend on it.
        key: the signer (default: the home's key, created on first use).
        backend: where its sessions, jobs and audit chain are stored (default: files in the home).
        gateway: the running gateway's ``{"bootId", "generation"}``, as a label outside the chain.

    Raises:
        UsageError: an unsafe agent id.
        UnknownAgentError: no such agent in the home.
        ConfigError: the config or the device registry cannot be read.
        CatalogError: the agent's ``sessions.json`` cannot be read.
        SigningKeyError: the home's key cannot be used (e.g. others can read it).
        ContinuityError: a file could not be read.
    """
    h = home if isinstance(home, Home) else Home.at(home)
    signer = key if key is not None else load_signing_key(h)
    own_cache = cache is None
    digests = HashCache.for_home(h.root) if cache is None else cache
    items = collect_entries(h, agent, model=model, cache=digests, backend=backend)
    if own_cache:
        digests.save()
    return seal_manifest(agent, items, key=signer, now=now, gateway=gateway)


def collect_entries(
    home: Home, agent: str, *, model: ModelRef | None, cache: HashCache, backend: Backend | None = None
) -> list[Item]:
    """The ``(kind, name, value)`` of every entry, in manifest order (see the module docstring)."""
    paths = home.agent(agent, must_exist=True)
    backend = backend if backend is not None else default_backend(home.root)
    store = backend.agent(agent)
    config = load_config(home.root)
    settings = config.agent(agent)
    if model is None:
        profile = config.profile(settings.model)
        model = (profile.provider, profile.model, settings.model)

    # Files (identity, memory, and the file backend's transcripts) are hashed in one batch
    # through the stat-keyed cache; another backend's transcripts are hashed from their bytes.
    sessions_dir = store.sessions_dir
    identity, memory, transcript_files, digests = _hash_files(paths.workspace, sessions_dir, cache)

    def files(kind: str, found: list[tuple[str, Path]]) -> list[Item]:
        return [(kind, name, {"sha256": digests[p].sha256, "size": digests[p].size}) for name, p in found]

    transcripts = files("transcript", transcript_files) if sessions_dir is not None else _hash_stored(store)

    agent_value: dict[str, Any] = msgspec.to_builtins(settings)
    agent_value.pop("model", None)
    devices = [
        {"id": d.id, "name": d.name, "scopes": list(d.scopes), "revoked": not d.active}
        for d in sorted(DeviceRegistry(home.devices).devices(), key=lambda d: d.id)
    ]
    role: list[Item] = [
        ("role", "agent", agent_value),
        ("role", "defaults", {k: v for k, v in config.defaults.items() if k != "model"}),
        ("role", "devices", devices),
        ("role", "tools", msgspec.to_builtins(settings.tools)),
    ]
    jobs: list[Item] = [
        ("job", jid, {k: j[k] for k in ("status", "kind", "sessionKey", "createdAt", "startedAt", "endedAt", "error")})
        for jid, j in sorted((jid, job.to_dict()) for jid, job in JobStore(store.log("jobs")).jobs().items())
    ]
    sessions: list[Item] = [
        ("session", k, {f: e.get(f) for f in ("sessionId", "label", "model", "updatedAt")})
        for k, e in sorted(store.catalog.items())
    ]
    items = [
        *files("identity", identity),
        *files("memory", memory),
        *role,
        ("model", "primary", {"provider": model[0], "model": model[1], "profile": model[2]}),
        *jobs,
        *sessions,
        *transcripts,
        ("audit", "chain", _audit(backend)),
    ]
    return [(kind, name, redact(value)) for kind, name, value in items]


def regular_files(directory: Path, keep: Callable[[str], bool]) -> list[str]:
    """Names of the regular files (not symlinks, not dot-files) directly in ``directory``, sorted."""
    try:
        with os.scandir(directory) as it:
            names = [e.name for e in it if not e.name.startswith(".") and e.is_file(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(n for n in names if keep(n))


Listed = list[tuple[str, Path]]


def _hash_stored(store: AgentStore) -> list[Item]:
    out: list[Item] = []
    for name in store.transcripts.names():
        data = store.transcripts.export(name)
        out.append(("transcript", name, {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}))
    return out


def _hash_files(
    workspace: Path, sessions: Path | None, cache: HashCache
) -> tuple[Listed, Listed, Listed, dict[Path, FileDigest]]:
    """List the identity, memory and transcript files and hash them all in one batch."""
    attempt = 0
    while True:
        identity, memory, transcripts = _files(workspace, sessions)
        listed = [p for _, p in identity + memory + transcripts]
        try:
            return identity, memory, transcripts, dict(zip(listed, cache.digests(listed), strict=True))
        except FileNotFoundError as exc:
            attempt += 1
            if attempt == 3:  # a file vanished between listing and hashing, three times in a row
                raise ContinuityError(f"{exc.filename}: kept disappearing while the manifest was taken") from exc
        except OSError as exc:
            raise os_error(ContinuityError, "cannot read", exc, path=exc.filename) from exc


def _files(workspace: Path, sessions: Path | None) -> tuple[Listed, Listed, Listed]:
    identity = [(n, workspace / n) for n in regular_files(workspace, lambda n: n != "MEMORY.md")]
    memory = [(n, workspace / n) for n in regular_files(workspace, lambda n: n == "MEMORY.md")]
    memory += [(f"memory/{n}", workspace / "memory" / n) for n in regular_files(workspace / "memory", _is_md)]
    transcripts = (
        [(n, sessions / n) for n in regular_files(sessions, lambda n: n.endswith(".jsonl"))] if sessions else []
    )
    return identity, sorted(memory), transcripts


def _is_md(name: str) -> bool:
    return name.endswith(".md")


def _audit(backend: Backend) -> dict[str, Any]:
    try:
        v = backend.audit().verify()
    except AuditNotFoundError:
        return {"verified": False, "entries": 0, "lastSeq": 0, "headHash": None}
    return {"verified": v.ok, "entries": v.entries, "lastSeq": v.head_seq or 0, "headHash": v.head_hash}


def seal_manifest(
    agent: str,
    items: list[Item],
    *,
    key: SigningKey,
    now: datetime | None = None,
    gateway: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Chain ``items`` into entries, sign the root, and wrap them as a manifest."""
    prev = ZERO_HASH
    entries = []
    for kind, name, value in items:
        body = {"kind": kind, "name": name, "value": value}
        prev = chain_hash(prev, body)
        entries.append({**body, "hash": prev})
    manifest: dict[str, Any] = {
        "version": MANIFEST_VERSION,
        "agent": agent,
        "createdAt": format_ts(now or datetime.now(UTC)),
        "entries": entries,
        "root": prev,
        "signature": base64.b64encode(key.sign(bytes.fromhex(prev))).decode("ascii"),
        "publicKey": key.public_key_b64,
        "fingerprint": key.fingerprint,
    }
    if gateway is not None:
        manifest["gateway"] = {"bootId": gateway["bootId"], "generation": gateway["generation"]}
    return manifest


def verify_manifest(manifest: Any) -> ManifestCheck:
    """Recompute every entry hash, the root, the signature and the fingerprint of a manifest.

    Needs nothing but the manifest: the public key travels in it. A manifest that is well
    formed but does not hold (an edited value, name, kind, hash, root, signature, key or
    fingerprint) gives ``ok=False`` with the first bad entry and every failing part named.

    Raises:
        ManifestError: not a manifest at all: not an object, an unknown ``version``, a
            missing or foreign key, a field of the wrong type, base64 that does not decode,
            a public key that is not 32 bytes or a signature that is not 64.
    """
    public_key, signature = _check_shape(manifest)
    entries: list[dict[str, Any]] = manifest["entries"]
    problems: list[str] = []
    first_bad = None
    prev = ZERO_HASH
    for i, entry in enumerate(entries):
        body = {"kind": entry["kind"], "name": entry["name"], "value": entry["value"]}
        try:
            expected = chain_hash(prev, body)
        except CanonicalJSONError as exc:
            raise ManifestError(f"value has no canonical JSON form: {exc}", field=f"$.entries[{i}].value") from exc
        except UsageError:  # the previous claimed hash is not hex: that entry was reported already
            expected = ""
        if first_bad is None and expected != entry["hash"]:
            first_bad = i
            problems.append(
                f"entries[{i}] ({_short(entry['kind'])} {_short(entry['name'])}): hash does not match the entry "
                "(its kind, name, value or hash was changed)"
            )
        prev = entry["hash"]
    claimed_root = manifest["root"]
    root_ok = claimed_root == (entries[-1]["hash"] if entries else ZERO_HASH)
    if not root_ok:
        problems.append("root: is not the hash of the last entry")
    try:
        root_bytes = bytes.fromhex(claimed_root) if len(claimed_root) == 64 else b""
    except ValueError:
        root_bytes = b""
    signature_ok = bool(root_bytes) and verify_signature(public_key, signature, root_bytes)
    if not signature_ok:
        problems.append("signature: does not verify over root with publicKey")
    fingerprint_ok = manifest["fingerprint"] == fingerprint_of(public_key)
    if not fingerprint_ok:
        problems.append("fingerprint: is not the SHA-256 of publicKey")
    ok = not problems
    return ManifestCheck(
        ok=ok,
        reason=None if ok else "; ".join(problems),
        first_bad_index=first_bad,
        root_ok=root_ok,
        signature_ok=signature_ok,
        fingerprint_ok=fingerprint_ok,
        entries=len(entries),
        root=claimed_root,
        fingerprint=manifest["fingerprint"],
    )


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _check_shape(manifest: Any) -> tuple[bytes, bytes]:
    """Refuse what is not a manifest; returns the raw public key and signature."""
    if not isinstance(manifest, dict):
        raise ManifestError(f"a manifest is a JSON object, not {type(manifest).__name__}", field="$")
    missing = [k for k in MANIFEST_KEYS if k not in manifest]
    foreign = sorted(str(k) for k in manifest if k not in MANIFEST_KEYS and k not in OPTIONAL_KEYS)
    if missing or foreign:
        what = [f"missing {', '.join(missing)}"] if missing else []
        what += [f"foreign {', '.join(_short(k) for k in foreign)}"] if foreign else []
        keys = ", ".join(MANIFEST_KEYS)
        raise ManifestError(f"keys must be {keys} (and optionally gateway): {'; '.join(what)}", field="$")
    if "gateway" in manifest:
        boot = manifest["gateway"]
        if (
            not isinstance(boot, dict)
            or set(boot) != {"bootId", "generation"}
            or not isinstance(boot["bootId"], str)
            or type(boot["generation"]) is not int
        ):
            raise ManifestError('expected {"bootId": string, "generation": integer}', field="$.gateway")
    version = manifest["version"]
    if type(version) is not int or version != MANIFEST_VERSION:
        known = MANIFEST_VERSION
        raise ManifestError(f"unknown version {_short(repr(version))}; this verifier knows {known}", field="$.version")
    for k in ("agent", "createdAt", "root", "signature", "publicKey", "fingerprint"):
        if not isinstance(manifest[k], str):
            raise ManifestError(f"expected a string, got {type(manifest[k]).__name__}", field=f"$.{k}")
    try:
        check_agent_id(manifest["agent"])
    except UsageError as exc:
        raise ManifestError(str(exc), field="$.agent") from exc
    public_key = _b64(manifest["publicKey"], "$.publicKey", 32, "a raw Ed25519 public key")
    signature = _b64(manifest["signature"], "$.signature", 64, "an Ed25519 signature")
    entries = manifest["entries"]
    if not isinstance(entries, list):
        raise ManifestError(f"expected a list, got {type(entries).__name__}", field="$.entries")
    for i, entry in enumerate(entries):
        where = f"$.entries[{i}]"
        if not isinstance(entry, dict) or set(entry) != _ENTRY_KEYS:
            got = sorted(str(k) for k in entry) if isinstance(entry, dict) else type(entry).__name__
            raise ManifestError(f"an entry is an object with exactly kind, name, value, hash; got {got}", field=where)
        for k in ("kind", "name", "hash"):
            if not isinstance(entry[k], str):
                raise ManifestError(f"expected a string, got {type(entry[k]).__name__}", field=f"{where}.{k}")
    return public_key, signature


def _b64(text: str, field: str, size: int, what: str) -> bytes:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ManifestError("not valid base64", field=field) from None
    if len(raw) != size:
        raise ManifestError(f"{len(raw)} bytes where {what} has {size}", field=field)
    return raw
