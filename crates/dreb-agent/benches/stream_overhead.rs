//! Per-delta overhead of the agent loop for one long streamed text message, run through `Agent::prompt`.
//!
//! Two provider shapes:
//! - `small-partial`: every delta carries the same small partial, isolating the loop's own cost per event
//!   (dispatch, state bookkeeping, subscriber calls). It should not grow with the number of events already sent.
//! - `growing-partial`: realistic: each delta carries the cumulative partial (the provider clones it, as real
//!   providers do), so cost grows with the message size: that is the protocol's `partial`, not the loop.
//!
//! Subscribers: none, a counter, and one serialising every event to JSON (what the RPC layer does).
//! Run with `cargo bench -p dreb-agent --bench stream_overhead`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use dreb_agent::testing::test_model;
use dreb_agent::{Agent, AgentMessage, AgentOptions};
use dreb_ai::{
    AssistantBlock, AssistantEventStream, AssistantMessage, AssistantMessageEvent, Context,
    DoneReason, LlmClient, Model, StopReason, StreamOptions, TextContent,
};

const CHUNK: &str = "abcd";

/// Streams `deltas` text deltas, built lazily.
struct SyntheticLlm {
    deltas: usize,
    growing: bool,
}

struct Gen {
    i: usize,
    deltas: usize,
    growing: bool,
    partial: AssistantMessage,
}

impl Iterator for Gen {
    type Item = AssistantMessageEvent;

    fn next(&mut self) -> Option<AssistantMessageEvent> {
        let i = self.i;
        self.i += 1;
        let p = &mut self.partial;
        Some(match i {
            0 => AssistantMessageEvent::Start { partial: p.clone() },
            1 => {
                p.content.push(AssistantBlock::Text(TextContent {
                    text: String::new(),
                    text_signature: None,
                    ..Default::default()
                }));
                AssistantMessageEvent::TextStart {
                    content_index: 0,
                    partial: p.clone(),
                }
            }
            n if n < self.deltas + 2 => {
                if self.growing
                    && let Some(AssistantBlock::Text(t)) = p.content.last_mut()
                {
                    t.text.push_str(CHUNK);
                }
                AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: CHUNK.to_owned(),
                    partial: p.clone(),
                }
            }
            n if n == self.deltas + 2 => AssistantMessageEvent::TextEnd {
                content_index: 0,
                content: String::new(),
                partial: p.clone(),
            },
            n if n == self.deltas + 3 => {
                p.stop_reason = StopReason::Stop;
                AssistantMessageEvent::Done {
                    reason: DoneReason::Stop,
                    message: p.clone(),
                }
            }
            _ => return None,
        })
    }
}

impl LlmClient for SyntheticLlm {
    fn stream(
        &self,
        model: &Model,
        _context: &Context,
        _options: StreamOptions,
    ) -> AssistantEventStream {
        let events = Gen {
            i: 0,
            deltas: self.deltas,
            growing: self.growing,
            partial: AssistantMessage::empty(model, 0),
        };
        Box::pin(futures::stream::iter(events))
    }
}

#[derive(Clone, Copy, Debug)]
enum Subscriber {
    None,
    Count,
    Json,
}

fn run_once(rt: &tokio::runtime::Runtime, deltas: usize, growing: bool, sub: Subscriber) -> f64 {
    let mut opts = AgentOptions::new(Arc::new(SyntheticLlm { deltas, growing }));
    opts.model = Some(test_model());
    let agent = Agent::new(opts);
    let count = Arc::new(AtomicU64::new(0));
    match sub {
        Subscriber::None => {}
        Subscriber::Count => {
            let c = count.clone();
            agent.subscribe_fn(move |_| {
                c.fetch_add(1, Ordering::Relaxed);
            });
        }
        Subscriber::Json => {
            let c = count.clone();
            agent.subscribe_fn(move |e| {
                let s = serde_json::to_vec(e).expect("serialise");
                c.fetch_add(s.len() as u64, Ordering::Relaxed);
            });
        }
    }
    let start = Instant::now();
    rt.block_on(agent.prompt(vec![AgentMessage::user_text("go", 0)]))
        .expect("prompt");
    start.elapsed().as_secs_f64()
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("agent loop, one streamed text message (current-thread runtime, best of 3)");
    println!(
        "{:<16} {:<11} {:>8} {:>10} {:>13} {:>10}",
        "provider", "subscriber", "deltas", "seconds", "events/s", "ns/event"
    );
    let cases: &[(bool, &[usize])] =
        &[(false, &[1_000, 10_000, 100_000]), (true, &[1_000, 10_000])];
    for &(growing, sizes) in cases {
        for &deltas in sizes {
            for sub in [Subscriber::None, Subscriber::Count, Subscriber::Json] {
                let _ = run_once(&rt, 100, growing, sub);
                let best = (0..3)
                    .map(|_| run_once(&rt, deltas, growing, sub))
                    .fold(f64::MAX, f64::min);
                // Events the loop emits: agent_start, turn_start, user start/end, assistant start, text_start,
                // the deltas, text_end, assistant end, turn_end, agent_end.
                let emitted = (deltas + 10) as f64;
                println!(
                    "{:<16} {:<11} {:>8} {:>10.4} {:>13.0} {:>10.0}",
                    if growing {
                        "growing-partial"
                    } else {
                        "small-partial"
                    },
                    format!("{sub:?}"),
                    deltas,
                    best,
                    emitted / best,
                    best * 1e9 / emitted
                );
            }
        }
    }
}
