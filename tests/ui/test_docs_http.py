"""The API reference at ``/docs`` over HTTP on loopback: Swagger UI served from the package with
its own policy, revalidated by ETag, no credential needed, nothing outside its fixed table of files
(no path traversal, no way around the bearer check); the viewer's policy unchanged; and the
bearer scheme in ``/openapi.json``."""

from __future__ import annotations

import hashlib
import http.client
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from kurahi.gateway.routes.docs import DOCS_CSP
from kurahi.gateway.static_files import CSP
from kurahi.gateway.vendored import read_manifest
from support.gateways import make_gateway_home
from support.ui_server import Viewer, serve_viewer

SWAGGER = Path(__file__).resolve().parents[2] / "src" / "kurahi" / "gateway" / "static" / "swagger"

FILES = {
    "/docs": "text/html",
    "/docs/docs.js": "text/javascript",
    "/docs/docs.css": "text/css",
    "/docs/swagger/swagger-ui-bundle.js": "text/javascript",
    "/docs/swagger/swagger-ui.css": "text/css",
    "/docs/swagger/favicon-32x32.png": "image/png",
    "/docs/swagger/LICENSE": "text/plain",
    "/docs/swagger/NOTICE": "text/plain",
    "/docs/swagger/swagger-ui-bundle.js.LICENSE.txt": "text/plain",
}


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    with serve_viewer(make_gateway_home(tmp_path_factory.mktemp("docs"))) as v:
        yield v


def raw_get(viewer: Viewer, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """GET ``path`` exactly as written: http.client sends it verbatim (httpx would resolve ``..``)."""
    where = urlsplit(viewer.url)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_the_docs_policy_is_strict_and_the_viewers_is_unchanged() -> None:
    directives = dict(d.strip().split(" ", 1) for d in DOCS_CSP.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"  # no inline script, no eval, nothing from elsewhere
    assert directives["style-src"] == "'self'"  # Swagger UI 5.35 sets styles through the CSSOM only
    assert directives["connect-src"] == "'self'" and directives["img-src"] == "'self' data:"
    assert directives["frame-ancestors"] == "'none'" and directives["base-uri"] == "'none'"
    assert "unsafe" not in DOCS_CSP and "http" not in DOCS_CSP and "*" not in DOCS_CSP
    assert CSP == (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


def test_the_page_and_its_files_carry_the_docs_headers_and_need_no_credential(viewer: Viewer) -> None:
    manifest = read_manifest()
    with viewer.client() as b:
        for path, media in FILES.items():
            r = b.get(path)  # no Authorization header
            assert r.status_code == 200, (path, r.text[:200])
            assert r.headers["content-type"].startswith(media), path
            assert r.headers["content-security-policy"] == DOCS_CSP, path
            assert r.headers["x-content-type-options"] == "nosniff", path
            assert r.headers["x-frame-options"] == "DENY" and r.headers["referrer-policy"] == "no-referrer", path
            assert r.headers["cache-control"] == "no-cache", path
            assert r.headers["etag"] == f'"{hashlib.sha256(r.content).hexdigest()}"', path
            name = path.removeprefix("/docs/swagger/")
            if name in manifest.files:  # byte for byte the vendored file
                assert hashlib.sha256(r.content).hexdigest() == manifest.files[name].sha256, path
        assert b.get("/ui/").headers["content-security-policy"] == CSP  # the viewer keeps its own


def test_a_current_copy_is_revalidated_with_an_empty_304(viewer: Viewer) -> None:
    with viewer.client() as b:
        first = b.get("/docs/swagger/swagger-ui-bundle.js")
        etag = first.headers["etag"]
        again = b.get("/docs/swagger/swagger-ui-bundle.js", headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b""
        assert again.headers["etag"] == etag and again.headers["content-security-policy"] == DOCS_CSP
        weak_in_a_list = b.get("/docs/swagger/swagger-ui-bundle.js", headers={"If-None-Match": f'"x", W/{etag}'})
        assert weak_in_a_list.status_code == 304
        stale = b.get("/docs/swagger/swagger-ui-bundle.js", headers={"If-None-Match": '"0000"'})
        assert stale.status_code == 200 and stale.content == first.content
        other = b.get("/docs/swagger/swagger-ui.css", headers={"If-None-Match": etag})
        assert other.status_code == 200  # one file's tag never matches another's


def test_the_page_loads_only_files_of_the_gateway_and_runs_no_inline_script(viewer: Viewer) -> None:
    with viewer.client() as b:
        page = b.get("/docs").text
        scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", page, flags=re.S)
        assert scripts and all('src="' in attrs and not body.strip() for attrs, body in scripts)
        assert not re.search(r"\sstyle=|<style|\son[a-z]+=", page, flags=re.I)
        refs = re.findall(r'(?:src|href)="([^"]+)"', page)
        assert refs and not [u for u in refs if not u.startswith("/")], refs  # no scheme, no other host
        for ref in refs:
            assert b.get(ref).status_code == 200, ref
        init = b.get("/docs/docs.js").text
        assert "eval(" not in init and "innerHTML" not in init and not re.search(r"https?://", init)
        assert "validatorUrl: null" in init and "queryConfigEnabled: false" in init


def test_nothing_outside_the_table_is_served_and_dot_dot_never_reaches_the_api(viewer: Viewer) -> None:
    probes = [
        "/docs/../secrets/gateway.token",
        "/docs/swagger/../../app.py",
        "/docs/%2e%2e/%2e%2e/secrets/gateway.token",
        "/docs/..%2f..%2fsecrets%2fgateway.token",
        "/docs/swagger/vendor.json",  # in the folder, but not a file the page loads
        "/docs/app.py",
        "/docs//etc/passwd",
        "/docs/swagger/LICENSE%00.js",
        "/docs/swagger/swagger-ui.css/",
        "/docs/swagger",
        "/docs/../api/agents",  # would be the agent list, behind the bearer check
        "/docs/%2e%2e/api/agents",
    ]
    for path in probes:
        status, headers, body = raw_get(viewer, path)
        assert status == 404, (path, status, body[:200])
        assert headers["content-type"].startswith("application/json"), path
        assert headers["content-security-policy"] == DOCS_CSP and headers["x-content-type-options"] == "nosniff"
        assert headers["cache-control"] == "no-store", path
        assert b"no such file in the API reference" in body, path
        assert viewer.token.encode() not in body and b"alice" not in body, path
    status, _, body = raw_get(viewer, "/api/agents")
    assert status == 401  # the API itself still wants its token


def test_the_schema_declares_the_bearer_scheme_on_every_operation_but_the_probes(viewer: Viewer) -> None:
    with viewer.client() as b:
        r = b.get("/openapi.json")
        assert r.status_code == 200
        schema = r.json()
    schemes = schema["components"]["securitySchemes"]
    assert set(schemes) == {"bearer"} and schemes["bearer"]["type"] == "http"
    assert schemes["bearer"]["scheme"] == "bearer" and "Authorization: Bearer" in schemes["bearer"]["description"]
    assert schema["security"] == [{"bearer": []}]
    public = {(p, m) for p, ops in schema["paths"].items() for m, op in ops.items() if op.get("security") == []}
    assert public == {("/api/health", "get"), ("/api/ready", "get")}
    assert not any(p.startswith(("/ui", "/docs")) for p in schema["paths"])
