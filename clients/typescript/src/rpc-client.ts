/**
 * `RpcClient`: a drop-in for the reference agent's own client class (`aebrer/dreb`,
 * `packages/coding-agent/src/modes/rpc/rpc-client.ts`), with the same constructor options, method names,
 * positional parameters and result shapes, built on the typed {@link DrebClient} (its process transport,
 * strict JSONL framing, id correlation, per-command timeouts and `AbortSignal` support).
 *
 * It differs from the reference where the reference is wrong (every `success: false` rejects, late responses
 * are surfaced, `waitForIdle` resolves when the agent is already idle, …); the package README lists each
 * difference under "Differences from the reference client".
 */

import * as path from "node:path";
import { RpcClientError, RpcClosedError, RpcTimeoutError } from "./errors.js";
import type { OutgoingFrame, ResponseFrame, RequestOptions } from "./connection.js";
import { DrebClient } from "./generated/client.js";
import type * as T from "./generated/types.js";
import { ProcessTransport, type ProcessTransportOptions } from "./process-transport.js";
import type { TransportCloseInfo, TransportHandlers } from "./transport.js";

// ============================================================================
// Types (the reference's names)
// ============================================================================

/** How {@link RpcClient} starts the agent. Every field is optional. */
export interface RpcClientOptions {
  /**
   * What to run. Unset: `$DREB_BIN`, else `dreb` on `PATH` (of the agent's environment). A path ending in
   * `.js`, `.mjs` or `.cjs` is a Node entry point (the reference's `dist/cli.js`) and is run with the current
   * Node binary; any other path is the executable itself. A relative path is resolved against `cwd`.
   */
  cliPath?: string | undefined;
  /** Working directory of the agent. */
  cwd?: string | undefined;
  /** Variables merged over `process.env` for the agent (a value of `undefined` removes the variable). */
  env?: Record<string, string | undefined> | undefined;
  /** `--provider <provider>` (left out when empty). */
  provider?: string | undefined;
  /** `--model <model>` (left out when empty). */
  model?: string | undefined;
  /** Arguments after `--mode rpc [--provider p] [--model m]`, for example `["--no-session"]`. */
  args?: string[] | undefined;
  /** Run the agent as this user id (the parent needs CAP_SETUID); left out when unset or null. */
  uid?: number | undefined;
  /** Run the agent as this group id (the parent needs CAP_SETGID); left out when unset or null. */
  gid?: number | undefined;
}

/** The model fields the reference declares for `getAvailableModels` / `resolveModel` (they return full models). */
export interface ModelInfo {
  provider: string;
  id: string;
  contextWindow: number;
  reasoning: boolean;
}

/** Receives every non-response frame (the open {@link T.RpcEvent} union: unknown event types are delivered too). */
export type RpcEventListener = (event: T.RpcEvent) => void;

/** How the agent process ended: its exit code and signal, or the error that made it fail. */
export type RpcExitInfo =
  | { code: number | null; signal: NodeJS.Signals | null; error?: undefined }
  | { code?: undefined; signal?: undefined; error: Error };

/** Receives the {@link RpcExitInfo} of the agent process once it has ended. */
export type RpcExitListener = (info: RpcExitInfo) => void;

/** Receives a response that matches no pending request (for example the answer to a request that timed out). */
export type RpcUnmatchedResponseListener = (response: ResponseFrame) => void;

/** The wire name of a command. */
export type RpcCommandType = T.CommandType;
/** The ordering marker written immediately before a `get_dashboard_snapshot` response. */
export type RpcDashboardSnapshotBarrierEvent = T.DashboardSnapshotBarrierEvent;
/** An `extension_ui_request` frame (dialogs and fire-and-forget UI calls). */
export type RpcExtensionUIRequest = T.ExtensionUiRequest;
/** The host's answer to a dialog (`extension_ui_response`). */
export type RpcExtensionUIResponse = T.ExtensionUiResponse;

/**
 * Optional last argument of every command method (an addition to the reference's signatures): the response
 * timeout in ms (`0` = none; default: the command's, see `COMMAND_TIMEOUTS_MS`) and a signal that stops waiting.
 */
