/** Spawns `dreb --mode rpc` (or any compatible command) and talks JSONL over its stdio. */

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { accessSync, constants as fsConstants, statSync } from "node:fs";
import * as path from "node:path";
import { JsonlDecoder } from "./jsonl.js";
import { RpcClientError, RpcClosedError } from "./errors.js";
import type { RpcTransport, TransportCloseInfo, TransportHandlers } from "./transport.js";

export interface ProcessTransportOptions {
  /**
   * Executable to run (no shell is involved). Default: `$DREB_BIN` if set, else `dreb` found on `PATH`,
   * else `start()` fails with {@link SpawnError} (see {@link resolveDrebBinary}).
   */
  command?: string;
  /** Arguments placed before `--mode rpc` (for example a script path when `command` is an interpreter). */
  commandArgs?: readonly string[];
  /** `--provider <name>`. */
  provider?: string;
  /** `--model <pattern>`. */
  model?: string;
  /** Extra arguments after `--mode rpc` (for example `--no-session`). */
  args?: readonly string[];
  /** Working directory of the agent. */
  cwd?: string;
  /** Variables merged over `process.env`; a value of `undefined` removes the variable. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Run the agent as this user id (the parent needs CAP_SETUID). Omitted from spawn when unset. */
  uid?: number;
  /** Run the agent as this group id (the parent needs CAP_SETGID). Omitted from spawn when unset. */
  gid?: number;
  /** How much of the agent's stderr to keep (the tail), in characters. Default 1 MiB. */
  stderrLimit?: number;
  /** Grace period of each stop step (stdin EOF → SIGTERM → SIGKILL), in ms. Default 2000. */
  stopGraceMs?: number;
  /**
   * Start the agent in its own process group and send the stop signals to the whole group, so that
   * processes the agent started (bash tools) cannot outlive a forced stop. Default: true on POSIX.
   */
  processGroup?: boolean;
}

/** Raised when the agent process cannot be spawned (including when no `dreb` binary can be found). */
export class SpawnError extends RpcClientError {}

/**
 * The executable the agent is started with: `command` if given (used as is), else the `DREB_BIN`
 * variable of `env` (resolved against the current directory; it must be an executable file), else the
 * first executable `dreb` in `env.PATH`. Throws {@link SpawnError} naming what was looked for.
 * `env` is the agent's environment (`process.env` with the `env` option merged over it).
 */
