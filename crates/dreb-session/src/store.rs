//! The lines of an open session, kept compactly: a line read from the session file stays on disk (its offset and
//! length, plus the few fields the session index needs), and is parsed again only when something reads it; lines
//! this process adds, and the header, are kept parsed. A 100 MB session then costs a few MB here instead of a
//! parsed copy of every line (which was about 1.5 times the file), and opening it parses each line once into
//! borrowed fields instead of building a JSON tree.
//!
//! The file is read through the handle opened at load time, so rewrites by rename (ours or another program's),
//! moves to the trash and deletion do not change what these lines read. A line that no longer reads back as the
//! entry it was (the file was changed in place under us) is logged and stands in as its indexed fields only.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use serde::Deserialize;

use crate::entry::{EntryKind, JsonMap, SessionEntry};
use crate::jsonl;

/// A line as callers see it: borrowed when kept parsed, owned when read back from the file.
pub type EntryRef<'a> = Cow<'a, SessionEntry>;

/// What the session index needs of a line without parsing it again.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LineMeta {
    pub kind: EntryKind,
    pub id: Option<Box<str>>,
    pub parent_id: Option<Box<str>>,
    pub extra: Extra,
}

/// Kind-specific fields the index reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Extra {
    None,
    /// A `message` entry: its `message.role` (a string only).
    Message {
        role: Option<Box<str>>,
    },
    /// A `label` entry: `targetId`, `label` (strings only).
    Label {
        target: Option<Box<str>>,
        label: Option<Box<str>>,
    },
    /// A `session_info` entry: `name` (string only).
    Name(Option<Box<str>>),
}

fn boxed(s: Option<&str>) -> Option<Box<str>> {
    s.map(Box::from)
}

impl LineMeta {
    pub(crate) fn of(entry: &SessionEntry) -> LineMeta {
        let kind = entry.kind();
        let extra = match kind {
            EntryKind::Message => Extra::Message {
                role: boxed(entry.message_role()),
            },
            EntryKind::Label => Extra::Label {
                target: boxed(entry.str_field("targetId")),
                label: boxed(entry.str_field("label")),
            },
            EntryKind::SessionInfo => Extra::Name(boxed(entry.str_field("name"))),
            _ => Extra::None,
        };
        LineMeta {
            kind,
            id: boxed(entry.id()),
            parent_id: boxed(entry.parent_id()),
            extra,
        }
    }

    pub(crate) fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub(crate) fn parent_id(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }

    /// The role of a `message` entry's message.
    pub(crate) fn message_role(&self) -> Option<&str> {
        match &self.extra {
            Extra::Message { role } => role.as_deref(),
            _ => None,
        }
    }

    pub(crate) fn is_header(&self) -> bool {
        self.kind == EntryKind::Session
    }

    /// A stand-in entry with only the indexed fields (for a line that no longer reads back).
    fn stand_in(&self, type_name: &str) -> SessionEntry {
        let mut m = JsonMap::new();
        m.insert("type".into(), type_name.into());
        if let Some(id) = self.id() {
            m.insert("id".into(), id.into());
        }
        m.insert(
            "parentId".into(),
            self.parent_id()
                .map_or(serde_json::Value::Null, serde_json::Value::from),
        );
        SessionEntry::from_map(m)
    }
}

/// The fields of a line the index needs, borrowed from its bytes. Any line this does not describe exactly (not an
/// object, a field of another JSON type, a duplicate key, invalid UTF-8 in a read field) is parsed whole instead.
#[derive(Deserialize)]
struct RawMeta<'a> {
    #[serde(rename = "type", default, borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "parentId", default, borrow)]
    parent_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<RawRole<'a>>,
    #[serde(rename = "targetId", default, borrow)]
    target_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    label: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawRole<'a> {
    #[serde(default, borrow)]
    role: Option<Cow<'a, str>>,
}

