// A scripted runtime for the tests: starts the host as a real child process (as dreb-rs does), plays the runtime's
// side of the extension protocol and records every frame the host writes.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const BIN = path.resolve(here, "../bin/dreb-extension-host.mjs");
export const FIXTURES = path.join(here, "fixtures");

/** The session the snapshot commands describe unless a test says otherwise. */
export function defaultContext() {
	return {
		cwd: FIXTURES,
		hasUI: true,
		isIdle: true,
		hasPendingMessages: false,
		model: { provider: "faux", id: "faux-1", name: "Faux" },
		thinkingLevel: "off",
		sessionId: "0b6c3c1e-1b7e-4bde-9d21-4c1f5c0e8a11",
		sessionFile: "/sessions/one.jsonl",
		sessionName: "first",
		leafId: "e2",
		activeTools: ["read", "bash"],
		contextUsage: { tokens: 1200, contextWindow: 100000, percent: 1.2 },
		systemPrompt: "You are a coding agent.",
	};
}

export function defaultSession() {
	return {
		sessionFile: "/sessions/one.jsonl",
		header: { type: "session", version: 3, id: "0b6c3c1e", timestamp: "2024-01-01T00:00:00.000Z", cwd: FIXTURES },
		entries: [
			{
				type: "message",
				id: "e1",
				parentId: null,
				timestamp: "2024-01-01T00:00:01.000Z",
				message: { role: "user", content: "hi", timestamp: 1 },
			},
			{
				type: "message",
				id: "e2",
				parentId: "e1",
				timestamp: "2024-01-01T00:00:02.000Z",
				message: { role: "assistant", content: [{ type: "text", text: "hello" }], timestamp: 2 },
			},
		],
		branch: [],
		leafId: "e2",
	};
}

export function defaultModels() {
	return {
		models: [
			{ provider: "faux", id: "faux-1", name: "Faux" },
			{ provider: "faux", id: "faux-2", name: "Faux 2" },
		],
		available: ["faux/faux-1"],
	};
}

export function defaultTools() {
	return [
		{ name: "read", description: "Read a file", parameters: { type: "object" }, source: "builtin" },
		{ name: "bash", description: "Run a command", parameters: { type: "object" }, source: "builtin" },
	];
}

/** Call `onLine` with each line (without its LF) of `stream`. @param {import("node:stream").Readable} stream @param {(line: string) => void} onLine */
export function onLines(stream, onLine) {
	let buffer = "";
	stream.setEncoding("utf8");
	stream.on("data", (chunk) => {
		buffer += chunk;
		let nl = buffer.indexOf("\n");
		while (nl >= 0) {
			const line = buffer.slice(0, nl);
			buffer = buffer.slice(nl + 1);
			onLine(line);
			nl = buffer.indexOf("\n");
		}
	});
}

const SNAPSHOT_COMMANDS = new Set(["get_context", "get_session", "get_models", "get_tools"]);

export class Runtime {
	/**
	 * @param {string} extension a fixture name or a path
	 * @param {{ cwd?: string, args?: string[] }} [options]
	 */
	constructor(extension, options = {}) {
		this.extension = path.isAbsolute(extension) ? extension : path.join(FIXTURES, extension);
		this.cwd = options.cwd ?? FIXTURES;
		this.child = spawn(process.execPath, [BIN, ...(options.args ?? [this.extension])], {
			cwd: this.cwd,
			stdio: ["pipe", "pipe", "pipe"],
			env: { ...process.env, JITI_FS_CACHE: "false" },
		});
		/** @type {any[]} every frame the host wrote, in order */
		this.frames = [];
		/** @type {any[]} frames not yet taken by `next` (snapshot commands are answered, not queued) */
		this.queue = [];
		/** @type {((f: any) => void)[]} */
		this.waiters = [];
		this.stderr = "";
		this.stdoutNonJson = [];
		this.nextId = 1;
		this.context = defaultContext();
		this.session = defaultSession();
		this.session.branch = [...this.session.entries];
		this.models = defaultModels();
		this.tools = defaultTools();
		/** @type {Record<string, number>} how many of each snapshot command were answered */
		this.snapshotCounts = {};
		/** @type {Promise<{ code: number | null, signal: string | null }>} */
		this.exited = new Promise((resolve) => {
			this.child.on("exit", (code, signal) => resolve({ code, signal }));
		});
		onLines(this.child.stdout, (line) => this.onLine(line));
		this.child.stderr.setEncoding("utf8");
		this.child.stderr.on("data", (chunk) => {
			this.stderr += chunk;
		});
	}

