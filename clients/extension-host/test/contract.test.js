// The host against the protocol's generated types (src/generated/protocol.ts, from protocol/extension.yaml): it
// answers every call, sends only known commands, and handles every event.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import { test } from "node:test";
import { HOOK_CALLS } from "../src/api.js";
import { HOOKS } from "../src/hooks.js";

const generated = fs.readFileSync(new URL("../src/generated/protocol.ts", import.meta.url), "utf8");

/** @param {string} name */
function list(name) {
	const m = new RegExp(`export const ${name}[^=]*= \\[([^\\]]*)\\]`).exec(generated);
	assert.ok(m && m[1], `${name} in the generated protocol`);
	return [...m[1].matchAll(/"([a-z_]+)"/g)].map((x) => String(x[1]));
}

test("every call of the protocol is handled", () => {
	const handled = new Set(["initialize", "session_shutdown", "execute_command", "execute_tool", ...Object.keys(HOOKS)]);
	assert.deepEqual(list("CALL_TYPES").filter((c) => !handled.has(c)), []);
	for (const h of Object.keys(HOOKS)) assert.ok(HOOK_CALLS.has(h), h);
});

test("the host sends only commands of the protocol", () => {
	const commands = new Set(list("COMMAND_TYPES"));
	const sent = new Set();
	for (const file of fs.readdirSync(new URL("../src/", import.meta.url))) {
		if (!file.endsWith(".js")) continue;
		const text = fs.readFileSync(new URL(`../src/${file}`, import.meta.url), "utf8");
		for (const m of text.matchAll(/\b(?:request|ordered|fire|sessionOp)\(\s*"([a-z_]+)"/g)) sent.add(String(m[1]));
	}
	assert.ok(sent.size >= 30, `found ${sent.size} commands`);
	assert.deepEqual([...sent].filter((c) => !commands.has(c)), []);
	// And every command of the protocol has a use in the host.
	assert.deepEqual([...commands].filter((c) => !sent.has(c) && c !== "execute_command"), []);
});

test("the events of the protocol are the ones the host handles", () => {
	assert.deepEqual(list("EVENT_TYPES").sort(), ["agent_event", "cancel", "model_select", "session_start"]);
});
