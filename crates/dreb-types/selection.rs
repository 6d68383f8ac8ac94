// The shared data types of `protocol/rpc.yaml` that `dreb-types` defines, as roots: the selection is their
// closure (every type they refer to), in spec order. `include!`d by the build scripts of `dreb-types` (which
// generates them) and `dreb-protocol` (which re-exports them instead of generating them again), so both always
// agree. Adding a root moves a type (and what it refers to) into `dreb-types`; `tests/selection.rs` lists the
// result.

/// Root type names of the selection.
const DATA_TYPE_ROOTS: &[&str] = &[
    // Scalars and the lists of values.
    "ThinkingLevel",
    "QueueMode",
    "StreamingBehavior",
    "Transport",
    "Timestamp",
    "IsoTimestamp",
    "TaskStatus",
    "CompactionReason",
    "TreeEntryType",
    // Models (with their API, input kinds, auth mode and cost).
    "Model",
    "ModelRef",
    // Messages, with their content blocks, usage and cost, and stop reason.
    "AgentMessage",
    // The three roles of an LLM context (a subset of AgentMessage's).
    "LlmMessage",
    // The streaming deltas of an assistant message.
    "AssistantMessageEvent",
    // Results the lower crates produce.
    "ToolResultPayload",
    "ContextUsage",
    "CompactionResult",
    "BashResult",
    "SessionTokenStats",
    "RpcSessionTask",
    "AskQuestion",
    // What the session crate answers: listed sessions, fork targets, how a file was deleted.
    "RpcSessionInfo",
    "ForkMessage",
    "DeleteMethod",
];
