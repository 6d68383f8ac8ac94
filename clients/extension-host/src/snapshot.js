// The session as the extension's synchronous getters see it (`ctx.isIdle()`, `ctx.model`, `ctx.sessionManager`,
// `ctx.modelRegistry`, `dreb.getActiveTools()`, ...). The reference answers them from its own memory; here they
// read snapshots the host fetches from the runtime right before it invokes a handler:
//
// - `get_context` before every handler, tool and command (agent events share a fetch already under way);
// - `get_session`, `get_models`, `get_tools` only when the extension needs them: when its source (the module and
//   the local modules it imports) names `sessionManager`, `modelRegistry` or `getAllTools`, or after a getter was
//   used without a snapshot (that use throws a clear error, and every later handler gets the snapshot). The session
//   is fetched again only when the session or its leaf changed, or after this extension changed it.

/** @typedef {import("./connection.js").Connection} Connection */

/** Thrown by a synchronous getter whose snapshot was never fetched. */
export class SnapshotUnavailableError extends Error {
	/** @param {string} what @param {string} kind */
	constructor(what, kind) {
		super(
			`${what} is not available here: the dreb-rs extension host reads it from a snapshot (${kind}) fetched before each handler runs, ` +
				`and none was fetched yet. Use it inside an event, tool or command handler; from now on every handler gets the snapshot.`,
		);
		this.name = "SnapshotUnavailableError";
	}
}

export class Snapshots {
	/** @param {Connection} conn */
	constructor(conn) {
		this.conn = conn;
		/** @type {any} the last `get_context` result */
		this.context = undefined;
		/** @type {any} the last `get_session` result */
		this.session = undefined;
		/** @type {string | undefined} what `session` was fetched for (session id, file and leaf) */
		this.sessionKey = undefined;
		this.sessionStale = false;
		/** @type {any} the last `get_models` result */
		this.models = undefined;
		/** @type {any[] | undefined} the last `get_tools` result */
		this.tools = undefined;
		this.needs = { session: false, models: false, tools: false };
		/** @type {Promise<void> | undefined} */
		this.inFlight = undefined;
		/** @type {Partial<Record<string, unknown>>} values known before the first `get_context` (from `initialize`) */
		this.initial = {};
	}

	/**
	 * Fetch the snapshots a handler may read. `light` (agent events, which can come in bursts) reuses the models
	 * and tools snapshots when there are some, and shares a fetch already under way.
	 * @param {{ light?: boolean }} [options]
	 * @returns {Promise<void>}
	 */
	refresh(options = {}) {
		// Agent events come in bursts: they share a fetch under way. A call gets its own, started after it came.
		if (options.light && this.inFlight) return this.inFlight;
		const run = this.fetch(options.light === true).finally(() => {
			if (this.inFlight === run) this.inFlight = undefined;
		});
		this.inFlight = run;
		return run;
	}

	/** @param {boolean} light */
	async fetch(light) {
		const pending = [];
		pending.push(
			this.conn.request("get_context").then((c) => {
				this.context = c;
			}),
		);
		if (this.needs.models && !(light && this.models)) {
			pending.push(
				this.conn.request("get_models").then((m) => {
					this.models = m;
				}),
			);
		}
		if (this.needs.tools && !(light && this.tools)) {
			pending.push(
				this.conn.request("get_tools").then((t) => {
					this.tools = Array.isArray(t) ? t : [];
				}),
			);
		}
		await Promise.all(pending);
		if (this.needs.session) {
			const key = this.keyOf(this.context);
			if (this.sessionStale || this.session === undefined || key !== this.sessionKey) {
				this.sessionStale = false;
				const s = await this.conn.request("get_session");
				this.session = s;
				this.sessionKey = key;
			}
		}
	}

	/** @param {any} c */
	keyOf(c) {
		return c ? `${c.sessionId ?? ""}\u0000${c.sessionFile ?? ""}\u0000${c.leafId ?? ""}` : "";
	}

	/** The extension changed the session (an entry, a label, a name): the next fetch reads it again. */
	invalidateSession() {
		this.sessionStale = true;
	}

	/** @param {string} key a field of `get_context` */
	ctxField(key) {
		if (this.context && key in this.context) return this.context[key];
		return this.initial[key];
	}

	/** @param {string} what */
	requireSession(what) {
		if (this.session === undefined) {
			this.needs.session = true;
			throw new SnapshotUnavailableError(what, "get_session");
		}
		return this.session;
	}

	/** @param {string} what */
	requireModels(what) {
		if (this.models === undefined) {
			this.needs.models = true;
			throw new SnapshotUnavailableError(what, "get_models");
		}
		return this.models;
	}

	/** @param {string} what */
	requireTools(what) {
		if (this.tools === undefined) {
			this.needs.tools = true;
			throw new SnapshotUnavailableError(what, "get_tools");
		}
		return this.tools;
	}
}
