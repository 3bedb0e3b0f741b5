"""Re-fetch Swagger UI from the npm registry into the package: ``make vendor-swagger``.

Usage: ``python tools/vendor_swagger.py VERSION`` (an exact version; the Makefile pins it).

``npm pack`` downloads ``swagger-ui-dist@VERSION`` into a temporary folder (npm checks it
against the registry's integrity hash, and so does this script), and only the files the page at
``/docs`` needs, with the package's licence files, are copied into
``src/kurahi/gateway/static/swagger/``, replacing what was there. ``vendor.json`` records the
version, the tarball's address and integrity, and each file's SHA-256 and size;
``tests/gateway/test_docs_vendored.py`` checks the files against it. Nothing else is run: no
install scripts, no dependencies.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import msgspec

from kurahi.gateway.vendored import MANIFEST_NAME, VendoredFile, VendorManifest, check_vendored

PACKAGE = "swagger-ui-dist"
KEEP = (
    "swagger-ui-bundle.js",  # Swagger UI with React and its other dependencies, one classic script
    "swagger-ui.css",
    "favicon-32x32.png",
    "LICENSE",  # Apache-2.0
    "NOTICE",  # Apache-2.0 section 4(d): shipped with the files
    "swagger-ui-bundle.js.LICENSE.txt",  # the licences of what the bundle contains
)
"""What /docs loads, and the licences that must travel with it. The standalone preset (a top bar
to load any URL's schema) and the source maps are left out."""

TARGET = Path(__file__).resolve().parents[1] / "src" / "kurahi" / "gateway" / "static" / "swagger"


def npm(*args: str) -> str:
    """What ``npm ARGS`` prints; its error output as the exit message when it fails."""
    done = subprocess.run(["npm", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"npm {' '.join(args)} failed:\n{done.stderr.strip()}")
    return done.stdout


def main(argv: list[str]) -> int:
    """Fetch, check and copy ``swagger-ui-dist@argv[1]``; write the manifest; check it."""
    if len(argv) != 2 or not re.fullmatch(r"\d+\.\d+\.\d+", argv[1]):
        print("usage: vendor_swagger.py VERSION (exact, e.g. 5.35.0)", file=sys.stderr)
        return 2
    version = argv[1]
    spec = f"{PACKAGE}@{version}"
    dist = json.loads(npm("view", spec, "dist", "--json"))
    with tempfile.TemporaryDirectory() as tmp:
        packed = json.loads(npm("pack", spec, "--json", "--silent", "--pack-destination", tmp))[0]
        tgz = Path(tmp) / packed["filename"]
        sha512 = "sha512-" + base64.b64encode(hashlib.sha512(tgz.read_bytes()).digest()).decode()
        if not sha512 == packed["integrity"] == dist["integrity"]:
            raise SystemExit(f"{tgz.name}: integrity {sha512}, the registry says {dist['integrity']}")
        with tarfile.open(tgz) as tar:
            wanted = [tar.getmember(f"package/{name}") for name in (*KEEP, "package.json")]
            tar.extractall(tmp, members=wanted, filter="data")
        license_ = str(json.loads((Path(tmp) / "package" / "package.json").read_text())["license"])
        if TARGET.exists():
            shutil.rmtree(TARGET)
        TARGET.mkdir(parents=True)
        files: dict[str, VendoredFile] = {}
        for name in KEEP:
            data = (Path(tmp) / "package" / name).read_bytes()
            (TARGET / name).write_bytes(data)
            files[name] = VendoredFile(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    manifest = VendorManifest(
        package=PACKAGE,
        version=version,
        tarball=dist["tarball"],
        integrity=dist["integrity"],
        license=license_,
        files=files,
    )
    text = msgspec.json.format(msgspec.json.encode(manifest), indent=2)
    (TARGET / MANIFEST_NAME).write_bytes(text + b"\n")
    problems = check_vendored(TARGET)
    if problems:
        raise SystemExit("the vendored files do not match their manifest:\n" + "\n".join(problems))
    total = sum(f.size for f in files.values())
    print(f"{spec}: {len(files)} files, {total:,} bytes, into {TARGET.relative_to(TARGET.parents[4])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
