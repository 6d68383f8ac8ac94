//! Settings files, context files and context-folder trust
