// Binary discovery: the `command` option, then DREB_BIN, then `dreb` on PATH, then a clear SpawnError.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DrebClient, ProcessTransport, RpcConnection, SpawnError, resolveDrebBinary } from "../src/index.js";
import { writeFakeAgent } from "./fake-agent.js";
import { tempDir } from "./temp-dir.js";

const agentPath = writeFakeAgent();
const realBin = process.env.DREB_BIN ?? "";

/** A directory holding an executable `dreb` that runs the fake agent. */
function dirWithFakeDreb(): string {
  const dir = tempDir("dreb-path-");
  const script = join(dir, "dreb");
  writeFileSync(script, `#!/bin/sh\nexec "${process.execPath}" "${agentPath}" "$@"\n`);
  chmodSync(script, 0o755);
  return dir;
}

test("resolveDrebBinary: command, then DREB_BIN, then PATH", () => {
  const dir = dirWithFakeDreb();
  const script = join(dir, "dreb");
  assert.equal(resolveDrebBinary("/explicit/dreb", { DREB_BIN: script, PATH: dir }), "/explicit/dreb");
  assert.equal(resolveDrebBinary(undefined, { DREB_BIN: script, PATH: "" }), script);
  assert.equal(resolveDrebBinary(undefined, { PATH: ["/nonexistent", dir].join(":") }), script);
  assert.equal(resolveDrebBinary(undefined, { DREB_BIN: "", PATH: dir }), script); // empty = unset
});

test("no DREB_BIN and no dreb on PATH: a SpawnError naming both", () => {
  assert.throws(
    () => resolveDrebBinary(undefined, { PATH: "/nonexistent-a:/nonexistent-b" }),
    (e: unknown) =>
      e instanceof SpawnError &&
      e.message ===
        'dreb binary not found: set DREB_BIN or put dreb on PATH (looked for "dreb" in PATH=/nonexistent-a:/nonexistent-b)',
  );
  assert.throws(() => resolveDrebBinary(undefined, {}), /set DREB_BIN or put dreb on PATH \(looked for "dreb" in PATH is unset\)/);
});

test("a DREB_BIN that is missing or not executable: a SpawnError naming the path", () => {
  const missing = join(tmpdir(), "no-such-dir-dreb", "dreb");
  assert.throws(
    () => resolveDrebBinary(undefined, { DREB_BIN: missing, PATH: dirWithFakeDreb() }),
    (e: unknown) => e instanceof SpawnError && e.message.includes(`DREB_BIN="${missing}" does not exist`),
  );
  const plain = join(tempDir("dreb-noexec-"), "dreb");
  writeFileSync(plain, "not executable\n", { mode: 0o644 });
  assert.throws(
    () => resolveDrebBinary(undefined, { DREB_BIN: plain }),
    (e: unknown) => e instanceof SpawnError && e.message.includes(`DREB_BIN="${plain}" is not an executable file`),
  );
  // A relative DREB_BIN is resolved against the current directory and named as given.
  assert.throws(() => resolveDrebBinary(undefined, { DREB_BIN: "./no-such-dreb" }), /DREB_BIN="\.\/no-such-dreb" does not exist/);
});

test("spawn with an empty PATH and no DREB_BIN fails at start with the clear SpawnError, and the client is closed", async () => {
  const client = new RpcConnection(new ProcessTransport({ env: { PATH: "", DREB_BIN: undefined } }));
  await assert.rejects(
    client.start(),
    (e: unknown) => e instanceof SpawnError && /dreb binary not found: set DREB_BIN or put dreb on PATH/.test(e.message),
  );
  assert.equal(client.isClosed, true);
  await assert.rejects(client.call("get_state"), /dreb binary not found/);
});

test("spawn with DREB_BIN naming a missing file rejects with an error naming it", async () => {
  const missing = join(tmpdir(), "no-such-dir-dreb", "dreb");
  await assert.rejects(
    DrebClient.spawn({ env: { DREB_BIN: missing } }),
    (e: unknown) => e instanceof SpawnError && e.message.includes(missing),
  );
});

test("dreb found on PATH is spawned", async () => {
  const dir = dirWithFakeDreb();
  const client = new RpcConnection(new ProcessTransport({ env: { PATH: dir, DREB_BIN: undefined } }));
  await client.start();
  const who = await client.call<{ argv: string[] }>("whoami");
  assert.deepEqual(who.argv, ["--mode", "rpc"]);
  await client.close();
});

test(
  "DREB_BIN pointing at the real binary works (with an empty PATH)",
  { skip: realBin ? false : "set DREB_BIN to a dreb binary to run against the real agent" },
  async () => {
    const dir = tempDir("dreb-real-");
    const client = await DrebClient.spawn({
      provider: "faux",
      args: ["--no-session"],
      cwd: dir,
      env: { DREB_BIN: resolve(realBin), PATH: "", DREB_CODING_AGENT_DIR: join(dir, "agent") },
    });
    assert.equal(typeof (await client.getVersion()).version, "string");
    await client.close();
  },
);
