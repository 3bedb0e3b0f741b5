// Random programs run by Pi's own SessionManager, and Pi's projection of what they wrote.
//
//   node pi_fuzz.mjs --seed S --count N --out DIR [--points K] [--deep [--max-levels L]]
//
// PI_PKG names Pi 1.6.0's package root (as for pi_peer.mjs). Program i is drawn from a PRNG
// seeded with (S, i), so a seed and an index name a program for good. Each program opens a
// new session in DIR and calls every public append and branch method of SessionManager at
// random: messages of every role (user, assistant, toolResult, bashExecution, system, custom)
// with unicode, long and odd texts and timestamps, thinking level, model and usage entries,
// compactions anywhere (a kept id on the path, off it, missing), context edits on and off the
// branch (null, string and array replacements), custom entries and custom messages with
// arbitrary details (nested deep with --deep), labels, session names, branch(), resetLeaf(),
// branchWithSummary() and createBranchedSession(). Pi's clock is replaced by the program's
// own: now, years before 1, far years, or anywhere in Date's range, so every timestamp Pi
// writes with toISOString() comes from it (the session's header excepted: Pi makes its id a
// UUIDv7 of the clock, which refuses a time before 1970; so does createBranchedSession).
//
// Then every file the program wrote is opened afresh by Pi, and its context is built at the
// leaf and at K other entries (branch(id)). One JSON line per file:
//   {program, seed, file, mode, calls, flags, points: [{at: ID | null, json: TEXT} | {at, error: TEXT}]}
// where TEXT is exactly JSON.stringify({leafId, thinkingLevel, model, messages}), the bytes
// `kurahi session context FILE [--leaf ID] --json` must print. A value nested deeper than
// JSON.stringify's stack allows (it throws RangeError) is written by an iterative twin of
// it instead, so the context Pi holds is still compared; `flags` lists "deepStringify" then.
// "deep" says some details were nested 990 levels or more. Other flags say where Pi does
// something Kurahi deliberately does not copy: "undefinedMessage" (appendMessage(undefined):
// an entry Pi's own build throws on).
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = resolve(process.env.PI_PKG ?? ".peer/node_modules/@earendil-works/pi-coding-agent");
function arg(name, fallback) {
	const i = process.argv.indexOf(name);
	return i < 0 ? fallback : process.argv[i + 1];
}
const SEED = Number(arg("--seed", "1"));
const COUNT = Number(arg("--count", "10"));
const OUT = resolve(arg("--out", "."));
const POINTS = Number(arg("--points", "3"));
const DEEP = process.argv.includes("--deep");
const MAX_LEVELS = Number(arg("--max-levels", "30000")); // --deep: the deepest details drawn

// Pi's clock: `new Date()` and `Date.now()` read `clock.now`; every other use of Date is Date's own.
const RealDate = Date;
const clock = { now: 0 };
class FakeDate extends RealDate {
	constructor(...args) {
		if (args.length === 0) super(clock.now);
		else super(...args);
	}
	static now() {
		return clock.now;
	}
}
globalThis.Date = FakeDate;

const { SessionManager } = await import(pathToFileURL(join(pkg, "dist", "core", "session-manager.js")).href);

// mulberry32, seeded from (seed, index).
function rng(seed, index) {
	let a = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35)) >>> 0;
	const next = () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
	const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
	const pick = (xs) => xs[int(0, xs.length - 1)];
	const chance = (p) => next() < p;
	return { next, int, pick, chance };
}

