// `dreb --mode acp` driven by the official ACP TypeScript SDK (@agentclientprotocol/sdk) as the client: its
// `client()` app (the replacement of the removed `ClientSideConnection`) validates every message it receives
// against the protocol's schema. The agent runs offline with the scripted `faux` provider (DREB_FAUX_SCENARIO),
// so nothing leaves the machine.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { createInterface } from "node:readline";
import * as acp from "@agentclientprotocol/sdk";

const DREB = process.env.DREB_BIN ?? resolve(import.meta.dirname, "../../../target/debug/dreb");

/** A temp HOME with an agent dir and a project dir; the scenario the faux provider plays. */
function workspace({ scenario, settings } = {}) {
  const home = mkdtempSync(join(tmpdir(), "dreb-acp-"));
  const agentDir = join(home, ".dreb/agent");
  const cwd = join(home, "project");
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const scenarioFile = join(home, "scenario.json");
  writeFileSync(scenarioFile, JSON.stringify(scenario ?? { turns: [], fallback: "error" }));
  if (settings) writeFileSync(join(agentDir, "settings.json"), JSON.stringify(settings));
  return { home, agentDir, cwd, scenarioFile, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

function startAgent(ws, extraArgs = []) {
  const child = spawn(DREB, ["--mode", "acp", "--provider", "faux", ...extraArgs], {
    cwd: ws.cwd,
    env: {
      PATH: process.env.PATH,
      HOME: ws.home,
      DREB_CODING_AGENT_DIR: ws.agentDir,
      DREB_FAUX_SCENARIO: ws.scenarioFile,
    },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return { child, stream };
}

/**
 * A client app recording every update; `onPermission` answers permission requests. `run` gets the SDK's
 * client context. The agent is stopped (stdin closed) afterwards and must exit 0.
 */
async function withClient(
  ws,
  { onPermission, onElicitation, clientCapabilities, extraArgs, fsCalls, buffers, terminals } = {},
  run,
) {
  const { child, stream } = startAgent(ws, extraArgs);
  const updates = [];
  const permissions = [];
  const noTerminals = () => {
    throw new Error("the agent was not offered terminals");
  };
  const app = acp
    .client({ name: "dreb-acp-sdk-test" })
    .onNotification(acp.methods.client.session.update, (ctx) => {
      updates.push(ctx.params);
    })
    .onRequest(acp.methods.client.session.requestPermission, (ctx) => {
      permissions.push(ctx.params);
      if (!onPermission) throw new Error("unexpected permission request");
      return onPermission(ctx.params, permissions.length);
    })
    .onRequest(acp.methods.client.fs.readTextFile, (ctx) => {
      fsCalls?.push(["read", ctx.params]);
      if (!buffers) throw new Error("the agent was not offered this");
      return { content: buffers.get(ctx.params.path) };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, (ctx) => {
      fsCalls?.push(["write", ctx.params]);
      if (!buffers) throw new Error("the agent was not offered this");
      buffers.set(ctx.params.path, ctx.params.content);
      return {};
    })
    .onRequest(acp.methods.client.terminal.create, (ctx) => (terminals ?? { create: noTerminals }).create(ctx.params))
    .onRequest(acp.methods.client.terminal.output, (ctx) => terminals.output(ctx.params))
    .onRequest(acp.methods.client.terminal.waitForExit, (ctx) => terminals.waitForExit(ctx.params))
    .onRequest(acp.methods.client.terminal.kill, (ctx) => terminals.kill(ctx.params))
    .onRequest(acp.methods.client.terminal.release, (ctx) => terminals.release(ctx.params))
    .onRequest(acp.methods.client.elicitation.create, (ctx) => {
      if (!onElicitation) throw new Error("the agent was not offered elicitation");
      return onElicitation(ctx.params);
    });
  const exited = new Promise((res) => child.on("exit", (code) => res(code)));
  try {
    return await app.connectWith(stream, async (ctx) => {
      const init = await ctx.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: clientCapabilities ?? {},
      });
      return run({ ctx, init, updates, permissions });
    });
  } finally {
    child.stdin.end();
    assert.equal(await exited, 0);
  }
}

/**
 * The editor's terminals: each a real child process in its own process group, its output kept for
 * `terminal/output`, every call recorded.
 */
class Terminals {
  calls = [];
  live = new Map();

  create(params) {
    this.calls.push(["create", params]);
    const env = { ...process.env, ACP_TEST_CLIENT: "1" };
    for (const { name, value } of params.env ?? []) env[name] = value;
    const proc = spawn(params.command, params.args ?? [], { cwd: params.cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    const term = { proc, output: "", exitStatus: null };
    term.exited = new Promise((res) =>
      // "close": the output is complete when the exit is reported.
      proc.on("close", (code, signal) => {
        term.exitStatus = { exitCode: code, signal };
        res(term.exitStatus);
      }),
    );
    proc.stdout.on("data", (d) => (term.output += d));
    proc.stderr.on("data", (d) => (term.output += d));
    const terminalId = `term-${this.live.size + 1}`;
    this.live.set(terminalId, term);
    return { terminalId };
  }

  output({ terminalId }) {
    this.calls.push(["output", terminalId]);
    const t = this.live.get(terminalId);
    return { output: t.output, truncated: false, ...(t.exitStatus ? { exitStatus: t.exitStatus } : {}) };
  }

  async waitForExit({ terminalId }) {
    this.calls.push(["wait_for_exit", terminalId]);
    // The exit status is the result itself (`terminal/output` nests it as `exitStatus`).
    return await this.live.get(terminalId).exited;
  }

  kill({ terminalId }) {
    this.calls.push(["kill", terminalId]);
    this.#stop(terminalId);
    return {};
  }

  release({ terminalId }) {
    this.calls.push(["release", terminalId]);
    this.#stop(terminalId);
    return {};
  }

  #stop(terminalId) {
    const t = this.live.get(terminalId);
    if (!t.exitStatus) process.kill(-t.proc.pid, "SIGKILL");
  }

  methods() {
    return this.calls.map(([m]) => m);
  }
}

const kinds = (updates, sessionId) =>
  updates.filter((u) => u.sessionId === sessionId).map((u) => u.update.sessionUpdate);
const ofKind = (updates, kind) => updates.map((u) => u.update).filter((u) => u.sessionUpdate === kind);
const text = (updates, kind) => ofKind(updates, kind).map((u) => u.content.text).join("");

/** A prompt, with the ordering rule checked: nothing of the turn arrives after its response. */
async function prompt(ctx, updates, sessionId, words) {
  const response = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: words }],
  });
  const count = updates.length;
  await ctx.request(acp.methods.agent.session.list, {});
  assert.equal(updates.length, count, "an update arrived after the prompt's response");
  return response;
}

