//! The drift check: the checked-in generated files are exactly what the backends write now. A file is a problem
//! when it differs (stale), is missing, is written twice or lacks the banner, and when it is **extra**: a file in
//! one of [`crate::GENERATED_DIRS`] that no backend writes, or a file carrying the banner (in its first lines)
//! next to a generated file that no backend writes any more.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::{BANNERS, GENERATED_DIRS, GeneratedFile};

/// One problem found by [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// The checked-in file differs from the generated one.
    Stale {
        path: PathBuf,
        on_disk: String,
        generated: String,
    },
    /// A generated file is not checked in.
    Missing(PathBuf),
    /// A file in a generated location that no backend writes.
    Extra(PathBuf),
    /// Two backends write the same path.
    Duplicate(PathBuf),
    /// A generated file does not carry the banner.
    NoBanner(PathBuf),
}

/// Compares `files` (what the backends produce) with the tree under `root`.
pub fn check(root: &Path, files: &[GeneratedFile]) -> Vec<Drift> {
    let mut problems = Vec::new();
    let mut written = BTreeSet::new();
    for file in files {
        if !written.insert(file.path.clone()) {
            problems.push(Drift::Duplicate(file.path.clone()));
            continue;
        }
        if !BANNERS.iter().any(|b| file.contents.contains(b)) {
            problems.push(Drift::NoBanner(file.path.clone()));
        }
        match std::fs::read_to_string(root.join(&file.path)) {
            Ok(on_disk) if on_disk == file.contents => {}
            Ok(on_disk) => problems.push(Drift::Stale {
                path: file.path.clone(),
                on_disk,
                generated: file.contents.clone(),
            }),
            Err(_) => problems.push(Drift::Missing(file.path.clone())),
        }
    }
    for extra in extra_files(root, &written) {
        problems.push(Drift::Extra(extra));
    }
    problems
}

/// Files in generated locations that are not in `written`: everything under [`GENERATED_DIRS`], and files with
/// the banner directly in a folder that holds a generated file.
fn extra_files(root: &Path, written: &BTreeSet<PathBuf>) -> BTreeSet<PathBuf> {
    let mut candidates = BTreeSet::new();
    for dir in GENERATED_DIRS {
        walk(root, Path::new(dir), true, &mut candidates);
    }
    let neighbours: BTreeSet<PathBuf> = written
        .iter()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .filter(|d| !GENERATED_DIRS.iter().any(|g| d.starts_with(g)))
        .collect();
    for dir in neighbours {
        let mut files = BTreeSet::new();
        walk(root, &dir, false, &mut files);
        candidates.extend(files.into_iter().filter(|f| carries_banner(&root.join(f))));
    }
    candidates.retain(|p| !written.contains(p));
    candidates
}

/// Files under `root/rel` (relative to `root`); into subfolders when `deep`.
fn walk(root: &Path, rel: &Path, deep: bool, out: &mut BTreeSet<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    for entry in entries.flatten() {
        let rel = rel.join(entry.file_name());
        match entry.file_type() {
            Ok(t) if t.is_dir() => {
                if deep {
                    walk(root, &rel, deep, out);
                }
            }
            Ok(_) => {
                out.insert(rel);
            }
            Err(_) => {}
        }
    }
}

/// A banner (of any spec) is in the file's first three lines (after a comment marker, or as a JSON `$comment`).
fn carries_banner(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| {
        String::from_utf8_lossy(&bytes[..bytes.len().min(4096)])
            .lines()
            .take(3)
            .any(|l| BANNERS.iter().any(|b| l.contains(b)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BANNER;

    fn file(path: &str, contents: &str) -> GeneratedFile {
        GeneratedFile {
            path: PathBuf::from(path),
            contents: contents.to_string(),
        }
    }

    #[test]
    fn stale_missing_and_extra_files_are_found() {
        let root = tempfile::tempdir().unwrap();
        let write = |p: &str, s: &str| {
            let p = root.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        let banner = format!("// {BANNER}\n");
        let gen_dir = GENERATED_DIRS[0];
        write(&format!("{gen_dir}/kept.ts"), &format!("{banner}a\n"));
        write(&format!("{gen_dir}/old.ts"), "no banner, still extra\n");
        write("mixed/_generated.py", &format!("{banner}old\n"));
        write("mixed/_old_generated.py", &format!("{banner}x\n"));
        write(
            "mixed/hand_written.py",
            "mentions the banner later\n\n\n\n// generated by\n",
        );
        let files = [
            file(&format!("{gen_dir}/kept.ts"), &format!("{banner}a\n")),
            file("mixed/_generated.py", &format!("{banner}new\n")),
            file("mixed/missing.py", &format!("{banner}m\n")),
            file("mixed/no_banner.py", "x\n"),
        ];
        let problems = check(root.path(), &files);
        let kinds: Vec<String> = problems
            .iter()
            .map(|p| match p {
                Drift::Stale { path, .. } => format!("stale {}", path.display()),
                Drift::Missing(p) => format!("missing {}", p.display()),
                Drift::Extra(p) => format!("extra {}", p.display()),
                Drift::Duplicate(p) => format!("duplicate {}", p.display()),
                Drift::NoBanner(p) => format!("no banner {}", p.display()),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "stale mixed/_generated.py".to_string(),
                "missing mixed/missing.py".into(),
                "no banner mixed/no_banner.py".into(),
                "missing mixed/no_banner.py".into(),
                format!("extra {gen_dir}/old.ts"),
                "extra mixed/_old_generated.py".into(),
            ]
        );
    }
}
