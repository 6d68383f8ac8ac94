// The extension side of the dreb extension protocol's framing (protocol/extension.yaml `envelope`): JSON Lines
// on stdin (runtime → extension) and stdout (extension → runtime), requests in both directions, responses matched
// by id. Nothing else may be written to the protocol stream.

import { StringDecoder } from "node:string_decoder";

/** A command the host sent failed; the text is the runtime's error. */
export class CommandError extends Error {
	/** @param {string} command @param {string} message */
	constructor(command, message) {
		super(message);
		this.name = "CommandError";
		this.command = command;
	}
}

/**
 * @typedef {Record<string, unknown>} Frame
 * @typedef {{ onCall: (frame: Frame) => void, onEvent: (frame: Frame) => void, onClose: () => void }} Handlers
 */

export class Connection {
	/**
	 * @param {NodeJS.ReadableStream} input the runtime's frames
	 * @param {(line: string) => void} writeLine writes one line (with its LF) to the protocol stream
	 * @param {(text: string) => void} log the runtime's log (stderr)
	 */
	constructor(input, writeLine, log) {
		this.input = input;
		this.writeLine = writeLine;
		this.log = log;
		this.nextId = 1;
		/** @type {Map<string, { command: string, resolve: (data: unknown) => void, reject: (e: Error) => void }>} */
		this.pending = new Map();
		this.closed = false;
		// Commands sent without waiting ("fire and forget" in the reference's API) are sent one after the other:
		// the runtime serves each command on its own task, so two sent back to back could run out of order.
		/** @type {Map<string, Promise<void>>} */
		this.lanes = new Map();
		/** The lane of a command sent without a lane (the host sets it: the call being served). */
		this.currentLane = () => "detached";
	}

	/**
	 * Take frames from elsewhere (a channel of the multiplexed host): `receiveFrame` delivers them.
	 * @param {Handlers} handlers
	 */
	attach(handlers) {
		this.handlers = handlers;
	}

	/** Read the frames from `input`. @param {Handlers} handlers */
	start(handlers) {
		this.attach(handlers);
		const decoder = new StringDecoder("utf8");
		let buffer = "";
		this.input.on("data", (chunk) => {
			buffer += typeof chunk === "string" ? chunk : decoder.write(chunk);
			let nl = buffer.indexOf("\n");
			while (nl >= 0) {
				const line = buffer.slice(0, nl);
				buffer = buffer.slice(nl + 1);
				this.receive(line, handlers);
				nl = buffer.indexOf("\n");
			}
		});
		this.input.on("end", () => {
			buffer += decoder.end();
			if (buffer.trim()) this.receive(buffer, handlers);
			buffer = "";
			this.close();
			handlers.onClose();
		});
		this.input.on("error", (e) => {
			this.log(`extension host: stdin error: ${e instanceof Error ? e.message : String(e)}`);
		});
	}

	/** @param {string} line @param {Handlers} handlers */
	receive(line, handlers) {
		const text = line.endsWith("\r") ? line.slice(0, -1) : line;
		if (!text.trim()) return;
		let frame;
		try {
			frame = JSON.parse(text);
		} catch (e) {
			this.log(`extension host: dropped a line that is not JSON: ${text.slice(0, 200)}`);
			return;
		}
		if (frame === null || typeof frame !== "object" || Array.isArray(frame)) {
			this.log(`extension host: dropped a line that is not a JSON object: ${text.slice(0, 200)}`);
			return;
		}
		this.receiveFrame(frame, handlers);
	}

	/** @param {Frame} frame @param {Handlers} [handlers] */
	receiveFrame(frame, handlers = this.handlers) {
		if (!handlers) return;
		if (frame.type === "response") {
			this.resolve(frame);
		} else if (frame.type === "cancel") {
			// An event whose `id` names the call it cancels.
			handlers.onEvent(frame);
		} else if (typeof frame.id === "string" || typeof frame.id === "number") {
			handlers.onCall(frame);
		} else {
			handlers.onEvent(frame);
		}
	}

