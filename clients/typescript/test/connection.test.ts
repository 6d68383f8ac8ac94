// The connection core driven over in-memory streams, so the test controls exactly which bytes
// arrive in which chunk.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Peer } from "./peer.js";
import {
  RpcClosedError,
  RpcConnection,
  RpcError,
  RpcTimeoutError,
  StreamTransport,
  type ResponseFrame,
  type RpcFrame,
} from "../src/index.js";

async function connect(options: { defaultTimeoutMs?: number } = {}): Promise<{ peer: Peer; client: RpcConnection }> {
  const peer = new Peer();
  const client = new RpcConnection(new StreamTransport(peer.toClient, peer.fromClient), options);
  await client.start();
  return { peer, client };
}

test("correlates responses by id, in any order", async () => {
  const { peer, client } = await connect();
  const a = client.call<string>("get_version");
  const b = client.call<string>("get_git_branch");
  const ra = await peer.next();
  const rb = await peer.next();
  assert.equal(ra.type, "get_version");
  assert.notEqual(ra.id, rb.id);
  assert.match(String(ra.id), /^req_\d+$/);
  peer.write(peer.line({ id: rb.id, type: "response", command: "get_git_branch", success: true, data: null }));
  peer.write(peer.line({ id: ra.id, type: "response", command: "get_version", success: true, data: "1.2.3" }));
  assert.equal(await a, "1.2.3");
  assert.equal(await b, null);
  await client.close();
});

test("params are sent as fields beside id and type", async () => {
  const { peer, client } = await connect();
  const done = client.call("prompt", { message: "hi \u2028 there", images: [] });
  const frame = await peer.next();
  assert.deepEqual(Object.keys(frame), ["id", "type", "message", "images"]);
  assert.equal(frame.message, "hi \u2028 there");
  peer.write(peer.line({ id: frame.id, type: "response", command: "prompt", success: true }));
  assert.equal(await done, undefined);
  await client.close();
});

test("success:false rejects with RpcError carrying the command and the exact text", async () => {
  const { peer, client } = await connect();
  const call = client.call("set_model", { provider: "x", modelId: "y" });
  const frame = await peer.next();
  peer.write(
    peer.line({ id: frame.id, type: "response", command: "set_model", success: false, error: "Model not found: x/y" }),
  );
  await assert.rejects(call, (error: unknown) => {
    assert.ok(error instanceof RpcError);
    assert.equal(error.command, "set_model");
    assert.equal(error.error, "Model not found: x/y");
    assert.equal(error.message, "Model not found: x/y");
    assert.equal(error.response.success, false);
    return true;
  });
  await client.close();
});

test("request() resolves with the raw failure frame without throwing", async () => {
  const { peer, client } = await connect();
  const pending = client.request({ type: "bogus" });
  const frame = await peer.next();
  peer.write(peer.line({ id: frame.id, type: "response", command: "bogus", success: false, error: "Unknown command: bogus" }));
  const response = await pending;
  assert.equal(response.success, false);
  assert.equal(response.error, "Unknown command: bogus");
  await client.close();
});

test("a request with no response times out with RpcTimeoutError; the late response is surfaced as unmatched", async () => {
  const { peer, client } = await connect();
  const unmatched: ResponseFrame[] = [];
  client.onUnmatchedResponse((r) => unmatched.push(r));
  const call = client.call("compact", {}, { timeoutMs: 20 });
  const frame = await peer.next();
  await assert.rejects(call, (error: unknown) => error instanceof RpcTimeoutError && error.command === "compact");
  const late = { id: frame.id, type: "response", command: "compact", success: true, data: {} };
  // A marker event after the late response tells us when the client has processed it.
  const seen = new Promise<void>((resolve) => client.onEvent((e) => e.type === "marker" && resolve()));
  peer.write(peer.line(late) + peer.line({ type: "marker" }));
  await seen;
  assert.deepEqual(unmatched, [late]);
  await client.close();
});

test("a second response for an answered id is surfaced as unmatched, not delivered twice", async () => {
  const { peer, client } = await connect();
  const unmatched: ResponseFrame[] = [];
  client.onUnmatchedResponse((r) => unmatched.push(r));
  const call = client.call("prompt", { message: "x" });
  const frame = await peer.next();
  const second = { id: frame.id, type: "response", command: "prompt", success: false, error: "No API key" };
  peer.write(peer.line({ id: frame.id, type: "response", command: "prompt", success: true }) + peer.line(second));
  await call;
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(unmatched, [second]);
  await client.close();
});

