// A host written the way the reference's own RpcClient tests use the reference client (a fresh client per test,
// start / commands / promptAndWait / stop, the session file checked on disk), against the real dreb binary with the
// offline `faux` provider. Only the import and the constructor options differ from such a host: no cliPath (the
// binary comes from DREB_BIN), provider "faux" instead of a real model.
import { afterEach, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import { RpcClient, type RpcEvent, type RpcExitInfo, type RpcExtensionUIRequest } from "../src/index.js";
import { realDrebBin } from "./real-bin.js";

const bin = realDrebBin();
const skip = bin ? false : "no dreb binary: set DREB_BIN or build target/debug/dreb";

/** Two models of a provider that is never called (for the model commands; prompting them would fail). */
const MODELS = {
  providers: {
    local: {
      baseUrl: "http://127.0.0.1:9/v1",
      api: "openai-completions",
      apiKey: "test-key",
      models: [
        { id: "alpha", name: "Alpha", reasoning: true, input: ["text"], contextWindow: 100000, maxTokens: 1000, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } },
        { id: "beta", name: "Beta", reasoning: false, input: ["text"], contextWindow: 50000, maxTokens: 1000, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } },
      ],
    },
  },
};

/** A faux scenario whose prompts containing ASK call the ask_user tool (an extension UI dialog). */
const ASK_SCENARIO = {
  turns: [
    { when: { afterToolResult: true }, repeat: true, text: ["Noted your answer."] },
    {
      when: { lastUserContains: "ASK" },
      repeat: true,
      toolCalls: [{ name: "ask_user", arguments: { questions: [{ question: "Which database?", options: ["SQLite", "Postgres"] }] } }],
    },
    { repeat: true, text: ["hello ", "from faux"] },
  ],
  fallback: "error",
};

type Entry = { type: string; message?: { role: string; output?: string }; [key: string]: unknown };

