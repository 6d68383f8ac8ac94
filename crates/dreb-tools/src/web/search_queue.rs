//! One web search at a time across every dreb process of the user, at least `rate_limit` apart (search engines
//! block bursts). The reference's `web-search-queue.ts`: a lock file and a time file in the agent dir. The lock is
//! an `flock` here (released by the kernel when a process dies, so no stale-lock timeout is needed); the time file
//! keeps the reference's `{"lastSearchTime": <ms since the epoch>}`.

use std::fs::{File, OpenOptions};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

/// The reference's default spacing.
pub const DEFAULT_RATE_LIMIT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("Failed to initialize web search queue lock file at {path}: {message}")]
    Init { path: String, message: String },
    #[error("Failed to lock {path}: {message}")]
    Lock { path: String, message: String },
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TimestampData {
    last_search_time: f64,
}

#[derive(Debug, Clone)]
pub struct WebSearchQueue {
    pub rate_limit: Duration,
    pub lock_path: PathBuf,
    pub time_path: PathBuf,
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

fn read_last(path: &Path) -> f64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<TimestampData>(&t).ok())
        .map_or(0.0, |d| d.last_search_time)
}

impl WebSearchQueue {
    /// The queue files in `agent_dir` (`web-search-queue.lock`, `web-search-queue.time`).
    pub fn in_dir(agent_dir: &Path, rate_limit: Duration) -> Self {
        WebSearchQueue {
            rate_limit,
            lock_path: agent_dir.join("web-search-queue.lock"),
            time_path: agent_dir.join("web-search-queue.time"),
        }
    }

    fn open_lock_file(&self) -> Result<File, QueueError> {
        let init = |e: std::io::Error| QueueError::Init {
            path: self.lock_path.display().to_string(),
            message: e.to_string(),
        };
        if let Some(dir) = self.lock_path.parent() {
            std::fs::create_dir_all(dir).map_err(init)?;
        }
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock_path)
            .map_err(init)
    }

    /// Run `f` once the lock is held and the spacing since the last search (by any process) has passed. The
    /// time is recorded even when `f` fails, so failures do not turn into a burst of retries. Dropping the
    /// returned future releases the lock.
    pub async fn enqueue<T, F: Future<Output = T>>(&self, f: F) -> Result<T, QueueError> {
        let file = self.open_lock_file()?;
        let lock_path = self.lock_path.display().to_string();
        // A blocking `flock` on its own thread; if this future is dropped meanwhile, the guard is dropped (and the
        // lock released) when that thread hands it back.
        let _guard: Flock<File> = tokio::task::spawn_blocking(move || {
            Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, errno)| errno.to_string())
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r)
        .map_err(|message| QueueError::Lock {
            path: lock_path,
            message,
        })?;

        let elapsed = (now_ms() - read_last(&self.time_path)).max(0.0);
        let wait = self.rate_limit.as_millis() as f64 - elapsed;
        if wait > 0.0 {
            tokio::time::sleep(Duration::from_millis(wait.ceil() as u64)).await;
        }
        let out = f.await;
        if let Some(dir) = self.time_path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let stamp = serde_json::json!({"lastSearchTime": now_ms()}).to_string();
        if let Err(e) = std::fs::write(&self.time_path, stamp) {
            // A lost timestamp only weakens the spacing; the search result still goes back.
            tracing::warn!("Failed to write search timestamp: {e}");
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_searches_run_one_at_a_time_and_record_the_time() {
        let dir = tempfile::tempdir().unwrap();
        let queue = WebSearchQueue::in_dir(&dir.path().join("agent"), Duration::ZERO);
        let running = Arc::new(AtomicUsize::new(0));
        let max_seen = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..4 {
            let (queue, running, max_seen) = (queue.clone(), running.clone(), max_seen.clone());
            tasks.push(tokio::spawn(async move {
                queue
                    .enqueue(async {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        max_seen.fetch_max(now, Ordering::SeqCst);
                        // Yield a few times so overlapping runs, if the lock let them, would be seen.
                        for _ in 0..20 {
                            tokio::task::yield_now().await;
                        }
                        running.fetch_sub(1, Ordering::SeqCst);
                        i
                    })
                    .await
                    .unwrap()
            }));
        }
        let mut results = Vec::new();
        for t in tasks {
            results.push(t.await.unwrap());
        }
        results.sort();
        assert_eq!(results, vec![0, 1, 2, 3]);
        assert_eq!(max_seen.load(Ordering::SeqCst), 1);
        let recorded = read_last(&queue.time_path);
        assert!(recorded > 0.0);
    }

    #[tokio::test]
    async fn the_wait_honours_a_recent_search_by_another_process() {
        let dir = tempfile::tempdir().unwrap();
        let queue = WebSearchQueue::in_dir(dir.path(), Duration::from_millis(200));
        // Another process searched at `other`: this run may start only once the spacing has passed (a lower
        // bound, which a sleep guarantees; nothing here depends on how fast the machine is).
        let other = now_ms();
        std::fs::write(
            &queue.time_path,
            serde_json::json!({"lastSearchTime": other}).to_string(),
        )
        .unwrap();
        let started = queue.enqueue(async { now_ms() }).await.unwrap();
        assert!(
            started - other >= 199.0,
            "started {} ms after",
            started - other
        );
        assert!(read_last(&queue.time_path) >= started);
    }

    #[tokio::test]
    async fn an_unusable_agent_dir_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, "").unwrap();
        let queue = WebSearchQueue::in_dir(&file, Duration::ZERO);
        let err = queue.enqueue(async {}).await.unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Failed to initialize web search queue lock file at "),
            "{err}"
        );
    }
}