const afterTool = (text) => ({ when: { afterToolResult: true }, repeat: true, text: [text] });
const on = (words, turn) => ({ when: { lastUserContains: words, afterToolResult: false }, ...turn });

test("initialize, a new session, a streamed reply with thinking, an edit with its diff, a plan", async () => {
  const ws = workspace({
    scenario: {
      turns: [
        on("fix", {
          thinking: ["Planning ", "the fix."],
          text: ["Fixing it."],
          toolCalls: [
            { name: "tasks_update", arguments: { tasks: [{ id: "1", title: "Fix a.txt", status: "in_progress" }] } },
            { name: "edit", arguments: { path: "a.txt", oldText: "bug", newText: "fix" } },
          ],
        }),
        afterTool("Fixed."),
      ],
    },
  });
  writeFileSync(join(ws.cwd, "a.txt"), "one bug here\n");
  const fsCalls = [];
  try {
    await withClient(
      ws,
      { fsCalls },
      async ({ ctx, init, updates }) => {
        assert.equal(init.protocolVersion, 1);
        assert.equal(init.agentCapabilities.loadSession, true);
        assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
        assert.equal(init.agentInfo.name, "dreb");
        const session = await ctx.request(acp.methods.agent.session.new, { cwd: ws.cwd, mcpServers: [] });
        assert.ok(session.sessionId);
        assert.ok(session.configOptions.some((o) => o.id === "model" && o.category === "model"));
        const response = await prompt(ctx, updates, session.sessionId, "fix the bug");
        assert.equal(response.stopReason, "end_turn");
        assert.ok(kinds(updates, session.sessionId).includes("available_commands_update"));
        assert.equal(text(updates, "agent_thought_chunk"), "Planning the fix.");
        assert.equal(text(updates, "agent_message_chunk"), "Fixing it.Fixed.");
        const [plan] = ofKind(updates, "plan");
        assert.deepEqual(plan.entries, [{ content: "Fix a.txt", priority: "medium", status: "in_progress" }]);
        const editCall = ofKind(updates, "tool_call").find((c) => c.kind === "edit");
        assert.ok(editCall, "no edit tool call");
        const editUpdates = ofKind(updates, "tool_call_update").filter((u) => u.toolCallId === editCall.toolCallId);
        const diff = editUpdates.flatMap((u) => u.content ?? []).find((c) => c.type === "diff");
        assert.deepEqual(
          { path: diff.path, oldText: diff.oldText, newText: diff.newText },
          { path: join(ws.cwd, "a.txt"), oldText: "bug", newText: "fix" },
        );
        assert.equal(editUpdates.at(-1).status, "completed");
        assert.equal(editUpdates.at(-1).locations[0].line, 1);
        // Without the client's fs capabilities the edit goes to the file on disk.
        assert.equal(readFileSync(join(ws.cwd, "a.txt"), "utf8"), "one fix here\n");
        assert.deepEqual(fsCalls, []);
      },
    );
  } finally {
    ws.cleanup();
  }
});

