"""Pages and assets shipped inside the package, served with a strict Content-Security-Policy.

Nothing a page of the gateway loads comes from anywhere but the gateway: the policy allows
scripts, styles, images and requests from the same origin only, no inline script or style,
no frames, no plugins. Only files that exist in the package directory at start-up can be
served (a fixed table, so no request path ever becomes a file path).
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from typing import Final

from starlette.responses import Response

__all__ = ["CSP", "PAGE_HEADERS", "PackagedFiles"]

CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""The Content-Security-Policy of every page and asset: same origin only, nothing inline."""

PAGE_HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
"""Headers on every page, asset and JSON answer of the viewer."""

_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}


class PackagedFiles:
    """The files of one package directory (``kurahi.ui`` / ``static``), read once.

    Args:
        package: the package holding the directory.
        folder: the directory's name inside it (searched one level of sub-folders deep).
    """

    def __init__(self, package: str, folder: str = "static") -> None:
        self.files: dict[str, tuple[bytes, str]] = {}
        root = resources.files(package).joinpath(folder)
        self._add(root, "")

    def _add(self, folder: Traversable, prefix: str) -> None:
        for item in sorted(folder.iterdir(), key=lambda i: i.name):
            name = prefix + item.name
            if item.is_dir():
                if not prefix:  # one level of sub-folders (pages/), no deeper
                    self._add(item, name + "/")
                continue
            suffix = "." + item.name.rsplit(".", 1)[-1] if "." in item.name else ""
            if suffix in _TYPES:
                self.files[name] = (item.read_bytes(), _TYPES[suffix])

    def response(self, name: str) -> Response | None:
        """The file ``name`` (relative to the folder) with the page headers, or ``None``."""
        found = self.files.get(name)
        if found is None:
            return None
        data, media_type = found
        return Response(data, media_type=media_type, headers=PAGE_HEADERS)
