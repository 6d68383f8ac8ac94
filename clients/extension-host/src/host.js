// The Node extension host: one extension of the TypeScript reference, loaded into this process and served to the
// runtime over the extension protocol (protocol/extension.yaml); `multiplex.js` runs several in one process. Calls run concurrently (a handler may wait on a
// dialog while the runtime sends further calls); events run one at a time, in order.

import { AsyncLocalStorage } from "node:async_hooks";
import { createExtensionAPI, HOOK_CALLS, Registry } from "./api.js";
import { Connection } from "./connection.js";
import { createCommandContext, createContext } from "./context.js";
import { HOOKS } from "./hooks.js";
import { loadFactory, resolveEntry, scanNeeds } from "./loader.js";
import { setAgentDirForHost } from "./shims/coding-agent.js";
import { Snapshots } from "./snapshot.js";

export const PROTOCOL_VERSION = "1";

/** @param {unknown} e */
function messageOf(e) {
	if (e instanceof Error) return e.message || e.name || "Error";
	return typeof e === "string" ? e : JSON.stringify(e) ?? String(e);
}

/** The calls answered only when the commands their handlers sent without waiting were answered. */
const FLUSHED_CALLS = new Set(["execute_command", "execute_tool", "session_shutdown"]);

/** How long a call waits for the handlers of earlier events. */
const EVENTS_WAIT_MS = 2000;