test("the permission gate asks the client; a rejection blocks the command, an approval runs it", async () => {
  const rm = { name: "bash", arguments: { command: "rm -r build" } };
  const ws = workspace({
    scenario: { turns: [on("first", { toolCalls: [rm] }), on("second", { toolCalls: [rm] }), afterTool("ok")] },
    settings: { permissionGate: { enabled: true, timeoutMs: 0 } },
  });
  const build = join(ws.cwd, "build");
  mkdirSync(build);
  const answers = ["reject", "allow-once"];
  try {
    await withClient(
      ws,
      {
        onPermission: (params, n) => {
          assert.ok(params.options.some((o) => o.kind === "allow_always"));
          return { outcome: { outcome: "selected", optionId: answers[n - 1] } };
        },
      },
      async ({ ctx, updates, permissions }) => {
        const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws.cwd, mcpServers: [] });
        assert.equal((await prompt(ctx, updates, sessionId, "first")).stopReason, "end_turn");
        assert.equal(permissions.length, 1);
        assert.equal(permissions[0].toolCall.kind, "execute");
        assert.ok(existsSync(build), "the rejected command ran");
        assert.equal(ofKind(updates, "tool_call_update").at(-1).status, "failed");
        assert.equal((await prompt(ctx, updates, sessionId, "second")).stopReason, "end_turn");
        assert.equal(permissions.length, 2);
        assert.ok(!existsSync(build), "the approved command did not run");
      },
    );
  } finally {
    ws.cleanup();
  }
});

