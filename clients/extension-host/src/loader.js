// Loading the extension module: TypeScript and modern JavaScript through jiti, with the import names reference
// extensions use (`@dreb/coding-agent`, `@dreb/ai`, `@dreb/agent-core`, `@dreb/tui`, `@sinclair/typebox`) served
// by this package's own modules, whether or not the extension has them installed.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createJiti } from "jiti";
import * as agentCore from "./shims/agent-core.js";
import * as ai from "./shims/ai.js";
import * as codingAgent from "./shims/coding-agent.js";
import * as tui from "./shims/tui.js";
import { SUBPATHS, loadSubpath, typebox } from "./shims/typebox.js";

/** The modules an extension's imports resolve to (one instance, shared with the host). */
export function virtualModules() {
	/** @type {Record<string, unknown>} */
	const modules = {
		"@dreb/coding-agent": codingAgent,
		"@dreb/ai": ai,
		"@dreb/ai/oauth": {},
		"@dreb/agent-core": agentCore,
		"@dreb/tui": tui,
		"@sinclair/typebox": typebox,
	};
	for (const sub of SUBPATHS) {
		Object.defineProperty(modules, `@sinclair/typebox/${sub}`, {
			enumerable: true,
			get: () => loadSubpath(sub),
		});
	}
	return modules;
}

/** @param {string} p */
function expandHome(p) {
	if (p === "~") return os.homedir();
	if (p.startsWith("~/")) return path.join(os.homedir(), p.slice(2));
	return p;
}

/**
 * The module file of an extension path: a file, or a folder's entry point (`package.json` `dreb.extensions`'s
 * first entry, else `index.ts` / `index.js`).
 * @param {string} extensionPath @param {string} cwd
 */
export function resolveEntry(extensionPath, cwd) {
	const resolved = path.resolve(cwd, expandHome(extensionPath));
	let stat;
	try {
		stat = fs.statSync(resolved);
	} catch {
		throw new Error(`Extension not found: ${resolved}`);
	}
	if (!stat.isDirectory()) return resolved;
	try {
		const pkg = JSON.parse(fs.readFileSync(path.join(resolved, "package.json"), "utf8"));
		const entries = pkg?.dreb?.extensions;
		if (Array.isArray(entries)) {
			for (const e of entries) {
				const p = path.resolve(resolved, String(e));
				if (fs.existsSync(p)) return p;
			}
		}
	} catch {
		// no manifest
	}
	for (const name of ["index.ts", "index.js", "index.mjs"]) {
		const p = path.join(resolved, name);
		if (fs.existsSync(p)) return p;
	}
	throw new Error(`No extension entry point in ${resolved} (package.json dreb.extensions, index.ts or index.js)`);
}

const SOURCE_EXTENSIONS = [".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"];

/** @param {string} from @param {string} spec */
function resolveLocal(from, spec) {
	const base = path.resolve(path.dirname(from), spec);
	const candidates = [base];
	const ext = path.extname(base);
	if (ext === ".js" || ext === ".mjs" || ext === ".cjs") {
		const stem = base.slice(0, -ext.length);
		candidates.push(`${stem}${ext.replace("j", "t")}`, `${stem}.tsx`);
	}
	for (const e of SOURCE_EXTENSIONS) candidates.push(base + e);
	for (const e of SOURCE_EXTENSIONS) candidates.push(path.join(base, `index${e}`));
	for (const c of candidates) {
		try {
			if (fs.statSync(c).isFile()) return c;
		} catch {
			// next
		}
	}
	return undefined;
}

/**
 * What the extension's source reads synchronously, so that the host fetches those snapshots before each handler:
 * a scan of the module and the local modules it imports (relative paths, at most 500 files).
 * @param {string} entry
 * @returns {{ session: boolean, models: boolean, tools: boolean, files: number }}
 */
export function scanNeeds(entry) {
	const seen = new Set();
	const queue = [entry];
	const needs = { session: false, models: false, tools: false, files: 0 };
	const importRe = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g;
	while (queue.length > 0 && seen.size < 500) {
		const file = /** @type {string} */ (queue.shift());
		if (seen.has(file)) continue;
		seen.add(file);
		let text;
		try {
			text = fs.readFileSync(file, "utf8");
		} catch {
			continue;
		}
		if (/\bsessionManager\b/.test(text)) needs.session = true;
		if (/\bmodelRegistry\b/.test(text)) needs.models = true;
		if (/\bgetAllTools\b/.test(text)) needs.tools = true;
		for (const m of text.matchAll(importRe)) {
			const spec = m[1];
			if (!spec) continue;
			const dep = resolveLocal(file, spec);
			if (dep && !seen.has(dep)) queue.push(dep);
		}
	}
	needs.files = seen.size;
	return needs;
}

/**
 * Import the extension module and return its factory (the default export).
 * @param {string} entry an absolute file path
 * @returns {Promise<Function>}
 */
export async function loadFactory(entry) {
	const jiti = createJiti(import.meta.url, {
		moduleCache: false,
		virtualModules: virtualModules(),
	});
	const mod = await jiti.import(entry, { default: true });
	/** @type {any} */
	let factory = mod;
	if (typeof factory !== "function" && factory && typeof factory === "object" && typeof factory.default === "function") {
		factory = factory.default;
	}
	if (typeof factory !== "function") {
		throw new Error(`Extension does not export a valid factory function: ${entry}`);
	}
	return factory;
}