fn scan_meta(line: &[u8]) -> Option<LineMeta> {
    let first = line.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'{' {
        return None;
    }
    let raw: RawMeta<'_> = serde_json::from_slice(line).ok()?;
    let kind = EntryKind::from_type(raw.ty.as_deref().unwrap_or(""));
    let b = |c: Option<Cow<'_, str>>| c.map(|s| Box::<str>::from(s.as_ref()));
    let extra = match kind {
        EntryKind::Message => Extra::Message {
            role: b(raw.message.and_then(|m| m.role)),
        },
        EntryKind::Label => Extra::Label {
            target: b(raw.target_id),
            label: b(raw.label),
        },
        EntryKind::SessionInfo => Extra::Name(b(raw.name)),
        _ => Extra::None,
    };
    Some(LineMeta {
        kind,
        id: b(raw.id),
        parent_id: b(raw.parent_id),
        extra,
    })
}

#[derive(Debug)]
enum Body {
    Parsed(SessionEntry),
    /// Bytes `offset..offset + len` of the file the store was loaded from.
    OnDisk {
        offset: u64,
        len: u32,
    },
}

#[derive(Debug)]
struct Line {
    meta: LineMeta,
    body: Body,
}

/// The lines of a session file in order (`0` is the header once a session is loaded).
#[derive(Debug, Default)]
pub(crate) struct LineStore {
    lines: Vec<Line>,
    /// The file `OnDisk` lines are read from.
    file: Option<Arc<File>>,
}

/// What loading a file found besides its lines (as [`jsonl::ParsedLines`] reports it).
pub(crate) struct Loaded {
    pub store: LineStore,
    pub skipped: usize,
    pub ends_with_newline: bool,
}

/// Below this many bytes a line is kept parsed even when it comes from the file (the parse costs less than its
/// bookkeeping would save).
const KEEP_PARSED_BELOW: usize = 256;

/// How much of a session file [`LineStore::load`] reads at a time (twice the size at which a part is indexed on
/// more than one thread).
const LOAD_CHUNK: usize = 16 * 1024 * 1024;

impl LineStore {
    pub(crate) fn from_entries(entries: Vec<SessionEntry>) -> LineStore {
        LineStore {
            lines: entries
                .into_iter()
                .map(|e| Line {
                    meta: LineMeta::of(&e),
                    body: Body::Parsed(e),
                })
                .collect(),
            file: None,
        }
    }

    /// Reads and indexes all of `file` from its current position (the start). The first line that parses is the
    /// header candidate and is kept parsed; other lines stay on disk.
    pub(crate) fn load(file: File) -> std::io::Result<Loaded> {
        LineStore::load_in_chunks(file, LOAD_CHUNK)
    }

    /// [`LineStore::load`] reading about `chunk` bytes at a time into one buffer that is reused: the file is
    /// never in memory whole (a 100 MB session would cost 100 MB of fresh pages, each faulted in, only to be
    /// dropped after indexing). A line longer than the buffer grows it.
    fn load_in_chunks(file: File, chunk: usize) -> std::io::Result<Loaded> {
        use std::io::Read;
        let bom = "\u{feff}".as_bytes();
        let mut buf: Vec<u8> = Vec::with_capacity(chunk);
        // The file offset of `buf[0]`.
        let mut base = 0u64;
        let mut eof = false;
        let mut bom_checked = false;
        let mut last_byte = None;
        let mut lines = Vec::new();
        let mut skipped = 0;
        loop {
            if !eof {
                let n = (&file).take(chunk as u64).read_to_end(&mut buf)?;
                eof = n == 0;
            }
            if !bom_checked && (buf.len() >= bom.len() || eof) {
                bom_checked = true;
                if buf.starts_with(bom) {
                    buf.drain(..bom.len());
                    base = bom.len() as u64;
                }
            }
            // Whole lines only, until the end of the file ends the last one.
            let end = if eof {
                buf.len()
            } else {
                match memchr::memrchr(b'\n', &buf) {
                    Some(p) if bom_checked => p + 1,
                    _ => continue,
                }
            };
            if end > 0 {
                last_byte = Some(buf[end - 1]);
                let data = &buf[..end];
                let parts = jsonl::split_for_threads(data);
                let results: Vec<(Vec<Line>, usize)> = if parts.len() > 1 {
                    std::thread::scope(|s| {
                        let handles: Vec<_> = parts
                            .iter()
                            .map(|&(a, b)| s.spawn(move || index_chunk(data, a, b, base)))
                            .collect();
                        handles
                            .into_iter()
                            .map(|h| h.join().unwrap_or_default())
                            .collect()
                    })
                } else {
                    parts
                        .iter()
                        .map(|&(a, b)| index_chunk(data, a, b, base))
                        .collect()
                };
                for (chunk_lines, s) in results {
                    lines.extend(chunk_lines);
                    skipped += s;
                }
                buf.drain(..end);
                base += end as u64;
            }
            if eof {
                break;
            }
        }
        let ends_with_newline = last_byte.is_none_or(|b| b == b'\n');
        let mut store = LineStore {
            lines,
            file: Some(Arc::new(file)),
        };
        // The header candidate (the first line) is read often and edited in place: keep it parsed.
        if let Some(first) = store.lines.first()
            && matches!(first.body, Body::OnDisk { .. })
        {
            let e = store.get(0).into_owned();
            store.lines[0].body = Body::Parsed(e);
        }
        Ok(Loaded {
            store,
            skipped,
            ends_with_newline,
        })
    }

