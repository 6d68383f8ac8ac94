// `dreb`, the ExtensionAPI an extension's factory gets: registrations are kept here (and sent with `register` once
// `initialize` was answered), actions are protocol commands.

import { spawn } from "node:child_process";
import * as path from "node:path";
import { createEventBus } from "./event-bus.js";

/** Hook points the runtime sends as calls. */
export const HOOK_CALLS = new Set([
	"tool_call",
	"tool_result",
	"context",
	"before_provider_request",
	"input",
	"before_agent_start",
	"user_bash",
	"session_before_switch",
	"session_before_fork",
	"session_before_compact",
	"session_before_tree",
	"resources_discover",
	"session_directory",
]);

/**
 * The reference's `session_switch` and `session_fork` arrive as the protocol's `session_start` (reason
 * `new`/`resume`, `fork`): a handler for them subscribes to `session_start`.
 * @param {Iterable<string>} names the events with handlers
 * @returns {string[]}
 */
export function subscriptionFor(names) {
	const events = new Set(names);
	if (events.has("session_switch") || events.has("session_fork")) events.add("session_start");
	return [...events].sort();
}

/**
 * @typedef {{ name: string, label?: string, description: string, parameters?: unknown, promptSnippet?: string, promptGuidelines?: string[], execute: Function }} ToolDefinition
 * @typedef {{ name: string, description?: string, handler: (args: string, ctx: any) => unknown }} CommandDefinition
 * @typedef {{ name: string, description?: string, type: "boolean" | "string", default?: boolean | string }} FlagDefinition
 */

export class Registry {
	constructor() {
		/** @type {Map<string, Function[]>} */
		this.handlers = new Map();
		/** @type {Map<string, ToolDefinition>} */
		this.tools = new Map();
		/** @type {Map<string, CommandDefinition>} */
		this.commands = new Map();
		/** @type {Map<string, FlagDefinition>} */
		this.flags = new Map();
		/** @type {Map<string, unknown>} */
		this.shortcuts = new Map();
		/** @type {Map<string, unknown>} */
		this.messageRenderers = new Map();
		/** @type {Map<string, boolean | string>} */
		this.flagValues = new Map();
		/** @type {Map<string, Record<string, unknown>>} providers (`registerProvider`), their configs as JSON */
		this.providers = new Map();
	}

	/** @param {string} event */
	handlersFor(event) {
		return this.handlers.get(event) ?? [];
	}

	/** @param {ToolDefinition} tool */
	static toolRegistration(tool) {
		/** @type {Record<string, unknown>} */
		const reg = {
			name: tool.name,
			label: tool.label ?? tool.name,
			description: tool.description ?? "",
			parameters: toJsonSchema(tool.parameters),
		};
		if (typeof tool.promptSnippet === "string") reg.promptSnippet = tool.promptSnippet;
		if (Array.isArray(tool.promptGuidelines)) reg.promptGuidelines = tool.promptGuidelines.map(String);
		return reg;
	}

	/** @param {CommandDefinition} c */
	static commandRegistration(c) {
		return c.description ? { name: c.name, description: c.description } : { name: c.name };
	}

	/** @param {FlagDefinition} f */
	static flagRegistration(f) {
		/** @type {Record<string, unknown>} */
		const reg = { name: f.name, type: f.type === "string" ? "string" : "boolean" };
		if (f.description) reg.description = f.description;
		if (f.default !== undefined) reg.default = f.default;
		return reg;
	}

	/** @param {string | undefined} name */
	registration(name) {
		/** @type {Record<string, unknown>} */
		const reg = {};
		if (name) reg.name = name;
		const events = subscriptionFor(this.handlers.keys());
		if (events.length) reg.events = events;
		if (this.commands.size) reg.commands = [...this.commands.values()].map(Registry.commandRegistration);
		if (this.tools.size) reg.tools = [...this.tools.values()].map(Registry.toolRegistration);
		if (this.flags.size) reg.flags = [...this.flags.values()].map(Registry.flagRegistration);
		if (this.providers.size) reg.providers = [...this.providers].map(([name, config]) => ({ name, config }));
		return reg;
	}
}

/**
 * A provider config as the protocol carries it: the reference's `ProviderConfig` without its functions
 * (`streamSimple`, `oauth`), which cannot leave this process.
 * @param {string} name @param {unknown} config @param {import("./context.js").HostServices} host
 * @returns {Record<string, unknown>}
 */
function providerConfig(name, config, host) {
	const c = config && typeof config === "object" ? /** @type {Record<string, unknown>} */ (config) : {};
	const { streamSimple, oauth, ...rest } = c;
	if (typeof streamSimple === "function") {
		host.warnOnce(
			`streamSimple:${name}`,
			`registerProvider("${name}"): a custom streamSimple is not supported by dreb-rs (the runtime streams from its own providers); the config's api, baseUrl and models are used`,
		);
	}
	if (oauth !== undefined) {
		host.warnOnce(`oauth:${name}`, `registerProvider("${name}"): oauth (/login) is not supported in RPC mode; ignored`);
	}
	return JSON.parse(JSON.stringify(rest));
}

