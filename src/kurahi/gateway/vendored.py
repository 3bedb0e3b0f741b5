"""Third-party files shipped inside the package, pinned by a manifest of their version and hashes.

Swagger UI (the page at ``/docs``) is the npm package ``swagger-ui-dist``, copied into
``static/swagger/`` by ``make vendor-swagger`` (``tools/vendor_swagger.py``) and never fetched at
run time. ``static/swagger/vendor.json`` names the package, its exact version, the registry's
address and integrity hash of the tarball the files came from, and the SHA-256 and size of every
file taken from it. :func:`check_vendored` re-derives all of that from the files themselves, so a
file edited by hand, truncated, missing, or left over from another version is caught.
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Final

import msgspec

__all__ = ["MANIFEST_NAME", "VendorManifest", "VendoredFile", "check_vendored", "read_manifest", "swagger_folder"]

MANIFEST_NAME: Final = "vendor.json"
"""The manifest's file name, inside the folder it describes."""

_EXACT_VERSION = re.compile(r"\d+\.\d+\.\d+")


class VendoredFile(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """One file copied out of the package's tarball, unchanged."""

    sha256: str
    """Lowercase hex SHA-256 of the file's bytes."""
    size: int
    """Its length in bytes."""


class VendorManifest(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """What was vendored, from where, and the digest of every file kept."""

    package: str
    """The npm package (``swagger-ui-dist``)."""
    version: str
    """Its exact version (``MAJOR.MINOR.PATCH``; never a range)."""
    tarball: str
    """The registry address of the tarball the files were copied from."""
    integrity: str
    """The registry's Subresource-Integrity hash of that tarball (``sha512-…``), as npm checked it."""
    license: str
    """The package's licence (SPDX); its ``LICENSE`` and ``NOTICE`` files are among :attr:`files`."""
    files: dict[str, VendoredFile]
    """File name (relative to the manifest's folder) to its digest."""


def swagger_folder() -> Traversable:
    """The folder of the package holding Swagger UI and its manifest."""
    return resources.files("kurahi.gateway").joinpath("static", "swagger")


def read_manifest(folder: Traversable | None = None) -> VendorManifest:
    """The manifest of ``folder`` (default: :func:`swagger_folder`).

    Raises:
        msgspec.ValidationError: the manifest does not have the manifest's shape.
        msgspec.DecodeError: it is not JSON.
        FileNotFoundError: there is none.
    """
    where = swagger_folder() if folder is None else folder
    return msgspec.json.decode(where.joinpath(MANIFEST_NAME).read_bytes(), type=VendorManifest)


def check_vendored(folder: Traversable | None = None) -> list[str]:
    """Every way the files of ``folder`` differ from its manifest; empty when they match it exactly.

    Checks that the version is exact, that each listed file exists with the recorded size and
    SHA-256, and that the folder holds no file the manifest does not list.
    """
    where = swagger_folder() if folder is None else folder
    try:
        manifest = read_manifest(where)
    except (OSError, msgspec.MsgspecError) as exc:
        return [f"{MANIFEST_NAME}: cannot be used: {exc}"]
    problems: list[str] = []
    if not _EXACT_VERSION.fullmatch(manifest.version):
        problems.append(f"{MANIFEST_NAME}: version {manifest.version!r} is not an exact MAJOR.MINOR.PATCH")
    if f"-{manifest.version}.tgz" not in manifest.tarball:
        problems.append(f"{MANIFEST_NAME}: tarball {manifest.tarball!r} is not version {manifest.version}")
    present = {item.name for item in where.iterdir() if item.is_file()} - {MANIFEST_NAME}
    for name in sorted(present - set(manifest.files)):
        problems.append(f"{name}: in the folder but not in {MANIFEST_NAME}")
    for name, want in sorted(manifest.files.items()):
        if name not in present:
            problems.append(f"{name}: listed in {MANIFEST_NAME} but missing")
            continue
        data = where.joinpath(name).read_bytes()
        if len(data) != want.size:
            problems.append(f"{name}: {len(data)} bytes, expected {want.size}")
        digest = hashlib.sha256(data).hexdigest()
        if digest != want.sha256:
            problems.append(f"{name}: sha256 {digest}, expected {want.sha256}")
    return problems
