// Opt-in: the generated client against the real agent binary (offline `faux` provider).
// Set DREB_BIN to a built `dreb` (e.g. target/debug/dreb); the Python suite also validates every frame
// against the generated JSON Schema.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { DrebClient, RpcError, isEvent, isKnownEvent, type RpcEvent } from "../src/index.js";
import { tempDir } from "./temp-dir.js";

const bin = process.env.DREB_BIN ?? "";
const skip = bin ? false : "set DREB_BIN to a dreb binary to run against the real agent";

async function spawnReal(): Promise<DrebClient> {
  const dir = tempDir("dreb-real-");
  return DrebClient.spawn({
    command: bin,
    provider: "faux",
    args: ["--no-session"],
    cwd: dir,
    env: { DREB_CODING_AGENT_DIR: join(dir, "agent") },
  });
}

test("get_state and get_version return typed data", { skip }, async () => {
  const client = await spawnReal();
  const state = await client.getState();
  assert.equal(state.isStreaming, false);
  assert.equal(typeof (await client.getVersion()).version, "string");
  await client.close();
});

test("prompt → known events → waitForIdle", { skip }, async () => {
  const client = await spawnReal();
  const events: RpcEvent[] = [];
  client.onEvent((e) => events.push(e));
  await client.prompt({ message: "hello" });
  await client.waitForIdle({ timeoutMs: 60_000 });
  assert.equal(events[0]?.type, "agent_start");
  assert.equal(events.at(-1)?.type, "agent_end");
  assert.deepEqual(events.filter((e) => !isKnownEvent(e)), []);
  const end = events.at(-1);
  assert.ok(end && isEvent(end, "agent_end") && end.messages.length > 0);
  assert.ok((await client.getState()).messageCount > 0);
  await client.close();
});

test("errors carry the documented texts", { skip }, async () => {
  const client = await spawnReal();
  await assert.rejects(client.prompt({ message: "/fork" }), (e: unknown) => {
    return (
      e instanceof RpcError &&
      e.message === "Built-in slash command /fork must be handled by the RPC client; it was not sent to the model."
    );
  });
  const response = await client.request({ type: "bogus" });
  assert.deepEqual(response, {
    id: response.id,
    type: "response",
    command: "bogus",
    success: false,
    error: "Unknown command: bogus",
  });
  await client.close();
});

test("run() returns the final text, stop reason, usage, messages and events", { skip }, async () => {
  const client = await spawnReal();
  try {
    const result = await client.run({ message: "hello" });
    const end = result.events.at(-1);
    assert.ok(end && isEvent(end, "agent_end"));
    const last = end.messages.at(-1);
    assert.ok(last && last.role === "assistant");
    const text = last.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
    assert.ok(text.length > 0);
    assert.equal(result.finalText, text);
    assert.equal(result.stopReason, "stop");
    assert.equal(result.errorMessage, undefined);
    assert.deepEqual(result.messages, end.messages);
    // The faux provider reports usage for each reply; the sum covers both replies of the run (tool call, answer).
    const replies = end.messages.filter((m) => m.role === "assistant");
    assert.ok(replies.length >= 1);
    assert.equal(result.usage.output, replies.reduce((n, m) => n + (m.role === "assistant" ? m.usage.output : 0), 0));
  } finally {
    await client.close();
  }
});
