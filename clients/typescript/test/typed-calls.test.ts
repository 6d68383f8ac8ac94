// The generated client's `promptAndWait` takes `PromptParams`, so a misspelt key does not compile (the
// connection's own takes any object); at run time it collects the run's events like the connection's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DrebClient } from "../src/index.js";
import { writeFakeAgent } from "./fake-agent.js";

// Type-checked by `tsc --strict` (part of `npm test`), never called: the directive fails the build if the typo
// compiles.
export async function typoDoesNotCompile(client: DrebClient): Promise<void> {
  // @ts-expect-error -- `mesage` is not a PromptParams key
  await client.promptAndWait({ mesage: "hi" });
}

test("promptAndWait through the generated client collects the run", async () => {
  const client = await DrebClient.spawn({ command: process.execPath, commandArgs: [writeFakeAgent()], args: ["--no-session"] });
  try {
    const events = await client.promptAndWait({ message: "hello" });
    assert.equal(events.at(-1)?.type, "agent_end");
    assert.equal(events[0]?.type, "agent_start");
  } finally {
    await client.close();
  }
});

test("summarizeRun sums usage over the run's replies and takes the last reply's text", async () => {
  const { summarizeRun } = await import("../src/index.js");
  const usage = (output: number, cost: number) => ({
    input: 1, output, cacheRead: 0, cacheWrite: 0, totalTokens: 1 + output,
    cost: { input: 0, output: cost, cacheRead: 0, cacheWrite: 0, total: cost },
  });
  const reply = (text: string, output: number, stopReason: "stop" | "error") => ({
    role: "assistant", content: [{ type: "text", text }], api: "faux", provider: "faux", model: "faux",
    usage: usage(output, output / 100), stopReason, timestamp: 1,
    ...(stopReason === "error" ? { errorMessage: "529 overloaded" } : {}),
  });
  const events = [
    { type: "agent_start" },
    { type: "agent_end", messages: [{ role: "user", content: "hi", timestamp: 0 }, reply("", 0, "error")] },
    { type: "auto_retry_start", attempt: 1, maxAttempts: 3, delayMs: 1, errorMessage: "529 overloaded" },
    { type: "agent_end", messages: [reply("Hel", 3, "stop")] },
  ] as unknown as Parameters<typeof summarizeRun>[0];
  const result = summarizeRun(events);
  assert.equal(result.finalText, "Hel");
  assert.equal(result.stopReason, "stop");
  assert.equal(result.errorMessage, undefined);
  assert.equal(result.usage.output, 3);
  assert.equal(result.usage.input, 2);
  assert.equal(result.messages.length, 3);
  assert.equal(result.events.length, 4);
});
