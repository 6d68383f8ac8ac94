//! The extension-UI dialogs (`ask_user`, the permission gate, extensions' and MCP servers' dialogs): the engine
//! that opens and settles them (its frames go through the outbox), and the mirror of the open ones that the
//! dashboard snapshot reads (see `crate::dialog_tracker` for why a mirror).

use std::sync::Arc;

use dreb_dialog::DialogEngine;
use dreb_protocol::BlockingExtensionUiRequest;

use crate::dialog_tracker::DialogTracker;

pub(crate) struct Dialogs {
    engine: DialogEngine,
    tracker: Arc<DialogTracker>,
}

impl Dialogs {
    pub(crate) fn new(engine: DialogEngine, tracker: Arc<DialogTracker>) -> Self {
        Dialogs { engine, tracker }
    }

    /// The engine, for what keeps its own handle (the tools' `ask_user`, the guards).
    pub(crate) fn engine(&self) -> &DialogEngine {
        &self.engine
    }

    /// The open blocking requests in emission order (`pendingExtensionUiRequests`).
    pub(crate) fn pending(&self) -> Vec<BlockingExtensionUiRequest> {
        self.tracker.pending()
    }
}

/// Opening, answering and settling dialogs is the engine's.
impl std::ops::Deref for Dialogs {
    type Target = DialogEngine;

    fn deref(&self) -> &DialogEngine {
        &self.engine
    }
}
