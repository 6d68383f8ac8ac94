// The `ctx` the reference passes to every handler (ExtensionContext, ExtensionCommandContext), built on the
// protocol: dialogs and UI updates are `ui_*` commands, the synchronous getters read the host's snapshots
// (snapshot.js), actions are commands.

import * as path from "node:path";

/**
 * @typedef {object} HostServices
 * @property {import("./connection.js").Connection} conn
 * @property {import("./snapshot.js").Snapshots} snap
 * @property {(text: string) => void} log
 * @property {(key: string, text: string) => void} warnOnce
 * @property {() => { cwd: string, hasUI: boolean, agentDir: string, extensionPath: string }} init
 */

/** A theme for code that styles text: every styling function returns its text unchanged. */
export function createPlainTheme() {
	/** @param {unknown[]} args */
	const lastText = (...args) => {
		for (let i = args.length - 1; i >= 0; i--) if (typeof args[i] === "string") return args[i];
		return "";
	};
	const base = {
		name: "plain",
		fg: (/** @type {string} */ _color, /** @type {string} */ text) => text,
		bg: (/** @type {string} */ _color, /** @type {string} */ text) => text,
		bold: (/** @type {string} */ text) => text,
		italic: (/** @type {string} */ text) => text,
		underline: (/** @type {string} */ text) => text,
		inverse: (/** @type {string} */ text) => text,
		strikethrough: (/** @type {string} */ text) => text,
		dim: (/** @type {string} */ text) => text,
		getFgAnsi: () => "",
		getBgAnsi: () => "",
		getColorMode: () => "truecolor",
		getThinkingBorderColor: () => lastText,
		getBashModeBorderColor: () => lastText,
	};
	return new Proxy(base, {
		get(target, prop, receiver) {
			if (prop in target) return Reflect.get(target, prop, receiver);
			if (typeof prop === "symbol") return undefined;
			return lastText;
		},
	});
}

/**
 * Race a dialog with its `opts.signal`: an aborted dialog resolves to `fallback` (the runtime's dialog stays until
 * it is answered or times out; the protocol has no way to close it).
 * @template T
 * @param {Promise<T>} request
 * @param {AbortSignal | undefined} signal
 * @param {T} fallback
 * @returns {Promise<T>}
 */
function withSignal(request, signal, fallback) {
	if (!signal) return request;
	return new Promise((resolve, reject) => {
		const onAbort = () => resolve(fallback);
		signal.addEventListener("abort", onAbort, { once: true });
		request.then(
			(v) => {
				signal.removeEventListener("abort", onAbort);
				resolve(v);
			},
			(e) => {
				signal.removeEventListener("abort", onAbort);
				reject(e);
			},
		);
	});
}

/** @param {unknown} ms */
function timeoutOf(ms) {
	return typeof ms === "number" && Number.isFinite(ms) && ms > 0 ? Math.round(ms) : undefined;
}

