//! Directory walking shared by `find` and `grep`: gitignore-aware (`.gitignore`, `.ignore`, global excludes,
//! `.git/info/exclude`, `.rgignore`, `.fdignore`), hidden files included, `.git` itself skipped, parallel over the available cores.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::{WalkBuilder, WalkState, overrides::Override};
use tokio_util::sync::CancellationToken;

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
    /// A regular file (not a directory, FIFO, socket or device; symlinks are followed when the walk follows them).
    pub is_file: bool,
}

/// What the walk does after a visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    Continue,
    /// Do not descend into this directory (for a file: the same as `Continue`).
    Skip,
    /// Stop the whole walk.
    Quit,
}

/// Walk `roots` in parallel. `make_visitor` builds one visitor per walker thread (so it can own per-thread
/// state such as a searcher); it is called for every non-root entry (files, directories, symlinks, links not
/// followed).
pub fn walk_parallel<M>(
    roots: &[PathBuf],
    overrides: Option<Override>,
    cancel: &CancellationToken,
    make_visitor: M,
) where
    M: Fn() -> Box<dyn FnMut(Entry) -> Visit + Send> + Sync,
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
    // The tool-specific ignore files rg and fd honour.
    builder.add_custom_ignore_filename(".rgignore");
    builder.add_custom_ignore_filename(".fdignore");
    if let Some(ov) = overrides {
        builder.overrides(ov);
    }
    builder.build_parallel().run(|| {
        let mut visit = make_visitor();
        let cancel = cancel.clone();
        Box::new(move |res| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = res else {
                return WalkState::Continue;
            };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let file_type = entry.file_type();
            let is_dir = file_type.is_some_and(|t| t.is_dir());
            let is_file = file_type.is_some_and(|t| t.is_file());
            match visit(Entry {
                path: entry.into_path(),
                is_dir,
                is_file,
            }) {
                Visit::Continue => WalkState::Continue,
                Visit::Skip => WalkState::Skip,
                Visit::Quit => WalkState::Quit,
            }
        })
    });
}

/// Keeps the entries with the smallest keys whose weights add up to at least `limit` (weight 1 per path for
/// `find`, matches per file for `grep`), so output can be sorted and cut at the limit without holding every
/// hit of a huge tree. Shared by the walker threads (cheaply cloneable handle).
pub struct Smallest<K: Ord, V> {
    inner: Arc<Mutex<SmallestInner<K, V>>>,
    /// Set once the kept weight covers the limit (it never drops below it again), so that [`Smallest::beyond`]
    /// costs no lock before then.
    full: Arc<std::sync::atomic::AtomicBool>,
}

struct SmallestInner<K, V> {
    map: BTreeMap<K, (V, usize)>,
    held: usize,
    seen: usize,
    limit: usize,
}

impl<K: Ord, V> Clone for Smallest<K, V> {
    fn clone(&self) -> Self {
        Smallest {
            inner: self.inner.clone(),
            full: self.full.clone(),
        }
    }
}

impl<K: Ord, V> Smallest<K, V> {
    pub fn new(limit: usize) -> Self {
        Smallest {
            inner: Arc::new(Mutex::new(SmallestInner {
                map: BTreeMap::new(),
                held: 0,
                seen: 0,
                limit,
            })),
            full: Arc::default(),
        }
    }

    /// The limit is covered and `key` sorts after every kept key: an entry with this key, or with any key that
    /// sorts after it, can never be kept (the walk may skip it, and a directory whose descendants all sort after
    /// `key`).
    pub fn beyond<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        if !self.full.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.map
            .last_key_value()
            .is_some_and(|(last, _)| last.borrow() < key)
    }

    pub fn insert_many(&self, items: impl IntoIterator<Item = (K, V, usize)>) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for (k, v, w) in items {
            g.seen += w;
            if let Some((_, (_, old))) = g.map.remove_entry(&k) {
                g.held -= old;
            }
            g.map.insert(k, (v, w));
            g.held += w;
            // Evict the largest key while the rest still covers the limit.
            while let Some((_, (_, last_w))) = g.map.last_key_value() {
                let last_w = *last_w;
                if g.held - last_w >= g.limit {
                    g.map.pop_last();
                    g.held -= last_w;
                } else {
                    break;
                }
            }
        }
        if g.held >= g.limit {
            self.full.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn limit(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).limit
    }

    /// The kept entries in key order, and the total weight ever inserted.
    pub fn finish(&self) -> (Vec<(K, V)>, usize) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let map = std::mem::take(&mut g.map);
        (map.into_iter().map(|(k, (v, _))| (k, v)).collect(), g.seen)
    }
}

/// A per-thread buffer that hands its items to a [`Smallest`] when full and when dropped (the walker drops each
/// thread's visitor when the thread finishes).
pub struct Batch<K: Ord, V> {
    local: Vec<(K, V, usize)>,
    /// The weight in `local`: a batch that alone covers the limit is handed over at once, so that the shared set
    /// fills (and the walk starts skipping) early.
    weight: usize,
    sink: Smallest<K, V>,
}

impl<K: Ord, V> Batch<K, V> {
    pub fn new(sink: Smallest<K, V>) -> Self {
        Batch {
            local: Vec::new(),
            weight: 0,
            sink,
        }
    }

