// The viewer's shell: who is logged in, the hash router, errors. Pages live in pages/.
import { ApiError, get, post, setCsrf } from "/ui/static/api.js";
import { el, part } from "/ui/static/dom.js";
import { residentsPage, residentPage, sessionPage } from "/ui/static/pages/residents.js";
import { treePage } from "/ui/static/pages/tree.js";
import { repairsPage, repairPage } from "/ui/static/pages/repairs.js";
import { reportsPage, reportPage } from "/ui/static/pages/reports.js";

const main = document.getElementById("main");
const alertBox = document.getElementById("alert");
let me = null;
let teardown = null;

export function showError(err) {
  alertBox.textContent = err instanceof Error ? err.message : String(err);
  alertBox.hidden = false;
}

function clearError() {
  alertBox.hidden = true;
  alertBox.textContent = "";
}

function loginView(reason) {
  me = null;
  document.getElementById("nav").hidden = true;
  document.getElementById("logout").hidden = true;
  document.getElementById("who").textContent = "";
  const view = document.getElementById("login-template").content.cloneNode(true);
  main.replaceChildren(view);
  if (reason) showError(reason);
  document.title = "Log in · Kurahi viewer";
  const form = document.getElementById("login-form");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = document.getElementById("token");
    const token = input.value;
    input.value = "";  // the token leaves the page as soon as it is sent
    try {
      const who = await post("/ui/api/login", { token });
      clearError();
      signedIn(who);
      route();
    } catch (err) {
      showError(err);
    }
  });
}

function signedIn(who) {
  me = who;
  setCsrf(who.csrf);
  document.getElementById("nav").hidden = false;
  document.getElementById("logout").hidden = false;
  document.getElementById("who").textContent = `signed in as ${who.actor}`;
}

const routes = [
  [/^#?\/?$/, () => residentsPage()],
  [/^#\/resident\/([^/]+)$/, (m) => residentPage(part(m[1]))],
  [/^#\/session\/([^/]+)\/(.+)$/, (m) => sessionPage(part(m[1]), part(m[2]))],
  [/^#\/tree\/([^/]+)\/(.+)$/, (m) => treePage(part(m[1]), part(m[2]))],
  [/^#\/repairs$/, () => repairsPage()],
  [/^#\/repair\/(.+)$/, (m) => repairPage(part(m[1]))],
  [/^#\/reports$/, () => reportsPage()],
  [/^#\/report\/(.+)$/, (m) => reportPage(part(m[1]))],
];

async function route() {
  if (!me) return;
  if (teardown) { teardown(); teardown = null; }
  clearError();
  const hash = location.hash || "#/";
  for (const [re, page] of routes) {
    const m = hash.match(re);
    if (!m) continue;
    main.replaceChildren(el("p", "Loading…", { class: "note" }));
    try {
      const view = await page(m);
      main.replaceChildren(view.node);
      teardown = view.teardown || null;
      if (view.mounted) view.mounted();
      document.title = `${view.title} · Kurahi viewer`;
      document.body.dataset.page = view.page || "";
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        loginView("Your session ended (expired, logged out, or its credential was revoked): log in again.");
        return;
      }
      main.replaceChildren(el("h1", "Could not load this page"));
      showError(err);
      document.body.dataset.page = "error";
    }
    return;
  }
  main.replaceChildren(el("h1", "No such page"), el("p", "Use the links above.", { class: "note" }));
}

export function onSessionLost(err) {
  if (err instanceof ApiError && err.status === 401) {
    loginView("Your session ended (expired, logged out, or its credential was revoked): log in again.");
    return true;
  }
  return false;
}

document.getElementById("logout").addEventListener("click", async () => {
  try { await post("/ui/api/logout"); } catch (err) { if (!onSessionLost(err)) showError(err); return; }
  loginView("Logged out.");
});

window.addEventListener("hashchange", route);

(async () => {
  try {
    signedIn(await get("/ui/api/me"));
    route();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) loginView();
    else showError(err);
  }
})();
