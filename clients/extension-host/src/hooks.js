// The hook points: the reference's event objects built from a call's params, this extension's handlers run in
// registration order with the reference's chaining, and the outcome mapped to the protocol's result shape. A
// handler that throws ends the chain: the call fails with its message (the runtime reports it; at `tool_call` the
// tool call is blocked).

/**
 * @typedef {(event: any, ctx: any) => unknown} Handler
 * @typedef {{ handlers: Handler[], params: Record<string, any>, ctx: any, signal: AbortSignal, services: HookServices }} HookInput
 * @typedef {{ log: (text: string) => void }} HookServices
 */

/** @param {unknown} v */
const json = (v) => JSON.stringify(v === undefined ? null : v);

/** @param {HookInput} h */
async function toolCall({ handlers, params, ctx }) {
	const input = params.input && typeof params.input === "object" ? params.input : {};
	const before = json(input);
	const event = { type: "tool_call", toolName: params.toolName, toolCallId: params.toolCallId, input };
	/** @type {any} */
	let result;
	for (const handler of handlers) {
		const r = await handler(event, ctx);
		if (r) {
			result = r;
			if (result.block) break;
		}
	}
	if (result?.block) {
		return result.reason === undefined ? { block: true } : { block: true, reason: String(result.reason) };
	}
	// Handlers change the arguments by mutating `event.input` (or replacing it).
	if (result?.input && typeof result.input === "object" && json(result.input) !== before) return { input: result.input };
	if (event.input && typeof event.input === "object" && json(event.input) !== before) return { input: event.input };
	return {};
}

/** @param {HookInput} h */
async function toolResult({ handlers, params, ctx }) {
	const event = {
		type: "tool_result",
		toolName: params.toolName,
		toolCallId: params.toolCallId,
		input: params.input ?? {},
		content: params.content ?? [],
		details: params.details,
		isError: params.isError === true,
	};
	let modified = false;
	for (const handler of handlers) {
		/** @type {any} */
		const r = await handler(event, ctx);
		if (!r) continue;
		if (r.content !== undefined) {
			event.content = r.content;
			modified = true;
		}
		if (r.details !== undefined) {
			event.details = r.details;
			modified = true;
		}
		if (r.isError !== undefined) {
			event.isError = r.isError === true;
			modified = true;
		}
	}
	if (!modified) return {};
	return { content: event.content, details: event.details, isError: event.isError };
}

/** @param {HookInput} h */
async function context({ handlers, params, ctx }) {
	const original = Array.isArray(params.messages) ? params.messages : [];
	const before = json(original);
	let messages = original;
	for (const handler of handlers) {
		/** @type {any} */
		const r = await handler({ type: "context", messages }, ctx);
		if (r && Array.isArray(r.messages)) messages = r.messages;
	}
	// Changed by a result or in place.
	return json(messages) !== before ? { messages } : {};
}

/** @param {HookInput} h */
async function beforeProviderRequest({ handlers, params, ctx }) {
	const before = json(params.payload);
	let payload = params.payload;
	for (const handler of handlers) {
		const r = await handler({ type: "before_provider_request", payload }, ctx);
		if (r !== undefined) payload = r;
	}
	return json(payload) !== before ? { payload } : {};
}

/** @param {HookInput} h */
async function input({ handlers, params, ctx }) {
	const text0 = typeof params.text === "string" ? params.text : "";
	const images0 = params.images;
	let text = text0;
	let images = images0;
	for (const handler of handlers) {
		/** @type {any} */
		const r = await handler({ type: "input", text, images, source: params.source }, ctx);
		if (r?.action === "handled") return { action: "handled" };
		if (r?.action === "transform") {
			text = typeof r.text === "string" ? r.text : text;
			images = r.images ?? images;
		}
	}
	if (text === text0 && images === images0) return { action: "continue" };
	/** @type {Record<string, unknown>} */
	const out = { action: "transform", text };
	if (images !== undefined && images !== images0) out.images = images;
	return out;
}

/** @param {any} m */
function customMessage(m) {
	/** @type {Record<string, unknown>} */
	const out = { customType: String(m.customType ?? "extension"), content: m.content ?? "" };
	if (m.display !== undefined) out.display = m.display !== false;
	if (m.details !== undefined) out.details = m.details;
	return out;
}

