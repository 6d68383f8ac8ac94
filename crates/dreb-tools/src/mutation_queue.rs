//! Serialises mutations (edit, write) of one file: concurrent tool calls in a batch run in parallel, so two
//! edits of the same file must not interleave their read-modify-write. Keyed by realpath (falling back to the
//! lexical absolute path for files that do not exist yet); different files still run in parallel.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::Mutex as AsyncMutex;

type Slot = Arc<AsyncMutex<()>>;

fn queues() -> &'static Mutex<HashMap<PathBuf, Slot>> {
    static QUEUES: OnceLock<Mutex<HashMap<PathBuf, Slot>>> = OnceLock::new();
    QUEUES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The key under which mutations of `path` are serialised.
pub fn mutation_key(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| crate::paths::normalize_lexically(path))
}

/// Run `f` once every earlier mutation of the same file has finished. Waiters are served in FIFO order
/// (tokio's mutex is fair).
pub async fn with_file_mutation_queue<T, F, Fut>(path: &Path, f: F) -> T
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = T>,
{
    let key = mutation_key(path);
    let slot = {
        let mut map = queues().lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key.clone())
            .or_insert_with(|| Arc::new(AsyncMutex::new(())))
            .clone()
    };
    let result = {
        let _guard = slot.lock().await;
        f().await
    };
    // Drop the entry once nobody else holds or waits on it, so the map does not grow without bound.
    let mut map = queues().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(existing) = map.get(&key)
        && Arc::ptr_eq(existing, &slot)
        && Arc::strong_count(&slot) == 2
    {
        map.remove(&key);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn same_file_never_overlaps() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "").unwrap();
        let active = Arc::new(AtomicUsize::new(0));
        let max_seen = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::new();
        for _ in 0..8 {
            let (file, active, max_seen) = (file.clone(), active.clone(), max_seen.clone());
            handles.push(tokio::spawn(async move {
                with_file_mutation_queue(&file, || async {
                    let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                    max_seen.fetch_max(now, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    tokio::task::yield_now().await;
                    active.fetch_sub(1, Ordering::SeqCst);
                })
                .await
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        assert_eq!(max_seen.load(Ordering::SeqCst), 1);
        assert!(queues().lock().unwrap().get(&mutation_key(&file)).is_none());
    }

    #[test]
    fn symlink_shares_key_with_target() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("real.txt");
        std::fs::write(&file, "x").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(mutation_key(&file), mutation_key(&link));
    }
}
