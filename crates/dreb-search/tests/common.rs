//! Shared by the search crate's integration tests: a small project tree, the engine over it, and the test
//! embedding model's location.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use dreb_search::embed::ModelSource;
use dreb_search::scanner::ScanRoots;
use dreb_search::{SearchEngine, SearchOutcome};

pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A project with code in three languages and some docs.
pub fn fixture(root: &Path) {
    write(
        root,
        "src/auth/rate_limit.ts",
        "import { Clock } from \"../util/clock.js\";\n\n/** Throttles requests per client with a token bucket. */\nexport class RateLimiter {\n  private tokens = new Map<string, number>();\n\n  allow(clientId: string): boolean {\n    const left = this.tokens.get(clientId) ?? 10;\n    if (left <= 0) return false;\n    this.tokens.set(clientId, left - 1);\n    return true;\n  }\n}\n",
    );
    write(
        root,
        "src/util/clock.ts",
        "export function now(): number {\n  return Date.now();\n}\n\nexport class Clock {\n  tick() { return now(); }\n}\n",
    );
    write(
        root,
        "src/db/store.py",
        "import sqlite3\n\n\nclass Store:\n    \"\"\"Persists user records in SQLite.\"\"\"\n\n    def save_user(self, user):\n        self.conn.execute(\"INSERT INTO users VALUES (?)\", (user,))\n\n\ndef open_database(path):\n    return sqlite3.connect(path)\n",
    );
    write(
        root,
        "src/render.rs",
        "/// Draws the chart as SVG.\npub fn render_chart(points: &[f64]) -> String {\n    let mut svg = String::from(\"<svg>\");\n    for p in points {\n        svg.push_str(&format!(\"<circle r='{p}'/>\"));\n    }\n    svg\n}\n",
    );
    write(
        root,
        "docs/guide.md",
        "# Guide\n\nHow to deploy the service to production with docker compose.\n",
    );
    write(root, ".gitignore", "secret/\n");
    write(root, "secret/keys.md", "# Keys\n\nRateLimiter secret\n");
}

pub fn engine(root: &Path, model: ModelSource) -> SearchEngine {
    let roots = ScanRoots {
        project_root: root.to_path_buf(),
        home: None,
        global_memory_dir: None,
    };
    SearchEngine::new(roots, root.join(".dreb/index"), model)
}

pub fn search(engine: &mut SearchEngine, query: &str) -> SearchOutcome {
    engine.search(query, 20, None, &|_, _, _| {}).unwrap()
}

pub fn paths(outcome: &SearchOutcome) -> Vec<String> {
    outcome
        .results
        .iter()
        .map(|r| r.chunk.file_path.clone())
        .collect()
}

/// The test model (scripts/fetch-search-model.sh), or `None` when it is not installed and not required
/// (`DREB_REQUIRE_SEARCH_MODEL=1`, set by scripts/test-all.sh, turns its absence into a failure).
pub fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("DREB_SEARCH_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.models/all-MiniLM-L6-v2")
        });
    if dir.join("model.safetensors").is_file() {
        return Some(dir);
    }
    if std::env::var_os("DREB_REQUIRE_SEARCH_MODEL").is_some_and(|v| v == "1") {
        panic!(
            "the search test model is missing at {} (run scripts/fetch-search-model.sh)",
            dir.display()
        );
    }
    eprintln!(
        "skipping: no search test model at {} (run scripts/fetch-search-model.sh)",
        dir.display()
    );
    None
}