describe("RpcClient driven like the reference's tests, real agent", { skip }, () => {
  let client: RpcClient;
  let root: string;
  let agentDir: string;
  let cwd: string;

  function newClient(env: Record<string, string> = {}): RpcClient {
    return new RpcClient({
      cwd,
      env: { DREB_BIN: bin, DREB_CODING_AGENT_DIR: agentDir, HOME: root, ...env },
      provider: "faux",
    });
  }

  function sessionEntries(): Entry[] {
    const sessionsPath = join(agentDir, "sessions");
    const dirs = readdirSync(sessionsPath);
    assert.equal(dirs.length, 1);
    const dir = join(sessionsPath, dirs[0]!);
    const files = readdirSync(dir).filter((f) => f.endsWith(".jsonl"));
    assert.equal(files.length, 1);
    return readFileSync(join(dir, files[0]!), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Entry);
  }

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "dreb-rpc-client-"));
    agentDir = join(root, "agent");
    cwd = join(root, "project");
    mkdirSync(cwd);
    writeFileSync(join(cwd, "README.txt"), "a file for the faux provider's ls\n");
    client = newClient();
  });

  afterEach(async () => {
    await client.stop();
    rmSync(root, { recursive: true, force: true });
  });

  test("get state", async () => {
    await client.start();
    const state = await client.getState();
    assert.equal(state.model?.provider, "faux");
    assert.equal(state.model?.id, "faux");
    assert.equal(state.isStreaming, false);
    assert.equal(state.messageCount, 0);
    assert.equal(state.modelFallbackMessage, undefined);
  });

  test("promptAndWait: the run's events, and the session file written", async () => {
    await client.start();
    const events = await client.promptAndWait("Reply with just the word 'hello'");
    assert.equal(events[0]?.type, "agent_start");
    assert.equal(events.at(-1)?.type, "agent_end");
    assert.ok(events.filter((e) => e.type === "message_end").length >= 2);
    assert.ok(events.some((e) => e.type === "tool_execution_end"), "the faux provider's ls ran");

    const entries = sessionEntries();
    assert.equal(entries[0]?.type, "session");
    const roles = entries.filter((e) => e.type === "message").map((e) => e.message?.role);
    assert.ok(roles.includes("user") && roles.includes("assistant"));
  });

  test("prompt + waitForIdle with events through onEvent; waitForIdle when already idle resolves", async () => {
    await client.start();
    const events: RpcEvent[] = [];
    const unsubscribe = client.onEvent((event) => events.push(event));
    await client.prompt("hello");
    await client.waitForIdle();
    assert.equal(events[0]?.type, "agent_start");
    assert.equal(events.at(-1)?.type, "agent_end");
    const deltas = events.flatMap((e) =>
      e.type === "message_update" && e.assistantMessageEvent.type === "text_delta" ? [e.assistantMessageEvent.delta] : [],
    );
    assert.ok(deltas.join("").includes("faux provider"));
    unsubscribe();
    const seen = events.length;

    const t0 = Date.now();
    await client.waitForIdle(); // the reference would wait 60 s and reject
    assert.ok(Date.now() - t0 < 1_000);

    // Waiting first, then prompting, as the reference's promptAndWait does with collectEvents.
    const idle = client.waitForIdle();
    await client.prompt("again");
    await idle;
    const state = await client.getState();
    assert.equal(state.isStreaming, false);
    assert.equal(state.messageCount, 8);
    assert.equal(events.length, seen, "unsubscribed: nothing more");
  });

  test("manual compaction", async () => {
    await client.start();
    await client.promptAndWait("Say hello");
    const result = await client.compact();
    assert.equal(typeof result.summary, "string");
    assert.ok(result.tokensBefore > 0);
    const compactions = sessionEntries().filter((e) => e.type === "compaction");
    assert.equal(compactions.length, 1);
    assert.equal(typeof compactions[0]?.summary, "string");
  });

  test("bash: its result, and its output persisted as a bashExecution message", async () => {
    await client.start();
    const result = await client.bash("echo hello");
    assert.equal(result.output.trim(), "hello");
    assert.equal(result.exitCode, 0);
    assert.equal(result.cancelled, false);

    await client.promptAndWait("Say hi");
    const unique = `test-${Date.now()}`;
    await client.bash(`echo ${unique}`);
    const bashEntries = sessionEntries().filter((e) => e.type === "message" && e.message?.role === "bashExecution");
    assert.equal(bashEntries.length, 2);
    assert.ok(bashEntries[1]?.message?.output?.includes(unique));
    const messages = await client.getMessages();
    assert.ok(messages.some((m) => m.role === "bashExecution" && m.output.includes(unique)));
  });

  test("models and thinking: available models, resolve, set, cycle, thinking level", async () => {
    mkdirSync(agentDir, { recursive: true });
    writeFileSync(join(agentDir, "models.json"), JSON.stringify(MODELS));
    await client.start();
    const models = await client.getAvailableModels();
    assert.deepEqual(models.map((m) => `${m.provider}/${m.id}`), ["local/alpha", "local/beta"]);
    for (const model of models) {
      assert.ok(model.contextWindow > 0);
      assert.equal(typeof model.reasoning, "boolean");
    }
    assert.equal((await client.resolveModel("local/alpha"))?.model.id, "alpha");
    assert.equal(await client.resolveModel("no-such-model-anywhere-xyz"), null);

    const selected = await client.setModel("local", "alpha");
    assert.equal(selected.id, "alpha");
    assert.equal((await client.getState()).model?.id, "alpha");
    await assert.rejects(client.setModel("nope", "x"), { message: "Model not found: nope/x" });

    await client.setThinkingLevel("high");
    assert.equal((await client.getState()).thinkingLevel, "high");
    const cycled = await client.cycleThinkingLevel();
    assert.ok(cycled && cycled.level !== "high");
    assert.equal((await client.getState()).thinkingLevel, cycled.level);

    const next = await client.cycleModel();
    assert.equal(next?.model.id, "beta");
    assert.equal(next?.isScoped, false);
    assert.equal((await client.getState()).model?.id, "beta");
  });

  test("session stats, new session, last assistant text, session name", async () => {
    await client.start();
    assert.equal(await client.getLastAssistantText(), null);
    await client.promptAndWait("Hello");
    const stats = await client.getSessionStats();
    assert.ok(stats.sessionFile && stats.sessionId);
    assert.ok(stats.userMessages >= 1 && stats.assistantMessages >= 1);
    assert.match((await client.getLastAssistantText()) ?? "", /faux provider/);

    await client.setSessionName("My session");
    assert.equal((await client.getState()).sessionName, "My session");
    assert.equal(sessionEntries().filter((e) => e.type === "session_info").length, 1);
    await assert.rejects(client.setSessionName(""), { message: "Session name cannot be empty" }); // the reference resolves

    const exported = await client.exportHtml();
    assert.match(exported.path, /\.html$/);
    assert.ok(existsSync(isAbsolute(exported.path) ? exported.path : join(cwd, exported.path)));

    assert.equal((await client.newSession()).cancelled, false);
    assert.equal((await client.getState()).messageCount, 0);
  });

  test("session commands: list, switch, fork, delete", async () => {
    await client.start();
    await client.promptAndWait("first session");
    const first = (await client.getState()).sessionFile!;
    await client.newSession(first);
    await client.promptAndWait("second session");
    const second = (await client.getState()).sessionFile!;
    const sessions = await client.listSessions();
    assert.deepEqual(new Set(sessions.map((s) => s.path)), new Set([first, second]));
    assert.ok((await client.listAllSessions()).length >= 2);

    assert.equal((await client.switchSession(first)).cancelled, false);
    assert.equal((await client.getState()).sessionFile, first);
    const forkable = await client.getForkMessages();
    const user = forkable.find((m) => m.role === "user");
    assert.equal(user?.text, "first session");
    const forked = await client.fork(user!.entryId);
    assert.equal(forked.text, "first session");
    assert.equal(forked.cancelled, false);

    await assert.rejects(client.deleteSession((await client.getState()).sessionFile!), Error); // the active one
    const deleted = await client.deleteSession(second);
    assert.ok(deleted.method === "trash" || deleted.method === "unlink");
    assert.ok(!existsSync(second));
  });

  test("tree: get_tree and navigate_tree with a label; an unknown id has the clean error", async () => {
    await client.start();
    await client.promptAndWait("hello tree");
    const before = await client.getTree();
    const nodes = [...before.roots];
    const all: typeof nodes = [];
    while (nodes.length) {
      const node = nodes.shift()!;
      all.push(node);
      nodes.push(...node.children);
    }
    const userNode = all.find((n) => n.type === "message" && n.role === "user");
    assert.ok(userNode && userNode.preview.includes("hello"));
    const result = await client.navigateTree(userNode.id, { label: "start over" });
    assert.equal(result.cancelled, false);
    assert.equal(result.editorText, "hello tree");
    assert.equal((await client.getState()).messageCount, 0);
    const after = await client.getTree();
    assert.notEqual(after.leafId, before.leafId);
    const labelled = JSON.stringify(after).includes('"label":"start over"');
    assert.ok(labelled, "the label is applied");
    await assert.rejects(client.navigateTree("missing-entry"), { message: "Entry missing-entry not found" });
  });

  test("settings: defaults, a write reflected later, an invalid value rejected", async () => {
    await client.start();
    const defaults = await client.getSettings();
    assert.equal(defaults.steeringMode, "one-at-a-time");
    assert.equal(defaults.maxConcurrentSubagents, 4);
    const written = await client.setSettings({ defaultThinkingLevel: "low", retryEnabled: false, maxConcurrentSubagents: 1 });
    assert.equal(written.retryEnabled, false);
    const later = await client.getSettings();
    assert.equal(later.defaultThinkingLevel, "low");
    assert.equal(later.maxConcurrentSubagents, 1);
    assert.equal((await client.getState()).thinkingLevel, "off", "the live level is not touched");
    await assert.rejects(client.setSettings({ steeringMode: "bogus" as "all" }), { message: /^Invalid steeringMode/ });
  });

  test("extension UI: an ask dialog answered through sendExtensionUIResponse", async () => {
    const scenario = join(root, "scenario.json");
    writeFileSync(scenario, JSON.stringify(ASK_SCENARIO));
    client = newClient({ DREB_FAUX_SCENARIO: scenario });
    await client.start();
    const handled: string[] = [];
    client.onEvent((event) => {
      if (event.type === "extension_ui_request" && event.method === "ask") {
        const request: RpcExtensionUIRequest = event;
        assert.equal(request.method === "ask" && request.questions[0]?.question, "Which database?");
        client.sendExtensionUIResponse({ type: "extension_ui_response", id: event.id, answers: [{ selected: ["SQLite"] }] });
      }
      if (event.type === "extension_ui_response_handled") handled.push(event.id);
    });
    const events = await client.promptAndWait("ASK me which database");
    const request = events.find((e) => e.type === "extension_ui_request");
    assert.ok(request && request.type === "extension_ui_request");
    assert.deepEqual(handled, [request.id]);
    const toolEnd = events.find((e) => e.type === "tool_execution_end");
    assert.ok(toolEnd && toolEnd.type === "tool_execution_end" && JSON.stringify(toolEnd.result).includes("SQLite"));
    assert.equal(await client.getLastAssistantText(), "Noted your answer.");
  });

  test("dashboard snapshot: the barrier event comes before the response", async () => {
    await client.start();
    let barrier: string | undefined;
    client.onEvent((event) => {
      if (event.type === "dashboard_snapshot_barrier") barrier = event.snapshotId;
    });
    const snapshot = await client.getDashboardSnapshot();
    assert.equal(barrier, snapshot.snapshotId);
    assert.deepEqual(snapshot.pendingExtensionUiRequests, []);
  });

  test("the other commands answer", async () => {
    await client.start();
    assert.equal(typeof (await client.getVersion()), "string");
    assert.equal(await client.getGitBranch(), null);
    assert.equal(typeof (await client.getDailyCost()), "number");
    assert.ok((await client.getCommands()).some((c) => c.name === "fork" && c.source === "builtin"));
    assert.equal(typeof (await client.getResources()).systemPromptPresent, "boolean");
    assert.deepEqual(await client.listBackgroundAgents(), []);
    assert.ok(Array.isArray(await client.listAgentTypes()));
    assert.ok(Array.isArray((await client.getPerformanceStats()).models));
    await client.steer("queued while idle");
    assert.deepEqual((await client.getPendingMessages()).steering, ["queued while idle"]);
    assert.deepEqual((await client.clearPendingMessages()).steering, ["queued while idle"]);
    await client.followUp("later");
    await client.clearPendingMessages();
    await client.setSteeringMode("all");
    await client.setFollowUpMode("all");
    assert.equal((await client.getState()).steeringMode, "all");
    await client.setAutoCompaction(false);
    assert.equal((await client.getState()).autoCompactionEnabled, false);
    await client.setAutoRetry(false);
    await client.abortRetry();
    await client.abortBash();
    await client.abortCompaction();
    await client.abort();
    await client.reload();
    const trust = await client.evaluateContextTrust(cwd);
    assert.equal(trust.state, "untrusted");
    await assert.rejects(client.dream(), { message: "Unknown command: dream" }); // not served by dreb-rs
    await assert.rejects(client.prompt("/fork"), {
      message: "Built-in slash command /fork must be handled by the RPC client; it was not sent to the model.",
    }); // the reference resolves
  });

  test("stop: onExit, then calls fail; the client can be started again", async () => {
    await client.start();
    const exits: RpcExitInfo[] = [];
    client.onExit((info) => exits.push(info));
    await client.stop();
    assert.deepEqual(exits, [{ code: 0, signal: null }]);
    await assert.rejects(client.getState(), { message: /^RPC process not running/ });
    assert.throws(
      () => client.sendExtensionUIResponse({ type: "extension_ui_response", id: "x", cancelled: true }),
      { message: /^RPC process is not running\./ },
    );
    await client.start();
    assert.equal((await client.getState()).isStreaming, false);
  });
});