/** @param {HostServices} host */
export function createUI(host) {
	const { conn } = host;
	const theme = createPlainTheme();
	const noop = () => {};
	return {
		/** @param {string} title @param {string[]} options @param {{ signal?: AbortSignal, timeout?: number }} [opts] */
		async select(title, options, opts) {
			if (opts?.signal?.aborted) return undefined;
			const r = conn.ordered("ui_select", { title, options, timeout: timeoutOf(opts?.timeout) });
			const data = await withSignal(r, opts?.signal, undefined);
			return typeof data?.value === "string" ? data.value : undefined;
		},
		/** @param {string} title @param {string} message @param {{ signal?: AbortSignal, timeout?: number }} [opts] */
		async confirm(title, message, opts) {
			if (opts?.signal?.aborted) return false;
			const r = conn.ordered("ui_confirm", { title, message, timeout: timeoutOf(opts?.timeout) });
			const data = await withSignal(r, opts?.signal, undefined);
			return data?.confirmed === true;
		},
		/** @param {string} title @param {string} [placeholder] @param {{ signal?: AbortSignal, timeout?: number }} [opts] */
		async input(title, placeholder, opts) {
			if (opts?.signal?.aborted) return undefined;
			const r = conn.ordered("ui_input", { title, placeholder, timeout: timeoutOf(opts?.timeout) });
			const data = await withSignal(r, opts?.signal, undefined);
			return typeof data?.value === "string" ? data.value : undefined;
		},
		/** @param {string} title @param {string} [prefill] */
		async editor(title, prefill) {
			const data = await conn.ordered("ui_editor", { title, prefill });
			return typeof data?.value === "string" ? data.value : undefined;
		},
		/** @param {{ title?: string, questions: unknown[] }} request @param {{ signal?: AbortSignal, timeout?: number }} [opts] */
		async ask(request, opts) {
			if (opts?.signal?.aborted) return undefined;
			const r = conn.ordered("ui_ask", {
				questions: request?.questions ?? [],
				title: request?.title,
				timeout: timeoutOf(opts?.timeout),
			});
			const data = await withSignal(r, opts?.signal, undefined);
			return Array.isArray(data?.answers) ? { answers: data.answers } : undefined;
		},
		/** @param {string} message @param {"info" | "warning" | "error"} [type] */
		notify(message, type) {
			void conn.fire("ui_notify", { message: String(message), notifyType: type });
		},
		/** @param {string} key @param {string | undefined} text */
		setStatus(key, text) {
			void conn.fire("ui_set_status", { key, text: text === undefined || text === null ? undefined : String(text) });
		},
		/** @param {string} key @param {unknown} content @param {{ placement?: "aboveEditor" | "belowEditor" }} [options] */
		setWidget(key, content, options) {
			if (typeof content === "function") {
				host.warnOnce(
					"widget-factory",
					"ctx.ui.setWidget() with a component factory is not supported by the dreb-rs extension host (only string arrays); ignored",
				);
				return;
			}
			const lines = Array.isArray(content) ? content.map((l) => String(l)) : undefined;
			void conn.fire("ui_set_widget", { key, lines, placement: options?.placement });
		},
		/** @param {string} title */
		setTitle(title) {
			void conn.fire("ui_set_title", { title: String(title) });
		},
		/** @param {string} text */
		setEditorText(text) {
			void conn.fire("ui_set_editor_text", { text: String(text) });
		},
		getEditorText: () => "",
		pasteToEditor: noop,
		// Terminal-only: accepted, and nothing happens.
		onTerminalInput: () => noop,
		setWorkingMessage: noop,
		setFooter: noop,
		setHeader: noop,
		setEditorComponent: noop,
		custom: async () => undefined,
		get theme() {
			return theme;
		},
		getAllThemes: () => [],
		getTheme: () => undefined,
		setTheme: () => ({ success: false, error: "UI not available" }),
		getToolsExpanded: () => false,
		setToolsExpanded: noop,
	};
}

/**
 * The read-only session manager of the reference, over the `get_context` and `get_session` snapshots.
 * @param {HostServices} host
 */
