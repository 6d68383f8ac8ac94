//! One line of a session file: the header (`type: "session"`) or one of the nine v3 entry types.
//!
//! Every line is kept as its JSON object (key order preserved), so fields we do not model, unknown entry types and
//! whatever future versions add are written back verbatim. Typed accessors read the fields the crate needs;
//! constructors build new entries with the reference's exact key order.

use serde_json::{Map, Value};

use crate::jsjson;

pub type JsonMap = Map<String, Value>;

/// The session file format version this crate writes.
pub const CURRENT_SESSION_VERSION: u64 = 3;

/// The entry types of format v3 (plus the header and anything else).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    Session,
    Message,
    ThinkingLevelChange,
    ModelChange,
    Compaction,
    BranchSummary,
    Custom,
    CustomMessage,
    Label,
    SessionInfo,
    /// A type this version does not know; kept and written back unchanged.
    Unknown,
}

impl EntryKind {
    pub fn from_type(t: &str) -> Self {
        match t {
            "session" => Self::Session,
            "message" => Self::Message,
            "thinking_level_change" => Self::ThinkingLevelChange,
            "model_change" => Self::ModelChange,
            "compaction" => Self::Compaction,
            "branch_summary" => Self::BranchSummary,
            "custom" => Self::Custom,
            "custom_message" => Self::CustomMessage,
            "label" => Self::Label,
            "session_info" => Self::SessionInfo,
            _ => Self::Unknown,
        }
    }
}

/// A session file line (header or entry) as an ordered JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEntry {
    fields: JsonMap,
}

impl SessionEntry {
    pub fn from_map(fields: JsonMap) -> Self {
        Self { fields }
    }

    pub fn as_map(&self) -> &JsonMap {
        &self.fields
    }

    pub fn into_map(self) -> JsonMap {
        self.fields
    }

    pub(crate) fn map_mut(&mut self) -> &mut JsonMap {
        &mut self.fields
    }

    /// The entry as a JSON value (a copy).
    pub fn to_value(&self) -> Value {
        Value::Object(self.fields.clone())
    }

    /// The line as the reference writes it (`JSON.stringify`, no newline).
    pub fn to_json_line(&self) -> String {
        let mut out = String::with_capacity(256);
        self.write_json(&mut out);
        out
    }