test("events reach every listener in order, unknown types included; a throwing listener does not stop the others", async () => {
  const errors: unknown[] = [];
  const peer = new Peer();
  const client = new RpcConnection(new StreamTransport(peer.toClient, peer.fromClient), {
    onListenerError: (e) => errors.push(e),
  });
  await client.start();
  const seen: string[] = [];
  client.onEvent(() => {
    throw new Error("boom");
  });
  const off = client.onEvent((e) => seen.push(e.type));
  const done = new Promise<void>((resolve) => client.onEvent((e) => e.type === "turn_end" && resolve()));
  peer.write(peer.line({ type: "agent_start" }) + peer.line({ type: "future_event_kind", x: 1 }) + "not json\n");
  peer.write(peer.line({ type: "turn_end" }));
  await done;
  assert.deepEqual(seen, ["agent_start", "future_event_kind", "turn_end"]);
  assert.equal(errors.length, 3);
  off();
  await client.close();
});

test("waitForIdle does not race: response and agent_end in the same chunk as the prompt's response", async () => {
  const { peer, client } = await connect();
  const call = client.call("prompt", { message: "hello" });
  const frame = await peer.next();
  peer.write(
    peer.line({ id: frame.id, type: "response", command: "prompt", success: true }) +
      peer.line({ type: "agent_start" }) +
      peer.line({ type: "agent_end", messages: [] }),
  );
  await call;
  // Everything already arrived before waitForIdle is called; it must resolve, not time out.
  await client.waitForIdle({ timeoutMs: 0 });
  assert.ok(client.isIdle());
  await client.close();
});

test("waitForIdle waits for the agent_end of the run the prompt started, not an earlier one", async () => {
  const { peer, client } = await connect();
  // An old run ends before the prompt is sent.
  const old = new Promise<void>((resolve) => client.onEvent((e) => e.type === "agent_end" && resolve()));
  peer.write(peer.line({ type: "agent_start" }) + peer.line({ type: "agent_end", messages: [] }));
  await old;
  const call = client.call("prompt", { message: "next" });
  const frame = await peer.next();
  peer.write(peer.line({ id: frame.id, type: "response", command: "prompt", success: true }));
  await call;
  assert.equal(client.isIdle(), false);
  let idle = false;
  const waiting = client.waitForIdle({ timeoutMs: 0 }).then(() => (idle = true));
  peer.write(peer.line({ type: "agent_start" }));
  await new Promise((r) => setImmediate(r));
  assert.equal(idle, false);
  peer.write(peer.line({ type: "agent_end", messages: [] }));
  await waiting;
  assert.equal(idle, true);
  await client.close();
});

test("a refused prompt leaves the agent idle", async () => {
  const { peer, client } = await connect();
  const call = client.call("prompt", { message: "x" });
  const frame = await peer.next();
  peer.write(peer.line({ id: frame.id, type: "response", command: "prompt", success: false, error: "busy" }));
  await assert.rejects(call, RpcError);
  await client.waitForIdle({ timeoutMs: 0 });
  await client.close();
});

test("promptAndWait collects the run's events", async () => {
  const { peer, client } = await connect();
  const result = client.promptAndWait({ message: "go" });
  const frame = await peer.next();
  peer.write(peer.line({ id: frame.id, type: "response", command: "prompt", success: true }));
  peer.write(peer.line({ type: "agent_start" }) + peer.line({ type: "message_update" }));
  peer.write(peer.line({ type: "agent_end", messages: [] }));
  const events = await result;
  assert.deepEqual(
    events.map((e: RpcFrame) => e.type),
    ["agent_start", "message_update", "agent_end"],
  );
  await client.close();
});

test("events() iterates buffered events and ends when the transport closes", async () => {
  const { peer, client } = await connect();
  const iterator = client.events();
  peer.write(peer.line({ type: "a" }) + peer.line({ type: "b" }));
  peer.toClient.end(peer.line({ type: "c" }).trimEnd()); // final record without LF
  const types: string[] = [];
  for await (const event of iterator) types.push(event.type);
  assert.deepEqual(types, ["a", "b", "c"]);
});

