"""Invariants C0–C9, written once for every target, scored from stored evidence alone.

:func:`score` is a pure function of one disruption's evidence (as it sits in the report),
so ``kurahi continuity verify`` re-scores a report without the gateway and must get the
same results. Each invariant is ``pass``, ``fail`` or ``skip``; ``skip`` only when the input
needed to decide is missing, and the detail says which.

The evidence names its target (:func:`kurahi.continuity.capabilities.declared_for`), and
what the target declares decides how each invariant reads it:

- **C4** needs a job API, **C5** an audit chain (:data:`NEEDS`); a target without one
  reports the invariant ``skip`` with its own reason (OpenClaw has neither).
- **C0** a restart is proven by the boot id or generation the gateway publishes; without
  them by a new pid, else (OpenClaw attached, the pid not Kurahi's) by a gateway server that
  started after the restart was asked for (``/readyz``'s uptime). A ``close`` is proven by
  the probe session's new id; where a reset may keep the id (OpenClaw 2026.9), by one more
  ``reset`` entry in the session's transcript, and the same for ``reset``.
- **C2** memory is identical before and after, and the facts are found by recall; where
  the runtime writes memory of its own (OpenClaw's session-memory hook writes
  ``memory/<date>-*.md`` on a reset), memory is *retained* when no file was lost or changed,
  the added ones listed, and there is no recall to probe.
- **C3** a wrong owner token gets HTTP 401 from Kurahi's API; OpenClaw must refuse a wrong
  gateway token (its ``AUTH_TOKEN_MISMATCH``).
- **C8** transcripts are matched by name; where a reset renames the old transcript (2026.5
  renames ``<id>.jsonl`` to ``<id>.jsonl.reset.<ts>``), by session id, so an archive is the
  same transcript kept, not one lost.
- **C9** the reply carries the resident's identity marker; where replies carry none
  (OpenClaw: the wording is the model's), a reply is required before and after and who
  answered is ``skip``, said so. For ``reset`` C9 is the measured continuity: the pre-reset
  marker in the runtime's view after the reset, or after ``--repair``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from kurahi.continuity.capabilities import (
    AUDIT_CHAIN,
    BOOT_ID,
    HTTP_OWNER_TOKEN,
    IDENTITY_MARKER,
    JOBS,
    MEMORY_HOOKS,
    NEW_SESSION_ON_RESET,
    RECALL,
    Declared,
    declared_for,
)

__all__ = ["INVARIANTS", "NEEDS", "Result", "score"]

Status = Literal["pass", "fail", "skip"]
Result = dict[str, str]
"""``{"id": "C0", "name": ..., "status": ..., "detail": ...}``."""

INVARIANTS = {
    "C0": "the disruption happened",
    "C1": "identity files byte-identical",
    "C2": "memory retained and found",
    "C3": "role and permissions unchanged",
    "C4": "unfinished work not lost silently",
    "C5": "audit chain continuous",
    "C6": "no secret left the state dir",
    "C7": "the same key signs both manifests",
    "C8": "sessions and transcripts retained",
    "C9": "the resident answers as itself",
}

NEEDS = {"C4": JOBS, "C5": AUDIT_CHAIN}
"""The capability without which an invariant cannot be scored at all (it is then ``skip``)."""

ManifestCheck = Callable[[dict[str, Any]], tuple[bool, str]]


def _entries(manifest: dict[str, Any], kind: str) -> dict[str, Any]:
    return {e["name"]: e["value"] for e in manifest.get("entries", []) if e.get("kind") == kind}


def _r(cid: str, status: Status, detail: str) -> Result:
    return {"id": cid, "name": INVARIANTS[cid], "status": status, "detail": detail}


# -- C0 -----------------------------------------------------------------------------------------


def _c0(ev: dict[str, Any], target: Declared) -> Result:
    d = ev["disruption"]
    if NEW_SESSION_ON_RESET not in target and d in ("close", "reset") and ev["outcome"].get("ok"):
        return _c0_boundary(ev)
    if BOOT_ID not in target and d == "restart" and ev["outcome"].get("ok"):
        return _c0_server_restart(ev)
    b, a = ev["before"], ev["after"]
    if not ev["outcome"].get("ok"):
        return _r("C0", "fail", f"the disruption did not complete: {ev['outcome'].get('detail')}")
    if d == "model-swap":
        mb, ma = _entries(b["manifest"], "model").get("primary"), _entries(a["manifest"], "model").get("primary")
        ok = mb != ma and ma is not None
        return _r("C0", "pass" if ok else "fail", f"model {_model(mb)} -> {_model(ma)}")
    if d == "restart":
        return _c0_restart(ev["outcome"], b["gateway"], a["gateway"])
    if d == "move":
        ok = b["gateway"]["home"] != a["gateway"]["home"]
        return _r("C0", "pass" if ok else "fail", f"state dir {b['gateway']['home']} -> {a['gateway']['home']}")
    if d == "close":
        sb, sa = b["probeSessionId"], a["probeSessionId"]
        ok = bool(sb) and bool(sa) and sb != sa
        return _r("C0", "pass" if ok else "fail", f"probe session {sb} -> {sa}")
    return _r("C0", "fail", f"unknown disruption {d!r}")


def _c0_restart(outcome: dict[str, Any], gb: dict[str, Any], ga: dict[str, Any]) -> Result:
    """C0 for a restart: proven by what really changes.

    The boot id (a new process) or the generation (an in-process restart); a gateway that
    publishes neither is judged by its pid, and an in-process restart of one cannot be proven
    (skip, not a false fail or pass).
    """
    boot_b, boot_a = gb.get("bootId"), ga.get("bootId")
    gen_b, gen_a = gb.get("generation"), ga.get("generation")
    if boot_b and boot_a:
        if boot_b != boot_a:
            pids = f"pid {gb.get('pid')} -> {ga.get('pid')}"
            return _r("C0", "pass", f"a new process: boot {boot_b} -> {boot_a} ({pids})")
        if isinstance(gen_b, int) and isinstance(gen_a, int) and gen_a > gen_b:
            return _r("C0", "pass", f"restarted in process: generation {gen_b} -> {gen_a} (boot {boot_a})")
        return _r("C0", "fail", f"nothing restarted: boot {boot_a}, generation {gen_b} -> {gen_a}, pid {ga.get('pid')}")
    if gb.get("pid") != ga.get("pid"):
        return _r("C0", "pass", f"gateway pid {gb.get('pid')} -> {ga.get('pid')}")
    if outcome.get("inProcess"):
        why = "the gateway publishes no boot id or generation, so an in-process restart cannot be proven"
        return _r("C0", "skip", why)
    return _r("C0", "fail", f"gateway pid {gb.get('pid')} -> {ga.get('pid')}")


def _c0_server_restart(ev: dict[str, Any]) -> Result:
    """C0 for a restart without a boot id: a new pid, else a server started after the restart was asked for.

    The pid is known when the suite runs the gateway; when it does not (attached), the
    server's start comes from ``/readyz``'s uptime.
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


