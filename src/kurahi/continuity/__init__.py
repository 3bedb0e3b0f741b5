"""The `continuity` room: manifests, Ed25519 signing, probes, disruptions, invariants, reports, verify, badge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kurahi._lazy import lazy_getattr

if TYPE_CHECKING:
    from kurahi.continuity.api import install
    from kurahi.continuity.hashcache import FileDigest, HashCache
    from kurahi.continuity.invariants import INVARIANTS, score
    from kurahi.continuity.manifest import (
        KINDS,
        MANIFEST_VERSION,
        ManifestCheck,
        ModelRef,
        build_manifest,
        verify_manifest,
    )
    from kurahi.continuity.report import ReportCheck, badge_line, read_report, verify_report, write_report
    from kurahi.continuity.signing import SigningKey, fingerprint_of, load_signing_key, verify_signature
    from kurahi.continuity.targets.kurahi import DISRUPTIONS, SuiteOptions, report_signer, run_suite

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "install": "kurahi.continuity.api",
    "FileDigest": "kurahi.continuity.hashcache",
    "HashCache": "kurahi.continuity.hashcache",
    "KINDS": "kurahi.continuity.manifest",
    "MANIFEST_VERSION": "kurahi.continuity.manifest",
    "ManifestCheck": "kurahi.continuity.manifest",
    "ModelRef": "kurahi.continuity.manifest",
    "build_manifest": "kurahi.continuity.manifest",
    "verify_manifest": "kurahi.continuity.manifest",
    "SigningKey": "kurahi.continuity.signing",
    "fingerprint_of": "kurahi.continuity.signing",
    "load_signing_key": "kurahi.continuity.signing",
    "verify_signature": "kurahi.continuity.signing",
    "INVARIANTS": "kurahi.continuity.invariants",
    "score": "kurahi.continuity.invariants",
    "ReportCheck": "kurahi.continuity.report",
    "badge_line": "kurahi.continuity.report",
    "read_report": "kurahi.continuity.report",
    "verify_report": "kurahi.continuity.report",
    "write_report": "kurahi.continuity.report",
    "DISRUPTIONS": "kurahi.continuity.targets.kurahi",
    "SuiteOptions": "kurahi.continuity.targets.kurahi",
    "report_signer": "kurahi.continuity.targets.kurahi",
    "run_suite": "kurahi.continuity.targets.kurahi",
}

__all__ = [
    "DISRUPTIONS",
    "INVARIANTS",
    "KINDS",
    "MANIFEST_VERSION",
    "FileDigest",
    "HashCache",
    "ManifestCheck",
    "ModelRef",
    "ReportCheck",
    "SigningKey",
    "SuiteOptions",
    "badge_line",
    "build_manifest",
    "fingerprint_of",
    "install",
    "load_signing_key",
    "read_report",
    "report_signer",
    "run_suite",
    "score",
    "verify_manifest",
    "verify_report",
    "verify_signature",
    "write_report",
]

__getattr__ = lazy_getattr(__name__, _WHERE)