    /// Appends the line (without newline) to `out`, without cloning the entry.
    pub fn write_json(&self, out: &mut String) {
        // Borrow-friendly writer: serialise the map fields one by one.
        out.push('{');
        for (i, (k, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            jsjson::write_string(k, out);
            out.push(':');
            jsjson::write_value(v, out);
        }
        out.push('}');
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    /// The `type` string (empty when missing).
    pub fn entry_type(&self) -> &str {
        self.str_field("type").unwrap_or("")
    }

    pub fn kind(&self) -> EntryKind {
        EntryKind::from_type(self.entry_type())
    }

    pub fn is_header(&self) -> bool {
        self.entry_type() == "session"
    }

    pub fn id(&self) -> Option<&str> {
        self.str_field("id")
    }

    /// `parentId`; `None` for a root (`null`) or a missing/non-string value.
    pub fn parent_id(&self) -> Option<&str> {
        self.str_field("parentId")
    }

    /// The ISO `timestamp` (empty when missing).
    pub fn timestamp(&self) -> &str {
        self.str_field("timestamp").unwrap_or("")
    }

    /// `message` of a `message` entry.
    pub fn message(&self) -> Option<&Value> {
        if self.kind() == EntryKind::Message {
            self.fields.get("message")
        } else {
            None
        }
    }

    /// `message.role` of a `message` entry.
    pub fn message_role(&self) -> Option<&str> {
        self.message()
            .and_then(|m| m.get("role"))
            .and_then(Value::as_str)
    }

    // ---- header accessors ----

    /// Header `version` (v1 files have none).
    pub fn version(&self) -> Option<u64> {
        self.fields.get("version").and_then(Value::as_u64)
    }

    pub fn cwd(&self) -> Option<&str> {
        self.str_field("cwd")
    }

    pub fn parent_session(&self) -> Option<&str> {
        self.str_field("parentSession")
    }

    pub fn agent_type(&self) -> Option<&str> {
        self.str_field("agentType")
    }
}

// ---- constructors (exact key order of the reference) ----

fn base(kind: &str, id: &str, parent_id: Option<&str>, timestamp: &str) -> JsonMap {
    let mut m = JsonMap::new();
    m.insert("type".into(), kind.into());
    m.insert("id".into(), id.into());
    m.insert(
        "parentId".into(),
        parent_id.map_or(Value::Null, Value::from),
    );
    m.insert("timestamp".into(), timestamp.into());
    m
}

/// The v3 header: `{type, version, id, timestamp, cwd, parentSession?}`.
pub fn new_header(
    id: &str,
    timestamp: &str,
    cwd: &str,
    parent_session: Option<&str>,
) -> SessionEntry {
    let mut m = JsonMap::new();
    m.insert("type".into(), "session".into());
    m.insert("version".into(), CURRENT_SESSION_VERSION.into());
    m.insert("id".into(), id.into());
    m.insert("timestamp".into(), timestamp.into());
    m.insert("cwd".into(), cwd.into());
    if let Some(p) = parent_session {
        m.insert("parentSession".into(), p.into());
    }
    SessionEntry::from_map(m)
}

pub fn new_message(
    id: &str,
    parent_id: Option<&str>,
    timestamp: &str,
    message: Value,
) -> SessionEntry {
    let mut m = base("message", id, parent_id, timestamp);
    m.insert("message".into(), message);
    SessionEntry::from_map(m)
}

pub fn new_thinking_level_change(
    id: &str,
    parent_id: Option<&str>,
    timestamp: &str,
    level: &str,
) -> SessionEntry {
    let mut m = base("thinking_level_change", id, parent_id, timestamp);
    m.insert("thinkingLevel".into(), level.into());
    SessionEntry::from_map(m)
}

pub fn new_model_change(
    id: &str,
    parent_id: Option<&str>,
    timestamp: &str,
    provider: &str,
    model_id: &str,
) -> SessionEntry {
    let mut m = base("model_change", id, parent_id, timestamp);
    m.insert("provider".into(), provider.into());
    m.insert("modelId".into(), model_id.into());
    SessionEntry::from_map(m)
}

/// What a compaction entry records (besides the tree fields).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionData {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    /// dreb writes `{readFiles, modifiedFiles}`; extensions may write anything.
    pub details: Option<Value>,
    /// `Some(true)` when an extension produced it; dreb writes `Some(false)`.
    pub from_hook: Option<bool>,
}

pub fn new_compaction(
    id: &str,
    parent_id: Option<&str>,
    timestamp: &str,
    data: CompactionData,
) -> SessionEntry {
    let mut m = base("compaction", id, parent_id, timestamp);
    m.insert("summary".into(), data.summary.into());
    m.insert("firstKeptEntryId".into(), data.first_kept_entry_id.into());
    m.insert("tokensBefore".into(), data.tokens_before.into());
    if let Some(d) = data.details {
        m.insert("details".into(), d);
    }
    if let Some(h) = data.from_hook {
        m.insert("fromHook".into(), h.into());
    }
    SessionEntry::from_map(m)
}

/// `branch_summary`: `fromId` is the entry the branch returns to, or `"root"`.
pub fn new_branch_summary(
    id: &str,
    parent_id: Option<&str>,
    timestamp: &str,
    summary: &str,
    details: Option<Value>,
    from_hook: Option<bool>,
) -> SessionEntry {
    let mut m = base("branch_summary", id, parent_id, timestamp);
    m.insert("fromId".into(), parent_id.unwrap_or("root").into());
    m.insert("summary".into(), summary.into());
    if let Some(d) = details {
        m.insert("details".into(), d);
    }
    if let Some(h) = from_hook {
        m.insert("fromHook".into(), h.into());
    }
    SessionEntry::from_map(m)
}

/// `custom` (extension state). The reference writes `customType` and `data` before the tree fields.
pub fn new_custom(
    id: &str,
    parent_id: Option<&str>,
    timestamp: &str,
    custom_type: &str,
    data: Option<Value>,
) -> SessionEntry {
    let mut m = JsonMap::new();
    m.insert("type".into(), "custom".into());
    m.insert("customType".into(), custom_type.into());
    if let Some(d) = data {
        m.insert("data".into(), d);
    }
    m.insert("id".into(), id.into());
    m.insert(
        "parentId".into(),
        parent_id.map_or(Value::Null, Value::from),
    );
    m.insert("timestamp".into(), timestamp.into());
    SessionEntry::from_map(m)
}

/// `custom_message` (sent to the LLM as a user message). Payload fields come before the tree fields, as in the
/// reference.
pub fn new_custom_message(
    id: &str,
    parent_id: Option<&str>,
    timestamp: &str,
    custom_type: &str,
    content: Value,
    display: bool,
    details: Option<Value>,
) -> SessionEntry {
    let mut m = JsonMap::new();
    m.insert("type".into(), "custom_message".into());
    m.insert("customType".into(), custom_type.into());
    m.insert("content".into(), content);
    m.insert("display".into(), display.into());
    if let Some(d) = details {
        m.insert("details".into(), d);
    }
    m.insert("id".into(), id.into());
    m.insert(
        "parentId".into(),
        parent_id.map_or(Value::Null, Value::from),
    );
    m.insert("timestamp".into(), timestamp.into());
    SessionEntry::from_map(m)
}

/// `label`: a missing label clears the target's label.
pub fn new_label(
    id: &str,
    parent_id: Option<&str>,
    timestamp: &str,
    target_id: &str,
    label: Option<&str>,
) -> SessionEntry {
    let mut m = base("label", id, parent_id, timestamp);
    m.insert("targetId".into(), target_id.into());
    if let Some(l) = label {
        m.insert("label".into(), l.into());
    }
    SessionEntry::from_map(m)
}

pub fn new_session_info(
    id: &str,
    parent_id: Option<&str>,
    timestamp: &str,
    name: &str,
) -> SessionEntry {
    let mut m = base("session_info", id, parent_id, timestamp);
    m.insert("name".into(), name.into());
    SessionEntry::from_map(m)
}

/// A fresh entry id: the first 8 hex digits of a random UUID, re-drawn on collision (full UUID after 100 tries).
pub fn generate_id(exists: impl Fn(&str) -> bool) -> String {
    for _ in 0..100 {
        let mut id = uuid::Uuid::new_v4().simple().to_string();
        id.truncate(8);
        if !exists(&id) {
            return id;
        }
    }
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn constructors_use_reference_key_order() {
        let ts = "2026-12-01T06:29:04.331Z";
        assert_eq!(
            new_header("u", ts, "/p", None).to_json_line(),
            r#"{"type":"session","version":3,"id":"u","timestamp":"2026-12-01T06:29:04.331Z","cwd":"/p"}"#
        );
        let c = new_compaction(
            "c11fc5fa",
            Some("2a423e29"),
            ts,
            CompactionData {
                summary: "S".into(),
                first_kept_entry_id: "c9367ade".into(),
                tokens_before: 102,
                details: Some(json!({"readFiles": [], "modifiedFiles": []})),
                from_hook: Some(false),
            },
        );
        assert_eq!(
            c.to_json_line(),
            r#"{"type":"compaction","id":"c11fc5fa","parentId":"2a423e29","timestamp":"2026-12-01T06:29:04.331Z","summary":"S","firstKeptEntryId":"c9367ade","tokensBefore":102,"details":{"readFiles":[],"modifiedFiles":[]},"fromHook":false}"#
        );
        assert_eq!(
            new_custom("x", None, ts, "k", None).to_json_line(),
            r#"{"type":"custom","customType":"k","id":"x","parentId":null,"timestamp":"2026-12-01T06:29:04.331Z"}"#
        );
        assert_eq!(
            new_custom_message("x", Some("p"), ts, "k", json!("hi"), true, None).to_json_line(),
            r#"{"type":"custom_message","customType":"k","content":"hi","display":true,"id":"x","parentId":"p","timestamp":"2026-12-01T06:29:04.331Z"}"#
        );
        assert_eq!(
            new_label("x", Some("p"), ts, "t", None).to_json_line(),
            r#"{"type":"label","id":"x","parentId":"p","timestamp":"2026-12-01T06:29:04.331Z","targetId":"t"}"#
        );
        let b = new_branch_summary("x", None, ts, "s", None, Some(false));
        assert_eq!(b.str_field("fromId"), Some("root"));
    }

    #[test]
    fn ids_are_eight_hex_digits_and_avoid_collisions() {
        let id = generate_id(|_| false);
        assert_eq!(id.len(), 8);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        let full = generate_id(|_| true);
        assert_eq!(full.len(), 36);
    }
}
