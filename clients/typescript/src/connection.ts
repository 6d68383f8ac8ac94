/**
 * The untyped core of the client: request/response correlation by id, timeouts, event fan-out,
 * and a race-free wait for the agent to become idle. The generated `DrebClient` extends it with one
 * typed method per command.
 */

import { encodeFrame } from "./jsonl.js";
import {
  RpcClientError,
  RpcClosedError,
  RpcError,
  RpcTimeoutError,
  type FailureResponseFrame,
} from "./errors.js";
import type { RpcTransport, TransportCloseInfo } from "./transport.js";
import { defaultTimeoutFor } from "./timeouts.js";

/** Any stdout frame: a response or an event. */
export interface RpcFrame {
  type: string;
  [key: string]: unknown;
}

/** A response frame as it arrived on the wire. */
export interface ResponseFrame {
  id?: unknown;
  type: "response";
  command?: string;
  success: boolean;
  data?: unknown;
  error?: string;
  [key: string]: unknown;
}

/** A frame the client writes: a wire `type` and its other keys. */
export interface OutgoingFrame {
  readonly type: string;
  readonly [key: string]: unknown;
}

export interface RequestOptions {
  /**
   * Milliseconds to wait for the response; `0` waits forever. Default: the connection's timeout for the
   * command (see {@link RpcConnection.timeoutFor}).
   */
  timeoutMs?: number;
  /**
   * Stops waiting when aborted: the promise rejects with the signal's reason (an `AbortError` by default).
   * The command itself is not recalled; send `abort` to stop a run.
   */
  signal?: AbortSignal;
}

export interface WaitForIdleOptions {
  /** Milliseconds to wait; `0` or unset waits forever (a run can take as long as it takes). */
  timeoutMs?: number;
  /** Stops waiting when aborted (rejects with the signal's reason); the run goes on. */
  signal?: AbortSignal;
}

export interface ConnectionOptions {
  /**
   * Timeout in ms of every request (`0` = none), replacing the per-command defaults. Unset: 300 000 for
   * the commands in `COMMAND_TIMEOUTS_MS` (`compact`, `bash`, `navigate_tree`, `buddy_hatch`,
   * `buddy_reroll`), 30 000 for the others.
   */
  defaultTimeoutMs?: number;
  /** Timeouts in ms of single commands by wire name (`0` = none); they win over `defaultTimeoutMs`. */
  commandTimeoutsMs?: Readonly<Record<string, number>>;
  /** Receives exceptions thrown by event listeners (default: `process.emitWarning`). */
  onListenerError?: (error: unknown) => void;
}

type Listener<T> = (value: T) => void;

interface Pending {
  command: string;
  resolve: (response: ResponseFrame) => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Removes the abort listener of the request's signal. */
  unlisten: (() => void) | undefined;
}

interface IdleWaiter {
  resolve: () => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
  unlisten: (() => void) | undefined;
}

/** Calls `handler` when `signal` aborts; returns what removes the listener. */
function onAbort(signal: AbortSignal | undefined, handler: () => void): (() => void) | undefined {
  if (signal === undefined) return undefined;
  signal.addEventListener("abort", handler, { once: true });
  return () => signal.removeEventListener("abort", handler);
}

/** The error an aborted wait rejects with: the signal's reason, as `fetch` does. */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException(String(reason ?? "This operation was aborted"), "AbortError");
}

/** The wire name of the command that starts an agent run. */
const RUN_COMMAND = "prompt";

export class RpcConnection<E extends { type: string } = RpcFrame> {
  private readonly pending = new Map<string, Pending>();
  private readonly eventListeners = new Set<Listener<E>>();
  private readonly unmatchedListeners = new Set<Listener<ResponseFrame>>();
  private readonly closeListeners = new Set<Listener<TransportCloseInfo>>();
  private readonly idleWaiters = new Set<IdleWaiter>();
  private readonly defaultTimeoutMs: number | undefined;
  private readonly commandTimeoutsMs: Readonly<Record<string, number>>;
  private readonly onListenerError: (error: unknown) => void;
  private nextId = 1;
  private state: "new" | "starting" | "open" | "closed" = "new";
  private closeInfo: TransportCloseInfo | undefined;

