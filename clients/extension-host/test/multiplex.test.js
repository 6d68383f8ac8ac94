// `dreb-extension-host --multiplex`: several extensions in one host process, one per channel of the frames, sharing
// the event bus.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as path from "node:path";
import { test } from "node:test";
import { BIN, FIXTURES, defaultContext, onLines } from "./runtime.js";

/** A runtime speaking to a multiplexed host: frames by channel; snapshot and other commands answered. */
class MuxRuntime {
	constructor() {
		this.child = spawn(process.execPath, [BIN, "--multiplex"], {
			cwd: FIXTURES,
			stdio: ["pipe", "pipe", "pipe"],
			env: { ...process.env, JITI_FS_CACHE: "false" },
		});
		/** @type {any[]} */
		this.frames = [];
		/** @type {((f: any) => boolean)[]} */
		this.waiters = [];
		this.stderr = "";
		this.rawLines = [];
		onLines(this.child.stdout, (line) => {
			this.rawLines.push(line);
			this.onFrame(JSON.parse(line));
		});
		this.child.stderr.setEncoding("utf8");
		this.child.stderr.on("data", (c) => (this.stderr += c));
		this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve(code)));
	}

	/** @param {any} frame */
	onFrame(frame) {
		this.frames.push(frame);
		if (frame.type !== "response" && typeof frame.id === "string") {
			const data = frame.type === "get_context" ? defaultContext() : undefined;
			const r = { channel: frame.channel, id: frame.id, type: "response", command: frame.type, success: true };
			this.send(data === undefined ? r : { ...r, data });
		}
		this.waiters = this.waiters.filter((w) => !w(frame));
	}

	/** @param {Record<string, unknown>} frame */
	send(frame) {
		this.child.stdin.write(`${JSON.stringify(frame)}\n`);
	}

	/** The first frame (past or future) matching `pred`. @param {(f: any) => boolean} pred */
	wait(pred, ms = 10000) {
		const seen = this.frames.find(pred);
		if (seen) return Promise.resolve(seen);
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => reject(new Error(`no such frame; stderr:\n${this.stderr}`)), ms);
			this.waiters.push((f) => {
				if (!pred(f)) return false;
				clearTimeout(timer);
				resolve(f);
				return true;
			});
		});
	}

	/** @param {string} channel @param {string} id @param {string} type @param {Record<string, unknown>} params */
	async call(channel, id, type, params) {
		this.send({ channel, id, type, ...params });
		return this.wait((f) => f.type === "response" && f.channel === channel && f.id === id);
	}

	/** @param {string} channel @param {string} fixture */
	initialize(channel, fixture) {
		return this.call(channel, `i${channel}`, "initialize", {
			protocolVersion: "1",
			extensionPath: path.join(FIXTURES, fixture),
			cwd: FIXTURES,
			agentDir: "/nonexistent-agent-dir",
			hasUI: true,
			flagValues: {},
		});
	}
}

test("one host serves two extensions on their channels; the event bus crosses between them", async () => {
	const rt = new MuxRuntime();
	const [a, b] = await Promise.all([rt.initialize("1", "bus-emit.ts"), rt.initialize("2", "bus-listen.ts")]);
	assert.equal(a.success, true, rt.stderr);
	assert.deepEqual(a.data.registration, { commands: [{ name: "ping", description: "Emit bus:ping for the other extensions" }] });
	assert.equal(b.success, true, rt.stderr);
	assert.deepEqual(b.data.registration, {});
	// The channel goes first in every frame the host writes.
	assert.ok(rt.rawLines.every((l) => l.startsWith('{"channel":"')), rt.rawLines.join("\n"));

	const done = await rt.call("1", "c1", "execute_command", { name: "ping", args: "hello" });
	assert.equal(done.success, true);
	// The listener (channel 2) heard it and acted through its own channel.
	const entry = await rt.wait((f) => f.type === "append_entry");
	assert.equal(entry.channel, "2");
	assert.deepEqual(entry.data, { text: "hello", from: "bus-emit" });
	assert.equal(entry.customType, "bus-heard");

	// A frame without a channel is dropped with a log line; the host goes on.
	rt.send({ id: "x", type: "execute_command", name: "ping", args: "" });
	const unknown = await rt.call("1", "c2", "execute_command", { name: "nope", args: "" });
	assert.equal(unknown.success, false);
	assert.equal(unknown.error, "Unknown command: nope");
	assert.match(rt.stderr, /dropped a frame without a channel/);

	rt.child.stdin.end();
	assert.equal(await rt.exited, 0);
});

test("a module that fails to load fails only its own channel", async () => {
	const rt = new MuxRuntime();
	const [bad, good] = await Promise.all([rt.initialize("7", "load-error.ts"), rt.initialize("8", "bus-emit.ts")]);
	assert.equal(bad.success, false);
	assert.match(bad.error, /^Failed to load extension: /);
	assert.equal(good.success, true);
	const r = await rt.call("8", "c", "execute_command", { name: "ping", args: "" });
	assert.equal(r.success, true);
	rt.child.stdin.end();
	assert.equal(await rt.exited, 0);
});