/**
 * A TypeBox schema is a JSON Schema object with symbol-keyed metadata; JSON keeps the schema, drops the symbols.
 * @param {unknown} schema
 */
function toJsonSchema(schema) {
	if (schema === undefined || schema === null) return { type: "object", properties: {} };
	return JSON.parse(JSON.stringify(schema));
}

/**
 * Run a program (no shell) in the host process, as the reference's `exec` does: used when an AbortSignal is given,
 * which the protocol's `exec` cannot honour.
 * @param {string} command @param {string[]} args @param {string} cwd
 * @param {{ signal?: AbortSignal, timeout?: number }} options
 * @returns {Promise<{ stdout: string, stderr: string, code: number, killed: boolean }>}
 */
export function execLocal(command, args, cwd, options) {
	return new Promise((resolve) => {
		let stdout = "";
		let stderr = "";
		let killed = false;
		/** @type {NodeJS.Timeout | undefined} */
		let timer;
		const proc = spawn(command, args, { cwd, shell: false, stdio: ["ignore", "pipe", "pipe"] });
		const kill = () => {
			if (killed) return;
			killed = true;
			proc.kill("SIGTERM");
			setTimeout(() => {
				if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
			}, 5000).unref();
		};
		if (options.signal) {
			if (options.signal.aborted) kill();
			else options.signal.addEventListener("abort", kill, { once: true });
		}
		if (options.timeout && options.timeout > 0) timer = setTimeout(kill, options.timeout);
		proc.stdout.on("data", (d) => {
			stdout += d.toString();
		});
		proc.stderr.on("data", (d) => {
			stderr += d.toString();
		});
		/** @param {number} code */
		const done = (code) => {
			if (timer) clearTimeout(timer);
			options.signal?.removeEventListener("abort", kill);
			resolve({ stdout, stderr, code, killed });
		};
		proc.on("error", () => done(1));
		proc.on("close", (code) => done(code ?? 0));
	});
}

/**
 * @param {object} deps
 * @param {Registry} deps.registry
 * @param {import("./context.js").HostServices} deps.host
 * @param {() => boolean} deps.initialized whether `initialize` was answered (registrations then go out with `register`)
 * @param {(registration: Record<string, unknown>) => void} deps.register sends a later registration
 * @param {ReturnType<typeof createEventBus>} [deps.events] the event bus shared with the other extensions of the host
 */
