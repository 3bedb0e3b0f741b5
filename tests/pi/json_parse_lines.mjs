// JSON.parse on every line of a file, the way Pi reads a transcript: the file is decoded as
// UTF-8 (invalid bytes become U+FFFD) and split on "\n". One JSON line out per line in:
//   {"ok": false}                          JSON.parse throws
//   {"ok": true, "object": false}          a value that is not a plain object
//   {"ok": true, "object": true, "kinds": [typeof type, typeof id, typeof parentId or "null"],
//    "type": ..., "id": ..., "parentId": ...}
// Usage: node json_parse_lines.mjs FILE
import { readFileSync } from "node:fs";

const text = readFileSync(process.argv[2], "utf8");
const out = [];
for (const line of text.split("\n")) {
	let v;
	try {
		v = JSON.parse(line);
	} catch {
		out.push('{"ok":false}');
		continue;
	}
	if (v === null || typeof v !== "object" || Array.isArray(v)) {
		out.push('{"ok":true,"object":false}');
		continue;
	}
	const kind = (x) => (x === null ? "null" : typeof x);
	const str = (x) => (typeof x === "string" ? x : null);
	out.push(
		JSON.stringify({
			ok: true,
			object: true,
			kinds: [kind(v.type), kind(v.id), kind(v.parentId)],
			type: str(v.type),
			id: str(v.id),
			parentId: str(v.parentId),
		}),
	);
}
process.stdout.write(out.join("\n") + "\n");
