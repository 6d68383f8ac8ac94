// `@dreb/coding-agent` for extensions: the helpers they import from the reference (type guards, the event bus,
// text truncation, ...) and inert stand-ins for its terminal components. Everything else it exports is a type
// (erased when the extension is loaded) or the reference's own machinery, which dreb-rs replaces.

import { spawn } from "node:child_process";
import * as os from "node:os";
import * as path from "node:path";
import { createEventBus } from "../event-bus.js";
import { createPlainTheme } from "../context.js";
import { Component, Container, Editor, Loader } from "./tui.js";

export { createEventBus };

export const VERSION = "0.0.0-dreb-rs";

let agentDir = "";

/** Set by the host from `initialize.agentDir`. @param {string} dir */
export function setAgentDirForHost(dir) {
	agentDir = dir;
}

export function getAgentDir() {
	if (agentDir) return agentDir;
	const env = process.env.DREB_CODING_AGENT_DIR;
	if (env) return env === "~" ? os.homedir() : env.startsWith("~/") ? os.homedir() + env.slice(1) : env;
	return path.join(os.homedir(), ".dreb", "agent");
}

// ---- type guards ---------------------------------------------------------------------------------------------

/** @param {string} toolName @param {{ toolName: string }} event */
export function isToolCallEventType(toolName, event) {
	return event?.toolName === toolName;
}
/** @param {{ toolName: string }} e */
export const isBashToolResult = (e) => e?.toolName === "bash";
/** @param {{ toolName: string }} e */
export const isReadToolResult = (e) => e?.toolName === "read";
/** @param {{ toolName: string }} e */
export const isEditToolResult = (e) => e?.toolName === "edit";
/** @param {{ toolName: string }} e */
export const isWriteToolResult = (e) => e?.toolName === "write";
/** @param {{ toolName: string }} e */
export const isGrepToolResult = (e) => e?.toolName === "grep";
/** @param {{ toolName: string }} e */
export const isFindToolResult = (e) => e?.toolName === "find";
/** @param {{ toolName: string }} e */
export const isLsToolResult = (e) => e?.toolName === "ls";

// ---- truncation ----------------------------------------------------------------------------------------------

export const DEFAULT_MAX_LINES = 2000;
export const DEFAULT_MAX_BYTES = 50 * 1024;
export const GREP_MAX_LINE_LENGTH = 500;