test("session/cancel mid-stream resolves the prompt as cancelled", async () => {
  const ws = workspace({
    scenario: {
      turns: [
        on("long", { text: Array.from({ length: 200 }, (_, i) => `w${i} `), deltaDelayMs: 50 }),
        on("again", { text: ["back"] }),
      ],
    },
  });
  try {
    await withClient(ws, {}, async ({ ctx, updates }) => {
      const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws.cwd, mcpServers: [] });
      const pending = ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: "a long answer" }],
      });
      while (ofKind(updates, "agent_message_chunk").length === 0) await new Promise((r) => setImmediate(r));
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
      const response = await pending;
      assert.equal(response.stopReason, "cancelled");
      const streamed = text(updates, "agent_message_chunk");
      assert.ok(!streamed.includes("w199"), "the whole reply streamed despite the cancel");
      assert.equal((await prompt(ctx, updates, sessionId, "again")).stopReason, "end_turn");
    });
  } finally {
    ws.cleanup();
  }
});

test("a stored session is listed and loaded with its history replayed", async () => {
  const ws = workspace({ scenario: { turns: [on("kiwi", { text: ["Noted: kiwi."] }), on("next", { text: ["Still here."] })] } });
  try {
    const sessionId = await withClient(ws, {}, async ({ ctx, updates }) => {
      const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws.cwd, mcpServers: [] });
      await prompt(ctx, updates, sessionId, "remember kiwi");
      return sessionId;
    });
    await withClient(ws, {}, async ({ ctx, updates }) => {
      const list = await ctx.request(acp.methods.agent.session.list, { cwd: ws.cwd });
      const listed = list.sessions.find((s) => s.sessionId === sessionId);
      assert.ok(listed, "the stored session is not listed");
      assert.equal(listed.title, "remember kiwi");
      await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: ws.cwd, mcpServers: [] });
      assert.equal(text(updates, "user_message_chunk"), "remember kiwi");
      assert.equal(text(updates, "agent_message_chunk"), "Noted: kiwi.");
      assert.equal((await prompt(ctx, updates, sessionId, "next")).stopReason, "end_turn");
    });
  } finally {
    ws.cleanup();
  }
});

test("with the client's fs capabilities, reads and edits go through the editor's buffers", async () => {
  const ws = workspace({
    scenario: {
      turns: [
        on("show", { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] }),
        on("change", { toolCalls: [{ name: "edit", arguments: { path: "a.txt", oldText: "unsaved", newText: "edited" } }] }),
        afterTool("ok"),
      ],
    },
  });
  const file = join(ws.cwd, "a.txt");
  writeFileSync(file, "saved on disk\n");
  const buffers = new Map([[file, "unsaved buffer\n"]]);
  const fsCalls = [];
  try {
    await withClient(
      ws,
      { clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } }, fsCalls, buffers },
      async ({ ctx, updates }) => {
        const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws.cwd, mcpServers: [] });
        await prompt(ctx, updates, sessionId, "show it");
        const read = ofKind(updates, "tool_call_update").at(-1);
        assert.match(JSON.stringify(read.content), /unsaved buffer/);
        await prompt(ctx, updates, sessionId, "change it");
        assert.equal(buffers.get(file), "edited buffer\n");
        assert.equal(readFileSync(file, "utf8"), "saved on disk\n");
        assert.deepEqual(
          fsCalls.map(([kind, p]) => [kind, p.sessionId === sessionId, p.path]),
          [["read", true, file], ["read", true, file], ["write", true, file]],
        );
      },
    );
  } finally {
    ws.cleanup();
  }
});