export function createSessionManager(host) {
	const { snap } = host;
	/** @param {string} what */
	const session = (what) => snap.requireSession(`ctx.sessionManager.${what}()`);
	/** @param {string} what @returns {any[]} */
	const entries = (what) => {
		const e = session(what).entries;
		return Array.isArray(e) ? e : [];
	};
	/** @param {string} what @returns {Map<string, any>} */
	const byId = (what) => {
		const m = new Map();
		for (const e of entries(what)) if (e && typeof e.id === "string") m.set(e.id, e);
		return m;
	};
	/** @param {string} what @returns {Map<string, string>} */
	const labels = (what) => {
		const m = new Map();
		for (const e of entries(what)) {
			if (e?.type !== "label" || typeof e.targetId !== "string") continue;
			if (typeof e.label === "string" && e.label) m.set(e.targetId, e.label);
			else m.delete(e.targetId);
		}
		return m;
	};
	return {
		getCwd: () => snap.ctxField("cwd") ?? host.init().cwd,
		getSessionDir() {
			const file = snap.ctxField("sessionFile");
			return typeof file === "string" ? path.dirname(file) : "";
		},
		getSessionId: () => snap.ctxField("sessionId"),
		getSessionFile: () => snap.ctxField("sessionFile") ?? undefined,
		getLeafId: () => snap.ctxField("leafId") ?? null,
		getSessionName: () => snap.ctxField("sessionName") ?? undefined,
		getLeafEntry() {
			const leaf = snap.ctxField("leafId");
			return typeof leaf === "string" ? byId("getLeafEntry").get(leaf) : undefined;
		},
		/** @param {string} id */
		getEntry: (id) => byId("getEntry").get(id),
		/** @param {string} id */
		getLabel: (id) => labels("getLabel").get(id),
		/** @param {string} parentId */
		getChildren: (parentId) => entries("getChildren").filter((e) => e?.parentId === parentId),
		/** @param {string} [fromId] */
		getBranch(fromId) {
			if (fromId === undefined) {
				const b = session("getBranch").branch;
				return Array.isArray(b) ? [...b] : [];
			}
			const map = byId("getBranch");
			const out = [];
			let current = map.get(fromId);
			const seen = new Set();
			while (current && !seen.has(current.id)) {
				seen.add(current.id);
				out.unshift(current);
				current = current.parentId ? map.get(current.parentId) : undefined;
			}
			return out;
		},
		getHeader() {
			const h = session("getHeader").header;
			return h && typeof h === "object" ? h : null;
		},
		getEntries: () => [...entries("getEntries")],
		getTree() {
			const all = entries("getTree");
			const labelMap = labels("getTree");
			/** @type {Map<string, { entry: any, children: any[], label?: string }>} */
			const nodes = new Map();
			for (const e of all) nodes.set(e.id, { entry: e, children: [], label: labelMap.get(e.id) });
			const roots = [];
			for (const e of all) {
				const node = nodes.get(e.id);
				if (!node) continue;
				const parent = e.parentId && e.parentId !== e.id ? nodes.get(e.parentId) : undefined;
				if (parent) parent.children.push(node);
				else roots.push(node);
			}
			/** @param {any} t */
			const time = (t) => new Date(t?.entry?.timestamp ?? 0).getTime();
			const stack = [...roots];
			while (stack.length > 0) {
				const node = stack.pop();
				node.children.sort((a, b) => time(a) - time(b));
				stack.push(...node.children);
			}
			return roots;
		},
	};
}

/**
 * The model registry of the reference, over the `get_models` snapshot (read-only; no API keys).
 * @param {HostServices} host
 */
export function createModelRegistry(host) {
	const { snap } = host;
	/** @param {string} what @returns {any[]} */
	const all = (what) => {
		const m = snap.requireModels(`ctx.modelRegistry.${what}()`).models;
		return Array.isArray(m) ? m : [];
	};
	return {
		getAll: () => [...all("getAll")],
		getAvailable() {
			const models = all("getAvailable");
			const available = new Set(snap.models?.available ?? []);
			return models.filter((m) => available.has(`${m.provider}/${m.id}`));
		},
		/** @param {string} provider @param {string} modelId */
		find: (provider, modelId) => all("find").find((m) => m.provider === provider && m.id === modelId),
		async getApiKey() {
			host.warnOnce("api-key", "ctx.modelRegistry.getApiKey(): API keys are not shared with extensions in dreb-rs; undefined");
			return undefined;
		},
		async getApiKeyForProvider() {
			host.warnOnce("api-key", "ctx.modelRegistry.getApiKey(): API keys are not shared with extensions in dreb-rs; undefined");
			return undefined;
		},
		isUsingOAuth: () => false,
		getModelPromptSettings: () => undefined,
		getError: () => undefined,
		refresh: () => {},
		registerProvider() {
			host.warnOnce("provider", "ctx.modelRegistry is a read-only view in dreb-rs: use dreb.registerProvider(); ignored");
		},
		unregisterProvider() {
			host.warnOnce("provider", "ctx.modelRegistry is a read-only view in dreb-rs: use dreb.unregisterProvider(); ignored");
		},
	};
}