/** @param {HookInput} h */
async function beforeAgentStart({ handlers, params, ctx, services }) {
	let systemPrompt = typeof params.systemPrompt === "string" ? params.systemPrompt : "";
	let systemPromptChanged = false;
	const messages = [];
	for (const handler of handlers) {
		const event = { type: "before_agent_start", prompt: params.prompt, images: params.images, systemPrompt };
		/** @type {any} */
		const r = await handler(event, ctx);
		if (!r) continue;
		if (r.message) messages.push(r.message);
		if (r.systemPrompt !== undefined) {
			systemPrompt = String(r.systemPrompt);
			systemPromptChanged = true;
		}
	}
	/** @type {Record<string, unknown>} */
	const out = {};
	if (messages.length > 0) {
		out.message = customMessage(messages[0]);
		if (messages.length > 1) {
			services.log(
				`extension host: before_agent_start: ${messages.length} handlers returned a message; the protocol carries one, the first is sent`,
			);
		}
	}
	if (systemPromptChanged) out.systemPrompt = systemPrompt;
	return out;
}

/** @param {any} r */
function bashResult(r) {
	/** @type {Record<string, unknown>} */
	const out = { output: String(r?.output ?? "") };
	if (typeof r?.exitCode === "number") out.exitCode = r.exitCode;
	if (r?.cancelled !== undefined) out.cancelled = r.cancelled === true;
	if (r?.truncated !== undefined) out.truncated = r.truncated === true;
	return out;
}

/** @param {HookInput} h */
async function userBash({ handlers, params, ctx, signal }) {
	const event = {
		type: "user_bash",
		command: params.command,
		excludeFromContext: params.excludeFromContext === true,
		cwd: params.cwd,
	};
	for (const handler of handlers) {
		/** @type {any} */
		const r = await handler(event, ctx);
		if (!r) continue;
		if (r.result) return { result: bashResult(r.result) };
		if (r.operations && typeof r.operations.exec === "function") {
			// Custom operations: run them here and hand the runtime the result.
			/** @type {Buffer[]} */
			const chunks = [];
			const { exitCode } = await r.operations.exec(String(params.command), String(params.cwd ?? process.cwd()), {
				onData: (/** @type {Buffer | string} */ d) => {
					chunks.push(Buffer.isBuffer(d) ? d : Buffer.from(String(d)));
				},
				signal,
			});
			/** @type {Record<string, unknown>} */
			const result = { output: Buffer.concat(chunks).toString("utf8") };
			if (typeof exitCode === "number") result.exitCode = exitCode;
			if (signal.aborted || exitCode === null) result.cancelled = true;
			return { result };
		}
		return {};
	}
	return {};
}

/**
 * `session_before_switch` / `session_before_fork`: the last result counts, a cancel ends the chain. A fork's
 * result may also keep the agent's conversation (`skipConversationRestore`).
 * @param {HookInput} h @param {Record<string, unknown>} event
 */
async function cancellable({ handlers, ctx }, event) {
	/** @type {any} */
	let result;
	for (const handler of handlers) {
		const r = await handler(event, ctx);
		if (r) {
			result = r;
			if (result.cancel) return { cancel: true };
		}
	}
	/** @type {Record<string, unknown>} */
	const out = {};
	if (result?.cancel !== undefined) out.cancel = result.cancel === true;
	if (event.type === "session_before_fork" && typeof result?.skipConversationRestore === "boolean") {
		out.skipConversationRestore = result.skipConversationRestore;
	}
	return out;
}

/**
 * `session_before_compact`: the runtime's preparation and branch, as the reference's event carries them (`fileOps`
 * as Sets). The last result counts, a cancel ends the chain; a `compaction` result is the supplied compaction.
 * @param {HookInput} h
 */
