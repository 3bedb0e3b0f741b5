"""Continuity reports for the viewer: the latest per resident, each verified here, not trusted.

Reports live in the home as ``reports/<name>/continuity-report.json`` (what
``kurahi continuity run --out $KOLO_HOME/reports/<name>`` writes). Each is read without
following a symlink (:mod:`kurahi.ui.homefiles`), parsed as ``continuity verify`` parses it
(canonical JSON of this suite's version) and re-verified with
:func:`kurahi.continuity.report.verify_report`: every manifest, score, the summary, the
badge, the digest and the signature. A report that does not verify, or cannot be read, is
``UNVERIFIED`` and its verdict is shown as failing, whatever it claims.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kurahi.continuity.manifest import verify_manifest
from kurahi.continuity.report import parse_report, verify_report
from kurahi.errors import KurahiError
from kurahi.ui.homefiles import list_folders, read_file

__all__ = ["REPORT_FILE", "list_reports", "load_report"]

REPORT_FILE = "continuity-report.json"
MAX_REPORT = 64 * 1024 * 1024
"""Largest report file read (bytes)."""


def _check_manifest(manifest: dict[str, Any]) -> tuple[bool, str]:
    try:
        result = verify_manifest(manifest)
    except KurahiError as exc:
        return False, str(exc)
    return bool(result.ok), str(result.reason or "verifies")


def load_report(home: Path, name: str) -> dict[str, Any]:
    """One report, verified: ``{name, verified, problems, resident, createdAt, verdict, ...}``.

    Raises:
        FileNotFoundError: no report of that name.
    """
    root = home / "reports"
    if name not in list_folders(root):
        raise FileNotFoundError(name)
    out: dict[str, Any] = {"name": name}
    try:
        data = read_file(root, name, REPORT_FILE, limit=MAX_REPORT)
        report = parse_report(data, f"reports/{name}/{REPORT_FILE}")
    except (KurahiError, FileNotFoundError) as exc:
        what = f"reports/{name}/{REPORT_FILE}: no such file" if isinstance(exc, FileNotFoundError) else str(exc)
        return {**out, "verified": False, "problems": [what], "verdict": "FAIL", "unreadable": True}
    check = verify_report(report, check_manifest=_check_manifest)
    body = report["body"]
    runs = body.get("runs") if isinstance(body.get("runs"), list) else []
    out.update(
        {
            "verified": check.ok,
            "problems": check.problems,
            "checked": check.checked,
            "resident": body.get("resident"),
            "createdAt": body.get("createdAt"),
            "claimedVerdict": (body.get("summary") or {}).get("verdict"),
            "verdict": (body.get("summary") or {}).get("verdict") if check.ok else "FAIL",
            "summary": body.get("summary"),
            "badge": str(body.get("badge", "")) + ("" if check.ok else " UNVERIFIED"),
            "digest": report.get("digest"),
            "runs": [_run(r) for r in runs if isinstance(r, dict)],
        }
    )
    return out


def _root(side: Any) -> dict[str, Any]:
    m = side.get("manifest") if isinstance(side, dict) else None
    m = m if isinstance(m, dict) else {}
    return {"root": m.get("root"), "fingerprint": m.get("fingerprint"), "createdAt": m.get("createdAt")}


def _run(run: dict[str, Any]) -> dict[str, Any]:
    found = run.get("invariants")
    invariants: list[Any] = found if isinstance(found, list) else []
    return {
        "disruption": run.get("disruption"),
        "outcome": run.get("outcome"),
        "before": _root(run.get("before")),
        "after": _root(run.get("after")),
        "invariants": [
            {"id": i.get("id"), "name": i.get("name"), "status": i.get("status"), "detail": i.get("detail")}
            for i in invariants
            if isinstance(i, dict)
        ],
    }


def list_reports(home: Path) -> dict[str, Any]:
    """Every report (name, resident, time, verdict, verified) and the latest per resident."""
    rows = []
    for name in list_folders(home / "reports"):
        r = load_report(home, name)
        rows.append({k: r.get(k) for k in ("name", "resident", "createdAt", "verdict", "verified", "badge")})
    latest: dict[str, dict[str, Any]] = {}
    for row in rows:
        who = row.get("resident")
        key = who if isinstance(who, str) else "(unreadable)"
        have = latest.get(key)
        if have is None or str(row.get("createdAt") or "") >= str(have.get("createdAt") or ""):
            latest[key] = row
    return {"reports": rows, "latest": [latest[k] for k in sorted(latest)]}
