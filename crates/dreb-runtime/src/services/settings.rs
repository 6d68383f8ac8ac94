//! Settings: the settings files (`dreb-settings`'s [`SettingsManager`], which keeps its own locks), the two
//! switches a host flips for this session (`set_auto_compaction`, `set_auto_retry`; seeded from the files), and
//! the writes that persist a change off the async threads.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dreb_settings::SettingsManager;

pub(crate) struct Settings {
    manager: Arc<SettingsManager>,
    auto_compaction: AtomicBool,
    auto_retry: AtomicBool,
}

impl Settings {
    pub(crate) fn new(manager: Arc<SettingsManager>) -> Self {
        Settings {
            auto_compaction: AtomicBool::new(manager.compaction_enabled()),
            auto_retry: AtomicBool::new(manager.retry_enabled()),
            manager,
        }
    }

    /// The settings files, for what keeps a handle (the built-in guards, blocking tasks).
    pub(crate) fn manager(&self) -> &Arc<SettingsManager> {
        &self.manager
    }

    pub(crate) fn auto_compaction(&self) -> bool {
        self.auto_compaction.load(Ordering::Acquire)
    }

    pub(crate) fn set_auto_compaction(&self, enabled: bool) {
        self.auto_compaction.store(enabled, Ordering::Release);
    }

    pub(crate) fn auto_retry(&self) -> bool {
        self.auto_retry.load(Ordering::Acquire)
    }

    pub(crate) fn set_auto_retry(&self, enabled: bool) {
        self.auto_retry.store(enabled, Ordering::Release);
    }

    /// Run a settings write off the async threads. A failed write does not undo the live change (the reference
    /// behaves the same); it is logged.
    pub(crate) async fn persist(
        &self,
        f: impl FnOnce(&SettingsManager) -> Result<(), dreb_settings::SettingsError> + Send + 'static,
    ) -> Result<(), String> {
        let settings = self.manager.clone();
        match tokio::task::spawn_blocking(move || f(&settings)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("could not persist a setting: {e}"),
            Err(e) => tracing::warn!("settings write task failed: {e}"),
        }
        Ok(())
    }
}

/// The settings' readers (`shell_path`, `retry_settings`, ...) are the files' own.
impl std::ops::Deref for Settings {
    type Target = SettingsManager;

    fn deref(&self) -> &SettingsManager {
        &self.manager
    }
}
