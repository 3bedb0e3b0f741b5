// Pi's own session code, run on many files in one node process: the project's peer harness.
//
//   node pi_peer.mjs write          stdin: JSON array of {"out": PATH, "script": [op, ...]}
//   node pi_peer.mjs read           stdin: one file path per line
//   node pi_peer.mjs at             stdin: JSON array of {"file": PATH, "leafId": ID | null}
//   node pi_peer.mjs report [--seed-ids]   stdin: one file path per line
//   node pi_peer.mjs time [--runs N] [--warmup W]   stdin: one file path per line
//
// PI_PKG names the package root of either Pi (0.73.1, @mariozechner/pi-coding-agent, or 1.6.0,
// @earendil-works/pi-coding-agent); the same script drives both, since the session module's
// exports we use have the same names in each.
//
// write: for each item, SessionManager.open(out, dirname(out)) (a new session at `out` when it does
// not exist), then runs the ops below: "as": NAME binds the returned id, and "$NAME", "$prev",
// "$leaf" refer to ids. Prints one JSON line per item: {out, file, exists, leafId, ids, error?}.
// `file` is where Pi's session ended up (createBranchedSession switches files); `exists` is false
// when Pi never wrote it (its first write waits for a conversation message).
//
// read: {file, leafId, leafIdUndefined?, messages, thinkingLevel, model} per file (Pi's open + build).
// at: the same, but after moving Pi's leaf in memory (branch(leafId), or resetLeaf() for null)
// before building the context: Pi's projection of the file at that entry.
// context: for each file, the very bytes of JSON.stringify({leafId, thinkingLevel, model, messages})
// after open + buildSessionContext (Kurahi's `session context --json` shape), on one line; or
// {"error": ...} when Pi cannot open it. --no-copy opens the file itself (for benchmarks, on a
// version-3 file that ends with a newline, which Pi does not change; the caller checks).
// report: everything Pi makes of a file: read's fields plus entryCount, rewritten (whether open
// changed the bytes of the copy it worked on), branch, labels, tree (getTree() as nested
// {id, type, label?, children}), llmMessages (convertToLlm), tokens / tokensPerMessage
// (estimateTokens), contextTokens (estimateContextTokens), projectedTokens (1.6.0's
// estimateProjectedContextTokens over buildSessionProjection and getBranch) and pkgVersion. --seed-ids makes the
// ids that v1 migration draws repeatable (00000001-0000-4000-8000-000000000000, ... per file).
//
// time: for each file, W untimed then N timed rounds of: copy the file to a fresh private path
// (not timed), then SessionManager.open + buildSessionContext (timed). Prints one JSON line per
// file: {file, pkgVersion, runs, warmup, ms (each timed round), medianMs, minMs, maxMs, copyMs
// (the copies' total, timed or not), messages, peakRssMb}. peakRssMb is the process's peak so far
// (process.resourceUsage().maxRSS), so with several files it is the largest of them; run one file
// per process for a per-file figure. Defaults: --runs 5 --warmup 1.
//
// Every mode works on a private copy: SessionManager.open rewrites migrated files, replaces some
// invalid ones and (1.6.0) appends a newline to a file without one. Only the session module and
// its two neighbours are imported: the whole agent through dist/index.js takes seconds.
// Output lines are JSON; split them on "\n" only (JSON.stringify leaves U+2028/U+2029 raw).
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = resolve(process.env.PI_PKG ?? ".peer/node_modules/@earendil-works/pi-coding-agent");
const mode = process.argv[2];
const seedIds = process.argv.includes("--seed-ids");

