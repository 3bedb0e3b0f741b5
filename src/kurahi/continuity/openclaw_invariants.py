"""C0–C9 for an OpenClaw resident, scored from stored evidence alone (like :mod:`.invariants`).

Where OpenClaw offers what Kurahi's own gateway does, the checks are Kurahi's (identity and
memory files, role, the observer's signature, the leak scan). Where it differs, the check
says so:

- **C0** a ``close`` or ``reset`` is proven by the session id changing (2026.5: a new
  session) or by one more ``reset`` entry in the session's transcript (2026.9 keeps the id);
  a ``restart`` by a new gateway pid (supervised) or, when the pid is not Kurahi's (attached),
  by a gateway server that started after the restart was asked for (``/readyz``'s uptime).
- **C2** memory is *retained* when no memory file was lost or changed; OpenClaw may add one
  (its session-memory hook writes ``memory/<date>-*.md`` on a reset), which is listed.
- **C3** a wrong gateway token must be refused by OpenClaw (its ``AUTH_TOKEN_MISMATCH``).
- **C4** ``skip``: OpenClaw has no job API the suite can hold across a disruption.
- **C5** ``skip``: OpenClaw keeps no tamper-evident audit chain.
- **C8** transcripts are matched by session id, so a reset archive (2026.5 renames
  ``<id>.jsonl`` to ``<id>.jsonl.reset.<ts>``) is the same transcript kept, not one lost.
- **C9** a reply is required before and after; its wording is the model's, not an identity
  marker, so a reply is ``skip`` (said so), no reply ``fail``. For ``reset`` C9 is the
  measured continuity: the pre-reset marker in the runtime's view after the reset, or after
  ``--repair``.
"""

from __future__ import annotations

from typing import Any

from kurahi.continuity.invariants import (
    INVARIANTS,
    ManifestCheck,
    Result,
    _c0,
    _c1,
    _c6,
    _c7,
    _entries,
    _r,
)
from kurahi.continuity.openclaw_manifest import transcript_session

__all__ = ["score_openclaw"]


def _resets(manifest: dict[str, Any], sid: Any) -> int:
    value = _entries(manifest, "transcript").get(f"{sid}.jsonl")
    return int(value.get("resets") or 0) if isinstance(value, dict) else 0


def _c0_boundary(ev: dict[str, Any]) -> Result:
    d = ev["disruption"]
    if d == "reset":
        vb, vr = ev["view"]["before"], ev["view"]["reset"]
        sb, sa, rb, ra = vb.get("sessionId"), vr.get("sessionId"), vb.get("resets", 0), vr.get("resets", 0)
    else:
        sb, sa = ev["before"]["probeSessionId"], ev["after"]["probeSessionId"]
        rb, ra = _resets(ev["before"]["manifest"], sb), _resets(ev["after"]["manifest"], sa)
    if sb and sa and sb != sa:
        return _r("C0", "pass", f"session {sb} -> {sa} (a new session)")
    if sb and sb == sa and ra > rb:
        return _r("C0", "pass", f"session {sb} kept; reset entries {rb} -> {ra}")
    return _r("C0", "fail", f"nothing was reset: session {sb} -> {sa}, reset entries {rb} -> {ra}")


def _c0_restart(ev: dict[str, Any]) -> Result:
    """C0 for a restart: a new pid, else a gateway server that started after the restart was asked for.

    The pid is known in supervised mode; in attached mode it is not Kurahi's, and the server's
    start comes from ``/readyz``'s uptime.
    """
    gb, ga = ev["before"]["gateway"], ev["after"]["gateway"]
    if gb.get("pid") and ga.get("pid"):
        ok = gb["pid"] != ga["pid"]
        return _r("C0", "pass" if ok else "fail", f"gateway pid {gb['pid']} -> {ga['pid']}")
    sb, sa, asked = gb.get("serverStartedAt"), ga.get("serverStartedAt"), ev["outcome"].get("requestedAt")
    if not (isinstance(sa, int) and isinstance(asked, int)):
        why = "OpenClaw published no server start time (/readyz uptimeMs) and the pid is not Kurahi's"
        return _r("C0", "skip", f"the restart cannot be proven: {why}")
    ago = f"started {_ms_iso(sb)} -> {_ms_iso(sa)}, restart asked at {_ms_iso(asked)}"
    if sa > asked and (not isinstance(sb, int) or sa > sb):
        return _r("C0", "pass", f"the gateway server answering after is a new one ({ago})")
    return _r("C0", "fail", f"the gateway server answering after started before the restart was asked for ({ago})")


def _ms_iso(ms: Any) -> str:
    from datetime import UTC, datetime

    if not isinstance(ms, int):
        return "unknown"
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _c2(ev: dict[str, Any]) -> Result:
    b, a = _entries(ev["before"]["manifest"], "memory"), _entries(ev["after"]["manifest"], "memory")
    lost = sorted(n for n in b if n not in a)
    changed = sorted(n for n in b if n in a and a[n] != b[n])
    added = sorted(n for n in a if n not in b)
    if lost or changed:
        return _r("C2", "fail", f"memory lost: {', '.join(lost) or '-'}; changed: {', '.join(changed) or '-'}")
    more = f"; added by OpenClaw: {', '.join(added)}" if added else ""
    return _r("C2", "pass", f"{len(b)} memory files retained unchanged{more}; no facts probe, file hashes only")


