// AbortSignal on requests and idle waits, and `await using` closing the client at the end of its scope.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Peer } from "./peer.js";
import { RpcConnection, StreamTransport } from "../src/index.js";

async function connect(): Promise<{ peer: Peer; client: RpcConnection }> {
  const peer = new Peer();
  const client = new RpcConnection(new StreamTransport(peer.toClient, peer.fromClient));
  await client.start();
  return { peer, client };
}

test("an aborted request rejects with the signal's reason and its late answer is unmatched", async () => {
  const { peer, client } = await connect();
  const unmatched: unknown[] = [];
  client.onUnmatchedResponse((r) => unmatched.push(r));
  const controller = new AbortController();
  const pending = client.call("compact", {}, { signal: controller.signal });
  const frame = await peer.next();
  controller.abort();
  await assert.rejects(pending, (e: Error) => e.name === "AbortError");
  peer.send({ id: frame.id, type: "response", command: "compact", success: true, data: {} });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(unmatched.length, 1);
  // The connection still works.
  const next = client.call<{ ok: boolean }>("get_state");
  const second = await peer.next();
  peer.send({ id: second.id, type: "response", command: "get_state", success: true, data: { ok: true } });
  assert.deepEqual(await next, { ok: true });
  await client.close();
});

test("an already aborted signal sends nothing", async () => {
  const { peer, client } = await connect();
  const reason = new Error("gave up");
  await assert.rejects(client.call("get_state", {}, { signal: AbortSignal.abort(reason) }), (e) => e === reason);
  const probe = client.call("get_version");
  const frame = await peer.next();
  assert.equal(frame.type, "get_version", "the aborted request was never written");
  peer.send({ id: frame.id, type: "response", command: "get_version", success: true, data: { version: "1" } });
  await probe;
  await client.close();
});

test("an aborted waitForIdle rejects and the run goes on", async () => {
  const { peer, client } = await connect();
  const prompt = client.call("prompt", { message: "go" });
  const frame = await peer.next();
  peer.send({ id: frame.id, type: "response", command: "prompt", success: true });
  peer.send({ type: "agent_start" });
  await prompt;
  const controller = new AbortController();
  const waiting = client.waitForIdle({ signal: controller.signal });
  controller.abort();
  await assert.rejects(waiting, (e: Error) => e.name === "AbortError");
  assert.equal(client.isIdle(), false);
  const again = client.waitForIdle();
  peer.send({ type: "agent_end", messages: [] });
  await again;
  await client.close();
});

test("await using closes the client at the end of the scope", async () => {
  let closed = false;
  {
    const { client } = await connect();
    client.onClose(() => (closed = true));
    await using scoped = client;
    assert.equal(scoped.isClosed, false);
  }
  assert.equal(closed, true);
});
