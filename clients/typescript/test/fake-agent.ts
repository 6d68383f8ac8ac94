// A tiny fake agent that speaks the dreb JSONL protocol on stdio, for process-level tests.
// It is written to a temp file and run with the current node binary.
import { writeFileSync, chmodSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./temp-dir.js";

const SOURCE = String.raw`
"use strict";
const fs = require("node:fs");
const out = (value, ending = "\n") => fs.writeSync(1, JSON.stringify(value) + ending);
const ok = (cmd, data) => out(data === undefined
  ? { id: cmd.id, type: "response", command: cmd.type, success: true }
  : { id: cmd.id, type: "response", command: cmd.type, success: true, data });
const fail = (cmd, error) => out({ id: cmd.id, type: "response", command: cmd.type, success: false, error });
let held;
// Shaped like the spec's get_state example (RpcSessionState).
let idleState = {
  model: { id: "mock-model", name: "Mock", api: "openai-completions", provider: "mock", baseUrl: "http://127.0.0.1:9/v1",
    reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 200000, maxTokens: 32000 },
  scopedModels: [], tasks: [], usingSubscription: false, thinkingLevel: "off", availableThinkingLevels: ["off"],
  isStreaming: false, isRetrying: false, retryAttempt: 0, isCompacting: false, steeringMode: "one-at-a-time",
  followUpMode: "one-at-a-time", sessionId: "fake-session", autoCompactionEnabled: true, messageCount: 0,
  pendingMessageCount: 0, contextUsage: { tokens: 0, contextWindow: 200000, percent: 0 },
};

function handle(cmd) {
  switch (cmd.type) {
    case "echo": return ok(cmd, cmd);
    case "whoami": return ok(cmd, {
      argv: process.argv.slice(2), cwd: process.cwd(), env: process.env.FAKE_AGENT_VAR ?? null,
      removed: process.env.FAKE_AGENT_REMOVED ?? null,
      uid: process.getuid ? process.getuid() : null, gid: process.getgid ? process.getgid() : null });
    case "crlf": return out({ id: cmd.id, type: "response", command: cmd.type, success: true, data: "crlf" }, "\r\n");
    case "bytewise": {
      // One byte per write: the client sees chunks that split multi-byte characters.
      const bytes = Buffer.from(JSON.stringify({ id: cmd.id, type: "response", command: cmd.type, success: true,
        data: { text: "h\u00e9 \u{1F600} \u2028 \u2029 \u4E2D" } }) + "\n");
      for (const b of bytes) fs.writeSync(1, Buffer.of(b));
      return;
    }
    case "hold": held = cmd; return; // answered after the next command, out of order
    case "release": ok(cmd, "second"); if (held) ok(held, "first"); held = undefined; return;
    case "never": return; // no response: the client's timeout fires
    case "die": fs.writeSync(2, "fatal: fake agent dying\n"); process.exit(3);
    case "extension_ui_response": return out({ type: "echo_input", frame: cmd }); // inputs get no response
    case "spawn_child": {
      // A long-lived grandchild, as a bash tool would start; reports its pid.
      const child = require("node:child_process").spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
      return ok(cmd, { pid: child.pid });
    }
    case "get_state": return ok(cmd, idleState);
    case "prompt":
      if (cmd.message === "refuse") return fail(cmd, "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.");
      // Response and the whole run in one write: exercises the waitForIdle race.
      fs.writeSync(1, [
        { id: cmd.id, type: "response", command: "prompt", success: true },
        { type: "agent_start", model: { provider: "mock", id: "mock-model" }, thinkingLevel: "off" },
        { type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "hi\u2028there" } },
        { type: "some_future_event", payload: 1 },
        { type: "agent_end", messages: [] },
      ].map((f) => JSON.stringify(f) + "\n").join(""));
      idleState = { ...idleState, messageCount: idleState.messageCount + 2 };
      return;
    default: return fail(cmd, "Unknown command: " + cmd.type);
  }
}

let pending = Buffer.alloc(0);
process.stdin.on("data", (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  let lf;
  while ((lf = pending.indexOf(10)) !== -1) {
    let line = pending.subarray(0, lf);
    pending = pending.subarray(lf + 1);
    if (line.length && line[line.length - 1] === 13) line = line.subarray(0, line.length - 1);
    let cmd;
    try { cmd = JSON.parse(line.toString("utf8")); }
    catch (e) { out({ type: "response", command: "parse", success: false, error: "Failed to parse JSON: " + e.message }); continue; }
    handle(cmd);
  }
});
if (process.env.FAKE_AGENT_IGNORE_EOF) process.on("SIGTERM", () => {});
process.stdin.on("end", () => {
  if (process.env.FAKE_AGENT_IGNORE_EOF) { setInterval(() => {}, 1000); return; }
  process.exit(0);
});
`;

/** Writes the fake agent to a fresh temp dir (world-readable, for the uid test) and returns its path. */
export function writeFakeAgent(): string {
  const dir = tempDir("dreb-fake-agent-");
  chmodSync(dir, 0o755);
  const path = join(dir, "agent.cjs");
  writeFileSync(path, SOURCE, { mode: 0o644 });
  return path;
}