const MAX_MS = 8.64e15;
const ODD_TEXT = ["", " ", "  padded\t", "😀", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🏳️‍🌈", "é", "中文", "\u2028\u2029", "\x00\x1f\x7f", "\ud800", "a\udfffb", '"quoted" \\ back', "line\nbreak\r\n", "\ufeffbom", "<script>", "null", "0", "-0", "1e400"];
const KEYS = ["a", "b", "text", "type", "10", "2", "__proto__", "constructor", "é", "", "x y", "details", "id", "parentId"];

function text(r) {
	const k = r.next();
	if (k < 0.3) return r.pick(ODD_TEXT);
	if (k < 0.35) return "long ".repeat(r.int(100, 4000));
	let s = "";
	const n = r.int(0, 12);
	for (let i = 0; i < n; i++) s += r.chance(0.8) ? r.pick(["word", "marker", "x", " ", "-", "tool", "ok"]) : String.fromCodePoint(r.int(0x20, 0x2ffff));
	return s;
}

function number(r) {
	return r.pick([0, -0, 1, -1, 0.1, 1e21, 1e-7, 2 ** 53, 2 ** 53 + 2, 2 ** 70, -(2 ** 64), 123.456, Number.MAX_VALUE, 5e-324, r.int(-1e9, 1e9), r.next() * 1e6]);
}

function value(r, depth = 0) {
	const k = r.next();
	if (depth > 4 || k < 0.35) return r.pick([null, true, false, number(r), text(r)]);
	if (k < 0.65) return Array.from({ length: r.int(0, 4) }, () => value(r, depth + 1));
	const o = {};
	for (let i = r.int(0, 4); i > 0; i--) o[r.pick(KEYS)] = value(r, depth + 1);
	return o;
}

function details(r, flags) {
	if (DEEP && r.chance(0.3)) {
		// Nested past CPython's decoders (about 1,000 levels), sometimes past JSON.stringify's stack.
		const drawn = r.chance(0.05) ? r.int(10000, 30000) : r.pick([500, 990, 1000, 1200, 3000, r.int(900, 2500)]);
		const levels = Math.min(drawn, MAX_LEVELS);
		if (levels >= 990) flags.add("deep");
		let v = value(r, 4);
		for (let i = 0; i < levels; i++) v = r.chance(0.5) ? [v] : { [r.pick(KEYS)]: v };
		return v;
	}
	return r.chance(0.2) ? undefined : value(r);
}

function content(r, role) {
	if (r.chance(0.3)) return text(r);
	const blocks = [];
	for (let i = r.int(0, 3); i > 0; i--) {
		const k = r.next();
		if (k < 0.6) blocks.push({ type: "text", text: text(r) });
		else if (k < 0.7 && role !== "assistant") blocks.push({ type: "image", data: "aGVsbG8=", mimeType: "image/png" });
		else if (role === "assistant" && k < 0.85) blocks.push({ type: "thinking", thinking: text(r) });
		else if (role === "assistant") blocks.push({ type: "toolCall", id: `call_${r.int(0, 99)}`, name: r.pick(["read", "bash", "write"]), arguments: value(r) });
		else blocks.push({ type: "text", text: text(r) });
	}
	return blocks;
}

function usage(r) {
	const n = () => r.pick([0, 1, r.int(0, 100000)]);
	return { input: n(), output: n(), cacheRead: n(), cacheWrite: n(), totalTokens: n(), cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: r.next() } };
}

function stamp(r) {
	// A message's own timestamp (a number, as Pi's agent writes it), sometimes odd.
	const k = r.next();
	if (k < 0.8) return clock.now;
	return r.pick([0, -1, MAX_MS, -MAX_MS, 1.5, r.int(-MAX_MS, MAX_MS), "2020-01-01T00:00:00.000Z", null]);
}

function tick(r, mode) {
	if (mode === "now") clock.now += r.int(0, 5000);
	else if (mode === "early") clock.now = r.int(-MAX_MS, -62167219200000);
	else if (mode === "far") clock.now = r.int(253402300800000, MAX_MS);
	else clock.now = r.int(-MAX_MS, MAX_MS);
}