async function beforeCompact(h) {
	const { params, signal } = h;
	const p = params.preparation ?? {};
	const ops = p.fileOps ?? {};
	const preparation = {
		...p,
		fileOps: { read: new Set(ops.read ?? []), written: new Set(ops.written ?? []), edited: new Set(ops.edited ?? []) },
	};
	const event = {
		type: "session_before_compact",
		preparation,
		branchEntries: Array.isArray(params.branchEntries) ? params.branchEntries : [],
		customInstructions: params.customInstructions,
		signal,
	};
	/** @type {any} */
	let result;
	for (const handler of h.handlers) {
		const r = await handler(event, h.ctx);
		if (r) {
			result = r;
			if (result.cancel) return { cancel: true };
		}
	}
	/** @type {Record<string, unknown>} */
	const out = {};
	if (result?.cancel !== undefined) out.cancel = result.cancel === true;
	const supplied = result?.compaction ?? result?.summary;
	if (supplied && typeof supplied.summary === "string") {
		/** @type {Record<string, unknown>} */
		const summary = { summary: supplied.summary };
		if (typeof supplied.firstKeptEntryId === "string") summary.firstKeptEntryId = supplied.firstKeptEntryId;
		if (typeof supplied.tokensBefore === "number") summary.tokensBefore = supplied.tokensBefore;
		if (supplied.details !== undefined) summary.details = supplied.details;
		out.summary = summary;
	}
	return out;
}

/**
 * `session_before_tree`: the runtime's preparation, as the reference's event carries it.
 * @param {HookInput} h
 */
async function beforeTree(h) {
	const { params, signal } = h;
	const preparation = params.preparation ?? {
		targetId: params.targetId,
		oldLeafId: null,
		commonAncestorId: null,
		entriesToSummarize: [],
		userWantsSummary: params.summarize === true,
	};
	/** @type {any} */
	let result;
	for (const handler of h.handlers) {
		const r = await handler({ type: "session_before_tree", preparation, signal }, h.ctx);
		if (r) {
			result = r;
			if (result.cancel) return { cancel: true };
		}
	}
	/** @type {Record<string, unknown>} */
	const out = {};
	if (result?.cancel !== undefined) out.cancel = result.cancel === true;
	if (result?.summary && typeof result.summary.summary === "string") {
		out.summary =
			result.summary.details === undefined
				? { summary: result.summary.summary }
				: { summary: result.summary.summary, details: result.summary.details };
	}
	// The reference lets the result override the request's summary instructions and label.
	if (typeof result?.customInstructions === "string") out.customInstructions = result.customInstructions;
	if (typeof result?.replaceInstructions === "boolean") out.replaceInstructions = result.replaceInstructions;
	if (typeof result?.label === "string") out.label = result.label;
	return out;
}

/**
 * `session_directory`: every handler is asked with the event only (no context), in order; the last `sessionDir`
 * wins. A handler that throws is logged and the next one is asked, as the reference's CLI does.
 * @param {HookInput} h
 */
async function sessionDirectory({ handlers, params, services }) {
	/** @type {string | undefined} */
	let sessionDir;
	for (const handler of handlers) {
		try {
			/** @type {any} */
			const r = await /** @type {any} */ (handler)({ type: "session_directory", cwd: params.cwd });
			if (typeof r?.sessionDir === "string" && r.sessionDir) sessionDir = r.sessionDir;
		} catch (e) {
			services.log(`session_directory handler failed: ${e instanceof Error ? e.message : String(e)}`);
		}
	}
	return sessionDir === undefined ? {} : { sessionDir };
}

/** @type {Record<string, (h: HookInput) => Promise<Record<string, unknown>>>} */
/**
 * `resources_discover`: every handler's skill, prompt and theme paths, in order.
 * @param {HookInput} h
 */
async function resourcesDiscover({ handlers, params, ctx }) {
	const event = { type: "resources_discover", cwd: params.cwd, reason: params.reason };
	/** @type {Record<string, string[]>} */
	const out = {};
	for (const handler of handlers) {
		/** @type {any} */
		const r = await handler(event, ctx);
		for (const key of ["skillPaths", "promptPaths", "themePaths"]) {
			if (Array.isArray(r?.[key]) && r[key].length) (out[key] ??= []).push(...r[key].map(String));
		}
	}
	return out;
}

export const HOOKS = {
	resources_discover: resourcesDiscover,
	tool_call: toolCall,
	tool_result: toolResult,
	context,
	before_provider_request: beforeProviderRequest,
	input,
	before_agent_start: beforeAgentStart,
	user_bash: userBash,
	session_before_switch: (h) =>
		cancellable(h, { type: "session_before_switch", reason: h.params.reason, targetSessionFile: h.params.targetSessionFile }),
	session_before_fork: (h) => cancellable(h, { type: "session_before_fork", entryId: h.params.entryId }),
	session_before_compact: beforeCompact,
	session_before_tree: beforeTree,
	session_directory: sessionDirectory,
};
