//! Upgrades v1 and v2 session files to v3 in memory (the caller rewrites the file).
//!
//! - v1 → v2: entries get 8-hex ids and a linear `parentId` chain; a compaction's `firstKeptEntryIndex` (an index
//!   into the file's lines) becomes `firstKeptEntryId`.
//! - v2 → v3: message role `hookMessage` becomes `custom`.
//!
//! New keys are appended and existing ones updated in place, like the reference's property assignments, so the
//! rewritten lines have the same key order as the reference would produce.

use std::collections::HashSet;

use serde_json::Value;

use crate::entry::{CURRENT_SESSION_VERSION, SessionEntry, generate_id};

/// The format version a header declares (a header without one is v1).
fn header_version(header: Option<&SessionEntry>) -> f64 {
    header
        .map(|h| match h.get("version") {
            None | Some(Value::Null) => 1.0,
            Some(v) => v.as_f64().unwrap_or(1.0),
        })
        .unwrap_or(1.0)
}

/// Whether a file whose first header is `header` needs [`migrate_to_current`].
pub fn needs_migration(header: Option<&SessionEntry>) -> bool {
    header_version(header) < CURRENT_SESSION_VERSION as f64
}

/// Migrates `lines` (header + entries) in place. Returns true when anything was migrated.
pub fn migrate_to_current(lines: &mut [SessionEntry]) -> bool {
    let version = header_version(lines.iter().find(|e| e.is_header()));
    if version >= CURRENT_SESSION_VERSION as f64 {
        return false;
    }
    if version < 2.0 {
        migrate_v1_to_v2(lines);
    }
    if version < 3.0 {
        migrate_v2_to_v3(lines);
    }
    true
}

fn migrate_v1_to_v2(lines: &mut [SessionEntry]) {
    let mut used: HashSet<String> = HashSet::new();
    let mut prev: Option<String> = None;
    for i in 0..lines.len() {
        if lines[i].is_header() {
            lines[i].map_mut().insert("version".into(), 2.into());
            continue;
        }
        let id = generate_id(|c| used.contains(c));
        used.insert(id.clone());
        {
            let m = lines[i].map_mut();
            m.insert("id".into(), id.clone().into());
            m.insert(
                "parentId".into(),
                prev.take().map_or(Value::Null, Value::from),
            );
        }
        prev = Some(id);

        if lines[i].entry_type() == "compaction" {
            let index = lines[i].get("firstKeptEntryIndex").cloned();
            if let Some(index) = index.filter(Value::is_number) {
                let target_id = index
                    .as_u64()
                    .and_then(|ix| lines.get(ix as usize))
                    .filter(|t| !t.is_header())
                    .and_then(|t| t.id().map(str::to_string));
                let m = lines[i].map_mut();
                if let Some(t) = target_id {
                    m.insert("firstKeptEntryId".into(), t.into());
                }
                m.shift_remove("firstKeptEntryIndex");
            }
        }
    }
}

fn migrate_v2_to_v3(lines: &mut [SessionEntry]) {
    for line in lines.iter_mut() {
        if line.is_header() {
            line.map_mut().insert("version".into(), 3.into());
            continue;
        }
        if line.entry_type() == "message"
            && let Some(Value::Object(msg)) = line.map_mut().get_mut("message")
            && msg.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            msg.insert("role".into(), "custom".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lines: &[&str]) -> Vec<SessionEntry> {
        lines
            .iter()
            .map(|l| SessionEntry::from_map(serde_json::from_str(l).unwrap()))
            .collect()
    }

    #[test]
    fn v1_gets_ids_chain_and_first_kept_id() {
        let mut lines = parse(&[
            r#"{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
            r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}"#,
            r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"hookMessage","content":"h","timestamp":2}}"#,
            r#"{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}"#,
        ]);
        assert!(migrate_to_current(&mut lines));
        assert_eq!(
            lines[0].to_json_line(),
            r#"{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p","version":3}"#
        );
        let (a, b, c) = (&lines[1], &lines[2], &lines[3]);
        assert_eq!(a.parent_id(), None);
        assert_eq!(a.get("parentId"), Some(&Value::Null));
        assert_eq!(b.parent_id(), a.id());
        assert_eq!(c.parent_id(), b.id());
        assert_eq!(b.message_role(), Some("custom"));
        assert_eq!(c.str_field("firstKeptEntryId"), b.id());
        assert!(c.get("firstKeptEntryIndex").is_none());
        let keys: Vec<_> = c.as_map().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "type",
                "timestamp",
                "summary",
                "tokensBefore",
                "id",
                "parentId",
                "firstKeptEntryId"
            ]
        );
    }

    #[test]
    fn v3_is_left_alone() {
        let mut lines =
            parse(&[r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/p"}"#]);
        assert!(!migrate_to_current(&mut lines));
    }
}