	/** @param {string} line */
	onLine(line) {
		let frame;
		try {
			frame = JSON.parse(line);
		} catch {
			this.stdoutNonJson.push(line);
			return;
		}
		this.frames.push(frame);
		if (frame.type !== "response" && SNAPSHOT_COMMANDS.has(frame.type) && typeof frame.id === "string") {
			this.snapshotCounts[frame.type] = (this.snapshotCounts[frame.type] ?? 0) + 1;
			const data =
				frame.type === "get_context"
					? this.context
					: frame.type === "get_session"
						? this.session
						: frame.type === "get_models"
							? this.models
							: this.tools;
			this.send({ id: frame.id, type: "response", command: frame.type, success: true, data: structuredClone(data) });
			return;
		}
		const waiter = this.waiters.shift();
		if (waiter) waiter(frame);
		else this.queue.push(frame);
	}

	/** @param {Record<string, unknown>} frame */
	send(frame) {
		this.child.stdin.write(`${JSON.stringify(frame)}\n`);
	}

	/** The next frame the host wrote (snapshot commands excepted). @param {number} [ms] */
	next(ms = 10000) {
		const queued = this.queue.shift();
		if (queued) return Promise.resolve(queued);
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => {
				const i = this.waiters.indexOf(waiter);
				if (i >= 0) this.waiters.splice(i, 1);
				reject(new Error(`no frame from the host within ${ms} ms; stderr:\n${this.stderr}`));
			}, ms);
			/** @param {any} f */
			const waiter = (f) => {
				clearTimeout(timer);
				resolve(f);
			};
			this.waiters.push(waiter);
		});
	}

	/** Send a call; returns its id. @param {string} type @param {Record<string, unknown>} [params] */
	call(type, params = {}) {
		const id = `r${this.nextId++}`;
		this.send({ id, type, ...params });
		return id;
	}

	/** @param {string} type @param {Record<string, unknown>} [params] */
	event(type, params = {}) {
		this.send({ type, ...params });
	}

	/**
	 * The next frame must be the response to call `id`; returns it.
	 * @param {string} id @param {string} command
	 */
	async response(id, command) {
		const f = await this.next();
		assert.equal(f.type, "response", `expected the response to ${command} (${id}), got ${JSON.stringify(f)}`);
		assert.equal(f.id, id);
		assert.equal(f.command, command);
		return f;
	}

	/** Call and expect a successful response; returns its data. @param {string} type @param {Record<string, unknown>} [params] */
	async ok(type, params = {}) {
		const id = this.call(type, params);
		const r = await this.response(id, type);
		assert.equal(r.success, true, `${type} failed: ${r.error}\nstderr:\n${this.stderr}`);
		return r.data;
	}

	/**
	 * The next frame must be command `type` (an id when `withId`); returns it.
	 * @param {string} type @param {Record<string, unknown>} [params] the exact params (all but id and type)
	 */
	async command(type, params) {
		const f = await this.next();
		assert.equal(f.type, type, `expected command ${type}, got ${JSON.stringify(f)}`);
		assert.equal(typeof f.id, "string", `${type} has an id`);
		if (params !== undefined) {
			const { id: _id, type: _t, ...rest } = f;
			assert.deepEqual(rest, params);
		}
		return f;
	}

	/** Answer a command of the host. @param {any} frame @param {unknown} [data] */
	answer(frame, data) {
		const r = { id: frame.id, type: "response", command: frame.type, success: true };
		if (data !== undefined) Object.assign(r, { data });
		this.send(r);
	}

	/** @param {any} frame @param {string} error */
	fail(frame, error) {
		this.send({ id: frame.id, type: "response", command: frame.type, success: false, error });
	}

	/** The next frame is command `type` with `params`: answer it with `data`. */
	async expect(/** @type {string} */ type, /** @type {Record<string, unknown> | undefined} */ params, /** @type {unknown} */ data) {
		const f = await this.command(type, params);
		this.answer(f, data);
		return f;
	}

	/** Handshake. @param {Record<string, unknown>} [overrides] */
	async initialize(overrides = {}) {
		const id = this.call("initialize", {
			protocolVersion: "1",
			extensionPath: this.extension,
			cwd: this.cwd,
			agentDir: "/home/u/.dreb/agent",
			hasUI: true,
			flagValues: {},
			...overrides,
		});
		const r = await this.response(id, "initialize");
		// After the handshake the host reads the session state once.
		if (r.success) await until(() => (this.snapshotCounts.get_context ?? 0) >= 1);
		return r;
	}

	/** Nothing else was written (waits `ms` for stragglers). */
	async quiet(ms = 150) {
		await new Promise((r) => setTimeout(r, ms));
		assert.deepEqual(this.queue, [], "no further frames");
		assert.deepEqual(this.stdoutNonJson, [], "nothing but frames on stdout");
	}

	/** Close stdin; the host exits. */
	async close() {
		this.child.stdin.end();
		const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000);
		const status = await this.exited;
		clearTimeout(timer);
		return status;
	}
}

/** Wait until `predicate` holds (polling). @param {() => boolean} predicate */
export async function until(predicate, ms = 5000) {
	const start = Date.now();
	while (!predicate()) {
		if (Date.now() - start > ms) throw new Error("condition not met in time");
		await new Promise((r) => setTimeout(r, 10));
	}
}
