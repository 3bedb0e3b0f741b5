"""Evidence packets: one folder that documents a continuity repair, re-checkable by anyone.

A packet holds the source transcripts, the reconstruction, the activation package, the
first replies after the activation (a reply a ``context_edit`` later removed or replaced
says so, with the edit's id), each with its sha256, size and timestamps, the
provenance reports, ``manifest.json`` describing all of it, and ``SHA256SUMS`` over every
file in the folder (the format ``sha256sum -c`` reads). With ``hashes_only`` the
transcripts and the replies' text are left out and only their hashes are kept, so a packet
can be shared without the private conversation, as the seed did.

:func:`verify_packet` re-checks a packet: every file listed in ``SHA256SUMS`` is there with
that hash, no file is unlisted, and every copied file still has the hash the manifest
recorded for its original.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kurahi import __version__
from kurahi.context.text import message_text
from kurahi.errors import UsageError
from kurahi.fs import durable as fsio
from kurahi.fs.durable import atomic_write, file_sha256
from kurahi.js.stringify import json_utf8
from kurahi.lineage.evidence_dir import file_facts
from kurahi.pi.vocab import MESSAGE

__all__ = ["PacketCheck", "first_replies", "verify_packet", "write_packet"]

PACKET_VERSION = 1


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def first_replies(transcript: Path, count: int, *, after: str | None = None) -> list[dict[str, Any]]:
    """The first ``count`` assistant replies with text on the transcript's current path.

    Args:
        transcript: the live transcript.
        count: how many replies.
        after: only replies after this entry id (e.g. the last entry of the activated candidate).
    """
    from kurahi.context.origins import effective_path
    from kurahi.pi.transcript import Transcript

    out: list[dict[str, Any]] = []
    with Transcript.open(transcript) as t:
        seen = after is None
        path = t.path()
        # A reply a context_edit later took out of (or changed in) the model's view says so.
        edits = {src.entry.id: src for src in effective_path(path).sources if src.edit is not None}
        for e in path:
            if not seen:
                seen = e.id == after
                continue
            m = e.data.get("message") if e.type == MESSAGE else None
            if isinstance(m, dict) and m.get("role") == "assistant" and message_text(m):
                raw = json_utf8(json.dumps(m, ensure_ascii=False, sort_keys=True))
                out.append(
                    {
                        "entryId": e.id,
                        "timestamp": e.data.get("timestamp"),
                        "sha256": hashlib.sha256(raw).hexdigest(),
                        "text": message_text(m),
                    }
                )
                if e.id in edits:
                    src = edits[e.id]
                    out[-1]["contextEdit"] = {"id": src.edit.id, "removed": src.removed}
                if len(out) >= count:
                    break
    return out


def write_packet(
    folder: str | os.PathLike[str],
    *,
    sources: Sequence[Path] = (),
    reconstruction: Path | None = None,
    activation: Path | None = None,
    live: Path | None = None,
    replies: int = 3,
    after: str | None = None,
    provenance: Sequence[dict[str, Any]] = (),
    hashes_only: bool = False,
) -> Path:
    """Write a packet into ``folder`` (new or empty) and return it.

    Raises:
        UsageError: the folder is not empty (or a dangling symlink), an input is missing, two
            sources share a file name (one copy would replace the other), or the activation
            package holds a symlink (a packet is shared: it copies files, never what a link
            points at).
    """
    d = Path(folder)
    if os.path.lexists(d) and (not d.is_dir() or any(d.iterdir())):
        raise UsageError(f"{d}: exists and is not an empty directory; a packet is never mixed with other files")
    for p in [*sources, *(x for x in (reconstruction, live) if x is not None)]:
        if not p.is_file():
            raise UsageError(f"{p}: no such file")
    names = [p.name for p in sources]
    if len(set(names)) != len(names):
        raise UsageError(f"two sources share a file name ({', '.join(sorted(names))}); rename one copy")
    if activation is not None and not activation.is_dir():
        raise UsageError(f"{activation}: not an activation package directory")
    if activation is not None and (links := sorted(str(p) for p in activation.rglob("*") if p.is_symlink())):
        raise UsageError(f"{activation}: holds symlinks ({', '.join(links[:3])}); a packet copies only files")
    fsio.make_dirs(d, 0o777)
    files: dict[str, Any] = {}

    def add(kind: str, path: Path, *, content: bool) -> None:
        rel = f"{kind}/{path.name}"
        facts = file_facts(path)
        facts["origin"] = facts.pop("path")
        facts["included"] = content
        if content:
            fsio.make_dirs(d / kind, 0o777)
            fsio.copy_durably(path, d / rel)  # a packet reported written survives a power cut
        files[rel] = facts

    for s in sources:
        add("sources", s, content=not hashes_only)
    if reconstruction is not None:
        add("reconstruction", reconstruction, content=not hashes_only)
    if activation is not None:
        for p in sorted(activation.rglob("*")):
            if p.is_file():
                rel_in = p.relative_to(activation)
                transcript_like = p.suffix == ".jsonl"
                add("activation", p, content=not (hashes_only and transcript_like))
                if rel_in.parent != Path("."):
                    files[f"activation/{rel_in.as_posix()}"] = files.pop(f"activation/{p.name}")
                    if not (hashes_only and transcript_like):
                        fsio.make_dirs(d / "activation" / rel_in.parent, 0o777)
                        os.replace(d / "activation" / p.name, d / "activation" / rel_in)
                        fsio.fsync_dir(d / "activation" / rel_in.parent)
                        fsio.fsync_dir(d / "activation")
    reply_rows = first_replies(live, replies, after=after) if live is not None else []
    if live is not None:
        add("live", live, content=not hashes_only)
    if hashes_only:
        for r in reply_rows:
            r.pop("text", None)
    atomic_write(d / "replies.json", json_utf8(json.dumps(reply_rows, ensure_ascii=False, indent=1)), mode=0o644)
    report_names = []
    if provenance:
        fsio.make_dirs(d / "reports", 0o777)
    for i, report in enumerate(provenance, 1):
        body = dict(report)
        if hashes_only:
            body.pop("replyText", None)
        name = f"reports/provenance-{i}.json"
        atomic_write(d / name, json_utf8(json.dumps(body, ensure_ascii=False, indent=1)), mode=0o644)
        report_names.append(name)
    manifest = {
        "packet": PACKET_VERSION,
        "tool": f"kurahi {__version__}",
        "createdAt": _now(),
        "hashesOnly": hashes_only,
        "files": files,
        "replies": "replies.json",
        "reports": report_names,
    }
    atomic_write(d / "manifest.json", json_utf8(json.dumps(manifest, ensure_ascii=False, indent=1)), mode=0o644)
    lines = [
        f"{file_sha256(f)}  {f.relative_to(d).as_posix()}\n"
        for f in sorted(p for p in d.rglob("*") if p.is_file() and p.name != "SHA256SUMS")
    ]
    # File names as the file system has them (a name that is not UTF-8 keeps its bytes), as sha256sum lists them.
    atomic_write(d / "SHA256SUMS", "".join(lines).encode("utf-8", "surrogateescape"), mode=0o644)
    return d


@dataclass
class PacketCheck:
    """What :func:`verify_packet` found."""

    folder: str
    checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing wrong."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"folder": self.folder, "ok": self.ok, "checkedFiles": self.checked, "problems": self.problems}


def verify_packet(folder: str | os.PathLike[str]) -> PacketCheck:
    """Re-check a packet (see the module docstring).

    Raises:
        UsageError: not a packet folder (no ``SHA256SUMS`` or ``manifest.json``).
    """
    d = Path(folder)
    sums, man = d / "SHA256SUMS", d / "manifest.json"
    if not sums.is_file() or not man.is_file():
        raise UsageError(f"{d}: not an evidence packet (SHA256SUMS and manifest.json are required)")
    result = PacketCheck(str(d))
    listed: dict[str, str] = {}
    for n, line in enumerate(sums.read_bytes().decode("utf-8", "surrogateescape").splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            result.problems.append(f"SHA256SUMS line {n}: not '<sha256>  <file>'")
            continue
        listed[name] = digest
    present = {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file() and p.name != "SHA256SUMS"}
    for name in sorted(present - set(listed)):
        result.problems.append(f"{name}: in the folder but not in SHA256SUMS")
    for name, digest in sorted(listed.items()):
        p = d / name
        if ".." in Path(name).parts or not p.is_file():
            result.problems.append(f"{name}: listed in SHA256SUMS but missing")
            continue
        result.checked += 1
        if file_sha256(p) != digest:
            result.problems.append(f"{name}: sha256 differs from SHA256SUMS")
    try:
        manifest = json.loads(man.read_text())
        files = manifest["files"]
    except (ValueError, KeyError, TypeError) as exc:
        result.problems.append(f"manifest.json: unreadable ({exc})")
        return result
    for rel, facts in sorted(files.items()):
        if facts.get("included"):
            p = d / rel
            if not p.is_file():
                result.problems.append(f"{rel}: recorded as included but missing")
            elif file_sha256(p) != facts.get("sha256"):
                result.problems.append(f"{rel}: differs from the original it was copied from")
    return result
