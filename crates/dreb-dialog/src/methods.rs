//! The ten `extension_ui_request` methods: five blocking dialogs and five fire-and-forget requests.

use std::time::Duration;

use dreb_protocol::consts;
use dreb_protocol::{
    AskQuestion, BlockingExtensionUiRequest, ExtensionUiAskRequest, ExtensionUiConfirmRequest,
    ExtensionUiEditorRequest, ExtensionUiInputRequest, ExtensionUiNotifyRequest,
    ExtensionUiRequest, ExtensionUiSelectRequest, ExtensionUiSetEditorTextRequest,
    ExtensionUiSetStatusRequest, ExtensionUiSetTitleRequest, ExtensionUiSetWidgetRequest,
    NotifyType, WidgetPlacement,
};
use dreb_tools::{AskResult, DialogError};

use crate::engine::{DialogEnd, DialogEngine, DialogOptions, new_id, now_ms};
use crate::response::{confirmed, is_cancelled, parse_ask_answers, text_value};

/// The `ask` title when the caller gives none.
pub const DEFAULT_ASK_TITLE: &str = "Question";

impl DialogEngine {
    /// `select`: the chosen option, or `None` when cancelled, timed out, aborted or shut down (or answered
    /// with something other than a string `value`).
    pub async fn select(
        &self,
        title: &str,
        options: &[String],
        opts: DialogOptions,
    ) -> Option<String> {
        match self.select_end(title, options, opts).await {
            DialogEnd::Host(frame) => text_value(&frame),
            _ => None,
        }
    }

    pub(crate) async fn select_end(
        &self,
        title: &str,
        options: &[String],
        opts: DialogOptions,
    ) -> DialogEnd {
        let id = new_id();
        let request = ExtensionUiSelectRequest {
            r#type: consts::ExtensionUiSelectRequestType,
            id: id.clone(),
            method: consts::ExtensionUiSelectRequestMethod,
            title: title.to_string(),
            options: options.to_vec(),
            timeout: opts.wire_timeout_ms(),
        };
        self.blocking(id, request.into(), opts).await
    }

    /// `confirm`: the host's `confirmed`, or `false` when cancelled, timed out, aborted or shut down (or
    /// answered with anything but a boolean `confirmed`).
    pub async fn confirm(&self, title: &str, message: &str, opts: DialogOptions) -> bool {
        let id = new_id();
        let request = ExtensionUiConfirmRequest {
            r#type: consts::ExtensionUiConfirmRequestType,
            id: id.clone(),
            method: consts::ExtensionUiConfirmRequestMethod,
            title: title.to_string(),
            message: message.to_string(),
            timeout: opts.wire_timeout_ms(),
        };
        match self.blocking(id, request.into(), opts).await {
            DialogEnd::Host(frame) => confirmed(&frame),
            _ => false,
        }
    }

    /// `input`: the typed text, or `None` when cancelled, timed out, aborted or shut down.
    pub async fn input(
        &self,
        title: &str,
        placeholder: Option<&str>,
        opts: DialogOptions,
    ) -> Option<String> {
        let id = new_id();
        let request = ExtensionUiInputRequest {
            r#type: consts::ExtensionUiInputRequestType,
            id: id.clone(),
            method: consts::ExtensionUiInputRequestMethod,
            title: title.to_string(),
            placeholder: placeholder.map(str::to_string),
            timeout: opts.wire_timeout_ms(),
        };
        match self.blocking(id, request.into(), opts).await {
            DialogEnd::Host(frame) => text_value(&frame),
            _ => None,
        }
    }

    /// `editor`: the edited text, or `None` when cancelled or shut down. Like the reference it has no
    /// timeout and no abort (the wire type has no `timeout`); dropping the returned future settles it.
    pub async fn editor(&self, title: &str, prefill: Option<&str>) -> Option<String> {
        let id = new_id();
        let request = ExtensionUiEditorRequest {
            r#type: consts::ExtensionUiEditorRequestType,
            id: id.clone(),
            method: consts::ExtensionUiEditorRequestMethod,
            title: title.to_string(),
            prefill: prefill.map(str::to_string),
        };
        match self.run_dialog(id, request.into(), None, None).await {
            DialogEnd::Host(frame) => text_value(&frame),
            _ => None,
        }
    }

