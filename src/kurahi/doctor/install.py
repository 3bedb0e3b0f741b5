"""Checks of the installation itself: version, the C scanner, the extras."""

from __future__ import annotations

import platform
import sys

from kurahi import __version__
from kurahi.doctor.report import Check

__all__ = ["check_extras", "check_native", "check_version"]

NATIVE_FIX = (
    "install a C compiler and Python's headers (Debian: apt-get install gcc python3-dev) and reinstall "
    "(pip install --force-reinstall --no-deps kurahi), or install the manylinux wheel, which has the scanner built"
)


def check_version() -> Check:
    """Kurahi's version and the interpreter it runs on."""
    py = platform.python_version()
    return Check(
        "version",
        "ok",
        f"kurahi {__version__} on Python {py} ({sys.executable})",
        facts={"kurahi": __version__, "python": py, "executable": sys.executable, "platform": sys.platform},
    )


def check_native() -> Check:
    """Whether the C line scanner is built and switched on."""
    from kurahi.pi.read import native

    built = native._native is not None
    facts = {"built": built, "enabled": native.ENABLED, "on": native.available()}
    if native.available():
        return Check("native", "ok", "native scanner on (the C extension is built)", facts=facts)
    if built:
        return Check(
            "native",
            "warn",
            "native scanner off: KURAHI_NATIVE=0 switches it off (large files read about 2x slower)",
            fix="unset KURAHI_NATIVE",
            facts=facts,
        )
    return Check(
        "native",
        "warn",
        "native scanner off: the C extension was not built (large files read about 2x slower)",
        fix=NATIVE_FIX,
        facts=facts,
    )


def check_extras() -> Check:
    """Which optional extras are installed (none is needed to read sessions)."""
    from kurahi.extras import EXTRAS, missing

    have = {name: not missing(name) for name in EXTRAS}
    present = [n for n, ok in have.items() if ok]
    absent = [n for n, ok in have.items() if not ok]
    summary = f"extras: {', '.join(present) or 'none'} installed"
    if absent:
        summary += f"; not installed: {', '.join(absent)} (pip install 'kurahi[all]' for everything)"
    return Check("extras", "info" if absent else "ok", summary, facts={"installed": have})
