//! Lock helpers shared by every module.

use std::sync::{Mutex, MutexGuard};

/// Lock `m`, taking the value over from a thread that panicked while holding it (the state is still consistent
/// for our uses: every critical section leaves it whole).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
