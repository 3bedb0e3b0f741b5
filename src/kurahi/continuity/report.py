"""Reports: ``continuity-report.json`` (the evidence), ``continuity-report.md`` and the badge.

The JSON report is written as canonical JSON (RFC 8785), so any edit to its bytes either
breaks the JSON, changes its canonical form, or changes its content; ``verify`` catches all
three. Its ``body`` holds, per disruption, the manifests, probes, outcome, leak scan and
invariant results; ``digest`` is the SHA-256 of the body's canonical bytes, ``signature``
the Ed25519 signature of the digest by the resident's continuity key (the key that signs
its manifests), ``publicKey`` that key.

:func:`verify_report` recomputes every manifest (entry hashes, roots, signatures), re-scores
every run from its stored evidence, recomputes the summary and the badge, checks the digest
and the signature, and names the first mismatch.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kurahi.continuity.invariants import INVARIANTS, ManifestCheck, score
from kurahi.continuity.rounds import rounds_summary, score_round
from kurahi.errors import CanonicalJSONError, ContinuityError
from kurahi.fs.os_errors import os_errors
from kurahi.js.jcs import canonical_json

__all__ = [
    "SUITE",
    "VERSION",
    "ReportCheck",
    "badge_line",
    "finish_report",
    "markdown",
    "parse_report",
    "read_report",
    "summarize",
    "verify_report",
    "write_report",
]

SUITE = "kurahi-continuity"
VERSION = 1

Signer = Callable[[bytes], tuple[str, str]]
"""Signs 32 bytes; returns ``(signature base64, raw public key base64)``."""


def summarize(runs: list[dict[str, Any]], interrupted: Any = None, rounds: Any = None) -> dict[str, Any]:
    """Counts over every run's invariants (and the rounds, when run), and the verdict.

    PASS only when nothing failed, every round stayed unmarked, and something passed;
    INCOMPLETE when the run was interrupted before its end (``interrupted`` says where and
    why), whatever the runs before it found.
    """
    counts: dict[str, Any] = {"pass": 0, "fail": 0, "skip": 0}
    for run in runs:
        for r in run["invariants"]:
            counts[r["status"]] += 1
    passed = counts["fail"] == 0 and counts["pass"] > 0
    if rounds is not None:
        counts["rounds"] = rounds_summary(rounds)
        unmarked = counts["rounds"]["unmarked"] == counts["rounds"]["rounds"] > 0
        passed = counts["fail"] == 0 and unmarked
    verdict = "INCOMPLETE" if interrupted else "PASS" if passed else "FAIL"
    return {**counts, "verdict": verdict}


def badge_line(body: dict[str, Any]) -> str:
    """The one-line badge of the seed's form."""
    s = body["summary"]
    roots = " ".join(
        f"{run['before']['manifest'].get('root', '')[:8]}>{run['after']['manifest'].get('root', '')[:8]}"
        for run in body["runs"]
    )
    disruptions = ",".join(run["disruption"] for run in body["runs"]) or "none"
    rounds = f" | rounds={s['rounds']['unmarked']}/{s['rounds']['rounds']} unmarked" if "rounds" in s else ""
    return (
        f"continuity {s['verdict']} | resident={body['resident']} | {disruptions} | "
        f"pass={s['pass']} fail={s['fail']} skip={s['skip']}{rounds} | {roots} | {body['createdAt']}"
    )


def finish_report(body: dict[str, Any], signer: Signer) -> dict[str, Any]:
    """Add the summary, the badge, the digest and the signature to a report body."""
    body = dict(body)
    body["summary"] = summarize(body["runs"], body.get("interrupted"), body.get("rounds"))
    body["badge"] = badge_line(body)
    digest = hashlib.sha256(canonical_json(body)).hexdigest()
    signature, public_key = signer(bytes.fromhex(digest))
    return {"body": body, "digest": digest, "signature": signature, "publicKey": public_key}


