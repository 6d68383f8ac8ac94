//! Session listing (`list_sessions`, `list_all_sessions`, `--continue`).
//!
//! Each file is scanned once, but lines are only probed for the few fields a listing shows: the header, `message`
//! entries (role, timestamp and — only until the first user text is found — content) and `session_info` names.
//! Other entry types are recognised from their first bytes and skipped without parsing. Files are read on several
//! threads.

use std::borrow::Cow;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::json_scan::{self, raw_string};
use crate::message::{content_text, js_trim};
use crate::time::{iso_from_ms, parse_iso_ms};

/// One listed session (the reference's `SessionInfo`).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub path: PathBuf,
    pub id: String,
    /// Empty for old sessions without a cwd.
    pub cwd: String,
    pub name: Option<String>,
    pub parent_session_path: Option<String>,
    /// Header timestamp (else file mtime), ms since the epoch.
    pub created_ms: i64,
    /// Latest user/assistant message time (else header time, else mtime), ms since the epoch.
    pub modified_ms: i64,
    pub message_count: u64,
    /// First user text, or `(no messages)`.
    pub first_message: String,
    /// Every user/assistant text joined by spaces (only with [`ListOptions::all_messages_text`]).
    pub all_messages_text: Option<String>,
}

pub use dreb_types::RpcSessionInfo;

impl SessionInfo {
    /// The RPC form: `{path, id, cwd, name?, created, modified, messageCount, firstMessage}`.
    pub fn to_rpc(&self) -> RpcSessionInfo {
        RpcSessionInfo {
            path: self.path.to_string_lossy().into_owned(),
            id: self.id.clone(),
            cwd: self.cwd.clone(),
            name: self.name.clone(),
            created: iso_from_ms(self.created_ms).unwrap_or_default(),
            modified: iso_from_ms(self.modified_ms).unwrap_or_default(),
            message_count: i64::try_from(self.message_count).unwrap_or(i64::MAX),
            first_message: self.first_message.clone(),
        }
    }
}

/// What to compute beyond the RPC fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListOptions {
    /// Also collect `all_messages_text` (for search UIs; costs a full content parse of every message).
    pub all_messages_text: bool,
}

/// `list_sessions`: every `*.jsonl` directly in `dir`, most recently modified first. A missing or unreadable dir
/// gives an empty list; invalid files are skipped.
pub fn list_sessions(dir: &Path, options: ListOptions) -> Vec<SessionInfo> {
    let files = match jsonl_files(dir) {
        Ok(f) => f,
        Err(e) => {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot list session dir");
            }
            return Vec::new();
        }
    };
    let mut sessions = build_infos(files, options);
    sort_sessions(&mut sessions);
    sessions
}

/// `list_all_sessions`: every session file one level below `sessions_root` (`<agentDir>/sessions`). A missing root
/// gives an empty list; other I/O errors are returned.
pub fn list_all_sessions(
    sessions_root: &Path,
    options: ListOptions,
) -> io::Result<Vec<SessionInfo>> {
    let read = match fs::read_dir(sessions_root) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in read {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            files.extend(jsonl_files(&entry.path())?);
        }
    }
    let mut sessions = build_infos(files, options);
    sort_sessions(&mut sessions);
    Ok(sessions)
}

fn jsonl_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().ends_with(".jsonl") {
            out.push(entry.path());
        }
    }
    Ok(out)
}

fn sort_sessions(sessions: &mut [SessionInfo]) {
    sessions.sort_by(|a, b| {
        b.modified_ms
            .cmp(&a.modified_ms)
            .then_with(|| a.path.cmp(&b.path))
    });
}

fn build_infos(files: Vec<PathBuf>, options: ListOptions) -> Vec<SessionInfo> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 8);
    if files.len() < 64 || threads == 1 {
        return files
            .iter()
            .filter_map(|f| build_session_info(f, options))
            .collect();
    }
    let chunk = files.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .filter_map(|f| build_session_info(f, options))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// Field present in the JSON (even if `null`), kept raw.
#[derive(Default)]
struct Present<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Present<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|r| Present(Some(r)))
    }
}

#[derive(Deserialize)]
struct HeaderProbe<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    timestamp: Option<Value>,
    #[serde(default)]
    cwd: Option<Value>,
    #[serde(rename = "parentSession", default)]
    parent_session: Option<Value>,
}

/// What a listing needs from one entry line (raw JSON slices).
struct LineFacts<'a> {
    kind: Option<Cow<'a, str>>,
    timestamp: Option<&'a [u8]>,
    name: Option<&'a [u8]>,
    message: Option<MessageFacts<'a>>,
}

