"""Invariants C0–C9, scored from stored evidence alone.

:func:`score` is a pure function of one disruption's evidence (as it sits in the report),
so ``kurahi continuity verify`` re-scores a report without the gateway and must get the
same results. Each invariant is ``pass``, ``fail`` or ``skip``; ``skip`` only when the input
needed to decide is missing, and the detail says which.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

__all__ = ["INVARIANTS", "Result", "score"]

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

ManifestCheck = Callable[[dict[str, Any]], tuple[bool, str]]


def _entries(manifest: dict[str, Any], kind: str) -> dict[str, Any]:
    return {e["name"]: e["value"] for e in manifest.get("entries", []) if e.get("kind") == kind}


def _r(cid: str, status: Status, detail: str) -> Result:
    return {"id": cid, "name": INVARIANTS[cid], "status": status, "detail": detail}


def _c0(ev: dict[str, Any]) -> Result:
    d, b, a = ev["disruption"], ev["before"], ev["after"]
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


def _model(v: Any) -> str:
    return f"{v.get('provider')}/{v.get('model')}" if isinstance(v, dict) else "none"


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


def _c2(ev: dict[str, Any], threshold: float) -> Result:
    ok, detail = _same("memory", ev)
    if not ok:
        return _r("C2", "fail", detail)
    recall = ev["after"]["probes"].get("recall")
    if recall is None:
        return _r("C2", "pass", f"{detail}; no facts given, so memory-file hashes only")
    found = sum(1 for p in recall if p.get("found"))
    rate = found / len(recall) if recall else 0.0
    status: Status = "pass" if recall and rate >= threshold else "fail"
    return _r("C2", status, f"{detail}; recall {found}/{len(recall)} (threshold {threshold:.0%})")


def _c3(ev: dict[str, Any]) -> Result:
    ok, detail = _same("role", ev)
    wrong = ev["after"].get("wrongTokenStatus")
    if not ok:
        return _r("C3", "fail", detail)
    if wrong != 401:
        return _r("C3", "fail", f"a wrong owner token got HTTP {wrong}, not 401")
    return _r("C3", "pass", f"{detail}; a wrong owner token is still rejected (401)")


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


def _c8(ev: dict[str, Any]) -> Result:
    b, a = ev["before"]["manifest"], ev["after"]["manifest"]
    sb, sa = _entries(b, "session"), _entries(a, "session")
    missing = sorted(set(sb) - set(sa))
    if missing:
        return _r("C8", "fail", f"session keys lost: {', '.join(missing)}")
    tb, ta = _entries(b, "transcript"), _entries(a, "transcript")
    driven = set(ev.get("drivenTranscripts") or [])
    lost = sorted(set(tb) - set(ta))
    if lost:
        return _r("C8", "fail", f"transcripts lost: {', '.join(lost)}")
    changed = sorted(n for n in tb if n not in driven and tb[n] != ta.get(n))
    if changed:
        return _r("C8", "fail", f"transcripts changed that the suite did not drive: {', '.join(changed)}")
    if ev["disruption"] == "close":
        old, new = ev["before"]["probeSessionId"], ev["after"]["probeSessionId"]
        if not old or old == new:
            return _r("C8", "fail", "the closed session did not get a new session id")
        if f"{old}.jsonl" not in ta:
            return _r("C8", "fail", f"the closed session's transcript {old}.jsonl is gone")
    return _r("C8", "pass", f"{len(sb)} sessions and {len(tb)} transcripts retained")


def _c9(ev: dict[str, Any]) -> Result:
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


def score(ev: dict[str, Any], *, threshold: float, check_manifest: ManifestCheck) -> list[Result]:
    """The ten results for one disruption's evidence, in order C0..C9.

    A disruption the target cannot perform (``outcome.unsupported``) proves nothing either
    way: all ten are ``skip`` with the reason, never ``pass`` and never a false ``fail``.
    """
    if ev["outcome"].get("unsupported"):
        why = f"not run: {ev['outcome'].get('detail')}"
        return [_r(cid, "skip", why) for cid in INVARIANTS]
    return [
        _c0(ev),
        _c1(ev),
        _c2(ev, threshold),
        _c3(ev),
        _c4(ev),
        _c5(ev),
        _c6(ev),
        _c7(ev, check_manifest),
        _c8(ev),
        _c9(ev),
    ]
