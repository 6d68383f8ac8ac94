/** Errors raised by the client. Every one extends {@link RpcClientError}. */

/** Base class of every error the client raises. */
export class RpcClientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A failure response as it arrived on the wire (`success: false`). */
export interface FailureResponseFrame {
  id?: unknown;
  type: "response";
  command?: string;
  success: false;
  error: string;
  [key: string]: unknown;
}

/**
 * The agent answered `success: false`. `message` is the agent's exact error text (hosts match on
 * it); `command` is the wire name of the failed command.
 */
export class RpcError extends RpcClientError {
  readonly command: string;
  readonly error: string;
  readonly response: FailureResponseFrame;

  constructor(command: string, response: FailureResponseFrame) {
    super(response.error);
    this.command = command;
    this.error = response.error;
    this.response = response;
  }
}

/** No response arrived within the request's timeout (the request may still complete later). */
export class RpcTimeoutError extends RpcClientError {
  readonly command: string;
  readonly timeoutMs: number;

  constructor(command: string, timeoutMs: number, detail = "") {
    super(`Timeout waiting for response to ${command} after ${timeoutMs} ms${detail}`);
    this.command = command;
    this.timeoutMs = timeoutMs;
  }
}

/** The transport is closed (the agent exited, or the client was closed); the request cannot complete. */
export class RpcClosedError extends RpcClientError {}
