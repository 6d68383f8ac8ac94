//! The session tree (`getTree`) and its RPC form (`get_tree`: `RpcTreeNode`s with previews).
//!
//! Everything here is iterative: a 5,000-deep linear session builds, serialises (with
//! [`RpcTree::to_json_string`]) and drops without recursion.

use serde::Serialize;
use serde_json::Value;

use crate::entry::{EntryKind, SessionEntry};
use crate::jsjson::{self, js_string, js_truthy};
use crate::manager::SessionManager;
use crate::message::{self, is_js_space};
use crate::store::EntryRef;
use crate::time::parse_iso_ms;

/// The tree as an arena: node `i` is `entries[i]`; roots and child lists hold node indices, children sorted by
/// timestamp (oldest first).
#[derive(Debug)]
pub struct SessionTree<'a> {
    pub entries: Vec<EntryRef<'a>>,
    /// The line number of each node's entry in the session file (line 0 is the header).
    pub lines: Vec<usize>,
    pub labels: Vec<Option<&'a str>>,
    pub roots: Vec<usize>,
    pub children: Vec<Vec<usize>>,
}

impl SessionManager {
    /// The whole tree. Roots are entries whose parent is null (or themselves) plus orphans whose parent is missing.
    pub fn tree(&self) -> SessionTree<'_> {
        // One node per indexed entry (entries without an id, or shadowed by a later duplicate id, are not nodes).
        let mut lines = Vec::with_capacity(self.by_id.len());
        let mut node_of_line = vec![usize::MAX; self.lines.len()];
        for (line_ix, meta) in self.lines.metas().enumerate() {
            if meta.is_header() {
                continue;
            }
            if let Some(id) = meta.id()
                && self.by_id.get(id) == Some(&line_ix)
            {
                node_of_line[line_ix] = lines.len();
                lines.push(line_ix);
            }
        }
        let entries: Vec<EntryRef<'_>> = lines.iter().map(|&i| self.lines.get(i)).collect();
        let labels = entries
            .iter()
            .map(|e| e.id().and_then(|id| self.labels.get(id)))
            .collect();
        let mut roots = Vec::new();
        let mut children = vec![Vec::new(); entries.len()];
        for (n, e) in entries.iter().enumerate() {
            let parent = e
                .parent_id()
                .filter(|p| Some(*p) != e.id())
                .and_then(|p| self.by_id.get(p));
            match parent {
                Some(&line_ix) => children[node_of_line[line_ix]].push(n),
                None => roots.push(n),
            }
        }
        // Stable sort by time; an unparsable timestamp keeps the key of the sibling before it (a total order that
        // leaves such entries where they were).
        for list in &mut children {
            let mut last = i64::MIN;
            let mut keyed: Vec<(i64, usize)> = list
                .iter()
                .map(|&n| {
                    if let Some(t) = parse_iso_ms(entries[n].timestamp()) {
                        last = t;
                    }
                    (last, n)
                })
                .collect();
            keyed.sort_by_key(|(t, _)| *t);
            *list = keyed.into_iter().map(|(_, n)| n).collect();
        }
        SessionTree {
            entries,
            lines,
            labels,
            roots,
            children,
        }
    }

    /// `get_tree`: `{roots, leafId}`.
    pub fn tree_dto(&self) -> RpcTree {
        let tree = self.tree();
        RpcTree {
            roots: tree.to_rpc_nodes(),
            leaf_id: self.leaf_id.clone(),
        }
    }
}

/// `get_tree` response data: `{"roots":[...],"leafId":...}`.
///
/// `Serialize` writes the JSON text iteratively and hands it to the serializer as a raw value: with
/// `serde_json::to_string`/`to_writer` a 5,000-deep tree serialises without recursion (a derived impl overflows
/// the stack there). Going through `serde_json::Value` is limited to serde_json's nesting depth of 128.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcTree {
    pub roots: Vec<RpcTreeNode>,
    pub leaf_id: Option<String>,
}

