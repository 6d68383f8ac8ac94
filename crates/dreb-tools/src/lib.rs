//! The coding tools (read, bash, edit, write, ls, find, grep, ...) and their safety guards
