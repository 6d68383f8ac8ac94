// The host as the runtime sees it: a child process driven over the extension protocol, every frame checked.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Runtime, until } from "./runtime.js";

/** @param {Runtime} rt */
async function done(rt) {
	await rt.quiet();
	const status = await rt.close();
	assert.equal(status.code, 0, `host exit status; stderr:\n${rt.stderr}`);
}

test("initialize registers the tools with their JSON schemas", async () => {
	const rt = new Runtime("tools.ts");
	const r = await rt.initialize();
	assert.equal(r.success, true, r.error);
	assert.equal(r.data.protocolVersion, "1");
	const reg = r.data.registration;
	assert.deepEqual(Object.keys(reg).sort(), ["commands", "tools"]);
	assert.deepEqual(reg.commands, [{ name: "add-echo", description: "Register an echo tool" }]);
	assert.deepEqual(
		reg.tools.map((/** @type {any} */ t) => t.name),
		["hello", "count", "wait_abort", "broken"],
	);
	assert.deepEqual(reg.tools[0], {
		name: "hello",
		label: "Hello",
		description: "A simple greeting tool",
		promptSnippet: "Greet someone by name",
		promptGuidelines: ["Use hello when asked to greet."],
		parameters: {
			type: "object",
			required: ["name", "tone"],
			properties: {
				name: { type: "string", description: "Name to greet" },
				tone: { type: "string", enum: ["warm", "formal"], description: "How to greet" },
			},
		},
	});
	// After the handshake the host reads the session state once (no session/models/tools: the source names none).
	await until(() => rt.snapshotCounts.get_context === 1);
	assert.equal(rt.snapshotCounts.get_session, undefined);
	await done(rt);
});

test("execute_tool runs the tool with its context, and onUpdate sends tool_update in order", async () => {
	const rt = new Runtime("tools.ts");
	await rt.initialize();
	const hello = await rt.ok("execute_tool", { toolName: "hello", toolCallId: "call_1", params: { name: "Ada", tone: "formal" } });
	assert.deepEqual(hello, {
		content: [{ type: "text", text: "Good day, Ada." }],
		details: { greeted: "Ada", toolCallId: "call_1", model: "faux-1", cwd: rt.cwd },
	});

	const id = rt.call("execute_tool", { toolName: "count", toolCallId: "call_2", params: { to: 3, stepMs: 1 } });
	for (let n = 1; n <= 3; n++) {
		// Each update waits for the previous one's answer (the runtime serves commands concurrently).
		await rt.expect("tool_update", { toolCallId: "call_2", partialResult: { content: [{ type: "text", text: `at ${n}` }], details: { reached: n } } });
	}
	const r = await rt.response(id, "execute_tool");
	assert.equal(r.success, true);
	assert.deepEqual(r.data, { content: [{ type: "text", text: "counted to 3" }], details: { reached: 3 } });
	await done(rt);
});

test("cancel aborts the tool's signal and the call is not answered", async () => {
	const rt = new Runtime("tools.ts");
	await rt.initialize();
	const id = rt.call("execute_tool", { toolName: "wait_abort", toolCallId: "call_3", params: {} });
	await until(() => rt.snapshotCounts.get_context >= 2);
	await new Promise((r) => setTimeout(r, 50));
	rt.event("cancel", { id });
	await until(() => rt.stderr.includes("wait_abort: aborted"));
	// Its console.log went to stderr, and no response followed.
	await done(rt);
});

test("a failing tool is a failed execute_tool; unknown tools and calls fail with the protocol's text", async () => {
	const rt = new Runtime("tools.ts");
	await rt.initialize();
	let id = rt.call("execute_tool", { toolName: "broken", toolCallId: "c", params: {} });
	let r = await rt.response(id, "execute_tool");
	assert.deepEqual([r.success, r.error], [false, "the broken tool broke"]);
	id = rt.call("execute_tool", { toolName: "missing", toolCallId: "c", params: {} });
	r = await rt.response(id, "execute_tool");
	assert.deepEqual([r.success, r.error], [false, "Unknown tool: missing"]);
	id = rt.call("bogus");
	r = await rt.response(id, "bogus");
	assert.deepEqual([r.success, r.error], [false, "Unknown command: bogus"]);
	await done(rt);
});

