//! Directory walking shared by `find` and `grep`: gitignore-aware (`.gitignore`, `.ignore`, global excludes,
//! `.git/info/exclude`), hidden files included, `.git` itself skipped, parallel over the available cores.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::{WalkBuilder, WalkState, overrides::Override};

/// `.dreb/` subdirectories the tools never expose.
const DREB_HIDDEN_SUBDIRS: [&str; 3] = ["index", "agent", "secrets"];

/// Visible `.dreb/*` directories of a project, searched in addition to the cwd when no path is given (so they
/// are found even when `.dreb/` is gitignored).
pub fn dreb_tool_visible_dirs(project_root: &Path) -> Vec<PathBuf> {
    let dreb = project_root.join(".dreb");
    let Ok(entries) = std::fs::read_dir(&dreb) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .filter(|e| !DREB_HIDDEN_SUBDIRS.contains(&e.file_name().to_string_lossy().as_ref()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(8)
}

/// One visited entry.
pub struct Entry {
    pub path: PathBuf,
    pub is_dir: bool,
}

/// Walk `roots` in parallel. `make_visitor` builds one visitor per walker thread (so it can own per-thread
/// state such as a searcher); it is called for every non-root entry (files, directories, symlinks, links not
/// followed) and returns false to stop the whole walk.
pub fn walk_parallel<M>(roots: &[PathBuf], overrides: Option<Override>, make_visitor: M)
where
    M: Fn() -> Box<dyn FnMut(Entry) -> bool + Send> + Sync,
{
    let Some((first, rest)) = roots.split_first() else {
        return;
    };
    let mut builder = WalkBuilder::new(first);
    for r in rest {
        builder.add(r);
    }
    builder
        .hidden(false)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .ignore(true)
        .parents(true)
        .follow_links(false)
        .threads(threads())
        .filter_entry(|e| e.file_name() != ".git");
    if let Some(ov) = overrides {
        builder.overrides(ov);
    }
    builder.build_parallel().run(|| {
        let mut visit = make_visitor();
        Box::new(move |res| {
            let Ok(entry) = res else {
                return WalkState::Continue;
            };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if visit(Entry {
                path: entry.into_path(),
                is_dir,
            }) {
                WalkState::Continue
            } else {
                WalkState::Quit
            }
        })
    });
}

/// Results gathered from the walker threads (cheaply cloneable handle).
pub struct Collector<T> {
    items: Arc<Mutex<Vec<T>>>,
}

impl<T> Clone for Collector<T> {
    fn clone(&self) -> Self {
        Collector {
            items: self.items.clone(),
        }
    }
}

impl<T> Default for Collector<T> {
    fn default() -> Self {
        Collector {
            items: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

impl<T> Collector<T> {
    pub fn push(&self, item: T) {
        self.items
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(item);
    }

    pub fn extend(&self, items: impl IntoIterator<Item = T>) {
        self.items
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(items);
    }

    pub fn take(&self) -> Vec<T> {
        std::mem::take(&mut *self.items.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A per-thread buffer that hands its items to the shared [`Collector`] when full and when dropped (the walker
/// drops each thread's visitor when the thread finishes).
pub struct Batch<T> {
    pub local: Vec<T>,
    sink: Collector<T>,
}

impl<T> Batch<T> {
    pub fn new(sink: Collector<T>) -> Self {
        Batch {
            local: Vec::new(),
            sink,
        }
    }

    pub fn push(&mut self, item: T) {
        self.local.push(item);
        if self.local.len() >= 256 {
            self.sink.extend(std::mem::take(&mut self.local));
        }
    }
}

impl<T> Drop for Batch<T> {
    fn drop(&mut self) {
        self.sink.extend(std::mem::take(&mut self.local));
    }
}

/// A path relative to `base` with `/` separators; paths outside `base` get `..` segments.
pub fn relative_posix(path: &Path, base: &Path) -> String {
    if let Ok(rel) = path.strip_prefix(base) {
        return rel.to_string_lossy().replace('\\', "/");
    }
    let p: Vec<_> = path.components().collect();
    let b: Vec<_> = base.components().collect();
    let common = p.iter().zip(b.iter()).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); b.len() - common];
    parts.extend(
        p[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        assert_eq!(relative_posix(Path::new("/a/b/c"), Path::new("/a")), "b/c");
        assert_eq!(
            relative_posix(Path::new("/a/x/y"), Path::new("/a/b")),
            "../x/y"
        );
    }

    #[test]
    fn dreb_dirs_skip_sensitive_ones() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["agent", "secrets", "index", "notes", "plans"] {
            std::fs::create_dir_all(dir.path().join(".dreb").join(d)).unwrap();
        }
        std::fs::write(dir.path().join(".dreb/file.txt"), "").unwrap();
        let got: Vec<String> = dreb_tool_visible_dirs(dir.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(got, vec!["notes", "plans"]);
    }
}