/** @param {Promise<unknown>} p @param {number} ms */
function waitAtMost(p, ms) {
	/** @type {NodeJS.Timeout | undefined} */
	let timer;
	return Promise.race([p, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
}

/** Answered already (by `initialize`, which writes its own response). */
const ANSWERED = Symbol("answered");

export class Host {
	/**
	 * @param {object} options
	 * @param {NodeJS.ReadableStream} options.input the runtime's frames
	 * @param {(line: string) => void} options.writeLine the protocol stream
	 * @param {(text: string) => void} options.log the runtime's log
	 * @param {string | undefined} options.extensionPath the extension (command-line argument)
	 * @param {() => void} [options.onClose] stdin closed
	 * @param {ReturnType<typeof import("./event-bus.js").createEventBus>} [options.events] the event bus shared by
	 *   the extensions of this process (`dreb.events`)
	 */
	constructor({ input, writeLine, log, extensionPath, onClose, events }) {
		this.log = log;
		this.extensionArg = extensionPath;
		this.onClose = onClose ?? (() => {});
		this.conn = new Connection(input, writeLine, log);
		// Commands the extension sends without waiting (notify, appendEntry, ...) are ordered per call (or for the
		// events, or outside both): the call being served is tracked through its async work.
		/** @type {AsyncLocalStorage<{ lane: string }>} */
		this.als = new AsyncLocalStorage();
		this.conn.currentLane = () => this.als.getStore()?.lane ?? "detached";
		this.snap = new Snapshots(this.conn);
		this.registry = new Registry();
		this.ready = false;
		this.info = { cwd: process.cwd(), hasUI: false, agentDir: "", extensionPath: extensionPath ?? "" };
		/** @type {Set<string>} */
		this.warned = new Set();
		/** @type {import("./context.js").HostServices} */
		this.services = {
			conn: this.conn,
			snap: this.snap,
			log,
			warnOnce: (key, text) => {
				if (this.warned.has(key)) return;
				this.warned.add(key);
				log(`extension host: ${text}`);
			},
			init: () => this.info,
		};
		this.ctx = createContext(this.services);
		this.commandCtx = createCommandContext(this.services, this.ctx);
		this.api = createExtensionAPI({
			registry: this.registry,
			host: this.services,
			initialized: () => this.ready,
			register: (registration) => {
				void this.conn.fire("register", { registration });
			},
			events,
		});
		/** @type {Map<string, { controller: AbortController, cancelled: boolean }>} */
		this.calls = new Map();
		/** @type {Promise<void>} */
		this.events = Promise.resolve();
		/** @type {Promise<void> | undefined} */
		this.initializing = undefined;
		/** @type {string | undefined} the session file when the last `session_start` was handled */
		this.lastSessionFile = undefined;
	}

	start() {
		const handlers = {
			onCall: (/** @type {Record<string, unknown>} */ frame) => this.onCall(frame),
			onEvent: (/** @type {Record<string, unknown>} */ frame) => this.onEvent(frame),
			onClose: () => this.onClose(),
		};
		// Without an input, the frames come from the multiplexer (`receiveFrame`).
		if (this.conn.input) this.conn.start(handlers);
		else this.conn.attach(handlers);
	}

	/** @param {Record<string, unknown>} frame */
	onCall(frame) {
		const id = frame.id;
		const type = String(frame.type ?? "");
		const key = String(id);
		const call = { controller: new AbortController(), cancelled: false };
		this.calls.set(key, call);
		const { id: _id, type: _type, ...params } = frame;
		const lane = `call:${key}`;
		// As in the reference, where the host awaited every event's handlers, a call runs after the handlers of
		// the events that came before it (a tool call after the session_start that rebuilds the state), but waits
		// for them at most EVENTS_WAIT_MS: an event handler may itself wait on something that needs this call.
		const eventsBefore = this.events;
		this.als
			.run({ lane }, async () => {
				if (type !== "initialize") await waitAtMost(eventsBefore, EVENTS_WAIT_MS);
				return this.dispatch(type, params, call.controller.signal, id);
			})
			.then(
				(data) => (data === ANSWERED ? undefined : { data }),
				(e) => ({ error: messageOf(e) }),
			)
			.then(async (outcome) => {
				// Commands and tools are answered after the commands they sent without waiting, as the reference's
				// synchronous actions were done when the handler returned. Hooks answer at once: their actions may
				// need the runtime to finish the hook first (a prompt from an `input` handler).
				if (FLUSHED_CALLS.has(type)) await this.conn.flush(lane);
				else void this.conn.flush(lane);
				return outcome;
			})
			.then((outcome) => {
				this.calls.delete(key);
				// A cancelled call is no longer waited for: its answer would be dropped.
				if (outcome && !call.cancelled) this.conn.respond(id, type, outcome);
			});
	}

	/** @param {Record<string, unknown>} frame */
	onEvent(frame) {
		if (frame.type === "cancel") {
			const call = this.calls.get(String(frame.id));
			if (call) {
				call.cancelled = true;
				call.controller.abort();
			}
			return;
		}
		this.events = this.events
			.then(() => this.als.run({ lane: "events" }, () => this.handleEvent(frame)))
			.catch((e) => this.log(`extension host: ${String(frame.type)} failed: ${messageOf(e)}`));
	}

	/** Fetch the snapshots before a handler; a failure leaves the previous ones. @param {{ light?: boolean }} [options] */
	async refresh(options) {
		try {
			await this.snap.refresh(options);
			if (this.lastSessionFile === undefined) this.lastSessionFile = this.snap.ctxField("sessionFile") ?? undefined;
		} catch (e) {
			this.log(`extension host: cannot read the session state: ${messageOf(e)}`);
		}
	}

	/**
	 * @param {string} type @param {Record<string, any>} params @param {AbortSignal} signal @param {unknown} id
	 * @returns {Promise<unknown>}
	 */
	async dispatch(type, params, signal, id) {
		if (type === "initialize") return this.initialize(params, id);
		if (!this.ready) {
			if (this.initializing) await this.initializing.catch(() => {});
			if (!this.ready) throw new Error(`The extension is not initialized (${type} before initialize)`);
		}
		if (type === "session_shutdown") return this.shutdown();
		if (type === "execute_tool") return this.executeTool(params, signal);
		if (type === "execute_command") return this.executeCommand(params);
		const hook = HOOKS[type];
		if (hook && HOOK_CALLS.has(type)) {
			const handlers = this.registry.handlersFor(type);
			// `session_directory` handlers get no context (a CLI start-up hook in the reference).
			if (handlers.length > 0 && type !== "session_directory") await this.refresh();
			return hook({
				handlers,
				params,
				ctx: this.ctx,
				signal,
				services: { log: this.log },
			});
		}
		throw new Error(`Unknown command: ${type}`);
	}

	/** @param {Record<string, any>} params @param {unknown} id */
	async initialize(params, id) {
		if (this.ready) {
			return { protocolVersion: PROTOCOL_VERSION, registration: this.registry.registration(undefined) };
		}
		if (this.initializing) throw new Error("initialize is already under way");
		const cwd = typeof params.cwd === "string" && params.cwd ? params.cwd : process.cwd();
		this.info = {
			cwd,
			hasUI: params.hasUI === true,
			agentDir: typeof params.agentDir === "string" ? params.agentDir : "",
			extensionPath: this.extensionArg ?? String(params.extensionPath ?? ""),
		};
		this.snap.initial = { cwd, hasUI: this.info.hasUI };
		if (this.info.agentDir) setAgentDirForHost(this.info.agentDir);
		const flags = params.flagValues;
		if (flags && typeof flags === "object") {
			for (const [name, value] of Object.entries(flags)) {
				if (typeof value === "boolean" || typeof value === "string") this.registry.flagValues.set(name, value);
				else if (value !== null && value !== undefined) this.registry.flagValues.set(name, String(value));
			}
		}
		const load = async () => {
			const target = this.extensionArg ?? (typeof params.extensionPath === "string" ? params.extensionPath : "");
			if (!target) throw new Error("No extension path (dreb-extension-host <extension path>)");
			const entry = resolveEntry(target, cwd);
			const needs = scanNeeds(entry);
			this.snap.needs.session ||= needs.session;
			this.snap.needs.models ||= needs.models;
			this.snap.needs.tools ||= needs.tools;
			const factory = await loadFactory(entry);
			await factory(this.api);
		};
		const run = load();
		this.initializing = run;
		try {
			await run;
		} catch (e) {
			this.initializing = undefined;
			throw new Error(`Failed to load extension: ${messageOf(e)}`);
		}
		// The registration, the response and the switch to `register` for later registrations happen together,
		// so that nothing registered meanwhile is lost.
		const data = { protocolVersion: PROTOCOL_VERSION, registration: this.registry.registration(undefined) };
		this.conn.respond(id, "initialize", { data });
		this.ready = true;
		this.initializing = undefined;
		void this.refresh();
		return ANSWERED;
	}

	async shutdown() {
		const handlers = this.registry.handlersFor("session_shutdown");
		if (handlers.length === 0) return undefined;
		await this.refresh({ light: true });
		/** @type {unknown} */
		let failure;
		for (const handler of handlers) {
			try {
				await handler({ type: "session_shutdown" }, this.ctx);
			} catch (e) {
				failure ??= e;
			}
		}
		if (failure !== undefined) throw failure;
		return undefined;
	}

	/** @param {Record<string, any>} params @param {AbortSignal} signal */
	async executeTool(params, signal) {
		const name = String(params.toolName ?? "");
		const tool = this.registry.tools.get(name);
		if (!tool || typeof tool.execute !== "function") throw new Error(`Unknown tool: ${name}`);
		await this.refresh();
		const toolCallId = String(params.toolCallId ?? "");
		const lane = `tool:${toolCallId}`;
		/** @param {unknown} partial */
		const onUpdate = (partial) => {
			if (signal.aborted) return;
			void this.conn.fire("tool_update", { toolCallId, partialResult: partial ?? null }, lane);
		};
		const args = params.params && typeof params.params === "object" ? params.params : {};
		try {
			const result = await tool.execute(toolCallId, args, signal, onUpdate, this.ctx);
			return toolExecutionResult(result);
		} finally {
			// The updates go out before the result.
			await this.conn.flush(lane);
		}
	}

	/** @param {Record<string, any>} params */
	async executeCommand(params) {
		const name = String(params.name ?? "");
		const command = this.registry.commands.get(name);
		if (!command || typeof command.handler !== "function") throw new Error(`Unknown command: ${name}`);
		await this.refresh();
		await command.handler(String(params.args ?? ""), this.commandCtx);
		return undefined;
	}

	/** @param {Record<string, any>} frame */
	async handleEvent(frame) {
		if (!this.ready) return;
		switch (frame.type) {
			case "session_start":
				return this.sessionStart(frame);
			case "model_select":
				return this.modelSelect(frame);
			case "agent_event": {
				const event = frame.event;
				if (!event || typeof event !== "object" || typeof event.type !== "string") return;
				const handlers = this.registry.handlersFor(event.type);
				if (handlers.length === 0) return;
				await this.refresh({ light: true });
				return this.runEventHandlers(event.type, handlers, event);
			}
			default:
				return;
		}
	}

	/** @param {Record<string, any>} frame */
	async sessionStart(frame) {
		const reason = typeof frame.reason === "string" ? frame.reason : "startup";
		const previousSessionFile = this.lastSessionFile;
		await this.refresh();
		this.lastSessionFile = this.snap.ctxField("sessionFile") ?? undefined;
		// The reference's names: `session_start` at startup and reload, `session_switch` after a new or resumed
		// session, `session_fork` after a fork.
		if (reason === "new" || reason === "resume") {
			const event = { type: "session_switch", reason, previousSessionFile };
			return this.runEventHandlers("session_switch", this.registry.handlersFor("session_switch"), event);
		}
		if (reason === "fork") {
			const event = { type: "session_fork", previousSessionFile };
			return this.runEventHandlers("session_fork", this.registry.handlersFor("session_fork"), event);
		}
		const event = { type: "session_start", reason };
		return this.runEventHandlers("session_start", this.registry.handlersFor("session_start"), event);
	}

	/** @param {Record<string, any>} frame */
	async modelSelect(frame) {
		const handlers = this.registry.handlersFor("model_select");
		if (handlers.length === 0) return;
		await this.refresh({ light: true });
		const event = {
			type: "model_select",
			model: this.modelFor(frame.model, true),
			previousModel: frame.previousModel === undefined ? undefined : this.modelFor(frame.previousModel, false),
			source: "set",
		};
		return this.runEventHandlers("model_select", handlers, event);
	}

	/**
	 * The model object for `provider/id`: the current model, one of the models snapshot, or the two names.
	 * @param {unknown} ref @param {boolean} current
	 */
	modelFor(ref, current) {
		const text = String(ref ?? "");
		const slash = text.indexOf("/");
		const provider = slash >= 0 ? text.slice(0, slash) : "";
		const id = slash >= 0 ? text.slice(slash + 1) : text;
		const model = this.snap.ctxField("model");
		if (current && model && model.provider === provider && model.id === id) return model;
		const known = Array.isArray(this.snap.models?.models)
			? this.snap.models.models.find((/** @type {any} */ m) => m.provider === provider && m.id === id)
			: undefined;
		return known ?? { provider, id };
	}

	/** @param {string} name @param {Function[]} handlers @param {unknown} event */
	async runEventHandlers(name, handlers, event) {
		for (const handler of handlers) {
			try {
				await handler(event, this.ctx);
			} catch (e) {
				this.log(`extension host: ${name} handler failed: ${messageOf(e)}`);
			}
		}
	}
}

/** The protocol's ToolExecutionResult from a tool's return value. @param {any} result */
function toolExecutionResult(result) {
	if (typeof result === "string") return { content: [{ type: "text", text: result }] };
	if (!result || typeof result !== "object") return { content: [] };
	let content = result.content;
	if (typeof content === "string") content = [{ type: "text", text: content }];
	if (!Array.isArray(content)) content = [];
	/** @type {Record<string, unknown>} */
	const out = { content };
	if (result.details !== undefined) out.details = result.details;
	if (result.isError === true) out.isError = true;
	return out;
}
