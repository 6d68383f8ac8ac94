//! grep and find over a large generated tree, side by side with ripgrep (`rg`), which the reference spawns.
//! Run: `cargo bench -p dreb-tools --bench search`. The rg column is skipped when `rg` is not on PATH.
//! Prints a Markdown table (median of several warm runs).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dreb_agent::Tool;
use dreb_tools::tools::find::{FindTool, find_paths};
use dreb_tools::tools::grep::{GrepQuery, GrepTool, search_paths};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;
const RUNS: usize = 7;

/// Deterministic pseudo-random words, so every run searches the same tree.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

const WORDS: [&str; 16] = [
    "let", "value", "return", "config", "parse", "error", "match", "struct", "impl", "async",
    "buffer", "stream", "token", "index", "result", "option",
];

fn generate(root: &Path) -> (usize, u64) {
    let mut rng = Lcg(42);
    let mut bytes = 0u64;
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".gitignore"), "build/\n*.tmp\n").unwrap();
    let mut files = 0;
    for d in 0..DIRS {
        let dir = root.join(format!("pkg{:03}/src/mod{}", d, d % 7));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES_PER_DIR {
            let ext = ["rs", "ts", "md", "json", "tmp"][f % 5];
            let mut out = String::new();
            let lines = 40 + (rng.next() % 80) as usize;
            for l in 0..lines {
                let n = 4 + (rng.next() % 10) as usize;
                let words: Vec<&str> = (0..n).map(|_| WORDS[(rng.next() % 16) as usize]).collect();
                out.push_str(&format!(
                    "fn {}_{}({}) // line {l}\n",
                    words[0],
                    rng.next() % 1000,
                    words[1..].join(" ")
                ));
            }
            if (d * FILES_PER_DIR + f).is_multiple_of(997) {
                out.push_str("the rare needle_token_xyz lives here\n");
            }
            bytes += out.len() as u64;
            std::fs::write(dir.join(format!("file{f}.{ext}")), out).unwrap();
            files += 1;
        }
        // An ignored build dir in every package: both tools must skip it.
        let build = root.join(format!("pkg{d:03}/build"));
        std::fs::create_dir_all(&build).unwrap();
        std::fs::write(
            build.join("out.rs"),
            "needle_token_xyz ignored\n".repeat(50),
        )
        .unwrap();
    }
    (files, bytes)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time<F: FnMut() -> usize>(mut f: F) -> (Duration, usize) {
    let n = f(); // warm-up (and page cache)
    let runs: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .collect();
    (median(runs), n)
}