test("a tool registered by a command goes out with register, before the commands that follow it", async () => {
	const rt = new Runtime("tools.ts");
	await rt.initialize();
	const id = rt.call("execute_command", { name: "add-echo", args: "shout" });
	await rt.expect("register", {
		registration: {
			tools: [
				{
					name: "shout",
					label: "Echo shout",
					description: "Echo with prefix [shout]",
					parameters: { type: "object", required: ["message"], properties: { message: { type: "string" } } },
				},
			],
		},
	});
	await rt.expect("set_active_tools", { toolNames: ["read", "bash", "shout"] });
	await rt.expect("ui_notify", { message: "Registered shout", notifyType: "info" });
	// The command is answered after the commands it sent without waiting.
	const resp = await rt.response(id, "execute_command");
	assert.equal(resp.success, true);
	assert.equal("data" in resp, false);
	const echoed = await rt.ok("execute_tool", { toolName: "shout", toolCallId: "c9", params: { message: "hi" } });
	assert.deepEqual(echoed, { content: [{ type: "text", text: "[shout] hi" }] });
	await done(rt);
});

test("tool_call: a dangerous command asks ui_confirm and is blocked when refused", async () => {
	const rt = new Runtime("guard.ts");
	const init = await rt.initialize();
	assert.deepEqual(init.data.registration, { events: ["tool_call", "tool_result"] });

	let id = rt.call("tool_call", { toolName: "bash", toolCallId: "c1", input: { command: "rm -rf /tmp/x" } });
	let confirm = await rt.command("ui_confirm", { title: "Dangerous command", message: "Allow?\n\n  rm -rf /tmp/x", timeout: 30000 });
	rt.answer(confirm, { confirmed: false });
	let r = await rt.response(id, "tool_call");
	assert.deepEqual(r.data, { block: true, reason: "Blocked by user" });

	id = rt.call("tool_call", { toolName: "bash", toolCallId: "c2", input: { command: "sudo ls" } });
	confirm = await rt.command("ui_confirm");
	rt.answer(confirm, { confirmed: true });
	r = await rt.response(id, "tool_call");
	assert.deepEqual(r.data, {});

	// Harmless: no dialog, no change.
	assert.deepEqual(await rt.ok("tool_call", { toolName: "bash", toolCallId: "c3", input: { command: "ls" } }), {});
	// In-place changes of the arguments are returned as `input`.
	assert.deepEqual(await rt.ok("tool_call", { toolName: "read", toolCallId: "c4", input: { path: "a.txt", limit: 500 } }), {
		input: { path: "a.txt", limit: 100 },
	});
	assert.deepEqual(await rt.ok("tool_call", { toolName: "read", toolCallId: "c5", input: { path: "a.txt", limit: 100 } }), {});
	await done(rt);
});

test("tool_call without a UI blocks; tool_result patches", async () => {
	const rt = new Runtime("guard.ts");
	rt.context.hasUI = false;
	await rt.initialize({ hasUI: false });
	assert.deepEqual(await rt.ok("tool_call", { toolName: "bash", toolCallId: "c1", input: { command: "rm -rf /" } }), {
		block: true,
		reason: "Dangerous command blocked (no UI for confirmation)",
	});
	const content = [{ type: "text", text: "exit 1" }];
	assert.deepEqual(
		await rt.ok("tool_result", { toolName: "bash", toolCallId: "c1", input: { command: "false" }, content, isError: true }),
		{ content: [...content, { type: "text", text: "(the guard saw this failure)" }], isError: true },
	);
	assert.deepEqual(await rt.ok("tool_result", { toolName: "read", toolCallId: "c2", input: {}, content, isError: false }), {});
	await done(rt);
});

test("input: transforms chain, handled short-circuits, otherwise continue", async () => {
	const rt = new Runtime("input-transform.ts");
	const init = await rt.initialize();
	assert.deepEqual(init.data.registration, { events: ["input"] });
	assert.deepEqual(await rt.ok("input", { text: "?quick what is TypeBox", source: "rpc" }), {
		action: "transform",
		text: "Respond briefly: what is TypeBox (please)",
	});
	const id = rt.call("input", { text: "ping", source: "rpc" });
	const first = await rt.next();
	const second = await rt.next();
	const [resp, notify] = first.type === "response" ? [first, second] : [second, first];
	assert.deepEqual([resp.id, resp.data], [id, { action: "handled" }]);
	assert.equal(notify.type, "ui_notify");
	assert.equal(notify.message, "pong");
	rt.answer(notify);
	assert.deepEqual(await rt.ok("input", { text: "hello", source: "rpc" }), { action: "continue" });
	assert.deepEqual(await rt.ok("input", { text: "?quick x", source: "extension" }), { action: "continue" });
	await done(rt);
});

