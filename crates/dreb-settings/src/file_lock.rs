//! Cross-process lock around a settings file's read-modify-write.
//!
//! Two layers, taken in this order:
//! 1. An OS advisory lock (`std::fs::File::lock`: `flock` / `LockFileEx`) on a sidecar file
//!    `<settings>.flock`. The kernel releases it if the holder dies, so Rust processes never
//!    wait on a crashed peer. (The settings file itself cannot carry the lock: every write
//!    replaces it by rename.) On Unix the holder deletes the sidecar before unlocking, so no
//!    stray file is left in a project's `.dreb/`; a waiter that then wins the lock on the
//!    deleted inode notices and retries on the current one.
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
    os_file: File,
    sidecar: PathBuf,
    compat_dir: PathBuf,
}

impl Drop for SettingsLock {
    fn drop(&mut self) {
        if let Err(err) = fs::remove_dir(&self.compat_dir) {
            tracing::warn!(path = %self.compat_dir.display(), %err, "could not release settings lock directory");
        }
        // Delete the sidecar while still holding it (see module docs); unlock on close.
        #[cfg(unix)]
        let _ = fs::remove_file(&self.sidecar);
        let _ = self.os_file.unlock();
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

/// True when `file` is still the file at `path` (not a sidecar deleted by the last holder).
#[cfg(unix)]
fn is_current(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn is_current(_file: &File, _path: &Path) -> bool {
    true
}

fn lock_sidecar(sidecar: &Path) -> io::Result<File> {
    loop {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(sidecar)?;
        file.lock()?;
        if is_current(&file, sidecar) {
            return Ok(file);
        }
    }
}

/// Block until this process holds the lock for `settings_path`. Creates the parent directory.
pub fn acquire(settings_path: &Path) -> io::Result<SettingsLock> {
    if let Some(parent) = settings_path.parent()
        && !parent.as_os_str().is_empty()
    {
        fs::create_dir_all(parent)?;
    }
    let sidecar = sibling(settings_path, ".flock");
    let os_file = lock_sidecar(&sidecar)?;

    let compat_dir = sibling(settings_path, ".lock");
    for _ in 0..COMPAT_MAX_ATTEMPTS {
        match fs::create_dir(&compat_dir) {
            Ok(()) => {
                return Ok(SettingsLock {
                    os_file,
                    sidecar,
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
            Err(err) => {
                #[cfg(unix)]
                let _ = fs::remove_file(&sidecar);
                return Err(err);
            }
        }
    }
    #[cfg(unix)]
    let _ = fs::remove_file(&sidecar);
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
        #[cfg(unix)]
        assert!(
            !dir.path().join("sub/settings.json.flock").exists(),
            "no stray sidecar"
        );
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