function message(r, flags) {
	const role = r.pick(["user", "user", "assistant", "assistant", "toolResult", "bashExecution", "system", "custom", "undefined"]);
	switch (role) {
		case "user":
			return { role, content: r.chance(0.05) ? null : content(r, role), timestamp: stamp(r) };
		case "assistant": {
			const m = { role, content: content(r, role), api: "anthropic-messages", provider: r.pick(["anthropic", "openai"]), model: r.pick(["claude-sonnet-4-5", "gpt-5", ""]), usage: usage(r), stopReason: r.pick(["stop", "toolUse", "aborted", "error", "length"]) };
			if (r.chance(0.1)) m.errorMessage = text(r);
			m.timestamp = stamp(r);
			return m;
		}
		case "toolResult":
			return { role, toolCallId: `call_${r.int(0, 99)}`, toolName: r.pick(["read", "bash"]), content: content(r, role), details: details(r, flags), isError: r.chance(0.2), timestamp: stamp(r) };
		case "bashExecution": {
			const m = { role, command: text(r), output: text(r), exitCode: r.pick([0, 1, undefined, null]), cancelled: r.chance(0.1), truncated: r.chance(0.1), timestamp: stamp(r) };
			if (r.chance(0.3)) m.excludeFromContext = r.chance(0.5);
			return m;
		}
		case "system": {
			const m = { role, content: r.chance(0.1) ? null : text(r), timestamp: stamp(r) };
			if (r.chance(0.3)) m.sections = [{ name: text(r), content: text(r) }];
			return m;
		}
		case "custom":
			return { role, customType: text(r), content: content(r, role), display: r.chance(0.5), details: details(r, flags), timestamp: stamp(r) };
		default:
			if (r.chance(0.97)) return { role: "user", content: text(r), timestamp: stamp(r) };
			flags.add("undefinedMessage");
			return undefined;
	}
}

function someId(r, ids) {
	if (ids.length === 0 || r.chance(0.03)) return r.pick(["nope", "", "00000000"]);
	return r.pick(ids);
}

function runProgram(r, sm, mode, flags, files, calls) {
	const ids = [];
	const steps = r.int(3, r.chance(0.1) ? 400 : 60);
	for (let i = 0; i < steps; i++) {
		tick(r, mode);
		try {
			const id = step(r, sm, ids, flags, files);
			calls.n++;
			if (typeof id === "string") ids.push(id);
		} catch {
			// Pi refused the call (an edit of an entry off the branch, a branch to an unknown
			// id): it wrote nothing, and the program goes on, as an agent would.
		}
	}
}

function step(r, sm, ids, flags, files) {
	const k = r.next();
	let id;
	{
		if (k < 0.45) id = sm.appendMessage(message(r, flags));
		else if (k < 0.48) id = sm.appendThinkingLevelChange(r.pick(["off", "low", "medium", "high", "xhigh", "", text(r)]));
		else if (k < 0.51) id = sm.appendModelChange(r.pick(["anthropic", "openai", text(r)]), r.pick(["claude-sonnet-4-5", "gpt-5", text(r)]));
		else if (k < 0.53) id = sm.appendUsage(r.pick(["turn", "compaction", text(r)]), "anthropic", "m", usage(r), r.chance(0.5) ? text(r) : undefined).id;
		else if (k < 0.58) {
			const kept = r.chance(0.2) ? null : someId(r, ids);
			id = sm.appendCompaction(text(r), kept, r.int(0, 200000), details(r, flags), r.chance(0.3) ? r.chance(0.5) : undefined, r.chance(0.3) ? usage(r) : undefined);
		} else if (k < 0.61) id = sm.appendCustomEntry(text(r), details(r, flags));
		else if (k < 0.63) id = sm.appendSessionInfo(text(r));
		else if (k < 0.7) {
			const c = r.next();
			const replacement = c < 0.4 ? null : { content: c < 0.7 ? text(r) : content(r, "user") };
			id = sm.appendContextEdit(someId(r, ids), replacement);
		} else if (k < 0.73) id = sm.appendLabelChange(someId(r, ids), r.chance(0.3) ? undefined : text(r));
		else if (k < 0.8) id = sm.appendCustomMessageEntry(text(r), content(r, "custom"), r.chance(0.5), details(r, flags));
		else if (k < 0.88 && ids.length) sm.branch(someId(r, ids));
		else if (k < 0.9) sm.resetLeaf();
		else if (k < 0.96 && ids.length) id = sm.branchWithSummary(r.chance(0.1) ? null : someId(r, ids), text(r), details(r, flags), r.chance(0.3) ? r.chance(0.5) : undefined, r.chance(0.2) ? usage(r) : undefined);
		else if (k < 0.97 && ids.length) {
			sm.createBranchedSession(someId(r, ids));
			const f = sm.getSessionFile();
			if (f) files.add(f);
		} else id = sm.appendMessage({ role: "user", content: text(r), timestamp: stamp(r) });
	}
	return id;
}

