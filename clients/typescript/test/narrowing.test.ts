// `switch (event.type)` narrows RpcEvent to the generated event types (the open union's unknown member does not
// absorb the cases), and events of types this version does not know still reach the default branch. The
// compile step (`tsc --strict`) is half of this test: the property accesses below only type-check when narrowed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isKnownEvent, type RpcEvent } from "../src/index.js";

function describe(event: RpcEvent): string {
  switch (event.type) {
    case "agent_end":
      return `agent_end with ${event.messages.length} message(s)`;
    case "message_update": {
      const update = event.assistantMessageEvent;
      return update.type === "text_delta" ? `delta ${update.delta}` : `update ${update.type}`;
    }
    case "auto_retry_end":
      return `retry ended after ${event.attempt} (${event.success ? "ok" : (event.finalError ?? "failed")})`;
    default:
      return `other ${event.type as string}`;
  }
}

test("switch on event.type narrows known events and keeps unknown ones", () => {
  const frames = [
    { type: "agent_end", messages: [{ role: "user", content: "hi", timestamp: 1 }] },
    {
      type: "message_update",
      message: { role: "assistant", content: [] },
      assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "hi", partial: { role: "assistant", content: [] } },
    },
    { type: "auto_retry_end", success: false, attempt: 3, finalError: "Overloaded" },
    { type: "a_future_event", payload: 1 },
  ] as unknown as RpcEvent[];
  assert.deepEqual(frames.map(describe), [
    "agent_end with 1 message(s)",
    "delta hi",
    "retry ended after 3 (Overloaded)",
    "other a_future_event",
  ]);
  const unknown = frames[3]!;
  assert.equal(isKnownEvent(unknown), false);
  assert.equal(unknown.type as string, "a_future_event");
});
