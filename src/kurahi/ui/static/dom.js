// Building the page. Every piece of data goes in through textContent (el's text argument) or
// an attribute set by name: never innerHTML, so nothing read from a transcript becomes markup.
export function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (attrs) {
    for (const [name, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "class") node.className = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  return node;
}

export function link(text, href) {
  return el("a", text, { href });
}

export function table(caption, headers, rows) {
  const t = el("table");
  if (caption) t.append(el("caption", caption, { class: "note" }));
  const head = el("tr");
  for (const h of headers) head.append(el("th", h, { scope: "col" }));
  const thead = el("thead");
  thead.append(head);
  const body = el("tbody");
  for (const row of rows) {
    const tr = el("tr");
    for (const cell of row) {
      const td = el("td");
      if (cell instanceof Node) td.append(cell);
      else td.textContent = cell === undefined || cell === null ? "—" : String(cell);
      tr.append(td);
    }
    body.append(tr);
  }
  t.append(thead, body);
  return t;
}

export function facts(pairs) {
  const dl = el("dl", undefined, { class: "facts" });
  for (const [k, v] of pairs) {
    const dd = el("dd");
    if (v instanceof Node) dd.append(v);
    else dd.textContent = v === undefined || v === null ? "—" : String(v);
    dl.append(el("dt", k), dd);
  }
  return dl;
}

export function when(ms) {
  if (typeof ms !== "number") return ms ?? "—";
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString().replace(".000Z", "Z");
}

// Route parts are URI-encoded in the hash; a part that does not decode is shown as it is.
export function part(s) {
  try { return decodeURIComponent(s); } catch { return s; }
}

export function enc(s) {
  return encodeURIComponent(s);
}
