//! Sequential `get_state` round trips from a Rust client (std pipes, no async runtime, no JSON parsing of the
//! reply beyond finding its end), so the client's own cost stays far below the server's. Run:
//! `cargo bench -p dreb --bench roundtrip_client` (builds the release binary it measures).
//!
//! Prints the median and best of 7 rounds of 20,000 requests, and the same client against `cat` (which echoes the
//! request line back): the fastest any server could answer this client on this machine.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

const ROUNDS: usize = 7;
const REQUESTS: usize = 20_000;

fn rounds(program: &str, args: &[&str], env: &[(&str, &str)]) -> Vec<f64> {
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let request = b"{\"id\":1,\"type\":\"get_state\"}\n";
    let mut line = Vec::with_capacity(4096);
    let mut per_second = Vec::new();
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..REQUESTS {
            stdin.write_all(request).unwrap();
            stdin.flush().unwrap();
            line.clear();
            stdout.read_until(b'\n', &mut line).unwrap();
            assert!(line.ends_with(b"\n"), "the server stopped answering");
        }
        per_second.push(REQUESTS as f64 / start.elapsed().as_secs_f64());
    }
    drop(stdin);
    let _ = child.wait();
    per_second
}

fn summary(mut xs: Vec<f64>) -> (f64, f64) {
    xs.sort_by(|a, b| a.total_cmp(b));
    (xs[xs.len() / 2], xs[xs.len() - 1])
}

fn main() {
    let built = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "dreb", "--bin", "dreb"])
        .status()
        .expect("cargo build");
    assert!(built.success());
    let target = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| format!("{}/../../target", env!("CARGO_MANIFEST_DIR")));
    let dreb = format!("{target}/release/dreb");
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_string_lossy().to_string();
    let env = [
        ("HOME", home_path.as_str()),
        ("DREB_CODING_AGENT_DIR", home_path.as_str()),
    ];
    let (dreb_median, dreb_best) = summary(rounds(
        &dreb,
        &["--mode", "rpc", "--provider", "faux", "--no-session"],
        &env,
    ));
    let (cat_median, cat_best) = summary(rounds("cat", &[], &[]));
    println!("| client | median (round trips/s) | best |");
    println!("|---|---:|---:|");
    println!("| dreb `get_state` | {dreb_median:.0} | {dreb_best:.0} |");
    println!("| `cat` (client floor) | {cat_median:.0} | {cat_best:.0} |");
}