export interface RpcRequestOptions {
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

/** `prompt`'s optional last argument: the request options, and how to queue the message while the agent is streaming. */
export interface RpcPromptOptions extends RpcRequestOptions {
  streamingBehavior?: T.StreamingBehavior | undefined;
}

/** Optional last argument of `waitForIdle`, `collectEvents` and `promptAndWait`: a signal that stops waiting. */
export interface RpcWaitOptions {
  signal?: AbortSignal | undefined;
}

/** `navigateTree`'s options; `timeoutMs` and `signal` stay on the client (they are not sent). */
export interface RpcNavigateTreeOptions {
  summarize?: boolean | undefined;
  customInstructions?: string | undefined;
  replaceInstructions?: boolean | undefined;
  label?: string | undefined;
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

// ============================================================================
// Internals
// ============================================================================

/** How long `start()` watches the new process for an immediate exit (as the reference does). */
const START_GRACE_MS = 100;
/** Grace period of each stop step: stdin closed, then SIGTERM, then SIGKILL. */
const STOP_GRACE_MS = 1000;
/** Default timeout of `waitForIdle`, `collectEvents` and `promptAndWait`, in ms (the reference's). */
const WAIT_TIMEOUT_MS = 60_000;

const NODE_ENTRY = /\.[cm]?js$/i;

/** Drops the keys whose value is `undefined` (the typed params are exact about optional keys). */
function defined<O extends Record<string, unknown>>(object: O): { [K in keyof O]: Exclude<O[K], undefined> } {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) if (value !== undefined) out[key] = value;
  return out as { [K in keyof O]: Exclude<O[K], undefined> };
}

function requestOptions(options: RpcRequestOptions | undefined): RequestOptions {
  return options === undefined ? {} : defined({ timeoutMs: options.timeoutMs, signal: options.signal });
}

/** The reference's shape checks: a barrier needs a string `snapshotId`, a UI request a string `id` and `method`. */
function isWellFormed(event: { type: string; [key: string]: unknown }): boolean {
  if (event.type === "dashboard_snapshot_barrier") return typeof event.snapshotId === "string";
  if (event.type === "extension_ui_request") return typeof event.id === "string" && typeof event.method === "string";
  return true;
}

function withMessage<E extends Error>(error: E, message: string): E {
  error.message = message;
  return error;
}

/** A process transport that, when closed, waits (briefly) for its close report, so the exit code is known. */
class AgentProcess extends ProcessTransport {
  private reported = false;
  private onReported: (() => void) | undefined;

  override start(handlers: TransportHandlers): Promise<void> {
    return super.start({
      onRecord: (record) => handlers.onRecord(record),
      onClose: (info) => {
        this.reported = true;
        handlers.onClose(info);
        this.onReported?.();
      },
    });
  }

  override async close(): Promise<void> {
    await super.close();
    if (this.reported || this.pid === undefined) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, STOP_GRACE_MS);
      this.onReported = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

// ============================================================================
// RpcClient
// ============================================================================

export class RpcClient {
  private agent: DrebClient | null = null;
  private transport: AgentProcess | null = null;
  /** stderr of the processes before the current one (`getStderr()` covers every process of this client). */
  private earlierStderr = "";
  private exitInfo: RpcExitInfo | undefined;
  private readonly eventListeners: RpcEventListener[] = [];
  private readonly exitListeners = new Set<RpcExitListener>();
  private readonly unmatchedListeners = new Set<RpcUnmatchedResponseListener>();

  constructor(private readonly options: RpcClientOptions = {}) {}

  // ==========================================================================
  // Lifecycle
  // ==========================================================================

  /**
   * Starts the agent (`<binary> --mode rpc [--provider p] [--model m] ...args`). Rejects when the process
   * cannot be spawned (`Agent process failed to spawn: …`) or exits within its first 100 ms
   * (`Agent process exited immediately with code …`); a failed start can be retried.
   */
  async start(): Promise<void> {
    if (this.agent) throw new RpcClientError("Client already started");
    const transport = new AgentProcess(this.transportOptions());
    const agent = new DrebClient(transport, { onListenerError: (error) => this.reportListenerError(error) });
    this.agent = agent;
    this.transport = transport;
    this.exitInfo = undefined;
    agent.onEvent((event) => this.dispatch(event));
    agent.onUnmatchedResponse((response) => {
      for (const listener of [...this.unmatchedListeners]) this.safely(() => listener(response));
    });
    agent.onClose((info) => this.handleClose(agent, info));

    try {
      await agent.start();
    } catch (error) {
      this.forget(agent);
      const message = error instanceof Error ? error.message : String(error);
      const detail = message.startsWith("Agent process failed to spawn: ") ? message : `Agent process failed to spawn: ${message}`;
      throw new RpcClientError(`${detail}. Stderr: ${this.getStderr()}`, { cause: error });
    }
    if (!agent.isClosed) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          unsubscribe();
          resolve();
        }, START_GRACE_MS);
        const unsubscribe = agent.onClose(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    if (agent.isClosed) {
      // Set by handleClose (control flow cannot see that, hence the annotation).
      const info: RpcExitInfo | undefined = this.exitInfo as RpcExitInfo | undefined;
      this.forget(agent);
      const how = info?.error
        ? `failed to spawn: ${info.error.message}`
        : `exited immediately with code ${info?.code ?? null}, signal ${info?.signal ?? null}`;
      throw new RpcClientError(`Agent process ${how}. Stderr: ${this.getStderr()}`);
    }
  }

