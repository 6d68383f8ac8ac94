//! Searches of one tree at the same time share its walk.
//!
//! A model often asks for several greps in one turn, and they run at the same time. Each would open and read every
//! file of the tree, and on a large tree that is most of what a search costs (the kernel's work per file, not the
//! pattern's). So the first search of a tree walks it, and a search of the same directories (and glob) that starts
//! while the walk is young joins it: from then on each file is read once and searched for every search taking
//! part. The files visited before a search joined are recorded, and it searches those itself once the walk is
//! over. Each search's result is exactly what it finds on its own (`tests`); a search that joined answers when the
//! walk it joined is over.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;
use ignore::overrides::Override;
use tokio_util::sync::CancellationToken;

use super::{FileReader, load, new_searcher, search_file, search_loaded};
use crate::walk::{Batch, Entry, Smallest, Visit, walk_parallel};

/// The first matches of a search in path order, as the walker threads find them.
pub(super) type Found = Smallest<PathBuf, Lines>;

/// A file's matching lines: (1-based line number, text).
type Lines = Vec<(u64, String)>;

/// A walker thread's copy of a member's matcher, and its batch of the member's found files.
type MemberSearch = (RegexMatcher, Batch<PathBuf, Lines>);

/// Once a walk has visited this many files it takes no one else and stops recording what it visits: a search that
/// joins reads again what came before it, which this bounds (as it bounds the record's memory). 64 in tests, so that
/// their small trees pass it.
const JOIN_WINDOW: usize = if cfg!(test) { 64 } else { 4096 };

/// One search taking part in a walk.
pub(super) struct Member {
    pub matcher: RegexMatcher,
    /// Lines kept per file.
    pub cap: usize,
    pub found: Found,
    pub cancel: CancellationToken,
}

impl Member {
    fn wants(&self, path: &Path) -> bool {
        !self.cancel.is_cancelled() && !self.found.beyond(path)
    }
}

/// The walks in progress, by what they walk.
#[derive(Default)]
pub struct SharedWalks {
    open: Mutex<HashMap<WalkKey, Arc<Walk>>>,
    /// Searches that joined a walk, for the tests to see that sharing happened.
    #[cfg(test)]
    joins: AtomicUsize,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct WalkKey {
    dirs: Vec<PathBuf>,
    glob: Option<String>,
}

impl SharedWalks {
    /// Search `dirs` for `member`: in the walk of the same directories and glob in progress if it can still be
    /// joined, else in a new walk that later searches may join. Returns when the search is complete.
    pub(super) fn walk(
        &self,
        dirs: Vec<PathBuf>,
        glob: Option<String>,
        overrides: Option<Override>,
        member: Member,
    ) {
        let key = WalkKey { dirs, glob };
        let mut open = lock(&self.open);
        let member = match open.get(&key).cloned() {
            Some(walk) => match walk.join(member) {
                Ok(joined) => {
                    drop(open);
                    #[cfg(test)]
                    self.joins.fetch_add(1, SeqCst);
                    walk.wait();
                    walk.search_backlog(&joined);
                    return;
                }
                Err(member) => *member,
            },
            None => member,
        };
        let walk = Arc::new(Walk::new(member, true));
        open.insert(key.clone(), walk.clone());
        drop(open);
        let leading = Leading {
            walks: self,
            key,
            walk,
        };
        leading.walk.run(&leading.key.dirs, overrides);
    }
}

/// The search that started a walk: when the walk is over (or its thread unwinds), the walk leaves the registry
/// and the searches that joined it are released.
struct Leading<'a> {
    walks: &'a SharedWalks,
    key: WalkKey,
    walk: Arc<Walk>,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        let mut open = lock(&self.walks.open);
        if open
            .get(&self.key)
            .is_some_and(|w| Arc::ptr_eq(w, &self.walk))
        {
            open.remove(&self.key);
        }
        drop(open);
        self.walk.finish();
    }
}

/// Search `dirs` for `member` alone.
pub(super) fn walk_alone(dirs: &[PathBuf], overrides: Option<Override>, member: Member) {
    let walk = Arc::new(Walk::new(member, false));
    walk.run(dirs, overrides);
    walk.finish();
}

/// A member with the generation of the walk it joined in: files searched for an older generation's members were
/// not searched for it.
struct Joined {
    member: Member,
    generation: u64,
}

struct Walk {
    members: Mutex<Arc<Vec<Arc<Joined>>>>,
    /// The members' generation: raised (under `members`' lock) when a search joins, so that the walker threads see
    /// a new member with one atomic load per entry.
    generation: AtomicU64,
    /// Whether a search may still join; only ever turned off, under `members`' lock.
    joinable: AtomicBool,
    recorded: AtomicUsize,
    /// Files visited, with the generation they were searched for (see [`Visitor::record`]).
    visited: Mutex<Vec<Visited>>,
    finished: Mutex<bool>,
    done: Condvar,
}