  // Sticky run state for waitForIdle: every incoming frame gets a sequence number, so "an agent_end
  // after the prompt was sent" is decidable even when the response and the events arrive together.
  private frameSeq = 0;
  private lastAgentStartSeq = 0;
  private lastAgentEndSeq = 0;
  /** Between `auto_retry_start` and `auto_retry_end`: the run failed and will be retried. */
  private retryPending = false;
  /** Between `auto_compaction_start` and `auto_compaction_end`. */
  private compacting = false;
  /** After `auto_compaction_end` with `willRetry: true`, until the continuation's `agent_start`. */
  private continuationExpected = false;
  /** frameSeq when the latest run-starting command was sent; undefined when none is outstanding. */
  private runRequestedAt: number | undefined;
  private runRequestId: string | undefined;

  constructor(
    readonly transport: RpcTransport,
    options: ConnectionOptions = {},
  ) {
    this.defaultTimeoutMs = options.defaultTimeoutMs;
    this.commandTimeoutsMs = { ...options.commandTimeoutsMs };
    this.onListenerError =
      options.onListenerError ??
      ((error) => process.emitWarning(`dreb client: event listener threw: ${String(error)}`));
  }

  /** Starts the transport (spawns the agent). */
  async start(): Promise<void> {
    if (this.state !== "new") throw new RpcClientError("Client already started");
    this.state = "starting";
    await this.transport.start({
      onRecord: (record) => this.handleRecord(record),
      onClose: (info) => this.handleClose(info),
    });
    if (this.state === "starting") this.state = "open";
  }

  /** Closes the transport (stops the agent); pending requests fail with {@link RpcClosedError}. */
  async close(): Promise<void> {
    await this.transport.close();
    this.handleClose(this.closeInfo ?? { reason: "Client closed" });
  }

  /** `await using client = await DrebClient.spawn(...)` closes the client at the end of the scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * The timeout in ms a request for `command` (a wire name) gets when the call passes none (`0` = none):
   * the `commandTimeoutsMs` entry, else `defaultTimeoutMs`, else the built-in default of the command.
   */
  timeoutFor(command: string): number {
    if (Object.hasOwn(this.commandTimeoutsMs, command)) return this.commandTimeoutsMs[command]!;
    return this.defaultTimeoutMs ?? defaultTimeoutFor(command);
  }

  /** True once the transport has closed. */
  get isClosed(): boolean {
    return this.state === "closed";
  }

