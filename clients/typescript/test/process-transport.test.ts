// ProcessTransport against a real child process (the fake agent), over real pipes.
import { test } from "node:test";
import { existsSync, readFileSync } from "node:fs";
import assert from "node:assert/strict";
import {
  ProcessTransport,
  RpcClosedError,
  RpcConnection,
  RpcError,
  RpcTimeoutError,
  SpawnError,
  type ProcessTransportOptions,
  type TransportCloseInfo,
} from "../src/index.js";
import { writeFakeAgent } from "./fake-agent.js";

const agentPath = writeFakeAgent();

async function startAgent(options: ProcessTransportOptions = {}): Promise<{ client: RpcConnection; transport: ProcessTransport }> {
  const transport = new ProcessTransport({ command: process.execPath, commandArgs: [agentPath], ...options });
  const client = new RpcConnection(transport);
  await client.start();
  return { client, transport };
}

test("argv, cwd and env reach the agent; --mode rpc comes after the command args", async () => {
  const { client } = await startAgent({
    provider: "faux",
    model: "faux-1",
    args: ["--no-session"],
    cwd: "/",
    env: { FAKE_AGENT_VAR: "v\u00e9", FAKE_AGENT_REMOVED: undefined },
  });
  const who = await client.call<{ argv: string[]; cwd: string; env: string; removed: unknown }>("whoami");
  assert.deepEqual(who.argv, ["--mode", "rpc", "--provider", "faux", "--model", "faux-1", "--no-session"]);
  assert.equal(who.cwd, "/");
  assert.equal(who.env, "v\u00e9");
  assert.equal(who.removed, null);
  await client.close();
});

test("U+2028 / U+2029 and multi-byte characters survive the round trip, even one byte per chunk", async () => {
  const { client } = await startAgent();
  const message = "line\u2028sep\u2029par \u{1F680} \u00e9";
  const echoed = await client.call<{ message: string }>("echo", { message });
  assert.equal(echoed.message, message);
  const bytewise = await client.call<{ text: string }>("bytewise");
  assert.equal(bytewise.text, "h\u00e9 \u{1F600} \u2028 \u2029 \u4E2D");
  await client.close();
});

test("CRLF-terminated responses are accepted", async () => {
  const { client } = await startAgent();
  assert.equal(await client.call("crlf"), "crlf");
  await client.close();
});

test("out-of-order responses are correlated by id", async () => {
  const { client } = await startAgent();
  const first = client.call("hold");
  const second = client.call("release");
  assert.equal(await second, "second");
  assert.equal(await first, "first");
  await client.close();
});

test("error responses raise RpcError with the command and the exact text", async () => {
  const { client } = await startAgent();
  await assert.rejects(client.call("no_such_command"), (e: unknown) => {
    return e instanceof RpcError && e.command === "no_such_command" && e.message === "Unknown command: no_such_command";
  });
  await client.close();
});

test("timeouts reject with RpcTimeoutError and leave the connection usable", async () => {
  const { client } = await startAgent();
  await assert.rejects(client.call("never", {}, { timeoutMs: 25 }), RpcTimeoutError);
  assert.equal(await client.call<{ x: number }>("echo", { x: 1 }).then((d) => d.x), 1);
  await client.close();
});

test("agent exit fails pending requests with the exit code and stderr", async () => {
  const { client, transport } = await startAgent();
  const closed = new Promise<unknown>((resolve) => client.onClose(resolve));
  await assert.rejects(client.call("die"), (e: unknown) => {
    assert.ok(e instanceof RpcClosedError);
    assert.match(e.message, /exited with code 3/);
    assert.match(e.message, /fatal: fake agent dying/);
    return true;
  });
  assert.deepEqual(
    await closed.then((i) => {
      const info = i as { code: number | null };
      return info.code;
    }),
    3,
  );
  assert.match(transport.stderr(), /fake agent dying/);
  await assert.rejects(client.call("echo"), RpcClosedError);
});

test("a missing executable rejects start with SpawnError", async () => {
  const client = new RpcConnection(new ProcessTransport({ command: "/nonexistent/dreb-binary" }));
  await assert.rejects(client.start(), (e: unknown) => e instanceof SpawnError && /failed to spawn/.test(e.message));
  assert.ok(client.isClosed);
});

test("close() escalates to signals when the agent ignores stdin EOF and SIGTERM", async () => {
  const { client, transport } = await startAgent({ env: { FAKE_AGENT_IGNORE_EOF: "1" }, stopGraceMs: 50 });
  const closed = new Promise<TransportCloseInfo>((resolve) => client.onClose(resolve));
  assert.ok(transport.pid);
  await client.call("echo"); // the agent is up and has installed its SIGTERM handler
  await client.close();
  const info = await closed;
  assert.ok(client.isClosed);
  // The client's own close may be reported before the child's `close` event; either way the child is gone.
  assert.ok(info.signal === "SIGKILL" || info.reason === "Client closed", JSON.stringify(info));
  assert.throws(() => process.kill(transport.pid!, 0));
});

test("uid / gid are forwarded to spawn", { skip: process.getuid?.() !== 0 ? "needs root" : false }, async () => {
  const { client } = await startAgent({ uid: 65534, gid: 65534, cwd: "/" });
  const who = await client.call<{ uid: number; gid: number }>("whoami");
  assert.equal(who.uid, 65534);
  assert.equal(who.gid, 65534);
  await client.close();
});

test("prompt, then waitForIdle over a real pipe with the whole run in one write", async () => {
  const { client } = await startAgent();
  const types: string[] = [];
  client.onEvent((e) => types.push(e.type));
  await client.call("prompt", { message: "hello" });
  await client.waitForIdle({ timeoutMs: 0 });
  assert.deepEqual(types, ["agent_start", "message_update", "some_future_event", "agent_end"]);
  await client.close();
});

test("large frames (several MiB, bigger than a pipe buffer) round-trip intact", async () => {
  const { client } = await startAgent();
  const message = "x\u2028\u00e9".repeat(700_000);
  const echoed = await client.call<{ message: string }>("echo", { message }, { timeoutMs: 60_000 });
  assert.equal(echoed.message.length, message.length);
  assert.ok(echoed.message === message);
  await client.close();
});

/** Alive and not a zombie (a killed orphan may wait for a reaper that a container's pid 1 never runs). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

test("a forced stop takes the agent's own children with it", { skip: existsSync("/proc/self/stat") ? false : "needs /proc" }, async () => {
  const { client, transport } = await startAgent({ env: { FAKE_AGENT_IGNORE_EOF: "1" }, stopGraceMs: 50 });
  const { pid } = await client.call<{ pid: number }>("spawn_child");
  assert.ok(running(pid));
  await client.close();
  assert.throws(() => process.kill(transport.pid!, 0));
  assert.equal(running(pid), false);
});
