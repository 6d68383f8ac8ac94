//! `delete_session`: move a session file to the platform's trash (the `trash` crate), else unlink it.
//!
//! The reference runs the `trash` CLI and unlinks when that fails. The `trash` crate does what that CLI does: on
//! Linux and the BSDs the freedesktop.org trash (the home trash, `$XDG_DATA_HOME/Trash` else
//! `~/.local/share/Trash`, for files on its file system; the volume's `.Trash/$uid` or `.Trash-$uid` for files on
//! another), on macOS the Finder's Trash, on Windows the Recycle Bin.

use std::fs;
use std::io;
use std::path::Path;

use crate::error::{Result, SessionError};
use crate::paths::resolve;

/// How the file went away (`{method: "trash" | "unlink"}`).
pub use dreb_types::DeleteMethod;

/// Where deleted sessions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trash {
    /// The platform's trash.
    System,
    /// No trash: always unlink.
    None,
}

impl Trash {
    /// The platform's trash; on Linux its location follows `XDG_DATA_HOME` and `HOME` as the process sees them.
    pub fn from_env() -> Self {
        Self::System
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
        Trash::System => match trash::delete(&resolved) {
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
