// Type-level checks: code written against the reference client's signatures (`aebrer/dreb`,
// packages/coding-agent/src/modes/rpc, exported as `@dreb/coding-agent/rpc`) compiles against this package's RpcClient
// with only the import changed. Compiled by `npm test` twice: with the package's tsconfig (strict plus
// exactOptionalPropertyTypes) and with tsconfig.types.json (plain `strict`, as a typical host compiles). Nothing here
// runs: the functions are never called.
import {
  RpcClient,
  type ModelInfo,
  type RpcAgentTypeInfo,
  type RpcBackgroundAgentInfo,
  type RpcClientOptions,
  type RpcCommand,
  type RpcCommandType,
  type RpcContextTrustEvaluation,
  type RpcContextTrustMutationResult,
  type RpcDashboardSnapshot,
  type RpcDashboardSnapshotBarrierEvent,
  type RpcEvent,
  type RpcEventListener,
  type RpcExitInfo,
  type RpcExitListener,
  type RpcExtensionUIRequest,
  type RpcExtensionUIResponse,
  type RpcPendingMessages,
  type RpcPerformanceStats,
  type RpcQueuedMessage,
  type RpcResources,
  type RpcResponse,
  type RpcScopedModel,
  type RpcSessionInfo,
  type RpcSessionState,
  type RpcSessionTask,
  type RpcSettingsSetResult,
  type RpcSettingsSnapshot,
  type RpcSettingsUpdate,
  type RpcSlashCommand,
  type RpcTreeNode,
  type RpcTrustedFolderRemovalResult,
} from "../../src/index.js";
// Types the reference client's signatures take from its other packages (@dreb/ai, @dreb/agent-core, core/).
import type { AgentMessage, BuddyState, CompactionResult, ImageContent, ThinkingLevel } from "../../src/index.js";

type QueueMode = "all" | "one-at-a-time";

/**
 * The reference client's public surface, restated from its declared signatures: every method, its positional
 * parameters and its declared result. `RpcClient` must be assignable to it.
 */