def _c0_boundary(ev: dict[str, Any]) -> Result:
    """C0 for a reset that may keep the session id: a new id, or one more reset entry in its transcript."""
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


def _resets(manifest: dict[str, Any], sid: Any) -> int:
    value = _entries(manifest, "transcript").get(f"{sid}.jsonl")
    return int(value.get("resets") or 0) if isinstance(value, dict) else 0


def _model(v: Any) -> str:
    return f"{v.get('provider')}/{v.get('model')}" if isinstance(v, dict) else "none"


def _ms_iso(ms: Any) -> str:
    from datetime import UTC, datetime

    if not isinstance(ms, int):
        return "unknown"
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- C1 to C3 -------------------------------------------------------------------------------------


def _same(kind: str, ev: dict[str, Any]) -> tuple[bool, str]:
    b, a = _entries(ev["before"]["manifest"], kind), _entries(ev["after"]["manifest"], kind)
    if b == a:
        return True, f"{len(b)} {kind} entries identical"
    changed = sorted(k for k in set(b) | set(a) if b.get(k) != a.get(k))
    return False, f"{kind} changed: {', '.join(changed[:5])}"


def _c1(ev: dict[str, Any]) -> Result:
    ok, detail = _same("identity", ev)
    if ok and not _entries(ev["before"]["manifest"], "identity"):
        return _r("C1", "fail", "no identity files at all")
    return _r("C1", "pass" if ok else "fail", detail)


def _c2(ev: dict[str, Any], target: Declared, threshold: float) -> Result:
    ok, detail = _retained(ev) if MEMORY_HOOKS in target else _same("memory", ev)
    if not ok:
        return _r("C2", "fail", detail)
    if RECALL not in target:
        return _r("C2", "pass", f"{detail}; no facts probe, file hashes only")
    recall = ev["after"]["probes"].get("recall")
    if recall is None:
        return _r("C2", "pass", f"{detail}; no facts given, so memory-file hashes only")
    found = sum(1 for p in recall if p.get("found"))
    rate = found / len(recall) if recall else 0.0
    status: Status = "pass" if recall and rate >= threshold else "fail"
    return _r("C2", status, f"{detail}; recall {found}/{len(recall)} (threshold {threshold:.0%})")


