// The API reference: reads /openapi.json and lists every operation. Schema text is set with
// textContent only, so nothing in the schema can become markup.
const el = (tag, text, cls) => {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (cls) node.className = cls;
  return node;
};

function operation(path, method, op) {
  const box = el("section", undefined, "op");
  const h = el("h3");
  h.append(el("span", method.toUpperCase(), `method ${method}`), el("span", path));
  box.append(h);
  if (op.summary) box.append(el("p", op.summary));
  if (op.description && op.description !== op.summary) box.append(el("p", op.description));
  const secured = op.security === undefined ? "bearer token" : op.security.length ? "bearer token" : "no credential";
  box.append(el("p", `Credential: ${secured}`));
  if (op.parameters && op.parameters.length) {
    const t = el("table");
    const head = el("tr");
    head.append(el("th", "parameter"), el("th", "in"), el("th", "required"));
    t.append(head);
    for (const p of op.parameters) {
      const row = el("tr");
      row.append(el("td", p.name), el("td", p.in), el("td", p.required ? "yes" : "no"));
      t.append(row);
    }
    box.append(t);
  }
  if (op.requestBody) {
    const details = el("details");
    details.append(el("summary", "request body"), el("pre", JSON.stringify(op.requestBody, null, 2)));
    box.append(details);
  }
  const answers = el("details");
  answers.append(el("summary", `answers: ${Object.keys(op.responses || {}).join(", ")}`));
  answers.append(el("pre", JSON.stringify(op.responses || {}, null, 2)));
  box.append(answers);
  return box;
}

async function main() {
  const main = document.getElementById("ops");
  try {
    const r = await fetch("/openapi.json", { credentials: "omit" });
    if (!r.ok) throw new Error(`GET /openapi.json answered ${r.status}`);
    const schema = await r.json();
    main.replaceChildren();
    const byTag = new Map();
    for (const [path, ops] of Object.entries(schema.paths || {})) {
      for (const [method, op] of Object.entries(ops)) {
        const tag = (op.tags && op.tags[0]) || "other";
        if (!byTag.has(tag)) byTag.set(tag, []);
        byTag.get(tag).push(operation(path, method, op));
      }
    }
    for (const [tag, boxes] of byTag) {
      main.append(el("h2", tag), ...boxes);
    }
    const schemes = el("details");
    schemes.append(el("summary", "security schemes"));
    schemes.append(el("pre", JSON.stringify((schema.components || {}).securitySchemes || {}, null, 2)));
    main.append(el("h2", "security"), schemes);
  } catch (err) {
    main.replaceChildren(el("p", `The schema could not be read: ${err.message}`));
  }
}

main();
