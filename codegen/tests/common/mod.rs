//! Shared helpers for the golden and drift tests.

use std::path::Path;

/// A unified diff of `expected` (on disk) against `actual` (freshly generated).
pub fn unified_diff(path: &Path, expected: &str, actual: &str) -> String {
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("{} (checked in)", path.display()),
            &format!("{} (generated)", path.display()),
        )
        .to_string()
}