test("context, before_agent_start and before_provider_request", async () => {
	const rt = new Runtime("context-rewrite.ts");
	const init = await rt.initialize();
	assert.deepEqual(init.data.registration, { events: ["before_agent_start", "before_provider_request", "context"] });
	const messages = [
		{ role: "user", content: "  keep me  ", timestamp: 1 },
		{ role: "user", content: [{ type: "text", text: "the SECRET is 42" }], timestamp: 2 },
		{ role: "assistant", content: [{ type: "text", text: "ok" }], timestamp: 3 },
	];
	assert.deepEqual(await rt.ok("context", { messages }), {
		messages: [{ role: "user", content: "keep me", timestamp: 1 }, messages[2]],
	});
	// Nothing to change: no messages in the answer.
	assert.deepEqual(await rt.ok("context", { messages: [messages[2]] }), {});
	assert.deepEqual(await rt.ok("before_agent_start", { prompt: "hi", systemPrompt: "Base." }), {
		systemPrompt: "Base.\n\nAlways answer in English.",
		message: { customType: "context-note", content: "Remember the style guide.", display: false },
	});
	assert.deepEqual(await rt.ok("before_provider_request", { payload: { model: "m", temperature: 1 } }), {
		payload: { model: "m", temperature: 0 },
	});
	assert.deepEqual(await rt.ok("before_provider_request", { payload: { model: "m", temperature: 0 } }), {});
	await done(rt);
});

test("a command uses ctx.ui.select, ctx.sessionManager and dreb.sendMessage", async () => {
	const rt = new Runtime("commands.ts");
	const init = await rt.initialize();
	assert.deepEqual(init.data.registration.commands.map((/** @type {any} */ c) => c.name), ["pick", "tidy", "models", "run"]);
	// The source names sessionManager and modelRegistry: those snapshots are read too.
	await until(() => rt.snapshotCounts.get_session === 1 && rt.snapshotCounts.get_models === 1);
	const id = rt.call("execute_command", { name: "pick", args: "recent" });
	const select = await rt.command("ui_select", { title: "Pick (recent)", options: ["e1: user", "e2: assistant"] });
	rt.answer(select, { value: "e1: user" });
	const entry = rt.session.entries[0];
	// The three actions go out one after the other, each after the previous one's answer.
	await rt.expect("send_message", {
		message: {
			customType: "picked",
			content: "You picked e1 of /sessions/one.jsonl (leaf e2)",
			display: true,
			details: { entry },
		},
		triggerTurn: true,
		deliverAs: "followUp",
	});
	await rt.expect("append_entry", { customType: "pick-log", data: { id: "e1", branch: 2 } });
	await rt.expect("set_session_name", { name: "picked e1" });
	// The command is answered after them.
	const r = await rt.response(id, "execute_command");
	assert.equal(r.success, true);

	// Cancelled dialog.
	const id2 = rt.call("execute_command", { name: "pick", args: "" });
	rt.answer(await rt.command("ui_select"), {});
	await rt.expect("ui_notify", { message: "Nothing picked", notifyType: "warning" });
	assert.equal((await rt.response(id2, "execute_command")).success, true);
	await done(rt);
});

test("session operations of a command, and the session_switch they cause", async () => {
	const rt = new Runtime("commands.ts");
	await rt.initialize();
	const id = rt.call("execute_command", { name: "tidy", args: "" });
	await rt.expect("wait_for_idle", {});
	const ns = await rt.command("new_session", { parentSession: "/sessions/one.jsonl" });
	rt.context = { ...rt.context, sessionFile: "/sessions/two.jsonl", sessionName: undefined, leafId: null };
	rt.answer(ns, { cancelled: false });
	const notify = await rt.command("ui_notify", { message: "now in ?", notifyType: "info" });
	rt.answer(notify);
	assert.equal((await rt.response(id, "execute_command")).success, true);
	await done(rt);
});