struct Visited {
    path: PathBuf,
    is_file: bool,
    generation: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Walk {
    fn new(member: Member, joinable: bool) -> Walk {
        Walk {
            members: Mutex::new(Arc::new(vec![Arc::new(Joined {
                member,
                generation: 0,
            })])),
            generation: AtomicU64::new(0),
            joinable: AtomicBool::new(joinable),
            recorded: AtomicUsize::new(0),
            visited: Mutex::new(Vec::new()),
            finished: Mutex::new(false),
            done: Condvar::new(),
        }
    }

    /// `member` as a member from now on, or back when the walk is closed.
    fn join(&self, member: Member) -> Result<Arc<Joined>, Box<Member>> {
        let mut members = lock(&self.members);
        if !self.joinable.load(SeqCst) {
            return Err(Box::new(member));
        }
        let generation = self.generation.load(SeqCst) + 1;
        let joined = Arc::new(Joined { member, generation });
        let mut list = members.as_ref().clone();
        list.push(joined.clone());
        *members = Arc::new(list);
        self.generation.store(generation, SeqCst);
        Ok(joined)
    }

    /// No one joins from now on.
    fn close(&self) {
        let _members = lock(&self.members);
        self.joinable.store(false, SeqCst);
    }

    /// Closes the walk unless someone joined after `generation` (the caller then looks again with them).
    fn close_unless_joined_since(&self, generation: u64) -> bool {
        let _members = lock(&self.members);
        if self.generation.load(SeqCst) != generation {
            return false;
        }
        self.joinable.store(false, SeqCst);
        true
    }

    fn run(self: &Arc<Self>, dirs: &[PathBuf], overrides: Option<Override>) {
        // Each member's cancellation is its own: the walk stops when every member's is cancelled.
        walk_parallel(dirs, overrides, &CancellationToken::new(), || {
            let mut visitor = Visitor::new(self.clone());
            Box::new(move |entry| visitor.visit(entry))
        });
    }

    fn finish(&self) {
        self.close();
        *lock(&self.finished) = true;
        self.done.notify_all();
    }

    fn wait(&self) {
        let mut finished = lock(&self.finished);
        while !*finished {
            finished = self.done.wait(finished).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Searches, for `joined`, the files the walk visited before it joined.
    fn search_backlog(&self, joined: &Joined) {
        let backlog: Vec<(PathBuf, bool)> = lock(&self.visited)
            .iter()
            .filter(|v| v.generation < joined.generation)
            .map(|v| (v.path.clone(), v.is_file))
            .collect();
        let member = &joined.member;
        let mut searcher = new_searcher();
        let mut reader = FileReader::new();
        let mut batch = Batch::new(member.found.clone());
        for (path, is_file) in backlog {
            if !member.wants(&path) {
                continue;
            }
            let found = search_file(
                &mut searcher,
                &member.matcher,
                &path,
                is_file,
                &mut reader,
                member.cap,
            );
            if let Some(m) = found {
                let n = m.lines.len();
                batch.push(m.path, m.lines, n);
            }
        }
    }
}

/// One walker thread's side of a walk.
struct Visitor {
    walk: Arc<Walk>,
    generation: u64,
    members: Arc<Vec<Arc<Joined>>>,
    searcher: Searcher,
    reader: FileReader,
    /// Per member (by index): this thread's copy of its matcher and its batch of found files.
    searches: Vec<Option<MemberSearch>>,
    /// Members that want the current file (kept to reuse its allocation).
    wanted: Vec<usize>,
    visited: Vec<Visited>,
}

impl Visitor {
    fn new(walk: Arc<Walk>) -> Visitor {
        let members = lock(&walk.members).clone();
        let generation = walk.generation.load(SeqCst);
        Visitor {
            walk,
            generation,
            members,
            searcher: new_searcher(),
            reader: FileReader::new(),
            searches: Vec::new(),
            wanted: Vec::new(),
            visited: Vec::new(),
        }
    }

    fn refresh(&mut self) {
        if self.walk.generation.load(SeqCst) != self.generation {
            let members = lock(&self.walk.members);
            self.members = members.clone();
            self.generation = self.walk.generation.load(SeqCst);
        }
    }

    fn visit(&mut self, entry: Entry) -> Visit {
        self.refresh();
        if self.members.iter().all(|m| m.member.cancel.is_cancelled()) {
            return Visit::Quit;
        }
        if entry.is_dir {
            // Paths order by component, so everything under a directory sorts after it: once no member can keep
            // anything there, it is not walked. No one may join after that (its files are not recorded).
            loop {
                if self.members.iter().any(|m| m.member.wants(&entry.path)) {
                    return Visit::Continue;
                }
                if self.walk.close_unless_joined_since(self.generation) {
                    return Visit::Skip;
                }
                self.refresh();
            }
        }
        self.wanted.clear();
        for (i, m) in self.members.iter().enumerate() {
            if m.member.wants(&entry.path) {
                self.wanted.push(i);
            }
        }
        if !self.wanted.is_empty() {
            let mut loaded = load(&mut self.reader, &entry.path, entry.is_file);
            for &i in &self.wanted {
                let member = &self.members[i].member;
                if self.searches.len() <= i {
                    self.searches.resize_with(i + 1, || None);
                }
                let (matcher, batch) = self.searches[i].get_or_insert_with(|| {
                    (member.matcher.clone(), Batch::new(member.found.clone()))
                });
                let lines = search_loaded(
                    &mut self.searcher,
                    matcher,
                    &entry.path,
                    &mut loaded,
                    &self.reader.buf,
                    member.cap,
                );
                if !lines.is_empty() {
                    let n = lines.len();
                    batch.push(entry.path.clone(), lines, n);
                }
            }
        }
        self.record(entry.path, entry.is_file);
        Visit::Continue
    }

    /// Keeps the visited file for searches that join later: while the walk is joinable, and whenever a search
    /// joined after this thread last looked at the members (so it was not searched for that one). Once the walk
    /// is closed and this thread has seen every member, no one can need it.
    fn record(&mut self, path: PathBuf, is_file: bool) {
        if self.walk.joinable.load(SeqCst) || self.walk.generation.load(SeqCst) != self.generation {
            self.visited.push(Visited {
                path,
                is_file,
                generation: self.generation,
            });
            if self.walk.recorded.fetch_add(1, SeqCst) + 1 >= JOIN_WINDOW {
                self.walk.close();
            }
        }
    }
}

impl Drop for Visitor {
    fn drop(&mut self) {
        lock(&self.walk.visited).append(&mut self.visited);
    }
}

#[cfg(test)]
mod tests {
    //! Whatever the timing, a search that shares a walk finds exactly what it finds alone: searches started
    //! together (so that they join each other's walks at various points, before and after the join window closes
    //! and a limited search's pruning closes it), and joins before, during and after a walk driven by hand.
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Barrier};

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::tools::grep::{
        GrepQuery, SearchOutcome, build_matcher, search_paths, search_paths_shared,
    };
    use crate::walk::test_tree as tree;

    fn query(pattern: &str, glob: Option<&str>, limit: usize) -> GrepQuery {
        GrepQuery {
            pattern: pattern.into(),
            glob: glob.map(str::to_string),
            ignore_case: false,
            literal: false,
            limit,
        }
    }

    type Answer = (Vec<(PathBuf, Vec<(u64, String)>)>, usize);

    /// The files found, and the matches seen up to the limit (beyond it, how many more were seen before the walk
    /// stopped depends on the timing, alone as well).
    fn answer(out: SearchOutcome, limit: usize) -> Answer {
        (
            out.files.into_iter().map(|f| (f.path, f.lines)).collect(),
            out.total_matches.min(limit),
        )
    }

    fn queries() -> Vec<GrepQuery> {
        vec![
            query("needle", None, usize::MAX),
            query("hay", None, usize::MAX),
            query("needle", None, 3),
            query("needle", None, 40),
            query("absent", None, 100),
            query("hay", Some("*.rs"), usize::MAX),
            query("hay", Some("*.rs"), 2),
            query("needle", None, 1),
        ]
    }

    #[test]
    fn searches_started_together_find_what_they_find_alone() {
        let dir = tree();
        let roots = vec![dir.path().to_path_buf()];
        let cancel = CancellationToken::new();
        let alone: Vec<Answer> = queries()
            .iter()
            .map(|q| answer(search_paths(q, &roots, &cancel).unwrap(), q.limit))
            .collect();
        assert!(alone[0].0.len() > 100, "{}", alone[0].0.len());
        assert!(alone[4].0.is_empty() && !alone[5].0.is_empty());
        let mut joins = 0;
        for round in 0..20 {
            let walks = Arc::new(SharedWalks::default());
            let qs = queries();
            let barrier = Arc::new(Barrier::new(qs.len()));
            let handles: Vec<_> = qs
                .into_iter()
                .map(|q| {
                    let (walks, barrier, roots) = (walks.clone(), barrier.clone(), roots.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        let cancel = CancellationToken::new();
                        answer(
                            search_paths_shared(&q, &roots, &cancel, &walks).unwrap(),
                            q.limit,
                        )
                    })
                })
                .collect();
            for (i, h) in handles.into_iter().enumerate() {
                assert_eq!(h.join().unwrap(), alone[i], "round {round}, query {i}");
            }
            assert!(lock(&walks.open).is_empty(), "every walk left the registry");
            joins += walks.joins.load(SeqCst);
        }
        assert!(joins > 0, "searches started together shared walks");
    }

    fn member(q: &GrepQuery, cancel: &CancellationToken) -> (Member, Found) {
        let found: Found = Smallest::new(q.limit.max(1));
        let m = Member {
            matcher: build_matcher(q).unwrap(),
            cap: q.limit.max(1),
            found: found.clone(),
            cancel: cancel.clone(),
        };
        (m, found)
    }

    fn finished(found: Found) -> Vec<(PathBuf, Vec<(u64, String)>)> {
        found.finish().0
    }

    fn alone(q: &GrepQuery, root: &Path) -> Vec<(PathBuf, Vec<(u64, String)>)> {
        let out = search_paths(q, &[root.to_path_buf()], &CancellationToken::new()).unwrap();
        out.files.into_iter().map(|f| (f.path, f.lines)).collect()
    }

    #[test]
    fn joined_before_the_walk_or_after_it_ended() {
        let dir = tree();
        let dirs = vec![dir.path().to_path_buf()];
        let cancel = CancellationToken::new();
        let (a, b) = (
            query("needle", None, usize::MAX),
            query("hay", None, usize::MAX),
        );
        // Before: the walk searches for both; nothing is left for the joiner.
        let (ma, fa) = member(&a, &cancel);
        let (mb, fb) = member(&b, &cancel);
        let walk = Arc::new(Walk::new(ma, true));
        let joined = walk.join(mb).ok().unwrap();
        walk.run(&dirs, None);
        walk.finish();
        walk.search_backlog(&joined);
        assert_eq!(finished(fa), alone(&a, dir.path()));
        assert_eq!(finished(fb), alone(&b, dir.path()));
        // After a walk of the tree's 203 files, more than the join window: closed, no join.
        let (ma, _) = member(&a, &cancel);
        let walk = Arc::new(Walk::new(ma, true));
        walk.run(&dirs, None);
        let (mb, _) = member(&b, &cancel);
        assert!(walk.join(mb).is_err(), "closed once the window was visited");
    }

    #[test]
    fn a_walk_joined_late_leaves_the_joiner_its_backlog() {
        // A tree smaller than the window: still joinable when its walk ends, so a joiner searches every file itself.
        let dir = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(
                dir.path().join(format!("f{i:02}")),
                format!("needle {i}\nhay\n"),
            )
            .unwrap();
        }
        let dirs = vec![dir.path().to_path_buf()];
        let cancel = CancellationToken::new();
        let (a, b) = (query("needle", None, usize::MAX), query("hay", None, 5));
        let (ma, fa) = member(&a, &cancel);
        let walk = Arc::new(Walk::new(ma, true));
        walk.run(&dirs, None);
        let (mb, fb) = member(&b, &cancel);
        let joined = walk.join(mb).ok().unwrap();
        walk.finish();
        walk.search_backlog(&joined);
        assert_eq!(finished(fa), alone(&a, dir.path()));
        assert_eq!(finished(fb), alone(&b, dir.path()));
    }

