"""The API reference at ``/docs`` in headless Debian chromium against a real gateway on loopback,
with every request to anywhere but the gateway aborted (so the page must work offline): Swagger UI
renders every operation of ``/openapi.json``, Authorize takes the bearer token and try-it-out sends
it to the gateway (401 without, 403 with a token lacking the scope, 200 with the owner's), the
token is kept in no storage, axe-core finds nothing serious or critical, no policy violation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from support.browser import Watched, watch
from support.gateways import make_gateway_home
from support.ui_server import Viewer, browser_missing, serve_viewer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(browser_missing() is not None, reason=f"!!! {browser_missing()} !!!"),
]

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# Every operation Swagger UI drew, as (METHOD, path).
RENDERED = """() => [...document.querySelectorAll("#swagger-ui .opblock")].map((o) => [
  o.querySelector(".opblock-summary-method").textContent,
  o.querySelector(".opblock-summary-path").dataset.path,
])"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Viewer, dict[str, Any]]]:
    home = make_gateway_home(tmp_path_factory.mktemp("docs"))
    with serve_viewer(home) as v:
        with v.client() as c:
            owner = {"Authorization": f"Bearer {v.token}"}
            made: dict[str, Any] = {"schema": c.get("/openapi.json").json()}
            pair = c.post("/api/devices", json={"name": "phone", "scopes": ["chat"]}, headers=owner)
            assert pair.status_code == 201, pair.status_code
            made["chat_only"] = pair.json()["token"]
            v.watch.add(made["chat_only"])
        yield v, made


@pytest.fixture
def docs(browser: Any, site: tuple[Viewer, dict[str, Any]], shots: Path) -> Iterator[Watched]:
    v, _ = site
    here = urlsplit(v.url).netloc
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    # Offline but for the gateway: anything else is aborted (and still recorded as a request).
    context.route("**/*", lambda r: r.continue_() if urlsplit(r.request.url).netloc == here else r.abort())
    w = watch(context, v.url, shots)
    yield w
    violations = w.csp_violations()
    context.close()
    assert not w.foreign_requests(), f"requests left the gateway: {w.foreign_requests()}"
    assert not w.dialogs, w.dialogs
    assert not violations, f"Content-Security-Policy violations: {violations}"
    # The only console errors allowed: the browser noting the 401 and 403 answers the test asked for.
    asked = "Failed to load resource: the server responded with a status of 4"
    unexpected = [e for e in w.errors if not e.startswith(asked)]
    assert not unexpected, unexpected


