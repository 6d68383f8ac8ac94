//! The session manager: one session as an append-only tree of entries, persisted to a JSONL file (or kept in
//! memory for `--no-session`).
//!
//! Write rule (as the reference): nothing touches disk until the session holds an assistant message; then the
//! header and every buffered entry are written, and afterwards each new entry is appended as one line. Unlike the
//! reference, the file is always kept an exact prefix of the in-memory lines, so a session that is re-opened or
//! recovered can never get a second header or duplicated entries.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::entry::{self, CompactionData, EntryKind, SessionEntry};
use crate::error::{Result, SessionError};
use crate::jsonl;
use crate::migrate::{migrate_to_current, needs_migration};
use crate::paths;
use crate::store::{EntryRef, Extra, LineStore, Loaded};
use crate::time::now_iso;

/// Options for [`SessionManager::new_session`].
#[derive(Debug, Clone, Default)]
pub struct NewSessionOptions {
    /// Use this session id instead of a fresh UUID.
    pub id: Option<String>,
    /// Written into the header as `parentSession`.
    pub parent_session: Option<String>,
}

/// Labels by target id, remembering first-insertion order (the order the reference's `Map` iterates in).
#[derive(Debug, Default, Clone)]
pub(crate) struct Labels {
    by_target: HashMap<String, (u64, String)>,
    next_seq: u64,
}

impl Labels {
    pub(crate) fn get(&self, target: &str) -> Option<&str> {
        self.by_target.get(target).map(|(_, l)| l.as_str())
    }

    /// Sets (non-empty) or clears (missing/empty) a label.
    pub(crate) fn apply(&mut self, target: &str, label: Option<&str>) {
        match label.filter(|l| !l.is_empty()) {
            Some(l) => {
                if let Some(slot) = self.by_target.get_mut(target) {
                    slot.1 = l.to_string();
                } else {
                    self.by_target
                        .insert(target.to_string(), (self.next_seq, l.to_string()));
                    self.next_seq += 1;
                }
            }
            None => {
                self.by_target.remove(target);
            }
        }
    }

    /// `(target, label)` in insertion order.
    pub(crate) fn ordered(&self) -> Vec<(&str, &str)> {
        let mut v: Vec<_> = self
            .by_target
            .iter()
            .map(|(t, (seq, l))| (*seq, t.as_str(), l.as_str()))
            .collect();
        v.sort_by_key(|(seq, _, _)| *seq);
        v.into_iter().map(|(_, t, l)| (t, l)).collect()
    }

    fn clear(&mut self) {
        self.by_target.clear();
        self.next_seq = 0;
    }
}

/// A change in whether the session file takes writes (see [`SessionManager::set_write_observer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteHealth {
    /// A write failed after the previous one succeeded. The entries stay in memory and every later append retries
    /// the unwritten ones.
    Failing {
        path: PathBuf,
        /// The I/O error, with the path.
        error: String,
        /// Lines (header included) held in memory and not on disk yet.
        unwritten: usize,
    },
    /// After failures, a write succeeded: every line held in memory is on disk.
    Recovered { path: PathBuf },
}

/// Told about each [`WriteHealth`] change, on the thread that wrote (with the session borrowed: it must not block).
pub type WriteObserver = Arc<dyn Fn(&WriteHealth) + Send + Sync>;

/// The observer and the current streak (`failing`), kept apart so `SessionManager` stays `Debug`.
#[derive(Default)]
struct WriteWatch {
    observer: Option<WriteObserver>,
    failing: bool,
}

impl std::fmt::Debug for WriteWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteWatch")
            .field("observer", &self.observer.is_some())
            .field("failing", &self.failing)
            .finish()
    }
}

