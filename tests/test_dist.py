"""``make dist``: the sdist and the manylinux wheel, each installed into a fresh venv and run.

Marked ``dist`` (about half a minute: two builds from the sdist and three venvs), so a fast
run can leave it out with ``-m 'not dist'``. Offline: Kurahi goes in with ``--no-deps``, and
its core dependencies are copied into the new venv from the test's own environment, file by
file as their ``RECORD`` lists them, so nothing is downloaded and nothing else comes along
(no fastapi, no SDKs: what the core install must work without). ``pip check`` then proves
the core's requirements are met by exactly that set.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from kurahi.gateway.vendored import MANIFEST_NAME, read_manifest

pytestmark = pytest.mark.dist

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "pi" / "branch_summary.jsonl"
NOT_CORE = ("fastapi", "uvicorn", "uvloop", "httptools", "httpx", "openai", "anthropic", "starlette", "psycopg")


def _name(n: str) -> str:
    return n.lower().replace("_", "-").replace(".", "-")


def core_closure() -> list[metadata.Distribution]:
    """Kurahi's core requirements and theirs, as installed here (no extras)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = [Requirement(r) for r in metadata.requires("kurahi") or []]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if _name(req.name) in seen:
            continue
        dist = metadata.distribution(req.name)
        seen[_name(req.name)] = dist
        todo.extend(Requirement(r) for r in dist.requires or [])
    return list(seen.values())


def copy_distribution(dist: metadata.Distribution, site: Path) -> None:
    """Put an installed distribution into another venv's site-packages, as pip had installed it."""
    base = Path(str(dist.locate_file("")))
    for f in dist.files or []:
        if f.parts[0] == "..":  # console scripts in bin/: the core needs none of them
            continue
        src = base / f
        if src.is_file():
            dest = site / f
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)


