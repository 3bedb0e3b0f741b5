// Pi's own next request for a session file, sent for real to a server on loopback.
//
//   PI_PKG=<pi-coding-agent dir> PI_AI=<pi-ai dir> node pi_request.mjs
//   stdin: JSON array of {"file": PATH, "api": API, "baseUrl": URL}
//
// For each item: SessionManager.open on a private copy of the file, buildSessionContext(),
// convertToLlm, then pi-ai's own provider for API (anthropic-messages, openai-completions,
// openai-responses) streams one request to baseUrl: transformMessages and the family's
// converter run exactly as in a Pi turn. Prints one JSON line per item:
// {file, api, stopReason, errorMessage?, messages: roles of the context}.
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = process.env.PI_PKG;
const ai = process.env.PI_AI;
const url = (...parts) => pathToFileURL(join(...parts)).href;
const { SessionManager } = await import(url(pkg, "dist", "core", "session-manager.js"));
const { convertToLlm } = await import(url(pkg, "dist", "core", "messages.js"));
const modern = (await import(url(ai, "package.json"), { with: { type: "json" } })).default.version.startsWith("1.");

const base = { cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 200000, maxTokens: 1024, input: ["text", "image"] };
const MODELS = {
	"anthropic-messages": { ...base, id: "claude-sonnet-4-5", name: "c", api: "anthropic-messages", provider: "anthropic", reasoning: false },
	"openai-completions": { ...base, id: "gpt-4.1", name: "g", api: "openai-completions", provider: "openai", reasoning: false },
	"openai-responses": { ...base, id: "gpt-5", name: "g5", api: "openai-responses", provider: "openai", reasoning: false },
};

async function streamFor(api) {
	if (modern) {
		const { normalizeContext } = await import(url(ai, "dist", "utils", "transcript.js"));
		const { stream } = await import(url(ai, "dist", "api", `${api}.js`));
		return (model, ctx, opts) => stream(model, normalizeContext(ctx), opts);
	}
	const { stream } = await import(url(ai, "dist", "index.js"));
	return stream;
}

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const items = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const dir = mkdtempSync(join(tmpdir(), "pi-request-"));
try {
	for (const [i, item] of items.entries()) {
		const copy = join(dir, `${i}.jsonl`);
		copyFileSync(item.file, copy);
		const sm = SessionManager.open(copy, dir);
		const ctx = sm.buildSessionContext();
		const model = { ...MODELS[item.api], baseUrl: item.baseUrl };
		const stream = await streamFor(item.api);
		const s = stream(model, { systemPrompt: "You are a test.", messages: convertToLlm(ctx.messages) }, { apiKey: "test-key", maxRetries: 0 });
		const r = await s.result();
		const out = { file: item.file, api: item.api, stopReason: r.stopReason, messages: ctx.messages.map((m) => m.role) };
		if (r.errorMessage) out.errorMessage = r.errorMessage;
		console.log(JSON.stringify(out));
	}
} finally {
	rmSync(dir, { recursive: true, force: true });
}