def write_report(report: dict[str, Any], out: Path) -> dict[str, Path]:
    """Write the JSON report (canonical bytes), the Markdown report and the badge into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": out / "continuity-report.json",
        "md": out / "continuity-report.md",
        "badge": out / "continuity-badge.txt",
    }
    paths["json"].write_bytes(canonical_json(report) + b"\n")
    paths["md"].write_text(markdown(report))
    paths["badge"].write_text(report["body"]["badge"] + "\n")
    return paths


def read_report(path: Path) -> dict[str, Any]:
    """Read a report file, refusing anything that is not a whole canonical report.

    Raises:
        ContinuityError: unreadable, not JSON, not canonical, or not this suite's version.
    """
    with os_errors(ContinuityError, "cannot read", path=path):
        data = path.read_bytes()
    return parse_report(data, str(path))


def parse_report(data: bytes, where: str) -> dict[str, Any]:
    """A report from its bytes (``where`` names it in messages); see :func:`read_report`.

    Raises:
        ContinuityError: not JSON, not canonical, or not this suite's version.
    """
    try:
        report = json.loads(data)
    except ValueError as exc:
        raise ContinuityError(f"{where}: not JSON (truncated or edited?): {exc}") from exc
    except RecursionError as exc:
        raise ContinuityError(f"{where}: not usable JSON: nested too deeply") from exc
    if not isinstance(report, dict) or not isinstance(report.get("body"), dict):
        raise ContinuityError(f"{where}: not a continuity report")
    body = report["body"]
    if body.get("suite") != SUITE or body.get("version") != VERSION:
        raise ContinuityError(
            f"{where}: a report of suite {body.get('suite')!r} version {body.get('version')!r}; "
            f"this is {SUITE} version {VERSION}"
        )
    if data.rstrip(b"\n") != canonical_json(report):
        raise ContinuityError(f"{where}: not in canonical form (the file was edited)")
    return report


class ReportCheck:
    """What :func:`verify_report` found."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.checked: list[str] = []

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "ok": self.ok,
            "firstMismatch": self.problems[0] if self.problems else None,
            "problems": self.problems,
            "checked": self.checked,
        }


def _verify_sig(public_b64: str, signature_b64: str, message: bytes) -> bool:
    from kurahi.continuity.signing import verify_signature

    try:
        public, signature = base64.b64decode(public_b64, validate=True), base64.b64decode(signature_b64, validate=True)
    except ValueError:
        return False
    return verify_signature(public, signature, message)


def _verify_run(
    run: dict[str, Any],
    where: str,
    threshold: float,
    check_manifest: ManifestCheck,
    report: dict[str, Any],
    result: ReportCheck,
) -> None:
    where = f"{where} ({run.get('disruption')})"
    for side in ("before", "after"):
        ok, why = check_manifest(run[side]["manifest"])
        if not ok:
            result.problems.append(f"{where}.{side}.manifest: {why}")
    rescored = score(run, threshold=threshold, check_manifest=check_manifest)
    stored = run.get("invariants", [])
    for got, kept in zip(rescored, stored, strict=False):
        if got != kept:
            result.problems.append(
                f"{where}.invariants.{kept.get('id')}: stored {kept.get('status')!r} "
                f"({kept.get('detail')}), recomputed {got['status']!r} ({got['detail']})"
            )
    if len(rescored) != len(stored):
        result.problems.append(f"{where}.invariants: {len(stored)} stored, {len(INVARIANTS)} expected")
    if run["after"]["manifest"].get("publicKey") != report.get("publicKey"):
        result.problems.append(f"{where}: the manifests' signer is not the report's signer")


def verify_report(report: dict[str, Any], *, check_manifest: ManifestCheck) -> ReportCheck:
    """Recompute everything in a report (see the module docstring)."""
    result = ReportCheck()
    body = report["body"]
    try:
        threshold = float(body.get("threshold", 0.8))
    except (TypeError, ValueError):
        result.problems.append("threshold: not a number")
        threshold = 0.8
    runs = body.get("runs")
    if not isinstance(runs, list):
        result.problems.append("runs: missing or not a list")
        runs = []
    for i, run in enumerate(runs):
        where = f"runs[{i}]"
        try:
            _verify_run(run, where, threshold, check_manifest, report, result)
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
            result.problems.append(f"{where}: malformed evidence ({type(exc).__name__}: {exc})")
    result.checked.append("manifests and invariants")
    try:
        for i, ev in enumerate(body.get("rounds") or []):
            if score_round(ev) != ev.get("verdict"):
                result.problems.append(f"rounds[{i}].verdict: stored {ev.get('verdict')}, recomputed {score_round(ev)}")
        summary = summarize(runs, body.get("interrupted"), body.get("rounds"))
        if summary != body.get("summary"):
            result.problems.append(f"summary: stored {body.get('summary')}, recomputed {summary}")
        if badge_line(body) != body.get("badge"):
            result.problems.append("badge: does not match the body")
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        result.problems.append(f"summary/badge: malformed ({type(exc).__name__}: {exc})")
    try:
        digest = hashlib.sha256(canonical_json(body)).hexdigest()
    except CanonicalJSONError as exc:
        result.problems.append(f"body: has no canonical form ({exc})")
        return result
    if digest != report.get("digest"):
        result.problems.append("digest: the body does not hash to the stored digest")
    elif not _verify_sig(str(report.get("publicKey")), str(report.get("signature")), bytes.fromhex(digest)):
        result.problems.append("signature: does not verify with the report's public key")
    result.checked.append("summary, badge, digest and signature")
    return result