    /// `ask`: a batch of questions (the `ask_user` tool's wizard). Single-flight: while one ask is
    /// outstanding, further asks wait in FIFO order and are emitted only after it settles; a queued ask
    /// whose token is cancelled (or that is released by shutdown) resolves to `None` without being emitted.
    ///
    /// `Ok(Some(answers))` for an answer (all-skipped answers included: a valid submit, not a stop);
    /// `Ok(None)` for cancel, timeout, abort or shutdown, where cancel, timeout and shutdown also call the
    /// stop hook ([`set_ask_stop_hook`](Self::set_ask_stop_hook)); `Err` with the reference's exact text
    /// for a malformed answer (the dialog is still settled and its handled event emitted).
    pub async fn ask(
        &self,
        title: Option<&str>,
        questions: Vec<AskQuestion>,
        opts: DialogOptions,
    ) -> Result<Option<AskResult>, DialogError> {
        let cancel = opts.cancel.clone();
        if cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            return Ok(None);
        }
        let permit = tokio::select! {
            biased;
            _ = async {
                match &cancel {
                    Some(c) => c.cancelled().await,
                    None => std::future::pending().await,
                }
            } => return Ok(None),
            permit = self.inner.ask_slot.acquire() => match permit {
                Ok(p) => p,
                Err(_) => return Ok(None), // closed: shut down while queued
            },
        };
        let id = new_id();
        let timeout_ms = opts.wire_timeout_ms();
        let request = ExtensionUiAskRequest {
            r#type: consts::ExtensionUiAskRequestType,
            id: id.clone(),
            method: consts::ExtensionUiAskRequestMethod,
            title: title.unwrap_or(DEFAULT_ASK_TITLE).to_string(),
            questions,
            timeout: timeout_ms,
            expires_at: timeout_ms.map(|t| now_ms().saturating_add(t)),
        };
        let timer = timeout_ms.map(|t| Duration::from_millis(t as u64));
        let end = self.run_dialog(id, request.into(), timer, cancel).await;
        // Decide (and stop the turn) before releasing the slot, so a queued ask of the same turn sees the
        // stop before it could be emitted.
        let result = match end {
            DialogEnd::Host(frame) if is_cancelled(&frame) => {
                self.call_ask_stop();
                Ok(None)
            }
            DialogEnd::Host(frame) => parse_ask_answers(&frame).map(Some),
            DialogEnd::TimedOut | DialogEnd::Shutdown => {
                self.call_ask_stop();
                Ok(None)
            }
            DialogEnd::Aborted | DialogEnd::Refused => Ok(None),
        };
        drop(permit);
        result
    }

    /// Runs a blocking dialog with the timer the wire announces.
    async fn blocking(
        &self,
        id: String,
        request: BlockingExtensionUiRequest,
        opts: DialogOptions,
    ) -> DialogEnd {
        let timer = opts
            .wire_timeout_ms()
            .map(|t| Duration::from_millis(t as u64));
        self.run_dialog(id, request, timer, opts.cancel).await
    }

    /// `notify` (fire-and-forget). `notify_type: None` leaves `notifyType` absent (the host shows `info`).
    pub fn notify(&self, message: &str, notify_type: Option<NotifyType>) {
        self.emit(&ExtensionUiRequest::Notify(ExtensionUiNotifyRequest {
            r#type: consts::ExtensionUiNotifyRequestType,
            id: new_id(),
            method: consts::ExtensionUiNotifyRequestMethod,
            message: message.to_string(),
            notify_type,
        }));
    }

    /// `setStatus` (fire-and-forget). `text: None` clears the entry for `key`.
    pub fn set_status(&self, key: &str, text: Option<&str>) {
        self.emit(&ExtensionUiRequest::SetStatus(
            ExtensionUiSetStatusRequest {
                r#type: consts::ExtensionUiSetStatusRequestType,
                id: new_id(),
                method: consts::ExtensionUiSetStatusRequestMethod,
                status_key: key.to_string(),
                status_text: text.map(str::to_string),
            },
        ));
    }

    /// `setWidget` (fire-and-forget). `lines: None` clears the widget for `key`.
    pub fn set_widget(
        &self,
        key: &str,
        lines: Option<Vec<String>>,
        placement: Option<WidgetPlacement>,
    ) {
        self.emit(&ExtensionUiRequest::SetWidget(
            ExtensionUiSetWidgetRequest {
                r#type: consts::ExtensionUiSetWidgetRequestType,
                id: new_id(),
                method: consts::ExtensionUiSetWidgetRequestMethod,
                widget_key: key.to_string(),
                widget_lines: lines,
                widget_placement: placement,
            },
        ));
    }

    /// `setTitle` (fire-and-forget).
    pub fn set_title(&self, title: &str) {
        self.emit(&ExtensionUiRequest::SetTitle(ExtensionUiSetTitleRequest {
            r#type: consts::ExtensionUiSetTitleRequestType,
            id: new_id(),
            method: consts::ExtensionUiSetTitleRequestMethod,
            title: title.to_string(),
        }));
    }

    /// `set_editor_text` (fire-and-forget; also what the reference's `pasteToEditor` sends).
    pub fn set_editor_text(&self, text: &str) {
        self.emit(&ExtensionUiRequest::SetEditorText(
            ExtensionUiSetEditorTextRequest {
                r#type: consts::ExtensionUiSetEditorTextRequestType,
                id: new_id(),
                method: consts::ExtensionUiSetEditorTextRequestMethod,
                text: text.to_string(),
            },
        ));
    }
}