/** @param {number} bytes */
export function formatSize(bytes) {
	if (bytes < 1024) return `${bytes}B`;
	if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)}KB`;
	return `${(bytes / (1024 * 1024)).toFixed(1)}MB`;
}

/** @param {string} s */
const byteLength = (s) => Buffer.byteLength(s, "utf8");

/**
 * @param {string} content
 * @param {{ maxLines?: number, maxBytes?: number }} options
 * @param {boolean} fromEnd keep the last lines instead of the first
 */
function truncate(content, options, fromEnd) {
	const maxLines = options.maxLines ?? DEFAULT_MAX_LINES;
	const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
	const lines = content.split("\n");
	const totalLines = lines.length;
	const totalBytes = byteLength(content);
	const base = { totalLines, totalBytes, maxLines, maxBytes, lastLinePartial: false, firstLineExceedsLimit: false };
	if (totalLines <= maxLines && totalBytes <= maxBytes) {
		return { ...base, content, truncated: false, truncatedBy: null, outputLines: totalLines, outputBytes: totalBytes };
	}
	const ordered = fromEnd ? [...lines].reverse() : lines;
	/** @type {string[]} */
	const kept = [];
	let bytes = 0;
	/** @type {"lines" | "bytes"} */
	let truncatedBy = "lines";
	for (const line of ordered) {
		if (kept.length >= maxLines) {
			truncatedBy = "lines";
			break;
		}
		const cost = byteLength(line) + (kept.length > 0 ? 1 : 0);
		if (bytes + cost > maxBytes) {
			truncatedBy = "bytes";
			break;
		}
		kept.push(line);
		bytes += cost;
	}
	const firstLineExceedsLimit = !fromEnd && kept.length === 0 && totalLines > 0;
	const out = fromEnd ? kept.reverse() : kept;
	const text = out.join("\n");
	return {
		...base,
		content: text,
		truncated: true,
		truncatedBy,
		outputLines: out.length,
		outputBytes: byteLength(text),
		firstLineExceedsLimit,
	};
}

/** Keep the first lines (at most `maxLines` lines and `maxBytes` bytes, whole lines only). */
export const truncateHead = (/** @type {string} */ content, options = {}) => truncate(content, options, false);
/** Keep the last lines (at most `maxLines` lines and `maxBytes` bytes, whole lines only). */
export const truncateTail = (/** @type {string} */ content, options = {}) => truncate(content, options, true);

/** Cut one line to `maxChars` characters. */
export function truncateLine(/** @type {string} */ line, maxChars = GREP_MAX_LINE_LENGTH) {
	if (line.length <= maxChars) return { text: line, wasTruncated: false };
	return { text: `${line.slice(0, maxChars)}... [truncated]`, wasTruncated: true };
}

// ---- frontmatter (flat `key: value` lines) -------------------------------------------------------------------

/** @param {string} content */
export function parseFrontmatter(content) {
	const text = String(content).replace(/\r\n?/g, "\n");
	if (!text.startsWith("---")) return { frontmatter: {}, body: text };
	const end = text.indexOf("\n---", 3);
	if (end < 0) return { frontmatter: {}, body: text };
	/** @type {Record<string, unknown>} */
	const frontmatter = {};
	for (const line of text.slice(4, end).split("\n")) {
		const m = /^([A-Za-z0-9_-]+)\s*:\s*(.*)$/.exec(line);
		if (!m || !m[1]) continue;
		let value = (m[2] ?? "").trim();
		/** @type {unknown} */
		let parsed = value;
		if (/^(['"]).*\1$/.test(value)) parsed = value.slice(1, -1);
		else if (value === "true" || value === "false") parsed = value === "true";
		else if (value !== "" && !Number.isNaN(Number(value))) parsed = Number(value);
		else if (value.startsWith("[") && value.endsWith("]"))
			parsed = value
				.slice(1, -1)
				.split(",")
				.map((s) => s.trim().replace(/^(['"])(.*)\1$/, "$2"))
				.filter((s) => s !== "");
		frontmatter[m[1]] = parsed;
	}
	return { frontmatter, body: text.slice(end + 4).trim() };
}
/** @param {string} content */
export const stripFrontmatter = (content) => parseFrontmatter(content).body;

// ---- files ---------------------------------------------------------------------------------------------------

/** @type {Map<string, Promise<unknown>>} */
const fileQueues = new Map();

/**
 * Run `fn` after every earlier `fn` queued for the same file has finished.
 * @template T @param {string} filePath @param {() => Promise<T>} fn @returns {Promise<T>}
 */
export function withFileMutationQueue(filePath, fn) {
	const key = path.resolve(filePath);
	const previous = fileQueues.get(key) ?? Promise.resolve();
	const run = previous.catch(() => {}).then(fn);
	const tail = run.catch(() => {});
	fileQueues.set(key, tail);
	tail.then(() => {
		if (fileQueues.get(key) === tail) fileQueues.delete(key);
	});
	return run;
}

// ---- messages ------------------------------------------------------------------------------------------------

/** @param {unknown} content */
function textOf(content) {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.map((b) => (b?.type === "text" ? b.text : ""))
		.filter(Boolean)
		.join("\n");
}

/**
 * The agent's messages as a model sees them: custom, summary and bash messages become user messages.
 * @param {any[]} messages
 */
export function convertToLlm(messages) {
	const out = [];
	for (const m of messages ?? []) {
		switch (m?.role) {
			case "user":
			case "assistant":
			case "toolResult":
				out.push(m);
				break;
			case "custom":
				out.push({
					role: "user",
					content: typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content,
					timestamp: m.timestamp,
				});
				break;
			case "bashExecution":
				if (m.excludeFromContext) break;
				out.push({
					role: "user",
					content: [{ type: "text", text: `Ran \`${m.command}\`\n\`\`\`\n${m.output ?? ""}\n\`\`\`` }],
					timestamp: m.timestamp,
				});
				break;
			case "branchSummary":
			case "compactionSummary":
				out.push({ role: "user", content: [{ type: "text", text: String(m.summary ?? "") }], timestamp: m.timestamp });
				break;
			default:
				break;
		}
	}
	return out;
}

/**
 * A conversation as plain text, one block per message.
 * @param {any[]} messages
 */
export function serializeConversation(messages) {
	const parts = [];
	for (const m of messages ?? []) {
		if (m?.role === "user") parts.push(`[User]: ${textOf(m.content)}`);
		else if (m?.role === "assistant") {
			const text = textOf(m.content);
			if (text) parts.push(`[Assistant]: ${text}`);
			for (const b of Array.isArray(m.content) ? m.content : []) {
				if (b?.type === "toolCall") parts.push(`[Assistant tool call]: ${b.name}(${JSON.stringify(b.arguments ?? {})})`);
			}
		} else if (m?.role === "toolResult") parts.push(`[Tool result]: ${textOf(m.content)}`);
	}
	return parts.join("\n\n");
}