def _retained(ev: dict[str, Any]) -> tuple[bool, str]:
    """No memory file lost or changed; the ones the runtime added are listed."""
    b, a = _entries(ev["before"]["manifest"], "memory"), _entries(ev["after"]["manifest"], "memory")
    lost = sorted(n for n in b if n not in a)
    changed = sorted(n for n in b if n in a and a[n] != b[n])
    added = sorted(n for n in a if n not in b)
    if lost or changed:
        return False, f"memory lost: {', '.join(lost) or '-'}; changed: {', '.join(changed) or '-'}"
    more = f"; added by OpenClaw: {', '.join(added)}" if added else ""
    return True, f"{len(b)} memory files retained unchanged{more}"


def _c3(ev: dict[str, Any], target: Declared) -> Result:
    if HTTP_OWNER_TOKEN in target:
        ok, detail = _same("role", ev)
        wrong = ev["after"].get("wrongTokenStatus")
        if not ok:
            return _r("C3", "fail", detail)
        if wrong != 401:
            return _r("C3", "fail", f"a wrong owner token got HTTP {wrong}, not 401")
        return _r("C3", "pass", f"{detail}; a wrong owner token is still rejected (401)")
    b, a = _entries(ev["before"]["manifest"], "role"), _entries(ev["after"]["manifest"], "role")
    if b != a:
        changed = sorted(k for k in set(b) | set(a) if b.get(k) != a.get(k))
        return _r("C3", "fail", f"role changed: {', '.join(changed)}")
    wrong = ev["after"].get("wrongToken") or {}
    if not wrong.get("refused"):
        return _r("C3", "fail", "OpenClaw accepted a wrong gateway token")
    return _r("C3", "pass", f"{len(b)} role entries identical; a wrong gateway token is refused ({wrong.get('code')})")


# -- C4 to C7 -------------------------------------------------------------------------------------


def _c4(ev: dict[str, Any]) -> Result:
    jb, ja = ev["before"].get("job"), ev["after"].get("job")
    if not jb or jb.get("status") not in ("queued", "running"):
        return _r("C4", "skip", "no job was running when the disruption hit")
    if not ja:
        return _r("C4", "fail", f"job {jb.get('id')} disappeared")
    status = ja.get("status")
    if status in ("queued", "running"):
        return _r("C4", "fail", f"job {ja.get('id')} is still {status} after the disruption")
    if status == "succeeded":
        ok = bool(ja.get("replyEntryId"))
        return _r("C4", "pass" if ok else "fail", f"job {ja.get('id')} finished" + ("" if ok else " without a reply"))
    if status in ("interrupted", "failed"):
        ok = bool(ja.get("error"))
        why = ja.get("error") or "no reason"
        return _r("C4", "pass" if ok else "fail", f"job {ja.get('id')} reported {status}: {why}")
    return _r("C4", "fail", f"job {ja.get('id')} has an unknown status {status!r}")


def _c5(ev: dict[str, Any]) -> Result:
    b, a = ev["before"]["audit"], ev["after"]["audit"]
    if not a.get("verified"):
        return _r("C5", "fail", f"the audit chain does not verify after: {a.get('reason')}")
    if (a.get("entries") or 0) < (b.get("entries") or 0):
        return _r("C5", "fail", f"the chain shrank from {b.get('entries')} to {a.get('entries')} records")
    if b.get("headSeq") is not None and not a.get("isAncestor"):
        return _r("C5", "fail", f"the head before (seq {b.get('headSeq')}) is not an ancestor of the head after")
    return _r("C5", "pass", f"verifies; {b.get('entries')} -> {a.get('entries')} records; old head is an ancestor")


def _c6(ev: dict[str, Any]) -> Result:
    scan = ev.get("leakScan") or {}
    found = scan.get("found") or []
    if found:
        return _r("C6", "fail", f"secret material found in: {', '.join(found[:5])}")
    return _r("C6", "pass", f"{scan.get('scannedBytes', 0)} bytes of responses and manifests scanned; nothing found")


def _c7(ev: dict[str, Any], check: ManifestCheck) -> Result:
    mb, ma = ev["before"]["manifest"], ev["after"]["manifest"]
    okb, why_b = check(mb)
    oka, why_a = check(ma)
    if not okb or not oka:
        return _r("C7", "fail", f"manifest does not verify: {why_b if not okb else why_a}")
    if mb.get("fingerprint") != ma.get("fingerprint"):
        return _r("C7", "fail", f"signer changed: {mb.get('fingerprint', '')[:16]} -> {ma.get('fingerprint', '')[:16]}")
    return _r("C7", "pass", f"both verify; signer {str(ma.get('fingerprint'))[:16]}")


# -- C8, C9 ---------------------------------------------------------------------------------------