interface ReferenceRpcClient {
  start(): Promise<void>;
  stop(): Promise<void>;
  onEvent(listener: RpcEventListener): () => void;
  onExit(listener: RpcExitListener): () => void;
  getStderr(): string;
  prompt(message: string, images?: ImageContent[]): Promise<void>;
  steer(message: string, images?: ImageContent[]): Promise<void>;
  followUp(message: string, images?: ImageContent[]): Promise<void>;
  steerBackgroundAgent(agentId: string, message: string): Promise<void>;
  getBackgroundAgentPending(agentId: string): Promise<{ steeringMode: QueueMode; pending: RpcPendingMessages }>;
  abort(): Promise<void>;
  newSession(parentSession?: string): Promise<{ cancelled: boolean }>;
  reload(): Promise<void>;
  dream(args?: string): Promise<{ message: string }>;
  getState(): Promise<RpcSessionState>;
  getDashboardSnapshot(): Promise<RpcDashboardSnapshot>;
  getResources(): Promise<RpcResources>;
  getGitBranch(): Promise<string | null>;
  getDailyCost(): Promise<number>;
  setModel(provider: string, modelId: string): Promise<{ provider: string; id: string }>;
  cycleModel(): Promise<{ model: { provider: string; id: string }; thinkingLevel: ThinkingLevel; isScoped: boolean } | null>;
  getAvailableModels(): Promise<ModelInfo[]>;
  resolveModel(pattern: string): Promise<{ model: ModelInfo; warning?: string } | null>;
  buddyHatch(): Promise<BuddyState>;
  buddyReroll(): Promise<BuddyState>;
  setThinkingLevel(level: ThinkingLevel): Promise<void>;
  cycleThinkingLevel(): Promise<{ level: ThinkingLevel } | null>;
  setSteeringMode(mode: QueueMode): Promise<void>;
  setFollowUpMode(mode: QueueMode): Promise<void>;
  getPendingMessages(): Promise<RpcPendingMessages>;
  clearPendingMessages(): Promise<RpcPendingMessages>;
  compact(customInstructions?: string): Promise<CompactionResult>;
  setAutoCompaction(enabled: boolean): Promise<void>;
  abortCompaction(): Promise<void>;
  setAutoRetry(enabled: boolean): Promise<void>;
  abortRetry(): Promise<void>;
  bash(command: string): Promise<{ output: string; exitCode: number | undefined; cancelled: boolean; truncated: boolean; fullOutputPath?: string }>;
  abortBash(): Promise<void>;
  getSessionStats(): Promise<{
    sessionFile: string | undefined;
    sessionId: string;
    userMessages: number;
    assistantMessages: number;
    toolCalls: number;
    toolResults: number;
    totalMessages: number;
    tokens: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
    cost: number;
    contextUsage?: { tokens: number | null; contextWindow: number; percent: number | null };
  }>;
  getPerformanceStats(): Promise<RpcPerformanceStats>;
  exportHtml(outputPath?: string): Promise<{ path: string }>;
  importJsonl(inputPath: string): Promise<{ cancelled: boolean }>;
  switchSession(sessionPath: string): Promise<{ cancelled: boolean }>;
  deleteSession(sessionPath: string): Promise<{ method: "trash" | "unlink" }>;
  fork(entryId: string): Promise<{ text: string; cancelled: boolean }>;
  getForkMessages(): Promise<Array<{ entryId: string; text: string; role: "user" | "assistant" }>>;
  getTree(): Promise<{ roots: RpcTreeNode[]; leafId: string | null }>;
  navigateTree(
    targetId: string,
    options?: { summarize?: boolean; customInstructions?: string; replaceInstructions?: boolean; label?: string; timeoutMs?: number },
  ): Promise<{ cancelled: boolean; editorText?: string }>;
  getLastAssistantText(): Promise<string | null>;
  setSessionName(name: string): Promise<void>;
  getMessages(): Promise<AgentMessage[]>;
  getCommands(): Promise<RpcSlashCommand[]>;
  listSessions(): Promise<RpcSessionInfo[]>;
  listAllSessions(): Promise<RpcSessionInfo[]>;
  listBackgroundAgents(): Promise<RpcBackgroundAgentInfo[]>;
  listAgentTypes(): Promise<RpcAgentTypeInfo[]>;
  sendExtensionUIResponse(response: RpcExtensionUIResponse): void;
  getVersion(): Promise<string>;
  getSettings(): Promise<RpcSettingsSnapshot>;
  setSettings(settings: RpcSettingsUpdate): Promise<RpcSettingsSetResult>;
  evaluateContextTrust(path: string): Promise<RpcContextTrustEvaluation>;
  trustContextFolder(path: string): Promise<RpcContextTrustMutationResult>;
  untrustContextFolder(path: string): Promise<RpcContextTrustMutationResult>;
  removeTrustedContextFolder(path: string): Promise<RpcTrustedFolderRemovalResult>;
  waitForIdle(timeout?: number): Promise<void>;
  collectEvents(timeout?: number): Promise<RpcEvent[]>;
  promptAndWait(message: string, images?: ImageContent[], timeout?: number): Promise<RpcEvent[]>;
}

/** The whole surface, and nothing the reference has is missing. */
export const surface: (client: RpcClient) => ReferenceRpcClient = (client) => client;

/** Constructor options as a host of the reference writes them (including maybe-undefined values). */
export function construct(env: NodeJS.ProcessEnv, port: number | undefined): RpcClient[] {
  const options: RpcClientOptions = {
    cliPath: env.DREB_CLI,
    cwd: env.PROJECT_DIR,
    env: { DREB_CODING_AGENT_DIR: "/tmp/agent" },
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    args: ["--no-session"],
    uid: port,
    gid: undefined,
  };
  // @ts-expect-error not an option
  const wrong: RpcClientOptions = { cli: "dist/cli.js" };
  void wrong;
  return [new RpcClient(), new RpcClient({}), new RpcClient(options), new RpcClient({ cwd: "/x", args: [] })];
}

