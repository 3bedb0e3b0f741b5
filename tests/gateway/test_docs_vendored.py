"""Swagger UI as vendored into the package: the files match their manifest (version, SHA-256,
size), the pin agrees with ``make vendor-swagger``, the licence files travel with the code, the
wheel and sdist include them, and the check itself catches every kind of drift."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tomllib
from pathlib import Path

from kurahi.gateway.static_files import PackagedFiles
from kurahi.gateway.vendored import MANIFEST_NAME, check_vendored, read_manifest

ROOT = Path(__file__).resolve().parents[2]
SWAGGER = ROOT / "src" / "kurahi" / "gateway" / "static" / "swagger"


def test_the_vendored_files_match_their_manifest() -> None:
    assert check_vendored() == []
    manifest = read_manifest()
    assert manifest.package == "swagger-ui-dist" and manifest.license == "Apache-2.0"
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest.version)
    assert manifest.tarball == (f"https://registry.npmjs.org/swagger-ui-dist/-/swagger-ui-dist-{manifest.version}.tgz")
    assert re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", manifest.integrity)
    assert {"swagger-ui-bundle.js", "swagger-ui.css", "LICENSE", "NOTICE"} <= set(manifest.files)
    for name, want in manifest.files.items():  # recomputed here too, not only by the code under test
        data = (SWAGGER / name).read_bytes()
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (want.sha256, want.size), name
    assert "Apache License" in (SWAGGER / "LICENSE").read_text()
    assert "swagger-ui" in (SWAGGER / "NOTICE").read_text()


def test_the_makefile_pins_the_version_the_manifest_records() -> None:
    makefile = (ROOT / "Makefile").read_text()
    pinned = re.search(r"^SWAGGER_UI_VERSION := (\S+)$", makefile, flags=re.M)
    assert pinned is not None and pinned.group(1) == read_manifest().version
    assert re.search(r"^vendor-swagger: ", makefile, flags=re.M)
    assert "tools/vendor_swagger.py $(SWAGGER_UI_VERSION)" in makefile


def test_every_vendored_file_goes_into_the_wheel_and_the_sdist() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "static/swagger/*" in data["kurahi.gateway"]
    assert "recursive-include src/kurahi/gateway/static/swagger *" in (ROOT / "MANIFEST.in").read_text()
    served = PackagedFiles("kurahi.gateway").files
    for name in read_manifest().files:
        assert f"swagger/{name}" in served, name  # each is served, licences included
    assert f"swagger/{MANIFEST_NAME}" not in served


def test_the_check_names_every_kind_of_drift(tmp_path: Path) -> None:
    copy = tmp_path / "swagger"
    shutil.copytree(SWAGGER, copy)
    assert check_vendored(copy) == []
    css = copy / "swagger-ui.css"
    css.write_bytes(css.read_bytes().replace(b"#49cc90", b"#49cc91", 1))  # same size, other bytes
    (copy / "NOTICE").unlink()
    (copy / "swagger-ui-standalone-preset.js").write_text("// left over\n")
    bundle = copy / "swagger-ui-bundle.js"
    bundle.write_bytes(bundle.read_bytes()[:-10])
    problems = check_vendored(copy)
    assert any(p.startswith("swagger-ui.css: sha256 ") for p in problems), problems
    assert "NOTICE: listed in vendor.json but missing" in problems
    assert "swagger-ui-standalone-preset.js: in the folder but not in vendor.json" in problems
    size = read_manifest(copy).files["swagger-ui-bundle.js"].size
    assert f"swagger-ui-bundle.js: {size - 10} bytes, expected {size}" in problems
    assert len(problems) == 5, problems  # the truncated bundle: its size and its hash

    manifest = json.loads((copy / MANIFEST_NAME).read_text())
    manifest["version"] = "^5.35.0"
    (copy / MANIFEST_NAME).write_text(json.dumps(manifest))
    problems = check_vendored(copy)
    assert any("is not an exact MAJOR.MINOR.PATCH" in p for p in problems), problems
    assert any("tarball" in p and "is not version ^5.35.0" in p for p in problems), problems

    (copy / MANIFEST_NAME).write_text('{"package": "swagger-ui-dist"}')
    (problem,) = check_vendored(copy)
    assert problem.startswith("vendor.json: cannot be used: ") and "version" in problem
    (copy / MANIFEST_NAME).unlink()
    (problem,) = check_vendored(copy)
    assert problem.startswith("vendor.json: cannot be used: ")
