"""``kurahi doctor`` on real temporary homes, as a user runs it (a fresh process each time)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "openclaw"
KURAHI = [sys.executable, "-m", "kurahi.cli"]
_LOCATION_VARS = (
    "KOLO_HOME",
    "KURAHI_HOME",
    "KOLO_GATEWAY_TOKEN",
    "KOLO_STORE",
    "KURAHI_NATIVE",
    "PI_CODING_AGENT_DIR",
    "PI_CODING_AGENT_SESSION_DIR",
    "OPENCLAW_STATE_DIR",
    "OPENCLAW_HOME",
    "CLAUDE_CONFIG_DIR",
)


def user_env(user_home: Path, **extra: str) -> dict[str, str]:
    """The environment of a user whose home directory is ``user_home`` and who set nothing else."""
    env = {k: v for k, v in os.environ.items() if k not in _LOCATION_VARS}
    env["HOME"] = str(user_home)
    env.update(extra)
    return env


def doctor(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    out = subprocess.run([*KURAHI, "doctor", "--json", *args], capture_output=True, text=True, env=env, timeout=60)
    assert out.stderr == "" or "Traceback" not in out.stderr, out.stderr
    return out.returncode, json.loads(out.stdout)


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["checks"]}


def kurahi(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KURAHI, *args], capture_output=True, text=True, env=env, timeout=60)


def test_a_new_user_with_nothing_yet(tmp_path: Path) -> None:
    code, report = doctor(user_env(tmp_path))
    checks = by_name(report)
    assert code == 0 and report["ok"] is True
    assert checks["version"]["facts"]["kurahi"]
    assert checks["home"]["status"] == "info"
    assert checks["home"]["facts"] == {"path": str(tmp_path / ".kolo"), "source": "default", "exists": False}
    assert checks["home"]["fix"] == f"kurahi init --home {tmp_path / '.kolo'}"
    assert checks["pi"]["facts"]["path"] == str(tmp_path / ".pi" / "agent" / "sessions")
    assert checks["openclaw"]["facts"]["path"] == str(tmp_path / ".openclaw")
    assert checks["pi"]["status"] == checks["openclaw"]["status"] == "info"
    assert checks["disk"]["status"] in ("ok", "warn") and checks["disk"]["facts"]["freeBytes"] > 0
    # The people's form says the same, with the hint.
    text = kurahi(user_env(tmp_path), "doctor")
    assert text.returncode == 0
    assert f"hint home: kurahi init --home {tmp_path / '.kolo'}" in text.stdout


def test_finds_and_counts_kurahi_pi_and_openclaw_state(tmp_path: Path) -> None:
    env = user_env(tmp_path)
    assert kurahi(env, "init", "--agent", "alice").returncode == 0  # the default home: ~/.kolo
    assert kurahi(env, "agent", "send", "--agent", "alice", "hello").returncode == 0
    pi = tmp_path / ".pi" / "agent" / "sessions"
    for project, n in (("--home-ava-one--", 2), ("--home-ava-two--", 1)):
        (pi / project).mkdir(parents=True)
        for i in range(n):
            (pi / project / f"2026-12-01T00-00-0{i}_{project}{i}.jsonl").write_text("{}\n")
    shutil.copytree(DATA / "2026.5.28-reset" / "state", tmp_path / ".openclaw")
    shutil.copytree(DATA / "2026.9.6-full" / "state" / "agents" / "main", tmp_path / ".openclaw" / "agents" / "ops")

    code, report = doctor(env)
    checks = by_name(report)
    assert code == 0, report
    assert checks["home"]["facts"] | {} == {
        "path": str(tmp_path / ".kolo"),
        "source": "default",
        "exists": True,
        "agents": 1,
        "sessions": 1,
        "readOnly": False,
    }
    assert checks["secrets"]["status"] == "ok"
    assert checks["gateway"]["facts"]["running"] is False
    assert (checks["pi"]["facts"]["sessions"], checks["pi"]["facts"]["projects"]) == (3, 2)
    oc = checks["openclaw"]["facts"]
    assert (oc["agents"], oc["sessions"], oc["sqliteStores"]) == (2, 1, 1)


def test_locations_follow_the_variables_the_programs_honour(tmp_path: Path) -> None:
    (tmp_path / "kh").mkdir()
    (tmp_path / "pi-agent" / "sessions" / "p").mkdir(parents=True)
    (tmp_path / "pi-agent" / "sessions" / "p" / "s.jsonl").write_text("{}\n")
    (tmp_path / "oc" / "agents" / "main").mkdir(parents=True)
    env = user_env(
        tmp_path / "nobody",
        KURAHI_HOME=str(tmp_path / "kh"),
        PI_CODING_AGENT_DIR=str(tmp_path / "pi-agent"),
        OPENCLAW_STATE_DIR=str(tmp_path / "oc"),
    )
    checks = by_name(doctor(env)[1])
    assert (checks["home"]["facts"]["path"], checks["home"]["facts"]["source"]) == (str(tmp_path / "kh"), "KURAHI_HOME")
    assert checks["pi"]["facts"]["source"] == "PI_CODING_AGENT_DIR" and checks["pi"]["facts"]["sessions"] == 1
    assert checks["openclaw"]["facts"]["source"] == "OPENCLAW_STATE_DIR" and checks["openclaw"]["facts"]["agents"] == 1
    env2 = user_env(tmp_path / "nobody", PI_CODING_AGENT_SESSION_DIR=str(tmp_path / "pi-agent" / "sessions" / "p"))
    assert by_name(doctor(env2)[1])["pi"]["facts"]["source"] == "PI_CODING_AGENT_SESSION_DIR"
    env3 = user_env(tmp_path / "nobody", KOLO_HOME=str(tmp_path / "kh"))
    assert by_name(doctor(env3)[1])["home"]["facts"]["source"] == "KOLO_HOME"


def test_a_home_named_but_missing_fails_with_kurahi_init(tmp_path: Path) -> None:
    code, report = doctor(user_env(tmp_path, KURAHI_HOME=str(tmp_path / "nope")))
    home = by_name(report)["home"]
    assert code == 1 and report["ok"] is False
    assert home["status"] == "fail" and home["fix"] == f"kurahi init --home {tmp_path / 'nope'}"


def test_two_variables_naming_two_homes_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    code, report = doctor(user_env(tmp_path, KURAHI_HOME=str(tmp_path / "a"), KOLO_HOME=str(tmp_path / "b")))
    home = by_name(report)["home"]
    assert code == 1 and home["status"] == "fail"
    assert "KURAHI_HOME" in home["summary"] and "KOLO_HOME" in home["summary"]


def test_secrets_open_to_others_fail_with_the_chmod(tmp_path: Path) -> None:
    env = user_env(tmp_path)
    home = tmp_path / ".kolo"
    assert kurahi(env, "init").returncode == 0
    token = home / "secrets" / "gateway.token"
    secret = token.read_text().strip()
    token.chmod(0o644)
    home.chmod(0o775)
    code, report = doctor(env)
    s = by_name(report)["secrets"]
    assert code == 1 and s["status"] == "fail"
    assert f"chmod 600 {token}" in s["fix"] and f"chmod go-w {home}" in s["fix"]
    assert "0644" in s["summary"]
    text = kurahi(env, "doctor")
    assert text.returncode == 1 and f"chmod 600 {token}" in text.stdout
    for out in (json.dumps(report), text.stdout, text.stderr):
        assert secret not in out  # modes are read, never the secret


def test_native_scanner_switched_off_is_a_warning_with_its_fix(tmp_path: Path) -> None:
    code, report = doctor(user_env(tmp_path, KURAHI_NATIVE="0"))
    native = by_name(report)["native"]
    assert code == 0
    assert native["status"] == "warn" and native["fix"] == "unset KURAHI_NATIVE"
    assert native["summary"].startswith("native scanner off")


def test_a_gateway_that_answers_and_one_that_does_not(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="the gateway extra is part of the dev install")
    env = user_env(tmp_path)
    home = tmp_path / ".kolo"
    assert kurahi(env, "init").returncode == 0
    from kurahi.resident.home import Home
    from support.gateways import start_gateway

    proc = start_gateway(Home(home))
    try:
        code, report = doctor(env)
        gw = by_name(report)["gateway"]
        assert code == 0 and gw["status"] == "ok"
        assert gw["facts"]["pid"] == proc.pid and gw["facts"]["answering"] is True
    finally:
        proc.terminate()
        proc.wait(30)
    # A live process holds the lock and names a port where nothing answers.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    lock = home / "run" / "gateway.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "port": dead_port, "startedAt": "now"}).encode())
        code, report = doctor(env)
    finally:
        os.close(fd)
    gw = by_name(report)["gateway"]
    assert code == 1 and gw["status"] == "fail" and gw["facts"]["answering"] is False
    assert "kurahi gateway stop" in gw["fix"]


def test_a_read_only_home_is_reported(tmp_path: Path) -> None:
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
        pytest.skip("needs unshare -rm (a mount namespace) to mount a read-only filesystem")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = (
        f"mount -t tmpfs tmpfs {mnt} && {' '.join(KURAHI)} init --home {mnt}/h >/dev/null && "
        f"mount -o remount,ro {mnt} && exec {' '.join(KURAHI)} doctor --json --home {mnt}/h"
    )
    out = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, env=user_env(tmp_path))
    home = by_name(json.loads(out.stdout))["home"]
    assert out.returncode == 1, out.stderr
    assert home["status"] == "fail" and home["facts"]["readOnly"] is True
    assert "read-only" in home["summary"] and "remount" in home["fix"]