    pub fn push(&mut self, key: K, value: V, weight: usize) {
        self.local.push((key, value, weight));
        self.weight += weight;
        if self.local.len() >= 256 || self.weight >= self.sink.limit() {
            self.sink.insert_many(self.local.drain(..));
            self.weight = 0;
        }
    }
}

impl<K: Ord, V> Drop for Batch<K, V> {
    fn drop(&mut self) {
        self.sink.insert_many(self.local.drain(..));
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
    fn smallest_keeps_only_what_the_limit_needs() {
        let s: Smallest<String, ()> = Smallest::new(3);
        s.insert_many(["e", "a", "d", "b", "c"].map(|k| (k.to_string(), (), 1)));
        let (kept, seen) = s.finish();
        assert_eq!(
            kept.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            vec!["a", "b", "c"]
        );
        assert_eq!(seen, 5);
        // Weighted: a file with 2 matches plus one with 5 covers a limit of 4; later keys are dropped.
        let w: Smallest<u32, ()> = Smallest::new(4);
        w.insert_many([(3, (), 1), (1, (), 2), (2, (), 5), (4, (), 1)]);
        let (kept, seen) = w.finish();
        assert_eq!(kept.iter().map(|(k, _)| *k).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(seen, 9);
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

/// A tree whose names exercise the orderings (`b`, `b-c`, `b.x`, `b0`, `B`): 49 directories of four files
/// (`f`, `f-1`, `f.txt`, `g.rs`) with 0 to 3 lines of `needle here` among `hay` lines, and a `top.txt` of one
/// `needle` line in each of the 7 top directories.
#[cfg(test)]
pub(crate) fn test_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let names = ["a", "b", "b-c", "b.x", "b0", "B", "z"];
    let mut n = 0;
    for top in names {
        for sub in names {
            let d = dir.path().join(top).join(sub);
            std::fs::create_dir_all(&d).unwrap();
            for f in ["f", "f-1", "f.txt", "g.rs"] {
                n += 1;
                let hits = n % 4;
                let body: String = (0..5)
                    .map(|i| if i < hits { "needle here\n" } else { "hay\n" })
                    .collect();
                std::fs::write(d.join(f), body).unwrap();
            }
        }
        std::fs::write(dir.path().join(top).join("top.txt"), "needle\n").unwrap();
    }
    dir
}

#[cfg(test)]
mod pruning_tests {
    //! Skipping what sorts after the kept entries must not change any result: every limit against the full
    //! answer cut at the limit, on a tree whose names exercise the orderings (`b`, `b-c`, `b.x`, `b0`, `B`).
    use std::path::{Path, PathBuf};

    use tokio_util::sync::CancellationToken;

    use super::test_tree as tree;
    use crate::tools::find::find_paths;
    use crate::tools::grep::{GrepQuery, search_paths};

    fn grep(root: &Path, limit: usize) -> Vec<(PathBuf, Vec<(u64, String)>)> {
        let q = GrepQuery {
            pattern: "needle".into(),
            glob: None,
            ignore_case: false,
            literal: false,
            limit,
        };
        let out = search_paths(&q, &[root.to_path_buf()], &CancellationToken::new()).unwrap();
        out.files.into_iter().map(|f| (f.path, f.lines)).collect()
    }

    /// The first `limit` matches of the full answer (whole files: the tool cuts lines itself).
    fn cut(
        all: &[(PathBuf, Vec<(u64, String)>)],
        limit: usize,
    ) -> Vec<(PathBuf, Vec<(u64, String)>)> {
        let mut out = Vec::new();
        let mut held = 0;
        for (p, lines) in all {
            if held >= limit {
                break;
            }
            let lines: Vec<_> = lines.iter().take(limit).cloned().collect();
            held += lines.len();
            out.push((p.clone(), lines));
        }
        out
    }

    #[test]
    fn grep_with_a_limit_keeps_exactly_the_first_matches() {
        let dir = tree();
        let all = grep(dir.path(), usize::MAX);
        assert!(all.len() > 100, "{}", all.len());
        for limit in [1, 2, 3, 5, 10, 37, 100, 250] {
            let got = grep(dir.path(), limit);
            let want = cut(&all, limit);
            let got_count: usize = got.iter().map(|(_, l)| l.len()).sum::<usize>().min(limit);
            assert!(got_count >= limit.min(all.iter().map(|(_, l)| l.len()).sum()));
            // What the tool shows: the matches in path order up to the limit.
            let flat = |v: &[(PathBuf, Vec<(u64, String)>)]| -> Vec<(PathBuf, u64)> {
                v.iter()
                    .flat_map(|(p, l)| l.iter().map(move |(n, _)| (p.clone(), *n)))
                    .take(limit)
                    .collect()
            };
            assert_eq!(flat(&got), flat(&want), "limit {limit}");
        }
    }

    #[test]
    fn find_with_a_limit_keeps_exactly_the_first_paths() {
        let dir = tree();
        let roots = [dir.path().to_path_buf()];
        let cancel = CancellationToken::new();
        for pattern in ["*", "f*", "b*"] {
            let (all, _) = find_paths(pattern, dir.path(), &roots, usize::MAX, &cancel).unwrap();
            for limit in [1, 2, 7, 50, 300] {
                let (got, _) = find_paths(pattern, dir.path(), &roots, limit, &cancel).unwrap();
                let want: Vec<String> = all.iter().take(limit).cloned().collect();
                assert_eq!(got, want, "{pattern} limit {limit}");
            }
        }
    }
}