def _view_lines(view: dict[str, Any]) -> list[str]:
    """The runtime's view of the reset session before, after the reset and after the repair."""
    markers = list(view.get("markers") or [])
    head = "| view | session | messages sent | " + " | ".join(f"`{m}`" for m in markers) + " |"
    lines = [head, "|---|---|---|" + "---|" * len(markers)]
    for name in ("before", "reset", "repaired"):
        v = view.get(name)
        if not isinstance(v, dict):
            continue
        marks = " | ".join("in view" if v.get("markers", {}).get(m) else "gone" for m in markers)
        lines.append(f"| {name} | {v.get('sessionId')} | {v.get('messages')} | {marks} |")
    if view.get("repairSkipped"):
        lines.append(f"\nRepair skipped: {view['repairSkipped']}.")
    return [*lines, ""]


def markdown(report: dict[str, Any]) -> str:
    """The report for people."""
    body = report["body"]
    s = body["summary"]
    target = body.get("target")
    on = f"OpenClaw {target.get('version')}, {target.get('era')} era, " if isinstance(target, dict) else ""
    lines = [
        f"# Continuity report: {body['resident']}",
        "",
        f"**{s['verdict']}**: pass={s['pass']} fail={s['fail']} skip={s['skip']} "
        f"({on}{body['mode']} mode, {body['createdAt']})",
        "",
        f"`{body['badge']}`",
        "",
        f"Signer fingerprint `{body.get('fingerprint', '')}`; report digest `{report['digest']}`.",
        "Verify it with `kurahi continuity verify continuity-report.json`.",
        "",
    ]
    if body.get("interrupted"):
        cut = body["interrupted"]
        lines += [
            f"**Interrupted** during {cut.get('disruption')}: {cut.get('reason')}. "
            "The runs below are the ones that finished; the report is signed as it stands.",
            "",
        ]
    for run in body["runs"]:
        roots = f"{run['before']['manifest'].get('root', '')[:16]} → {run['after']['manifest'].get('root', '')[:16]}"
        lines += [
            f"## {run['disruption']}",
            "",
            f"Outcome: {run['outcome'].get('detail')}. Manifest roots {roots}.",
            "",
        ]
        if run.get("view"):
            lines += _view_lines(run["view"])
        lines += [
            "| invariant | | status | detail |",
            "|---|---|---|---|",
        ]
        for r in run["invariants"]:
            lines.append(f"| {r['id']} | {r['name']} | {r['status']} | {r['detail']} |")
        lines.append("")
    if body.get("rounds") is not None:
        lines += [
            "## Rounds: continuity-preserving rollovers with compactions in between",
            "",
            "| round | turns | compactions | tokens before → after (threshold) | markers in view / in lineage | |",
            "|---|---|---|---|---|---|",
        ]
        for ev in body["rounds"]:
            view = sum(1 for m in ev["markers"] if m["inView"])
            lineage = sum(1 for m in ev["markers"] if m["inLineage"])
            n = len(ev["markers"])
            lines.append(
                f"| {ev['round']} | {ev['turns']} | {ev['compactions']} | {ev['tokensBefore']} → "
                f"{ev['tokensAfter']} ({ev['threshold']}) | {view}/{n} · {lineage}/{n} | "
                f"{'unmarked' if ev['verdict']['ok'] else 'MARKED: ' + ev['verdict']['detail']} |"
            )
        lines.append("")
    lines += [
        "## What is not proven",
        "",
        "Model quality and semantic recall are out of scope (recall is a deterministic keyword search); "
        "answers are checked with the deterministic provider only; an interrupted job does not resume; "
        "channels are not exercised; the signature proves who attested, not that the files were correct; "
        "secrets are checked by pattern.",
        "",
    ]
    return "\n".join(lines)
