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
