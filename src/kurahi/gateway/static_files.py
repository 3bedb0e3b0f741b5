"""Pages and assets shipped inside the package, served with a strict Content-Security-Policy.

Nothing a page of the gateway loads comes from anywhere but the gateway: the policy allows
scripts, styles, images and requests from the same origin only, no inline script or style,
no frames, no plugins. Only files that exist in the package directory at start-up can be
served (a fixed table, so no request path ever becomes a file path).

The viewer's answers are never stored by the browser (``no-store``: they hold a resident's
data). The API reference at ``/docs`` is the same for everyone and includes 1.7 MB of Swagger
UI, so its files are revalidated instead: each carries a strong ``ETag`` (its SHA-256), and a
request whose ``If-None-Match`` names it gets an empty 304.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
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
    ".png": "image/png",
}
_NAMES: Final = {"LICENSE": "text/plain; charset=utf-8", "NOTICE": "text/plain; charset=utf-8"}
"""Files served by their whole name: the licence texts that travel with vendored code."""


class PackagedFiles:
    """The files of one package directory (``kurahi.ui`` / ``static``), read once.

    Args:
        package: the package holding the directory.
        folder: the directory's name inside it (searched one level of sub-folders deep).
        headers: the headers of every answer (default :data:`PAGE_HEADERS`).
        revalidate: answer with ``Cache-Control: no-cache`` and an ``ETag`` (and 304 when the
            browser's copy is current) instead of the headers' own ``Cache-Control``.
    """

    def __init__(
        self,
        package: str,
        folder: str = "static",
        *,
        headers: Mapping[str, str] = PAGE_HEADERS,
        revalidate: bool = False,
    ) -> None:
        self.files: dict[str, tuple[bytes, str]] = {}
        self.etags: dict[str, str] = {}
        self.headers = dict(headers)
        if revalidate:
            self.headers["Cache-Control"] = "no-cache"
        root = resources.files(package).joinpath(folder)
        self._add(root, "")
        if revalidate:
            self.etags = {name: f'"{hashlib.sha256(data).hexdigest()}"' for name, (data, _) in self.files.items()}

    def _add(self, folder: Traversable, prefix: str) -> None:
        for item in sorted(folder.iterdir(), key=lambda i: i.name):
            name = prefix + item.name
            if item.is_dir():
                if not prefix:  # one level of sub-folders (pages/), no deeper
                    self._add(item, name + "/")
                continue
            suffix = "." + item.name.rsplit(".", 1)[-1] if "." in item.name else ""
            media_type = _TYPES.get(suffix) or _NAMES.get(item.name)
            if media_type is not None:
                self.files[name] = (item.read_bytes(), media_type)

    def response(self, name: str, if_none_match: str | None = None) -> Response | None:
        """The file ``name`` (relative to the folder) with the headers, or ``None``.

        With ``revalidate``, ``if_none_match`` is the request's ``If-None-Match``: when it names
        the file's ``ETag`` (or is ``*``) the answer is an empty 304.
        """
        found = self.files.get(name)
        if found is None:
            return None
        data, media_type = found
        etag = self.etags.get(name)
        if etag is None:
            return Response(data, media_type=media_type, headers=self.headers)
        headers = {**self.headers, "ETag": etag}
        if if_none_match is not None and _matches(if_none_match, etag):
            return Response(status_code=304, headers=headers)
        return Response(data, media_type=media_type, headers=headers)


def _matches(if_none_match: str, etag: str) -> bool:
    """Whether an ``If-None-Match`` list names ``etag`` (weak comparison, as RFC 9110 asks for GET)."""
    wanted = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return "*" in wanted or etag in wanted
