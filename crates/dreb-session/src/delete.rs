//! `delete_session`: move a session file to the trash (freedesktop.org home trash), else unlink it.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Result, SessionError};
use crate::paths::resolve;

/// How the file went away (`{method: "trash" | "unlink"}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeleteMethod {
    Trash,
    Unlink,
}

/// Where deleted sessions go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trash {
    /// A freedesktop.org trash directory (holding `files/` and `info/`).
    Dir(PathBuf),
    /// No trash: always unlink.
    None,
}

impl Trash {
    /// The user's home trash: `$XDG_DATA_HOME/Trash`, else `~/.local/share/Trash`.
    pub fn from_env() -> Self {
        let data_home = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("share"))
            });
        match data_home {
            Some(d) => Self::Dir(d.join("Trash")),
            None => Self::None,
        }
    }
}

/// Deletes a session file: it must end in `.jsonl`, exist, and not be `active` (compared after lexical
/// resolution). Trash first, then unlink.
pub fn delete_session(input: &str, active: Option<&Path>, trash: &Trash) -> Result<DeleteMethod> {
    let resolved = resolve(Path::new(input));
    if !resolved.to_string_lossy().ends_with(".jsonl") {
        return Err(SessionError::NotASessionFile(input.to_string()));
    }
    if active.is_some_and(|a| resolve(a) == resolved) {
        return Err(SessionError::DeleteActiveSession);
    }
    if !resolved.exists() {
        return Err(SessionError::SessionFileMissing(input.to_string()));
    }
    let trash_error = match trash {
        Trash::Dir(dir) => match move_to_trash(&resolved, dir) {
            Ok(()) => return Ok(DeleteMethod::Trash),
            Err(e) => Some(e.to_string()),
        },
        Trash::None => None,
    };
    if !resolved.exists() {
        return Ok(DeleteMethod::Trash);
    }
    match fs::remove_file(&resolved) {
        Ok(()) => Ok(DeleteMethod::Unlink),
        Err(e) => {
            let msg = node_style_error(&e, "unlink", &resolved);
            Err(SessionError::DeleteFailed(match trash_error {
                Some(t) => format!("{msg} (trash: {})", t.chars().take(200).collect::<String>()),
                None => msg,
            }))
        }
    }
}

/// Node's `fs` error text (`ENOENT: no such file or directory, unlink '/p'`) for the common errors.
fn node_style_error(e: &io::Error, syscall: &str, path: &Path) -> String {
    let (code, text) = match e.raw_os_error() {
        Some(1) => ("EPERM", "operation not permitted"),
        Some(2) => ("ENOENT", "no such file or directory"),
        Some(13) => ("EACCES", "permission denied"),
        Some(16) => ("EBUSY", "resource busy or locked"),
        Some(21) => ("EISDIR", "illegal operation on a directory"),
        Some(30) => ("EROFS", "read-only file system"),
        _ => return e.to_string(),
    };
    format!("{code}: {text}, {syscall} '{}'", path.display())
}

/// Moves `file` into the freedesktop.org trash `trash_dir` with a `.trashinfo` record. Fails (leaving the file in
/// place) when the trash is on another filesystem.
pub fn move_to_trash(file: &Path, trash_dir: &Path) -> io::Result<()> {
    let files = trash_dir.join("files");
    let info = trash_dir.join("info");
    fs::create_dir_all(&files)?;
    fs::create_dir_all(&info)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(trash_dir, fs::Permissions::from_mode(0o700));
    }
    let base = file
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?
        .to_string_lossy()
        .into_owned();
    let record = format!(
        "[Trash Info]\nPath={}\nDeletionDate={}\n",
        percent_encode_path(&file.to_string_lossy()),
        chrono::Local::now().format("%Y-%m-%dT%H:%M:%S")
    );
    // Reserve a unique name by creating its info file exclusively (the spec's atomic step).
    for n in 1..10_000u32 {
        let name = if n == 1 {
            base.clone()
        } else {
            format!("{base}.{n}")
        };
        let info_path = info.join(format!("{name}.trashinfo"));
        let mut f = match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&info_path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        if files.join(&name).exists() {
            drop(f);
            let _ = fs::remove_file(&info_path);
            continue;
        }
        let result = f
            .write_all(record.as_bytes())
            .and_then(|()| fs::rename(file, files.join(&name)));
        if result.is_err() {
            let _ = fs::remove_file(&info_path);
        }
        return result;
    }
    Err(io::Error::other("no free name in trash"))
}

/// RFC 2396 escaping of a path for `.trashinfo` (`/` and unreserved characters kept).
fn percent_encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_encoding() {
        assert_eq!(percent_encode_path("/a b/c%.jsonl"), "/a%20b/c%25.jsonl");
        assert_eq!(percent_encode_path("/é"), "/%C3%A9");
    }
}
