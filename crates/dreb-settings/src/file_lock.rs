//! Cross-process lock around a settings file's read-modify-write.
//!
//! Two layers, taken in this order:
//! 1. An OS advisory lock (`std::fs::File::lock`: `flock` / `LockFileEx`) on a sidecar file
//!    `<settings>.flock`. The kernel releases it if the holder dies, so Rust processes never
//!    wait on a crashed peer. The sidecar is never replaced, unlike the settings file itself,
//!    which is swapped by rename on every write.
//! 2. The reference's `proper-lockfile` convention: a directory `<settings>.lock` created with
//!    `mkdir`, considered stale after 10 s. Taking it keeps us serialised with a TypeScript
//!    dreb writing the same file at the same time.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::{Duration, SystemTime};

/// `proper-lockfile`'s default staleness threshold.
const COMPAT_STALE_AFTER: Duration = Duration::from_secs(10);
const COMPAT_RETRY_DELAY: Duration = Duration::from_millis(20);
/// About twelve seconds of retries: longer than the staleness threshold, so a lock left by a
/// crashed process is always taken over rather than reported as busy.
const COMPAT_MAX_ATTEMPTS: u32 = 600;

/// Held lock; both layers are released on drop.
#[derive(Debug)]
pub struct SettingsLock {
    _os_lock: File,
    compat_dir: PathBuf,
}

impl Drop for SettingsLock {
    fn drop(&mut self) {
        if let Err(err) = fs::remove_dir(&self.compat_dir) {
            tracing::warn!(path = %self.compat_dir.display(), %err, "could not release settings lock directory");
        }
        // The OS lock is released when `_os_lock` is closed.
    }
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// Block until this process holds the lock for `settings_path`. Creates the parent directory.
pub fn acquire(settings_path: &Path) -> io::Result<SettingsLock> {
    if let Some(parent) = settings_path.parent()
        && !parent.as_os_str().is_empty()
    {
        fs::create_dir_all(parent)?;
    }
    let os_file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(sibling(settings_path, ".flock"))?;
    os_file.lock()?;

    let compat_dir = sibling(settings_path, ".lock");
    for _ in 0..COMPAT_MAX_ATTEMPTS {
        match fs::create_dir(&compat_dir) {
            Ok(()) => {
                return Ok(SettingsLock {
                    _os_lock: os_file,
                    compat_dir,
                });
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                if is_stale(&compat_dir) {
                    // A crashed holder: remove it and retry at once, as proper-lockfile does.
                    let _ = fs::remove_dir(&compat_dir);
                    continue;
                }
                sleep(COMPAT_RETRY_DELAY);
            }
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::WouldBlock,
        format!("lock {} is held by another process", compat_dir.display()),
    ))
}

fn is_stale(dir: &Path) -> bool {
    let Ok(modified) = fs::metadata(dir).and_then(|m| m.modified()) else {
        return false;
    };
    SystemTime::now()
        .duration_since(modified)
        .is_ok_and(|age| age > COMPAT_STALE_AFTER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_creates_and_releases_compat_dir() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/settings.json");
        {
            let _lock = acquire(&path).unwrap();
            assert!(dir.path().join("sub/settings.json.lock").is_dir());
        }
        assert!(!dir.path().join("sub/settings.json.lock").exists());
        // Re-acquirable after release.
        drop(acquire(&path).unwrap());
    }

    #[test]
    fn stale_compat_dir_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let lock_dir = dir.path().join("settings.json.lock");
        fs::create_dir(&lock_dir).unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        File::open(&lock_dir).unwrap().set_modified(old).unwrap();
        drop(acquire(&path).unwrap());
        assert!(!lock_dir.exists());
    }
}
