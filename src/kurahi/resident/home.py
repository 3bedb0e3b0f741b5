"""A Kurahi home (``KURAHI_HOME`` or ``KOLO_HOME``, default ``~/.kolo``): where every file of the state directory lives.

::

    <home>/
        config.json                     model profiles, agent settings
        devices.json                    paired devices: names, scopes, token hashes (0600)
        run/gateway.lock                the running gateway: {"pid", "port", "startedAt"}
        run/hash-cache.json             file digests for continuity manifests (a cache)
        secrets/gateway.token           the owner token (0600; directory 0700)
        identity/continuity-signing.json  the Ed25519 key of continuity manifests (0600)
        audit/chain.jsonl               the hash-chained audit log
        agents/<agentId>/...            see :mod:`kurahi.agent.layout`

Nothing under ``secrets/`` is ever written to a log, a report or a response.

**Private.** The home and every directory Kurahi makes in it are created 0700, secret files
0600, whatever the umask. The owner token and ``devices.json`` are read only when no group
or other permission bit is set and they are not symlinks; the home and ``secrets/`` only when
no group or other write bit is set (else anyone could swap in their own token or device).
Anything else is refused with :class:`~kurahi.errors.SecretFileError`, never quietly
``chmod``-ed, as the signing key is: a token others could read may have been copied.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from kurahi.agent.layout import AgentPaths, check_agent_id
from kurahi.errors import SecretFileError
from kurahi.fs.os_errors import os_error

__all__ = [
    "DEVICE_REGISTRY_FILE",
    "HOME_ENV",
    "OWNER_TOKEN_FILE",
    "SIGNING_KEY_FILE",
    "TOKEN_ENV",
    "Home",
    "read_private_file",
]

HOME_ENV = "KOLO_HOME"
"""Environment variable naming the home."""
TOKEN_ENV = "KOLO_GATEWAY_TOKEN"
"""Environment variable that may hold the owner token (instead of the token file)."""


_MAX_PRIVATE_FILE = 4 * 1024 * 1024

OWNER_TOKEN_FILE = ("the owner token", "delete it and run `kurahi init` for a new one")
DEVICE_REGISTRY_FILE = ("the device registry", "delete it to unpair every device")
SIGNING_KEY_FILE = ("the signing key", "move it away for a new key")
"""``(what, fix)`` of each access file, for :func:`read_private_file` and its messages."""


def read_private_file(path: Path, what: str, fix: str) -> bytes | None:
    """The bytes of a file that guards access; ``None`` when it does not exist.

    Args:
        path: the file.
        what: what it is, for messages (``the owner token``).
        fix: what the owner can do instead of ``chmod 600`` (for messages).

    Raises:
        SecretFileError: a symlink, not a regular file, any group or other permission bit,
            larger than 4 MiB, or unreadable.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SecretFileError(f"{what} is a symlink; it must be a file of its own", path=path) from None
        raise os_error(SecretFileError, f"cannot read {what}", exc, path=path) from None
    # Checked before fdopen, which raises a bare IsADirectoryError on a directory.
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise SecretFileError(f"{what} is {kind}; it must be a file of its own ({fix})", path=path)
    with os.fdopen(fd, "rb") as f:
        if st.st_mode & 0o077:
            raise SecretFileError(
                f"{what} is open to other users (mode {stat.S_IMODE(st.st_mode):04o}), so it may have been "
                f"copied; refused. `chmod 600 {path}` to keep it, or {fix}",
                path=path,
            )
        data = f.read(_MAX_PRIVATE_FILE + 1)
    if len(data) > _MAX_PRIVATE_FILE:
        raise SecretFileError(f"{what} is larger than {_MAX_PRIVATE_FILE} bytes", path=path)
    return data


