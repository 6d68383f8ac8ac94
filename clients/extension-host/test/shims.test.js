// The modules extensions import, used directly.

import assert from "node:assert/strict";
import { test } from "node:test";
import { StringEnum, Type } from "../src/shims/ai.js";
import {
	createEventBus,
	formatSize,
	isBashToolResult,
	isToolCallEventType,
	parseFrontmatter,
	truncateHead,
	truncateLine,
	truncateTail,
	withFileMutationQueue,
} from "../src/shims/coding-agent.js";
import { Container, Key, Text, truncateToWidth, visibleWidth } from "../src/shims/tui.js";
import { virtualModules } from "../src/loader.js";

test("StringEnum and Type build plain JSON Schema", () => {
	const schema = Type.Object({ op: StringEnum(["add", "sub"], { description: "what" }) });
	assert.deepEqual(JSON.parse(JSON.stringify(schema)), {
		type: "object",
		required: ["op"],
		properties: { op: { type: "string", enum: ["add", "sub"], description: "what" } },
	});
});

test("type guards", () => {
	assert.equal(isToolCallEventType("bash", { toolName: "bash" }), true);
	assert.equal(isToolCallEventType("bash", { toolName: "read" }), false);
	assert.equal(isBashToolResult({ toolName: "bash" }), true);
});

test("truncation keeps whole lines within the limits", () => {
	const text = "one\ntwo\nthree\nfour";
	assert.deepEqual(
		[truncateHead(text, { maxLines: 2 }).content, truncateTail(text, { maxLines: 2 }).content],
		["one\ntwo", "three\nfour"],
	);
	const bytes = truncateHead(text, { maxBytes: 9 });
	assert.deepEqual([bytes.content, bytes.truncated, bytes.truncatedBy], ["one\ntwo", true, "bytes"]);
	const none = truncateTail(text);
	assert.deepEqual([none.content, none.truncated, none.truncatedBy, none.totalLines], [text, false, null, 4]);
	assert.deepEqual(truncateLine("abcdef", 3), { text: "abc... [truncated]", wasTruncated: true });
	assert.deepEqual([formatSize(10), formatSize(2048), formatSize(3 * 1024 * 1024)], ["10B", "2.0KB", "3.0MB"]);
});

test("frontmatter", () => {
	assert.deepEqual(parseFrontmatter("---\nname: x\ncount: 3\nok: true\ntags: [a, 'b']\n---\nbody\n"), {
		frontmatter: { name: "x", count: 3, ok: true, tags: ["a", "b"] },
		body: "body",
	});
	assert.deepEqual(parseFrontmatter("no frontmatter"), { frontmatter: {}, body: "no frontmatter" });
});

test("the event bus and the file mutation queue", async () => {
	const bus = createEventBus();
	/** @type {unknown[]} */
	const seen = [];
	const off = bus.on("c", (d) => {
		seen.push(d);
	});
	bus.on("c", () => {
		throw new Error("logged, not thrown");
	});
	bus.emit("c", 1);
	off();
	bus.emit("c", 2);
	assert.deepEqual(seen, [1]);

	/** @type {number[]} */
	const order = [];
	const a = withFileMutationQueue("/tmp/x", async () => {
		await new Promise((r) => setTimeout(r, 20));
		order.push(1);
	});
	const b = withFileMutationQueue("/tmp/x", async () => {
		order.push(2);
	});
	await Promise.all([a, b]);
	assert.deepEqual(order, [1, 2]);
});

test("tui stand-ins", () => {
	assert.equal(visibleWidth("\x1b[31mred\x1b[0m"), 3);
	assert.equal(truncateToWidth("abcdefgh", 5), "ab...");
	const c = new Container();
	c.addChild(new Text("hello"));
	assert.deepEqual(c.render(80), ["hello"]);
	assert.equal(typeof Key.enter, "function");
});

test("virtual modules serve every import name, typebox subpaths on first use", () => {
	const modules = virtualModules();
	for (const name of ["@dreb/coding-agent", "@dreb/ai", "@dreb/agent-core", "@dreb/tui", "@sinclair/typebox", "@sinclair/typebox/value"]) {
		assert.ok(name in modules, name);
	}
	const value = /** @type {any} */ (modules["@sinclair/typebox/value"]).Value;
	assert.equal(value.Check(Type.String(), "x"), true);
});
