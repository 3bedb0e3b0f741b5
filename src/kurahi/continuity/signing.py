"""The home's continuity signing key: one Ed25519 key, created on first use, never replaced.

The key file is ``<home>/identity/continuity-signing.json`` (0600, its directory 0700)::

    {"version": 1, "algorithm": "Ed25519", "createdAt": "2026-11-30T10:47:14.270Z",
     "privateKey": "<base64 of the 32-byte raw private key>",
     "publicKey": "<base64 of the 32-byte raw public key>"}

It moves with the state directory, which is what lets a manifest taken after a move carry
the same signer as one taken before.

**Created once.** The first use writes the whole file to a temporary name in the same
directory, fsyncs it, and ``link(2)``s it to the final name. ``link`` never replaces an
existing name, so when two processes make their first manifest at the same moment exactly
one key wins and the other process reads it; nobody ever sees a half-written key file.

**Refused when others can read it.** A key file with any group or other permission bit
(``mode & 0o077``) is refused with :class:`~kurahi.errors.SigningKeyError`, as ssh refuses
an open private key. It is not quietly ``chmod``-ed: a key that others could read may have
been copied, so the owner decides whether to tighten it (``chmod 600``) or to start a new
key (move the file away; the next manifest creates one, with a new fingerprint).

The private key never leaves this module: not in a manifest, not in ``repr``, not in an
error message. Errors about the file name the file and the field, never its bytes.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import hashlib
import os
import secrets
import stat
from datetime import UTC, datetime
from pathlib import Path

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from kurahi.errors import SigningKeyError
from kurahi.fs import durable as fsio
from kurahi.fs.os_errors import os_error
from kurahi.resident.home import Home

__all__ = [
    "KEY_FILE_VERSION",
    "SigningKey",
    "fingerprint_of",
    "load_key_file",
    "load_signing_key",
    "verify_signature",
]

KEY_FILE_VERSION = 1
"""The ``version`` of the key file format."""

_O_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
_MAX_KEY_FILE = 64 * 1024


class _KeyFile(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    version: int
    algorithm: str
    private_key: str
    public_key: str
    created_at: str = ""


def fingerprint_of(public_key: bytes) -> str:
    """The fingerprint of a raw 32-byte Ed25519 public key: its SHA-256, lowercase hex."""
    return hashlib.sha256(public_key).hexdigest()


def verify_signature(public_key: bytes, signature: bytes, message: bytes) -> bool:
    """Whether ``signature`` is a valid Ed25519 signature of ``message`` by ``public_key`` (raw 32 bytes)."""
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


class SigningKey:
    """An Ed25519 key that signs manifest roots. Holds the private key; shows only the public one.

    Example::

        key = load_signing_key(Home.at())          # created on first use
        signature = key.sign(bytes.fromhex(root))
        assert verify_signature(key.public_key, signature, bytes.fromhex(root))
    """

    __slots__ = ("_private", "path", "public_key")

    def __init__(self, private: Ed25519PrivateKey, *, path: Path | None = None) -> None:
        self._private = private
        self.path = path
        """The key file, or ``None`` for a key that lives only in memory."""
        self.public_key: bytes = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        """The raw 32-byte public key."""

    @classmethod
    def generate(cls) -> SigningKey:
        """A fresh key that lives only in memory (tests, throwaway homes)."""
        return cls(Ed25519PrivateKey.generate())

    @property
    def public_key_b64(self) -> str:
        """The raw public key, base64 (as it appears in a manifest)."""
        return base64.b64encode(self.public_key).decode("ascii")

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the raw public key, lowercase hex."""
        return fingerprint_of(self.public_key)

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``message``."""
        return self._private.sign(message)

    def __repr__(self) -> str:
        return f"SigningKey(fingerprint={self.fingerprint[:16]}…)"

    def __reduce__(self) -> tuple[object, ...]:
        # Pickling would copy the private key into whatever the pickle goes to (a log, a queue).
        raise TypeError("a SigningKey cannot be pickled")

    def _file_bytes(self) -> bytes:
        raw = self._private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        doc = _KeyFile(
            version=KEY_FILE_VERSION,
            algorithm="Ed25519",
            private_key=base64.b64encode(raw).decode("ascii"),
            public_key=self.public_key_b64,
            created_at=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        )
        return msgspec.json.format(msgspec.json.encode(doc)) + b"\n"


def load_signing_key(home: Home | str | os.PathLike[str], *, create: bool = True) -> SigningKey:
    """The home's signing key, created (once, atomically) when it does not exist yet.

    Args:
        home: the state directory.
        create: make the key when there is none (else :class:`SigningKeyError`).

    Raises:
        SigningKeyError: the file is readable by group or others, a symlink, not a regular
            file, unreadable, or not a well-formed key file (the message names the field).
    """
    path = (home if isinstance(home, Home) else Home.at(home)).signing_key
    try:
        return _read(path)
    except FileNotFoundError:
        if not create:
            raise SigningKeyError("no signing key (it is created by the first manifest)", path=path) from None
    return _create(path)


def load_key_file(path: str | os.PathLike[str], *, create: bool = True) -> SigningKey:
    """The key in ``path`` (same format, same rules as the home's key), created once when absent.

    For a key that is not a home's own: Kurahi's observer key, which signs what Kurahi sees
    of a runtime it does not run (an OpenClaw state dir), lives in Kurahi's home, never in
    the observed state dir.

    Raises:
        SigningKeyError: as for :func:`load_signing_key`.
    """
    p = Path(path)
    try:
        return _read(p)
    except FileNotFoundError:
        if not create:
            raise SigningKeyError("no key file", path=p) from None
    return _create(p)


def _read(path: Path) -> SigningKey:
    try:
        fd = os.open(path, _O_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SigningKeyError("is a symbolic link; the key file must be a regular file", path=path) from None
        raise os_error(SigningKeyError, "cannot open", exc, path=path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SigningKeyError("is not a regular file", path=path)
        if st.st_mode & 0o077:
            raise SigningKeyError(
                f"mode {stat.S_IMODE(st.st_mode):04o} lets group or others access the private key; refusing to "
                "sign with it. If nobody else could have read it, `chmod 600` it; otherwise move it away and a "
                "new key (with a new fingerprint) is created",
                path=path,
            )
        if st.st_size > _MAX_KEY_FILE:
            raise SigningKeyError(f"{st.st_size} bytes is too large for a key file", path=path)
        data = os.read(fd, _MAX_KEY_FILE + 1)
    finally:
        os.close(fd)
    return _parse(data, path)


def _parse(data: bytes, path: Path) -> SigningKey:
    # Every error here is raised `from None`: a decoder's message could quote the key bytes.
    try:
        doc = msgspec.json.decode(data, type=_KeyFile)
    except msgspec.ValidationError as exc:
        raise SigningKeyError(f"not a key file: {exc}", path=path) from None
    except msgspec.DecodeError:
        raise SigningKeyError("not a key file: not valid JSON", path=path) from None
    if doc.version != KEY_FILE_VERSION or doc.algorithm != "Ed25519":
        raise SigningKeyError(
            f"unsupported key file (version {doc.version}, algorithm {doc.algorithm[:32]!r}); "
            f"expected version {KEY_FILE_VERSION}, Ed25519",
            path=path,
        )
    private_raw = _b64_32(doc.private_key, "privateKey", path)
    public_raw = _b64_32(doc.public_key, "publicKey", path)
    key = SigningKey(Ed25519PrivateKey.from_private_bytes(private_raw), path=path)
    if key.public_key != public_raw:
        raise SigningKeyError("publicKey is not the public half of privateKey", path=path)
    return key


def _b64_32(text: str, field: str, path: Path) -> bytes:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SigningKeyError(f"{field}: not valid base64", path=path) from None
    if len(raw) != 32:
        raise SigningKeyError(f"{field}: {len(raw)} bytes where a raw Ed25519 key has 32", path=path)
    return raw


def _create(path: Path) -> SigningKey:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = SigningKey(Ed25519PrivateKey.generate(), path=path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)  # whatever the umask says
            fsio.write_all(fd, key._file_bytes())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never replaces: of two first uses, one key wins
        except FileExistsError:
            return _read(path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    fsio.fsync_dir(path.parent)
    return key