// session-manager.js imports randomUUID from "crypto"; builtin ESM exports follow the CJS object
// after syncBuiltinESMExports(), so this must run before that module is imported.
let uuidCounter = 0;
if (seedIds) {
	const cryptoCjs = createRequire(import.meta.url)("crypto");
	cryptoCjs.randomUUID = () => `${(++uuidCounter).toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
	syncBuiltinESMExports();
}
const core = (...parts) => pathToFileURL(join(pkg, "dist", "core", ...parts)).href;
// --full-import: load the whole agent first, as Pi's own command does before it opens a session
// (benchmarks report Pi both ways; tests never need it).
if (process.argv.includes("--full-import")) await import(pathToFileURL(join(pkg, "dist", "index.js")).href);
const { SessionManager } = await import(core("session-manager.js"));

const NO_USAGE = {
	input: 0,
	output: 0,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: 0,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

// Optional keys are left out when the op does not give them, as a JS object literal would.
function withOptional(obj, extra) {
	for (const [k, v] of Object.entries(extra)) if (v !== undefined) obj[k] = v;
	return obj;
}

function runScript(sm, ops) {
	const names = {};
	let previous = null;
	const resolveRef = (v) => {
		if (typeof v !== "string" || !v.startsWith("$")) return v;
		if (v === "$prev") return previous;
		if (v === "$leaf") return sm.getLeafId();
		const name = v.slice(1);
		if (!Object.hasOwn(names, name)) throw new Error(`unknown reference ${v}`);
		return names[name];
	};
	for (const [i, op] of ops.entries()) {
		try {
			previous = runOp(sm, op, resolveRef);
		} catch (err) {
			throw new Error(`op #${i} (${op.op}): ${err?.message ?? err}`);
		}
		if (op.as) names[op.as] = previous;
	}
	return names;
}

// Runs one op; returns the id it produced (what "as" binds and "$prev" refers to).
function runOp(sm, op, resolveRef) {
	let result;
	switch (op.op) {
		case "appendMessage":
			result = sm.appendMessage(op.message);
			break;
		case "user":
			result = sm.appendMessage({ role: "user", content: op.content ?? op.text ?? "", timestamp: op.timestamp ?? Date.now() });
			break;
		case "assistant": {
			const content = op.content ?? [{ type: "text", text: op.text ?? "" }];
			const message = {
				role: "assistant",
				content,
				api: op.api ?? "anthropic-messages",
				provider: op.provider ?? "anthropic",
				model: op.model ?? "claude-sonnet-4-5",
				usage: op.usage ?? NO_USAGE,
				stopReason: op.stopReason ?? (content.some((b) => b?.type === "toolCall") ? "toolUse" : "stop"),
			};
			withOptional(message, { errorMessage: op.errorMessage });
			message.timestamp = op.timestamp ?? Date.now();
			result = sm.appendMessage(message);
			break;
		}
		case "toolResult": {
			const message = {
				role: "toolResult",
				toolCallId: op.toolCallId,
				toolName: op.toolName,
				content: op.content ?? [{ type: "text", text: op.text ?? "" }],
			};
			withOptional(message, { details: op.details });
			message.isError = op.isError ?? false;
			message.timestamp = op.timestamp ?? Date.now();
			result = sm.appendMessage(message);
			break;
		}
		case "bashExecution": {
			const message = {
				role: "bashExecution",
				command: op.command,
				output: op.output ?? "",
				exitCode: op.exitCode,
				cancelled: op.cancelled ?? false,
				truncated: op.truncated ?? false,
			};
			withOptional(message, { fullOutputPath: op.fullOutputPath, excludeFromContext: op.excludeFromContext });
			message.timestamp = op.timestamp ?? Date.now();
			result = sm.appendMessage(message);
			break;
		}
		case "appendThinkingLevelChange":
			result = sm.appendThinkingLevelChange(op.thinkingLevel);
			break;
		case "appendModelChange":
			result = sm.appendModelChange(op.provider, op.modelId);
			break;
		case "system": {
			// A system-role message (1.6.0): prompt state that compaction carries in its entry.
			const message = { role: "system", content: op.content ?? op.text ?? "" };
			withOptional(message, { sections: op.sections });
			message.timestamp = op.timestamp ?? Date.now();
			result = sm.appendMessage(message);
			break;
		}
		case "appendContextEdit":
			// 1.6.0 only: replacement is {content} or null (drop the target from the model's view).
			result = sm.appendContextEdit(resolveRef(op.targetId), op.replacement);
			break;
		case "appendUsage":
			// 1.6.0 only: returns the entry, not its id.
			result = sm.appendUsage(op.kind, op.provider, op.model, op.usage ?? NO_USAGE, op.note).id;
			break;
		case "appendCompaction":
			// 1.6.0 takes a sixth argument (the summary's usage) and adds the current systemMessage itself.
			result = sm.appendCompaction(op.summary, resolveRef(op.firstKeptEntryId), op.tokensBefore, op.details, op.fromHook, op.usage);
			break;
		case "branch":
			sm.branch(resolveRef(op.id));
			result = sm.getLeafId();
			break;
		case "resetLeaf":
			sm.resetLeaf();
			result = null;
			break;
		case "branchWithSummary":
			result = sm.branchWithSummary(resolveRef(op.branchFromId ?? null), op.summary, op.details, op.fromHook);
			break;
		case "appendCustomEntry":
			result = sm.appendCustomEntry(op.customType, op.data);
			break;
		case "appendCustomMessageEntry":
			result = sm.appendCustomMessageEntry(op.customType, op.content, op.display, op.details);
			break;
		case "appendLabelChange":
			result = sm.appendLabelChange(resolveRef(op.targetId), op.label);
			break;
		case "appendSessionInfo":
			result = sm.appendSessionInfo(op.name);
			break;
		case "createBranchedSession":
			sm.createBranchedSession(resolveRef(op.leafId));
			result = sm.getLeafId();
			break;
		default:
			throw new Error(`unknown op ${JSON.stringify(op.op)}`);
	}
	return result;
}