test("pending requests and idle waiters fail with RpcClosedError when the peer goes away", async () => {
  const { peer, client } = await connect();
  const closed = new Promise<string>((resolve) => client.onClose((info) => resolve(info.reason)));
  const call = client.call("bash", { command: "sleep 100" });
  await peer.next();
  const prompt = client.call("prompt", { message: "x" });
  const promptFrame = await peer.next();
  peer.write(peer.line({ id: promptFrame.id, type: "response", command: "prompt", success: true }));
  await prompt;
  const idle = client.waitForIdle({ timeoutMs: 0 });
  peer.toClient.end();
  await assert.rejects(call, RpcClosedError);
  await assert.rejects(idle, RpcClosedError);
  assert.equal(await closed, "stream ended");
  await assert.rejects(client.call("get_state"), RpcClosedError);
  assert.throws(() => client.notify({ type: "extension_ui_response", id: "x", cancelled: true }), RpcClosedError);
});

test("start twice is an error; calls before start fail", async () => {
  const peer = new Peer();
  const client = new RpcConnection(new StreamTransport(peer.toClient, peer.fromClient));
  await assert.rejects(client.call("get_state"), RpcClosedError);
  await client.start();
  await assert.rejects(client.start(), /already started/);
  await client.close();
});

test("notify writes a frame without an id", async () => {
  const { peer, client } = await connect();
  client.notify({ type: "extension_ui_response", id: "dlg-1", value: "yes" });
  assert.deepEqual(await peer.next(), { type: "extension_ui_response", id: "dlg-1", value: "yes" });
  await client.close();
});

test("waitForIdle stays pending across an automatic retry", async () => {
  const { peer, client } = await connect();
  const call = client.call("prompt", { message: "x" });
  const frame = await peer.next();
  const seen = (type: string) => new Promise<void>((resolve) => client.onEvent((e) => e.type === type && resolve()));
  const sawRetry = seen("auto_retry_start");
  peer.write(
    peer.line({ id: frame.id, type: "response", command: "prompt", success: true }) +
      peer.line({ type: "agent_start" }) +
      peer.line({ type: "agent_end", messages: [] }) +
      peer.line({ type: "auto_retry_start", attempt: 1, maxAttempts: 3, delayMs: 2000, errorMessage: "overloaded" }),
  );
  await call;
  await sawRetry;
  assert.equal(client.isIdle(), false);
  let idle = false;
  const waiting = client.waitForIdle({ timeoutMs: 0 }).then(() => (idle = true));
  const sawEnd = seen("agent_end");
  peer.write(peer.line({ type: "agent_start" }) + peer.line({ type: "agent_end", messages: [] }));
  await sawEnd;
  await new Promise((r) => setImmediate(r));
  assert.equal(idle, false, "still retrying until auto_retry_end");
  peer.write(peer.line({ type: "auto_retry_end", success: true, attempt: 2 }));
  await waiting;
  assert.ok(client.isIdle());
  await client.close();
});

test("waitForIdle stays pending across an auto-compaction that retries", async () => {
  const { peer, client } = await connect();
  const call = client.call("prompt", { message: "x" });
  const frame = await peer.next();
  const seen = (type: string) => new Promise<void>((resolve) => client.onEvent((e) => e.type === type && resolve()));
  const sawCompactionEnd = seen("auto_compaction_end");
  peer.write(
    peer.line({ id: frame.id, type: "response", command: "prompt", success: true }) +
      peer.line({ type: "agent_start" }) +
      peer.line({ type: "agent_end", messages: [] }) +
      peer.line({ type: "auto_compaction_start", reason: "overflow" }) +
      peer.line({ type: "auto_compaction_end", aborted: false, willRetry: true }),
  );
  await call;
  await sawCompactionEnd;
  assert.equal(client.isIdle(), false, "the continuation run has not started yet");
  const waiting = client.waitForIdle({ timeoutMs: 0 });
  peer.write(peer.line({ type: "agent_start" }) + peer.line({ type: "agent_end", messages: [] }));
  await waiting;
  assert.ok(client.isIdle());
  await client.close();
});

test("params JSON cannot represent reject the call instead of throwing synchronously", async () => {
  const { client } = await connect();
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  await assert.rejects(client.request({ type: "echo", cyclic }), TypeError);
  await assert.rejects(client.call("echo", { n: 10n }), TypeError);
  await client.close();
});