/// One session: header + entries, the current leaf, labels, and the file they persist to.
#[derive(Debug)]
pub struct SessionManager {
    pub(crate) cwd: String,
    pub(crate) session_dir: PathBuf,
    pub(crate) persist: bool,
    pub(crate) session_id: String,
    pub(crate) session_file: Option<PathBuf>,
    /// File lines in order; line 0 is the header. Lines loaded from the file stay there until read.
    pub(crate) lines: LineStore,
    /// Entry id → index in `lines` (the last line wins for duplicate ids).
    pub(crate) by_id: HashMap<String, usize>,
    pub(crate) labels: Labels,
    pub(crate) leaf_id: Option<String>,
    pub(crate) has_assistant: bool,
    /// Index in `lines` of the last `session_info` entry (the session name), so reading it is O(1).
    pub(crate) last_session_info: Option<usize>,
    /// `lines[..written]` are on disk.
    pub(crate) written: usize,
    /// The file does not end in `\n` (torn or foreign last line): start the next write on a fresh line.
    pub(crate) fresh_line_needed: bool,
    write_watch: WriteWatch,
    /// Appends keep their lines in memory instead of writing them ([`SessionManager::holding_writes`]).
    holding: bool,
    /// Lines appended while holding are not written yet ([`SessionManager::flush`] writes them).
    held: bool,
}

impl SessionManager {
    fn empty(cwd: String, session_dir: PathBuf, persist: bool) -> Self {
        Self {
            cwd,
            session_dir,
            persist,
            session_id: String::new(),
            session_file: None,
            lines: LineStore::default(),
            by_id: HashMap::new(),
            labels: Labels::default(),
            leaf_id: None,
            has_assistant: false,
            last_session_info: None,
            written: 0,
            fresh_line_needed: false,
            write_watch: WriteWatch::default(),
            holding: false,
            held: false,
        }
    }

    /// Calls `observer` when appends or rewrites of the session file start failing and when they succeed again
    /// (once per change, not per write). It stays across session switches.
    pub fn set_write_observer(&mut self, observer: WriteObserver) {
        self.write_watch.observer = Some(observer);
    }

