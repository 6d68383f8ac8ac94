//! The skills shipped with dreb (`data/skills/<name>/SKILL.md`, compiled in). They are the lowest-priority skill
//! source: any user, project or settings skill of the same name wins.
//!
//! Their paths are reported under the package directory, `<package dir>/skills/<name>/SKILL.md`, as the reference
//! reports its built-in skills. The package directory is `DREB_PACKAGE_DIR` (the reference's override) or else the
//! directory of the executable (the reference's rule for a single-file binary). The texts always come from the
//! binary, never from those paths, so what a build lists does not depend on what happens to lie next to it.

use std::path::{Path, PathBuf};

/// `(name, SKILL.md text)`, in directory order (the order the reference lists its `skills/` directory).
const BUNDLED: [(&str, &str); 8] = [
    (
        "mach6-implement",
        include_str!("../../../data/skills/mach6-implement/SKILL.md"),
    ),
    (
        "mach6-issue",
        include_str!("../../../data/skills/mach6-issue/SKILL.md"),
    ),
    (
        "mach6-plan",
        include_str!("../../../data/skills/mach6-plan/SKILL.md"),
    ),
    (
        "mach6-publish",
        include_str!("../../../data/skills/mach6-publish/SKILL.md"),
    ),
    (
        "mach6-push",
        include_str!("../../../data/skills/mach6-push/SKILL.md"),
    ),
    (
        "mach6-review",
        include_str!("../../../data/skills/mach6-review/SKILL.md"),
    ),
    (
        "model-routing-guide",
        include_str!("../../../data/skills/model-routing-guide/SKILL.md"),
    ),
    (
        "telegram-send",
        include_str!("../../../data/skills/telegram-send/SKILL.md"),
    ),
];

/// Where built-in resources live: `DREB_PACKAGE_DIR` (`~` expanded), else the executable's directory.
pub(crate) fn package_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DREB_PACKAGE_DIR").filter(|d| !d.is_empty()) {
        return Some(match dir.to_str() {
            Some(s) => dreb_paths::expand_tilde(s),
            None => PathBuf::from(dir),
        });
    }
    std::env::current_exe()
        .ok()?
        .parent()
        .map(Path::to_path_buf)
}

/// The compiled-in `(SKILL.md path, text)` pairs, with paths under [`package_dir`].
pub(crate) fn bundled_skills() -> Vec<(PathBuf, &'static str)> {
    let dir = package_dir().unwrap_or_default().join("skills");
    BUNDLED
        .iter()
        .map(|(name, text)| (dir.join(name).join("SKILL.md"), *text))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_skill_names_its_directory_and_has_a_description() {
        for (name, text) in BUNDLED {
            let front = dreb_settings::frontmatter::parse(text);
            assert_eq!(front.error, None, "{name}");
            assert_eq!(front.string("name").as_deref(), Some(name));
            assert!(front.string("description").is_some(), "{name}");
            assert!(!front.body.is_empty(), "{name}");
        }
        let mut names: Vec<&str> = BUNDLED.iter().map(|(n, _)| *n).collect();
        names.sort();
        assert_eq!(names, BUNDLED.map(|(n, _)| n), "kept in directory order");
    }
}