  /**
   * Sends a command and resolves with its response frame, whether `success` is true or false.
   * `command` carries the wire `type` and the params; the `id` is assigned here.
   */
  request(command: OutgoingFrame, options: RequestOptions = {}): Promise<ResponseFrame> {
    if (this.state !== "open") return Promise.reject(this.closedError());
    const id = `req_${this.nextId++}`;
    const { type, ...params } = command;
    let frame: string;
    try {
      // Key order on the wire: id, type, then the params (as the reference client writes them).
      frame = encodeFrame({ id, type, ...params });
    } catch (error) {
      return Promise.reject(error);
    }
    const timeoutMs = options.timeoutMs ?? this.timeoutFor(type);
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<ResponseFrame>((resolve, reject) => {
      const entry: Pending = { command: type, resolve, reject, timer: undefined, unlisten: undefined };
      entry.unlisten = onAbort(signal, () => {
        if (this.settle(id)) reject(abortReason(signal!));
      });
      if (timeoutMs > 0) {
        entry.timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new RpcTimeoutError(type, timeoutMs));
        }, timeoutMs);
      }
      this.pending.set(id, entry);
      if (type === RUN_COMMAND) {
        this.runRequestedAt = this.frameSeq;
        this.runRequestId = id;
      }
      try {
        this.transport.send(frame);
      } catch (error) {
        this.settle(id);
        reject(error instanceof RpcClientError ? error : new RpcClosedError(String(error), { cause: error }));
      }
    });
  }

  /**
   * Sends a command and returns the response's `data` (undefined when the response has none).
   * A `success: false` response rejects with {@link RpcError} carrying the exact error text.
   */
  async call<T>(type: string, params: object = {}, options: RequestOptions = {}): Promise<T> {
    const response = await this.request({ ...params, type }, options);
    if (response.success !== true) {
      const error = typeof response.error === "string" ? response.error : "Unknown error";
      throw new RpcError(type, { ...response, success: false, error } as FailureResponseFrame);
    }
    return response.data as T;
  }

  /** Writes a message that gets no response (for example `extension_ui_response`). */
  notify(message: OutgoingFrame): void {
    if (this.state !== "open") throw this.closedError();
    this.transport.send(encodeFrame(message));
  }

  /** Subscribes to every non-response frame (events; unknown event types included). Returns an unsubscribe function. */
  onEvent(listener: Listener<E>): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  /**
   * Subscribes to responses that match no pending request: a response to a timed-out request, or a
   * second (late) response for an id that was already answered.
   */
  onUnmatchedResponse(listener: Listener<ResponseFrame>): () => void {
    this.unmatchedListeners.add(listener);
    return () => this.unmatchedListeners.delete(listener);
  }

  /** Called once when the transport closes (agent exit, spawn failure, or `close()`). */
  onClose(listener: Listener<TransportCloseInfo>): () => void {
    if (this.closeInfo) {
      listener(this.closeInfo);
      return () => {};
    }
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  /**
   * Events as an async iterator, buffered from the moment this is called; it ends when the
   * transport closes, and `break` unsubscribes.
   */
  events(): AsyncIterableIterator<E> {
    const queue: E[] = [];
    let wake: (() => void) | undefined;
    let done = this.state === "closed";
    const unsubscribe = this.onEvent((event) => {
      queue.push(event);
      wake?.();
    });
    const unsubscribeClose = this.onClose(() => {
      done = true;
      wake?.();
    });
    const finish = (): IteratorResult<E> => {
      unsubscribe();
      unsubscribeClose();
      done = true;
      return { value: undefined, done: true };
    };
    const iterator: AsyncIterableIterator<E> = {
      next: async () => {
        for (;;) {
          const event = queue.shift();
          if (event !== undefined) return { value: event, done: false };
          if (done) return finish();
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
      },
      return: async () => finish(),
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }

  /**
   * True when no run is in progress, none is about to continue (auto-retry pending, auto-compaction running or
   * about to retry), and the latest prompt's run (if any) has ended.
   */
  isIdle(): boolean {
    if (this.lastAgentStartSeq > this.lastAgentEndSeq) return false;
    if (this.retryPending || this.compacting || this.continuationExpected) return false;
    return this.runRequestedAt === undefined || this.lastAgentEndSeq > this.runRequestedAt;
  }

  /**
   * Resolves when the agent is idle: the `agent_end` of the run started by the latest `prompt` has been
   * seen (even if it arrived in the same chunk as the prompt's response, before this was called), no
   * later run has started, and no automatic retry or compaction is pending (`auto_retry_start` …
   * `auto_retry_end`, `auto_compaction_start` … `auto_compaction_end`, and the run a `willRetry`
   * compaction continues with). Resolves at once if the agent is already idle. A prompt that does not
   * start a run (for example an extension command that only notifies) keeps this waiting until the
   * timeout. There is no default timeout: without `timeoutMs` this waits until the run ends or the
   * transport closes.
   */
  waitForIdle(options: WaitForIdleOptions = {}): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    if (this.state === "closed") return Promise.reject(this.closedError());
    const timeoutMs = options.timeoutMs ?? 0;
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<void>((resolve, reject) => {
      const waiter: IdleWaiter = { resolve, reject, timer: undefined, unlisten: undefined };
      const drop = () => {
        this.idleWaiters.delete(waiter);
        if (waiter.timer !== undefined) clearTimeout(waiter.timer);
        waiter.unlisten?.();
      };
      if (timeoutMs > 0) {
        waiter.timer = setTimeout(() => {
          drop();
          reject(new RpcTimeoutError("waitForIdle", timeoutMs));
        }, timeoutMs);
      }
      waiter.unlisten = onAbort(signal, () => {
        drop();
        reject(abortReason(signal!));
      });
      this.idleWaiters.add(waiter);
    });
  }

  /**
   * Sends `prompt` and collects every event up to the end of the run it starts.
   * Rejects with {@link RpcError} if the prompt is refused. `timeoutMs`, when given, bounds the prompt's
   * response and, separately, the wait for the run's end; unset, the response gets the `prompt` default
   * and the wait has no timeout.
   */
  async promptAndWait(params: object, options: RequestOptions & WaitForIdleOptions = {}): Promise<E[]> {
    const events: E[] = [];
    const unsubscribe = this.onEvent((event) => events.push(event));
    try {
      const requestOptions: RequestOptions = options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs };
      await this.call<void>(RUN_COMMAND, params, requestOptions);
      await this.waitForIdle(options);
      return events;
    } finally {
      unsubscribe();
    }
  }

  private handleRecord(record: string): void {
    this.frameSeq++;
    let frame: unknown;
    try {
      frame = JSON.parse(record);
    } catch {
      return; // Not JSON: nothing on stdout but frames is expected; ignore rather than fail every request.
    }
    if (typeof frame !== "object" || frame === null || Array.isArray(frame)) return;
    const typed = frame as RpcFrame;
    if (typeof typed.type !== "string") return;
    if (typed.type === "response") {
      this.handleResponse(typed as ResponseFrame);
      return;
    }
    const settling = this.trackRunState(typed);
    this.emit(this.eventListeners, typed as E);
    if (settling) this.checkIdleWaiters();
  }

  /** Updates the sticky run state from an event; true when the agent may have become idle. */
  private trackRunState(event: RpcFrame): boolean {
    switch (event.type) {
      case "agent_start":
        this.lastAgentStartSeq = this.frameSeq;
        this.continuationExpected = false;
        return false;
      case "agent_end":
        this.lastAgentEndSeq = this.frameSeq;
        return true;
      case "auto_retry_start":
        this.retryPending = true;
        return false;
      case "auto_retry_end":
        this.retryPending = false;
        return true;
      case "auto_compaction_start":
        this.compacting = true;
        return false;
      case "auto_compaction_end":
        this.compacting = false;
        this.continuationExpected = event.willRetry === true;
        return true;
      default:
        return false;
    }
  }

  private handleResponse(response: ResponseFrame): void {
    const id = response.id;
    const entry = typeof id === "string" ? this.settle(id) : undefined;
    if (!entry) {
      this.emit(this.unmatchedListeners, response);
      return;
    }
    if (id === this.runRequestId && response.success !== true) {
      // The prompt was refused: no run will start, so waitForIdle must not wait for one.
      this.runRequestedAt = undefined;
      this.runRequestId = undefined;
      this.checkIdleWaiters();
    }
    entry.resolve(response);
  }

  private settle(id: string): Pending | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    entry.unlisten?.();
    return entry;
  }

  private checkIdleWaiters(): void {
    if (this.idleWaiters.size === 0 || !this.isIdle()) return;
    for (const waiter of this.idleWaiters) {
      if (waiter.timer !== undefined) clearTimeout(waiter.timer);
      waiter.unlisten?.();
      waiter.resolve();
    }
    this.idleWaiters.clear();
  }

  private handleClose(info: TransportCloseInfo): void {
    if (this.state === "closed") return;
    this.state = "closed";
    this.closeInfo = info;
    const error = this.closedError();
    for (const [id, entry] of [...this.pending]) {
      this.settle(id);
      entry.reject(error);
    }
    for (const waiter of this.idleWaiters) {
      if (waiter.timer !== undefined) clearTimeout(waiter.timer);
      waiter.unlisten?.();
      waiter.reject(error);
    }
    this.idleWaiters.clear();
    const listeners = [...this.closeListeners];
    this.closeListeners.clear();
    for (const listener of listeners) this.safely(() => listener(info));
  }

  private closedError(): RpcClosedError {
    if (this.state === "new" || this.state === "starting") return new RpcClosedError("Client not started");
    return new RpcClosedError(this.closeInfo?.reason ?? "RPC transport is closed");
  }

  private emit<T>(listeners: Set<Listener<T>>, value: T): void {
    // Each listener is isolated: one that throws must not stop delivery to the others.
    for (const listener of [...listeners]) this.safely(() => listener(value));
  }

  private safely(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.onListenerError(error);
    }
  }
}