// ---- bash ----------------------------------------------------------------------------------------------------

/** Shell operations that run commands locally with `bash -c` (for `user_bash` handlers that wrap them). */
export function createLocalBashOperations() {
	return {
		/**
		 * @param {string} command @param {string} cwd
		 * @param {{ onData: (d: Buffer) => void, signal?: AbortSignal, timeout?: number, env?: NodeJS.ProcessEnv }} options
		 * @returns {Promise<{ exitCode: number | null }>}
		 */
		exec(command, cwd, options) {
			return new Promise((resolve, reject) => {
				const child = spawn(process.env.SHELL && /bash$/.test(process.env.SHELL) ? process.env.SHELL : "bash", ["-c", command], {
					cwd,
					env: options.env ?? process.env,
					stdio: ["ignore", "pipe", "pipe"],
					detached: true,
				});
				const kill = () => {
					try {
						if (child.pid) process.kill(-child.pid, "SIGKILL");
					} catch {
						child.kill("SIGKILL");
					}
				};
				/** @type {NodeJS.Timeout | undefined} */
				let timer;
				if (options.timeout && options.timeout > 0) timer = setTimeout(kill, options.timeout * 1000);
				if (options.signal) {
					if (options.signal.aborted) kill();
					else options.signal.addEventListener("abort", kill, { once: true });
				}
				child.stdout.on("data", options.onData);
				child.stderr.on("data", options.onData);
				child.on("error", (e) => {
					if (timer) clearTimeout(timer);
					reject(e);
				});
				child.on("close", (code) => {
					if (timer) clearTimeout(timer);
					options.signal?.removeEventListener("abort", kill);
					resolve({ exitCode: code });
				});
			});
		},
	};
}

/** @param {string} name */
function notInDrebRs(name) {
	return () => {
		throw new Error(
			`${name}() is not available to extensions run by dreb-rs: the built-in tools run in the runtime, not in the extension's process`,
		);
	};
}

export const createBashTool = notInDrebRs("createBashTool");
export const createBashToolDefinition = notInDrebRs("createBashToolDefinition");
export const createReadTool = notInDrebRs("createReadTool");
export const createReadToolDefinition = notInDrebRs("createReadToolDefinition");
export const createEditTool = notInDrebRs("createEditTool");
export const createEditToolDefinition = notInDrebRs("createEditToolDefinition");
export const createWriteTool = notInDrebRs("createWriteTool");
export const createWriteToolDefinition = notInDrebRs("createWriteToolDefinition");
export const createGrepTool = notInDrebRs("createGrepTool");
export const createGrepToolDefinition = notInDrebRs("createGrepToolDefinition");
export const createFindTool = notInDrebRs("createFindTool");
export const createFindToolDefinition = notInDrebRs("createFindToolDefinition");
export const createLsTool = notInDrebRs("createLsTool");
export const createLsToolDefinition = notInDrebRs("createLsToolDefinition");
export const createCodingTools = notInDrebRs("createCodingTools");
export const createReadOnlyTools = notInDrebRs("createReadOnlyTools");
export const createAgentSession = notInDrebRs("createAgentSession");

// ---- terminal UI stand-ins (never shown) ---------------------------------------------------------------------

export class CustomEditor extends Editor {}
export class DynamicBorder extends Component {}
export class BorderedLoader extends Loader {
	constructor(/** @type {unknown[]} */ ...args) {
		super(...args);
		this.signal = new AbortController().signal;
		/** @type {(() => void) | undefined} */
		this.onAbort = undefined;
	}
}
export class CustomMessageComponent extends Container {}
export class ToolExecutionComponent extends Container {}
export class UserMessageComponent extends Container {}
export class AssistantMessageComponent extends Container {}
export class Theme {
	constructor() {
		return createPlainTheme();
	}
}
export const initTheme = () => {};
export const getMarkdownTheme = () => ({});
export const getSelectListTheme = () => ({});
export const getSettingsListTheme = () => ({});
export const getLanguageFromPath = () => undefined;
/** @param {string} code */
export const highlightCode = (code) => String(code).split("\n");
/** @param {string} _key @param {string} description */
export const keyHint = (_key, description) => String(description ?? "");
/** @param {string} key */
export const keyText = (key) => String(key ?? "");
/** @param {string} _key @param {string} description */
export const rawKeyHint = (_key, description) => String(description ?? "");
