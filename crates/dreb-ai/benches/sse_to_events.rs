//! Benchmark: provider SSE bytes → assistant events (the real parsers, no network).
//!
//! Run: `cargo bench -p dreb-ai --bench sse_to_events` (prints a markdown report).
//!
//! 1. Throughput: MB/s of SSE turned into events, for short and long replies, text and tool-call arguments.
//! 2. Per-delta cost vs message length: the cost of one more delta once the message already holds L bytes, next to
//!    the cost of copying a partial of that size (every event carries one; the protocol requires it).

use std::time::{Duration, Instant};

use bytes::Bytes;
use dreb_ai::bench_support::parse_sse;
use dreb_ai::*;
use futures::StreamExt;
use serde_json::json;

fn model(api_name: &str) -> Model {
    Model {
        id: "bench".into(),
        name: "bench".into(),
        api: api_name.into(),
        provider: "bench".into(),
        base_url: String::new(),
        reasoning: false,
        input: vec![InputKind::Text],
        cost: ModelCost {
            input: dreb_ai::JsNumber(3.0),
            output: dreb_ai::JsNumber(15.0),
            cache_read: dreb_ai::JsNumber(0.3),
            cache_write: dreb_ai::JsNumber(3.75),
        },
        context_window: 200_000,
        max_tokens: 64_000,
        headers: None,
        wire_model_id: None,
        auth_mode: None,
        compat: None,
    }
}

/// OpenAI chat-completions SSE: `prefix` as one delta, then `deltas` text (or tool-argument) deltas.
fn openai_sse(prefix: &str, deltas: &[String], tool: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    if tool {
        out.extend(chunk(json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "write", "arguments": format!("{{\"content\": \"{prefix}")}}]}), json!(null)).bytes());
        for d in deltas {
            out.extend(
                chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": d}}]}),
                    json!(null),
                )
                .bytes(),
            );
        }
        out.extend(
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"}"}}]}),
                json!(null),
            )
            .bytes(),
        );
        out.extend(chunk(json!({}), json!("tool_calls")).bytes());
    } else {
        if !prefix.is_empty() {
            out.extend(chunk(json!({"content": prefix}), json!(null)).bytes());
        }
        for d in deltas {
            out.extend(chunk(json!({"content": d}), json!(null)).bytes());
        }
        out.extend(chunk(json!({}), json!("stop")).bytes());
    }
    out.extend(format!("data: {}\n\n", json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": deltas.len()}})).bytes());
    out.extend(b"data: [DONE]\n\n");
    out
}

/// Anthropic messages SSE with text deltas.
fn anthropic_sse(deltas: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ev = |name: &str, v: serde_json::Value| {
        out.extend(format!("event: {name}\ndata: {v}\n\n").bytes())
    };
    ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    );
    ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for d in deltas {
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}}),
        );
    }
    ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": deltas.len()}}),
    );
    ev("message_stop", json!({"type": "message_stop"}));
    out
}

/// Splits bytes into network-sized reads.
fn chunks(bytes: &[u8]) -> Vec<Bytes> {
    bytes
        .chunks(16 * 1024)
        .map(Bytes::copy_from_slice)
        .collect()
}

fn run(rt: &tokio::runtime::Runtime, m: &Model, sse: &[Bytes]) -> usize {
    rt.block_on(async {
        let mut s = parse_sse(m, sse.to_vec());
        let mut n = 0;
        while let Some(e) = s.next().await {
            assert!(
                !matches!(e, AssistantMessageEvent::Error { .. }),
                "bench stream failed: {e:?}"
            );
            n += 1;
        }
        n
    })
}

/// Median of `reps` timings of `f`.
fn median(reps: usize, mut f: impl FnMut()) -> Duration {
    let mut t: Vec<Duration> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[reps / 2]
}

fn words(n: usize, size: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("{:<width$}", format!("w{i}"), width = size))
        .collect()
}