test("modelRegistry, setModel and the thinking level", async () => {
	const rt = new Runtime("commands.ts");
	await rt.initialize();
	const id = rt.call("execute_command", { name: "models", args: "" });
	const set = await rt.command("set_model", { provider: "faux", modelId: "faux-2" });
	rt.answer(set, { ok: true });
	await rt.expect("ui_notify", { message: "available=faux-1 switched=true now=faux-2", notifyType: "info" });
	await rt.expect("set_thinking_level", { level: "high" });
	await rt.expect("ui_set_status", { key: "models", text: "thinking high" });
	assert.equal((await rt.response(id, "execute_command")).success, true);
	await done(rt);
});

test("exec goes through the runtime; with a signal it runs in the host", async () => {
	const rt = new Runtime("commands.ts");
	await rt.initialize();
	const id = rt.call("execute_command", { name: "run", args: "hi" });
	const exec = await rt.command("exec", { command: "echo", args: ["hi"], timeout: 5000 });
	rt.answer(exec, { stdout: "hi\n", stderr: "", code: 0, killed: false });
	await rt.expect("ui_notify", { message: "code=0 out=hi killed=false", notifyType: "info" });
	await rt.expect("ui_notify", { message: "aborted killed=true", notifyType: "info" });
	assert.equal((await rt.response(id, "execute_command")).success, true);
	await done(rt);
});

test("session_before_switch cancels after ui_confirm; fork, tree and compaction hooks", async () => {
	const rt = new Runtime("session-guards.ts");
	const init = await rt.initialize();
	assert.deepEqual(init.data.registration, {
		events: [
			"session_before_compact",
			"session_before_fork",
			"session_before_switch",
			"session_before_tree",
			"session_shutdown",
			"session_start",
			"session_switch",
		],
	});
	let id = rt.call("session_before_switch", { reason: "new" });
	rt.answer(await rt.command("ui_confirm", { title: "Clear session?", message: "This starts an empty session." }), {
		confirmed: false,
	});
	const a = await rt.next();
	const b = await rt.next();
	const [resp, notify] = a.type === "response" ? [a, b] : [b, a];
	assert.deepEqual([resp.id, resp.data], [id, { cancel: true }]);
	assert.equal(notify.message, "Clear cancelled");
	rt.answer(notify);

	assert.deepEqual(await rt.ok("session_before_switch", { reason: "resume", targetSessionFile: "/s/x.jsonl" }), {});
	assert.deepEqual(await rt.ok("session_before_fork", { entryId: "keep" }), { cancel: true });
	assert.deepEqual(await rt.ok("session_before_fork", { entryId: "e1" }), {});
	assert.deepEqual(await rt.ok("session_before_fork", { entryId: "quiet" }), { skipConversationRestore: true });

	// The runtime sends the preparation and the branch; the host hands them over as the reference's event.
	const message = (/** @type {string} */ text) => ({ role: "user", content: text, timestamp: 1 });
	const preparation = {
		firstKeptEntryId: "e2",
		messagesToSummarize: [message("one"), message("two")],
		turnPrefixMessages: [],
		isSplitTurn: false,
		tokensBefore: 1200,
		fileOps: { read: ["a.ts"], written: [], edited: [] },
		settings: { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 },
	};
	const branchEntries = [
		{ type: "message", id: "e1", parentId: null, message: message("one") },
		{ type: "message", id: "e2", parentId: "e1", message: message("two") },
	];
	id = rt.call("session_before_compact", { preparation, branchEntries, customInstructions: "the tests" });
	// A hook is answered without waiting for the commands it sent.
	const compactNotify = await rt.command("ui_notify", { message: "custom compaction", notifyType: "info" });
	const r = await rt.response(id, "session_before_compact");
	rt.answer(compactNotify);
	assert.deepEqual(r.data, {
		summary: {
			summary: "Summary of 2 messages (2 entries, 1200 tokens, aborted=false) read a.ts (a Set: true) focus: the tests",
			firstKeptEntryId: "e2",
			tokensBefore: 1200,
			details: { by: "session-guards" },
		},
	});
	assert.deepEqual(await rt.ok("session_before_compact", { preparation, branchEntries, customInstructions: "skip" }), {
		cancel: true,
	});

	const tree = (/** @type {boolean} */ summarize) => ({
		targetId: "e1",
		summarize,
		preparation: {
			targetId: "e1",
			oldLeafId: "e3",
			commonAncestorId: "e1",
			entriesToSummarize: [{ type: "message", id: "e3", parentId: "e1", message: message("three") }],
			userWantsSummary: summarize,
		},
	});
	assert.deepEqual(await rt.ok("session_before_tree", tree(true)), {
		summary: { summary: "left 1 entries after e1" },
	});
	assert.deepEqual(await rt.ok("session_before_tree", tree(false)), {});
	// The result may override the request's instructions and label.
	const overridden = tree(true);
	overridden.preparation.customInstructions = "override";
	assert.deepEqual(await rt.ok("session_before_tree", overridden), {
		customInstructions: "focus on the tests",
		replaceInstructions: true,
		label: "overridden",
	});

	// session_start after a new session is the reference's session_switch, with the previous file.
	rt.context = { ...rt.context, sessionFile: "/sessions/two.jsonl" };
	rt.event("session_start", { reason: "new" });
	rt.answer(await rt.command("ui_notify", { message: "switched (new) from /sessions/one.jsonl", notifyType: "info" }));

	// session_shutdown runs its handlers (and the entry they append goes out).
	id = rt.call("session_shutdown");
	rt.answer(await rt.command("append_entry", { customType: "shutdown", data: { at: "end" } }));
	const shut = await rt.response(id, "session_shutdown");
	assert.equal(shut.success, true);
	assert.equal("data" in shut, false);
	await done(rt);
});