fn rg_available() -> bool {
    Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A first rg argument of ours (not an rg flag): read only this many lines of rg's output, then stop it, as a
/// tool that shows the first `limit` matches would.
const FIRST_LINES: &str = "@first-lines=";

/// Run rg and count its output lines.
fn rg(args: &[&str], root: &Path) -> usize {
    if let Some(n) = args.first().and_then(|a| a.strip_prefix(FIRST_LINES)) {
        use std::io::{BufRead, BufReader};
        let n: usize = n.parse().unwrap();
        let mut child = Command::new("rg")
            .args(&args[1..])
            .arg(root)
            .stdout(Stdio::piped())
            .spawn()
            .expect("rg runs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut got = 0;
        while got < n && lines.next().is_some() {
            got += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
        return got;
    }
    let out = Command::new("rg")
        .args(args)
        .arg(root)
        .output()
        .expect("rg runs");
    out.stdout.iter().filter(|b| **b == b'\n').count()
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let root: PathBuf = tmp.path().to_path_buf();
    let t = Instant::now();
    let (files, bytes) = generate(&root);
    eprintln!(
        "generated {files} files, {:.1} MB in {:.1}s",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let have_rg = rg_available();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let roots = vec![root.clone()];
    let q = |pattern: &str, literal: bool| GrepQuery {
        pattern: pattern.into(),
        glob: None,
        ignore_case: false,
        literal,
        limit: usize::MAX,
    };

    type Case<'a> = (
        &'a str,
        Box<dyn FnMut() -> usize + 'a>,
        Option<Vec<&'a str>>,
    );
    let grep_tool = GrepTool::new(&root);
    let find_tool = FindTool::new(&root);
    let cases: Vec<Case> = vec![
        (
            "grep rare literal (few matches)",
            Box::new(|| {
                search_paths(
                    &q("needle_token_xyz", true),
                    &roots,
                    &CancellationToken::new(),
                )
                .unwrap()
                .total_matches
            }),
            Some(vec![
                "--hidden",
                "-n",
                "--no-heading",
                "-F",
                "needle_token_xyz",
            ]),
        ),
        (
            "grep regex, every match (~640k lines)",
            Box::new(|| {
                search_paths(
                    &q(r"fn \w+_\d+\(", false),
                    &roots,
                    &CancellationToken::new(),
                )
                .unwrap()
                .total_matches
            }),
            Some(vec!["--hidden", "-n", "--no-heading", r"fn \w+_\d+\("]),
        ),
        (
            "grep common regex, first 100 matches (rg: its first 100 lines, then stopped)",
            Box::new(|| {
                let mut query = q(r"fn \w+_\d+\(", false);
                query.limit = 100;
                let out = search_paths(&query, &roots, &CancellationToken::new()).unwrap();
                out.files
                    .iter()
                    .map(|f| f.lines.len())
                    .sum::<usize>()
                    .min(100)
            }),
            Some(vec![
                "@first-lines=100",
                "--hidden",
                "-n",
                "--no-heading",
                r"fn \w+_\d+\(",
            ]),
        ),
        (
            "grep tool end-to-end, common regex (limit 100, formatted)",
            Box::new(|| {
                let out = rt
                    .block_on(grep_tool.execute(
                        "b",
                        json!({"pattern": r"fn \w+_\d+\("}),
                        CancellationToken::new(),
                        std::sync::Arc::new(|_| {}),
                    ))
                    .unwrap();
                serde_json::to_string(&out.content).unwrap().len()
            }),
            None,
        ),
        (
            "grep regex, no match (full scan)",
            Box::new(|| {
                search_paths(&q(r"zz\d{3}qq", false), &roots, &CancellationToken::new())
                    .unwrap()
                    .total_matches
            }),
            Some(vec!["--hidden", "-n", "--no-heading", r"zz\d{3}qq"]),
        ),
        (
            "grep tool end-to-end (limit 100, formatted)",
            Box::new(|| {
                let out = rt
                    .block_on(grep_tool.execute(
                        "b",
                        json!({"pattern": "needle_token_xyz"}),
                        CancellationToken::new(),
                        std::sync::Arc::new(|_| {}),
                    ))
                    .unwrap();
                serde_json::to_string(&out.content).unwrap().len()
            }),
            None,
        ),
        (
            "find *.rs (all results)",
            Box::new(|| {
                find_paths("*.rs", &root, &roots, usize::MAX, &CancellationToken::new())
                    .unwrap()
                    .0
                    .len()
            }),
            Some(vec!["--files", "--hidden", "-g", "*.rs"]),
        ),
        (
            "find tool end-to-end (limit 1000)",
            Box::new(|| {
                let out = rt
                    .block_on(find_tool.execute(
                        "b",
                        json!({"pattern": "*.rs"}),
                        CancellationToken::new(),
                        std::sync::Arc::new(|_| {}),
                    ))
                    .unwrap();
                serde_json::to_string(&out.content).unwrap().len()
            }),
            None,
        ),
    ];

    let mut table = String::new();
    table.push_str(&format!(
        "Tree: {files} files ({:.1} MB) in {DIRS} packages, each with a gitignored `build/`; {} CPU(s); median of {RUNS} warm runs.\n\n",
        bytes as f64 / 1e6,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    ));
    table.push_str("| case | dreb-tools (ms) | rg (ms) | ratio (ours / rg) | results (ours / rg) |\n|---|---:|---:|---:|---:|\n");
    for (name, mut f, rg_args) in cases {
        let (ours, n) = time(&mut f);
        let (rg_col, ratio, counts) = match (&rg_args, have_rg) {
            (Some(args), true) => {
                let (theirs, m) = time(|| rg(args, &root));
                (
                    ms(theirs),
                    format!("{:.2}x", ours.as_secs_f64() / theirs.as_secs_f64()),
                    format!("{n} / {m}"),
                )
            }
            (Some(_), false) => ("(rg not installed)".into(), "-".into(), format!("{n} / -")),
            (None, _) => ("-".into(), "-".into(), format!("{n} / -")),
        };
        table.push_str(&format!(
            "| {name} | {} | {rg_col} | {ratio} | {counts} |\n",
            ms(ours)
        ));
    }
    // Benchmarks report on stdout by convention (this is a bench binary, not library code).
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = lock.write_all(table.as_bytes());
}
