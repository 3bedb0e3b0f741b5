// Pi's own SessionManager.open + buildSessionContext on many files in one node process.
// Reads one file path per line on stdin; prints one JSON line per file:
// {"file", "leafId", "leafIdUndefined"?, "messages", "thinkingLevel", "model"} or {"file", "error"}.
// Each file is opened through a private copy (Pi may rewrite what it opens).
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = resolve(process.env.PI_PKG ?? ".peer/node_modules/@mariozechner/pi-coding-agent");
// session-manager.js is where index.js takes SessionManager from, without the rest (3-4 s).
const { SessionManager } = await import(pathToFileURL(join(pkg, "dist", "core", "session-manager.js")).href);
// Read stdin as a stream: readFileSync(0) fails with EAGAIN on a large non-blocking pipe.
let input = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) input += chunk;
const files = input.split("\n").filter((l) => l.trim());
const work = mkdtempSync(join(tmpdir(), "pi-batch-"));
try {
	for (const [i, file] of files.entries()) {
		const copy = join(work, `${i}-${basename(file)}`);
		copyFileSync(file, copy);
		try {
			const sm = SessionManager.open(copy, work);
			const ctx = sm.buildSessionContext();
			const leaf = sm.getLeafId();
			const out = { file, leafId: leaf === undefined ? null : leaf, messages: ctx.messages, thinkingLevel: ctx.thinkingLevel, model: ctx.model };
			if (leaf === undefined) out.leafIdUndefined = true;
			process.stdout.write(`${JSON.stringify(out)}\n`);
		} catch (err) {
			process.stdout.write(`${JSON.stringify({ file, error: String(err?.message ?? err) })}\n`);
		}
	}
} finally {
	rmSync(work, { recursive: true, force: true });
}
