//! Keeps the tail of a command's output in memory (about 100 KB) and spills everything to
//! `$TMPDIR/dreb-bash-<16 hex>.log` once the output passes 50 KB, so truncated results can point at the full log.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;

use crate::truncate::DEFAULT_MAX_BYTES;

/// A fresh `dreb-bash-<16 hex>.log` path in the temp dir.
pub fn temp_log_path() -> PathBuf {
    let mut id = [0u8; 8];
    if getrandom::fill(&mut id).is_err() {
        // Fall back to time and pid entropy; uniqueness matters, secrecy does not.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        id = ((nanos as u64) ^ ((std::process::id() as u64) << 32)).to_le_bytes();
    }
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    std::env::temp_dir().join(format!("dreb-bash-{hex}.log"))
}

/// The rolling tail plus the optional full log.
pub struct OutputCapture {
    chunks: VecDeque<Vec<u8>>,
    held: usize,
    max_held: usize,
    total_raw: usize,
    log: Option<(PathBuf, std::fs::File)>,
}

impl Default for OutputCapture {
    fn default() -> Self {
        OutputCapture {
            chunks: VecDeque::new(),
            held: 0,
            max_held: DEFAULT_MAX_BYTES * 2,
            total_raw: 0,
            log: None,
        }
    }
}

impl OutputCapture {
    /// Record one chunk. `raw_len` is the size of what the process wrote (it decides when the log starts);
    /// `stored` is what is kept and logged (raw bytes for the tool, cleaned text for the RPC command).
    pub fn push(&mut self, raw_len: usize, stored: &[u8]) {
        self.total_raw += raw_len;
        if self.total_raw > DEFAULT_MAX_BYTES && self.log.is_none() {
            let path = temp_log_path();
            match std::fs::File::create(&path) {
                Ok(mut f) => {
                    for c in &self.chunks {
                        let _ = f.write_all(c);
                    }
                    self.log = Some((path, f));
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "bash: cannot create output log")
                }
            }
        }
        if let Some((_, f)) = self.log.as_mut()
            && let Err(e) = f.write_all(stored)
        {
            tracing::warn!(error = %e, "bash: cannot write output log");
        }
        self.chunks.push_back(stored.to_vec());
        self.held += stored.len();
        while self.held > self.max_held && self.chunks.len() > 1 {
            if let Some(old) = self.chunks.pop_front() {
                self.held -= old.len();
            }
        }
    }

    /// The retained tail as text.
    pub fn text(&self) -> String {
        let mut all = Vec::with_capacity(self.held);
        for c in &self.chunks {
            all.extend_from_slice(c);
        }
        String::from_utf8_lossy(&all).into_owned()
    }

    /// Path of the full log, if one was started.
    pub fn log_path(&self) -> Option<PathBuf> {
        self.log.as_ref().map(|(p, _)| p.clone())
    }

    /// Close the log; when the output was truncated but no log exists yet, write `full_text` to a new one.
    pub fn finish(&mut self, truncated: bool, full_text: &str) -> Option<PathBuf> {
        if let Some((path, mut f)) = self.log.take() {
            let _ = f.flush();
            return Some(path);
        }
        if truncated {
            let path = temp_log_path();
            match std::fs::write(&path, full_text) {
                Ok(()) => return Some(path),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "bash: cannot write output log")
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_starts_past_50kb_and_is_backfilled() {
        let mut c = OutputCapture::default();
        c.push(30_000, &[b'a'; 30_000]);
        assert!(c.log_path().is_none());
        c.push(30_000, &[b'b'; 30_000]);
        let path = c.finish(true, "").unwrap();
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 60_000);
        assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("dreb-bash-")
        );
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(name.len(), "dreb-bash-".len() + 16 + ".log".len());
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn rolling_buffer_keeps_the_tail() {
        let mut c = OutputCapture::default();
        for i in 0..30u8 {
            c.push(10_000, &[b'a' + (i % 26); 10_000]);
        }
        assert!(c.text().len() <= DEFAULT_MAX_BYTES * 2);
        assert!(c.text().ends_with(&"d".repeat(10_000)));
        if let Some(p) = c.finish(false, "") {
            std::fs::remove_file(p).unwrap();
        }
    }
}
