//! Finding the files to index: a walk of the project that honours `.gitignore` files, skips dependency and build
//! directories and oversized or empty files, plus the tool-visible `.dreb/` subdirectories and the global memory
//! directory (which bypass `.gitignore`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::types::FileType;

/// Files above this size are not indexed.
pub const MAX_FILE_SIZE: u64 = 1024 * 1024;

/// Directory names never entered.
const SKIP_DIRS: [&str; 13] = [
    "node_modules",
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".tox",
    ".venv",
    "dist",
    "build",
    ".next",
    ".nuxt",
    "coverage",
    ".cache",
];

/// `.dreb/` subdirectories that stay hidden from the tools (the index itself, the agent dir, secrets).
const HIDDEN_DREB_SUBDIRS: [&str; 3] = ["index", "agent", "secrets"];

/// Prefix of paths from a memory directory outside the project.
pub const MEMORY_PREFIX: &str = "~memory/";

/// A file to index.
#[derive(Debug, Clone, PartialEq)]
pub struct ScannedFile {
    /// Relative to the project root with `/` separators, or `~memory/<path>` for the global memory directory.
    pub file_path: String,
    pub file_type: FileType,
    /// Modification time in milliseconds since the epoch.
    pub mtime: f64,
}

/// Where the scan looks.
#[derive(Debug, Clone)]
pub struct ScanRoots {
    pub project_root: PathBuf,
    /// The user's home directory: a project root equal to it is scanned shallowly (top-level files only).
    pub home: Option<PathBuf>,
    /// `~/.dreb/memory`, indexed under [`MEMORY_PREFIX`] when it exists.
    pub global_memory_dir: Option<PathBuf>,
}

impl ScanRoots {
    /// The absolute path of an indexed file.
    pub fn absolute(&self, file_path: &str) -> PathBuf {
        match file_path.strip_prefix(MEMORY_PREFIX) {
            Some(rest) => self
                .global_memory_dir
                .clone()
                .unwrap_or_default()
                .join(rest),
            None => self.project_root.join(file_path),
        }
    }
}

fn mtime_ms(meta: &std::fs::Metadata) -> f64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// A file worth indexing: a regular file of a known type, not empty, not too large.
fn accept(path: &Path, meta: &std::fs::Metadata) -> Option<(FileType, f64)> {
    if !meta.is_file() || meta.len() == 0 || meta.len() > MAX_FILE_SIZE {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    Some((FileType::detect(name)?, mtime_ms(meta)))
}

fn posix_relative(path: &Path, base: &Path) -> Option<String> {
    let rel = path.strip_prefix(base).ok()?;
    let parts: Vec<&str> = rel.iter().map(|p| p.to_str()).collect::<Option<_>>()?;
    Some(parts.join("/"))
}

/// Every file to index, sorted by path, without repeats.
pub fn scan(roots: &ScanRoots) -> Vec<ScannedFile> {
    let root = &roots.project_root;
    let mut out = Vec::new();
    let home_mode = roots.home.as_deref().is_some_and(|h| same_dir(h, root));
    if home_mode {
        scan_shallow(root, &mut out);
    } else {
        walk_project(root, &mut out);
        for dir in visible_dreb_dirs(root) {
            scan_plain(&dir, root, None, &mut out);
        }
    }
    if let Some(mem) = roots.global_memory_dir.as_deref()
        && mem.is_dir()
    {
        scan_plain(mem, root, Some(mem), &mut out);
    }
    let mut seen = HashSet::new();
    out.retain(|f| seen.insert(f.file_path.clone()));
    out.sort_by(|a, b| a.file_path.cmp(&b.file_path));
    out
}

fn same_dir(a: &Path, b: &Path) -> bool {
    let trim = |p: &Path| p.to_string_lossy().trim_end_matches('/').to_string();
    trim(a) == trim(b)
}

fn scan_shallow(root: &Path, out: &mut Vec<ScannedFile>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if let Ok(meta) = std::fs::metadata(&path)
            && let Some((file_type, mtime)) = accept(&path, &meta)
        {
            out.push(ScannedFile {
                file_path: name.to_string(),
                file_type,
                mtime,
            });
        }
    }
}

