/**
 * Run to completion: the result of one prompt's run, as a host wants it at the end (the final text, why it
 * stopped, the usage, the messages and the events), like the Codex SDK's `run()`.
 */
import type { AgentMessage, AssistantMessage, RpcEvent, StopReason, Usage } from "./generated/types.js";

/** What {@link summarizeRun} (and `DrebClient.run`) returns; `E` is the client's event type. */
export interface RunResult<E = RpcEvent> {
  /** The text blocks of the run's last assistant reply, joined; `""` when there is none. */
  finalText: string;
  /** Why the last reply ended; `undefined` when the run produced no reply. */
  stopReason: StopReason | undefined;
  /** The last reply's error, when it failed or was aborted. */
  errorMessage: string | undefined;
  /** Tokens and cost summed over every reply of the run (retries included). */
  usage: Usage;
  /** The messages new in the run (the `agent_end` messages, every run of a retry chain in order). */
  messages: AgentMessage[];
  /** Every event of the run, in order. */
  events: E[];
}

function emptyUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

/** The {@link RunResult} of a run's events (as `promptAndWait` collects them). */
export function summarizeRun<E extends { type: string }>(events: E[]): RunResult<E> {
  const messages: AgentMessage[] = [];
  for (const event of events) {
    // Structural: works for any client generated from a spec with this protocol's `agent_end`.
    const end = event as unknown as { type: string; messages?: AgentMessage[] };
    if (end.type === "agent_end" && Array.isArray(end.messages)) messages.push(...end.messages);
  }
  const replies = messages.filter((m): m is AssistantMessage => m.role === "assistant");
  const usage = emptyUsage();
  for (const reply of replies) {
    usage.input += reply.usage.input;
    usage.output += reply.usage.output;
    usage.cacheRead += reply.usage.cacheRead;
    usage.cacheWrite += reply.usage.cacheWrite;
    usage.totalTokens += reply.usage.totalTokens;
    usage.cost.input += reply.usage.cost.input;
    usage.cost.output += reply.usage.cost.output;
    usage.cost.cacheRead += reply.usage.cost.cacheRead;
    usage.cost.cacheWrite += reply.usage.cost.cacheWrite;
    usage.cost.total += reply.usage.cost.total;
  }
  const last = replies.at(-1);
  return {
    finalText: last ? last.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("") : "",
    stopReason: last?.stopReason,
    errorMessage: last?.errorMessage,
    usage,
    messages,
    events,
  };
}
