//! The `dreb` binary's serving layer: one stdin reader, commands handled concurrently, one ordered stdout writer.
//!
//! stdout carries protocol frames only; logs go to stderr through `tracing`.

pub mod args;
pub mod file_args;
pub mod one_off;
pub mod output;
pub mod pipe_space;
pub mod print_mode;
pub mod server;
pub mod stdio;

pub use output::{Output, OutputClosed, OutputOptions};
pub use server::{InputRouter, ServeOptions, ServeOutcome, serve, termination_signal};