fn main() {
    // `cargo bench` passes `--bench`; under `cargo test --all-targets` this runs as a quick smoke check instead.
    let full = std::env::args().any(|a| a == "--bench");
    let reps = if full { 9 } else { 1 };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    println!("### Throughput (SSE bytes → events)\n");
    println!("| wire | reply | deltas | SSE bytes | time | MB/s of SSE | events/s |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    let mut cases: Vec<(&str, &str, Vec<u8>, usize)> = vec![
        (
            "openai-completions",
            "text, 200 × 16 B",
            openai_sse("", &words(200, 16), false),
            200,
        ),
        (
            "openai-completions",
            "text, 2000 × 16 B",
            openai_sse("", &words(2000, 16), false),
            2000,
        ),
        (
            "anthropic-messages",
            "text, 200 × 16 B",
            anthropic_sse(&words(200, 16)),
            200,
        ),
        (
            "anthropic-messages",
            "text, 2000 × 16 B",
            anthropic_sse(&words(2000, 16)),
            2000,
        ),
        (
            "openai-completions",
            "tool args, 200 × 16 B",
            openai_sse("", &words(200, 16), true),
            200,
        ),
    ];
    if !full {
        cases.retain(|c| c.3 == 200);
    }
    for (api_name, label, sse, deltas) in &cases {
        let m = model(api_name);
        let c = chunks(sse);
        let mut events = 0;
        let t = median(reps, || events = run(&rt, &m, &c));
        let secs = t.as_secs_f64();
        println!(
            "| {api_name} | {label} | {deltas} | {} | {:.2} ms | {:.1} | {:.0} |",
            sse.len(),
            secs * 1e3,
            sse.len() as f64 / 1e6 / secs,
            events as f64 / secs
        );
    }

    println!("\n### Per-delta cost vs message length\n");
    println!(
        "Cost of one more 16-byte delta when the partial already holds L bytes (median over 9 runs of 500 deltas),"
    );
    println!(
        "next to the cost of cloning a partial of that size alone (with as many copies alive as the event channel holds).\n"
    );
    println!("| content | L (bytes) | per delta | clone of partial | per delta − clone |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let k = if full { 500 } else { 20 };
    let lengths: &[usize] = if full {
        &[1_000, 10_000, 100_000, 1_000_000]
    } else {
        &[1_000]
    };
    for tool in [false, true] {
        for &len in lengths {
            let prefix = "x".repeat(len);
            let m = model(api::OPENAI_COMPLETIONS);
            let with = chunks(&openai_sse(&prefix, &words(k, 16), tool));
            let without = chunks(&openai_sse(&prefix, &[], tool));
            let t_with = median(reps, || {
                run(&rt, &m, &with);
            });
            let t_without = median(reps, || {
                run(&rt, &m, &without);
            });
            let per_delta = t_with.saturating_sub(t_without).as_secs_f64() / k as f64;
            // The partial as it stands mid-stream.
            let mut partial = AssistantMessage::empty(&m, 0);
            if tool {
                let mut args = serde_json::Map::new();
                args.insert("content".into(), json!(prefix));
                partial.content.push(AssistantBlock::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "write".into(),
                    arguments: args,
                    partial_args: Some(format!("{{\"content\": \"{prefix}")),
                    partial_json: None,
                    index: None,
                    thought_signature: None,
                    ..Default::default()
                }));
            } else {
                partial.content.push(AssistantBlock::Text(TextContent {
                    text: prefix.clone(),
                    text_signature: None,
                    ..Default::default()
                }));
            }
            // Up to CHANNEL_CAPACITY + 1 events are alive at once, so copies are fresh allocations, not one reused
            // buffer: measure them the same way.
            let clone = median(reps, || {
                let mut live = std::collections::VecDeque::new();
                for _ in 0..k {
                    live.push_back(std::hint::black_box(partial.clone()));
                    if live.len() > 17 {
                        live.pop_front();
                    }
                }
            })
            .as_secs_f64()
                / k as f64;
            println!(
                "| {} | {len} | {:.2} µs | {:.2} µs | {:.2} µs |",
                if tool { "tool-call arguments" } else { "text" },
                per_delta * 1e6,
                clone * 1e6,
                (per_delta - clone) * 1e6
            );
        }
    }
}
