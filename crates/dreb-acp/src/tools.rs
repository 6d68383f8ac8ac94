//! What an editor is told about one of our tool calls: its ACP kind, a title, the files it touches and, for
//! `edit` / `write`, the change as a diff. Derived from the tool's name and arguments only.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{Diff, ToolCallContent, ToolCallLocation, ToolKind};
use serde_json::{Map, Value};

pub fn kind(tool: &str) -> ToolKind {
    match tool {
        "read" => ToolKind::Read,
        "edit" | "write" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        "grep" | "find" | "ls" | "search" => ToolKind::Search,
        "tasks_update" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

fn arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// One line, at most 120 characters: editors show titles in a list.
fn short(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    let mut out: String = first.chars().take(120).collect();
    if out.len() < first.len() || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

pub fn title(tool: &str, args: &Map<String, Value>) -> String {
    let path = arg(args, "path");
    match (tool, path) {
        ("bash", _) => arg(args, "command").map_or_else(|| "bash".into(), short),
        ("read", Some(p)) => format!("Read {p}"),
        ("edit", Some(p)) => format!("Edit {p}"),
        ("write", Some(p)) => format!("Write {p}"),
        ("ls", p) => format!("List {}", p.unwrap_or(".")),
        ("grep", _) | ("find", _) => match arg(args, "pattern") {
            Some(pattern) => format!("{tool} {}", short(pattern)),
            None => tool.into(),
        },
        ("search", _) => match arg(args, "query") {
            Some(query) => format!("search {}", short(query)),
            None => tool.into(),
        },
        _ => tool.into(),
    }
}

/// Relative tool paths are the session cwd's; ACP wants absolute ones.
fn absolute(cwd: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if path.is_empty() || path == "." {
        cwd.to_path_buf()
    } else if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

pub fn locations(
    tool: &str,
    args: &Map<String, Value>,
    cwd: &Path,
    line: Option<u32>,
) -> Vec<ToolCallLocation> {
    match (tool, arg(args, "path")) {
        ("read" | "edit" | "write" | "ls" | "grep" | "find", Some(p)) => {
            let line = line.or_else(|| {
                (tool == "read")
                    .then(|| args.get("offset").and_then(Value::as_u64))
                    .flatten()
                    .and_then(|n| u32::try_from(n).ok())
            });
            vec![ToolCallLocation::new(absolute(cwd, p)).line(line)]
        }
        _ => Vec::new(),
    }
}

/// The change an `edit` or `write` makes: `edit` as the replaced snippet and its replacement, `write` as the whole
/// file, once `prior` (what the file held before the call ran, `None` for a new file) is known.
pub fn diff(
    tool: &str,
    args: &Map<String, Value>,
    cwd: &Path,
    prior: Option<&Option<String>>,
) -> Option<ToolCallContent> {
    let path = absolute(cwd, arg(args, "path")?);
    match tool {
        "edit" => Some(
            Diff::new(path, arg(args, "newText")?)
                .old_text(arg(args, "oldText")?.to_string())
                .into(),
        ),
        "write" => Some(
            Diff::new(path, arg(args, "content")?)
                .old_text(prior?.clone())
                .into(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn titles_and_kinds() {
        assert_eq!(
            title("bash", &args(json!({"command": "ls -la\necho x"}))),
            "ls -la…"
        );
        assert_eq!(
            title("edit", &args(json!({"path": "src/a.rs"}))),
            "Edit src/a.rs"
        );
        assert_eq!(kind("edit"), ToolKind::Edit);
        assert_eq!(kind("subagent"), ToolKind::Other);
        assert_eq!(kind("search"), ToolKind::Search);
        assert_eq!(
            title("search", &args(json!({"query": "where is auth handled"}))),
            "search where is auth handled"
        );
    }

    #[test]
    fn edit_diff_and_location_are_absolute() {
        let a = args(json!({"path": "a.txt", "oldText": "x", "newText": "y"}));
        let cwd = Path::new("/w");
        let Some(ToolCallContent::Diff(d)) = diff("edit", &a, cwd, None) else {
            panic!("no diff")
        };
        assert_eq!(d.path, Path::new("/w/a.txt"));
        assert_eq!(d.old_text.as_deref(), Some("x"));
        assert_eq!(d.new_text, "y");
        let loc = locations("edit", &a, cwd, Some(3));
        assert_eq!(loc[0].path, Path::new("/w/a.txt"));
        assert_eq!(loc[0].line, Some(3));
        assert!(diff("bash", &a, cwd, None).is_none());
        let w = args(json!({"path": "/w/n.txt", "content": "new"}));
        // A write's diff waits for the file's previous content; a new file has none.
        assert!(diff("write", &w, cwd, None).is_none());
        let Some(ToolCallContent::Diff(d)) = diff("write", &w, cwd, Some(&None)) else {
            panic!("no diff")
        };
        assert_eq!((d.old_text, d.new_text.as_str()), (None, "new"));
        let old = Some("before".to_string());
        let Some(ToolCallContent::Diff(d)) = diff("write", &w, cwd, Some(&old)) else {
            panic!("no diff")
        };
        assert_eq!(d.old_text.as_deref(), Some("before"));
    }
}
