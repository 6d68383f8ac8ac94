//! One settings file on disk: read + migrate, key-level edits, and the locked, atomic
//! read-modify-write used by every setter.
//!
//! The on-disk format is the reference's: a JSON object written with 2-space indentation and
//! no trailing newline. Keys already in the file keep their position; new keys are appended in
//! the order they were set; removed keys disappear.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::file_lock;

/// A failure reading or writing one settings file. The message names the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFileError {
    pub path: PathBuf,
    pub message: String,
}

impl fmt::Display for SettingsFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SettingsFileError {}

impl SettingsFileError {
    fn new(path: &Path, message: String) -> Self {
        Self {
            path: path.to_path_buf(),
            message,
        }
    }
}

/// One key-level change to a settings file. Paths address nested objects
/// (`["compaction", "enabled"]`); missing or non-object intermediates become `{}`.
#[derive(Debug, Clone, PartialEq)]
pub enum SettingsEdit {
    Set(Vec<String>, Value),
    Remove(Vec<String>),
}

impl SettingsEdit {
    pub fn set<const N: usize>(path: [&str; N], value: impl Into<Value>) -> Self {
        Self::Set(path.iter().map(|s| s.to_string()).collect(), value.into())
    }

    pub fn remove<const N: usize>(path: [&str; N]) -> Self {
        Self::Remove(path.iter().map(|s| s.to_string()).collect())
    }

    fn top_key(&self) -> Option<&str> {
        match self {
            Self::Set(p, _) | Self::Remove(p) => p.first().map(String::as_str),
        }
    }
}

/// Read a settings file. `Ok(None)` when it does not exist; an empty file is `{}`.
pub fn read_settings_file(path: &Path) -> Result<Option<Map<String, Value>>, SettingsFileError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(SettingsFileError::new(
                path,
                format!("Could not read settings file {}: {err}", path.display()),
            ));
        }
    };
    parse_settings(path, &bytes).map(Some)
}

/// [`read_settings_file`], but a file that does not parse is read once more under the write
/// lock before the failure is reported: a writer that rewrites in place (the TypeScript dreb
/// does) can be caught mid-write by an unlocked read.
pub fn read_settings_file_consistent(
    path: &Path,
) -> Result<Option<Map<String, Value>>, SettingsFileError> {
    match read_settings_file(path) {
        Err(first) if path.is_file() => match file_lock::acquire(path) {
            Ok(_lock) => read_settings_file(path),
            Err(_) => Err(first),
        },
        other => other,
    }
}

fn parse_settings(path: &Path, bytes: &[u8]) -> Result<Map<String, Value>, SettingsFileError> {
    if bytes.is_empty() {
        return Ok(Map::new());
    }
    let text = String::from_utf8_lossy(bytes);
    let value: Value = serde_json::from_str(&text).map_err(|err| {
        SettingsFileError::new(
            path,
            format!("Invalid JSON in settings file {}: {err}", path.display()),
        )
    })?;
    match value {
        Value::Object(mut map) => {
            migrate(&mut map);
            Ok(map)
        }
        _ => Err(SettingsFileError::new(
            path,
            format!(
                "Settings file {} must contain a JSON object",
                path.display()
            ),
        )),
    }
}

/// Load-time migrations of legacy layouts (applied to what is written back too).
pub fn migrate(map: &mut Map<String, Value>) {
    // queueMode -> steeringMode
    if map.contains_key("queueMode") && !map.contains_key("steeringMode") {
        let v = map.shift_remove("queueMode").unwrap_or(Value::Null);
        map.insert("steeringMode".into(), v);
    }
    // websockets boolean -> transport enum
    if !map.contains_key("transport")
        && let Some(Value::Bool(ws)) = map.get("websockets")
    {
        let transport = if *ws { "websocket" } else { "sse" };
        map.shift_remove("websockets");
        map.insert("transport".into(), transport.into());
    }
    // skills object {enableSkillCommands, customDirectories} -> skills array
    if let Some(Value::Object(skills)) = map.get("skills").cloned() {
        if let Some(enable) = skills.get("enableSkillCommands")
            && !map.contains_key("enableSkillCommands")
        {
            map.insert("enableSkillCommands".into(), enable.clone());
        }
        match skills.get("customDirectories") {
            Some(Value::Array(dirs)) if !dirs.is_empty() => {
                map.insert("skills".into(), Value::Array(dirs.clone()));
            }
            _ => {
                map.shift_remove("skills");
            }
        }
    }
}

/// Apply edits in order. When `sanitize_context` is set and an edit touched `context`, the
/// trust fields are normalised fail-closed so a malformed sibling cannot disable the policy.
pub fn apply_edits(map: &mut Map<String, Value>, edits: &[SettingsEdit]) {
    for edit in edits {
        match edit {
            SettingsEdit::Set(path, value) => set_path(map, path, value.clone()),
            SettingsEdit::Remove(path) => remove_path(map, path),
        }
    }
}

fn set_path(map: &mut Map<String, Value>, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = map;
    for key in parents {
        let slot = current
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        current = slot.as_object_mut().expect("object just ensured");
    }
    current.insert(last.clone(), value);
}

