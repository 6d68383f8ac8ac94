//! The index database: files, chunks (with an FTS5 table kept in step by triggers), embeddings per model, import
//! edges and symbols. The schema is the reference's, so both builds read the same `search.db`.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use crate::types::{Chunk, StoredChunk};

const SCHEMA_VERSION: i64 = 1;

/// How long a statement waits for another connection's write lock.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A file row.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedFile {
    pub id: i64,
    pub file_path: String,
    pub mtime: f64,
    pub file_type: String,
}

pub struct SearchDb {
    conn: Connection,
}

const CHUNK_COLUMNS: &str =
    "id, file_id, file_path, start_line, end_line, kind, name, content, file_type";

fn row_to_chunk(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredChunk> {
    Ok(StoredChunk {
        id: r.get(0)?,
        file_id: r.get(1)?,
        file_path: r.get(2)?,
        start_line: r.get(3)?,
        end_line: r.get(4)?,
        kind: r.get(5)?,
        name: r.get(6)?,
        content: r.get(7)?,
        file_type: r.get(8)?,
    })
}

impl SearchDb {
    /// Open (creating when missing) the database at `path`.
    pub fn open(path: &Path) -> rusqlite::Result<SearchDb> {
        Self::init(Connection::open(path)?)
    }

    /// A database in memory (tests, benchmarks).
    pub fn open_in_memory() -> rusqlite::Result<SearchDb> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> rusqlite::Result<SearchDb> {
        // Another process (a subagent child in the same project) may be writing: wait for it instead of failing.
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Switching the journal mode needs the database to itself and does not wait for a busy handler: when two
        // connections create the index at once, one retries.
        let mut tries = 0;
        loop {
            match Self::setup(&conn) {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy && tries < 100 =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other.map(|()| SearchDb { conn }),
            }
        }
    }

    fn setup(conn: &Connection) -> rusqlite::Result<()> {
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            conn.pragma_update(None, "journal_mode", "WAL")?;
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute_batch("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")?;
        let version: Option<String> = conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()?;
        if version.and_then(|v| v.parse::<i64>().ok()).unwrap_or(0) < SCHEMA_VERSION {
            conn.execute_batch(SCHEMA)?;
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?1)",
                [SCHEMA_VERSION.to_string()],
            )?;
        }
        Ok(())
    }

    /// Run `f` in one transaction (rolled back when it fails).
    pub fn transaction<T>(
        &mut self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        // Immediate: take the write lock up front (waiting out other writers), so a transaction that reads before
        // it writes is never refused the upgrade halfway.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    pub fn all_files(&self) -> rusqlite::Result<Vec<IndexedFile>> {
        let mut st = self
            .conn
            .prepare_cached("SELECT id, file_path, mtime, file_type FROM files")?;
        st.query_map([], |r| {
            Ok(IndexedFile {
                id: r.get(0)?,
                file_path: r.get(1)?,
                mtime: r.get(2)?,
                file_type: r.get(3)?,
            })
        })?
        .collect()
    }

    /// Remove a file with its chunks, embeddings, symbols and imports (cascading).
    pub fn delete_file(&self, file_id: i64) -> rusqlite::Result<()> {
        self.conn
            .execute("DELETE FROM files WHERE id = ?1", [file_id])?;
        Ok(())
    }

    /// Replace one file's rows (file record, chunks, symbols, imports) in a transaction; returns the new chunk ids.
    pub fn replace_file(
        &mut self,
        file_path: &str,
        mtime: f64,
        file_type: &str,
        chunks: &[Chunk],
        imports: &[String],
    ) -> rusqlite::Result<Vec<i64>> {
        self.transaction(|tx| {
            let existing: Option<i64> = tx
                .query_row("SELECT id FROM files WHERE file_path = ?1", [file_path], |r| r.get(0))
                .optional()?;
            let file_id = match existing {
                Some(id) => {
                    tx.execute(
                        "UPDATE files SET mtime = ?1, file_type = ?2 WHERE id = ?3",
                        params![mtime, file_type, id],
                    )?;
                    tx.execute("DELETE FROM chunks WHERE file_id = ?1", [id])?;
                    tx.execute("DELETE FROM imports WHERE source_file_id = ?1", [id])?;
                    id
                }
                None => {
                    tx.execute(
                        "INSERT INTO files (file_path, mtime, file_type) VALUES (?1, ?2, ?3)",
                        params![file_path, mtime, file_type],
                    )?;
                    tx.last_insert_rowid()
                }
            };
            let mut ids = Vec::with_capacity(chunks.len());
            let mut insert = tx.prepare_cached(
                "INSERT INTO chunks (file_id, file_path, start_line, end_line, kind, name, content, file_type) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            let mut symbol =
                tx.prepare_cached("INSERT INTO symbols (chunk_id, name, kind) VALUES (?1, ?2, ?3)")?;
            for c in chunks {
                insert.execute(params![
                    file_id,
                    c.file_path,
                    c.start_line as i64,
                    c.end_line as i64,
                    c.kind.as_str(),
                    c.name,
                    c.content,
                    c.file_type.as_str()
                ])?;
                let id = tx.last_insert_rowid();
                if let Some(name) = &c.name {
                    symbol.execute(params![id, name, c.kind.as_str()])?;
                }
                ids.push(id);
            }
            let mut import = tx.prepare_cached(
                "INSERT OR IGNORE INTO imports (source_file_id, target_file_path) VALUES (?1, ?2)",
            )?;
            for target in imports {
                import.execute(params![file_id, target])?;
            }
            Ok(ids)
        })
    }

    pub fn all_chunks(&self) -> rusqlite::Result<Vec<StoredChunk>> {
        let mut st = self
            .conn
            .prepare_cached(&format!("SELECT {CHUNK_COLUMNS} FROM chunks"))?;
        st.query_map([], row_to_chunk)?.collect()
    }

    pub fn chunks_by_id(&self, ids: &[i64]) -> rusqlite::Result<Vec<StoredChunk>> {
        let mut out = Vec::with_capacity(ids.len());
        for batch in ids.chunks(500) {
            let marks = vec!["?"; batch.len()].join(",");
            let mut st = self.conn.prepare(&format!(
                "SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks}) ORDER BY id"
            ))?;
            let rows = st.query_map(rusqlite::params_from_iter(batch), row_to_chunk)?;
            for r in rows {
                out.push(r?);
            }
        }
        Ok(out)
    }

    pub fn chunk_ids_without_embedding(&self, model: &str) -> rusqlite::Result<Vec<i64>> {
        let mut st = self.conn.prepare_cached(
            "SELECT c.id FROM chunks c LEFT JOIN embeddings e ON c.id = e.chunk_id AND e.model_name = ?1 \
             WHERE e.chunk_id IS NULL ORDER BY c.id",
        )?;
        st.query_map([model], |r| r.get(0))?.collect()
    }

    /// Store vectors (little-endian f32, as the reference packs them) in one transaction.
    pub fn upsert_embeddings(
        &mut self,
        model: &str,
        items: &[(i64, Vec<f32>)],
    ) -> rusqlite::Result<()> {
        self.transaction(|tx| {
            let mut st = tx.prepare_cached(
                // A chunk another process replaced meanwhile is skipped (its successor gets a vector next time).
                "INSERT OR REPLACE INTO embeddings (chunk_id, model_name, vector) \
                 SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?1)",
            )?;
            for (id, v) in items {
                let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                st.execute(params![id, model, blob])?;
            }
            Ok(())
        })
    }

    pub fn all_embeddings(&self, model: &str) -> rusqlite::Result<Vec<(i64, Vec<f32>)>> {
        let mut st = self
            .conn
            .prepare_cached("SELECT chunk_id, vector FROM embeddings WHERE model_name = ?1")?;
        st.query_map([model], |r| {
            let blob: Vec<u8> = r.get(1)?;
            let v = blob
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            Ok((r.get(0)?, v))
        })?
        .collect()
    }

    /// BM25 over content, name and path (weights 1, 10, 5), best first; higher is better. A query FTS5 refuses
    /// yields nothing.
    pub fn fts_search(&self, query: &str, limit: usize) -> Vec<(i64, f64)> {
        let run = || -> rusqlite::Result<Vec<(i64, f64)>> {
            let mut st = self.conn.prepare_cached(
                "SELECT chunks_fts.rowid, -bm25(chunks_fts, 1.0, 10.0, 5.0) AS score FROM chunks_fts \
                 WHERE chunks_fts MATCH ?1 ORDER BY score DESC LIMIT ?2",
            )?;
            st.query_map(params![query, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        };
        run().unwrap_or_default()
    }

    pub fn imports_from(&self, file_id: i64) -> rusqlite::Result<Vec<String>> {
        let mut st = self
            .conn
            .prepare_cached("SELECT target_file_path FROM imports WHERE source_file_id = ?1")?;
        st.query_map([file_id], |r| r.get(0))?.collect()
    }

    pub fn importers_of(&self, target: &str) -> rusqlite::Result<Vec<i64>> {
        let mut st = self
            .conn
            .prepare_cached("SELECT source_file_id FROM imports WHERE target_file_path = ?1")?;
        st.query_map([target], |r| r.get(0))?.collect()
    }

    /// chunk id → its symbol names.
    pub fn all_symbols(&self) -> rusqlite::Result<HashMap<i64, Vec<String>>> {
        let mut st = self
            .conn
            .prepare_cached("SELECT chunk_id, name FROM symbols")?;
        let mut map: HashMap<i64, Vec<String>> = HashMap::new();
        for row in st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))? {
            let (id, name) = row?;
            map.entry(id).or_default().push(name);
        }
        Ok(map)
    }

    pub fn file_count(&self) -> rusqlite::Result<i64> {
        self.conn
            .query_row("SELECT COUNT(*) FROM files", [], |r| r.get(0))
    }

    pub fn chunk_count(&self) -> rusqlite::Result<i64> {
        self.conn
            .query_row("SELECT COUNT(*) FROM chunks", [], |r| r.get(0))
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    file_path TEXT NOT NULL UNIQUE,
    mtime REAL NOT NULL,
    file_type TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    file_path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT,
    content TEXT NOT NULL,
    file_type TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_chunks_file_id ON chunks(file_id);
CREATE INDEX IF NOT EXISTS idx_chunks_file_path ON chunks(file_path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    content, name, file_path, content='chunks', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, content, name, file_path) VALUES (new.id, new.content, new.name, new.file_path);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, content, name, file_path)
    VALUES ('delete', old.id, old.content, old.name, old.file_path);
END;
CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, content, name, file_path)
    VALUES ('delete', old.id, old.content, old.name, old.file_path);
    INSERT INTO chunks_fts(rowid, content, name, file_path) VALUES (new.id, new.content, new.name, new.file_path);
END;
CREATE TABLE IF NOT EXISTS embeddings (
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    model_name TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (chunk_id, model_name)
);
CREATE TABLE IF NOT EXISTS imports (
    source_file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    target_file_path TEXT NOT NULL,
    PRIMARY KEY (source_file_id, target_file_path)
);
CREATE INDEX IF NOT EXISTS idx_imports_target ON imports(target_file_path);
CREATE TABLE IF NOT EXISTS symbols (
    chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_symbols_name ON symbols(name);
";