test("flags: defaults, values from initialize, and registrations", async () => {
	const rt = new Runtime("flags.ts");
	const init = await rt.initialize({ flagValues: { plan: true, other: "x" } });
	assert.deepEqual(init.data.registration, {
		commands: [{ name: "flags", description: "Show the flags" }],
		flags: [
			{ name: "plan", type: "boolean", description: "Start in plan mode", default: false },
			{ name: "persona", type: "string", description: "Who to be", default: "pirate" },
		],
	});
	const id = rt.call("execute_command", { name: "flags", args: "" });
	rt.answer(await rt.command("ui_notify", { message: 'plan=true persona="pirate" unknown=undefined', notifyType: "info" }));
	assert.equal((await rt.response(id, "execute_command")).success, true);
	await done(rt);
});

test("throwing handlers fail their call with the message; the host lives on", async () => {
	const rt = new Runtime("throwing.ts");
	const init = await rt.initialize();
	assert.deepEqual(init.data.registration.events, ["agent_end", "input", "tool_call", "turn_start"]);
	let id = rt.call("tool_call", { toolName: "bash", toolCallId: "c", input: { command: "ls" } });
	let r = await rt.response(id, "tool_call");
	assert.deepEqual([r.success, r.error], [false, "refusing bash"]);
	id = rt.call("input", { text: "x", source: "rpc" });
	r = await rt.response(id, "input");
	assert.deepEqual([r.success, r.error], [false, "input handler exploded"]);
	id = rt.call("execute_command", { name: "fail", args: "" });
	r = await rt.response(id, "execute_command");
	assert.deepEqual([r.success, r.error], [false, "command failed on purpose"]);
	// Events get no answer: a failing handler is logged, as is a stray rejection.
	rt.event("agent_event", { event: { type: "agent_end", messages: [] } });
	rt.event("agent_event", { event: { type: "turn_start", turnIndex: 0, timestamp: 1 } });
	await until(() => rt.stderr.includes("agent_end handler failed: agent_end handler exploded") && rt.stderr.includes("stray rejection"));
	assert.deepEqual(await rt.ok("tool_call", { toolName: "read", toolCallId: "c", input: {} }), {});
	await done(rt);
});