/// One tree node as the RPC sends it. Key order: id, parentId, type, role, preview, timestamp, label, children.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcTreeNode {
    pub id: String,
    pub parent_id: Option<String>,
    pub entry_type: String,
    /// Present only for `message` entries.
    pub role: Option<String>,
    pub preview: String,
    pub timestamp: String,
    pub label: Option<String>,
    pub children: Vec<RpcTreeNode>,
}

fn serialize_raw<S: serde::Serializer>(json: String, s: S) -> Result<S::Ok, S::Error> {
    let raw = serde_json::value::RawValue::from_string(json).map_err(serde::ser::Error::custom)?;
    raw.serialize(s)
}

impl Serialize for RpcTree {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_raw(self.to_json_string(), s)
    }
}

impl Serialize for RpcTreeNode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_raw(self.to_json_string(), s)
    }
}

impl RpcTreeNode {
    /// This node (and its subtree) as JSON text, written iteratively.
    pub fn to_json_string(&self) -> String {
        let mut out = String::new();
        write_nodes(std::slice::from_ref(self), &mut out);
        // Strip the array brackets around the single node.
        out.pop();
        out.remove(0);
        out
    }
}

impl Drop for RpcTreeNode {
    // Iterative, so dropping a very deep chain cannot overflow the stack.
    fn drop(&mut self) {
        let mut stack = std::mem::take(&mut self.children);
        while let Some(mut node) = stack.pop() {
            stack.append(&mut node.children);
        }
    }
}

impl SessionTree<'_> {
    fn node_dto(&self, n: usize) -> RpcTreeNode {
        let e = &*self.entries[n];
        RpcTreeNode {
            id: e.id().unwrap_or_default().to_string(),
            parent_id: e.parent_id().map(str::to_string),
            entry_type: e.entry_type().to_string(),
            role: (e.kind() == EntryKind::Message)
                .then(|| js_string(e.get("message").and_then(|m| m.get("role")))),
            preview: entry_preview(e),
            timestamp: e.timestamp().to_string(),
            label: self.labels[n].map(str::to_string),
            children: Vec::new(),
        }
    }

    /// The RPC nodes, built bottom-up without recursion.
    pub fn to_rpc_nodes(&self) -> Vec<RpcTreeNode> {
        // Pre-order of all reachable nodes, then build in reverse so children exist before their parent.
        let mut order = Vec::with_capacity(self.entries.len());
        let mut stack: Vec<usize> = self.roots.iter().rev().copied().collect();
        while let Some(n) = stack.pop() {
            order.push(n);
            stack.extend(self.children[n].iter().rev().copied());
        }
        let mut built: Vec<Option<RpcTreeNode>> = (0..self.entries.len()).map(|_| None).collect();
        for &n in order.iter().rev() {
            let mut dto = self.node_dto(n);
            dto.children = self.children[n]
                .iter()
                .filter_map(|&c| built[c].take())
                .collect();
            built[n] = Some(dto);
        }
        self.roots.iter().filter_map(|&r| built[r].take()).collect()
    }
}

impl RpcTree {
    /// Serialises as the reference does (`{"roots":[...],"leafId":...}`), iteratively.
    pub fn to_json_string(&self) -> String {
        let mut out = String::from("{\"roots\":");
        write_nodes(&self.roots, &mut out);
        out.push_str(",\"leafId\":");
        match &self.leaf_id {
            Some(id) => jsjson::write_string(id, &mut out),
            None => out.push_str("null"),
        }
        out.push('}');
        out
    }
}