struct MessageFacts<'a> {
    role: Option<&'a [u8]>,
    timestamp: Option<&'a [u8]>,
    /// `Some` when the key is present (even if `null`).
    content: Option<&'a [u8]>,
}

/// Extracts the facts with the structural scanner, falling back to serde for lines it cannot read.
fn line_facts(line: &[u8]) -> Option<LineFacts<'_>> {
    match json_scan::object_fields_nested(line, b"message") {
        Some((fields, nested)) => {
            let mut facts = LineFacts {
                kind: None,
                timestamp: None,
                name: None,
                message: None,
            };
            // Later duplicates win, as with JSON.parse.
            for (k, v) in fields {
                match k {
                    b"type" => facts.kind = raw_string(v),
                    b"timestamp" => facts.timestamp = Some(v),
                    b"name" => facts.name = Some(v),
                    b"message" => {
                        facts.message = nested.clone().map(|mf| {
                            let mut m = MessageFacts {
                                role: None,
                                timestamp: None,
                                content: None,
                            };
                            for (k, v) in mf {
                                match k {
                                    b"role" => m.role = Some(v),
                                    b"timestamp" => m.timestamp = Some(v),
                                    b"content" => m.content = Some(v),
                                    _ => {}
                                }
                            }
                            m
                        })
                    }
                    _ => {}
                }
            }
            Some(facts)
        }
        None => {
            let probe = serde_json::from_slice::<LineProbe>(line).ok()?;
            Some(LineFacts {
                kind: probe.kind,
                timestamp: probe.timestamp.map(|r| r.get().as_bytes()),
                name: probe.name.map(|r| r.get().as_bytes()),
                message: probe.message.map(|m| MessageFacts {
                    role: m.role.map(|r| r.get().as_bytes()),
                    timestamp: m.timestamp.map(|r| r.get().as_bytes()),
                    content: m.content.0.map(|r| r.get().as_bytes()),
                }),
            })
        }
    }
}

/// Serde fallback for lines the scanner rejects (most of which are malformed and fail here too).
#[derive(Deserialize)]
struct LineProbe<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    message: Option<MessageProbe<'a>>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct MessageProbe<'a> {
    #[serde(borrow, default)]
    role: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Present<'a>,
}

/// Types a listing never needs, recognised by the reference's line prefix.
const SKIPPABLE_PREFIXES: &[&[u8]] = &[
    b"{\"type\":\"model_change\"",
    b"{\"type\":\"thinking_level_change\"",
    b"{\"type\":\"label\"",
    b"{\"type\":\"compaction\"",
    b"{\"type\":\"branch_summary\"",
    b"{\"type\":\"custom\"",
    b"{\"type\":\"custom_message\"",
];

fn mtime_ms(meta: &fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64)
}

/// Reads one session file for a listing; `None` when it is not a valid session.
pub fn build_session_info(path: &Path, options: ListOptions) -> Option<SessionInfo> {
    let mut file = fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut data = Vec::with_capacity(meta.len() as usize + 1);
    file.read_to_end(&mut data).ok()?;
    info_from_bytes(path, &data, mtime_ms(&meta), options)
}

