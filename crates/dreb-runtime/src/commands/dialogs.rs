//! The extension-UI dialogs' answers from the host (`extension_ui_response`).

use dreb_protocol::Input;

use crate::runtime::Runtime;

impl Runtime {
    /// Routes a non-command input from the host (an `extension_ui_response`) to the dialog waiting for it. Unknown
    /// or settled ids are ignored, like the reference; nothing is ever answered.
    pub fn handle_input(&self, input: &Input) {
        let disposition = self.inner.dialog.handle_response(input);
        tracing::debug!(?disposition, "extension_ui_response routed");
    }
}