def operations(schema: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((m.upper(), p) for p, ops in schema["paths"].items() for m in ops if m in METHODS)


def open_docs(w: Watched, schema: dict[str, Any], path: str = "/docs") -> None:
    w.goto(path)
    want = len(operations(schema))
    w.until(f"() => document.querySelectorAll('#swagger-ui .opblock').length === {want}")


def scan(w: Watched, name: str) -> None:
    # Swagger UI's buttons fade (a 0.3 s transition on every property): measured mid-fade, a colour
    # is neither the old nor the new one. Scan the page at rest.
    w.until("() => document.getAnimations().every((a) => a.playState !== 'running')")
    bad = w.axe(name)
    assert not bad, f"{name}: serious or critical accessibility violations: {json.dumps(bad, indent=1)}"
    w.shot(name)


def operation(w: Watched, method: str, path: str) -> Any:
    return w.page.locator(f"#swagger-ui .opblock-{method}:has(.opblock-summary-path[data-path='{path}'])").first


def execute(w: Watched, op: Any, calls: list[tuple[str, str, str | None]], path: str) -> tuple[str, str | None]:
    """Press Execute; the status Swagger UI shows and the Authorization the browser sent."""
    status = op.locator(".live-responses-table tbody .response-col_status")
    status.wait_for(state="detached")  # no earlier answer on show (Clear removes it)
    before = len(calls)
    op.locator("button.execute").click()
    status.wait_for(timeout=60_000)
    sent = [c for c in calls[before:] if urlsplit(c[1]).path == path]
    assert len(sent) == 1, [c[:2] for c in calls[before:]]  # never the headers: they hold tokens
    return status.inner_text().strip(), sent[0][2]


def test_every_operation_of_the_schema_is_rendered_from_the_gateway_alone(docs: Watched, site: Any) -> None:
    _, made = site
    schema = made["schema"]
    open_docs(docs, schema)
    rendered = sorted((m, p) for m, p in docs.page.evaluate(RENDERED))
    assert rendered == operations(schema) and len(rendered) >= 20
    assert docs.page.locator("#swagger-ui button.authorize").count() == 1  # the bearer scheme is offered
    assert docs.page.locator("#swagger-ui .opblock .authorization__btn").count() == len(rendered) - 2
    loaded = {urlsplit(u).path for u in docs.requests}
    assert {"/docs/swagger/swagger-ui-bundle.js", "/docs/swagger/swagger-ui.css", "/docs/docs.js"} <= loaded
    assert "/openapi.json" in loaded
    scan(docs, "docs")
    # One click per toggle, in one call (a Playwright click each takes most of a second here).
    docs.page.evaluate(
        "() => document.querySelectorAll('#swagger-ui .opblock-summary-control').forEach((b) => b.click())"
    )
    docs.until(f"() => document.querySelectorAll('#swagger-ui .opblock.is-open').length === {len(rendered)}")
    scan(docs, "docs-every-operation-open")
    models = len(made["schema"]["components"]["schemas"])
    docs.page.evaluate(
        "() => document.querySelectorAll('#swagger-ui section.models .json-schema-2020-12-expand-deep-button')"
        ".forEach((b) => b.click())"
    )
    docs.until(
        '(n) => document.querySelectorAll(\'#swagger-ui section.models [data-json-schema-level="0"] > '
        ".json-schema-2020-12-head > .json-schema-2020-12-accordion[aria-expanded=true]').length === n",
        models,
    )
    scan(docs, "docs-schemas-open")


def test_authorize_sends_the_bearer_token_to_the_gateway_and_nowhere_else(docs: Watched, site: Any) -> None:
    v, made = site
    calls: list[tuple[str, str, str | None]] = []
    docs.page.on("request", lambda r: calls.append((r.method, r.url, r.headers.get("authorization"))))
    open_docs(docs, made["schema"])
    op = operation(docs, "get", "/api/agents")
    op.locator(".opblock-summary-control").click()
    op.locator("button.try-out__btn").click()

    status, sent = execute(docs, op, calls, "/api/agents")
    assert status == "401" and sent is None  # not authorized yet: no header at all

    docs.page.click("#swagger-ui .scheme-container button.authorize")
    dialog = docs.page.locator("#swagger-ui .modal-ux")
    dialog.wait_for()
    assert "bearer" in dialog.inner_text() and "http, Bearer" in dialog.inner_text()
    assert dialog.get_by_role("textbox", name="Bearer token").count() == 1  # names fixed by docs.js
    assert dialog.locator("button.close-modal[aria-label=Close]").count() == 1
    scan(docs, "docs-authorize")
    dialog.locator("input").fill(made["chat_only"])
    dialog.locator("button[type=submit]").click()
    dialog.locator("button.btn-done").click()
    op.locator("button.btn-clear").click()
    status, sent = execute(docs, op, calls, "/api/agents")
    sent_device = sent == f"Bearer {made['chat_only']}"
    assert status == "403" and sent_device, status  # a device without 'read'; no token printed on failure

    docs.page.click("#swagger-ui .scheme-container button.authorize")
    dialog.locator(".auth-btn-wrapper button", has_text="Logout").click()
    dialog.locator("input").fill(v.token)
    dialog.locator("button[type=submit]").click()
    dialog.locator("h6", has_text="Authorized").wait_for()
    scan(docs, "docs-authorized")
    dialog.locator("button.btn-done").click()
    op.locator("button.btn-clear").click()
    status, sent = execute(docs, op, calls, "/api/agents")
    sent_owner = sent == f"Bearer {v.token}"
    assert status == "200" and sent_owner, status
    body = op.locator(".live-responses-table .response-col_description .highlight-code .microlight").inner_text()
    assert json.loads(body)[0]["id"] == "alice"
    # The curl command shows the header, not the token (booleans: a failure must not print it).
    curl = op.locator(".curl-command").inner_text()
    masked = "Authorization: Bearer <token>" in curl and "/api/agents" in curl
    assert masked, "the curl command does not show the Authorization header as a placeholder"
    spelled = v.token in docs.page.content() or v.token in docs.page.inner_text("body")
    assert not spelled, "the token is in the page"
    scan(docs, "docs-try-it-out")

    gateway = urlsplit(v.url).netloc
    assert all(urlsplit(url).netloc == gateway for _, url, auth in calls if auth)  # the token went nowhere else
    stored = v.token in docs.page.evaluate("JSON.stringify(localStorage) + JSON.stringify(sessionStorage)")
    assert not stored, "the token is in the page's storage"
    assert docs.page.evaluate("document.cookie") == ""
    docs.page.reload()  # the token lived in the page's memory only
    docs.page.locator("#swagger-ui .scheme-container button.authorize.unlocked").wait_for()


def test_the_address_cannot_point_the_page_at_another_schema(docs: Watched, site: Any) -> None:
    _, made = site
    evil = "https://schema.example.invalid/openapi.json"
    open_docs(docs, made["schema"], f"/docs?url={evil}&configUrl={evil}&urls.primaryName=x")
    assert sorted((m, p) for m, p in docs.page.evaluate(RENDERED)) == operations(made["schema"])
    assert not [u for u in docs.requests if urlsplit(u).hostname == "schema.example.invalid"]
    assert [urlsplit(u).path for u in docs.requests].count("/openapi.json") == 1
