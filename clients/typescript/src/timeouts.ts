/**
 * Default response timeouts, per command.
 *
 * Most commands answer at once, so they get {@link DEFAULT_REQUEST_TIMEOUT_MS}. A few can make an LLM
 * call or run a process before answering (`compact`, `bash`, `navigate_tree` with `summarize`, the buddy
 * commands): they get {@link LONG_COMMAND_TIMEOUT_MS}, the 5 minutes the reference client gives
 * `navigateTree`. Waiting for a run to end (`waitForIdle`, `promptAndWait`) has no default timeout.
 */

/** Default timeout of a command that answers at once, in ms. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** Default timeout of a command that can make an LLM call or run a process before answering, in ms. */
export const LONG_COMMAND_TIMEOUT_MS = 300_000;

/** Commands (wire names) whose default timeout is not {@link DEFAULT_REQUEST_TIMEOUT_MS}. */
export const COMMAND_TIMEOUTS_MS: Readonly<Record<string, number>> = Object.freeze({
  /** Aborts the run, then an LLM call summarises the conversation. */
  compact: LONG_COMMAND_TIMEOUT_MS,
  /** Runs a shell command to completion. */
  bash: LONG_COMMAND_TIMEOUT_MS,
  /** With `summarize`, an LLM call summarises the abandoned branch. */
  navigate_tree: LONG_COMMAND_TIMEOUT_MS,
  /** An LLM call creates the buddy. */
  buddy_hatch: LONG_COMMAND_TIMEOUT_MS,
  /** An LLM call rerolls the buddy. */
  buddy_reroll: LONG_COMMAND_TIMEOUT_MS,
});

/** The built-in default timeout of `command` (a wire name), in ms. */
export function defaultTimeoutFor(command: string): number {
  return Object.hasOwn(COMMAND_TIMEOUTS_MS, command) ? COMMAND_TIMEOUTS_MS[command]! : DEFAULT_REQUEST_TIMEOUT_MS;
}