// JSON.stringify without recursion, for plain JSON-shaped data (what buildSessionContext gives).
function deepStringify(root) {
	const out = [];
	const todo = [[false, root]];
	while (todo.length) {
		const [literal, v] = todo.pop();
		if (literal) out.push(v);
		else if (v === null || v === undefined || typeof v === "function") out.push("null");
		else if (typeof v === "number") out.push(Number.isFinite(v) ? String(v) : "null");
		else if (typeof v === "string" || typeof v === "boolean") out.push(JSON.stringify(v));
		else if (Array.isArray(v)) {
			out.push("[");
			todo.push([true, "]"]);
			for (let i = v.length - 1; i >= 0; i--) {
				todo.push([false, v[i]]);
				if (i) todo.push([true, ","]);
			}
		} else {
			const keys = Object.keys(v).filter((k) => v[k] !== undefined && typeof v[k] !== "function");
			out.push("{");
			todo.push([true, "}"]);
			for (let i = keys.length - 1; i >= 0; i--) {
				todo.push([false, v[keys[i]]]);
				todo.push([true, `${i ? "," : ""}${JSON.stringify(keys[i])}:`]);
			}
		}
	}
	return out.join("");
}

function stringify(value, flags) {
	try {
		return JSON.stringify(value);
	} catch (err) {
		if (!(err instanceof RangeError)) throw err;
		flags.add("deepStringify");
		return deepStringify(value);
	}
}

function project(file, r, flags) {
	const work = mkdtempSync(join(tmpdir(), "pi-fuzz-read-"));
	try {
		const copy = join(work, "s.jsonl");
		copyFileSync(file, copy);
		const sm = SessionManager.open(copy, work);
		const entries = sm.getEntries().map((e) => e.id);
		const at = [null];
		for (let i = 0; i < POINTS && entries.length; i++) at.push(r.pick(entries));
		return at.map((id) => {
			try {
				if (id !== null) sm.branch(id);
				const ctx = sm.buildSessionContext();
				return { at: id, json: stringify({ leafId: sm.getLeafId(), thinkingLevel: ctx.thinkingLevel, model: ctx.model, messages: ctx.messages }, flags) };
			} catch (err) {
				return { at: id, error: String(err?.message ?? err) };
			}
		});
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
}

mkdirSync(OUT, { recursive: true });
for (let program = 0; program < COUNT; program++) {
	const r = rng(SEED, program);
	const mode = r.pick(["now", "now", "now", "early", "far", "any"]);
	// The session id is a UUIDv7 of the clock, which must read 1970 to 10889 then: the program's
	// own clock starts after the open.
	clock.now = RealDate.UTC(2026, 0, 1) + r.int(0, 1e10);
	const flags = new Set();
	const files = new Set();
	const first = join(OUT, `p${SEED}-${program}.jsonl`);
	files.add(first);
	const calls = { n: 0 };
	let error;
	try {
		const sm = SessionManager.open(first, OUT);
		if (mode !== "now") tick(r, mode);
		runProgram(r, sm, mode, flags, files, calls);
	} catch (err) {
		error = String(err?.stack ?? err);
	}
	for (const file of files) {
		if (!existsSync(file)) continue; // Pi writes nothing before the first user or assistant message
		// calls: the SessionManager calls the program made (Pi accepted), on its first file only.
		const line = { program, seed: SEED, file, mode, calls: file === first ? calls.n : 0, points: project(file, r, flags) };
		line.flags = [...flags];
		if (error) line.programError = error;
		process.stdout.write(`${JSON.stringify(line)}\n`);
	}
}
