"""The optional C line scanner; everything else about the package is in pyproject.toml.

``optional=True``: when the extension cannot be built (no compiler, no Python headers)
the install still succeeds and :mod:`kurahi.store.native` falls back to the Python scanner.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kurahi.store._native",
            sources=["src/kurahi/store/_native.c"],
            depends=["src/kurahi/store/_native_json.h", "src/kurahi/store/_native_sha256.h"],
            extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"],
            optional=True,
        )
    ]
)
