"""Security pass, secrets and sizes: private modes whatever the umask, loose files refused, limits.

A home built by processes running under ``umask 0`` must still be 0700 directories and 0600
secret files (``kurahi init``, a turn with tool calls, a paired device, the signing key, the
audit chain). An owner token, device registry or signing key open to other users, a symlinked
token, or a home or ``secrets/`` writable by others is refused by the gateway, ``init``, the
device commands and the clients with :class:`SecretFileError` naming the file and the fix,
and the mode is left as it was (never quietly ``chmod``-ed: the owner decides). A config,
catalog or transcript line over its limit is a clear error and is never overwritten.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kurahi.agent.config import MAX_CONFIG_BYTES
from kurahi.errors import CatalogCorruptError, ConfigError, SecretFileError, TranscriptReadError
from kurahi.gateway.client import owner_token
from kurahi.gateway.lock import gateway_info
from kurahi.gateway.service import Gateway
from kurahi.pi.read.scan import MAX_LINE_BYTES
from kurahi.pi.transcript import Transcript
from kurahi.resident.home import Home
from kurahi.resident.init import init_home
from kurahi.store.catalog import MAX_CATALOG_BYTES, Catalog
from support.gateways import ALL_SECRETS, KURAHI
from support.security import assert_refused, invoke, run_cli, tree


def _umask0(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KOLO_HOME": str(home)}
    env.pop("KOLO_GATEWAY_TOKEN", None)
    return subprocess.run([*args], capture_output=True, text=True, timeout=120, env=env, umask=0)


def test_a_home_made_under_umask_0_is_private(tmp_path: Path) -> None:
    root = tmp_path / "home"
    k = [*KURAHI]
    turn = '[[tool:write {"path": "d/e/f.md", "content": "x"}]] [[tool:memory_append {"text": "n", "file": "n.md"}]]'
    sign = (
        "from kurahi.continuity.signing import load_signing_key; from kurahi.store.audit.log_file import AuditChain; "
        f"load_signing_key({str(root)!r}); AuditChain({str(root / 'audit/chain.jsonl')!r}).append('cli', 'x', {{}})"
    )
    for args in (
        [*k, "init", "--home", str(root), "--agent", "alice"],
        [*k, "agent", "send", "--home", str(root), "--agent", "alice", turn],
        [*k, "devices", "pair", "--home", str(root), "--name", "phone", "--scopes", "read", "--json"],
        [sys.executable, "-c", sign],
    ):
        res = _umask0(*args, home=root)
        assert res.returncode == 0, res.stderr
        if "pair" in args:
            ALL_SECRETS.add(json.loads(res.stdout)["token"])  # the suite's leak scan looks for it too
    modes = {p.relative_to(root).as_posix(): stat.S_IMODE(p.lstat().st_mode) for p in root.rglob("*")}
    modes["."] = stat.S_IMODE(root.stat().st_mode)
    dirs = {p for p in modes if (root / p).is_dir()}
    assert {p: modes[p] for p in dirs if modes[p] != 0o700} == {}
    assert {"agents/alice/workspace/d/e", "agents/alice/workspace/memory"} <= dirs
    secret = ["secrets/gateway.token", "devices.json", "identity/continuity-signing.json", "config.json"]
    secret += ["audit/chain.jsonl", "agents/alice/sessions/sessions.json", "agents/alice/actions/ledger.jsonl"]
    secret += [p for p in modes if p.startswith("agents/alice/sessions/") and p.endswith(".jsonl")]
    assert {p: oct(modes[p]) for p in secret if modes[p] != 0o600} == {}
    assert {p: oct(m) for p, m in modes.items() if m & 0o022} == {}  # nothing anywhere writable by others


def _make(tmp_path: Path) -> Home:
    home = Home(tmp_path / "home")
    init_home(home.root, "alice", marker="ALICE-7F3A")
    from kurahi.continuity.signing import load_signing_key
    from kurahi.resident.devices import DeviceRegistry

    load_signing_key(home)
    ALL_SECRETS.add(DeviceRegistry(home.devices).pair("phone", "read")[1])
    return home


_MODES = {
    "token 0644": ("token_file", 0o644),
    "token 0640": ("token_file", 0o640),
    "token 0604": ("token_file", 0o604),
    "devices 0644": ("devices", 0o644),
    "devices 0660": ("devices", 0o660),
    "signing key 0640": ("signing_key", 0o640),
    "home 0777": ("root", 0o777),
    "home 0770": ("root", 0o770),
    "secrets/ 0733": ("secrets", 0o733),
}
"""Case -> (the ``Home`` attribute of the path, the careless mode it gets)."""

LOOSE = [*_MODES, "token a symlink"]


def _loosen(home: Home, what: str) -> Path:
    """Open one access file or directory to other users, as a careless copy or umask would."""
    if what == "token a symlink":
        real = home.root.parent / "elsewhere.token"
        os.replace(home.token_file, real)
        os.symlink(real, home.token_file)
        return home.token_file
    attr, mode = _MODES[what]
    path: Path = getattr(home, attr)
    os.chmod(path, mode)
    return path


@pytest.mark.parametrize("what", LOOSE)
def test_loose_access_files_are_refused_and_left_as_they_are(tmp_path: Path, what: str) -> None:
    home = _make(tmp_path)
    path = _loosen(home, what)
    mode = path.lstat().st_mode
    before = tree(tmp_path)
    with pytest.raises(SecretFileError) as info:
        Gateway(home)
    assert str(path) in str(info.value)
    assert "chmod" in str(info.value) or "symlink" in str(info.value)
    # init refuses to complete such a home; the commands that read the file refuse too.
    assert_refused(invoke("init", "--home", str(home.root), "--agent", "bob"), code=4, says=str(path))
    if what.startswith("token"):
        with pytest.raises(SecretFileError):
            owner_token(home)
    if what.startswith("devices"):
        assert_refused(invoke("devices", "pair", "--home", str(home.root), "--name", "x"), code=4, says="chmod 600")
        assert_refused(invoke("devices", "ls", "--home", str(home.root)), code=4)
    assert path.lstat().st_mode == mode  # never quietly changed
    assert tree(tmp_path) == before
    if what == LOOSE[0]:  # once as a process: the gateway does not start, and no port is published
        res = run_cli("gateway", "run", "--home", str(home.root), "--port", "0")
        assert_refused(res, code=4, says="refused")
        assert gateway_info(home.lock) is None


def test_the_token_never_shows_in_a_refusal(tmp_path: Path) -> None:
    home = _make(tmp_path)
    token = home.token_file.read_text().strip()
    os.chmod(home.token_file, 0o644)
    res = invoke("init", "--home", str(home.root), "--agent", "alice")
    assert token not in res.stdout + res.stderr
    with pytest.raises(SecretFileError) as info:
        owner_token(home)
    assert token not in str(info.value)


# -- sizes ------------------------------------------------------------------------------------


def test_a_config_over_the_limit_is_refused(tmp_path: Path) -> None:
    home = _make(tmp_path)
    blob = json.dumps({"defaults": {}, "models": {}, "agents": {}, "pad": "x" * MAX_CONFIG_BYTES})
    home.config.write_text(blob)
    before = tree(tmp_path)
    with pytest.raises(ConfigError, match="larger than"):
        Gateway(home)
    assert_refused(run_cli("agent", "send", "--home", str(home.root), "--agent", "alice", "hi"), code=4)
    assert tree(tmp_path) == before


def test_a_catalog_over_the_limit_is_never_read_or_overwritten(tmp_path: Path) -> None:
    home = _make(tmp_path)
    catalog = home.agent("alice").catalog
    with catalog.open("wb") as f:  # sparse: the size is what counts, not the bytes
        f.write(b'{"agent:alice:main": {"sessionId": "x"}')
        f.truncate(MAX_CATALOG_BYTES + 1)
    with pytest.raises(CatalogCorruptError, match="over the limit"):
        Catalog(catalog).items()
    with pytest.raises(CatalogCorruptError):
        Catalog(catalog).upsert("k", {"sessionId": "y"})
    assert_refused(invoke("sessions", "ls", "--home", str(home.root)), code=4, says="over the limit")
    assert_refused(invoke("agent", "send", "--home", str(home.root), "--agent", "alice", "hi"), code=4, says="limit")
    with pytest.raises(CatalogCorruptError):
        Gateway(home)
    assert catalog.stat().st_size == MAX_CATALOG_BYTES + 1
    res = invoke("sessions", "repair", str(catalog))
    assert res.returncode == 0, res.stderr
    assert not catalog.exists() and len(list(catalog.parent.glob("sessions.json.corrupt.*"))) == 1


def test_a_transcript_line_over_the_limit_refuses_the_file_never_loaded_whole(tmp_path: Path) -> None:
    header = b'{"type":"session","version":3,"id":"s-1","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/w"}\n'
    first = b'{"type":"message","id":"a","parentId":null,"timestamp":"2026-11-30T08:00:01.000Z",'
    first += b'"message":{"role":"user","content":"hi","timestamp":1}}\n'
    p = tmp_path / "big.jsonl"
    with p.open("wb") as f:
        f.write(header + first + b'{"pad":"')
        f.seek(len(header) + len(first) + MAX_LINE_BYTES + 16)  # a sparse run of NULs: one enormous line
        f.write(b'"}\n')
    # Longer than Pi's loader can hold: the file is refused, naming the line (never cut short).
    with pytest.raises(TranscriptReadError) as err:
        Transcript.open(p)
    assert (err.value.line, err.value.path) == (3, str(p))


def test_a_corrupt_catalog_is_one_line_from_send_and_from_the_gateway(tmp_path: Path) -> None:
    home = _make(tmp_path)
    home.agent("alice").catalog.write_text("{not json")
    before = tree(tmp_path)
    assert_refused(invoke("agent", "send", "--home", str(home.root), "--agent", "alice", "hi"), code=4, says="JSON")
    assert_refused(run_cli("gateway", "run", "--home", str(home.root), "--port", "0"), code=4, says="sessions.json")
    assert gateway_info(home.lock) is None
    assert tree(tmp_path) == before
