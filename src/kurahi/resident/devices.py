"""Paired devices: a name, scopes, and the SHA-256 of a token shown once.

The token itself is returned by :meth:`DeviceRegistry.pair` and never stored; a presented
token is hashed and compared with every stored hash in constant time. Scopes are
``read``, ``chat`` and ``admin``. The registry is ``devices.json`` (0600), changed under a
lock and replaced atomically, so the CLI can pair a device while the gateway runs (the
gateway re-reads it when it changes). A registry open to other users (who could add their
own device) is refused, as :func:`kurahi.resident.home.read_private_file` says. The file is
read through a typed schema: a value of the wrong type anywhere is an error naming it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec

from kurahi.errors import ConfigError, UsageError
from kurahi.fs import durable as fsio
from kurahi.fs.locks import FileLock
from kurahi.fs.os_errors import os_errors
from kurahi.js.decode import DECODE_ERRORS
from kurahi.resident.home import DEVICE_REGISTRY_FILE, read_private_file

__all__ = ["SCOPES", "Device", "DeviceRegistry", "token_hash"]

SCOPES = ("read", "chat", "admin", "metrics")
"""Every scope a credential can hold; the owner token holds all of them."""

_NAME = re.compile(r"^[\w .@()+-]{1,64}$")


def token_hash(token: str) -> str:
    """Lowercase hex SHA-256 of a token's UTF-8 bytes."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Device:
    """A paired device."""

    id: str
    name: str
    scopes: list[str]
    token_sha256: str
    created_at: int
    revoked_at: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        """Not revoked."""
        return self.revoked_at is None

    def to_dict(self, *, with_hash: bool = False) -> dict[str, Any]:
        """JSON shape (the token hash only when asked: the API never shows it)."""
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "scopes": list(self.scopes),
            "createdAt": self.created_at,
            "revokedAt": self.revoked_at,
        }
        if with_hash:
            out["tokenSha256"] = self.token_sha256
        return out


class _StoredDevice(msgspec.Struct, rename="camel", frozen=True):
    """One device as ``devices.json`` holds it (unknown fields are ignored, as before)."""

    id: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    """``dev_`` and 12 hex digits, as :meth:`DeviceRegistry.pair` makes it."""
    name: Annotated[str, msgspec.Meta(max_length=64)]
    """What the owner called it."""
    scopes: list[str]
    """What its token may do (each one of :data:`SCOPES`, checked on read)."""
    token_sha256: Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]
    """Lowercase hex SHA-256 of its token."""
    created_at: Annotated[int, msgspec.Meta(ge=0)]
    """Milliseconds since the epoch."""
    revoked_at: Annotated[int, msgspec.Meta(ge=0)] | None = None
    """When it was revoked (milliseconds since the epoch); ``null`` while active."""


class _RegistryFile(msgspec.Struct, frozen=True):
    """The whole ``devices.json``."""

    devices: list[_StoredDevice]
    version: int = 1


def check_scopes(scopes: list[str] | str) -> list[str]:
    """Normalise ``read,chat`` or a list into known scopes, in canonical order.

    Raises:
        UsageError: empty, or an unknown scope.
    """
    items = [s.strip() for s in (scopes.split(",") if isinstance(scopes, str) else scopes)]
    items = [s for s in items if s]
    unknown = sorted(set(items) - set(SCOPES))
    if unknown or not items:
        raise UsageError(f"scopes must be some of {', '.join(SCOPES)}; got {', '.join(unknown) or 'none'}")
    return [s for s in SCOPES if s in items]


class DeviceRegistry:
    """The devices of one home."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._cache: tuple[tuple[int, int, int, int], list[Device]] | None = None

    def devices(self) -> list[Device]:
        """Every device (revoked ones too), re-read only when the file changed."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return []
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
        if self._cache is not None and self._cache[0] == stamp:
            return self._cache[1]
        devices = self._read()
        self._cache = (stamp, devices)
        return devices

    def _read(self) -> list[Device]:
        data = read_private_file(self.path, *DEVICE_REGISTRY_FILE)
        if data is None:
            return []
        # A typed decode: a hand-edited registry with a wrong type anywhere (``createdAt:
        # "abc"``, ``scopes: 5``, ``revokedAt: 1.5``) is refused whole, naming the field. A
        # lenient read would have to guess, and guessing "not revoked" revives a token.
        try:
            doc = msgspec.json.decode(data, type=_RegistryFile)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"the device registry holds a wrong value: {exc}", path=self.path) from None
        except DECODE_ERRORS as exc:
            raise ConfigError(f"cannot read the device registry: {exc}", path=self.path) from None
        for n, d in enumerate(doc.devices):
            unknown = sorted(set(d.scopes) - set(SCOPES))
            if unknown:
                raise ConfigError(
                    f"the device registry holds an unknown scope {unknown[0]!r} - at `$.devices[{n}].scopes`",
                    path=self.path,
                )
        return [
            Device(d.id, d.name, [s for s in SCOPES if s in d.scopes], d.token_sha256, d.created_at, d.revoked_at)
            for d in doc.devices
        ]

    def _write(self, devices: list[Device]) -> None:
        body = {"version": 1, "devices": [d.to_dict(with_hash=True) for d in devices]}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._cache = None
        with os_errors(ConfigError, "cannot write the device registry", path=self.path):
            fsio.atomic_write(self.path, msgspec.json.encode(body) + b"\n", mode=0o600)

    def _lock(self) -> FileLock:
        return FileLock(self.path.with_name(self.path.name + ".lock"), purpose="device registry").acquire(timeout=10)

    def pair(self, name: str, scopes: list[str] | str) -> tuple[Device, str]:
        """Pair a device; returns it and its token (shown once, never stored).

        Raises:
            UsageError: a bad name or scope.
        """
        if not isinstance(name, str) or not _NAME.match(name):
            raise UsageError("device name must be 1-64 letters, digits, spaces or . @ ( ) + - _")
        wanted = check_scopes(scopes)
        token = "kd_" + secrets.token_urlsafe(32)
        with self._lock():
            devices = self._read()
            device = Device("dev_" + secrets.token_hex(6), name, wanted, token_hash(token), int(time.time() * 1000))
            self._write([*devices, device])
        return device, token

    def revoke(self, device_id: str) -> Device | None:
        """Revoke a device (its token stops working at once); ``None`` if there is no such device."""
        with self._lock():
            devices = self._read()
            for d in devices:
                if d.id == device_id:
                    if d.revoked_at is None:
                        d.revoked_at = int(time.time() * 1000)
                        self._write(devices)
                    return d
        return None

    def authenticate(self, token: str) -> Device | None:
        """The active device whose token this is, compared in constant time; else ``None``."""
        presented = token_hash(token)
        found = None
        for d in self.devices():
            # Every stored hash is compared, so the time does not tell which one (or none) matched.
            if hmac.compare_digest(presented, d.token_sha256) and d.active:
                found = d
        return found