/// Writes a node list as a JSON array without recursion.
pub fn write_nodes(nodes: &[RpcTreeNode], out: &mut String) {
    // Each frame: the sibling list being written and the index of the next sibling.
    let mut stack: Vec<(&[RpcTreeNode], usize)> = vec![(nodes, 0)];
    out.push('[');
    while let Some((list, i)) = stack.pop() {
        if i == list.len() {
            out.push(']');
            if !stack.is_empty() {
                out.push('}'); // closes the node that owned this children list
            }
            continue;
        }
        if i > 0 {
            out.push(',');
        }
        let n = &list[i];
        stack.push((list, i + 1));
        out.push_str("{\"id\":");
        jsjson::write_string(&n.id, out);
        out.push_str(",\"parentId\":");
        match &n.parent_id {
            Some(p) => jsjson::write_string(p, out),
            None => out.push_str("null"),
        }
        out.push_str(",\"type\":");
        jsjson::write_string(&n.entry_type, out);
        if let Some(r) = &n.role {
            out.push_str(",\"role\":");
            jsjson::write_string(r, out);
        }
        out.push_str(",\"preview\":");
        jsjson::write_string(&n.preview, out);
        out.push_str(",\"timestamp\":");
        jsjson::write_string(&n.timestamp, out);
        if let Some(l) = &n.label {
            out.push_str(",\"label\":");
            jsjson::write_string(l, out);
        }
        out.push_str(",\"children\":[");
        stack.push((&n.children, 0));
    }
}

/// Collapses whitespace runs to one space, trims, and keeps the first 200 UTF-16 code units (a surrogate pair
/// split by the cut is dropped whole, since Rust strings cannot hold half of it).
pub fn normalize_preview(text: &str) -> String {
    // Collapse, trim and cut in one pass, stopping as soon as 200 units are taken.
    let mut out = String::with_capacity(text.len().min(800));
    let mut units = 0;
    let mut in_space = false;
    for c in text.chars() {
        if is_js_space(c) {
            in_space = true;
            continue;
        }
        if in_space && !out.is_empty() {
            if units + 1 > 200 {
                break;
            }
            out.push(' ');
            units += 1;
        }
        in_space = false;
        let w = c.len_utf16();
        if units + w > 200 {
            break;
        }
        out.push(c);
        units += w;
    }
    out
}

/// `[tag: text]`-style previews use JavaScript string conversion for odd values (`undefined`, numbers).
fn field_str(e: &SessionEntry, key: &str) -> String {
    js_string(e.get(key))
}