    /// Every line parsed (for a migration, which edits lines in place).
    pub(crate) fn into_entries(self) -> Vec<SessionEntry> {
        (0..self.lines.len())
            .map(|i| self.get(i).into_owned())
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    pub(crate) fn meta(&self, i: usize) -> &LineMeta {
        &self.lines[i].meta
    }

    pub(crate) fn metas(&self) -> impl DoubleEndedIterator<Item = &LineMeta> + '_ {
        self.lines.iter().map(|l| &l.meta)
    }

    pub(crate) fn push(&mut self, entry: SessionEntry) {
        self.lines.push(Line {
            meta: LineMeta::of(&entry),
            body: Body::Parsed(entry),
        });
    }

    /// Line `i`, read back from the file when it is not kept parsed.
    pub(crate) fn get(&self, i: usize) -> EntryRef<'_> {
        let line = &self.lines[i];
        match &line.body {
            Body::Parsed(e) => Cow::Borrowed(e),
            Body::OnDisk { offset, len } => Cow::Owned(self.read_back(&line.meta, *offset, *len)),
        }
    }

    /// Line `i` as a [`MessageLine`] when it is a `message` entry kept in the file.
    pub(crate) fn message_line(&self, i: usize) -> Option<MessageLine> {
        let line = &self.lines[i];
        let Body::OnDisk { offset, len } = line.body else {
            return None;
        };
        if line.meta.kind != EntryKind::Message {
            return None;
        }
        Some(MessageLine {
            file: self.file.clone()?,
            offset,
            len,
            id: line.meta.id.clone(),
            role: line.meta.message_role().map(Box::from),
        })
    }

    fn read_back(&self, meta: &LineMeta, offset: u64, len: u32) -> SessionEntry {
        let mut buf = vec![0u8; len as usize];
        let read = self
            .file
            .as_ref()
            .map(|f| f.read_exact_at(&mut buf, offset));
        if let Some(Ok(())) = read
            && let Some(e) = parse_as_indexed(&buf, meta.id(), meta.kind)
        {
            return e;
        }
        tracing::warn!(
            offset,
            id = meta.id().unwrap_or(""),
            "a session line no longer reads back from its file (changed in place?); using its indexed fields"
        );
        meta.stand_in(match meta.kind {
            EntryKind::Message => "message",
            EntryKind::Session => "session",
            EntryKind::ThinkingLevelChange => "thinking_level_change",
            EntryKind::ModelChange => "model_change",
            EntryKind::Compaction => "compaction",
            EntryKind::BranchSummary => "branch_summary",
            EntryKind::Custom => "custom",
            EntryKind::CustomMessage => "custom_message",
            EntryKind::Label => "label",
            EntryKind::SessionInfo => "session_info",
            EntryKind::Unknown => "unknown",
        })
    }

    /// The first line, which a loaded session keeps parsed. Panics on an empty store (a session always has its
    /// header).
    pub(crate) fn first(&self) -> &SessionEntry {
        match &self.lines[0].body {
            Body::Parsed(e) => e,
            Body::OnDisk { .. } => unreachable!("the first line is kept parsed"),
        }
    }

    /// Edits the first line (the header) and refreshes its index fields.
    pub(crate) fn edit_first(&mut self, f: impl FnOnce(&mut SessionEntry)) {
        if let Body::Parsed(e) = &mut self.lines[0].body {
            f(e);
            self.lines[0].meta = LineMeta::of(e);
        }
    }

    /// Lines `from..` in order.
    pub(crate) fn iter_from(&self, from: usize) -> impl Iterator<Item = EntryRef<'_>> + '_ {
        (from..self.lines.len()).map(move |i| self.get(i))
    }
}

