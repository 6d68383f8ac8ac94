//! Path arguments as the model writes them: surrounding quotes, a leading `@`, `~`, unicode spaces, relative
//! to the session cwd; and Node-style filesystem error texts (`ENOENT: no such file or directory, open 'p'`).

use std::io;
use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

use dreb_paths::home_dir;

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

fn strip_surrounding_quotes(s: &str) -> &str {
    if s.len() >= 2
        && ((s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\'')))
    {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

/// Strip quotes and `@`, normalise unicode spaces, expand `~` / `~/`.
pub fn expand_path(input: &str) -> String {
    let s = strip_surrounding_quotes(input);
    let s = s.strip_prefix('@').unwrap_or(s);
    let s: String = s
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    if s == "~" {
        return home_dir().to_string_lossy().into_owned();
    }
    if let Some(rest) = s.strip_prefix("~/") {
        return format!(
            "{}/{}",
            home_dir().to_string_lossy().trim_end_matches('/'),
            rest
        );
    }
    s
}

/// Lexically normalise `.` and `..` (like Node's `path.resolve`), without touching the filesystem.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        PathBuf::from("/")
    } else {
        out
    }
}

/// Resolve a model-supplied path against `cwd`.
pub fn resolve_to_cwd(input: &str, cwd: &Path) -> PathBuf {
    let expanded = expand_path(input);
    let p = Path::new(&expanded);
    if p.is_absolute() {
        normalize_lexically(p)
    } else {
        normalize_lexically(&cwd.join(p))
    }
}

/// Like [`resolve_to_cwd`], then tries the macOS spellings of screenshot names (narrow no-break space before
/// AM/PM, NFD, curly apostrophe) when the plain path does not exist.
pub fn resolve_read_path(input: &str, cwd: &Path) -> PathBuf {
    let resolved = resolve_to_cwd(input, cwd);
    if resolved.exists() {
        return resolved;
    }
    let s = resolved.to_string_lossy().into_owned();
    let am_pm = s
        .replace(" AM.", "\u{202F}AM.")
        .replace(" PM.", "\u{202F}PM.");
    let nfd: String = s.nfd().collect();
    let curly = s.replace('\'', "\u{2019}");
    let nfd_curly = nfd.replace('\'', "\u{2019}");
    for candidate in [am_pm, nfd, curly, nfd_curly] {
        if candidate != s && Path::new(&candidate).exists() {
            return PathBuf::from(candidate);
        }
    }
    resolved
}

/// The errno name of an I/O error (`ENOENT`), when it has one.
pub fn errno_code(err: &io::Error) -> Option<String> {
    err.raw_os_error()
        .map(|n| format!("{:?}", nix::errno::Errno::from_raw(n)))
}

fn errno_description(code: &str) -> &'static str {
    match code {
        "ENOENT" => "no such file or directory",
        "EACCES" => "permission denied",
        "EISDIR" => "illegal operation on a directory",
        "ENOTDIR" => "not a directory",
        "EPERM" => "operation not permitted",
        "EEXIST" => "file already exists",
        "ELOOP" => "too many symbolic links encountered",
        "ENAMETOOLONG" => "name too long",
        "EROFS" => "read-only file system",
        "ENOSPC" => "no space left on device",
        _ => "",
    }
}

/// A filesystem error worded like Node's (`ENOENT: no such file or directory, open '/x'`), which is what the
/// reference's tools surface to the model.
pub fn node_fs_error(err: &io::Error, syscall: &str, path: &Path) -> String {
    match errno_code(err) {
        Some(code) => {
            let desc = errno_description(&code);
            let desc = if desc.is_empty() {
                err.kind().to_string()
            } else {
                desc.to_string()
            };
            // Node names the path for open/access/mkdir/scandir/stat but not for read/write on a descriptor.
            if matches!(syscall, "read" | "write") {
                format!("{code}: {desc}, {syscall}")
            } else {
                format!("{code}: {desc}, {syscall} '{}'", path.display())
            }
        }
        None => format!("{err}, {syscall} '{}'", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_quotes_at_and_home() {
        let home = home_dir()
            .to_string_lossy()
            .trim_end_matches('/')
            .to_string();
        assert_eq!(expand_path("\"a b\""), "a b");
        assert_eq!(expand_path("@src/x"), "src/x");
        assert_eq!(expand_path("~/x"), format!("{home}/x"));
        assert_eq!(expand_path("a\u{00A0}b"), "a b");
    }

    #[test]
    fn resolves_relative_and_dots() {
        assert_eq!(
            resolve_to_cwd("../b/./c", Path::new("/w/a")),
            PathBuf::from("/w/b/c")
        );
        assert_eq!(
            resolve_to_cwd("/abs", Path::new("/w")),
            PathBuf::from("/abs")
        );
    }

    #[test]
    fn node_style_error() {
        let err = io::Error::from_raw_os_error(2);
        assert_eq!(
            node_fs_error(&err, "open", Path::new("/x")),
            "ENOENT: no such file or directory, open '/x'"
        );
    }
}
