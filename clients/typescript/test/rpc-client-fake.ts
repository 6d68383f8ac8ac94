// A scripted agent for the RpcClient tests that need what the real agent cannot be made to do on demand: a
// refusal of every command, a response after the request's timeout, a run that never ends, malformed frames, a crash.
// Written to a temp file as a `.cjs` script, so `new RpcClient({ cliPath })` runs it with node (as the reference runs
// its `dist/cli.js`).
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./temp-dir.js";

const SOURCE = String.raw`
"use strict";
const fs = require("node:fs");
const out = (value) => fs.writeSync(1, JSON.stringify(value) + "\n");
const ok = (cmd, data) => out(data === undefined
  ? { id: cmd.id, type: "response", command: cmd.type, success: true }
  : { id: cmd.id, type: "response", command: cmd.type, success: true, data });
const fail = (cmd, error) => out({ id: cmd.id, type: "response", command: cmd.type, success: false, error });
const lines = (frames) => fs.writeSync(1, frames.map((f) => JSON.stringify(f) + "\n").join(""));

function handle(cmd) {
  if (process.env.FAKE_REFUSE_ALL) return fail(cmd, "refused: " + cmd.type);
  switch (cmd.type) {
    // Who it is: argv, cwd, an env var and its ids, as the version string.
    case "get_version": return ok(cmd, { version: JSON.stringify({
      argv: process.argv.slice(2), cwd: process.cwd(), env: process.env.FAKE_VAR ?? null,
      uid: process.getuid ? process.getuid() : null, gid: process.getgid ? process.getgid() : null }) });
    case "get_state": {
      const delay = Number(process.env.FAKE_STATE_DELAY_MS ?? 0);
      if (delay > 0) return setTimeout(() => ok(cmd, { isStreaming: false, messageCount: 0 }), delay);
      return ok(cmd, { isStreaming: false, messageCount: 0 });
    }
    case "get_last_assistant_text": return ok(cmd, {});
    case "prompt":
      if (cmd.message === "refuse") return fail(cmd, "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.");
      if (cmd.message === "die") { fs.writeSync(2, "fatal: fake agent dying\n"); process.exit(3); }
      if (cmd.message === "hang") return lines([{ id: cmd.id, type: "response", command: "prompt", success: true }, { type: "agent_start" }]);
      if (cmd.message === "later") {
        // The run comes after a pause: a waitForIdle made before the prompt must wait for it.
        ok(cmd);
        return setTimeout(() => lines([{ type: "agent_start" }, { type: "agent_end", messages: [] }]), 100);
      }
      // The response and the whole run in one write, with the frames the reference drops or passes on.
      return lines([
        { id: cmd.id, type: "response", command: "prompt", success: true },
        { type: "agent_start", model: { provider: "fake", id: "fake" }, thinkingLevel: "off" },
        { type: "dashboard_snapshot_barrier", snapshotId: 7 },
        { type: "extension_ui_request", id: 1, method: "notify", message: "malformed" },
        { type: "extension_ui_request", id: "n1", method: "notify", message: "hello" },
        { type: "dashboard_snapshot_barrier", snapshotId: "s1" },
        { type: "extension_error", extensionPath: "x", event: "y", error: "z" },
        { type: "some_future_event" },
        { type: "response", success: true, command: "nobody_asked" },
        { type: "agent_end", messages: [] },
        { type: "after_the_end" },
      ]);
    case "extension_ui_response": return out({ type: "echo_input", frame: cmd });
    case "navigate_tree": return ok(cmd, { cancelled: false, editorText: JSON.stringify(cmd) });
    default: return ok(cmd, null);
  }
}

let pending = Buffer.alloc(0);
process.stdin.on("data", (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  let lf;
  while ((lf = pending.indexOf(10)) !== -1) {
    const line = pending.subarray(0, lf);
    pending = pending.subarray(lf + 1);
    handle(JSON.parse(line.toString("utf8")));
  }
});
process.stdin.on("end", () => process.exit(0));
`;

/** Writes the scripted agent to a fresh temp dir (world-readable, for the uid test) and returns its path. */
export function writeRpcFakeAgent(): string {
  const dir = tempDir("dreb-rpc-fake-");
  chmodSync(dir, 0o755);
  const file = join(dir, "cli.cjs");
  writeFileSync(file, SOURCE, { mode: 0o644 });
  return file;
}
