//! Safety guards the runtime's tool hooks call: forbidden commands and sensitive paths before a call, secret
//! scrubbing after it. They cannot be bypassed by extensions; the user's own RPC `bash` is not guarded.

pub mod forbidden;
pub mod secrets;
pub mod sensitive;

pub use forbidden::{FORBIDDEN_COMMAND_GUIDANCE, check_bash_command, is_forbidden_command};
pub use secrets::{
    SecretPattern, compile_extra_secret_patterns, scrub_secrets, scrub_tool_content,
};
pub use sensitive::{check_read_path, sensitive_path_match};