  /**
   * Stops the agent: closes its stdin (it shuts down cleanly), then SIGTERM after 1 s, then SIGKILL after
   * another second (to its whole process group). Resolves once it has exited; exit listeners have been told
   * and pending requests rejected by then. `start()` may be called again afterwards.
   */
  async stop(): Promise<void> {
    const agent = this.agent;
    if (!agent) return;
    await agent.close();
    this.forget(agent);
  }

  /** Subscribes to every event frame (responses excluded). Returns an unsubscribe function. */
  onEvent(listener: RpcEventListener): () => void {
    this.eventListeners.push(listener);
    return () => {
      const index = this.eventListeners.indexOf(listener);
      if (index !== -1) this.eventListeners.splice(index, 1);
    };
  }

  /** Subscribes to the end of the agent process (exit or failure). Returns an unsubscribe function. */
  onExit(listener: RpcExitListener): () => void {
    this.exitListeners.add(listener);
    return () => {
      this.exitListeners.delete(listener);
    };
  }

  /**
   * Subscribes to responses that match no pending request: the answer to a request that timed out or was
   * aborted, or any other unsolicited response (the reference drops these). Returns an unsubscribe function.
   */
  onUnmatchedResponse(listener: RpcUnmatchedResponseListener): () => void {
    this.unmatchedListeners.add(listener);
    return () => {
      this.unmatchedListeners.delete(listener);
    };
  }

  /** What the agent wrote to stderr (every process this client started; the last 1 MiB of each). */
  getStderr(): string {
    return this.earlierStderr + (this.transport?.stderr() ?? "");
  }

  // ==========================================================================
  // Prompting
  // ==========================================================================

  /**
   * Sends a prompt; resolves when the agent has accepted it (the run's events follow through `onEvent`).
   * Rejects with the agent's error text when it refuses. While the agent is streaming, pass
   * `{ streamingBehavior: "steer" | "followUp" }` to queue the message.
   */
  async prompt(message: string, images?: T.ImageContent[], options?: RpcPromptOptions): Promise<void> {
    const params = defined({ message, images, streamingBehavior: options?.streamingBehavior });
    await this.invoke((c) => c.prompt(params, requestOptions(options)));
  }

  /** Queues a steering message (delivered after the current turn's tool calls). */
  async steer(message: string, images?: T.ImageContent[], options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.steer(defined({ message, images }), requestOptions(options)));
  }

