"""The `continuity` room: manifests, Ed25519 signing, probes, disruptions, invariants, reports, verify, badge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kurahi._lazy import lazy_getattr

if TYPE_CHECKING:
    from kurahi.continuity.api import install
    from kurahi.continuity.hashcache import FileDigest, HashCache
    from kurahi.continuity.manifest import (
        KINDS,
        MANIFEST_VERSION,
        ManifestCheck,
        ModelRef,
        build_manifest,
        verify_manifest,
    )
    from kurahi.continuity.signing import SigningKey, fingerprint_of, load_signing_key, verify_signature

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
}

__all__ = [
    "KINDS",
    "MANIFEST_VERSION",
    "FileDigest",
    "HashCache",
    "ManifestCheck",
    "ModelRef",
    "SigningKey",
    "build_manifest",
    "fingerprint_of",
    "install",
    "load_signing_key",
    "verify_manifest",
    "verify_signature",
]

__getattr__ = lazy_getattr(__name__, _WHERE)
