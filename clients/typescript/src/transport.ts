/** The pluggable transport under the client: something that carries JSONL records both ways. */

import type { Readable, Writable } from "node:stream";
import { JsonlDecoder } from "./jsonl.js";
import { RpcClosedError } from "./errors.js";

/** Why a transport closed. */
export interface TransportCloseInfo {
  /** Human-readable reason, used in the errors of requests that were still pending. */
  reason: string;
  /** Process exit code, when the transport is a process. */
  code?: number | null;
  /** Process exit signal, when the transport is a process. */
  signal?: NodeJS.Signals | null;
  /** The underlying error, when the transport failed rather than ended. */
  error?: Error;
}

/** What the client gives a transport when it starts it. */
export interface TransportHandlers {
  /** One complete record, without its LF (and without a trailing CR). */
  onRecord(record: string): void;
  /** The peer is gone. Called at most once, after the last `onRecord`. */
  onClose(info: TransportCloseInfo): void;
}

/** A bidirectional JSONL channel to one agent. */
export interface RpcTransport {
  /** Connects (spawns, opens ...) and starts delivering records. Rejects if the channel cannot be opened. */
  start(handlers: TransportHandlers): Promise<void>;
  /** Writes one complete frame (already serialised, LF-terminated). Throws if the channel is closed. */
  send(frame: string): void;
  /** Closes the channel and releases its resources; resolves when it is fully closed. */
  close(): Promise<void>;
}

/**
 * A transport over a pair of Node streams (a socket, a child's stdio, or in-memory streams in tests).
 * Reads bytes and frames them with the strict {@link JsonlDecoder}.
 */
export class StreamTransport implements RpcTransport {
  private handlers: TransportHandlers | undefined;
  private closed = false;
  private readonly decoder = new JsonlDecoder();

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
  ) {}

  start(handlers: TransportHandlers): Promise<void> {
    if (this.handlers) return Promise.reject(new Error("Transport already started"));
    this.handlers = handlers;
    this.input.on("data", (chunk: Buffer | string) => {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
      for (const record of this.decoder.push(bytes)) handlers.onRecord(record);
    });
    this.input.on("end", () => this.finish({ reason: "stream ended" }));
    this.input.on("close", () => this.finish({ reason: "stream closed" }));
    this.input.on("error", (error: Error) => this.finish({ reason: `stream error: ${error.message}`, error }));
    this.output.on("error", () => {
      // A write to a closed peer (EPIPE) surfaces here; the read side reports the close.
    });
    return Promise.resolve();
  }

  send(frame: string): void {
    if (this.closed || this.output.destroyed || this.output.writableEnded) {
      throw new RpcClosedError("Transport is closed");
    }
    this.output.write(frame);
  }

  close(): Promise<void> {
    if (!this.output.writableEnded) this.output.end();
    this.finish({ reason: "closed by client" });
    return Promise.resolve();
  }

  /** Passes on an unterminated final record, then reports the close exactly once. */
  private finish(info: TransportCloseInfo): void {
    if (this.closed) return;
    this.closed = true;
    const handlers = this.handlers;
    if (!handlers) return;
    for (const record of this.decoder.end()) handlers.onRecord(record);
    handlers.onClose(info);
  }
}
