// A session's tree, virtualised: only the rows in view (and a few around) are in the DOM.
// Rows come from the gateway a block at a time; scrolling reuses a fixed pool of nodes.
import { get } from "/ui/static/api.js";
import { el, enc, facts } from "/ui/static/dom.js";
import { onSessionLost, showError } from "/ui/static/app.js";

const ROW = 24;          // px, as in style.css
const BLOCK = 200;       // rows fetched per request
const OVERSCAN = 12;     // rows drawn above and below the view
const INDENT = 14;       // px per branch level
const MAX_INDENT = 24;   // levels drawn; deeper rows say their depth

function rowText(r) {
  if (r.run) {
    const kinds = r.kinds.map(([k, c]) => `${c} ${k}`).join(", ");
    return `▸ ${r.count} entries folded (${kinds})${r.flags.includes("context") ? " · in context" : ""}`;
  }
  const tags = [];
  if (r.flags.includes("root")) tags.push("root");
  if (r.flags.includes("leaf")) tags.push("LEAF");
  if (r.flags.includes("branch")) tags.push(`branch×${r.children}`);
  if (r.flags.includes("compaction")) tags.push(r.flags.includes("operative") ? "COMPACTION (operative)" : "compaction");
  if (r.flags.includes("edit")) tags.push(r.flags.includes("inert") ? "edit (inert)" : "edit");
  if (r.flags.includes("removed")) tags.push("removed by edit");
  if (r.flags.includes("replaced")) tags.push("replaced by edit");
  if (r.flags.includes("leafMove")) tags.push("leaf move");
  if (r.label) tags.push(`label “${r.label}”`);
  const depth = r.depth > MAX_INDENT ? `[${r.depth}] ` : "";
  const kind = r.role ? `${r.role}` : r.type;
  return `${depth}${tags.length ? "[" + tags.join(" · ") + "] " : ""}${kind} ${r.id ?? ""} — ${r.preview}`;
}

