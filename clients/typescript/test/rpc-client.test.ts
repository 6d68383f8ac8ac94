// RpcClient (the reference-compatible client class) against a scripted agent: how it starts the process, the
// reference's error texts, and each place where it does what is right instead of what the reference does
// (README: "Differences from the reference client").
import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, realpathSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { RpcClient, RpcError, RpcTimeoutError, type ResponseFrame, type RpcEvent, type RpcExitInfo, type RpcExtensionUIResponse } from "../src/index.js";
import { writeRpcFakeAgent } from "./rpc-client-fake.js";
import { tempDir } from "./temp-dir.js";

const cliPath = writeRpcFakeAgent();

async function started(env: Record<string, string> = {}): Promise<RpcClient> {
  const client = new RpcClient({ cliPath, env });
  await client.start();
  return client;
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("start runs <cliPath> --mode rpc --provider --model ...args in cwd, env merged; a relative cliPath is resolved against cwd", async () => {
  const client = new RpcClient({
    cliPath: basename(cliPath),
    cwd: dirname(cliPath),
    env: { FAKE_VAR: "from-options" },
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    args: ["--no-session"],
  });
  await client.start();
  const who = JSON.parse(await client.getVersion()) as { argv: string[]; cwd: string; env: string };
  assert.deepEqual(who.argv, ["--mode", "rpc", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--no-session"]);
  assert.equal(realpathSync(who.cwd), realpathSync(dirname(cliPath)));
  assert.equal(who.env, "from-options");
  await client.stop();

  // Empty provider / model are left out, as the reference does.
  const bare = new RpcClient({ cliPath, provider: "", model: "" });
  await bare.start();
  assert.deepEqual((JSON.parse(await bare.getVersion()) as { argv: string[] }).argv, ["--mode", "rpc"]);
  await bare.stop();
});

test("without cliPath the binary is $DREB_BIN (of the agent's environment), else dreb on PATH", async () => {
  const dir = tempDir("dreb-rpc-bin-");
  const wrapper = join(dir, "dreb");
  writeFileSync(wrapper, `#!/bin/sh\nexec "${process.execPath}" "${cliPath}" "$@"\n`);
  chmodSync(wrapper, 0o755);
  const viaEnv = new RpcClient({ env: { DREB_BIN: wrapper } });
  await viaEnv.start();
  assert.deepEqual((JSON.parse(await viaEnv.getVersion()) as { argv: string[] }).argv, ["--mode", "rpc"]);
  await viaEnv.stop();
  const viaPath = new RpcClient({ env: { DREB_BIN: "", PATH: `${dir}:${process.env.PATH ?? ""}` } });
  await viaPath.start();
  assert.equal(typeof (await viaPath.getVersion()), "string");
  await viaPath.stop();
});

test("uid / gid are forwarded when set", { skip: process.getuid?.() !== 0 ? "needs root" : false }, async () => {
  const client = new RpcClient({ cliPath, cwd: "/", uid: 65534, gid: 65534 });
  await client.start();
  const who = JSON.parse(await client.getVersion()) as { uid: number; gid: number };
  assert.equal(who.uid, 65534);
  assert.equal(who.gid, 65534);
  await client.stop();
  const gidOnly = new RpcClient({ cliPath, cwd: "/", gid: 65534 });
  await gidOnly.start();
  const who2 = JSON.parse(await gidOnly.getVersion()) as { uid: number; gid: number };
  assert.equal(who2.uid, 0);
  assert.equal(who2.gid, 65534);
  await gidOnly.stop();
});

test("start twice: Client already started", async () => {
  const client = await started();
  await assert.rejects(client.start(), { message: "Client already started" });
  await client.stop();
});

test("every method rejects with the agent's error text on success:false, the 14 the reference ignores included", async () => {
  const client = await started({ FAKE_REFUSE_ALL: "1" });
  const calls: Array<[string, () => Promise<unknown>]> = [
    ["prompt", () => client.prompt("hi")],
    ["steer", () => client.steer("hi")],
    ["follow_up", () => client.followUp("hi")],
    ["abort", () => client.abort()],
    ["reload", () => client.reload()],
    ["set_thinking_level", () => client.setThinkingLevel("high")],
    ["set_steering_mode", () => client.setSteeringMode("all")],
    ["set_follow_up_mode", () => client.setFollowUpMode("all")],
    ["set_auto_compaction", () => client.setAutoCompaction(false)],
    ["abort_compaction", () => client.abortCompaction()],
    ["set_auto_retry", () => client.setAutoRetry(false)],
    ["abort_retry", () => client.abortRetry()],
    ["abort_bash", () => client.abortBash()],
    ["set_session_name", () => client.setSessionName("")],
    ["get_state", () => client.getState()],
    ["steer_background_agent", () => client.steerBackgroundAgent("a1", "hi")],
    ["dream", () => client.dream()],
  ];
  for (const [wire, call] of calls) {
    await assert.rejects(call(), (error: unknown) => {
      assert.ok(error instanceof RpcError, wire);
      assert.equal(error.message, `refused: ${wire}`);
      assert.equal(error.command, wire);
      return true;
    });
  }
  await assert.rejects(client.promptAndWait("hi"), { message: "refused: prompt" });
  await client.stop();
});

test("a request times out with the reference's text; its late answer reaches onUnmatchedResponse", async () => {
  const client = await started({ FAKE_STATE_DELAY_MS: "300" });
  const unmatched: ResponseFrame[] = [];
  client.onUnmatchedResponse((response) => unmatched.push(response));
  await assert.rejects(client.getState({ timeoutMs: 50 }), (error: unknown) => {
    assert.ok(error instanceof RpcTimeoutError);
    assert.match(error.message, /^Timeout waiting for response to get_state\. Stderr: /);
    return true;
  });
  await delay(400);
  assert.equal(unmatched.length, 1);
  assert.equal(unmatched[0]?.command, "get_state");
  assert.equal(unmatched[0]?.success, true);
  await client.stop();
});

test("events: every non-response frame with a string type, except a malformed barrier or UI request", async () => {
  const client = await started();
  const types: string[] = [];
  const unmatched: ResponseFrame[] = [];
  client.onUnmatchedResponse((r) => unmatched.push(r));
  const unsubscribe = client.onEvent((event) => types.push(event.type as string));
  const barriers: RpcEvent[] = [];
  client.onEvent((event) => event.type === "dashboard_snapshot_barrier" && barriers.push(event));
  await client.prompt("go");
  await client.waitForIdle();
  await delay(20);
  assert.deepEqual(types, [
    "agent_start",
    "extension_ui_request",
    "dashboard_snapshot_barrier",
    "extension_error",
    "some_future_event",
    "agent_end",
    "after_the_end",
  ]);
  assert.deepEqual(barriers, [{ type: "dashboard_snapshot_barrier", snapshotId: "s1" }]);
  // The unsolicited response is not an event; it is surfaced, not dropped.
  assert.deepEqual(unmatched.map((r) => r.command), ["nobody_asked"]);
  unsubscribe();
  await client.prompt("go");
  await client.waitForIdle();
  assert.equal(types.length, 7, "unsubscribed");
  await client.stop();
});

test("collectEvents / promptAndWait stop at the agent_end that makes the agent idle", async () => {
  const client = await started();
  const events = await client.promptAndWait("go");
  assert.equal(events[0]?.type, "agent_start");
  assert.equal(events.at(-1)?.type, "agent_end");
  assert.ok(!events.some((e) => (e.type as string) === "after_the_end"));
  await client.stop();
});

test("a listener that throws does not stop delivery to the others (reported as a warning)", async () => {
  const client = await started();
  const warning = new Promise<Error>((resolve) => process.once("warning", resolve));
  let second = 0;
  client.onEvent((event) => {
    if (event.type === "agent_start") throw new Error("listener bug");
  });
  client.onEvent((event) => event.type === "agent_start" && second++);
  await client.prompt("go");
  await client.waitForIdle();
  assert.equal(second, 1);
  assert.match((await warning).message, /listener threw: Error: listener bug/);
  await client.stop();
});

test("waitForIdle resolves at once when idle, and waits for a prompt sent in the same tick", async () => {
  const client = await started();
  const t0 = Date.now();
  await client.waitForIdle(5_000); // The reference times out here.
  assert.ok(Date.now() - t0 < 1_000);
  assert.deepEqual(await client.collectEvents(5_000), []);

  const ends: string[] = [];
  client.onEvent((e) => e.type === "agent_end" && ends.push(e.type));
  const idle = client.waitForIdle(5_000); // before the prompt, as hosts of the reference do
  await client.prompt("later"); // its run comes 100 ms after the response
  assert.equal(ends.length, 0);
  await idle;
  assert.equal(ends.length, 1);
  await client.stop();
});

test("waitForIdle / collectEvents time out with the reference's texts; a signal stops the wait", async () => {
  const client = await started();
  await client.prompt("hang");
  await assert.rejects(client.waitForIdle(50), (error: unknown) => {
    assert.ok(error instanceof Error);
    assert.match(error.message, /^Timeout waiting for agent to become idle\. Stderr: /);
    return true;
  });
  await assert.rejects(client.collectEvents(50), { message: /^Timeout collecting events\. Stderr: / });
  const controller = new AbortController();
  const waiting = client.waitForIdle(0, { signal: controller.signal });
  controller.abort();
  await assert.rejects(waiting, { name: "AbortError" });
  // A run that never ends: stopping the agent ends the wait with the exit.
  const pending = client.waitForIdle(0);
  await client.stop();
  await assert.rejects(pending, { message: /^RPC process exited with code 0, signal null/ });
});

test("the agent dies: pending requests fail, onExit gets {code, signal}, calls fail with not running", async () => {
  const client = await started();
  const exits: RpcExitInfo[] = [];
  client.onExit((info) => exits.push(info));
  const waiting = client.waitForIdle(0).then(
    () => "resolved",
    (error: Error) => error.message,
  );
  await assert.rejects(client.prompt("die"), { message: /^RPC process exited with code 3, signal null\. Stderr: fatal: fake agent dying/ });
  assert.deepEqual(exits, [{ code: 3, signal: null }]);
  assert.match(await waiting, /^RPC process exited with code 3/); // the prompt was sent; its run never ended
  await assert.rejects(client.getState(), { message: /^RPC process not running/ });
  assert.throws(
    () => client.sendExtensionUIResponse({ type: "extension_ui_response", id: "x", cancelled: true }),
    { message: /^RPC process is not running\. Stderr: fatal: fake agent dying/ },
  );
  assert.match(client.getStderr(), /fatal: fake agent dying/);
  await assert.rejects(client.start(), { message: "Client already started" });
  await client.stop();
  await client.start(); // after stop() the client can be started again
  assert.deepEqual((await client.getState()).messageCount, 0);
  assert.match(client.getStderr(), /fatal: fake agent dying/, "stderr of every process");
  await client.stop();
  assert.equal(exits.length, 2);
});

test("a spawn failure rejects start with failed to spawn; later calls name the cause", async () => {
  const client = new RpcClient({ cliPath: "/nonexistent/dreb" });
  const exits: RpcExitInfo[] = [];
  client.onExit((info) => exits.push(info));
  await assert.rejects(client.start(), { message: /^Agent process failed to spawn: .*ENOENT.*\. Stderr: $/ });
  assert.equal(exits.length, 1);
  assert.match(exits[0]?.error?.message ?? "", /ENOENT/);
  await assert.rejects(client.getState(), { message: /^RPC process not running: .*ENOENT/ });
  assert.throws(
    () => client.sendExtensionUIResponse({ type: "extension_ui_response", id: "x", value: "v" }),
    { message: /^RPC process is not running\. Spawn error: .*ENOENT.*\. Stderr: / },
  );
});

test("an agent that exits at once rejects start with exited immediately", async () => {
  const dir = tempDir("dreb-rpc-exit-");
  const script = join(dir, "dreb");
  writeFileSync(script, "#!/bin/sh\necho 'Model not found: x/y' >&2\nexit 1\n");
  chmodSync(script, 0o755);
  const client = new RpcClient({ cliPath: script });
  await assert.rejects(client.start(), {
    message: "Agent process exited immediately with code 1, signal null. Stderr: Model not found: x/y\n",
  });
  await assert.rejects(client.getState(), { message: /^RPC process not running/ });
});

test("sendExtensionUIResponse writes the response as the frame", async () => {
  const client = await started();
  const echoed = new Promise<RpcEvent>((resolve) => client.onEvent((e) => (e.type as string) === "echo_input" && resolve(e)));
  client.sendExtensionUIResponse({ type: "extension_ui_response", id: "dlg-1", answers: [{ selected: ["SQLite"] }] });
  assert.deepEqual((await echoed as { frame?: unknown }).frame, {
    type: "extension_ui_response",
    id: "dlg-1",
    answers: [{ selected: ["SQLite"] }],
  });
  // A plain-JS host that leaves out `type`: it is filled in.
  const second = new Promise<RpcEvent>((resolve) => client.onEvent((e) => (e.type as string) === "echo_input" && resolve(e)));
  client.sendExtensionUIResponse({ id: "dlg-2", value: "v" } as unknown as RpcExtensionUIResponse);
  assert.deepEqual((await second as { frame?: unknown }).frame, { type: "extension_ui_response", id: "dlg-2", value: "v" });
  await client.stop();
});

test("navigateTree sends its options but not timeoutMs / signal; getLastAssistantText gives null for no text", async () => {
  const client = await started();
  const result = await client.navigateTree("e1", { summarize: false, label: "l", timeoutMs: 1_000, signal: new AbortController().signal });
  const sent = JSON.parse(result.editorText ?? "{}") as Record<string, unknown>;
  assert.deepEqual(Object.keys(sent).sort(), ["id", "label", "summarize", "targetId", "type"]);
  assert.equal(sent.id, "req_1");
  assert.equal(await client.getLastAssistantText(), null);
  await client.stop();
});

test("stop: exit listeners are told, pending requests fail, a second stop is a no-op", async () => {
  const client = await started({ FAKE_STATE_DELAY_MS: "5000" });
  const exits: RpcExitInfo[] = [];
  client.onExit((info) => exits.push(info));
  const pending = client.getState();
  await client.stop();
  await assert.rejects(pending, { message: /^RPC process exited with code 0, signal null/ });
  assert.deepEqual(exits, [{ code: 0, signal: null }]);
  await client.stop();
  assert.equal(exits.length, 1);
  await assert.rejects(client.getState(), { message: /^RPC process not running/ });
});