// stdin, read as a stream: readFileSync(0) throws EAGAIN on a pipe that something has made
// non-blocking (importing Pi's dist/index.js does) once the input outgrows the pipe buffer.
async function readStdin() {
	const chunks = [];
	for await (const chunk of process.stdin) chunks.push(chunk);
	return Buffer.concat(chunks).toString("utf8");
}

function write(items) {
	for (const { out, script } of items) {
		const target = resolve(out);
		const report = { out };
		let sm;
		try {
			sm = SessionManager.open(target, dirname(target));
			report.ids = runScript(sm, script);
		} catch (err) {
			report.error = String(err?.stack ?? err);
		}
		const file = sm?.getSessionFile() ?? target;
		report.file = file;
		report.exists = existsSync(file);
		report.leafId = sm?.getLeafId() ?? null;
		process.stdout.write(`${JSON.stringify(report)}\n`);
	}
}

function read(items) {
	const work = mkdtempSync(join(tmpdir(), "pi-read-batch-"));
	try {
		for (const [i, { file, leafId }] of items.entries()) {
			const copy = join(work, `${i}-${basename(file)}`);
			copyFileSync(file, copy);
			try {
				const sm = SessionManager.open(copy, work);
				if (leafId === null) sm.resetLeaf();
				else if (leafId !== undefined) sm.branch(leafId);
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
}

function treeJson(nodes) {
	return nodes.map((n) => {
		const out = { id: n.entry.id ?? null, type: n.entry.type };
		if (n.label !== undefined) out.label = n.label;
		out.children = treeJson(n.children);
		return out;
	});
}

function attempt(out, key, fn) {
	try {
		out[key] = fn();
	} catch (err) {
		out[key] = null;
		out[`${key}Error`] = String(err?.message ?? err);
	}
}

async function report(files) {
	const { convertToLlm } = await import(core("messages.js"));
	const { estimateTokens, estimateContextTokens, estimateProjectedContextTokens } = await import(core("compaction", "compaction.js"));
	const pkgVersion = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
	const work = mkdtempSync(join(tmpdir(), "pi-report-"));
	try {
		for (const [i, file] of files.entries()) {
			uuidCounter = 0;
			const copy = join(work, `${i}.jsonl`);
			copyFileSync(file, copy);
			const before = readFileSync(copy);
			const out = { file, pkgVersion };
			try {
				const sm = SessionManager.open(copy, work);
				const ctx = sm.buildSessionContext();
				const leaf = sm.getLeafId();
				out.leafId = leaf === undefined ? null : leaf;
				if (leaf === undefined) out.leafIdUndefined = true;
				out.entryCount = sm.getEntries().length;
				out.rewritten = !before.equals(readFileSync(copy));
				out.branch = sm.getBranch().map((e) => e.id ?? null);
				const labels = {};
				for (const e of sm.getEntries()) {
					const label = sm.getLabel(e.id);
					if (label !== undefined) labels[e.id] = label;
				}
				out.labels = labels;
				out.tree = treeJson(sm.getTree());
				out.messages = ctx.messages;
				out.thinkingLevel = ctx.thinkingLevel;
				out.model = ctx.model;
				attempt(out, "llmMessages", () => convertToLlm(ctx.messages));
				attempt(out, "tokensPerMessage", () => ctx.messages.map((m) => estimateTokens(m)));
				out.tokens = out.tokensPerMessage === null ? null : out.tokensPerMessage.reduce((a, b) => a + b, 0);
				attempt(out, "contextTokens", () => estimateContextTokens(ctx.messages));
				// 1.6.0 only: the estimate that distrusts usage captured before a later edit or compaction.
				if (estimateProjectedContextTokens)
					attempt(out, "projectedTokens", () => estimateProjectedContextTokens(sm.buildSessionProjection(), sm.getBranch()));
			} catch (err) {
				out.error = String(err?.message ?? err);
				out.rewritten = !before.equals(readFileSync(copy));
			}
			process.stdout.write(`${JSON.stringify(out)}\n`);
		}
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
}

function flag(name, fallback) {
	const i = process.argv.indexOf(name);
	if (i < 0) return fallback;
	const value = Number.parseInt(process.argv[i + 1], 10);
	if (!Number.isInteger(value) || value < 0) {
		process.stderr.write(`${name} needs a whole number >= 0, not ${JSON.stringify(process.argv[i + 1])}\n`);
		process.exit(2);
	}
	return value;
}

function time(files) {
	const runs = Math.max(1, flag("--runs", 5));
	const warmup = flag("--warmup", 1);
	const pkgVersion = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
	const work = mkdtempSync(join(tmpdir(), "pi-time-"));
	try {
		for (const file of files) {
			const ms = [];
			let copyMs = 0;
			let messages = 0;
			for (let i = 0; i < warmup + runs; i++) {
				const c0 = performance.now();
				const copy = join(work, `${i}.jsonl`);
				copyFileSync(file, copy);
				const t0 = performance.now();
				const ctx = SessionManager.open(copy, work).buildSessionContext();
				const t1 = performance.now();
				copyMs += t0 - c0;
				messages = ctx.messages.length;
				if (i >= warmup) ms.push(t1 - t0);
				rmSync(copy, { force: true });
			}
			const sorted = [...ms].sort((a, b) => a - b);
			const mid = sorted.length >> 1;
			const medianMs = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
			const peakRssMb = process.resourceUsage().maxRSS / 1024;
			const out = { file, pkgVersion, runs, warmup, ms, medianMs, minMs: sorted[0], maxMs: sorted.at(-1), copyMs, messages, peakRssMb };
			process.stdout.write(`${JSON.stringify(out)}\n`);
		}
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
}

function context(files) {
	const work = mkdtempSync(join(tmpdir(), "pi-context-"));
	const inPlace = process.argv.includes("--no-copy");
	try {
		for (const [i, file] of files.entries()) {
			const copy = inPlace ? file : join(work, `${i}.jsonl`);
			if (!inPlace) copyFileSync(file, copy);
			try {
				const sm = SessionManager.open(copy, work);
				const ctx = sm.buildSessionContext();
				const out = { leafId: sm.getLeafId(), thinkingLevel: ctx.thinkingLevel, model: ctx.model, messages: ctx.messages };
				process.stdout.write(`${JSON.stringify(out)}\n`);
			} catch (err) {
				process.stdout.write(`${JSON.stringify({ error: String(err?.message ?? err) })}\n`);
			}
		}
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
}

const lines = (text) => text.split("\n").filter((l) => l.trim());
if (mode === "write") write(JSON.parse(await readStdin()));
else if (mode === "read") read(lines(await readStdin()).map((file) => ({ file })));
else if (mode === "at") read(JSON.parse(await readStdin()));
else if (mode === "report") await report(lines(await readStdin()));
else if (mode === "context") context(lines(await readStdin()));
else if (mode === "time") time(lines(await readStdin()));
else {
	process.stderr.write("usage: node pi_peer.mjs write|read|at|context [--no-copy] [--full-import]|report [--seed-ids] | time [--runs N] [--warmup W]  (input on stdin)\n");
	process.exit(2);
}
