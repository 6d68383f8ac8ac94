//! The skills shipped with dreb (`data/skills/<name>/SKILL.md`, compiled in). They are the lowest-priority skill
//! source: any user, project or settings skill of the same name wins.
//!
//! Their paths are reported as `<package dir>/skills/<name>/SKILL.md`, the shape the reference reports for its
//! built-in skills. The package directory is `DREB_PACKAGE_DIR` when set (the reference's override: a directory
//! that holds the package's files, which dreb never writes to), else `<agentDir>/package/<version>`, where the
//! compiled-in files are written on discovery (start-up, `reload`) whenever they are missing or differ, so the path
//! a model is given can be read with any tool (`read`, `bash`, `ls`). The texts always come from the binary: a
//! changed copy on disk is rewritten, and one version's files never overwrite another's. See ADR 0011.

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

/// `DREB_PACKAGE_DIR` (`~` expanded), if set and not empty.
fn package_dir_override() -> Option<PathBuf> {
    let dir = std::env::var_os("DREB_PACKAGE_DIR").filter(|d| !d.is_empty())?;
    Some(match dir.to_str() {
        Some(s) => dreb_paths::expand_tilde(s),
        None => PathBuf::from(dir),
    })
}

/// The directory dreb keeps this version's package files in, under the agent dir.
fn materialised_package_dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join("package").join(env!("CARGO_PKG_VERSION"))
}

/// Writes `text` to `path` unless it already holds exactly that (through a temporary file and a rename, so a
/// reader never sees half a file).
fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read(path).is_ok_and(|on_disk| on_disk == text.as_bytes()) {
        return Ok(());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".SKILL.md.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The compiled-in `(SKILL.md path, text)` pairs, with paths under the package directory (see the module docs).
/// Without `DREB_PACKAGE_DIR` the files are written under `agent_dir` first; a write that fails is logged and the
/// skill is still listed.
pub(crate) fn bundled_skills(agent_dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let (dir, materialise) = match package_dir_override() {
        Some(dir) => (dir, false),
        None => (materialised_package_dir(agent_dir), true),
    };
    let dir = dir.join("skills");
    BUNDLED
        .iter()
        .map(|(name, text)| {
            let path = dir.join(name).join("SKILL.md");
            if materialise && let Err(e) = write_if_changed(&path, text) {
                tracing::warn!("could not write the bundled skill {}: {e}", path.display());
            }
            (path, *text)
        })
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

    #[test]
    fn missing_or_changed_copies_are_rewritten_and_equal_ones_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/SKILL.md");
        write_if_changed(&path, "one").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one");
        let before = std::fs::metadata(&path).unwrap().modified().unwrap();
        write_if_changed(&path, "one").unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().modified().unwrap(),
            before
        );
        std::fs::write(&path, "edited").unwrap();
        write_if_changed(&path, "one").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one");
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }
}