    /// Runs `f` with writes held: the entries it appends are in the session at once (in memory, in order) but their
    /// lines reach the file only with [`SessionManager::flush`] or the next append made without holding (which
    /// writes every unwritten line, in order). For a writer that takes the file I/O off a latency-sensitive path.
    pub fn holding_writes<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let was = std::mem::replace(&mut self.holding, true);
        let out = f(self);
        self.holding = was;
        out
    }

    /// Writes the lines held by [`SessionManager::holding_writes`] (nothing when none are held). A failure is
    /// returned and reported to the write observer as any write's is; the lines stay in memory for the next write.
    pub fn flush(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.held) {
            return Ok(());
        }
        self.persist_pending()
    }

    /// Whether lines held by [`SessionManager::holding_writes`] wait for [`SessionManager::flush`].
    pub fn has_held_writes(&self) -> bool {
        self.held
    }

    /// Whether the last write of the session file failed (its lines are held in memory until a write succeeds).
    pub fn write_failing(&self) -> bool {
        self.write_watch.failing
    }

    /// Records the outcome of a write of `path` and tells the observer when the streak changes.
    fn note_write(&mut self, path: &Path, error: Option<&SessionError>) {
        let failing = error.is_some();
        if failing == self.write_watch.failing {
            return;
        }
        self.write_watch.failing = failing;
        let health = match error {
            Some(e) => WriteHealth::Failing {
                path: path.to_path_buf(),
                error: e.to_string(),
                unwritten: self.lines.len() - self.written,
            },
            None => WriteHealth::Recovered {
                path: path.to_path_buf(),
            },
        };
        if let Some(observer) = &self.write_watch.observer {
            observer(&health);
        }
    }

    fn ensure_dir(dir: &Path) -> Result<()> {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(|e| SessionError::io(dir, e))?;
        }
        Ok(())
    }

    /// A new persisted session in `session_dir` (created if missing; see [`paths::default_session_dir`]).
    pub fn create(cwd: impl Into<String>, session_dir: impl Into<PathBuf>) -> Result<Self> {
        let session_dir = session_dir.into();
        Self::ensure_dir(&session_dir)?;
        let mut sm = Self::empty(cwd.into(), session_dir, true);
        sm.new_session(NewSessionOptions::default());
        Ok(sm)
    }

    /// Opens a session file (a missing file starts a new session that will be written there). The cwd comes from
    /// the file's header (else the process cwd); `session_dir` defaults to the file's directory.
    pub fn open(path: impl AsRef<Path>, session_dir: Option<PathBuf>) -> Result<Self> {
        let path = paths::resolve(path.as_ref());
        // Read once: the header gives the cwd, the lines become the session.
        let loaded = load_file(&path)?;
        let header_cwd = loaded
            .as_ref()
            .filter(|l| has_valid_header(&l.store))
            .and_then(|l| l.store.first().cwd().map(str::to_string));
        let cwd = header_cwd.unwrap_or_else(process_cwd);
        let dir =
            session_dir.unwrap_or_else(|| path.parent().map(Path::to_path_buf).unwrap_or_default());
        Self::ensure_dir(&dir)?;
        let mut sm = Self::empty(cwd, dir, true);
        sm.load(path, loaded)?;
        Ok(sm)
    }

    /// Continues the most recently modified valid session in `session_dir`, or starts a new one.
    pub fn continue_recent(
        cwd: impl Into<String>,
        session_dir: impl Into<PathBuf>,
    ) -> Result<Self> {
        let session_dir = session_dir.into();
        Self::ensure_dir(&session_dir)?;
        let recent = crate::listing::find_most_recent_session(&session_dir);
        let mut sm = Self::empty(cwd.into(), session_dir, true);
        match recent {
            Some(p) => sm.set_session_file(&p)?,
            None => {
                sm.new_session(NewSessionOptions::default());
            }
        }
        Ok(sm)
    }

    /// A session that is never written (`--no-session`).
    pub fn in_memory(cwd: impl Into<String>) -> Self {
        let mut sm = Self::empty(cwd.into(), PathBuf::new(), false);
        sm.new_session(NewSessionOptions::default());
        sm
    }

    /// `--fork <path>`: copies every entry of `source` into a new file in `session_dir` whose header names `source`
    /// as `parentSession` and `target_cwd` as cwd, then opens it.
    pub fn fork_from(
        source: impl AsRef<Path>,
        target_cwd: impl Into<String>,
        session_dir: PathBuf,
    ) -> Result<Self> {
        let source = source.as_ref();
        let source_text = source.to_string_lossy().into_owned();
        let parsed = jsonl::read_file(source)
            .map_err(|e| SessionError::io(source, e))?
            .filter(|p| jsonl::has_valid_header(&p.lines))
            .ok_or_else(|| SessionError::InvalidForkSource(source_text.clone()))?;
        let target_cwd = target_cwd.into();
        Self::ensure_dir(&session_dir)?;
        let id = uuid::Uuid::new_v4().to_string();
        let ts = now_iso();
        let file = session_dir.join(paths::session_file_name(&ts, &id));
        let header = entry::new_header(&id, &ts, &target_cwd, Some(&source_text));
        let content = jsonl::to_file_content(
            std::iter::once(&header).chain(parsed.lines.iter().filter(|l| !l.is_header())),
        );
        jsonl::rewrite(&file, &content).map_err(|e| SessionError::io(&file, e))?;
        let mut sm = Self::empty(target_cwd, session_dir, true);
        sm.set_session_file(&file)?;
        Ok(sm)
    }

    /// Switches to another session file (resume, `switch_session`). A missing file starts a new session that will be
    /// created at that path; a file without a valid header is replaced by a fresh session (its old bytes are kept
    /// beside it as `<name>.corrupt`).
    pub fn set_session_file(&mut self, path: impl AsRef<Path>) -> Result<()> {
        // Held lines belong to the session being left.
        let _ = self.flush();
        let path = paths::resolve(path.as_ref());
        let loaded = load_file(&path)?;
        self.load(path, loaded)
    }

    fn load(&mut self, path: PathBuf, loaded: Option<Loaded>) -> Result<()> {
        match loaded {
            None => {
                self.new_session(NewSessionOptions::default());
                self.session_file = Some(path);
            }
            Some(loaded) if !has_valid_header(&loaded.store) => {
                let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                if size > 0 {
                    let mut backup = path.clone().into_os_string();
                    backup.push(".corrupt");
                    tracing::warn!(path = %path.display(), "session file has no valid header; starting fresh");
                    std::fs::copy(&path, &backup).map_err(|e| SessionError::io(&path, e))?;
                }
                self.new_session(NewSessionOptions::default());
                self.session_file = Some(path.clone());
                if self.persist {
                    let content = self.file_content(0);
                    jsonl::rewrite(&path, &content).map_err(|e| SessionError::io(&path, e))?;
                    self.written = self.lines.len();
                }
            }
            Some(loaded) => {
                self.lines = loaded.store;
                self.session_id = self.lines.first().id().unwrap_or_default().to_string();
                self.session_file = Some(path.clone());
                self.written = self.lines.len();
                self.fresh_line_needed = !loaded.ends_with_newline;
                if loaded.skipped > 0 {
                    tracing::warn!(path = %path.display(), skipped = loaded.skipped, "skipped malformed session lines");
                }
                let first_header = self.lines.metas().position(|m| m.is_header());
                if needs_migration(first_header.map(|i| self.lines.get(i)).as_deref()) {
                    // Older formats are migrated in place, as parsed lines.
                    let mut entries = std::mem::take(&mut self.lines).into_entries();
                    migrate_to_current(&mut entries);
                    self.lines = LineStore::from_entries(entries);
                    self.rebuild_index();
                    self.rewrite_file()?;
                } else {
                    self.rebuild_index();
                }
            }
        }
        Ok(())
    }

    /// Starts a new, empty session (new id and, when persisting, a new file name). Returns the new file path.
    pub fn new_session(&mut self, options: NewSessionOptions) -> Option<PathBuf> {
        // Held lines belong to the session being left.
        let _ = self.flush();
        self.session_id = options
            .id
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let ts = now_iso();
        let header = entry::new_header(
            &self.session_id,
            &ts,
            &self.cwd,
            options.parent_session.as_deref(),
        );
        self.lines = LineStore::from_entries(vec![header]);
        self.by_id.clear();
        self.labels.clear();
        self.leaf_id = None;
        self.has_assistant = false;
        self.last_session_info = None;
        self.written = 0;
        self.fresh_line_needed = false;
        if self.persist {
            self.session_file = Some(
                self.session_dir
                    .join(paths::session_file_name(&ts, &self.session_id)),
            );
        }
        self.session_file.clone()
    }

    /// Makes `dir` the directory of sessions started from now on (created if missing); with `move_unwritten`, a
    /// session whose file has not been written yet is moved there too (same file name). A written file stays where
    /// it is. In memory: nothing changes.
    pub fn set_session_dir(&mut self, dir: PathBuf, move_unwritten: bool) -> Result<()> {
        if !self.persist {
            return Ok(());
        }
        Self::ensure_dir(&dir)?;
        if move_unwritten
            && self.written == 0
            && let Some(name) = self.session_file.as_ref().and_then(|f| f.file_name())
        {
            self.session_file = Some(dir.join(name));
        }
        self.session_dir = dir;
        Ok(())
    }

    /// Records the agent type in the header (subagent children); rewrites the file if it exists already.
    pub fn set_agent_type(&mut self, agent_type: &str) -> Result<()> {
        self.lines.edit_first(|h| {
            h.map_mut().insert("agentType".into(), agent_type.into());
        });
        if self.written > 0 {
            self.rewrite_file()
        } else {
            Ok(())
        }
    }

    /// Records the parent session path in the header; rewrites the file if it exists already. Empty is ignored.
    pub fn set_parent_session(&mut self, parent: &str) -> Result<()> {
        if parent.is_empty() {
            return Ok(());
        }
        self.lines.edit_first(|h| {
            h.map_mut().insert("parentSession".into(), parent.into());
        });
        if self.written > 0 {
            self.rewrite_file()
        } else {
            Ok(())
        }
    }

    pub(crate) fn rebuild_index(&mut self) {
        self.by_id.clear();
        self.labels.clear();
        self.leaf_id = None;
        self.has_assistant = false;
        self.last_session_info = None;
        for (i, meta) in self.lines.metas().enumerate() {
            if meta.is_header() {
                continue;
            }
            if meta.kind == EntryKind::SessionInfo {
                self.last_session_info = Some(i);
            }
            let Some(id) = meta.id() else { continue };
            self.by_id.insert(id.to_string(), i);
            self.leaf_id = Some(id.to_string());
            match &meta.extra {
                Extra::Label {
                    target: Some(target),
                    label,
                } => self.labels.apply(target, label.as_deref()),
                Extra::Message { role } if role.as_deref() == Some("assistant") => {
                    self.has_assistant = true
                }
                _ => {}
            }
        }
    }

    /// Lines `from..` as file content (each line `JSON.stringify`d, ending in `\n`).
    fn file_content(&self, from: usize) -> String {
        jsonl::to_file_content(self.lines.iter_from(from))
    }

    /// Writes every line to the session file, replacing it atomically.
    pub(crate) fn rewrite_file(&mut self) -> Result<()> {
        let Some(file) = self.session_file.clone().filter(|_| self.persist) else {
            return Ok(());
        };
        let content = self.file_content(0);
        if let Err(e) = jsonl::rewrite(&file, &content) {
            let error = SessionError::io(&file, e);
            self.note_write(&file, Some(&error));
            return Err(error);
        }
        self.written = self.lines.len();
        self.fresh_line_needed = false;
        self.held = false;
        self.note_write(&file, None);
        Ok(())
    }

    /// Appends the lines that are not on disk yet, once the session has an assistant message.
    fn persist_pending(&mut self) -> Result<()> {
        if !self.persist || !self.has_assistant || self.written >= self.lines.len() {
            return Ok(());
        }
        let Some(file) = self.session_file.clone() else {
            return Ok(());
        };
        if self.write_watch.failing {
            // The file may be gone or torn by now (a replaced directory, a full disk): write all of it again.
            return self.rewrite_file();
        }
        let content = self.file_content(self.written);
        match jsonl::append(&file, &content, self.fresh_line_needed) {
            Ok(()) => {
                self.written = self.lines.len();
                self.fresh_line_needed = false;
                self.note_write(&file, None);
                Ok(())
            }
            Err(e) => {
                // Part of the text may have landed; the retry on the next append starts on a fresh line.
                self.fresh_line_needed = true;
                let error = SessionError::io(&file, e);
                self.note_write(&file, Some(&error));
                Err(error)
            }
        }
    }

    /// Adds `entry` as the new leaf and persists what can be persisted. The entry stays in memory even when the
    /// write fails (the error is returned; the next append retries the unwritten lines).
    fn append_entry(&mut self, entry: SessionEntry) -> Result<String> {
        let id = entry.id().unwrap_or_default().to_string();
        if entry.message_role() == Some("assistant") {
            self.has_assistant = true;
        }
        if entry.kind() == EntryKind::SessionInfo {
            self.last_session_info = Some(self.lines.len());
        }
        self.lines.push(entry);
        self.by_id.insert(id.clone(), self.lines.len() - 1);
        self.leaf_id = Some(id.clone());
        if self.holding {
            self.held = true;
            return Ok(id);
        }
        // Writes every unwritten line, held ones included.
        self.held = false;
        self.persist_pending()?;
        Ok(id)
    }

    pub(crate) fn new_id(&self) -> String {
        entry::generate_id(|c| self.by_id.contains_key(c))
    }

    /// Appends a `message` entry (user, assistant, toolResult, bashExecution, …) as a child of the leaf.
    pub fn append_message(&mut self, message: Value) -> Result<String> {
        let id = self.new_id();
        let e = entry::new_message(&id, self.leaf_id.as_deref(), &now_iso(), message);
        self.append_entry(e)
    }

    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String> {
        let id = self.new_id();
        let e = entry::new_thinking_level_change(&id, self.leaf_id.as_deref(), &now_iso(), level);
        self.append_entry(e)
    }

    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String> {
        let id = self.new_id();
        let e =
            entry::new_model_change(&id, self.leaf_id.as_deref(), &now_iso(), provider, model_id);
        self.append_entry(e)
    }

    pub fn append_compaction(&mut self, data: CompactionData) -> Result<String> {
        let id = self.new_id();
        let e = entry::new_compaction(&id, self.leaf_id.as_deref(), &now_iso(), data);
        self.append_entry(e)
    }

    /// Extension state (`custom`); never part of the LLM context.
    pub fn append_custom_entry(
        &mut self,
        custom_type: &str,
        data: Option<Value>,
    ) -> Result<String> {
        let id = self.new_id();
        let e = entry::new_custom(&id, self.leaf_id.as_deref(), &now_iso(), custom_type, data);
        self.append_entry(e)
    }

    /// A `custom_message` (sent to the LLM as a user message).
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: &str,
        content: Value,
        display: bool,
        details: Option<Value>,
    ) -> Result<String> {
        let id = self.new_id();
        let e = entry::new_custom_message(
            &id,
            self.leaf_id.as_deref(),
            &now_iso(),
            custom_type,
            content,
            display,
            details,
        );
        self.append_entry(e)
    }

    /// A `session_info` entry with the trimmed name (empty clears the name).
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        let id = self.new_id();
        let e = entry::new_session_info(
            &id,
            self.leaf_id.as_deref(),
            &now_iso(),
            crate::message::js_trim(name),
        );
        self.append_entry(e)
    }

    /// `set_session_name`: trims, refuses an empty result, appends `session_info`. Returns the stored name.
    pub fn set_session_name(&mut self, name: &str) -> Result<String> {
        let name = crate::message::js_trim(name).to_string();
        if name.is_empty() {
            return Err(SessionError::EmptySessionName);
        }
        self.append_session_info(&name)?;
        Ok(name)
    }

    /// Sets (or with `None`/empty, clears) the label of an existing entry by appending a `label` entry.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String> {
        if !self.by_id.contains_key(target_id) {
            return Err(SessionError::EntryNotFound(target_id.to_string()));
        }
        let id = self.new_id();
        let e = entry::new_label(&id, self.leaf_id.as_deref(), &now_iso(), target_id, label);
        self.labels.apply(target_id, label);
        self.append_entry(e)
    }

    // ---- getters ----

    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// Empty for an in-memory session.
    pub fn session_dir(&self) -> &Path {
        &self.session_dir
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The session file (which may not exist yet); `None` for an in-memory session.
    pub fn session_file(&self) -> Option<&Path> {
        self.session_file.as_deref()
    }

    pub fn is_persisted(&self) -> bool {
        self.persist
    }

    /// Whether the session file has been written (it holds at least the header).
    pub fn is_flushed(&self) -> bool {
        self.written > 0
    }

    pub fn header(&self) -> &SessionEntry {
        self.lines.first()
    }

    /// Every line including the header, in file order (lines kept on disk are read back one by one).
    pub fn file_lines(&self) -> impl Iterator<Item = EntryRef<'_>> + '_ {
        self.lines.iter_from(0)
    }

    /// All entries (no header lines), in file order.
    pub fn entries(&self) -> impl DoubleEndedIterator<Item = EntryRef<'_>> + '_ {
        self.entry_lines().map(|i| self.lines.get(i))
    }

    /// Line numbers of all entries (no header lines), in file order.
    pub(crate) fn entry_lines(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        (0..self.lines.len()).filter(|&i| !self.lines.meta(i).is_header())
    }

    pub fn entry(&self, id: &str) -> Option<EntryRef<'_>> {
        self.by_id.get(id).map(|&i| self.lines.get(i))
    }

    /// The kind of an entry, without reading it.
    pub fn entry_kind(&self, id: &str) -> Option<EntryKind> {
        self.by_id.get(id).map(|&i| self.lines.meta(i).kind)
    }

    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf_id.as_deref()
    }

    pub fn leaf_entry(&self) -> Option<EntryRef<'_>> {
        self.leaf_id.as_deref().and_then(|id| self.entry(id))
    }

    /// Line number of the leaf entry.
    pub(crate) fn leaf_line(&self) -> Option<usize> {
        self.leaf_id
            .as_deref()
            .and_then(|id| self.by_id.get(id).copied())
    }

    /// Direct children of an entry, in file order.
    pub fn children(&self, parent_id: &str) -> Vec<EntryRef<'_>> {
        let mut v: Vec<usize> = self
            .by_id
            .values()
            .copied()
            .filter(|&i| self.lines.meta(i).parent_id() == Some(parent_id))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|i| self.lines.get(i)).collect()
    }

    /// The resolved label of an entry.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.labels.get(id)
    }

    /// Latest `session_info` name in the whole file (not branch-aware); an empty name clears it.
    pub fn session_name(&self) -> Option<String> {
        let Extra::Name(name) = &self.lines.meta(self.last_session_info?).extra else {
            return None;
        };
        let name = crate::message::js_trim(name.as_deref().unwrap_or(""));
        (!name.is_empty()).then(|| name.to_string())
    }

    /// Root-first path from the root to `from` (default: the leaf). Stops on a parent cycle.
    pub fn branch(&self, from: Option<&str>) -> Vec<EntryRef<'_>> {
        self.branch_lines(from)
            .into_iter()
            .map(|i| self.lines.get(i))
            .collect()
    }

    /// [`SessionManager::branch`] as line numbers, read from the index only.
    pub(crate) fn branch_lines(&self, from: Option<&str>) -> Vec<usize> {
        let start = match from {
            Some(id) => Some(id),
            None => self.leaf_id.as_deref(),
        };
        let mut path = Vec::new();
        let mut current = start.and_then(|id| self.by_id.get(id).copied());
        while let Some(i) = current {
            path.push(i);
            if path.len() > self.by_id.len() {
                tracing::warn!("cycle in session parent links; path cut");
                break;
            }
            current = self
                .lines
                .meta(i)
                .parent_id()
                .and_then(|p| self.by_id.get(p).copied());
        }
        path.reverse();
        path
    }

    /// The `compaction` entry closest to the leaf on the current branch, if any (only that entry is read).
    pub fn latest_compaction(&self) -> Option<EntryRef<'_>> {
        self.branch_lines(None)
            .into_iter()
            .rev()
            .find(|&i| self.lines.meta(i).kind == EntryKind::Compaction)
            .map(|i| self.lines.get(i))
    }

    /// Moves the leaf to an existing entry (in memory only; the next append branches from there).
    pub fn move_leaf(&mut self, id: &str) -> Result<()> {
        if !self.by_id.contains_key(id) {
            return Err(SessionError::EntryNotFound(id.to_string()));
        }
        self.leaf_id = Some(id.to_string());
        Ok(())
    }

    /// Moves the leaf before the first entry; the next append creates a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf_id = None;
    }

    /// Moves the leaf to `from` (or before the root) and appends a `branch_summary` entry there.
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String> {
        if let Some(f) = from
            && !self.by_id.contains_key(f)
        {
            return Err(SessionError::EntryNotFound(f.to_string()));
        }
        self.leaf_id = from.map(str::to_string);
        let id = self.new_id();
        let e = entry::new_branch_summary(&id, from, &now_iso(), summary, details, from_hook);
        self.append_entry(e)
    }
}

/// Reads and indexes a session file; a missing file gives `None`.
fn load_file(path: &Path) -> Result<Option<Loaded>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(SessionError::io(path, e)),
    };
    LineStore::load(file)
        .map(Some)
        .map_err(|e| SessionError::io(path, e))
}

/// True when the first line is a session header with a string id (the reference's validity rule).
fn has_valid_header(store: &LineStore) -> bool {
    store.len() > 0 && store.meta(0).is_header() && store.first().id().is_some()
}

pub(crate) fn process_cwd() -> String {
    std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "/".to_string())
}
