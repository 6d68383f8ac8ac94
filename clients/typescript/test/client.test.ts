// The generated DrebClient end to end against the fake agent process: prompt → events → waitForIdle,
// an error response raising RpcError, and get_state returning typed data.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DrebClient, RpcError, isEvent, isKnownEvent, type RpcEvent, type RpcSessionState } from "../src/index.js";
import { writeFakeAgent } from "./fake-agent.js";

const agentPath = writeFakeAgent();

function spawnClient(): Promise<DrebClient> {
  return DrebClient.spawn({ command: process.execPath, commandArgs: [agentPath], args: ["--no-session"] });
}

test("prompt, events, waitForIdle through the generated client", async () => {
  const client = await spawnClient();
  const events: RpcEvent[] = [];
  client.onEvent((event) => events.push(event));
  const result: void = await client.prompt({ message: "hello \u2028 world" });
  assert.equal(result, undefined);
  await client.waitForIdle({ timeoutMs: 0 });
  assert.deepEqual(
    events.map((e) => e.type),
    ["agent_start", "message_update", "some_future_event", "agent_end"],
  );
  // Known events narrow to their generated types.
  const update = events.find((e) => isEvent(e, "message_update"));
  assert.ok(update && isEvent(update, "message_update"));
  const delta = update.assistantMessageEvent;
  assert.equal(delta.type === "text_delta" ? delta.delta : undefined, "hi\u2028there");
  const start = events.find((e) => isEvent(e, "agent_start"));
  assert.ok(start && isEvent(start, "agent_start"));
  assert.equal(start.model?.id, "mock-model");
  // The unknown event is delivered, and recognised as unknown.
  const future = events.find((e) => (e.type as string) === "some_future_event");
  assert.ok(future && !isKnownEvent(future));
  const state: RpcSessionState = await client.getState();
  assert.equal(state.messageCount, 2);
  await client.close();
});

test("an error response rejects with RpcError carrying the exact text", async () => {
  const client = await spawnClient();
  await assert.rejects(client.prompt({ message: "refuse" }), (error: unknown) => {
    assert.ok(error instanceof RpcError);
    assert.equal(error.command, "prompt");
    assert.equal(
      error.message,
      "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.",
    );
    return true;
  });
  // A refused prompt starts no run: the agent is idle.
  await client.waitForIdle({ timeoutMs: 0 });
  await client.close();
});

test("getState returns typed data", async () => {
  const client = await spawnClient();
  const state = await client.getState();
  const level: RpcSessionState["thinkingLevel"] = state.thinkingLevel;
  assert.equal(level, "off");
  assert.equal(state.isStreaming, false);
  assert.deepEqual(state.availableThinkingLevels, ["off"]);
  assert.equal(state.model?.provider, "mock");
  assert.equal(state.sessionName, undefined);
  await client.close();
});

test("sendExtensionUiResponse writes the input frame with its type", async () => {
  const client = await spawnClient();
  const echoed = new Promise<RpcEvent>((resolve) => client.onEvent((e) => (e.type as string) === "echo_input" && resolve(e)));
  client.sendExtensionUiResponse({ id: "dlg-1", value: "yes" });
  const event = await echoed;
  assert.ok(!isKnownEvent(event)); // the fake agent's echo is not a protocol event
  assert.deepEqual(event.frame, { type: "extension_ui_response", id: "dlg-1", value: "yes" });
  await client.close();
});

test("invoke sends any command by wire name with typed params and result", async () => {
  const client = await spawnClient();
  const state: RpcSessionState = await client.invoke("get_state", {});
  assert.equal(state.thinkingLevel, "off");
  await assert.rejects(client.invoke("prompt", { message: "refuse" }), RpcError);
  await client.close();
});