export function createExtensionAPI({ registry, host, initialized, register, events = createEventBus() }) {
	const { conn, snap } = host;
	const notReady = () => {
		throw new Error("Extension runtime not initialized. Action methods cannot be called during extension loading.");
	};
	/** @template T @param {() => T} f @returns {T} */
	const action = (f) => (initialized() ? f() : notReady());

	const api = {
		/** @param {string} event @param {Function} handler */
		on(event, handler) {
			const list = registry.handlers.get(event) ?? [];
			const before = subscriptionFor(registry.handlers.keys());
			list.push(handler);
			registry.handlers.set(event, list);
			if (initialized()) {
				const after = subscriptionFor(registry.handlers.keys());
				const added = after.filter((e) => !before.includes(e));
				if (added.length) register({ events: added });
			}
		},
		/** @param {ToolDefinition} tool */
		registerTool(tool) {
			if (!tool || typeof tool.name !== "string" || !tool.name) throw new Error("registerTool: a tool needs a name");
			registry.tools.set(tool.name, tool);
			if (initialized()) register({ tools: [Registry.toolRegistration(tool)] });
		},
		/** @param {string} name @param {Omit<CommandDefinition, "name">} options */
		registerCommand(name, options) {
			const command = { ...options, name };
			registry.commands.set(name, command);
			if (initialized()) register({ commands: [Registry.commandRegistration(command)] });
		},
		/** @param {string} shortcut @param {unknown} options */
		registerShortcut(shortcut, options) {
			registry.shortcuts.set(shortcut, options);
		},
		/** @param {string} name @param {Omit<FlagDefinition, "name">} options */
		registerFlag(name, options) {
			const flag = { ...options, name };
			registry.flags.set(name, flag);
			if (options?.default !== undefined && !registry.flagValues.has(name)) registry.flagValues.set(name, options.default);
			if (initialized()) register({ flags: [Registry.flagRegistration(flag)] });
		},
		/** @param {string} name */
		getFlag(name) {
			if (!registry.flags.has(name)) return undefined;
			return registry.flagValues.get(name);
		},
		/** @param {string} customType @param {unknown} renderer */
		registerMessageRenderer(customType, renderer) {
			registry.messageRenderers.set(customType, renderer);
		},

		/**
		 * @param {{ customType: string, content: unknown, display?: boolean, details?: unknown }} message
		 * @param {{ triggerTurn?: boolean, deliverAs?: "steer" | "followUp" | "nextTurn" }} [options]
		 */
		sendMessage(message, options) {
			action(() => {
				snap.invalidateSession();
				void conn.fire("send_message", {
					message: {
						customType: message.customType,
						content: message.content,
						display: message.display,
						details: message.details,
					},
					triggerTurn: options?.triggerTurn,
					deliverAs: options?.deliverAs,
				});
			});
		},
		/** @param {unknown} content @param {{ deliverAs?: "steer" | "followUp" }} [options] */
		sendUserMessage(content, options) {
			action(() => {
				snap.invalidateSession();
				void conn.fire("send_user_message", { content, deliverAs: options?.deliverAs });
			});
		},
		/** @param {string} customType @param {unknown} [data] */
		appendEntry(customType, data) {
			action(() => {
				snap.invalidateSession();
				void conn.fire("append_entry", { customType, data });
			});
		},
		/** @param {string} name */
		setSessionName(name) {
			action(() => {
				snap.invalidateSession();
				if (snap.context) snap.context.sessionName = name;
				void conn.fire("set_session_name", { name });
			});
		},
		getSessionName: () => action(() => snap.ctxField("sessionName") ?? undefined),
		/** @param {string} entryId @param {string | undefined} label */
		setLabel(entryId, label) {
			action(() => {
				snap.invalidateSession();
				void conn.fire("set_label", { entryId, label: label || undefined });
			});
		},
		/**
		 * @param {string} command @param {string[]} [args]
		 * @param {{ signal?: AbortSignal, timeout?: number, cwd?: string }} [options]
		 */
		async exec(command, args = [], options = {}) {
			const cwd = options.cwd ? path.resolve(host.init().cwd, options.cwd) : host.init().cwd;
			if (options.signal) return execLocal(command, args, cwd, options);
			try {
				const r = await conn.ordered("exec", {
					command,
					args,
					cwd: options.cwd,
					timeout: options.timeout && options.timeout > 0 ? Math.round(options.timeout) : undefined,
				});
				return {
					stdout: String(r?.stdout ?? ""),
					stderr: String(r?.stderr ?? ""),
					code: typeof r?.code === "number" ? r.code : 1,
					killed: r?.killed === true,
				};
			} catch (e) {
				// The reference resolves a program that cannot start with code 1.
				return { stdout: "", stderr: e instanceof Error ? e.message : String(e), code: 1, killed: false };
			}
		},
		getActiveTools: () =>
			action(() => {
				const tools = snap.ctxField("activeTools");
				return Array.isArray(tools) ? [...tools] : [];
			}),
		getAllTools: () =>
			action(() =>
				snap.requireTools("dreb.getAllTools()").map((t) => ({
					name: t.name,
					description: t.description,
					parameters: t.parameters,
					sourceInfo: sourceInfoOf(t.source, host),
				})),
			),
		/** @param {string[]} toolNames */
		setActiveTools(toolNames) {
			action(() => {
				const names = [...toolNames].map(String);
				if (snap.context) snap.context.activeTools = names;
				void conn.fire("set_active_tools", { toolNames: names });
			});
		},
		getCommands: () =>
			action(() =>
				[...registry.commands.values()].map((c) => ({
					name: c.name,
					description: c.description,
					source: "extension",
					sourceInfo: sourceInfoOf(host.init().extensionPath, host),
				})),
			),
		/** @param {{ provider: string, id: string }} model */
		async setModel(model) {
			if (!initialized()) throw new Error("Extension runtime not initialized");
			const r = await conn.ordered("set_model", { provider: model?.provider, modelId: model?.id });
			const ok = r?.ok === true;
			if (ok && snap.context) snap.context.model = model;
			return ok;
		},
		getThinkingLevel: () => action(() => snap.ctxField("thinkingLevel") ?? "off"),
		/** @param {string} level */
		setThinkingLevel(level) {
			action(() => {
				if (snap.context) snap.context.thinkingLevel = level;
				void conn.fire("set_thinking_level", { level });
			});
		},
		/** As in the reference, queued while the module loads (sent with `initialize`), at once afterwards. @param {string} name @param {unknown} config */
		registerProvider(name, config) {
			const c = providerConfig(String(name), config, host);
			registry.providers.set(String(name), c);
			if (initialized()) register({ providers: [{ name: String(name), config: c }] });
		},
		/** @param {string} name */
		unregisterProvider(name) {
			const had = registry.providers.delete(String(name));
			if (had && initialized()) void conn.fire("unregister_provider", { name: String(name) });
		},
		events,
	};
	return api;
}

/**
 * @param {unknown} source `builtin` or an extension's path
 * @param {import("./context.js").HostServices} host
 */
function sourceInfoOf(source, host) {
	const p = typeof source === "string" ? source : "";
	if (p === "builtin" || p === "") return { path: "<builtin>", source: "builtin", scope: "user", origin: "top-level" };
	return {
		path: p,
		source: "local",
		scope: p.startsWith(path.join(host.init().cwd, ".dreb")) ? "project" : "user",
		origin: "top-level",
		baseDir: path.dirname(p),
	};
}
