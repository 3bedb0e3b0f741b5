// Residents, one resident (memory, jobs, devices, sessions), one session (catalog entry, lineage).
import { get } from "/ui/static/api.js";
import { el, enc, facts, link, table, when } from "/ui/static/dom.js";

export async function residentsPage() {
  const list = await get("/ui/api/residents");
  const node = el("section");
  node.append(el("h1", "Residents"));
  node.append(table(null, ["resident", "identity marker", "model profile", "provider / model", "sessions"],
    list.map((r) => [link(r.id, `#/resident/${enc(r.id)}`), r.marker ?? "no marker", r.model.profile,
      `${r.model.provider} / ${r.model.model}`, r.sessions])));
  return { node, title: "Residents", page: "residents" };
}

export async function residentPage(agent) {
  const [r, sessions] = await Promise.all([
    get(`/ui/api/residents/${enc(agent)}`),
    get(`/ui/api/agents/${enc(agent)}/sessions`),
  ]);
  const node = el("section");
  node.append(el("h1", `Resident ${r.id}`));
  node.append(facts([
    ["identity marker", r.marker ?? "no marker"],
    ["model profile", r.model.profile],
    ["provider / model", `${r.model.provider} / ${r.model.model}`],
    ["context window", `${r.model.contextWindow} tokens`],
    ["storage", r.backend],
  ]));
  node.append(el("h2", "Sessions"));
  node.append(table(null, ["session key", "session id", "status", "updated", "started", "last interaction", "compactions", ""],
    sessions.map((s) => [
      link(s.key, `#/session/${enc(agent)}/${enc(s.key)}`), s.sessionId, s.status ?? "—", when(s.updatedAt),
      when(s.sessionStartedAt), when(s.lastInteractionAt), s.compactionCount ?? 0,
      link("tree", `#/tree/${enc(agent)}/${enc(s.key)}`),
    ])));
  node.append(el("h2", "Memory files"));
  node.append(table(null, ["file", "bytes"], r.memory.map((m) => [m.name, m.symlink ? "symlink (not followed)" : m.size])));
  if (r.memoryNotListed) node.append(el("p", `${r.memoryNotListed} more not listed`, { class: "note" }));
  node.append(el("h2", "Jobs"));
  node.append(r.jobs.length
    ? table(null, ["job", "status", "session key", "created", "ended", "error"],
      r.jobs.map((j) => [j.id, statusCell(j.status), j.sessionKey ?? j.key, when(j.createdAt), when(j.endedAt), j.error]))
    : el("p", "No jobs.", { class: "note" }));
  node.append(el("h2", "Devices"));
  node.append(r.devices.length
    ? table("Paired devices (tokens are never shown)", ["device", "name", "scopes", "revoked"],
      r.devices.map((d) => [d.id, d.name, d.scopes.join(", "), d.revokedAt ? when(d.revokedAt) : "no"]))
    : el("p", "No paired devices.", { class: "note" }));
  return { node, title: `Resident ${r.id}`, page: "resident" };
}

function statusCell(status) {
  return el("span", status, { class: `status-${status === "succeeded" ? "pass" : status === "failed" ? "fail" : "skip"}` });
}

export async function sessionPage(agent, key) {
  const [sessions, lineage] = await Promise.all([
    get(`/ui/api/agents/${enc(agent)}/sessions`),
    get(`/ui/api/agents/${enc(agent)}/lineage?key=${enc(key)}`),
  ]);
  const s = sessions.find((x) => x.key === key);
  const node = el("section");
  node.append(el("h1", "Session"));
  node.append(el("p", key, { class: "mono", id: "session-key" }));
  node.append(link("Open the tree and the effective context", `#/tree/${enc(agent)}/${enc(key)}`));
  node.append(el("h2", "Catalog entry"));
  node.append(facts(Object.entries(s || {}).map(([k, v]) => [k, typeof v === "number" && /At$/.test(k) ? when(v) : v])));
  node.append(el("h2", `Lineage (${lineage.method})`));
  node.append(table(null, ["piece", "session id", "kind", "entries", "compactions", "first", "last"],
    (lineage.pieces || []).map((p) => [p.source, p.sessionId, p.kind, p.entryCount, p.compactionCount, p.firstEntryAt ?? p.headerAt ?? "—", p.lastEntryAt ?? "—"])));
  if ((lineage.boundaries || []).length) {
    node.append(el("h2", "Reset boundaries"));
    node.append(table(null, ["kind", "before", "after", "gap"],
      lineage.boundaries.map((b) => [b.kind, b.before, b.after, b.gapSeconds === undefined || b.gapSeconds === null ? "—" : `${b.gapSeconds} s`])));
  }
  for (const note of lineage.notes || []) node.append(el("p", note, { class: "note" }));
  return { node, title: `Session ${key}`, page: "session" };
}