fn walk_project(root: &Path, out: &mut Vec<ScannedFile>) {
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .git_ignore(true)
        .require_git(false)
        .follow_links(true)
        .filter_entry(|e| {
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            !(is_dir && e.depth() > 0 && skipped_dir(e.path()))
        })
        .build();
    for entry in walker.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        if let Some((file_type, mtime)) = accept(path, &meta)
            && let Some(file_path) = posix_relative(path, root)
        {
            out.push(ScannedFile {
                file_path,
                file_type,
                mtime,
            });
        }
    }
}

fn skipped_dir(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if SKIP_DIRS.contains(&name) {
        return true;
    }
    name == "index"
        && path
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|p| p == ".dreb")
}

/// `<root>/.dreb/*` directories other than the hidden ones.
pub fn visible_dreb_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join(".dreb")) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| !HIDDEN_DREB_SUBDIRS.contains(&n))
        })
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs
}

/// Every indexable file under `dir`, ignoring `.gitignore`; paths relative to the project, or to `memory_base`
/// under [`MEMORY_PREFIX`] when the directory lies outside the project.
fn scan_plain(dir: &Path, root: &Path, memory_base: Option<&Path>, out: &mut Vec<ScannedFile>) {
    let walker = ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .follow_links(true)
        .build();
    for entry in walker.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let Some((file_type, mtime)) = accept(path, &meta) else {
            continue;
        };
        let file_path = match posix_relative(path, root) {
            Some(rel) => rel,
            None => match memory_base.and_then(|base| posix_relative(path, base)) {
                Some(rel) => format!("{MEMORY_PREFIX}{rel}"),
                None => continue,
            },
        };
        out.push(ScannedFile {
            file_path,
            file_type,
            mtime,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn honours_gitignore_skip_dirs_and_visible_dreb_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        write(&root, ".gitignore", "ignored/\n*.log\n.dreb/\n");
        write(&root, "src/a.rs", "fn a() {}");
        write(&root, "src/nested/.gitignore", "secret.ts\n");
        write(&root, "src/nested/secret.ts", "x");
        write(&root, "src/nested/ok.ts", "x");
        write(&root, "ignored/b.rs", "fn b() {}");
        write(&root, "node_modules/m/index.js", "x");
        write(&root, "empty.md", "");
        write(&root, "image.png", "png");
        write(&root, ".dreb/memory/note.md", "remember");
        write(&root, ".dreb/index/x.md", "index");
        write(&root, ".dreb/agent/y.md", "agent");
        let mem = dir.path().join("home/.dreb/memory");
        write(&mem, "global.md", "global note");
        let roots = ScanRoots {
            project_root: root.clone(),
            home: Some(dir.path().join("home")),
            global_memory_dir: Some(mem),
        };
        let paths: Vec<String> = scan(&roots).into_iter().map(|f| f.file_path).collect();
        assert_eq!(
            paths,
            vec![
                ".dreb/memory/note.md",
                "src/a.rs",
                "src/nested/ok.ts",
                "~memory/global.md"
            ]
        );
        assert_eq!(
            roots.absolute("~memory/global.md"),
            dir.path().join("home/.dreb/memory/global.md")
        );
    }

    #[test]
    fn the_home_directory_is_scanned_shallowly() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "notes.md", "top");
        write(dir.path(), "deep/x.md", "deep");
        write(dir.path(), ".hidden.md", "hidden");
        let roots = ScanRoots {
            project_root: dir.path().to_path_buf(),
            home: Some(dir.path().to_path_buf()),
            global_memory_dir: None,
        };
        let paths: Vec<String> = scan(&roots).into_iter().map(|f| f.file_path).collect();
        assert_eq!(paths, vec!["notes.md"]);
    }
}
