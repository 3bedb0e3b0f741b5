"""The ``--home`` option every command that works on a Kurahi home shares, and its resolution.

The home is ``--home``, else ``KURAHI_HOME``, else ``KOLO_HOME`` (the seed's name), else
``~/.kolo`` (:func:`kurahi.locations.dirs.kurahi_home`). A command that needs an existing home
and finds none says where it looked and suggests ``kurahi init``, with exit code 3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kurahi.cli.common import EXIT, fail

__all__ = ["HOME_DEFAULT", "HomeOpt", "home_root"]

HOME_DEFAULT = "$KURAHI_HOME, else $KOLO_HOME, else ~/.kolo"

HomeOpt = Annotated[
    Path | None,
    typer.Option("--home", show_default=HOME_DEFAULT, help="The Kurahi home (state directory)."),
]


def home_root(home: Path | None, *, must_exist: bool = True) -> Path:
    """The home's directory; with ``must_exist``, exit 3 suggesting ``kurahi init`` when there is none."""
    from kurahi.errors import UsageError
    from kurahi.locations.dirs import kurahi_home

    try:
        where = kurahi_home(home)
    except UsageError as exc:
        fail(str(exc), EXIT.USAGE)
    if must_exist and not where.path.is_dir():
        why = {"--home": "given by --home", "default": "the default: neither KURAHI_HOME nor KOLO_HOME is set"}
        what = "not a directory" if where.path.exists() else "no such directory"
        fail(
            f"no Kurahi home at {where.path} ({why.get(where.source, f'from {where.source}')}; {what}); "
            f"create one with `kurahi init --home {where.path}`",
            EXIT.NOT_FOUND,
        )
    return where.path
