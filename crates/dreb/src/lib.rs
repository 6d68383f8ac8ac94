//! The `dreb` binary's serving layer: stdin read by the serving loop, commands handled concurrently, one ordered
//! stdout writer (which lets a response be written by the thread that made it when nothing is queued).
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