  /** Queues a follow-up message (delivered when the agent would otherwise stop). */
  async followUp(message: string, images?: T.ImageContent[], options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.followUp(defined({ message, images }), requestOptions(options)));
  }

  /** Queues a steering message in a live background agent. */
  async steerBackgroundAgent(agentId: string, message: string, options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.steerBackgroundAgent({ agentId, message }, requestOptions(options)));
  }

  /** The pending steering queue of a live background agent. */
  async getBackgroundAgentPending(agentId: string, options?: RpcRequestOptions): Promise<T.BackgroundAgentPendingResult> {
    return this.invoke((c) => c.getBackgroundAgentPending({ agentId }, requestOptions(options)));
  }

  /** Aborts the current operation (the run, a pending retry, background agents). */
  async abort(options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.abort(requestOptions(options)));
  }

  /** Starts a new session, optionally recording its parent; `cancelled` when an extension refused. */
  async newSession(parentSession?: string, options?: RpcRequestOptions): Promise<T.CancelledResult> {
    return this.invoke((c) => c.newSession(defined({ parentSession }), requestOptions(options)));
  }

  /** Reloads settings, models, extensions, skills, prompts and context files. */
  async reload(options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.reload(requestOptions(options)));
  }

  /**
   * Runs `/dream` (memory consolidation) or one of its backup-path forms. dreb-rs does not serve this
   * command: it rejects with `Unknown command: dream`.
   */
  async dream(args?: string, options?: RpcRequestOptions): Promise<{ message: string }> {
    return this.invoke((c) => c.call<{ message: string }>("dream", defined({ args }), requestOptions(options)));
  }

  // ==========================================================================
  // State
  // ==========================================================================

  /** The live session state. */
  async getState(options?: RpcRequestOptions): Promise<T.RpcSessionState> {
    return this.invoke((c) => c.getState(requestOptions(options)));
  }

  /** A dashboard recovery snapshot (a `dashboard_snapshot_barrier` event comes just before it). */
  async getDashboardSnapshot(options?: RpcRequestOptions): Promise<T.RpcDashboardSnapshot> {
    return this.invoke((c) => c.getDashboardSnapshot(requestOptions(options)));
  }

  /** Metadata of the loaded resources (paths and names only). */
  async getResources(options?: RpcRequestOptions): Promise<T.RpcResources> {
    return this.invoke((c) => c.getResources(requestOptions(options)));
  }

  /** The git branch of the agent's cwd (`null` outside a repository). */
  async getGitBranch(options?: RpcRequestOptions): Promise<string | null> {
    return (await this.invoke((c) => c.getGitBranch(requestOptions(options)))).branch;
  }

  /** Today's cost across all sessions. */
  async getDailyCost(options?: RpcRequestOptions): Promise<number> {
    return (await this.invoke((c) => c.getDailyCost(requestOptions(options)))).cost;
  }

  // ==========================================================================
  // Model and thinking
  // ==========================================================================

  /** Selects a model; resolves with the full model. */
  async setModel(provider: string, modelId: string, options?: RpcRequestOptions): Promise<T.Model> {
    return this.invoke((c) => c.setModel({ provider, modelId }, requestOptions(options)));
  }

  /** Cycles to the next model (`null` when there is only one). */
  async cycleModel(options?: RpcRequestOptions): Promise<T.ModelCycleResult | null> {
    return this.invoke((c) => c.cycleModel(requestOptions(options)));
  }

  /** The models usable now (full models; they include every {@link ModelInfo} field). */
  async getAvailableModels(options?: RpcRequestOptions): Promise<T.Model[]> {
    return (await this.invoke((c) => c.getAvailableModels(requestOptions(options)))).models;
  }

  /** Resolves a model pattern as the CLI does (`null` when nothing matches). */
  async resolveModel(pattern: string, options?: RpcRequestOptions): Promise<T.ResolveModelResult | null> {
    return this.invoke((c) => c.resolveModel({ pattern }, requestOptions(options)));
  }

  /** Hatches a buddy companion. */
  async buddyHatch(options?: RpcRequestOptions): Promise<T.BuddyState> {
    return (await this.invoke((c) => c.buddyHatch(requestOptions(options)))).state;
  }

  /** Rerolls the buddy companion. */
  async buddyReroll(options?: RpcRequestOptions): Promise<T.BuddyState> {
    return (await this.invoke((c) => c.buddyReroll(requestOptions(options)))).state;
  }

  /** Sets the thinking level. */
  async setThinkingLevel(level: T.ThinkingLevel, options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.setThinkingLevel({ level }, requestOptions(options)));
  }

  /** Cycles the thinking level (`null` when the model has no reasoning). */
  async cycleThinkingLevel(options?: RpcRequestOptions): Promise<T.ThinkingLevelResult | null> {
    return this.invoke((c) => c.cycleThinkingLevel(requestOptions(options)));
  }

  // ==========================================================================
  // Queues
  // ==========================================================================

  /** Sets how queued steering messages are delivered. */
  async setSteeringMode(mode: T.QueueMode, options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.setSteeringMode({ mode }, requestOptions(options)));
  }

  /** Sets how queued follow-up messages are delivered. */
  async setFollowUpMode(mode: T.QueueMode, options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.setFollowUpMode({ mode }, requestOptions(options)));
  }

  /** The queued steering and follow-up messages (left queued). */
  async getPendingMessages(options?: RpcRequestOptions): Promise<T.RpcPendingMessages> {
    return this.invoke((c) => c.getPendingMessages(requestOptions(options)));
  }

  /** Clears the queues, returning what was in them. */
  async clearPendingMessages(options?: RpcRequestOptions): Promise<T.RpcPendingMessages> {
    return this.invoke((c) => c.clearPendingMessages(requestOptions(options)));
  }

  // ==========================================================================
  // Compaction, retry, bash
  // ==========================================================================

  /** Compacts the session context (an LLM call; 5 min default timeout). */
  async compact(customInstructions?: string, options?: RpcRequestOptions): Promise<T.CompactionResult> {
    return this.invoke((c) => c.compact(defined({ customInstructions }), requestOptions(options)));
  }

  /** Turns automatic compaction on or off. */
  async setAutoCompaction(enabled: boolean, options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.setAutoCompaction({ enabled }, requestOptions(options)));
  }

  /** Aborts a running compaction. */
  async abortCompaction(options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.abortCompaction(requestOptions(options)));
  }

  /** Turns automatic retry on or off. */
  async setAutoRetry(enabled: boolean, options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.setAutoRetry({ enabled }, requestOptions(options)));
  }

  /** Cancels a pending automatic retry. */
  async abortRetry(options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.abortRetry(requestOptions(options)));
  }

  /**
   * Runs a shell command (5 min default timeout); its output is added to the context of the next prompt.
   * (`exitCode` is typed as always present, possibly undefined, as the reference declares it.)
   */
  async bash(command: string, options?: RpcRequestOptions): Promise<T.BashResult & { exitCode: number | undefined }> {
    return this.invoke((c) => c.bash({ command }, requestOptions(options))) as Promise<
      T.BashResult & { exitCode: number | undefined }
    >;
  }

  /** Aborts the running `bash` command. */
  async abortBash(options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.abortBash(requestOptions(options)));
  }

  // ==========================================================================
  // Sessions
  // ==========================================================================

  /**
   * Token, message and cost statistics of the session. (`sessionFile` is typed as always present, possibly
   * undefined, as the reference declares it.)
   */
  async getSessionStats(options?: RpcRequestOptions): Promise<T.SessionStats & { sessionFile: string | undefined }> {
    return this.invoke((c) => c.getSessionStats(requestOptions(options))) as Promise<
      T.SessionStats & { sessionFile: string | undefined }
    >;
  }

  /** Per-model performance statistics. */
  async getPerformanceStats(options?: RpcRequestOptions): Promise<T.RpcPerformanceStats> {
    return this.invoke((c) => c.getPerformanceStats(requestOptions(options)));
  }

  /** Exports the session to HTML; resolves with the file's path. */
  async exportHtml(outputPath?: string, options?: RpcRequestOptions): Promise<T.ExportHtmlResult> {
    return this.invoke((c) => c.exportHtml(defined({ outputPath }), requestOptions(options)));
  }

  /** Imports a JSONL session file and resumes it. */
  async importJsonl(inputPath: string, options?: RpcRequestOptions): Promise<T.CancelledResult> {
    return this.invoke((c) => c.importJsonl({ inputPath }, requestOptions(options)));
  }

  /** Switches to another session file. */
  async switchSession(sessionPath: string, options?: RpcRequestOptions): Promise<T.CancelledResult> {
    return this.invoke((c) => c.switchSession({ sessionPath }, requestOptions(options)));
  }

  /** Deletes a session file (not the active one). */
  async deleteSession(sessionPath: string, options?: RpcRequestOptions): Promise<T.DeleteSessionResult> {
    return this.invoke((c) => c.deleteSession({ sessionPath }, requestOptions(options)));
  }

  /** Forks the session at a message. */
  async fork(entryId: string, options?: RpcRequestOptions): Promise<T.ForkResult> {
    return this.invoke((c) => c.fork({ entryId }, requestOptions(options)));
  }

  /** The messages a fork can start from. */
  async getForkMessages(options?: RpcRequestOptions): Promise<T.ForkMessage[]> {
    return (await this.invoke((c) => c.getForkMessages(requestOptions(options)))).messages;
  }

  /** The session tree and its current leaf. */
  async getTree(options?: RpcRequestOptions): Promise<T.TreeResult> {
    return this.invoke((c) => c.getTree(requestOptions(options)));
  }

  /**
   * Moves the session leaf to a tree entry. `options.timeoutMs` (default 5 min) and `options.signal` stay on
   * the client; the other options are sent.
   */
  async navigateTree(targetId: string, options?: RpcNavigateTreeOptions): Promise<T.NavigateTreeResult> {
    const { timeoutMs, signal, ...rest } = options ?? {};
    const params = defined({ targetId, ...rest });
    return this.invoke((c) => c.navigateTree(params, requestOptions({ timeoutMs, signal })));
  }

  /** The text of the last assistant message, or `null` when there is none. */
  async getLastAssistantText(options?: RpcRequestOptions): Promise<string | null> {
    return (await this.invoke((c) => c.getLastAssistantText(requestOptions(options)))).text ?? null;
  }

  /** Sets the session's display name (rejects on an empty name). */
  async setSessionName(name: string, options?: RpcRequestOptions): Promise<void> {
    await this.invoke((c) => c.setSessionName({ name }, requestOptions(options)));
  }

  /** The live agent messages. */
  async getMessages(options?: RpcRequestOptions): Promise<T.AgentMessage[]> {
    return (await this.invoke((c) => c.getMessages(requestOptions(options)))).messages;
  }

  /** The slash commands, built-ins included (those must be handled by the host). */
  async getCommands(options?: RpcRequestOptions): Promise<T.RpcSlashCommand[]> {
    return (await this.invoke((c) => c.getCommands(requestOptions(options)))).commands;
  }

  /** Sessions of the agent's cwd, most recently modified first. */
  async listSessions(options?: RpcRequestOptions): Promise<T.RpcSessionInfo[]> {
    return (await this.invoke((c) => c.listSessions(requestOptions(options)))).sessions;
  }

  /** Sessions of every project, most recently modified first. */
  async listAllSessions(options?: RpcRequestOptions): Promise<T.RpcSessionInfo[]> {
    return (await this.invoke((c) => c.listAllSessions(requestOptions(options)))).sessions;
  }

  /** The background agents the agent knows about. */
  async listBackgroundAgents(options?: RpcRequestOptions): Promise<T.RpcBackgroundAgentInfo[]> {
    return (await this.invoke((c) => c.listBackgroundAgents(requestOptions(options)))).agents;
  }

  /** The subagent types available in the agent's cwd. */
  async listAgentTypes(options?: RpcRequestOptions): Promise<T.RpcAgentTypeInfo[]> {
    return (await this.invoke((c) => c.listAgentTypes(requestOptions(options)))).agentTypes;
  }

  /**
   * Answers an `extension_ui_request` dialog. Written at once; the agent sends no response (an
   * `extension_ui_response_handled` event follows). Throws when the agent is not running.
   */
  sendExtensionUIResponse(response: RpcExtensionUIResponse): void {
    const agent = this.agent;
    const notRunning = () => {
      const info = this.exitInfo;
      const cause = info?.error ? ` Spawn error: ${info.error.message}.` : "";
      return new RpcClosedError(`RPC process is not running.${cause} Stderr: ${this.getStderr()}`);
    };
    if (!agent || agent.isClosed) throw notRunning();
    // Written as given (the reference writes the object as is); a plain-JS host's missing `type` is filled in.
    const frame = "type" in response ? response : { type: "extension_ui_response", ...(response as object) };
    try {
      agent.notify(frame as unknown as OutgoingFrame);
    } catch (error) {
      if (error instanceof RpcClosedError) throw notRunning();
      throw error;
    }
  }

  /** The agent's version. */
  async getVersion(options?: RpcRequestOptions): Promise<string> {
    return (await this.invoke((c) => c.getVersion(requestOptions(options)))).version;
  }

  // ==========================================================================
  // Settings and context trust
  // ==========================================================================

  /** The persistent default settings (for the live state use `getState`). */
  async getSettings(options?: RpcRequestOptions): Promise<T.RpcSettingsSnapshot> {
    return this.invoke((c) => c.getSettings(requestOptions(options)));
  }

  /** Updates the persistent default settings (all or nothing). */
  async setSettings(settings: T.RpcSettingsUpdate, options?: RpcRequestOptions): Promise<T.RpcSettingsSetResult> {
    return this.invoke((c) => c.setSettings({ settings }, requestOptions(options)));
  }

  /** Evaluates a directory against the global context-trust policy. */
  async evaluateContextTrust(path: string, options?: RpcRequestOptions): Promise<T.RpcContextTrustEvaluation> {
    return this.invoke((c) => c.evaluateContextTrust({ path }, requestOptions(options)));
  }

  /** Trusts a directory (adds a global trusted context root). */
  async trustContextFolder(path: string, options?: RpcRequestOptions): Promise<T.RpcContextTrustMutationResult> {
    return this.invoke((c) => c.trustContextFolder({ path }, requestOptions(options)));
  }

  /** Removes the root that grants a directory context trust. */
  async untrustContextFolder(path: string, options?: RpcRequestOptions): Promise<T.RpcContextTrustMutationResult> {
    return this.invoke((c) => c.untrustContextFolder({ path }, requestOptions(options)));
  }

  /** Removes a configured trusted folder exactly as stored. */
  async removeTrustedContextFolder(path: string, options?: RpcRequestOptions): Promise<T.RpcTrustedFolderRemovalResult> {
    return this.invoke((c) => c.removeTrustedContextFolder({ path }, requestOptions(options)));
  }

  // ==========================================================================
  // Waiting
  // ==========================================================================

  /**
   * Resolves when the agent is idle: at once if it already is (and no prompt was sent in the same tick), else
   * at the `agent_end` of the current run, after any automatic retry or compaction it leads to. Rejects after
   * `timeout` ms (`0` = no timeout) with `Timeout waiting for agent to become idle. Stderr: …`, and when the
   * agent exits.
   */
  waitForIdle(timeout = WAIT_TIMEOUT_MS, options?: RpcWaitOptions): Promise<void> {
    return this.collect(timeout, options?.signal, "Timeout waiting for agent to become idle").promise.then(() => {});
  }

  /**
   * Collects every event until the agent is idle (as {@link waitForIdle} decides), the last `agent_end`
   * included. Rejects after `timeout` ms (`0` = no timeout) with `Timeout collecting events. Stderr: …`.
   */
  collectEvents(timeout = WAIT_TIMEOUT_MS, options?: RpcWaitOptions): Promise<T.RpcEvent[]> {
    return this.collect(timeout, options?.signal, "Timeout collecting events").promise;
  }

  /**
   * Sends a prompt and collects the events of its run (see {@link collectEvents}). Rejects with the agent's
   * error text when the prompt is refused.
   */
  async promptAndWait(
    message: string,
    images?: T.ImageContent[],
    timeout = WAIT_TIMEOUT_MS,
    options?: RpcWaitOptions,
  ): Promise<T.RpcEvent[]> {
    const collector = this.collect(timeout, options?.signal, "Timeout collecting events");
    try {
      await this.prompt(message, images, defined({ signal: options?.signal }));
    } catch (error) {
      collector.cancel();
      throw error;
    }
    return collector.promise;
  }

  // ==========================================================================
  // Internal
  // ==========================================================================

  private transportOptions(): ProcessTransportOptions {
    const o = this.options;
    const base: ProcessTransportOptions = {
      stopGraceMs: STOP_GRACE_MS,
      ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
      ...(o.env !== undefined ? { env: o.env } : {}),
      ...(o.provider ? { provider: o.provider } : {}),
      ...(o.model ? { model: o.model } : {}),
      ...(o.args !== undefined ? { args: o.args } : {}),
      ...(o.uid != null ? { uid: o.uid } : {}),
      ...(o.gid != null ? { gid: o.gid } : {}),
    };
    if (o.cliPath === undefined) return base;
    const cliPath = path.resolve(o.cwd ?? process.cwd(), o.cliPath);
    return NODE_ENTRY.test(cliPath)
      ? { ...base, command: process.execPath, commandArgs: [cliPath] }
      : { ...base, command: cliPath };
  }

  /** The running agent, or a rejection naming why there is none (the reference's text, with the cause). */
  private live(): DrebClient {
    const agent = this.agent;
    if (agent && !agent.isClosed) return agent;
    const info = this.exitInfo;
    if (info?.error) throw new RpcClosedError(`RPC process not running: ${info.error.message}`);
    if (info) throw new RpcClosedError(`RPC process not running (exited with code ${info.code}, signal ${info.signal})`);
    throw new RpcClosedError("RPC process not running");
  }

  /** Runs one typed request (sent synchronously, before the first await) and gives its errors the reference's texts. */
  private async invoke<R>(send: (client: DrebClient) => Promise<R>): Promise<R> {
    const agent = this.live();
    try {
      return await send(agent);
    } catch (error) {
      throw this.translate(error);
    }
  }

  private translate(error: unknown): unknown {
    if (error instanceof RpcTimeoutError) {
      return withMessage(error, `Timeout waiting for response to ${error.command}. Stderr: ${this.getStderr()}`);
    }
    if (error instanceof RpcClosedError && this.exitInfo) {
      return withMessage(error, this.exitMessage(this.exitInfo));
    }
    return error;
  }

  private exitMessage(info: RpcExitInfo): string {
    const stderr = this.getStderr().trim();
    const suffix = stderr ? `. Stderr: ${stderr}` : "";
    return info.error
      ? `RPC process failed to spawn: ${info.error.message}${suffix}`
      : `RPC process exited with code ${info.code}, signal ${info.signal}${suffix}`;
  }

  /**
   * Collects events until the agent is idle. The idle check is made on the next turn of the event loop, so a
   * prompt sent right after this call (as `promptAndWait` does) is waited for.
   */
  private collect(timeout: number, signal: AbortSignal | undefined, timeoutText: string): {
    promise: Promise<T.RpcEvent[]>;
    cancel: () => void;
  } {
    let cancel = () => {};
    const promise = new Promise<T.RpcEvent[]>((resolve, reject) => {
      let agent: DrebClient;
      try {
        agent = this.live();
      } catch (error) {
        reject(error);
        return;
      }
      const events: T.RpcEvent[] = [];
      const stopIdleWait = new AbortController();
      let settled = false;
      let unlisten = () => {};
      const settle = (error?: unknown) => {
        if (settled) return;
        settled = true;
        unsubscribe();
        unlisten();
        if (timer !== undefined) clearTimeout(timer);
        clearImmediate(deferred);
        stopIdleWait.abort();
        if (error === undefined) resolve(events);
        else reject(error);
      };
      cancel = () => settle(new RpcClientError("Cancelled"));
      // Cut the list at the event that made the agent idle, so frames after it are not included.
      const unsubscribe = this.onEvent((event) => {
        events.push(event);
        if (SETTLING_EVENTS.has(event.type) && agent.isIdle()) settle();
      });
      const timer =
        timeout > 0
          ? setTimeout(() => {
              const error = new RpcTimeoutError("waitForIdle", timeout);
              settle(withMessage(error, `${timeoutText}. Stderr: ${this.getStderr()}`));
            }, timeout)
          : undefined;
      const deferred = setImmediate(() => {
        agent.waitForIdle({ signal: stopIdleWait.signal }).then(
          () => settle(),
          (error: unknown) => {
            if (!stopIdleWait.signal.aborted) settle(this.translate(error));
          },
        );
      });
      if (signal) {
        const onAbort = () => {
          const reason: unknown = signal.reason;
          settle(reason instanceof Error ? reason : new DOMException(String(reason ?? "This operation was aborted"), "AbortError"));
        };
        if (signal.aborted) onAbort();
        else {
          signal.addEventListener("abort", onAbort, { once: true });
          unlisten = () => signal.removeEventListener("abort", onAbort);
        }
      }
    });
    return { promise, cancel };
  }

  private dispatch(event: T.RpcEvent): void {
    if (!isWellFormed(event as unknown as { type: string; [key: string]: unknown })) return;
    // Each listener is isolated: one that throws does not stop delivery to the others.
    for (const listener of [...this.eventListeners]) this.safely(() => listener(event));
  }

  private handleClose(agent: DrebClient, info: TransportCloseInfo): void {
    if (agent !== this.agent) return; // an earlier process of this client
    const exit: RpcExitInfo = info.error
      ? { error: info.error }
      : { code: info.code ?? null, signal: info.signal ?? null };
    this.exitInfo = exit;
    for (const listener of [...this.exitListeners]) this.safely(() => listener(exit));
  }

  /** Drops the current process (after `stop()` or a failed start) but keeps its stderr and exit info. */
  private forget(agent: DrebClient): void {
    if (this.agent !== agent) return;
    this.earlierStderr = this.getStderr();
    this.agent = null;
    this.transport = null;
  }

  private safely(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.reportListenerError(error);
    }
  }

  private reportListenerError(error: unknown): void {
    process.emitWarning(`RpcClient: listener threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  }
}

/** Events after which the agent may have become idle. */
const SETTLING_EVENTS: ReadonlySet<string> = new Set(["agent_end", "auto_retry_end", "auto_compaction_end"]);