/// Indexes `data[from..to]` (whole lines). Lines that the borrowed scan does not describe exactly are parsed whole.
/// Indexes the lines of `data[from..to]`; `base` is the file offset of `data[0]`.
fn index_chunk(data: &[u8], from: usize, to: usize, base: u64) -> (Vec<Line>, usize) {
    let mut lines = Vec::new();
    let mut skipped = 0;
    let mut pos = from;
    while pos < to {
        let end = memchr::memchr(b'\n', &data[pos..to]).map_or(to, |p| pos + p);
        let raw = &data[pos..end];
        let offset = base + pos as u64;
        pos = end + 1;
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let fast = (raw.len() >= KEEP_PARSED_BELOW && raw.len() <= u32::MAX as usize)
            .then(|| scan_meta(raw))
            .flatten();
        match fast {
            Some(meta) => lines.push(Line {
                meta,
                body: Body::OnDisk {
                    offset,
                    len: raw.len() as u32,
                },
            }),
            None => match jsonl::parse_line(raw) {
                Some(e) => lines.push(Line {
                    meta: LineMeta::of(&e),
                    body: Body::Parsed(e),
                }),
                None => skipped += 1,
            },
        }
    }
    (lines, skipped)
}

/// A `message` entry of an open session that is still only a line of its file: the message is read and decoded
/// when asked for, not when the session is opened. It reads the file through the handle the session was loaded
/// from, like the store, so it stays valid however the session changes afterwards.
#[derive(Debug, Clone)]
pub struct MessageLine {
    file: Arc<File>,
    offset: u64,
    len: u32,
    id: Option<Box<str>>,
    role: Option<Box<str>>,
}

/// A `message` line's message read as `M` (its JSON text as `&RawValue`, or decoded), with the fields that show
/// the line is still the indexed entry.
#[derive(Deserialize)]
struct MessageField<'a, M> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    message: M,
}

impl MessageLine {
    /// `message.role` as indexed when the session was opened.
    pub fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }

    /// The line's bytes, read into `buf` (`false` when the file cannot be read there any more).
    pub fn read_into(&self, buf: &mut Vec<u8>) -> bool {
        buf.clear();
        buf.resize(self.len as usize, 0);
        self.file.read_exact_at(buf, self.offset).is_ok()
    }

    /// The message's JSON text in `line` (the bytes [`MessageLine::read_into`] read), exactly as the file holds
    /// it; `None` when the line is not the indexed entry any more or its text is not the message alone on one line
    /// (a `\r` in it, which a host reading lines could take for a line end).
    pub fn message_json<'b>(&self, line: &'b [u8]) -> Option<&'b serde_json::value::RawValue> {
        let raw: MessageField<'_, &serde_json::value::RawValue> =
            serde_json::from_slice(line).ok()?;
        (raw.ty == "message"
            && raw.id.as_deref() == self.id.as_deref()
            && memchr::memchr(b'\r', raw.message.get().as_bytes()).is_none())
        .then_some(raw.message)
    }

    /// The message decoded into `M`, reading the line into `buf` (reused across lines); `None` when it does not
    /// convert (as [`SessionManager::build_session_context_as`] leaves such a message out).
    ///
    /// [`SessionManager::build_session_context_as`]: crate::SessionManager::build_session_context_as
    pub fn decode_with<M: serde::de::DeserializeOwned>(&self, buf: &mut Vec<u8>) -> Option<M> {
        if !self.read_into(buf) {
            return None;
        }
        self.decode_from(buf)
    }

    /// The message decoded from `line` (the bytes [`MessageLine::read_into`] read).
    pub fn decode_from<M: serde::de::DeserializeOwned>(&self, line: &[u8]) -> Option<M> {
        if let Ok(m) = serde_json::from_slice::<MessageField<'_, M>>(line)
            && m.ty == "message"
            && m.id.as_deref() == self.id.as_deref()
        {
            return Some(m.message);
        }
        // Anything the direct read does not take (a duplicate key, invalid UTF-8 to replace, a line changed in
        // place) goes the general way, as the store reads a line back.
        let entry = parse_as_indexed(line, self.id.as_deref(), EntryKind::Message)?;
        serde_json::from_value(entry.get("message")?.clone()).ok()
    }
}