test("malformed JSON-RPC gets the spec's errors and the agent keeps serving", async () => {
  const ws = workspace();
  const child = spawn(DREB, ["--mode", "acp", "--provider", "faux"], {
    cwd: ws.cwd,
    env: { PATH: process.env.PATH, HOME: ws.home, DREB_CODING_AGENT_DIR: ws.agentDir },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout });
  const received = [];
  const waiters = [];
  lines.on("line", (line) => {
    received.push(JSON.parse(line)); // every stdout line is JSON
    waiters.splice(0).forEach((w) => w());
  });
  const until = async (pred) => {
    while (!received.some(pred)) await new Promise((r) => waiters.push(r));
    return received.find(pred);
  };
  try {
    child.stdin.write("{nope\n");
    child.stdin.write('{"jsonrpc":"2.0","id":1,"method":"does/not/exist"}\n');
    child.stdin.write('{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"relative"}}\n');
    child.stdin.write('{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}\n');
    assert.equal((await until((m) => m.id === null)).error.code, -32700);
    assert.equal((await until((m) => m.id === 1)).error.code, -32601);
    assert.equal((await until((m) => m.id === 2)).error.code, -32602);
    assert.equal((await until((m) => m.id === 3)).result.protocolVersion, 1);
    assert.ok(received.every((m) => m.jsonrpc === "2.0"));
  } finally {
    child.stdin.end();
    await new Promise((r) => child.on("exit", r));
    ws.cleanup();
  }
});

const terminalOf = (u) => (u.content?.[0]?.type === "terminal" ? u.content[0].terminalId : undefined);

test("bash runs in the client's terminal when it offers one, and locally when it does not", async () => {
  const command = 'echo "client=$ACP_TEST_CLIENT"; echo from-terminal; exit 3';
  const ws = workspace({
    scenario: { turns: [on("run", { toolCalls: [{ name: "bash", arguments: { command } }] }), afterTool("ran")] },
  });
  const terminals = new Terminals();
  try {
    await withClient(ws, { clientCapabilities: { terminal: true }, terminals }, async ({ ctx, updates }) => {
      const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws.cwd, mcpServers: [] });
      assert.equal((await prompt(ctx, updates, sessionId, "run it")).stopReason, "end_turn");
      const [[, create]] = terminals.calls;
      assert.equal(create.sessionId, sessionId);
      assert.equal(create.cwd, ws.cwd);
      assert.deepEqual(create.args.slice(-2), ["-c", command]);
      assert.ok(create.env.some((v) => v.name === "PATH" && v.value.startsWith(join(ws.agentDir, "bin"))));
      const methods = terminals.methods();
      assert.equal(methods.at(-1), "release");
      assert.ok(methods.includes("wait_for_exit"));
      assert.ok(!methods.includes("kill"));
      const calls = ofKind(updates, "tool_call_update");
      assert.ok(calls.some((u) => terminalOf(u) === "term-1"), "the terminal is not embedded in the tool call");
      const last = calls.at(-1);
      assert.equal(last.status, "failed");
      assert.equal(terminalOf(last), "term-1");
      assert.equal(last.content[1].content.text, "client=1\nfrom-terminal\n\nCommand exited with code 3");
    });
    // No terminal capability: the same command runs on the agent's machine (no client variable there).
    await withClient(ws, {}, async ({ ctx, updates }) => {
      const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws.cwd, mcpServers: [] });
      await prompt(ctx, updates, sessionId, "run it");
      const last = ofKind(updates, "tool_call_update").at(-1);
      assert.equal(last.status, "failed");
      assert.equal(terminalOf(last), undefined);
      assert.equal(last.content[0].content.text, "client=\nfrom-terminal\n\nCommand exited with code 3");
    });
  } finally {
    ws.cleanup();
  }
});

test("cancel kills and releases the client's terminal", async () => {
  const ws = workspace({
    scenario: {
      turns: [on("wait", { toolCalls: [{ name: "bash", arguments: { command: "echo started; sleep 30" } }] }), afterTool("never")],
    },
  });
  const terminals = new Terminals();
  try {
    await withClient(ws, { clientCapabilities: { terminal: true }, terminals }, async ({ ctx, updates }) => {
      const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws.cwd, mcpServers: [] });
      const pending = ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "wait" }] });
      while (!terminals.live.get("term-1")?.output.includes("started")) await new Promise((r) => setTimeout(r, 10));
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
      assert.equal((await pending).stopReason, "cancelled");
      const exit = await terminals.live.get("term-1").exited;
      assert.equal(exit.signal, "SIGKILL");
      const methods = terminals.methods();
      assert.ok(methods.includes("kill"));
      assert.equal(methods.at(-1), "release");
      const count = updates.length;
      await ctx.request(acp.methods.agent.session.list, {});
      assert.equal(updates.length, count, "an update arrived after the prompt's response");
    });
  } finally {
    ws.cleanup();
  }
});