@dataclass(frozen=True)
class Home:
    """The paths of one state directory."""

    root: Path

    @classmethod
    def at(cls, root: str | os.PathLike[str] | None = None) -> Home:
        """The home at ``root``, else ``$KURAHI_HOME``, else ``$KOLO_HOME``, else ``~/.kolo``.

        Raises:
            UsageError: ``KURAHI_HOME`` and ``KOLO_HOME`` name different directories.
        """
        if root is None:
            from kurahi.locations.dirs import kurahi_home

            root = kurahi_home().path
        return cls(Path(root).expanduser())

    @property
    def config(self) -> Path:
        """``config.json``."""
        return self.root / "config.json"

    @property
    def devices(self) -> Path:
        """``devices.json``."""
        return self.root / "devices.json"

    @property
    def lock(self) -> Path:
        """``run/gateway.lock``."""
        return self.root / "run" / "gateway.lock"

    @property
    def secrets(self) -> Path:
        """``secrets/`` (0700)."""
        return self.root / "secrets"

    @property
    def token_file(self) -> Path:
        """``secrets/gateway.token``."""
        return self.secrets / "gateway.token"

    @property
    def signing_key(self) -> Path:
        """``identity/continuity-signing.json``."""
        return self.root / "identity" / "continuity-signing.json"

    @property
    def audit(self) -> Path:
        """``audit/chain.jsonl``."""
        return self.root / "audit" / "chain.jsonl"

    def owner_token(self) -> str | None:
        """The owner token: ``KOLO_GATEWAY_TOKEN`` if set, else ``secrets/gateway.token``; ``None`` without either.

        Raises:
            SecretFileError: the token file is open to other users, a symlink, or unreadable.
        """
        env = os.environ.get(TOKEN_ENV)
        if env:
            return env.strip()
        data = read_private_file(self.token_file, *OWNER_TOKEN_FILE)
        return (data.decode("utf-8", "replace").strip() or None) if data is not None else None

    def check_owner_token(self) -> None:
        """Refuse an owner token no caller could ever present (checked when a gateway starts).

        An empty token file would let the gateway start and answer every owner call 401 with
        no word of why; a token with spaces, control or non-ASCII characters cannot travel in
        an ``Authorization`` header. A missing token is left alone (devices may be all there is).

        Raises:
            SecretFileError: the token (file or ``KOLO_GATEWAY_TOKEN``) is empty or unusable.
        """
        env = os.environ.get(TOKEN_ENV)
        if env is not None and env.strip():
            token, where, path = env.strip(), TOKEN_ENV, None
        else:
            data = read_private_file(self.token_file, *OWNER_TOKEN_FILE)
            if data is None:
                return
            token, where, path = data.decode("utf-8", "replace").strip(), "the owner token file", self.token_file
        if not token:
            raise SecretFileError(
                f"{where} is empty, so every owner call would be refused; {OWNER_TOKEN_FILE[1]}", path=path
            )
        if not all("!" <= c <= "~" for c in token):
            raise SecretFileError(
                f"{where} holds spaces, control or non-ASCII characters, which no client can send in a header; "
                f"{OWNER_TOKEN_FILE[1]}",
                path=path,
            )

    def check_private(self) -> None:
        """Refuse a home whose access files could be read or replaced by other users (see the module docstring).

        Checks the home and ``secrets/`` (no group or other write bit), the owner token and
        ``devices.json`` (:func:`read_private_file`), and the signing key's mode, where they exist.

        Raises:
            SecretFileError: the first problem found.
        """
        for d in (self.root, self.secrets):
            try:
                mode = os.stat(d).st_mode
            except FileNotFoundError:
                continue
            if mode & 0o022:
                raise SecretFileError(
                    f"writable by other users (mode {stat.S_IMODE(mode):04o}): anyone could put their own owner "
                    f"token or device in place; refused. `chmod go-w {d}`",
                    path=d,
                )
        read_private_file(self.token_file, *OWNER_TOKEN_FILE)
        read_private_file(self.devices, *DEVICE_REGISTRY_FILE)
        read_private_file(self.signing_key, *SIGNING_KEY_FILE)

    def agent(self, agent_id: str, *, must_exist: bool = False) -> AgentPaths:
        """One agent's paths (the id is checked before any path is built)."""
        return AgentPaths.of(self.root, agent_id, must_exist=must_exist)

    def agents(self) -> list[str]:
        """Ids of the agents that have a directory, sorted."""
        base = self.root / "agents"
        if not base.is_dir():
            return []
        out = []
        for p in sorted(base.iterdir()):
            try:
                if p.is_dir():
                    out.append(check_agent_id(p.name))
            except Exception:
                continue
        return out