export async function treePage(agent, key) {
  const base = `/ui/api/agents/${enc(agent)}`;
  const q = `key=${enc(key)}`;
  let expanded = new Set();
  let all = false;
  const expandParam = () => (all ? "all" : [...expanded].join(","));
  const started = performance.now();
  const first = await get(`${base}/tree?${q}&offset=0&limit=${BLOCK}&expand=`);
  let total = first.total;
  let blocks = new Map([[0, first.rows]]);
  let pending = new Set();
  let generation = 0;
  let selected = null;

  const node = el("section");
  node.append(el("h1", "Session tree"));
  node.append(el("p", key, { class: "mono", id: "session-key" }));
  const c = first.context;
  const b = c.budget;
  node.append(facts([
    ["entries", `${first.entries} (${first.bytes} bytes), ${first.runs} linear runs folded`],
    ["leaf", c.leafId ?? "—"],
    ["effective context", `${c.messages} messages from ${c.contextEntries} entries on a path of ${c.pathEntries}` +
      (c.compactionId ? `, after compaction ${c.compactionId}` : "") +
      (c.removed || c.replaced ? ` (${c.removed} removed, ${c.replaced} replaced by context edits)` : "")],
    ["token pressure", `${b.contextTokens} of ${b.contextWindow} tokens (reserve ${b.reserveTokens}; headroom ${b.headroom})`],
    ["budget route", el("span", b.route, { class: `route-${b.route}`, id: "budget-route" })],
  ]));
  const bar = el("div", undefined, { class: "toolbar" });
  const toggle = el("button", "Expand every run", { type: "button", id: "expand-all" });
  const toLeaf = el("button", "Go to the leaf", { type: "button", id: "go-leaf" });
  const findLabel = el("label", "Entry id", { for: "find-id" });
  const findInput = el("input", undefined, { id: "find-id", type: "search", autocomplete: "off" });
  const findBtn = el("button", "Find", { type: "button", id: "find" });
  const count = el("span", "", { class: "note", id: "row-count", "aria-live": "polite" });
  bar.append(toggle, toLeaf, findLabel, findInput, findBtn, count);
  node.append(bar);
  node.append(el("p", "Green rows are what the model is sent next; grey rows are off the leaf's path (abandoned branches). Select a row to see its raw line.", { class: "note" }));

  const wrap = el("div", undefined, { class: "tree-wrap" });
  const scroller = el("div", undefined, { class: "vlist", id: "tree", tabindex: "0", role: "region", "aria-label": "Entries of the session, in tree order" });
  const list = el("ul", undefined, { "aria-label": "tree rows" });
  scroller.append(list);
  const panel = el("section", undefined, { id: "entry-panel", "aria-label": "Selected entry" });
  panel.append(el("h2", "Raw line"), el("p", "Select a row.", { class: "note" }));
  wrap.append(scroller, panel);
  node.append(wrap);

  const pool = [];
  function sizeList() {
    list.style.height = `${total * ROW}px`;
    count.textContent = `${total} rows`;
  }

  async function load(blockNo) {
    if (blocks.has(blockNo) || pending.has(blockNo)) return;
    pending.add(blockNo);
    const gen = generation;
    try {
      const page = await get(`${base}/tree?${q}&offset=${blockNo * BLOCK}&limit=${BLOCK}&expand=${enc(expandParam())}`);
      if (gen !== generation) return;
      blocks.set(blockNo, page.rows);
      for (const li of pool) if (Math.floor(li.shows / BLOCK) === blockNo) li.shows = -1;
      if (page.total !== total) { total = page.total; sizeList(); }
      draw();
    } catch (err) {
      if (!onSessionLost(err)) showError(err);
    } finally {
      pending.delete(blockNo);
    }
  }

  function rowAt(i) {
    const rows = blocks.get(Math.floor(i / BLOCK));
    return rows ? rows[i % BLOCK] : undefined;
  }

  let frame = 0;
  function schedule() {
    if (!frame) frame = requestAnimationFrame(() => { frame = 0; draw(); });
  }

  function draw() {
    const top = scroller.scrollTop;
    const height = scroller.clientHeight || 600;
    const firstRow = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    const lastRow = Math.min(total, Math.ceil((top + height) / ROW) + OVERSCAN);
    const needed = lastRow - firstRow;
    while (pool.length < needed) {
      const li = el("li");
      const btn = el("button", "", { type: "button" });
      li.append(btn);
      btn.addEventListener("click", () => choose(li.dataset.row));
      pool.push(li);
      list.append(li);
    }
    // Each pooled node keeps the row it shows: only nodes that change rows (or whose row
    // just arrived) are rewritten, so a frame of scrolling lays out a handful of rows, not all.
    for (let k = 0; k < pool.length; k++) {
      const li = pool[k];
      const i = firstRow + ((k - firstRow) % pool.length + pool.length) % pool.length;
      if (i >= lastRow) {
        if (!li.hidden) { li.hidden = true; li.shows = -1; }
        continue;
      }
      const r = rowAt(i);
      const state = r ? (r.id === selected ? 2 : 1) : 0;
      if (li.shows === i && li.state === state && !li.hidden) continue;
      li.hidden = false;
      li.shows = i;
      li.state = state;
      li.style.transform = `translateY(${i * ROW}px)`;
      li.dataset.row = String(i);
      const btn = li.firstChild;
      if (!r) {
        btn.textContent = "…";  // a placeholder until its block arrives
        li.className = "";
        load(Math.floor(i / BLOCK));
        continue;
      }
      btn.textContent = rowText(r);
      btn.style.paddingLeft = `${6 + Math.min(r.depth, MAX_INDENT) * INDENT}px`;
      const cls = [];
      if (r.run) cls.push("run");
      if (r.flags.includes("context")) cls.push("ctx");
      if (r.flags.includes("side")) cls.push("side");
      if (r.flags.includes("removed")) cls.push("removed");
      if (state === 2) cls.push("selected");
      li.className = cls.join(" ");
      if (r.id) li.dataset.id = r.id; else delete li.dataset.id;
    }
    prefetch(firstRow, lastRow);
  }

  // The blocks just above and below the view are asked for before they are reached.
  function prefetch(firstRow, lastRow) {
    const below = Math.floor((lastRow + BLOCK / 2) / BLOCK);
    const above = Math.floor(Math.max(0, firstRow - BLOCK / 2) / BLOCK);
    if (below * BLOCK < total) load(below);
    load(above);
  }

  function reset() {
    generation += 1;
    blocks = new Map();
    pending = new Set();
    for (const li of pool) li.shows = -1;
    draw();
  }

  async function choose(rowNo) {
    const r = rowAt(Number(rowNo));
    if (!r) return;
    if (r.run) {
      expanded.add(r.pos);
      reset();
      return;
    }
    selected = r.id;
    draw();
    try {
      const raw = await get(`${base}/entry?${q}&id=${enc(r.id)}`);
      showRaw(raw);
    } catch (err) {
      if (!onSessionLost(err)) showError(err);
    }
  }

  function showRaw(raw) {
    const parts = [el("h2", "Raw line")];
    parts.push(facts([["entry", raw.id], ["line", raw.line], ["bytes", raw.bytes], ["flags", raw.flags.join(", ") || "—"]]));
    if (raw.truncated) {
      parts.push(el("p", `This line is ${raw.bytes} bytes: only its first ${raw.raw.length} characters are shown. The whole line: GET /api/agents/…/session/transcript.`, { class: "alert", id: "raw-truncated" }));
    }
    parts.push(el("pre", raw.raw, { class: "raw", id: "raw-line", tabindex: "0", "aria-label": `raw line ${raw.line}` }));
    panel.replaceChildren(...parts);
  }

  async function goTo(id) {
    try {
      const at = await get(`${base}/locate?${q}&id=${enc(id)}&expand=${enc(expandParam())}`);
      if (at.run !== null && at.run !== undefined) { expanded.add(at.run); reset(); }
      const again = at.run !== null && at.run !== undefined
        ? await get(`${base}/locate?${q}&id=${enc(id)}&expand=${enc(expandParam())}`) : at;
      scroller.scrollTop = Math.max(0, again.row * ROW - scroller.clientHeight / 2);
      selected = id;
      draw();
      const raw = await get(`${base}/entry?${q}&id=${enc(id)}`);
      showRaw(raw);
    } catch (err) {
      if (!onSessionLost(err)) showError(err);
    }
  }

  toggle.addEventListener("click", () => {
    all = !all;
    toggle.textContent = all ? "Fold linear runs" : "Expand every run";
    reset();
  });
  toLeaf.addEventListener("click", () => { if (c.leafId) goTo(c.leafId); });
  findBtn.addEventListener("click", () => { if (findInput.value) goTo(findInput.value); });
  scroller.addEventListener("scroll", schedule, { passive: true });

  return {
    node,
    title: "Session tree",
    page: "tree",
    mounted() {
      sizeList();
      draw();
      // The first paint with rows: the benchmark and the tests read this mark.
      performance.mark("kurahi-tree-painted", { detail: { ms: performance.now() - started } });
      document.body.dataset.treeReady = "1";
    },
    teardown() { delete document.body.dataset.treeReady; },
  };
}
