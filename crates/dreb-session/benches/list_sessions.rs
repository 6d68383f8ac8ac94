//! Benchmark: list 10,000 sessions (target < 200 ms), in one cwd dir and across 100 cwd dirs.
//!
//! Run: `cargo bench -p dreb-session --bench list_sessions`. Prints the median of several warm runs.

use std::path::Path;
use std::time::{Duration, Instant};

use dreb_session::{ListOptions, list_all_sessions, list_sessions, paths};

const SESSIONS: usize = 10_000;

/// A small but typical session file (~4 KB): header, model/thinking, a few exchanges, a tool call, a name.
fn session_text(i: usize, cwd: &str) -> String {
    let ts = 1_796_106_531_171u64 + i as u64 * 1000;
    let mut s = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{i:08x}-0000-4000-8000-000000000000\",\"timestamp\":\"2026-12-01T06:28:51.158Z\",\"cwd\":\"{cwd}\"}}\n\
         {{\"type\":\"model_change\",\"id\":\"a{i:07x}\",\"parentId\":null,\"timestamp\":\"2026-12-01T06:28:51.159Z\",\"provider\":\"mock\",\"modelId\":\"mock-model\"}}\n\
         {{\"type\":\"thinking_level_change\",\"id\":\"b{i:07x}\",\"parentId\":\"a{i:07x}\",\"timestamp\":\"2026-12-01T06:28:51.159Z\",\"thinkingLevel\":\"off\"}}\n"
    );
    let mut parent = format!("b{i:07x}");
    for turn in 0..4 {
        let u = format!("{turn}u{i:06x}");
        let a = format!("{turn}a{i:06x}");
        s.push_str(&format!("{{\"type\":\"message\",\"id\":\"{u}\",\"parentId\":\"{parent}\",\"timestamp\":\"2026-12-01T06:28:51.174Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"Question {turn} about session {i}: please look at the build script and tell me why it fails\"}}],\"timestamp\":{}}}}}\n", ts + turn * 10));
        s.push_str(&format!("{{\"type\":\"message\",\"id\":\"{a}\",\"parentId\":\"{u}\",\"timestamp\":\"2026-12-01T06:28:51.268Z\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}],\"api\":\"openai-completions\",\"provider\":\"mock\",\"model\":\"mock-model\",\"usage\":{{\"input\":100,\"output\":6,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":106,\"cost\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}}}},\"stopReason\":\"stop\",\"timestamp\":{},\"responseId\":\"chatcmpl-{i}\",\"durationMs\":93.58587999999986}}}}\n", "The build fails because the linker cannot find the library; add it to the search path. ".repeat(4), ts + turn * 10 + 5));
        parent = a;
    }
    s.push_str(&format!("{{\"type\":\"session_info\",\"id\":\"n{i:07x}\",\"parentId\":\"{parent}\",\"timestamp\":\"2026-12-01T06:28:59.000Z\",\"name\":\"Session {i}\"}}\n"));
    s
}

fn populate(dir: &Path, range: std::ops::Range<usize>, cwd: &str) {
    std::fs::create_dir_all(dir).unwrap();
    for i in range {
        let name = format!("2026-12-01T06-28-51-158Z_{i:08x}-0000-4000-8000-000000000000.jsonl");
        std::fs::write(dir.join(name), session_text(i, cwd)).unwrap();
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Process CPU time (user + system) from /proc, in ms (clock ticks of 10 ms).
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) * 10.0
}

/// Median wall time of `runs` warm runs; also prints the mean CPU time per run, which the other processes on a
/// shared machine distort far less than wall time.
fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    f(); // warm the page cache
    let cpu0 = cpu_ms();
    let d = median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed()
            })
            .collect(),
    );
    print!("[cpu {:.0} ms/run] ", (cpu_ms() - cpu0) / runs as f64);
    d
}

fn main() {
    let agent = tempfile::tempdir().unwrap();
    let one = paths::default_session_dir("/bench/one", agent.path());
    populate(&one, 0..SESSIONS, "/bench/one");
    let size: u64 = std::fs::read_dir(&one)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    println!(
        "{SESSIONS} session files, {:.1} MB total",
        size as f64 / 1048576.0
    );

    let runs = 7;
    // The I/O floor: just reading every file (same thread split as the listing).
    let files: Vec<_> = std::fs::read_dir(&one)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let d = time(runs, || {
        std::thread::scope(|s| {
            let hs: Vec<_> = files
                .chunks(files.len().div_ceil(2))
                .map(|part| {
                    s.spawn(move || {
                        part.iter()
                            .map(|f| std::fs::read(f).unwrap().len())
                            .sum::<usize>()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
        })
    });
    println!(
        "baseline: read all 10,000 files (2 threads), median of {runs}: {:.0} ms",
        d.as_secs_f64() * 1e3
    );

    let d = time(runs, || {
        let l = list_sessions(&one, ListOptions::default());
        assert_eq!(l.len(), SESSIONS);
        l
    });
    println!(
        "list_sessions (one cwd, 10,000 files), median of {runs}: {:.0} ms  (target < 200 ms)",
        d.as_secs_f64() * 1e3
    );

    let d = time(runs, || {
        list_sessions(&one, ListOptions::default())
            .iter()
            .map(|s| s.to_rpc())
            .collect::<Vec<_>>()
    });
    println!(
        "list_sessions + RpcSessionInfo DTOs, median: {:.0} ms",
        d.as_secs_f64() * 1e3
    );

    let d = time(3, || {
        list_sessions(
            &one,
            ListOptions {
                all_messages_text: true,
            },
        )
    });
    println!(
        "list_sessions with allMessagesText, median of 3: {:.0} ms",
        d.as_secs_f64() * 1e3
    );

    // The same count spread over 100 cwd dirs.
    std::fs::remove_dir_all(&one).unwrap();
    for d in 0..100 {
        let cwd = format!("/bench/p{d}");
        populate(
            &paths::default_session_dir(&cwd, agent.path()),
            d * 100..(d + 1) * 100,
            &cwd,
        );
    }
    let root = paths::sessions_root(agent.path());
    let d = time(runs, || {
        let l = list_all_sessions(&root, ListOptions::default()).unwrap();
        assert_eq!(l.len(), SESSIONS);
        l
    });
    println!(
        "list_all_sessions (100 dirs x 100 files), median of {runs}: {:.0} ms  (target < 200 ms)",
        d.as_secs_f64() * 1e3
    );
}
