"""The fast tier's list of slow tests names only what exists (a renamed test would slip into `make check`)."""

from __future__ import annotations

import ast
from pathlib import Path

import tiers

TESTS = Path(__file__).parent


def test_every_slow_folder_module_and_test_exists() -> None:
    for folder in tiers.SLOW_FOLDERS:
        assert (TESTS / folder).is_dir(), folder
    for module in tiers.SLOW_MODULES:
        assert (TESTS / module).is_file(), module
    for name in tiers.SLOW_TESTS:
        module, _, function = name.partition("::")
        tree = ast.parse((TESTS / module).read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        for c in tree.body:
            if isinstance(c, ast.ClassDef):
                defined |= {f"{c.name}.{n.name}" for n in c.body if isinstance(n, ast.FunctionDef)}
                if c.bases and function.startswith(f"{c.name}."):  # a conformance mixin's test, inherited
                    defined.add(function)
        assert function in defined, name


def test_make_check_leaves_out_only_slow_folders() -> None:
    makefile = (TESTS.parent / "Makefile").read_text()
    ignored = {part.removeprefix("--ignore=tests/") + "/" for part in makefile.split() if part.startswith("--ignore=")}
    assert ignored <= set(tiers.SLOW_FOLDERS)  # an ignored folder must be one make test still runs as slow
