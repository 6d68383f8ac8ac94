//! Index build time and query latency of the `search` engine on a generated tree.
//! Run: `cargo bench -p dreb-search --bench index` (the model rows need scripts/fetch-search-model.sh, or
//! `DREB_SEARCH_MODEL=<dir>`). Prints a Markdown table: medians of several runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dreb_search::SearchEngine;
use dreb_search::embed::ModelSource;
use dreb_search::scanner::ScanRoots;

/// Deterministic pseudo-random numbers, so every run indexes the same tree.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.next() % words.len()]
    }
}

const NOUNS: [&str; 16] = [
    "user", "session", "token", "cache", "request", "buffer", "config", "index", "stream",
    "record", "queue", "account", "payment", "report", "upload", "schema",
];
const VERBS: [&str; 12] = [
    "load", "save", "parse", "render", "validate", "send", "fetch", "merge", "flush", "encode",
    "open", "close",
];

/// `files` source files (Rust, TypeScript, Python, Markdown in turn), each with a few declarations.
fn generate(root: &Path, files: usize) -> u64 {
    let mut rng = Lcg(7);
    let mut bytes = 0u64;
    for i in 0..files {
        let dir = root.join(format!("src/mod{}", i % 40));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::new();
        let ext = match i % 4 {
            0 => {
                for _ in 0..4 {
                    let (v, n) = (rng.pick(&VERBS), rng.pick(&NOUNS));
                    text.push_str(&format!(
                        "/// {v}s the {n}.\npub fn {v}_{n}_{i}(input: &str) -> Result<String, Error> {{\n    let {n} = input.trim();\n    if {n}.is_empty() {{\n        return Err(Error::Empty);\n    }}\n    Ok(format!(\"{{}}-{v}\", {n}))\n}}\n\n"
                    ));
                }
                "rs"
            }
            1 => {
                let n = rng.pick(&NOUNS);
                text.push_str(&format!("import {{ helper }} from \"../mod{}/file{}.js\";\n\nexport class {}Service{i} {{\n", (i + 1) % 40, i + 1, capitalise(n)));
                for _ in 0..3 {
                    let v = rng.pick(&VERBS);
                    text.push_str(&format!("  {v}(id: string): Promise<void> {{\n    return helper(this.{n}, id);\n  }}\n\n"));
                }
                text.push_str("}\n");
                "ts"
            }
            2 => {
                for _ in 0..3 {
                    let (v, n) = (rng.pick(&VERBS), rng.pick(&NOUNS));
                    text.push_str(&format!("def {v}_{n}(db, key):\n    \"\"\"{v} a {n} by key.\"\"\"\n    row = db.get(key)\n    return row\n\n\n"));
                }
                "py"
            }
            _ => {
                for _ in 0..3 {
                    let (v, n) = (rng.pick(&VERBS), rng.pick(&NOUNS));
                    text.push_str(&format!("## How to {v} a {n}\n\nCall the {v} endpoint with the {n} id; the server answers with the updated {n} record and a status.\n\n"));
                }
                "md"
            }
        };
        bytes += text.len() as u64;
        std::fs::write(dir.join(format!("file{i}.{ext}")), text).unwrap();
    }
    bytes
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn engine(root: &Path, model: ModelSource) -> SearchEngine {
    let roots = ScanRoots {
        project_root: root.to_path_buf(),
        home: None,
        global_memory_dir: None,
    };
    SearchEngine::new(roots, root.join(".dreb/index"), model)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

const QUERIES: [&str; 4] = [
    "validate_token",
    "where are payment records saved",
    "src/mod3/",
    "UserService",
];

/// Cold build, no-op update, and query latency for one tree and model setting.
fn run(label: &str, files: usize, model: ModelSource, builds: usize, queries: usize) {
    let dir = tempfile::tempdir().unwrap();
    let bytes = generate(dir.path(), files);
    let mut build_times = Vec::new();
    let mut chunks = 0;
    for _ in 0..builds {
        let mut e = engine(dir.path(), model.clone());
        e.reset_index();
        let t = Instant::now();
        e.search("warm up", 1, None, &|_, _, _| {}).unwrap();
        build_times.push(t.elapsed());
        chunks = e.stats().unwrap().1;
    }
    let mut e = engine(dir.path(), model.clone());
    let mut noop = Vec::new();
    for _ in 0..queries {
        let t = Instant::now();
        e.update_index(None, &|_, _, _| {}).unwrap();
        noop.push(t.elapsed());
    }
    let mut lat = Vec::new();
    for i in 0..queries {
        let t = Instant::now();
        e.search(QUERIES[i % QUERIES.len()], 20, None, &|_, _, _| {})
            .unwrap();
        lat.push(t.elapsed());
    }
    println!(
        "| {label} | {files} files, {:.1} MB, {chunks} chunks | {} | {} | {} |",
        bytes as f64 / 1e6,
        ms(median(build_times)),
        ms(median(noop)),
        ms(median(lat))
    );
}

fn main() {
    let model_dir = std::env::var_os("DREB_SEARCH_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.models/all-MiniLM-L6-v2")
        });
    println!(
        "| setting | tree | cold index build (median) | no-op update (median) | query incl. update (median) |"
    );
    println!("|---|---|---|---|---|");
    run("full-text only", 2000, ModelSource::Disabled, 3, 20);
    if model_dir.join("model.safetensors").is_file() {
        run(
            "with all-MiniLM-L6-v2",
            200,
            ModelSource::Dir(model_dir),
            1,
            12,
        );
    } else {
        eprintln!("no model at {}: model rows skipped", model_dir.display());
    }
}
