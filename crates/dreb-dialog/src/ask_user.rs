//! The `ask_user` tool's UI: [`dreb_tools::Dialog`] implemented with the engine's `ask`.

use async_trait::async_trait;
use dreb_tools::{AskOptions, AskOutcome, AskRequest, Dialog, DialogError};

use crate::engine::{DialogEngine, DialogOptions};

#[async_trait]
impl Dialog for DialogEngine {
    /// One `ask` request with the default title. Cancel, timeout, abort and shutdown are
    /// [`AskOutcome::Cancelled`]; a malformed host answer is the `Err` the tool reports as a UI failure.
    async fn ask(
        &self,
        request: AskRequest,
        options: AskOptions,
    ) -> Result<AskOutcome, DialogError> {
        let questions = request.questions;
        let opts = DialogOptions {
            timeout: options.timeout,
            cancel: Some(options.cancel),
        };
        Ok(
            match DialogEngine::ask(self, None, questions, opts).await? {
                Some(result) => AskOutcome::Answered(result),
                None => AskOutcome::Cancelled,
            },
        )
    }
}