/// `line` parsed, when it still is the entry the index recorded (same id and kind).
fn parse_as_indexed(line: &[u8], id: Option<&str>, kind: EntryKind) -> Option<SessionEntry> {
    jsonl::parse_line(line).filter(|e| e.id() == id && e.kind() == kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn load(text: &[u8]) -> (Loaded, tempfile::NamedTempFile) {
        load_in_chunks(text, LOAD_CHUNK)
    }

    fn load_in_chunks(text: &[u8], chunk: usize) -> (Loaded, tempfile::NamedTempFile) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text).unwrap();
        let file = File::open(f.path()).unwrap();
        (LineStore::load_in_chunks(file, chunk).unwrap(), f)
    }

    /// The store reads back exactly what parsing the whole file gives, for lines of every shape.
    #[test]
    fn reads_back_what_a_full_parse_gives() {
        let pad = "p".repeat(300);
        let mut text = String::from("\u{feff}{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n");
        for line in [
            format!(
                r#"{{"type":"message","id":"a","parentId":null,"message":{{"role":"assistant","x":"{pad}"}}}}"#
            ),
            format!(
                r#"{{"type":"label","id":"b","parentId":"a","targetId":"a","label":"L","pad":"{pad}"}}"#
            ),
            format!(
                r#"{{"type":"session_info","id":"c","parentId":"b","name":"n\u00e9","pad":"{pad}"}}"#
            ),
            format!(r#"{{"type":"message","id":"d","id":"dup","pad":"{pad}"}}"#),
            format!(r#"{{"type":"custom","id":7,"pad":"{pad}"}}"#),
            format!(r#"["not","an","object","{pad}"]"#),
            String::new(),
            "   ".into(),
            "{\"type\":\"message\",\"id\":\"short\"}\r".into(),
            format!(r#"{{"type":"message","id":"e","message":"text","pad":"{pad}"}}"#),
            format!(r#"{{"type":"message","id":"torn","pad":"{pad}""#),
        ] {
            text.push_str(&line);
            text.push('\n');
        }
        text.push_str("{\"type\":\"message\",\"id\":\"last\"}");
        let full = jsonl::parse_lines(text.as_bytes());
        // Chunks that cut the BOM, lines and line ends anywhere.
        for chunk in [1, 2, 7, 64, 301, LOAD_CHUNK] {
            let (loaded, _f) = load_in_chunks(text.as_bytes(), chunk);
            check_reads_back(&loaded, &full);
        }
        let (loaded, _f) = load(b"");
        assert!(loaded.ends_with_newline);
        assert_eq!(loaded.store.len(), 0);
        let (loaded, _f) = load("\u{feff}".as_bytes());
        assert!(loaded.ends_with_newline);
        let (loaded, _f) = load_in_chunks(b"\xef\xbb", 1);
        assert_eq!(loaded.skipped, 1);
    }

    fn check_reads_back(loaded: &Loaded, full: &jsonl::ParsedLines) {
        assert_eq!(loaded.skipped, full.skipped);
        assert_eq!(loaded.ends_with_newline, full.ends_with_newline);
        assert_eq!(loaded.store.len(), full.lines.len());
        for (i, want) in full.lines.iter().enumerate() {
            assert_eq!(&*loaded.store.get(i), want, "line {i}");
            assert_eq!(loaded.store.meta(i), &LineMeta::of(want), "meta {i}");
        }
        assert!(
            loaded
                .store
                .lines
                .iter()
                .any(|l| matches!(l.body, Body::OnDisk { .. })),
            "long lines stay on disk"
        );
    }

    #[test]
    fn a_line_changed_in_place_stands_in_as_its_indexed_fields() {
        let pad = "p".repeat(300);
        let text = format!(
            "{{\"type\":\"session\",\"id\":\"s\"}}\n{{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"pad\":\"{pad}\"}}\n"
        );
        let (loaded, f) = load(text.as_bytes());
        std::fs::write(f.path(), text.replace("\"a\"", "\"b\"")).unwrap();
        let e = loaded.store.get(1);
        assert_eq!(e.id(), Some("a"));
        assert_eq!(e.entry_type(), "message");
        assert!(e.get("pad").is_none());
    }
}
