// Default timeouts: the per-command table, the connection-level overrides, and (with mocked timers)
// that long commands outlive 30 s and waitForIdle has no default timeout.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Peer } from "./peer.js";
import {
  COMMAND_TIMEOUTS_MS,
  COMMAND_TYPES,
  DEFAULT_REQUEST_TIMEOUT_MS,
  LONG_COMMAND_TIMEOUT_MS,
  RpcConnection,
  RpcTimeoutError,
  StreamTransport,
  defaultTimeoutFor,
  type ConnectionOptions,
} from "../src/index.js";

async function connect(options: ConnectionOptions = {}): Promise<{ peer: Peer; client: RpcConnection }> {
  const peer = new Peer();
  const client = new RpcConnection(new StreamTransport(peer.toClient, peer.fromClient), options);
  await client.start();
  return { peer, client };
}

/** Lets stream callbacks and promise reactions run (setImmediate is not mocked). */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Tracks whether a promise has settled, without an unhandled rejection. */
function track<T>(promise: Promise<T>): { settled: () => boolean; result: Promise<T> } {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  return { settled: () => settled, result: promise };
}

test("the table: LLM- or process-bound commands get 5 minutes, every other command 30 s", () => {
  assert.equal(DEFAULT_REQUEST_TIMEOUT_MS, 30_000);
  assert.equal(LONG_COMMAND_TIMEOUT_MS, 300_000);
  for (const command of ["compact", "bash", "navigate_tree", "buddy_hatch", "buddy_reroll"]) {
    assert.equal(defaultTimeoutFor(command), 300_000, command);
  }
  for (const command of ["prompt", "get_state", "abort", "fork", "export_html", "set_session_name", "reload"]) {
    assert.equal(defaultTimeoutFor(command), 30_000, command);
  }
  assert.equal(defaultTimeoutFor("no_such_command"), 30_000);
  assert.equal(defaultTimeoutFor("toString"), 30_000); // not inherited from Object.prototype
  // Every entry names a real command of the spec.
  for (const command of Object.keys(COMMAND_TIMEOUTS_MS)) {
    assert.ok((COMMAND_TYPES as readonly string[]).includes(command), command);
  }
});

test("timeoutFor: commandTimeoutsMs, then defaultTimeoutMs (which replaces the table), then the table", async () => {
  const plain = await connect();
  assert.equal(plain.client.timeoutFor("compact"), 300_000);
  assert.equal(plain.client.timeoutFor("get_state"), 30_000);
  await plain.client.close();

  const none = await connect({ defaultTimeoutMs: 0 });
  assert.equal(none.client.timeoutFor("compact"), 0);
  assert.equal(none.client.timeoutFor("get_state"), 0);
  await none.client.close();

  const mixed = await connect({ defaultTimeoutMs: 5_000, commandTimeoutsMs: { compact: 900_000, bash: 0 } });
  assert.equal(mixed.client.timeoutFor("compact"), 900_000);
  assert.equal(mixed.client.timeoutFor("bash"), 0);
  assert.equal(mixed.client.timeoutFor("navigate_tree"), 5_000);
  assert.equal(mixed.client.timeoutFor("get_state"), 5_000);
  await mixed.client.close();
});

test("compact outlives 30 s and times out only after 5 minutes; get_state times out after 30 s", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const { peer, client } = await connect();
  const compact = track(client.call("compact"));
  await peer.next();
  const state = track(client.call("get_state"));
  await peer.next();

  t.mock.timers.tick(30_000);
  await flush();
  assert.equal(state.settled(), true);
  await assert.rejects(state.result, (e: unknown) => e instanceof RpcTimeoutError && e.timeoutMs === 30_000);
  t.mock.timers.tick(269_999);
  await flush();
  assert.equal(compact.settled(), false, "compact must still be waiting at 299.999 s");
  t.mock.timers.tick(1);
  await flush();
  await assert.rejects(
    compact.result,
    (e: unknown) => e instanceof RpcTimeoutError && e.command === "compact" && e.timeoutMs === 300_000,
  );
  await client.close();
});

test("a compact answered after 2 minutes resolves", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const { peer, client } = await connect();
  const compact = track(client.call<{ summary: string }>("compact"));
  const frame = await peer.next();
  t.mock.timers.tick(120_000);
  await flush();
  assert.equal(compact.settled(), false);
  peer.send({ id: frame.id, type: "response", command: "compact", success: true, data: { summary: "s" } });
  assert.deepEqual(await compact.result, { summary: "s" });
  await client.close();
});

test("an explicit per-call timeout and the connection default still apply", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const { peer, client } = await connect({ defaultTimeoutMs: 1_000 });
  const compact = track(client.call("compact"));
  await peer.next();
  const bash = track(client.call("bash", { command: "true" }, { timeoutMs: 10 }));
  await peer.next();
  t.mock.timers.tick(10);
  await flush();
  await assert.rejects(bash.result, (e: unknown) => e instanceof RpcTimeoutError && e.timeoutMs === 10);
  assert.equal(compact.settled(), false);
  t.mock.timers.tick(990);
  await flush();
  await assert.rejects(compact.result, (e: unknown) => e instanceof RpcTimeoutError && e.timeoutMs === 1_000);
  await client.close();
});

test("waitForIdle and promptAndWait have no default timeout: still waiting after an hour, resolved by agent_end", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const { peer, client } = await connect();
  const run = track(client.promptAndWait({ message: "long task" }));
  const frame = await peer.next();
  peer.send({ id: frame.id, type: "response", command: "prompt", success: true });
  peer.send({ type: "agent_start" });
  await flush();
  const idle = track(client.waitForIdle());
  t.mock.timers.tick(3_600_000);
  await flush();
  assert.equal(idle.settled(), false, "waitForIdle must not time out by default");
  assert.equal(run.settled(), false, "promptAndWait must not time out by default");
  peer.send({ type: "agent_end", messages: [] });
  await idle.result;
  const events = await run.result;
  assert.deepEqual(
    events.map((e) => e.type),
    ["agent_start", "agent_end"],
  );
  await client.close();
});

test("waitForIdle with an explicit timeout still times out", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const { peer, client } = await connect();
  const prompt = client.call("prompt", { message: "x" });
  const frame = await peer.next();
  peer.send({ id: frame.id, type: "response", command: "prompt", success: true });
  await prompt;
  const idle = track(client.waitForIdle({ timeoutMs: 60_000 }));
  t.mock.timers.tick(60_000);
  await flush();
  await assert.rejects(idle.result, (e: unknown) => e instanceof RpcTimeoutError && e.command === "waitForIdle");
  await client.close();
});

