// Times Pi's own open + buildSessionContext on one file, in a fresh node process.
// Prints one JSON line: {"seconds": [...], "median_s", "peak_rss_mb", "messages"}.
// Usage: node pi_open_project.mjs FILE [REPEAT]   (PI_PKG: package root, as for pi_context.mjs)
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const file = resolve(process.argv[2]);
const repeat = Number.parseInt(process.argv[3] ?? "3", 10);
const pkg = resolve(process.env.PI_PKG ?? ".peer/node_modules/@mariozechner/pi-coding-agent");
const { SessionManager } = await import(pathToFileURL(join(pkg, "dist", "index.js")).href);

// Pi may rewrite a file on open (migration); work on a private copy like pi_context.mjs does.
const work = mkdtempSync(join(tmpdir(), "pi-bench-"));
const copy = join(work, basename(file));
copyFileSync(file, copy);
const seconds = [];
let messages = 0;
try {
	for (let i = 0; i < repeat; i++) {
		const t0 = process.hrtime.bigint();
		const sm = SessionManager.open(copy, work);
		const ctx = sm.buildSessionContext();
		const t1 = process.hrtime.bigint();
		messages = ctx.messages.length;
		seconds.push(Number(t1 - t0) / 1e9);
	}
} finally {
	rmSync(work, { recursive: true, force: true });
}
const sorted = [...seconds].sort((a, b) => a - b);
const peak = process.resourceUsage().maxRSS / 1024;
console.log(JSON.stringify({ seconds, median_s: sorted[Math.floor(sorted.length / 2)], peak_rss_mb: peak, messages }));