/** A host's session loop, in the reference's style. */
export async function host(client: RpcClient): Promise<string> {
  await client.start();
  const log: string[] = [];
  const unsubscribe: () => void = client.onEvent((event) => {
    switch (event.type) {
      case "message_update":
        if (event.assistantMessageEvent.type === "text_delta") log.push(event.assistantMessageEvent.delta);
        break;
      case "tool_execution_start":
        log.push(`${event.toolName}(${JSON.stringify(event.args)})`);
        break;
      case "agent_end":
        log.push(`${event.messages.length} messages`);
        break;
      case "extension_ui_request":
        if (event.method === "confirm") {
          client.sendExtensionUIResponse({ type: "extension_ui_response", id: event.id, confirmed: true });
        } else if (event.method === "select") {
          client.sendExtensionUIResponse({ type: "extension_ui_response", id: event.id, value: event.options[0] ?? "" });
        } else if (event.method === "ask") {
          const answers = event.questions.map((q) => ({ selected: q.options?.slice(0, 1) ?? [], customText: "" }));
          client.sendExtensionUIResponse({ type: "extension_ui_response", id: event.id, answers });
        } else if (event.method === "notify") {
          log.push(event.message);
        } else {
          client.sendExtensionUIResponse({ type: "extension_ui_response", id: event.id, cancelled: true });
        }
        break;
      case "dashboard_snapshot_barrier": {
        const barrier: RpcDashboardSnapshotBarrierEvent = event;
        log.push(barrier.snapshotId);
        break;
      }
      default:
        break;
    }
  });
  const offExit = client.onExit((info: RpcExitInfo) => {
    if (info.error) log.push(info.error.message);
    else log.push(`exit ${info.code ?? info.signal}`);
  });

  const image: ImageContent = { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" };
  await client.prompt("Describe this", [image]);
  await client.waitForIdle();
  await client.waitForIdle(120_000);
  const events: RpcEvent[] = await client.promptAndWait("Hello", undefined, 30_000);
  const more: RpcEvent[] = await client.collectEvents();
  await client.steer("focus");
  await client.followUp("then this", [image]);

  const state: RpcSessionState = await client.getState();
  const level: ThinkingLevel = state.thinkingLevel;
  const scoped: RpcScopedModel[] = state.scopedModels;
  const tasks: RpcSessionTask[] = state.tasks;
  const models: ModelInfo[] = await client.getAvailableModels();
  const firstModel: ModelInfo | undefined = models[0];
  const set: { provider: string; id: string } = await client.setModel("anthropic", "claude-sonnet-4-5");
  const cycled = await client.cycleModel();
  if (cycled) log.push(`${cycled.model.provider}/${cycled.model.id} ${cycled.thinkingLevel} ${cycled.isScoped}`);
  const resolved = await client.resolveModel("sonnet");
  if (resolved) log.push(resolved.model.id, resolved.warning ?? "");
  await client.setThinkingLevel("high");
  const nextLevel = await client.cycleThinkingLevel();
  if (nextLevel) log.push(nextLevel.level);
  await client.setSteeringMode("all");
  await client.setFollowUpMode("one-at-a-time");
  const pending: RpcPendingMessages = await client.getPendingMessages();
  const queued: RpcQueuedMessage[] | undefined = pending.steeringMessages;
  await client.clearPendingMessages();

  const compaction: CompactionResult = await client.compact("Focus on the code");
  log.push(compaction.summary, String(compaction.tokensBefore));
  await client.setAutoCompaction(true);
  await client.abortCompaction();
  await client.setAutoRetry(false);
  await client.abortRetry();
  const bash = await client.bash("ls");
  const exitCode: number | undefined = bash.exitCode;
  log.push(bash.output, String(bash.cancelled), String(bash.truncated));
  await client.abortBash();

  const stats = await client.getSessionStats();
  const sessionFile: string | undefined = stats.sessionFile;
  log.push(stats.sessionId, String(stats.tokens.total), String(stats.cost));
  const perf: RpcPerformanceStats = await client.getPerformanceStats();
  const html: { path: string } = await client.exportHtml("/tmp/out.html");
  await client.exportHtml();
  const imported: { cancelled: boolean } = await client.importJsonl("/tmp/in.jsonl");
  const switched: { cancelled: boolean } = await client.switchSession("/tmp/s.jsonl");
  const removed: { method: "trash" | "unlink" } = await client.deleteSession("/tmp/old.jsonl");
  const fresh: { cancelled: boolean } = await client.newSession();
  await client.newSession("/tmp/parent.jsonl");
  const forkable: Array<{ entryId: string; text: string; role: "user" | "assistant" }> = await client.getForkMessages();
  const forked: { text: string; cancelled: boolean } = await client.fork(forkable[0]?.entryId ?? "");
  const tree: { roots: RpcTreeNode[]; leafId: string | null } = await client.getTree();
  const navigated: { cancelled: boolean; editorText?: string } = await client.navigateTree(tree.leafId ?? "", {
    summarize: true,
    customInstructions: "short",
    replaceInstructions: false,
    label: "checkpoint",
    timeoutMs: 600_000,
  });
  await client.navigateTree("entry");
  const lastText: string | null = await client.getLastAssistantText();
  await client.setSessionName("My session");
  const messages: AgentMessage[] = await client.getMessages();
  const commands: RpcSlashCommand[] = await client.getCommands();
  const sessions: RpcSessionInfo[] = [...(await client.listSessions()), ...(await client.listAllSessions())];
  const agents: RpcBackgroundAgentInfo[] = await client.listBackgroundAgents();
  const agentTypes: RpcAgentTypeInfo[] = await client.listAgentTypes();
  await client.steerBackgroundAgent(agents[0]?.agentId ?? "", "hurry");
  const agentPending = await client.getBackgroundAgentPending("agent-1");
  const mode: "all" | "one-at-a-time" = agentPending.steeringMode;
  const agentQueue: string[] = agentPending.pending.steering;
  const version: string = await client.getVersion();
  const branch: string | null = await client.getGitBranch();
  const cost: number = await client.getDailyCost();
  const resources: RpcResources = await client.getResources();
  const snapshot: RpcDashboardSnapshot = await client.getDashboardSnapshot();
  const dream: { message: string } = await client.dream("backup");
  const buddy: BuddyState = await client.buddyHatch();
  const rerolled: BuddyState = await client.buddyReroll();
  const settings: RpcSettingsSnapshot = await client.getSettings();
  const written: RpcSettingsSetResult = await client.setSettings({ defaultThinkingLevel: "low", retryEnabled: false });
  const evaluation: RpcContextTrustEvaluation = await client.evaluateContextTrust("/repo");
  const trusted: RpcContextTrustMutationResult = await client.trustContextFolder("/repo");
  const untrusted: RpcContextTrustMutationResult = await client.untrustContextFolder("/repo");
  const removal: RpcTrustedFolderRemovalResult = await client.removeTrustedContextFolder("/repo");
  await client.abort();
  await client.reload();
  const stderr: string = client.getStderr();

  // The reference's names for its wire types.
  const command: RpcCommand = { type: "get_state" };
  const commandType: RpcCommandType = "navigate_tree";
  const response = null as unknown as RpcResponse;
  if (response.success) log.push(response.command);
  const uiRequest = null as unknown as RpcExtensionUIRequest;
  log.push(uiRequest.id, uiRequest.method);
  const uiResponse: RpcExtensionUIResponse = { type: "extension_ui_response", id: uiRequest.id, cancelled: true };
  const listener: RpcEventListener = (event: RpcEvent) => log.push(event.type);
  const exitListener: RpcExitListener = (info) => log.push(String(info.code));
  client.onEvent(listener)();
  client.onExit(exitListener)();

  // Wrong argument types do not compile.
  // @ts-expect-error not a thinking level
  await client.setThinkingLevel("extreme");
  // @ts-expect-error the message is a string
  await client.prompt(42);
  // @ts-expect-error not a queue mode
  await client.setSteeringMode("sometimes");
  // @ts-expect-error setModel takes provider and id, not a model object
  await client.setModel({ provider: "anthropic", id: "x" });
  // @ts-expect-error a UI response needs its id
  client.sendExtensionUIResponse({ type: "extension_ui_response", value: "x" });

  unsubscribe();
  offExit();
  await client.stop();
  void [events, more, level, scoped, tasks, firstModel, set, queued, exitCode, sessionFile, perf, html, imported, switched];
  void [removed, fresh, forked, navigated, lastText, messages, commands, sessions, agentTypes, mode, agentQueue, version];
  void [branch, cost, resources, snapshot, dream, buddy, rerolled, settings, written, evaluation, trusted, untrusted];
  void [removal, stderr, command, commandType, uiResponse];
  return log.join("\n");
}