test("a write shows the whole file as its diff; a new file has no old text", async () => {
  const ws = workspace({
    scenario: {
      turns: [
        on("write", {
          toolCalls: [
            { name: "write", arguments: { path: "a.txt", content: "new\n" } },
            { name: "write", arguments: { path: "b.txt", content: "fresh\n" } },
          ],
        }),
        afterTool("written"),
      ],
    },
  });
  writeFileSync(join(ws.cwd, "a.txt"), "old\ntext\n");
  try {
    await withClient(ws, {}, async ({ ctx, updates }) => {
      const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws.cwd, mcpServers: [] });
      await prompt(ctx, updates, sessionId, "write them");
      const [a, b] = ofKind(updates, "tool_call");
      const lastOf = (id) => ofKind(updates, "tool_call_update").filter((u) => u.toolCallId === id).at(-1);
      const diffA = lastOf(a.toolCallId).content[0];
      assert.deepEqual(
        { type: diffA.type, path: diffA.path, oldText: diffA.oldText, newText: diffA.newText },
        { type: "diff", path: join(ws.cwd, "a.txt"), oldText: "old\ntext\n", newText: "new\n" },
      );
      const diffB = lastOf(b.toolCallId).content[0];
      assert.equal(diffB.type, "diff");
      assert.equal(diffB.oldText ?? null, null);
      assert.equal(diffB.newText, "fresh\n");
    });
  } finally {
    ws.cleanup();
  }
});

test("ask_user is one elicitation form when the client offers forms; without, free text is skipped", async () => {
  const questions = [{ question: "Release name?" }, { question: "Which database?", options: ["SQLite", "Postgres"] }];
  const ws = workspace({
    scenario: { turns: [on("ask", { toolCalls: [{ name: "ask_user", arguments: { questions } }] }), afterTool("Thanks.")] },
  });
  const forms = [];
  try {
    await withClient(
      ws,
      {
        clientCapabilities: { elicitation: { form: {} } },
        onElicitation: (params) => {
          forms.push(params);
          return { action: "accept", content: { q01: "Kiwi", q02: "Postgres" } };
        },
      },
      async ({ ctx, updates }) => {
        const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws.cwd, mcpServers: [] });
        assert.equal((await prompt(ctx, updates, sessionId, "ask me")).stopReason, "end_turn");
        assert.equal(forms.length, 1);
        assert.equal(forms[0].mode, "form");
        assert.equal(forms[0].toolCallId, ofKind(updates, "tool_call")[0].toolCallId);
        assert.deepEqual(Object.keys(forms[0].requestedSchema.properties), ["q01", "q02", "q02_other"]);
        const result = JSON.stringify(ofKind(updates, "tool_call_update").at(-1).content);
        assert.match(result, /Kiwi/);
        assert.match(result, /Selected: Postgres/);
      },
    );
    await withClient(
      ws,
      { onPermission: () => ({ outcome: { outcome: "selected", optionId: "option-1" } }) },
      async ({ ctx, updates, permissions }) => {
        const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws.cwd, mcpServers: [] });
        assert.equal((await prompt(ctx, updates, sessionId, "ask me")).stopReason, "end_turn");
        assert.equal(permissions.length, 1);
        const result = JSON.stringify(ofKind(updates, "tool_call_update").at(-1).content);
        assert.match(result, /no answer/);
        assert.match(result, /Selected: Postgres/);
        assert.equal(text(updates, "agent_message_chunk"), "Thanks.");
      },
    );
  } finally {
    ws.cleanup();
  }
});