export function resolveDrebBinary(command: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (command !== undefined) return command;
  const fromEnv = env.DREB_BIN;
  if (fromEnv !== undefined && fromEnv !== "") {
    const resolved = path.resolve(fromEnv);
    if (!exists(resolved)) throw new SpawnError(`dreb binary not found: DREB_BIN="${fromEnv}" does not exist (${resolved})`);
    if (!isExecutableFile(resolved)) throw new SpawnError(`dreb binary not usable: DREB_BIN="${fromEnv}" is not an executable file`);
    return resolved;
  }
  const searchPath = env.PATH ?? (process.platform === "win32" ? env.Path : undefined);
  const names =
    process.platform === "win32"
      ? ["dreb", ...(env.PATHEXT ?? ".EXE;.CMD;.BAT;.COM").split(";").filter(Boolean).map((ext) => `dreb${ext}`)]
      : ["dreb"];
  for (const dir of (searchPath ?? "").split(path.delimiter)) {
    if (dir === "") continue; // An empty entry would mean the current directory: never searched implicitly.
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  const shown = searchPath === undefined ? "PATH is unset" : `PATH=${searchPath}`;
  throw new SpawnError(`dreb binary not found: set DREB_BIN or put dreb on PATH (looked for "dreb" in ${shown})`);
}

function exists(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch {
    return false;
  }
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    if (process.platform !== "win32") accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export class ProcessTransport implements RpcTransport {
  private child: ChildProcessWithoutNullStreams | undefined;
  private stderrText = "";
  private exited: Promise<void> | undefined;
  private closeReported = false;

  constructor(private readonly options: ProcessTransportOptions = {}) {}

  /** The argv the agent is started with (without the command itself). */
  argv(): string[] {
    const o = this.options;
    const argv = [...(o.commandArgs ?? []), "--mode", "rpc"];
    if (o.provider !== undefined) argv.push("--provider", o.provider);
    if (o.model !== undefined) argv.push("--model", o.model);
    argv.push(...(o.args ?? []));
    return argv;
  }

  /** The tail of everything the agent wrote to stderr so far. */
  stderr(): string {
    return this.stderrText;
  }

  /** The agent's process id, once started. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(handlers: TransportHandlers): Promise<void> {
    if (this.child) return Promise.reject(new RpcClientError("Transport already started"));
    const o = this.options;
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const [key, value] of Object.entries(o.env ?? {})) {
      if (value === undefined) delete env[key];
      else env[key] = value;
    }
    let command: string;
    try {
      command = resolveDrebBinary(o.command, env);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.closeReported = true;
      handlers.onClose({ reason, error: error instanceof Error ? error : new Error(reason) });
      return Promise.reject(error);
    }
    const child = spawn(command, this.argv(), {
      cwd: o.cwd,
      env,
      stdio: ["pipe", "pipe", "pipe"],
      shell: false,
      windowsHide: true,
      detached: this.useProcessGroup(),
      // uid / gid only when set: passing `undefined` keys would still change spawn's behaviour on some platforms.
      ...(o.uid !== undefined ? { uid: o.uid } : {}),
      ...(o.gid !== undefined ? { gid: o.gid } : {}),
    });
    this.child = child;

    const limit = o.stderrLimit ?? 1024 * 1024;
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (text: string) => {
      this.stderrText += text;
      if (this.stderrText.length > limit) this.stderrText = this.stderrText.slice(this.stderrText.length - limit);
    });

    const decoder = new JsonlDecoder();
    child.stdout.on("data", (chunk: Buffer) => {
      for (const record of decoder.push(chunk)) handlers.onRecord(record);
    });
    child.stdin.on("error", () => {
      // EPIPE after the agent exited: the exit is reported through `close`.
    });

    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));

    return new Promise((resolve, reject) => {
      let spawned = false;
      child.once("spawn", () => {
        spawned = true;
        resolve();
      });
      child.once("error", (error: Error) => {
        if (!spawned) {
          reject(new SpawnError(`Agent process failed to spawn: ${error.message}`, { cause: error }));
        }
        this.reportClose(handlers, decoder, { reason: `RPC process failed: ${error.message}`, error });
      });
      // `close` comes after the exit and after stdout has ended, so every record has been delivered.
      child.once("close", (code: number | null, signal: NodeJS.Signals | null) => {
        const reason = `RPC process exited with code ${code}, signal ${signal}`;
        this.reportClose(handlers, decoder, { reason, code, signal });
      });
    });
  }

  send(frame: string): void {
    const child = this.child;
    if (!child || this.closeReported || child.exitCode !== null || child.signalCode !== null || child.stdin.writableEnded) {
      throw new RpcClosedError(`RPC process is not running${this.stderrSuffix()}`);
    }
    child.stdin.write(frame);
  }

  /**
   * Stops the agent: closes its stdin (its signal to finish cleanly), then SIGTERM, then SIGKILL,
   * each after a grace period. Resolves once the process has exited.
   */
  async close(): Promise<void> {
    const child = this.child;
    const exited = this.exited;
    if (!child || !exited) return;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const grace = this.options.stopGraceMs ?? 2000;
    if (!child.stdin.writableEnded) child.stdin.end();
    if (await settlesWithin(exited, grace)) return;
    this.signal(child, "SIGTERM");
    if (await settlesWithin(exited, grace)) {
      // The agent is gone; nothing it started may linger after a forced stop.
      this.signal(child, "SIGKILL", true);
      return;
    }
    this.signal(child, "SIGKILL");
    await exited;
  }

  private useProcessGroup(): boolean {
    return this.options.processGroup ?? process.platform !== "win32";
  }

  /** Signals the agent, or its whole process group; `groupOnly` skips the agent itself. */
  private signal(child: ChildProcessWithoutNullStreams, signal: NodeJS.Signals, groupOnly = false): void {
    if (this.useProcessGroup() && child.pid !== undefined) {
      try {
        process.kill(-child.pid, signal);
      } catch {
        // ESRCH: the group is already empty.
      }
      return;
    }
    if (!groupOnly) child.kill(signal);
  }

  private reportClose(handlers: TransportHandlers, decoder: JsonlDecoder, info: TransportCloseInfo): void {
    if (this.closeReported) return;
    this.closeReported = true;
    for (const record of decoder.end()) handlers.onRecord(record);
    handlers.onClose({ ...info, reason: info.reason + this.stderrSuffix() });
  }

  private stderrSuffix(): string {
    const text = this.stderrText.trim();
    return text ? `. Stderr: ${text}` : "";
  }
}

/** True if `promise` settles within `ms`. */
function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void promise.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}