/// The preview text of an entry (`get_tree`).
pub fn entry_preview(e: &SessionEntry) -> String {
    let text = match e.kind() {
        EntryKind::Message => {
            static NULL: Value = Value::Null;
            let msg = e.get("message").unwrap_or(&NULL);
            let role = js_string(msg.get("role"));
            match role.as_str() {
                "user" => message::content_text(msg.get("content"), ""),
                "assistant" => {
                    let t = normalize_preview(&message::content_text(msg.get("content"), ""));
                    if !t.is_empty() {
                        return t;
                    }
                    if message::stop_reason(msg) == Some("aborted") {
                        return "(aborted)".to_string();
                    }
                    if js_truthy(msg.get("errorMessage")) {
                        js_string(msg.get("errorMessage"))
                    } else {
                        return "(no content)".to_string();
                    }
                }
                "toolResult" => {
                    let name = match msg.get("toolName") {
                        None | Some(Value::Null) => "tool".to_string(),
                        v => js_string(v),
                    };
                    format!("[{name}]")
                }
                "bashExecution" => {
                    let cmd = match msg.get("command") {
                        None | Some(Value::Null) => String::new(),
                        v => js_string(v),
                    };
                    format!("[bash]: {cmd}")
                }
                other => format!("[{other}]"),
            }
        }
        EntryKind::CustomMessage => {
            format!(
                "[{}]: {}",
                field_str(e, "customType"),
                message::content_text(e.get("content"), "")
            )
        }
        EntryKind::Compaction => {
            let tokens = e
                .get("tokensBefore")
                .and_then(Value::as_f64)
                .map_or(f64::NAN, |t| t / 1000.0);
            // Math.round rounds halves up.
            let k = (tokens + 0.5).floor();
            let k = dreb_js::number_to_string(k);
            format!("[compaction: {k}k tokens]")
        }
        EntryKind::BranchSummary => format!("[branch summary]: {}", field_str(e, "summary")),
        EntryKind::ModelChange => format!("[model: {}]", field_str(e, "modelId")),
        EntryKind::ThinkingLevelChange => format!("[thinking: {}]", field_str(e, "thinkingLevel")),
        EntryKind::Custom => format!("[custom: {}]", field_str(e, "customType")),
        EntryKind::Label => {
            let label = match e.get("label") {
                None | Some(Value::Null) => "(cleared)".to_string(),
                v => js_string(v),
            };
            format!("[label: {label}]")
        }
        EntryKind::SessionInfo => {
            let name = if js_truthy(e.get("name")) {
                field_str(e, "name")
            } else {
                "empty".to_string()
            };
            format!("[title: {name}]")
        }
        EntryKind::Session | EntryKind::Unknown => format!("[{}]", js_string(e.get("type"))),
    };
    normalize_preview(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(v: Value) -> SessionEntry {
        SessionEntry::from_map(v.as_object().unwrap().clone())
    }

    #[test]
    fn preview_rules() {
        let cases = vec![
            (
                json!({"type":"message","message":{"role":"user","content":"  a\n\n b\t"}}),
                "a b",
            ),
            (
                json!({"type":"message","message":{"role":"assistant","content":[],"stopReason":"aborted"}}),
                "(aborted)",
            ),
            (
                json!({"type":"message","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"boom  x"}}),
                "boom x",
            ),
            (
                json!({"type":"message","message":{"role":"assistant","content":[],"stopReason":"stop"}}),
                "(no content)",
            ),
            (
                json!({"type":"message","message":{"role":"toolResult","toolName":"read"}}),
                "[read]",
            ),
            (
                json!({"type":"message","message":{"role":"toolResult"}}),
                "[tool]",
            ),
            (
                json!({"type":"message","message":{"role":"bashExecution","command":"ls -la"}}),
                "[bash]: ls -la",
            ),
            (
                json!({"type":"message","message":{"role":"custom"}}),
                "[custom]",
            ),
            (
                json!({"type":"custom_message","customType":"note","content":[{"type":"text","text":"hi"}]}),
                "[note]: hi",
            ),
            (
                json!({"type":"compaction","tokensBefore":102}),
                "[compaction: 0k tokens]",
            ),
            (
                json!({"type":"compaction","tokensBefore":1500}),
                "[compaction: 2k tokens]",
            ),
            (
                json!({"type":"branch_summary","summary":"s\nx"}),
                "[branch summary]: s x",
            ),
            (json!({"type":"model_change","modelId":"m"}), "[model: m]"),
            (
                json!({"type":"thinking_level_change","thinkingLevel":"off"}),
                "[thinking: off]",
            ),
            (json!({"type":"custom","customType":"k"}), "[custom: k]"),
            (json!({"type":"label","label":"x"}), "[label: x]"),
            (json!({"type":"label"}), "[label: (cleared)]"),
            (json!({"type":"session_info","name":""}), "[title: empty]"),
            (json!({"type":"session_info","name":"N"}), "[title: N]"),
            (json!({"type":"future_thing"}), "[future_thing]"),
        ];
        for (v, want) in cases {
            assert_eq!(entry_preview(&entry(v.clone())), want, "{v}");
        }
    }

    #[test]
    fn preview_cuts_at_200_utf16_units() {
        let long = "é".repeat(300);
        assert_eq!(normalize_preview(&long).chars().count(), 200);
        let emoji = format!("{}{}", "a".repeat(199), "😀");
        assert_eq!(normalize_preview(&emoji), "a".repeat(199));
        // A collapsed space at the cut stays, as with JavaScript's slice.
        let spaced = format!("{} \n b", "a".repeat(199));
        assert_eq!(normalize_preview(&spaced), format!("{} ", "a".repeat(199)));
        assert_eq!(normalize_preview("  \t "), "");
    }
}
