//! Per-delta overhead of the agent loop: one long streamed text message of pre-built provider events is run
//! through `Agent::prompt`, and the events the loop emits per second are reported.
//!
//! Three subscriber setups: none (pure loop cost), a counting subscriber, and one that serialises every event to
//! JSON (what the RPC layer does). Run with `cargo bench -p dreb-agent --bench stream_overhead`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use dreb_agent::testing::{Script, ScriptedLlm, test_model};
use dreb_agent::{Agent, AgentMessage, AgentOptions};
use dreb_ai::{AssistantBlock, AssistantMessage, AssistantMessageEvent, DoneReason, StopReason, TextContent};

/// Pre-builds the provider events for a text message of `deltas` chunks of `chunk` bytes, so the measurement
/// excludes the (provider-side) cost of building partials.
fn events(deltas: usize, chunk: &str) -> Vec<AssistantMessageEvent> {
    let model = test_model();
    let mut partial = AssistantMessage::empty(&model, 0);
    let mut out = vec![AssistantMessageEvent::Start { partial: partial.clone() }];
    partial.content.push(AssistantBlock::Text(TextContent { text: String::new(), text_signature: None }));
    out.push(AssistantMessageEvent::TextStart { content_index: 0, partial: partial.clone() });
    for _ in 0..deltas {
        if let Some(AssistantBlock::Text(t)) = partial.content.last_mut() {
            t.text.push_str(chunk);
        }
        out.push(AssistantMessageEvent::TextDelta { content_index: 0, delta: chunk.to_owned(), partial: partial.clone() });
    }
    out.push(AssistantMessageEvent::TextEnd { content_index: 0, content: String::new(), partial: partial.clone() });
    partial.stop_reason = StopReason::Stop;
    out.push(AssistantMessageEvent::Done { reason: DoneReason::Stop, message: partial });
    out
}

#[derive(Clone, Copy, Debug)]
enum Subscriber {
    None,
    Count,
    SerializeJson,
}

fn run_once(rt: &tokio::runtime::Runtime, evs: Vec<AssistantMessageEvent>, sub: Subscriber) -> (u64, f64) {
    let llm = ScriptedLlm::with_scripts([Script::events(evs)]);
    let mut opts = AgentOptions::new(llm);
    opts.model = Some(test_model());
    let agent = Agent::new(opts);
    let count = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    match sub {
        Subscriber::None => {}
        Subscriber::Count => {
            let c = count.clone();
            agent.subscribe_fn(move |_| {
                c.fetch_add(1, Ordering::Relaxed);
            });
        }
        Subscriber::SerializeJson => {
            let (c, b) = (count.clone(), bytes.clone());
            agent.subscribe_fn(move |e| {
                let s = serde_json::to_vec(e).expect("serialise");
                c.fetch_add(1, Ordering::Relaxed);
                b.fetch_add(s.len() as u64, Ordering::Relaxed);
            });
        }
    }
    let start = Instant::now();
    rt.block_on(agent.prompt(vec![AgentMessage::user_text("go", 0)])).expect("prompt");
    let secs = start.elapsed().as_secs_f64();
    (count.load(Ordering::Relaxed), secs)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    println!("agent loop per-delta overhead (pre-built provider events, current-thread runtime)");
    println!("{:<16} {:>8} {:>12} {:>14} {:>12}", "subscriber", "deltas", "seconds", "events/s", "ns/event");
    for &deltas in &[1_000usize, 10_000] {
        for sub in [Subscriber::None, Subscriber::Count, Subscriber::SerializeJson] {
            // Warm-up, then the best of 3 runs.
            let _ = run_once(&rt, events(deltas.min(100), "abcd"), sub);
            let mut best = f64::MAX;
            for _ in 0..3 {
                let (_, secs) = run_once(&rt, events(deltas, "abcd"), sub);
                best = best.min(secs);
            }
            // Events emitted by the loop: agent_start, turn_start, user start/end, assistant start,
            // text_start + deltas + text_end updates, assistant end, turn_end, agent_end.
            let emitted = (deltas + 10) as f64;
            println!(
                "{:<16} {:>8} {:>12.4} {:>14.0} {:>12.0}",
                format!("{sub:?}"),
                deltas,
                best,
                emitted / best,
                best * 1e9 / emitted
            );
        }
    }
}
