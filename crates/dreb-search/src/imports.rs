//! Import edges between files, found with simple per-language patterns: relative JS/TS imports and `require`s,
//! Python relative imports, Go import paths, Rust `use crate::/super::/self::`, Java imports, C/C++ local
//! `#include "..."`. Targets are project-relative paths (JS/TS without their extension).

use std::sync::LazyLock;

use regex::Regex;

use crate::types::FileType;

static JS_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:import\s+.*?\s+from\s+|import\s*\(|require\s*\()\s*['"]([^'"]+)['"]"#).unwrap()
});
static PY_FROM: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"from\s+(\.\S*)\s+import").unwrap());
static GO_IMPORT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"import\s+(?:\(\s*([\s\S]*?)\s*\)|"([^"]+)")"#).unwrap());
static QUOTED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""([^"]+)""#).unwrap());
static RUST_USE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"use\s+((?:crate|super|self)::[\w:]+)").unwrap());
static JAVA_IMPORT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"import\s+([\w.]+)\s*;").unwrap());
static C_INCLUDE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"#include\s+"([^"]+)""#).unwrap());
static JS_EXT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\.[jt]sx?$").unwrap());

/// `path.posix.join` + normalisation: `.` and `..` segments resolved, no leading `./`.
pub fn posix_join(base: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let leading_up = |parts: &Vec<&str>| parts.last().is_none_or(|p| *p == "..");
    for seg in base.split('/').chain(rel.split('/')) {
        match seg {
            "" | "." => {}
            ".." if !leading_up(&parts) => {
                parts.pop();
            }
            _ => parts.push(seg),
        }
    }
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

fn dirname(path: &str) -> &str {
    path.rsplit_once('/').map_or(".", |(d, _)| d)
}

/// The files `content` (at `file_path`) imports.
pub fn extract_imports(content: &str, file_path: &str, file_type: FileType) -> Vec<String> {
    let dir = dirname(file_path);
    match file_type {
        FileType::TypeScript | FileType::Tsx | FileType::JavaScript => JS_IMPORT
            .captures_iter(content)
            .map(|c| c[1].to_string())
            .filter(|t| t.starts_with('.'))
            .map(|t| posix_join(dir, &JS_EXT.replace(&t, "")))
            .collect(),
        FileType::Python => PY_FROM
            .captures_iter(content)
            .filter_map(|c| python_relative(dir, &c[1]))
            .collect(),
        FileType::Go => GO_IMPORT
            .captures_iter(content)
            .flat_map(|c| match (c.get(1), c.get(2)) {
                (_, Some(single)) => vec![single.as_str().to_string()],
                (Some(block), None) => QUOTED
                    .captures_iter(block.as_str())
                    .map(|q| q[1].to_string())
                    .collect(),
                _ => Vec::new(),
            })
            .collect(),
        FileType::Rust => RUST_USE
            .captures_iter(content)
            .map(|c| c[1].replace("::", "/"))
            .collect(),
        FileType::Java => JAVA_IMPORT
            .captures_iter(content)
            .map(|c| c[1].replace('.', "/"))
            .collect(),
        FileType::C | FileType::Cpp => C_INCLUDE
            .captures_iter(content)
            .map(|c| posix_join(dir, &c[1]))
            .collect(),
        _ => Vec::new(),
    }
}

/// `from ..pkg.mod import x` in `a/b/c.py` → `a/pkg/mod`.
fn python_relative(dir: &str, spec: &str) -> Option<String> {
    if spec == "." {
        return Some(dir.to_string());
    }
    let dots = spec.chars().take_while(|c| *c == '.').count();
    if dots == 0 {
        return None;
    }
    let mut base = dir.to_string();
    for _ in 0..dots - 1 {
        base = dirname(&base).to_string();
    }
    let rest = spec[dots..].replace('.', "/");
    Some(if rest.is_empty() {
        base
    } else {
        posix_join(&base, &rest)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_language_imports() {
        let ts = "import { a } from './auth/session.js';\nimport x from 'react';\nconst y = require(\"../util\");";
        assert_eq!(
            extract_imports(ts, "src/app/main.ts", FileType::TypeScript),
            vec!["src/app/auth/session", "src/util"]
        );
        assert_eq!(
            extract_imports(
                "from ..core.db import open\nfrom . import x",
                "pkg/api/views.py",
                FileType::Python
            ),
            vec!["pkg/core/db", "pkg/api"]
        );
        assert_eq!(
            extract_imports(
                "use crate::db::open;\nuse std::fmt;",
                "src/a.rs",
                FileType::Rust
            ),
            vec!["crate/db/open"]
        );
        assert_eq!(
            extract_imports(
                "import (\n\t\"fmt\"\n\t\"example.com/x\"\n)",
                "m.go",
                FileType::Go
            ),
            vec!["fmt", "example.com/x"]
        );
        assert_eq!(
            extract_imports(
                "#include \"../inc/util.h\"\n#include <stdio.h>",
                "src/m.c",
                FileType::C
            ),
            vec!["inc/util.h"]
        );
    }
}