test("the event bus, agent events and model_select", async () => {
	const rt = new Runtime("event-bus.ts");
	const init = await rt.initialize();
	assert.deepEqual(init.data.registration, {
		commands: [{ name: "emit", description: "Emit my:notification" }],
		events: ["model_select", "session_start", "tool_execution_end", "turn_end"],
	});
	rt.event("session_start", { reason: "startup" });
	rt.answer(await rt.command("ui_notify", { message: "Event from session_start: Session started", notifyType: "info" }));
	const id = rt.call("execute_command", { name: "emit", args: "ping" });
	// The listener runs in the command's flow: its notification goes out before the command's answer.
	await rt.expect("ui_notify", { message: "Event from /emit: ping", notifyType: "info" });
	assert.equal((await rt.response(id, "execute_command")).success, true);

	rt.context = { ...rt.context, isIdle: false };
	rt.event("agent_event", { event: { type: "turn_end", turnIndex: 0, message: {}, toolResults: [] } });
	rt.event("agent_event", { event: { type: "turn_start", turnIndex: 1, timestamp: 2 } });
	rt.event("agent_event", { event: { type: "tool_execution_end", toolCallId: "t", toolName: "bash", result: {}, isError: true } });
	rt.answer(await rt.command("ui_set_status", { key: "turns", text: "turn 0 (1 seen, idle=false)" }));
	rt.answer(await rt.command("ui_set_widget", { key: "last-tool", lines: ["bash: failed"], placement: "belowEditor" }));

	rt.context = { ...rt.context, model: { provider: "faux", id: "faux-2", name: "Faux 2" } };
	rt.event("model_select", { model: "faux/faux-2", previousModel: "faux/faux-1" });
	rt.answer(await rt.command("ui_set_title", { title: "dreb: faux/faux-2 (was faux-1, set)" }));
	await done(rt);
	assert.match(rt.stderr, /setWidget\(\) with a component factory is not supported/);
});

test("a module that throws while loading fails initialize with its message", async () => {
	const rt = new Runtime("load-error.ts");
	const r = await rt.initialize();
	assert.deepEqual([r.success, r.error], [false, "Failed to load extension: this extension cannot start"]);
	await done(rt);
});

test("a module without a default factory fails initialize", async () => {
	const rt = new Runtime("not-a-factory.ts");
	const r = await rt.initialize();
	assert.equal(r.success, false);
	assert.match(r.error, /^Failed to load extension: Extension does not export a valid factory function: /);
	await done(rt);
});

test("a missing extension fails initialize", async () => {
	const rt = new Runtime("does-not-exist.ts");
	const r = await rt.initialize();
	assert.equal(r.success, false);
	assert.match(r.error, /^Failed to load extension: Extension not found: /);
	await done(rt);
});

test("everything the extension prints goes to stderr; stdout carries frames only", async () => {
	const rt = new Runtime("noisy.js");
	const r = await rt.initialize();
	assert.equal(r.success, true, r.error);
	// Providers registered while loading go out with the registration (the reference queues them until then).
	assert.deepEqual(r.data.registration, {
		events: ["agent_start"],
		providers: [
			{ name: "nope", config: { baseUrl: "http://localhost" } },
			{ name: "nope2", config: { baseUrl: "http://localhost" } },
		],
	});
	rt.event("agent_event", { event: { type: "agent_start" } });
	await until(() => rt.stderr.includes("noisy: agent_start"));
	await done(rt);
	for (const line of ["noisy: loading", "noisy: info", "noisy: raw stdout"]) assert.ok(rt.stderr.includes(line), line);
	for (const f of rt.frames) assert.equal(typeof f, "object");
});

test("stdin closing ends the host even with the extension's timers running", async () => {
	const rt = new Runtime("tools.ts");
	await rt.initialize();
	rt.call("execute_tool", { toolName: "wait_abort", toolCallId: "c", params: {} });
	await until(() => rt.snapshotCounts.get_context >= 2);
	const status = await rt.close();
	assert.equal(status.code, 0);
});

test("a line that is not JSON and a response to nothing are dropped", async () => {
	const rt = new Runtime("guard.ts");
	await rt.initialize();
	rt.child.stdin.write("not json\n");
	rt.send({ id: "zz", type: "response", command: "get_context", success: true, data: {} });
	assert.deepEqual(await rt.ok("tool_call", { toolName: "ls", toolCallId: "c", input: {} }), {});
	await done(rt);
	assert.match(rt.stderr, /dropped a line that is not JSON/);
	assert.match(rt.stderr, /dropped a response to no pending command \(zz\)/);
});