fn info_from_bytes(
    path: &Path,
    data: &[u8],
    mtime: i64,
    options: ListOptions,
) -> Option<SessionInfo> {
    let data = data.strip_prefix("\u{feff}".as_bytes()).unwrap_or(data);

    let mut lines = data
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace));
    // The first parsable line must be the header.
    let header = lines
        .by_ref()
        .find_map(|l| serde_json::from_slice::<HeaderProbe>(l).ok())?;
    if header.kind.as_deref() != Some("session") {
        return None;
    }
    let id = header.id.as_ref().and_then(Value::as_str)?.to_string();
    let header_ms = header
        .timestamp
        .as_ref()
        .and_then(Value::as_str)
        .and_then(parse_iso_ms);

    let mut name: Option<String> = None;
    let mut message_count = 0u64;
    let mut first_message = String::new();
    let mut all_text: Vec<String> = Vec::new();
    let mut last_activity: Option<i64> = None;

    for line in lines {
        if SKIPPABLE_PREFIXES.iter().any(|p| line.starts_with(p)) {
            continue;
        }
        let Some(facts) = line_facts(line) else {
            continue;
        };
        match facts.kind.as_deref() {
            Some("session_info") => {
                name = facts
                    .name
                    .and_then(raw_string)
                    .map(|n| js_trim(&n).to_string())
                    .filter(|n| !n.is_empty());
            }
            Some("message") => {
                message_count += 1;
                let Some(msg) = facts.message else { continue };
                let Some(content) = msg.content else { continue };
                let role = msg.role.and_then(raw_string);
                let role = role.as_deref();
                if role != Some("user") && role != Some("assistant") {
                    continue;
                }
                // Latest activity: the message's ms timestamp, else the entry's ISO timestamp.
                let t = match msg.timestamp {
                    Some(n) if n.first().is_some_and(|c| *c == b'-' || c.is_ascii_digit()) => {
                        std::str::from_utf8(n)
                            .ok()
                            .and_then(|n| n.parse::<f64>().ok())
                            .map(|f| f as i64)
                    }
                    _ => facts
                        .timestamp
                        .and_then(raw_string)
                        .and_then(|ts| parse_iso_ms(&ts)),
                };
                if let Some(t) = t {
                    last_activity = Some(last_activity.map_or(t.max(0), |l| l.max(t)));
                }
                let want_first = first_message.is_empty() && role == Some("user");
                if want_first || options.all_messages_text {
                    let content: Value = serde_json::from_slice(content).unwrap_or(Value::Null);
                    let text = content_text(Some(&content), " ");
                    if text.is_empty() {
                        continue;
                    }
                    if want_first {
                        first_message = text.clone();
                    }
                    if options.all_messages_text {
                        all_text.push(text);
                    }
                }
            }
            _ => {}
        }
    }

    let modified_ms = match last_activity {
        Some(t) if t > 0 => t,
        _ => header_ms.unwrap_or(mtime),
    };
    Some(SessionInfo {
        path: path.to_path_buf(),
        id,
        cwd: header
            .cwd
            .as_ref()
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        name,
        parent_session_path: header
            .parent_session
            .as_ref()
            .and_then(Value::as_str)
            .map(str::to_string),
        created_ms: header_ms.unwrap_or(mtime),
        modified_ms,
        message_count,
        first_message: if first_message.is_empty() {
            "(no messages)".to_string()
        } else {
            first_message
        },
        all_messages_text: options.all_messages_text.then(|| all_text.join(" ")),
    })
}

/// True when the first line of `path` is a session header with a string id.
pub fn is_valid_session_file(path: &Path) -> bool {
    let Ok(mut f) = fs::File::open(path) else {
        return false;
    };
    // Read up to the first newline (headers are short; cap the read).
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while buf.len() < 1 << 20 {
        match f.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if chunk[..n].contains(&b'\n') {
                    break;
                }
            }
        }
    }
    let first = buf.split(|b| *b == b'\n').next().unwrap_or_default();
    serde_json::from_slice::<HeaderProbe>(first).is_ok_and(|h| {
        h.kind.as_deref() == Some("session") && h.id.as_ref().is_some_and(Value::is_string)
    })
}

/// `--continue`: the valid session file in `dir` with the newest mtime.
pub fn find_most_recent_session(dir: &Path) -> Option<PathBuf> {
    let files = jsonl_files(dir).ok()?;
    files
        .into_iter()
        .filter(|p| is_valid_session_file(p))
        .filter_map(|p| fs::metadata(&p).ok().map(|m| (mtime_ms(&m), p)))
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
        .map(|(_, p)| p)
}

/// Where a `--session <arg>` / `--fork <arg>` argument points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolvedSession {
    /// The argument looks like a path (contains `/` or `\`, or ends in `.jsonl`): used as is.
    Path(PathBuf),
    /// The most recent session of this cwd whose id starts with the argument.
    Local(PathBuf),
    /// The most recent session of another cwd whose id starts with the argument.
    Global {
        path: PathBuf,
        cwd: String,
    },
    NotFound,
}

/// Resolves a session argument: a path, else an id prefix searched in `session_dir`, then under `sessions_root`.
pub fn resolve_session_arg(
    arg: &str,
    session_dir: &Path,
    sessions_root: &Path,
) -> io::Result<ResolvedSession> {
    if arg.contains('/') || arg.contains('\\') || arg.ends_with(".jsonl") {
        return Ok(ResolvedSession::Path(PathBuf::from(arg)));
    }
    if let Some(s) = list_sessions(session_dir, ListOptions::default())
        .into_iter()
        .find(|s| s.id.starts_with(arg))
    {
        return Ok(ResolvedSession::Local(s.path));
    }
    Ok(list_all_sessions(sessions_root, ListOptions::default())?
        .into_iter()
        .find(|s| s.id.starts_with(arg))
        .map_or(ResolvedSession::NotFound, |s| ResolvedSession::Global {
            path: s.path,
            cwd: s.cwd,
        }))
}