	/** @param {Frame} frame */
	resolve(frame) {
		const id = typeof frame.id === "string" ? frame.id : undefined;
		const waiter = id === undefined ? undefined : this.pending.get(id);
		if (!waiter || id === undefined) {
			if (id !== undefined) this.log(`extension host: dropped a response to no pending command (${id})`);
			return;
		}
		this.pending.delete(id);
		if (frame.success === true) {
			waiter.resolve(frame.data);
		} else {
			const error = typeof frame.error === "string" ? frame.error : JSON.stringify(frame.error ?? "command failed");
			waiter.reject(new CommandError(waiter.command, error));
		}
	}

	/** @param {Frame} frame */
	write(frame) {
		if (this.closed) return;
		this.writeLine(`${JSON.stringify(frame)}\n`);
	}

	/**
	 * Send a command and wait for its response's `data`.
	 * @param {string} command
	 * @param {Record<string, unknown>} [params]
	 * @returns {Promise<any>}
	 */
	request(command, params = {}) {
		if (this.closed) return Promise.reject(new CommandError(command, "the runtime closed the connection"));
		const id = `h${this.nextId++}`;
		return new Promise((resolve, reject) => {
			this.pending.set(id, { command, resolve, reject });
			this.write({ id, type: command, ...params });
		});
	}

	/**
	 * Send a command without waiting for it (a failure is logged), after every command sent earlier on the same
	 * lane has been answered. Returns when this one is answered (for tests and ordered follow-ups).
	 * @param {string} command
	 * @param {Record<string, unknown>} [params]
	 * @param {string} [lane] default: the current lane
	 * @returns {Promise<void>}
	 */
	fire(command, params = {}, lane = this.currentLane()) {
		const send = () =>
			this.request(command, params).then(
				() => undefined,
				(e) => {
					this.log(`extension host: ${command} failed: ${e instanceof Error ? e.message : String(e)}`);
				},
			);
		// An idle lane sends at once, so that the frame is written before anything sent after it.
		const previous = this.lanes.get(lane);
		const next = previous ? previous.then(send) : send();
		this.lanes.set(lane, next);
		next.then(() => {
			if (this.lanes.get(lane) === next) this.lanes.delete(lane);
		});
		return next;
	}

	/**
	 * Send a command and wait for its `data`, after the commands sent without waiting earlier on the same lane
	 * were answered (an entry appended before `new_session` lands in the old session).
	 * @param {string} command
	 * @param {Record<string, unknown>} [params]
	 * @returns {Promise<any>}
	 */
	ordered(command, params = {}) {
		const previous = this.lanes.get(this.currentLane());
		return previous ? previous.then(() => this.request(command, params)) : this.request(command, params);
	}

	/**
	 * Wait until every command sent on `lane` so far is answered, and forget the lane.
	 * @param {string} lane
	 */
	async flush(lane) {
		let last = this.lanes.get(lane);
		while (last) {
			await last;
			const now = this.lanes.get(lane);
			if (now === last) {
				this.lanes.delete(lane);
				return;
			}
			last = now;
		}
	}

	/**
	 * Answer a call of the runtime.
	 * @param {unknown} id
	 * @param {string} command
	 * @param {{ data?: unknown } | { error: string }} outcome
	 */
	respond(id, command, outcome) {
		if ("error" in outcome) {
			this.write({ id, type: "response", command, success: false, error: outcome.error });
		} else if (outcome.data === undefined) {
			this.write({ id, type: "response", command, success: true });
		} else {
			this.write({ id, type: "response", command, success: true, data: outcome.data });
		}
	}

	close() {
		if (this.closed) return;
		this.closed = true;
		for (const [, waiter] of this.pending) {
			waiter.reject(new CommandError(waiter.command, "the runtime closed the connection"));
		}
		this.pending.clear();
	}
}
