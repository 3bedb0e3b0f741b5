// Continuity reports: verified by the gateway on every view. UNVERIFIED is as loud as FAIL.
import { get } from "/ui/static/api.js";
import { el, enc, facts, link, table } from "/ui/static/dom.js";

function verdict(r) {
  return el("span", r.verified ? r.verdict : `${r.verdict} · UNVERIFIED`, { class: r.verified && r.verdict === "PASS" ? "verified" : "unverified" });
}

export async function reportsPage() {
  const data = await get("/ui/api/reports");
  const node = el("section");
  node.append(el("h1", "Continuity reports"));
  node.append(el("p", "Reports under the home's reports/ folder (kurahi continuity run --out $KOLO_HOME/reports/NAME), each re-verified now.", { class: "note" }));
  node.append(el("h2", "Latest per resident"));
  node.append(table(null, ["resident", "report", "created", "verdict"],
    data.latest.map((r) => [r.resident ?? "(unreadable)", link(r.name, `#/report/${enc(r.name)}`), r.createdAt, verdict(r)])));
  node.append(el("h2", "All reports"));
  node.append(table(null, ["report", "resident", "created", "verdict", "badge"],
    data.reports.map((r) => [link(r.name, `#/report/${enc(r.name)}`), r.resident, r.createdAt, verdict(r), el("code", r.badge ?? "")])));
  return { node, title: "Continuity reports", page: "reports" };
}

export async function reportPage(name) {
  const r = await get(`/ui/api/reports/${enc(name)}`);
  const node = el("section");
  node.append(el("h1", `Continuity report ${r.name}`));
  const ok = r.verified && r.verdict === "PASS";
  node.append(el("p", r.verified ? `${r.verdict} · VERIFIED` : `${r.verdict} · UNVERIFIED`, { class: `loud ${ok ? "verified" : "unverified"}`, id: "report-status" }));
  if (!r.verified) {
    node.append(el("p", "This report does not recompute: do not trust its claims.", { class: "unverified" }));
    node.append(table("Why it does not verify", ["problem"], (r.problems || []).map((p) => [p])));
  }
  if (r.unreadable) return { node, title: `Report ${r.name}`, page: "report" };
  node.append(facts([
    ["resident", r.resident], ["created", r.createdAt], ["claimed verdict", r.claimedVerdict],
    ["counts", r.summary ? `pass ${r.summary.pass} · fail ${r.summary.fail} · skip ${r.summary.skip}` : "—"],
    ["digest", el("code", r.digest ?? "—")], ["badge", el("code", r.badge, { id: "badge" })],
    ["checked", (r.checked || []).join("; ")],
  ]));
  for (const run of r.runs) {
    node.append(el("h2", `Disruption: ${run.disruption}`));
    node.append(table(null, ["manifest", "root", "signer fingerprint"], [
      ["before", el("code", run.before.root ?? "—"), el("code", run.before.fingerprint ?? "—")],
      ["after", el("code", run.after.root ?? "—"), el("code", run.after.fingerprint ?? "—")],
    ]));
    node.append(table(null, ["invariant", "status", "detail"],
      run.invariants.map((i) => [`${i.id}${i.name ? " " + i.name : ""}`, el("span", String(i.status).toUpperCase(), { class: i.status === "pass" || i.status === "skip" ? `status-${i.status}` : "status-fail" }), i.detail])));
  }
  return { node, title: `Report ${r.name}`, page: "report" };
}