    #[test]
    fn pruning_closes_the_walk() {
        let dir = tree();
        let dirs = vec![dir.path().to_path_buf()];
        let cancel = CancellationToken::new();
        // A limit of 1 fills at once; directories that sort after its match are then not walked.
        let (ma, fa) = member(&query("needle", None, 1), &cancel);
        let walk = Arc::new(Walk::new(ma, true));
        walk.run(&dirs, None);
        assert!(!walk.joinable.load(SeqCst));
        assert!(lock(&walk.visited).len() < 203);
        assert_eq!(finished(fa), alone(&query("needle", None, 1), dir.path()));
    }

    #[test]
    fn a_cancelled_member_does_not_stop_the_others() {
        let dir = tree();
        let dirs = vec![dir.path().to_path_buf()];
        let (a, b) = (
            query("needle", None, usize::MAX),
            query("hay", None, usize::MAX),
        );
        let gone = CancellationToken::new();
        gone.cancel();
        let (ma, _) = member(&a, &gone);
        let (mb, fb) = member(&b, &CancellationToken::new());
        let walk = Arc::new(Walk::new(ma, true));
        let joined = walk.join(mb).ok().unwrap();
        walk.run(&dirs, None);
        walk.finish();
        walk.search_backlog(&joined);
        assert_eq!(finished(fb), alone(&b, dir.path()));
        // Everyone cancelled: the walk stops at its first entry.
        let (ma, _) = member(&a, &gone);
        let walk = Arc::new(Walk::new(ma, true));
        walk.run(&dirs, None);
        assert!(lock(&walk.visited).is_empty());
    }
}
