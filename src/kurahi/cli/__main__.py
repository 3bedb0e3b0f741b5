"""``python -m kurahi.cli``: the same as the ``kurahi`` command."""

from kurahi.cli import main

main()
