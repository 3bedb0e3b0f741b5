// Pi's own SessionManager, many session files in one node process (for the differential tests).
//
//   node pi_write_batch.mjs write   stdin: JSON array of {"out": PATH, "script": [op, ...]}
//   node pi_write_batch.mjs read    stdin: one file path per line
//   node pi_write_batch.mjs at      stdin: JSON array of {"file": PATH, "leafId": ID | null}
//
// write: for each item, SessionManager.open(out, dirname(out)) (a new session at `out` when it does
// not exist), then runs the ops, which are those of /work/shared/peers/pi_write.mjs but newSession (see
// the comment at its top): "as": NAME binds the returned id, and "$NAME", "$prev", "$leaf" refer to ids.
// Prints one JSON line per item: {out, file, exists, leafId, ids, error?}. `file` is where Pi's
// session ended up (createBranchedSession switches files); `exists` is false when Pi never wrote
// it (its first write waits for an assistant message).
//
// read: {file, leafId, leafIdUndefined?, messages, thinkingLevel, model} per file (Pi's open + build).
// at: the same, but after moving Pi's leaf in memory (branch(leafId), or resetLeaf() for null)
// before building the context: Pi's projection of the file at that entry.
//
// All modes import dist/core/session-manager.js, the module dist/index.js re-exports
// SessionManager from: importing the whole agent through index.js takes 3-4 s, this ~70 ms.
// Output lines are JSON; split them on "\n" only (JSON.stringify leaves U+2028/U+2029 raw).
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = resolve(process.env.PI_PKG ?? ".peer/node_modules/@mariozechner/pi-coding-agent");
const { SessionManager } = await import(pathToFileURL(join(pkg, "dist", "core", "session-manager.js")).href);

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
		case "appendCompaction":
			result = sm.appendCompaction(op.summary, resolveRef(op.firstKeptEntryId), op.tokensBefore, op.details, op.fromHook);
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

const mode = process.argv[2];
if (mode === "write") write(JSON.parse(await readStdin()));
else if (mode === "read") read((await readStdin()).split("\n").filter((l) => l.trim()).map((file) => ({ file })));
else if (mode === "at") read(JSON.parse(await readStdin()));
else {
	process.stderr.write("usage: node pi_write_batch.mjs write|read|at  (input on stdin)\n");
	process.exit(2);
}
