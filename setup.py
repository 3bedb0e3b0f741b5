"""The optional C line scanner; everything else about the package is in pyproject.toml.

When the extension cannot be built (no compiler, no Python headers) the install still
succeeds and :mod:`kurahi.pi.read.native` falls back to the Python scanner, about twice as
slow on large files. That fallback must not be silent: :class:`_OptionalBuildExt` prints
one warning block naming the cause and the fix, and ``kurahi doctor`` reports the scanner
off afterwards. pip shows a build's output only with ``-v``; ``python -m build`` and
``make dist`` always show it.
"""

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

_WARNING = """
========================================================================
WARNING: kurahi's C line scanner was not built ({cause}).
Kurahi still works, with its pure-Python scanner (about 2x slower on
large transcripts). To build it: install a C compiler and Python's
headers (Debian: apt-get install gcc python3-dev), then reinstall.
`kurahi doctor` reports whether the scanner is on.
========================================================================
"""


class _OptionalBuildExt(build_ext):
    """``build_ext`` that falls back to no extension, saying so once."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler at all: setuptools fails before any extension
            self._warn(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # the compiler or the headers failed on this extension
            self._warn(exc)

    def _warn(self, exc: Exception) -> None:
        if getattr(self, "_warned", False):
            return
        self._warned = True
        cause = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        sys.stderr.write(_WARNING.format(cause=cause[:120]))
        sys.stderr.flush()


setup(
    cmdclass={"build_ext": _OptionalBuildExt},
    ext_modules=[
        Extension(
            "kurahi.pi.read._native",
            sources=["src/kurahi/pi/read/_native.c"],
            depends=[
                "src/kurahi/pi/read/_native_json.h",
                "src/kurahi/pi/read/_native_sha256.h",
                "src/kurahi/pi/read/_native_canon.h",
                "src/kurahi/pi/read/_native_estimate.h",
            ],
            extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"],
        )
    ],
)
