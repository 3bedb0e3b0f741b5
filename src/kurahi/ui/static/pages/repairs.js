// Activation packages: a stitched candidate beside its sources, the check, the live state.
import { get } from "/ui/static/api.js";
import { el, enc, facts, link, table } from "/ui/static/dom.js";

export async function repairsPage() {
  const rows = await get("/ui/api/repairs");
  const node = el("section");
  node.append(el("h1", "Repairs"));
  node.append(el("p", "Activation packages under the home's repairs/ folder (kurahi activate plan --out $KOLO_HOME/repairs/NAME).", { class: "note" }));
  node.append(rows.length
    ? table(null, ["package", "resident", "session key", "planned", "markers"],
      rows.map((r) => [link(r.name, `#/repair/${enc(r.name)}`), r.agent ?? el("span", r.error, { class: "unverified" }), r.key, r.createdAt, (r.markers || []).join(" · ")]))
    : el("p", "No packages.", { class: "note" }));
  return { node, title: "Repairs", page: "repairs" };
}

function column(col) {
  const box = el("section", undefined, { class: `column ${col.role}`, "aria-label": `${col.role} ${col.file}` });
  box.append(el("h3", `${col.role === "candidate" ? "Candidate" : "Source"}: ${col.file}`));
  box.append(facts([
    ["session id", col.sessionId], ["entries", col.entries], ["path", `${col.pathLength} entries to ${col.leafId ?? "—"}`],
    ["compactions", col.compactions], ["abandoned", `${col.abandoned} entries in ${col.sideBranches} side branches`],
  ]));
  for (const e of col.stitchEdges) {
    box.append(el("p", `re-parented: ${e.child} → ${e.parent}${e.onPath ? "" : " (off the path)"}`, { class: "pill stitch-edge" }));
  }
  const ol = el("ol");
  for (const it of col.items) {
    if (!it.node) {
      ol.append(el("li", `${it.label}`, { class: "folded" }));
      continue;
    }
    const cls = [];
    if (it.stitched) cls.push("stitched");
    const li = el("li", undefined, { class: cls.join(" ") });
    const text = `${it.kind} ${it.id} (line ${it.line})${it.flags.length ? " [" + it.flags.join(", ") + "]" : ""}${it.detail ? " — " + it.detail : ""}`;
    li.append(el("span", (it.stitched ? "⤷ stitch edge: " : "") + text));
    for (const m of it.markers) li.append(el("span", ` marker “${m}”`, { class: "pill" }));
    for (const s of it.side) li.append(el("span", ` abandoned branch ${s.first} (${s.size} entries)`, { class: "pill abandoned" }));
    ol.append(li);
  }
  box.append(ol);
  return box;
}

export async function repairPage(name) {
  const r = await get(`/ui/api/repairs/${enc(name)}`);
  const node = el("section");
  node.append(el("h1", `Repair ${r.name}`));
  if (r.error) {
    node.append(el("p", r.tampered ? "TAMPERED" : "UNREADABLE", { class: "loud unverified", id: "repair-status" }));
    node.append(el("p", r.error));
    return { node, title: `Repair ${r.name}`, page: "repair" };
  }
  const p = r.plan;
  node.append(facts([
    ["resident", p.agent], ["session key", p.key], ["planned", p.createdAt], ["candidate session", p.candidateSessionId],
    ["installs as", p.targetFile], ["markers", (p.markers || []).join(" · ") || "—"],
    ["phase", el("span", r.state.phase, { id: "repair-phase" })],
    ["catalog entry now", r.state.catalogEntry ?? r.state.error], ["target file now", r.state.target ?? "—"],
  ]));
  node.append(el("h2", "Preconditions"));
  const pre = p.preconditions;
  node.append(table(null, ["what", "sha256 / state"], [
    ["live transcript", `${pre.liveTranscript.name ?? "—"} ${pre.liveTranscript.sha256}`],
    ["catalog entry", pre.catalogEntry], ["candidate", pre.candidate],
    ["target", `${pre.target.name ?? "—"} ${pre.target.sha256}`],
  ]));
  const ck = r.check;
  node.append(el("h2", "Check of the candidate"));
  if (ck.error) {
    node.append(el("p", "CHECK FAILED", { class: "loud unverified" }), el("p", ck.error));
  } else {
    node.append(el("p", ck.ok ? "CHECK PASSES" : "CHECK FAILS", { class: `loud ${ck.ok ? "verified" : "unverified"}`, id: "check-verdict" }));
    node.append(facts([
      ["projections agree", ck.projectionsAgree ? "yes" : "NO"],
      ["messages", `${ck.messages} (reference ${ck.referenceMessages})`],
      ["runtime deciding", `${ck.runtime} (${ck.runtimeReason})`],
      ["operative compaction", (ck.compaction && ck.compaction.id) || "none"],
    ]));
    node.append(table("Markers", ["marker", "message index", "part", "runtime view index"],
      (ck.markers || []).map((m) => [m.marker, m.index ?? "MISSING", m.part ?? "—", m.runtimeIndex ?? "—"])));
    node.append(table("Runtime views", ["runtime", "messages", "note"],
      (ck.views || []).map((v) => [v.runtime, v.messages, v.note ?? v.reason ?? ""])));
    node.append(table("Token routes", ["reserve", "system prompt", "tokens", "route"],
      (ck.routes || []).map((x) => [x.reserveTokens, x.systemPromptTokens, x.contextTokens, el("span", x.route, { class: `route-${x.route}` })])));
  }
  node.append(el("h2", "Candidate beside its sources"));
  node.append(el("p", "Each column is one file's canonical path, top to bottom; plain stretches are folded. The stitch edge (re-parented root) is marked ⤷; abandoned branches are greyed.", { class: "note" }));
  const cols = el("div", undefined, { class: "columns", id: "columns" });
  for (const col of r.columns) cols.append(column(col));
  node.append(cols);
  for (const m of r.missingSources || []) node.append(el("p", `source not found in the home: ${m.path} (${m.sessionId})`, { class: "note" }));
  if (r.columnsError) node.append(el("p", r.columnsError, { class: "unverified" }));
  return { node, title: `Repair ${r.name}`, page: "repair" };
}