test("a call waits for the handlers of the events before it (state rebuilt from the session)", async () => {
	const rt = new Runtime("state.ts");
	rt.session.entries.push({ type: "custom", id: "e3", parentId: "e2", timestamp: "2024-01-01T00:00:03.000Z", customType: "note", data: { text: "buy milk" } });
	rt.session.branch = [...rt.session.entries];
	await rt.initialize();
	rt.event("session_start", { reason: "startup" });
	assert.deepEqual(await rt.ok("execute_tool", { toolName: "notes", toolCallId: "c1", params: {} }), {
		content: [{ type: "text", text: "buy milk" }],
		details: { leaf: "e2", header: "0b6c3c1e" },
	});
	// The session did not change (same leaf): it is not read again.
	const reads = rt.snapshotCounts.get_session;
	await rt.ok("execute_tool", { toolName: "notes", toolCallId: "c2", params: {} });
	assert.equal(rt.snapshotCounts.get_session, reads);
	rt.context = { ...rt.context, leafId: "e3" };
	await rt.ok("execute_tool", { toolName: "notes", toolCallId: "c3", params: {} });
	assert.equal(rt.snapshotCounts.get_session, reads + 1);
	await done(rt);
});

test("a session getter used without a snapshot throws a clear error once; later handlers get the snapshot", async () => {
	const rt = new Runtime("hidden-state.ts");
	await rt.initialize();
	const id = rt.call("execute_tool", { toolName: "count_entries", toolCallId: "c1", params: {} });
	const r = await rt.response(id, "execute_tool");
	assert.equal(r.success, false);
	assert.match(r.error, /^ctx\.sessionManager\.getEntries\(\) is not available here: .*get_session/);
	assert.deepEqual(await rt.ok("execute_tool", { toolName: "count_entries", toolCallId: "c2", params: {} }), {
		content: [{ type: "text", text: "2 entries" }],
	});
	await done(rt);
});

test("dialogs: input, editor, ask, an aborted select, and the terminal-only ones", async () => {
	const rt = new Runtime("api-tour.ts");
	await rt.initialize();
	const id = rt.call("execute_command", { name: "dialogs", args: "" });
	rt.answer(await rt.command("ui_input", { title: "Name?", placeholder: "your name", timeout: 1500 }), { value: "Ada" });
	rt.answer(await rt.command("ui_editor", { title: "Edit", prefill: "prefilled" }), { value: "edited" });
	rt.answer(
		await rt.command("ui_ask", {
			title: "Survey",
			questions: [{ question: "Tabs or spaces?", options: ["tabs", "spaces"], allowFreeText: false }],
		}),
		{ answers: [{ selected: ["tabs"] }] },
	);
	// The select is sent, then given up (its signal fired): never answered here.
	await rt.command("ui_select", { title: "Never answered", options: ["a", "b"] });
	rt.answer(await rt.command("ui_set_status", { key: "tour" }));
	rt.answer(await rt.command("ui_set_editor_text", { text: "Ada|edited|tabs|undefined|undefined|" }));
	assert.equal((await rt.response(id, "execute_command")).success, true);
	await done(rt);
});

test("actions: sendUserMessage, setLabel, abort, getAllTools, getCommands, context getters", async () => {
	const rt = new Runtime("api-tour.ts");
	await rt.initialize();
	rt.tools.push({ name: "tail", description: "The last lines", parameters: { type: "object" }, source: rt.extension });
	const id = rt.call("execute_command", { name: "actions", args: "" });
	await rt.expect("send_user_message", { content: "do the thing", deliverAs: "steer" });
	await rt.expect("set_label", { entryId: "e1", label: "start" });
	await rt.expect("set_label", { entryId: "e2" });
	await rt.expect("abort", {});
	await rt.expect("ui_notify", {
		message:
			"tools=read:builtin,bash:builtin,tail:local commands=dialogs:extension,actions:extension,compact-now:extension,branch:extension usage=1.2 prompt=You are a coding agent. pending=false name=first",
		notifyType: "info",
	});
	assert.equal((await rt.response(id, "execute_command")).success, true);
	assert.equal(rt.snapshotCounts.get_tools >= 1, true);
	await done(rt);
	assert.match(rt.stderr, /ctx\.shutdown\(\) is not supported/);
});

