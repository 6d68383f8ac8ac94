//! Benchmark: open a ~100 MB session file (target < 1 s), then build its context and tree.
//!
//! Run: `cargo bench -p dreb-session --bench open_session`. Prints the median of several runs.

use std::time::{Duration, Instant};

use dreb_session::SessionManager;
use serde_json::json;

const TARGET_BYTES: u64 = 100 * 1024 * 1024;

/// A realistic coding-session turn: user prompt, assistant with thinking + a tool call, a tool result with a
/// large output, then a final assistant answer.
fn write_session(path: &std::path::Path) -> (u64, usize) {
    let mut sm = SessionManager::create("/bench/project", path).unwrap();
    sm.append_model_change("anthropic", "claude-opus-4-6")
        .unwrap();
    sm.append_thinking_level_change("high").unwrap();
    let output: String = (0..400)
        .map(|i| format!("line {i}: fn example_{i}() {{ let x = {i}; }}\n"))
        .collect();
    let mut turn = 0u64;
    loop {
        let ts = 1_796_106_531_171u64 + turn * 1000;
        sm.append_message(json!({"role":"user","content":[{"type":"text","text":format!("Please refactor module {turn} and explain the change in detail.")}],"timestamp":ts})).unwrap();
        sm.append_message(json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"I should read the file first, then edit it carefully. ".repeat(20),"thinkingSignature":"sig"},
            {"type":"toolCall","id":format!("toolu_{turn}"),"name":"read","arguments":{"path":format!("src/module_{turn}.rs")}}],
            "api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-6",
            "usage":{"input":12000,"output":350,"cacheRead":11000,"cacheWrite":900,"totalTokens":24250,"cost":{"input":0.06,"output":0.02625,"cacheRead":0.0055,"cacheWrite":0.005625,"total":0.097375}},
            "stopReason":"toolUse","timestamp":ts + 10,"responseId":format!("msg_{turn}"),"durationMs":1234.5678})).unwrap();
        sm.append_message(json!({"role":"toolResult","toolCallId":format!("toolu_{turn}"),"toolName":"read","content":[{"type":"text","text":output}],"isError":false,"timestamp":ts + 20})).unwrap();
        sm.append_message(json!({"role":"assistant","content":[{"type":"text","text":"Done. The module now uses a builder pattern; here is why it is better. ".repeat(10)}],
            "api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-6",
            "usage":{"input":13000,"output":200,"cacheRead":12000,"cacheWrite":0,"totalTokens":25200,"cost":{"input":0.065,"output":0.015,"cacheRead":0.006,"cacheWrite":0,"total":0.086}},
            "stopReason":"stop","timestamp":ts + 30,"responseId":format!("msg_{turn}b"),"durationMs":987.25})).unwrap();
        turn += 1;
        if turn.is_multiple_of(50) {
            let len = std::fs::metadata(sm.session_file().unwrap()).unwrap().len();
            if len >= TARGET_BYTES {
                return (len, sm.entries().count());
            }
        }
    }
}

/// Process CPU time (user + system) from /proc, in ms (clock ticks of 10 ms).
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) * 10.0
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, entries) = write_session(dir.path());
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    println!(
        "session file: {:.1} MB, {entries} entries",
        bytes as f64 / 1048576.0
    );

    let runs = 5;
    let mut open = Vec::new();
    let mut context = Vec::new();
    let mut tree = Vec::new();
    let mut open_cpu = 0.0;
    for _ in 0..runs {
        let c = cpu_ms();
        let t = Instant::now();
        let sm = SessionManager::open(&file, None).unwrap();
        open.push(t.elapsed());
        open_cpu += cpu_ms() - c;
        assert_eq!(sm.entries().count(), entries);

        let t = Instant::now();
        let ctx = sm.build_session_context();
        context.push(t.elapsed());
        assert!(!ctx.messages.is_empty());

        let t = Instant::now();
        let json = sm.tree_dto().to_json_string();
        tree.push(t.elapsed());
        assert!(json.len() > 1000);
        // Drop outside the timings.
        drop((sm, ctx, json));
    }
    let open = median(open);
    println!(
        "open (read + parse + index), median of {runs}: {:.0} ms  (target < 1000 ms) [cpu {:.0} ms/run]",
        open.as_secs_f64() * 1e3,
        open_cpu / runs as f64
    );
    println!(
        "build_session_context, median: {:.0} ms",
        median(context).as_secs_f64() * 1e3
    );
    println!(
        "get_tree DTO + JSON, median: {:.0} ms",
        median(tree).as_secs_f64() * 1e3
    );
}