def _c3(ev: dict[str, Any]) -> Result:
    b, a = _entries(ev["before"]["manifest"], "role"), _entries(ev["after"]["manifest"], "role")
    if b != a:
        changed = sorted(k for k in set(b) | set(a) if b.get(k) != a.get(k))
        return _r("C3", "fail", f"role changed: {', '.join(changed)}")
    wrong = ev["after"].get("wrongToken") or {}
    if not wrong.get("refused"):
        return _r("C3", "fail", "OpenClaw accepted a wrong gateway token")
    return _r("C3", "pass", f"{len(b)} role entries identical; a wrong gateway token is refused ({wrong.get('code')})")


def _c8(ev: dict[str, Any]) -> Result:
    b, a = ev["before"]["manifest"], ev["after"]["manifest"]
    sb, sa = _entries(b, "session"), _entries(a, "session")
    missing = sorted(set(sb) - set(sa))
    if missing:
        return _r("C8", "fail", f"session keys lost: {', '.join(missing)}")
    stray = ev["after"].get("oldDirWrites") or []
    if stray:
        return _r(
            "C8",
            "fail",
            f"after the move OpenClaw wrote {len(stray)} files into the old state dir, not the moved one: "
            f"{', '.join(stray[:3])}",
        )
    tb, ta = _entries(b, "transcript"), _entries(a, "transcript")
    # A conversation is kept when a file of the same session and kind (transcript or
    # trajectory) is still there, under whatever name (2026.5 renames a reset transcript).
    after_ids = {_stem(n) for n in ta}
    lost = sorted(n for n in tb if _stem(n) not in after_ids)
    if lost:
        return _r("C8", "fail", f"transcripts lost: {', '.join(lost)}")
    driven = set(ev.get("drivenSessions") or [])
    changed = sorted(n for n in tb if transcript_session(n) not in driven and tb[n] != ta.get(n))
    if changed:
        return _r("C8", "fail", f"transcripts changed that the suite did not drive: {', '.join(changed)}")
    return _r("C8", "pass", f"{len(sb)} sessions and {len(tb)} transcripts retained (by session id)")


def _stem(name: str) -> str:
    return name.split(".jsonl", 1)[0]


def _c9(ev: dict[str, Any]) -> Result:
    if ev["disruption"] == "reset":
        return _c9_reset(ev["view"])
    cb, ca = ev["before"]["probes"].get("chat"), ev["after"]["probes"].get("chat")
    if cb is None or ca is None:
        return _r("C9", "skip", "no chat probe")
    if not cb.get("reply") or not ca.get("reply"):
        return _r("C9", "fail", f"the resident did not answer {'before' if not cb.get('reply') else 'after'}")
    return _r(
        "C9",
        "skip",
        "answered before and after; the wording is the model's and OpenClaw publishes no identity marker, "
        "so who answered is not scored",
    )


def _c9_reset(view: dict[str, Any]) -> Result:
    first = view["markers"][0]
    before, reset, repaired = view["before"], view["reset"], view.get("repaired")

    def has(v: dict[str, Any]) -> bool:
        return bool(v.get("markers", {}).get(first))

    counts = f"{before.get('messages')} messages before, {reset.get('messages')} after the reset"
    if not has(before):
        return _r("C9", "fail", f"marker {first} was not in the runtime's view before the reset")
    if has(reset):
        return _r("C9", "pass", f"marker {first} stayed in the runtime's view across the reset ({counts})")
    if repaired is None:
        why = view.get("repairSkipped") or "run with --repair"
        return _r("C9", "fail", f"marker {first} left the runtime's view at the reset ({counts}); not repaired: {why}")
    if not all(repaired.get("markers", {}).values()):
        gone = [m for m, ok in repaired.get("markers", {}).items() if not ok]
        return _r("C9", "fail", f"after the repair still missing from the runtime's view: {', '.join(gone)}")
    return _r(
        "C9",
        "pass",
        f"marker {first} left the runtime's view at the reset ({counts}) and is back after the repair "
        f"({repaired.get('messages')} messages, every marker in view)",
    )


def score_openclaw(ev: dict[str, Any], *, threshold: float, check_manifest: ManifestCheck) -> list[Result]:
    """The ten results for one disruption of an OpenClaw resident, in order C0..C9."""
    del threshold  # no facts probe: OpenClaw has no recall API the suite could ask
    if ev["outcome"].get("unsupported"):
        why = f"not run: {ev['outcome'].get('detail')}"
        return [_r(cid, "skip", why) for cid in INVARIANTS]
    if ev["disruption"] in ("close", "reset"):
        c0 = _c0_boundary(ev) if ev["outcome"].get("ok") else _c0(ev)
    elif ev["disruption"] == "restart" and ev["outcome"].get("ok"):
        c0 = _c0_restart(ev)
    else:
        c0 = _c0(ev)
    return [
        c0,
        _c1(ev),
        _c2(ev),
        _c3(ev),
        _r("C4", "skip", "OpenClaw has no job API the suite can hold across a disruption; unfinished work not scored"),
        _r("C5", "skip", "OpenClaw keeps no tamper-evident audit chain to check"),
        _c6(ev),
        _c7(ev, check_manifest),
        _c8(ev),
        _c9(ev),
    ]