test("ctx.compact calls onComplete or onError", async () => {
	const rt = new Runtime("api-tour.ts");
	await rt.initialize();
	let id = rt.call("execute_command", { name: "compact-now", args: "keep the API notes" });
	rt.answer(await rt.command("compact", { customInstructions: "keep the API notes" }), { summary: "short", tokensBefore: 900 });
	await rt.expect("ui_notify", { message: "compacted 900: short", notifyType: "info" });
	assert.equal((await rt.response(id, "execute_command")).success, true);
	id = rt.call("execute_command", { name: "compact-now", args: "" });
	rt.fail(await rt.command("compact", {}), "Nothing to compact");
	await rt.expect("ui_notify", { message: "compaction failed: Nothing to compact", notifyType: "error" });
	assert.equal((await rt.response(id, "execute_command")).success, true);
	await done(rt);
});

test("session operations answer { cancelled }; session_start after a fork is session_fork", async () => {
	const rt = new Runtime("api-tour.ts");
	const init = await rt.initialize();
	assert.deepEqual(init.data.registration.events, ["session_fork", "session_start", "user_bash"]);
	const id = rt.call("execute_command", { name: "branch", args: "" });
	const fork = await rt.command("fork", { entryId: "e1" });
	rt.context = { ...rt.context, sessionFile: "/sessions/forked.jsonl" };
	rt.event("session_start", { reason: "fork" });
	rt.answer(fork, { cancelled: false });
	// The event's handler and the command run side by side.
	const two = [await rt.next(), await rt.next()].sort((a, b) => a.type.localeCompare(b.type));
	assert.deepEqual(
		two.map(({ id: _id, ...rest }) => rest),
		[
			{ type: "navigate_tree", targetId: "e1", summarize: true, label: "back" },
			{ type: "ui_notify", message: "forked from /sessions/one.jsonl", notifyType: "info" },
		],
	);
	rt.answer(two[1]);
	rt.answer(two[0], { cancelled: true });
	rt.answer(await rt.command("switch_session", { sessionPath: "/sessions/other.jsonl" }), { cancelled: false });
	await rt.expect("ui_notify", { message: "fork=false tree=true switch=false", notifyType: "info" });
	await rt.expect("reload", {});
	assert.equal((await rt.response(id, "execute_command")).success, true);
	await done(rt);
});

test("user_bash: a supplied result, custom operations run in the host, or no answer", async () => {
	const rt = new Runtime("api-tour.ts");
	await rt.initialize();
	assert.deepEqual(await rt.ok("user_bash", { command: "!fake ls", excludeFromContext: false, cwd: rt.cwd }), {
		result: { output: "faked ls", exitCode: 0, cancelled: false, truncated: false },
	});
	assert.deepEqual(await rt.ok("user_bash", { command: "wrap echo wrapped; exit 3", excludeFromContext: true, cwd: rt.cwd }), {
		result: { output: "wrapped\n", exitCode: 3 },
	});
	assert.deepEqual(await rt.ok("user_bash", { command: "ls", excludeFromContext: false, cwd: rt.cwd }), {});
	assert.deepEqual(await rt.ok("execute_tool", { toolName: "tail", toolCallId: "t", params: { text: "a\nb\nc", lines: 2 } }), {
		content: [{ type: "text", text: "b\nc" }],
		details: { truncated: true },
	});
	await done(rt);
});

test("a call does not wait forever for an event handler that needs it", async () => {
	const rt = new Runtime("nested.ts");
	await rt.initialize();
	rt.event("agent_event", { event: { type: "agent_end", messages: [] } });
	// The runtime serves send_user_message by running the input hook first.
	const sum = await rt.command("send_user_message", { content: "next step", deliverAs: "followUp" });
	const started = Date.now();
	const input = await rt.ok("input", { text: "next step", source: "extension" });
	assert.deepEqual(input, { action: "transform", text: "next step!" });
	assert.ok(Date.now() - started >= 1500, "the input call waited for the event first");
	rt.answer(sum);
	rt.answer(await rt.command("ui_confirm", { title: "Continue?", message: "after the next step" }), { confirmed: true });
	rt.answer(await rt.command("ui_notify", { message: "continue=true", notifyType: "info" }));
	await done(rt);
});
