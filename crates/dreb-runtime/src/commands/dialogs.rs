//! The extension-UI dialogs' answers from the host (`extension_ui_response`).

use dreb_protocol::Input;

use crate::services::dialogs::Dialogs;

/// Route an `extension_ui_response` to the dialog waiting for it (see `Runtime::handle_input`).
pub(crate) fn handle_input(dialogs: &Dialogs, input: &Input) {
    let disposition = dialogs.handle_response(input);
    tracing::debug!(?disposition, "extension_ui_response routed");
}
