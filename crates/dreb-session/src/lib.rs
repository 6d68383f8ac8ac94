//! Session tree files (v3 JSONL), listing, forking, navigation and HTML export.
//!
//! A session is an append-only tree of entries stored one JSON object per line, in exactly the format the
//! TypeScript reference writes, so users can switch implementations and keep their sessions:
//!
//! ```text
//! <agentDir>/sessions/--<encoded cwd>--/<ISO timestamp with : and . as ->_<uuid>.jsonl
//! {"type":"session","version":3,"id":"<uuid>","timestamp":"<ISO>","cwd":"<cwd>"}
//! {"type":"message","id":"1a2b3c4d","parentId":null,"timestamp":"<ISO>","message":{...}}
//! ```
//!
//! Entry payloads (agent messages, extension data) are kept as ordered JSON so nothing is lost on a load/save
//! round trip. An opened file's lines stay in the file until something reads them ([`store`]: an index of
//! offsets and the few fields the tree needs), so a large session costs little memory beyond the agent's own
//! copy of its messages. [`SessionManager`] owns one session; [`listing`] and [`delete`] work on files.
//!
//! Deliberate differences from the reference (files stay interchangeable):
//! - The file on disk is always an exact prefix of the in-memory lines. The reference can write a second header
//!   and duplicate entries when a re-opened or recovered file gets its first assistant message; we never do.
//! - A torn last line (writer killed mid-append) is skipped on load like any malformed line, and the next append
//!   starts on a fresh line instead of gluing onto the torn bytes (which would corrupt the new entry too).
//! - Whole-file rewrites (migration, header changes, fork) go through a temp file and a rename.
//! - A file without a valid header is replaced by a fresh session as in the reference, but its old bytes are kept
//!   beside it as `<name>.corrupt`.
//! - `--continue` reads a header line of any length (the reference only looks at the first 512 bytes).
//! - Deleting uses the freedesktop.org home trash directly instead of spawning a `trash` CLI.
//! - The HTML export is our own template rendered server-side (no vendored JS libraries, no data blob).

pub mod branching;
pub mod context;
pub mod delete;
pub mod entry;
pub mod error;
pub mod export_html;
/// `JSON.stringify` and `String(x)` as the reference computes them (kept under its old name).
pub use dreb_js::json as jsjson;
pub mod json_scan;
pub mod jsonl;
pub mod listing;
pub mod manager;
pub mod message;
pub mod migrate;
pub mod paths;
pub mod store;
pub mod time;
pub mod tree;

pub use branching::{
    BranchSummaryInput, BranchSummarySource, ForkMessage, ForkResult, ForkRole, NavigateOptions,
    NavigateResult,
};
pub use context::{ContextMessage, ModelRef, SessionContext};
pub use delete::{DeleteMethod, Trash, delete_session};
pub use entry::{CURRENT_SESSION_VERSION, CompactionData, EntryKind, SessionEntry};
pub use error::{Result, SessionError};
pub use export_html::{HtmlExportOptions, ToolInfo};
pub use listing::{
    ListOptions, ResolvedSession, RpcSessionInfo, SessionInfo, list_all_sessions, list_sessions,
    resolve_session_arg,
};
pub use manager::{NewSessionOptions, SessionManager, WriteHealth, WriteObserver};
pub use store::{EntryRef, MessageLine};
pub use tree::{RpcTree, RpcTreeNode};