def fresh_venv(where: Path, *extra: str) -> Path:
    """A venv without pip (the test's pip installs into it) holding Kurahi's core dependencies."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    site = next(where.glob("lib/python*/site-packages"))
    for dist in core_closure():
        copy_distribution(dist, site)
    for name in extra:
        copy_distribution(metadata.distribution(name), site)
    return where / "bin" / "python"


def pip(python: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pip", "--python", str(python), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def run(venv: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOLO_", "KURAHI_", "PI_", "OPENCLAW_"))}
    env["HOME"] = str(home)
    return subprocess.run([str(venv / "bin" / "kurahi"), *args], capture_output=True, text=True, env=env, timeout=120)


def doctor(venv: Path, home: Path) -> dict[str, Any]:
    out = run(venv, "doctor", "--json", home=home)
    assert out.returncode == 0, out.stdout + out.stderr
    return {c["name"]: c for c in json.loads(out.stdout)["checks"]}


def assert_core_works(venv: Path, home: Path) -> None:
    python = venv / "bin" / "python"
    checked = pip(python, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for module in NOT_CORE:
        probe = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True)
        assert probe.returncode != 0, f"{module} came along with the core install"
    version = run(venv, "--version", home=home)
    assert version.returncode == 0 and version.stdout.startswith("kurahi "), version.stderr
    stats = run(venv, "session", "stats", str(FIXTURE), "--json", home=home)
    assert stats.returncode == 0, stats.stderr
    # A gateway command names the extra to install instead of a traceback.
    commands = (
        ["gateway", "run", "--home", str(home)],
        ["chat", "--home", str(home), "hi"],
        ["continuity", "run", "--throwaway", "--out", str(home / "out")],
    )
    for args in commands:
        gw = run(venv, *args, home=home)
        assert gw.returncode == 1 and "pip install 'kurahi[gateway]'" in gw.stderr, (args, gw.stderr)
        assert "Traceback" not in gw.stderr


@pytest.fixture(scope="module")
def dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(["make", "-s", "dist", f"DIST={out}"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_make_dist_builds_an_sdist_and_a_manylinux_wheel(dist_dir: Path) -> None:
    (wheel,) = dist_dir.glob("*.whl")
    (sdist,) = dist_dir.glob("*.tar.gz")
    assert "-manylinux_" in wheel.name and "linux_x86_64" not in wheel.name.replace("manylinux_", "")
    names = zipfile.ZipFile(wheel).namelist()
    assert "kurahi/py.typed" in names
    assert any(n.startswith("kurahi/pi/read/_native.") and n.endswith(".so") for n in names)
    assert any(n.endswith("licenses/LICENSE") for n in names)
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("dist-info/METADATA"))).decode()
    assert "Provides-Extra: gateway" in meta and "Provides-Extra: providers" in meta
    assert "Classifier: Typing :: Typed" in meta and "License-Expression: MIT" in meta
    core = [line for line in meta.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert core and all("<" in line for line in core), core  # every core dependency has an upper bound
    assert sdist.name == wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".tar.gz"


def test_the_wheel_and_the_sdist_carry_swagger_ui_byte_for_byte(dist_dir: Path) -> None:
    # /docs serves Swagger UI from the installed package: every vendored file must be in both, as
    # its manifest records it (about 0.5 MB compressed, 1.9 MB installed, in 5.35.0).
    manifest = read_manifest()
    (wheel,) = dist_dir.glob("*.whl")
    (sdist,) = dist_dir.glob("*.tar.gz")
    with zipfile.ZipFile(wheel) as z, tarfile.open(sdist) as t:
        prefix = sdist.name.removesuffix(".tar.gz") + "/src/"
        for name in (*manifest.files, MANIFEST_NAME, "../docs.html", "../docs.js", "../docs.css"):
            member = os.path.normpath(f"kurahi/gateway/static/swagger/{name}")
            in_wheel = z.read(member)
            extracted = t.extractfile(prefix + member)
            assert extracted is not None and extracted.read() == in_wheel, member
            if name in manifest.files:
                assert hashlib.sha256(in_wheel).hexdigest() == manifest.files[name].sha256, member


def test_the_wheel_in_a_fresh_venv_has_the_native_scanner_and_no_gateway(dist_dir: Path, tmp_path: Path) -> None:
    (wheel,) = dist_dir.glob("*.whl")
    python = fresh_venv(tmp_path / "v")
    done = pip(python, "install", "--no-deps", "--no-index", str(wheel))
    assert done.returncode == 0, done.stderr
    assert_core_works(tmp_path / "v", tmp_path)
    checks = doctor(tmp_path / "v", tmp_path)
    assert checks["native"]["status"] == "ok" and checks["native"]["facts"]["on"] is True
    assert checks["extras"]["facts"]["installed"]["gateway"] is False
    assert checks["extras"]["facts"]["installed"]["providers"] is False


def test_the_sdist_builds_the_scanner_and_without_a_compiler_says_so_once(dist_dir: Path, tmp_path: Path) -> None:
    (sdist,) = dist_dir.glob("*.tar.gz")
    # --no-build-isolation: the build uses the venv's own setuptools (copied in), so no download.
    python = fresh_venv(tmp_path / "v", "setuptools")
    done = pip(python, "install", "--no-deps", "--no-index", "--no-build-isolation", str(sdist))
    assert done.returncode == 0, done.stderr
    assert_core_works(tmp_path / "v", tmp_path)
    assert doctor(tmp_path / "v", tmp_path)["native"]["facts"]["on"] is True

    python = fresh_venv(tmp_path / "nocc", "setuptools")
    env = {**os.environ, "CC": str(tmp_path / "no-such-compiler")}
    done = pip(python, "install", "-v", "--no-deps", "--no-index", "--no-build-isolation", str(sdist), env=env)
    assert done.returncode == 0, done.stderr
    log = done.stdout + done.stderr
    assert log.count("WARNING: kurahi's C line scanner was not built") == 1, log[-3000:]
    assert "apt-get install gcc python3-dev" in log
    assert_core_works(tmp_path / "nocc", tmp_path)
    native = doctor(tmp_path / "nocc", tmp_path)["native"]
    assert native["status"] == "warn" and native["summary"].startswith("native scanner off")
    assert native["facts"]["built"] is False and "C compiler" in native["fix"]
