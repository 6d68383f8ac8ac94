//! The machine's floor for one request/response over a pipe pair: a blocking client and the `allow_all` peer,
//! no async runtime. The hook benchmark's round trip is compared with this (`docs/benchmarks.md`).
//!
//! `cargo run --release -p dreb-extensions --example pipe_floor -- target/release/examples/allow_all`

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let peer = std::env::args().nth(1).expect("the peer's path");
    let mut child = Command::new(peer)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the peer");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let line = b"{\"id\":\"1\",\"type\":\"tool_call\",\"toolName\":\"bash\",\"toolCallId\":\"c\",\"input\":{\"command\":\"ls\"}}\n";
    let mut answer = String::new();
    let mut samples = Vec::new();
    for i in 0..3200 {
        let t = Instant::now();
        stdin.write_all(line).unwrap();
        stdin.flush().unwrap();
        answer.clear();
        stdout.read_line(&mut answer).unwrap();
        if i >= 200 {
            samples.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    println!(
        "blocking pipe round trip, {n} calls: median {:.0} µs, p90 {:.0} µs, p99 {:.0} µs",
        samples[n / 2],
        samples[n * 9 / 10],
        samples[n * 99 / 100]
    );
    drop(stdin);
    let _ = child.wait();
}