def _c8(ev: dict[str, Any], target: Declared) -> Result:
    by_name = NEW_SESSION_ON_RESET in target
    b, a = ev["before"]["manifest"], ev["after"]["manifest"]
    sb, sa = _entries(b, "session"), _entries(a, "session")
    missing = sorted(set(sb) - set(sa))
    if missing:
        return _r("C8", "fail", f"session keys lost: {', '.join(missing)}")
    stray = [] if by_name else ev["after"].get("oldDirWrites") or []
    if stray:
        return _r(
            "C8",
            "fail",
            f"after the move OpenClaw wrote {len(stray)} files into the old state dir, not the moved one: "
            f"{', '.join(stray[:3])}",
        )
    tb, ta = _entries(b, "transcript"), _entries(a, "transcript")
    if by_name:
        driven = set(ev.get("drivenTranscripts") or [])
        lost = sorted(set(tb) - set(ta))
    else:
        # A conversation is kept when a file of the same session and kind (transcript or
        # trajectory) is still there, under whatever name (2026.5 renames a reset transcript).
        driven = set(ev.get("drivenSessions") or [])
        after_ids = {_stem(n) for n in ta}
        lost = sorted(n for n in tb if _stem(n) not in after_ids)
    if lost:
        return _r("C8", "fail", f"transcripts lost: {', '.join(lost)}")
    changed = sorted(n for n in tb if (n if by_name else _transcript_session(n)) not in driven and tb[n] != ta.get(n))
    if changed:
        return _r("C8", "fail", f"transcripts changed that the suite did not drive: {', '.join(changed)}")
    if not by_name:
        return _r("C8", "pass", f"{len(sb)} sessions and {len(tb)} transcripts retained (by session id)")
    if ev["disruption"] == "close":
        old, new = ev["before"]["probeSessionId"], ev["after"]["probeSessionId"]
        if not old or old == new:
            return _r("C8", "fail", "the closed session did not get a new session id")
        if f"{old}.jsonl" not in ta:
            return _r("C8", "fail", f"the closed session's transcript {old}.jsonl is gone")
    return _r("C8", "pass", f"{len(sb)} sessions and {len(tb)} transcripts retained")


def _stem(name: str) -> str:
    return name.split(".jsonl", 1)[0]


def _transcript_session(name: str) -> str:
    """The session id a transcript entry belongs to (``<id>.jsonl[.reset.<ts>]`` -> ``<id>``)."""
    return _stem(name).removesuffix(".trajectory")


def _c9(ev: dict[str, Any], target: Declared) -> Result:
    if IDENTITY_MARKER not in target:
        return _c9_reply(ev)
    cb, ca = ev["before"]["probes"].get("chat"), ev["after"]["probes"].get("chat")
    if cb is None or ca is None:
        return _r("C9", "skip", "no chat probe (run with --chat)")
    marker = ev.get("marker") or cb.get("marker")
    if not marker:
        return _r("C9", "fail", "the reply before carries no identity marker")
    if ca.get("marker") != marker:
        return _r("C9", "fail", f"identity marker {marker!r} before, {ca.get('marker')!r} after")
    if ev["disruption"] == "model-swap":
        want = ev["outcome"].get("swapTo")
        if want and ca.get("profile") != want:
            return _r("C9", "fail", f"the answer after the swap came from {ca.get('profile')!r}, not {want!r}")
        return _r("C9", "pass", f"marker {marker}; answered by {ca.get('profile')} after the swap")
    return _r("C9", "pass", f"marker {marker} before and after")


def _c9_reply(ev: dict[str, Any]) -> Result:
    """C9 where replies carry no identity marker: a reply before and after (a reset: the view)."""
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


# -- all ten --------------------------------------------------------------------------------------


def score(ev: dict[str, Any], *, threshold: float, check_manifest: ManifestCheck) -> list[Result]:
    """The ten results for one disruption's evidence, in order C0..C9, as its target reads them.

    A disruption the target cannot perform (``outcome.unsupported``) proves nothing either
    way: all ten are ``skip`` with the reason, never ``pass`` and never a false ``fail``. An
    invariant whose capability (:data:`NEEDS`) the target lacks is ``skip`` with the reason
    the target declares.
    """
    target = declared_for(ev)
    if ev["outcome"].get("unsupported"):
        why = f"not run: {ev['outcome'].get('detail')}"
        return [_r(cid, "skip", why) for cid in INVARIANTS]
    checks: dict[str, Callable[[], Result]] = {
        "C0": lambda: _c0(ev, target),
        "C1": lambda: _c1(ev),
        "C2": lambda: _c2(ev, target, threshold),
        "C3": lambda: _c3(ev, target),
        "C4": lambda: _c4(ev),
        "C5": lambda: _c5(ev),
        "C6": lambda: _c6(ev),
        "C7": lambda: _c7(ev, check_manifest),
        "C8": lambda: _c8(ev, target),
        "C9": lambda: _c9(ev, target),
    }
    out = []
    for cid, check in checks.items():
        need = NEEDS.get(cid)
        out.append(check() if need is None or need in target else _r(cid, "skip", target.lacks[need]))
    return out
