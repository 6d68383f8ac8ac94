//! The coding tools (read, bash, edit, write, ls, find, grep, ...) and their safety guards

pub mod bash;
pub mod collate;
pub mod common;
pub mod guards;
pub mod image;
pub mod mutation_queue;
pub mod paths;
pub mod tools;
pub mod truncate;
pub mod walk;