/**
 * `ctx` for event handlers and tools.
 * @param {HostServices} host
 */
export function createContext(host) {
	const { conn, snap } = host;
	const ui = createUI(host);
	const sessionManager = createSessionManager(host);
	const modelRegistry = createModelRegistry(host);
	return {
		ui,
		get hasUI() {
			const v = snap.ctxField("hasUI");
			return typeof v === "boolean" ? v : host.init().hasUI;
		},
		get cwd() {
			return host.init().cwd;
		},
		sessionManager,
		modelRegistry,
		get model() {
			return snap.ctxField("model") ?? undefined;
		},
		isIdle: () => snap.ctxField("isIdle") !== false,
		abort() {
			void conn.fire("abort");
		},
		hasPendingMessages: () => snap.ctxField("hasPendingMessages") === true,
		shutdown() {
			host.log("extension host: ctx.shutdown() is not supported in dreb-rs (the host decides when the session ends); ignored");
		},
		getContextUsage: () => snap.ctxField("contextUsage") ?? undefined,
		/** @param {{ customInstructions?: string, onComplete?: (r: any) => void, onError?: (e: Error) => void }} [options] */
		compact(options) {
			conn.ordered("compact", { customInstructions: options?.customInstructions }).then(
				(r) => {
					snap.invalidateSession();
					options?.onComplete?.({
						summary: r?.summary ?? "",
						tokensBefore: r?.tokensBefore ?? 0,
						firstKeptEntryId: undefined,
						details: undefined,
					});
				},
				(e) => {
					const error = e instanceof Error ? e : new Error(String(e));
					if (options?.onError) options.onError(error);
					else host.log(`extension host: compact failed: ${error.message}`);
				},
			);
		},
		getSystemPrompt: () => snap.ctxField("systemPrompt") ?? "",
	};
}

/**
 * `ctx` for command handlers: the session operations besides.
 * @param {HostServices} host
 * @param {ReturnType<typeof createContext>} base
 */
export function createCommandContext(host, base) {
	const { conn, snap } = host;
	/** @param {string} command @param {Record<string, unknown>} params */
	const sessionOp = async (command, params) => {
		const r = await conn.ordered(command, params);
		snap.invalidateSession();
		await snap.refresh();
		return { cancelled: r?.cancelled === true };
	};
	const ctx = Object.create(base, Object.getOwnPropertyDescriptors(base));
	Object.assign(ctx, {
		async waitForIdle() {
			await conn.ordered("wait_for_idle");
			await snap.refresh();
		},
		/** @param {{ parentSession?: string, setup?: unknown }} [options] */
		newSession(options) {
			if (options?.setup) {
				host.warnOnce("new-session-setup", "ctx.newSession({ setup }) is not supported by dreb-rs: setup is not run");
			}
			return sessionOp("new_session", { parentSession: options?.parentSession });
		},
		/** @param {string} entryId */
		fork: (entryId) => sessionOp("fork", { entryId }),
		/** @param {string} targetId @param {{ summarize?: boolean, customInstructions?: string, replaceInstructions?: boolean, label?: string }} [options] */
		navigateTree: (targetId, options) =>
			sessionOp("navigate_tree", {
				targetId,
				summarize: options?.summarize,
				customInstructions: options?.customInstructions,
				replaceInstructions: options?.replaceInstructions,
				label: options?.label,
			}),
		/** @param {string} sessionPath */
		switchSession: (sessionPath) => sessionOp("switch_session", { sessionPath }),
		async reload() {
			await conn.ordered("reload");
		},
	});
	return ctx;
}
