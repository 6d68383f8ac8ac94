//! Why a call to an extension gave no answer.

use std::time::Duration;

/// A call to an extension that did not succeed. The `Display` text is what the host sees in `extension_error`
/// and what the model sees when an extension tool fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtensionError {
    /// The process could not be started.
    Spawn(String),
    /// The process exited (or closed its stdout) before answering: `Extension process exited (...)`.
    Exited(String),
    /// No answer within the timeout.
    Timeout(Duration),
    /// The runtime stopped waiting (the tool was aborted).
    Cancelled,
    /// The extension answered `success: false` with this text.
    Failed(String),
    /// The answer did not match the protocol.
    Protocol(String),
    /// The extension is not running and may not be started again.
    Unavailable(String),
}

impl std::fmt::Display for ExtensionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtensionError::Spawn(s)
            | ExtensionError::Exited(s)
            | ExtensionError::Failed(s)
            | ExtensionError::Unavailable(s) => f.write_str(s),
            ExtensionError::Timeout(d) => {
                write!(f, "Extension hook timed out after {} ms", d.as_millis())
            }
            ExtensionError::Cancelled => f.write_str("Operation aborted"),
            ExtensionError::Protocol(s) => write!(f, "Extension protocol error: {s}"),
        }
    }
}

impl std::error::Error for ExtensionError {}