fn remove_path(map: &mut Map<String, Value>, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = map;
    for key in parents {
        match current.get_mut(key) {
            Some(Value::Object(next)) => current = next,
            _ => return,
        }
    }
    current.shift_remove(last);
}

/// Normalise the two trust fields of the global `context` slice to fail-closed values.
pub fn sanitize_context_slice(map: &mut Map<String, Value>) {
    let Some(Value::Object(context)) = map.get_mut("context") else {
        return;
    };
    if context
        .get("autoLoadNested")
        .is_some_and(|v| !v.is_boolean())
    {
        context.insert("autoLoadNested".into(), Value::Bool(false));
    }
    let bad_folders = context.get("trustedFolders").is_some_and(|v| match v {
        Value::Array(items) => items.iter().any(|i| !i.is_string()),
        _ => true,
    });
    if bad_folders {
        context.insert("trustedFolders".into(), Value::Array(Vec::new()));
    }
}

/// Serialise like `JSON.stringify(settings, null, 2)`.
pub fn to_reference_json(map: &Map<String, Value>) -> String {
    dreb_js::json::to_string_pretty(&Value::Object(map.clone()))
}

/// Locked read-modify-write: re-read the file, apply `edits`, write atomically. A file that
/// fails to parse is never overwritten. Returns the content now on disk.
pub fn update_settings_file(
    path: &Path,
    edits: &[SettingsEdit],
    sanitize_context: bool,
) -> Result<Map<String, Value>, SettingsFileError> {
    let _lock = file_lock::acquire(path).map_err(|err| {
        SettingsFileError::new(
            path,
            format!("Could not lock settings file {}: {err}", path.display()),
        )
    })?;
    let mut map = read_settings_file(path)?.unwrap_or_default();
    apply_edits(&mut map, edits);
    if sanitize_context && edits.iter().any(|e| e.top_key() == Some("context")) {
        sanitize_context_slice(&mut map);
    }
    write_atomic(path, to_reference_json(&map).as_bytes()).map_err(|err| {
        SettingsFileError::new(
            path,
            format!("Could not write settings file {}: {err}", path.display()),
        )
    })?;
    Ok(map)
}

/// Write via a temp file in the same directory and rename over the target, keeping the
/// existing file's permissions. A symlinked settings file is updated at its target.
fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let target = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    };
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let existing_permissions = fs::metadata(&target).ok().map(|m| m.permissions());
    let mut tmp = tempfile::Builder::new()
        .prefix(".settings.json.")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    match existing_permissions {
        Some(perms) => fs::set_permissions(tmp.path(), perms)?,
        None => set_default_permissions(tmp.path())?,
    }
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(unix)]
fn set_default_permissions(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // What a plain create under the usual 022 umask gives (the reference's writeFileSync).
    fs::set_permissions(path, fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn set_default_permissions(_path: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn migrations() {
        let mut m = obj(
            json!({"queueMode": "all", "websockets": true, "skills": {"enableSkillCommands": false, "customDirectories": ["/s"]}}),
        );
        migrate(&mut m);
        assert_eq!(
            Value::Object(m),
            json!({"skills": ["/s"], "steeringMode": "all", "transport": "websocket", "enableSkillCommands": false})
        );
        let mut m = obj(
            json!({"queueMode": "all", "steeringMode": "one-at-a-time", "skills": {"customDirectories": []}, "transport": "sse", "websockets": false}),
        );
        migrate(&mut m);
        assert_eq!(
            Value::Object(m),
            json!({"queueMode": "all", "steeringMode": "one-at-a-time", "transport": "sse", "websockets": false})
        );
    }

    #[test]
    fn edits_keep_positions_and_append_new_keys() {
        let mut m = obj(json!({"a": 1, "compaction": {"keepRecentTokens": 8}, "z": true}));
        apply_edits(
            &mut m,
            &[
                SettingsEdit::set(["compaction", "enabled"], false),
                SettingsEdit::set(["a"], 2),
                SettingsEdit::set(["new"], "x"),
                SettingsEdit::remove(["z"]),
                SettingsEdit::remove(["missing", "deep"]),
            ],
        );
        assert_eq!(
            to_reference_json(&m),
            "{\n  \"a\": 2,\n  \"compaction\": {\n    \"keepRecentTokens\": 8,\n    \"enabled\": false\n  },\n  \"new\": \"x\"\n}"
        );
    }

    #[test]
    fn formatting_matches_json_stringify() {
        let m = obj(json!({"e": [], "o": {}, "n": 2.0, "s": "a\u{7f}/é\n"}));
        assert_eq!(
            to_reference_json(&m),
            "{\n  \"e\": [],\n  \"o\": {},\n  \"n\": 2,\n  \"s\": \"a\u{7f}/é\\n\"\n}"
        );
    }

    #[test]
    fn context_sanitising() {
        let mut m =
            obj(json!({"context": {"autoLoadNested": "yes", "trustedFolders": [1], "x": 1}}));
        sanitize_context_slice(&mut m);
        assert_eq!(
            Value::Object(m),
            json!({"context": {"autoLoadNested": false, "trustedFolders": [], "x": 1}})
        );
    }
}
