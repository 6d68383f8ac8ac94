//! Shell execution shared by the `bash` tool and the RPC `bash` command.

pub mod capture;
pub mod executor;
pub mod process;
pub mod runner;
pub mod sanitize;
pub mod shell;
pub mod terminal;

pub use executor::{BashExecOptions, BashResult, BashSlot, apply_prefix, execute_bash};
pub use process::{ExecEnd, SpawnSpec, check_cwd, run_command};
pub use runner::{CommandRun, CommandRunner, LocalRunner, OnData};
pub use shell::{ShellConfig, resolve_shell, resolve_shell_with_settings, shell_env};

#[cfg(test)]
mod tests;
