//! A host prompts the moment it reads `agent_end`. The loop may still be releasing its run slot then; the prompt
//! must wait for it rather than be refused as "already processing".

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use dreb_ai::Providers;
use dreb_ai::scenario::Scenario;
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_runtime::{FrameSink, Runtime, RuntimeOptions};

mod common;
use common::SpecSink;

/// Sends the next prompt from inside the write of each `agent_end` frame, i.e. as early as any host could.
struct PromptOnAgentEnd {
    frames: SpecSink,
    runtime: OnceLock<Runtime>,
    prompts_left: AtomicUsize,
    results: Arc<Mutex<Vec<Result<(), errors::PromptError>>>>,
}

impl FrameSink for PromptOnAgentEnd {
    fn send_frame(&self, frame: Vec<u8>) {
        let is_end = String::from_utf8_lossy(&frame).contains(r#""type":"agent_end""#);
        self.frames.send_frame(frame);
        if !is_end {
            return;
        }
        let left = self.prompts_left.load(Ordering::Acquire);
        if left == 0 {
            return;
        }
        self.prompts_left.store(left - 1, Ordering::Release);
        let rt = self.runtime.get().expect("runtime set").clone();
        let results = self.results.clone();
        // Spawned from outside the runtime's workers (like the stdin reader's commands), so another worker picks
        // it up while this one is still inside the emission.
        let handle = tokio::runtime::Handle::current();
        let prompt = async move {
            let r = rt
                .prompt(
                    &RequestContext::detached(None),
                    PromptParams {
                        message: format!("Reply with just: again-{left}"),
                        images: None,
                        streaming_behavior: None,
                    },
                )
                .await;
            results.lock().unwrap().push(r);
        };
        std::thread::spawn(move || {
            handle.spawn(prompt);
        });
        // Hold the loop inside its agent_end emission for a moment, so the prompt surely arrives before the run
        // has released its slot (a slow host-side writer does the same).
        std::thread::sleep(Duration::from_millis(30));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_sent_on_agent_end_starts_the_next_run() {
    let agent_dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let results = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::new(PromptOnAgentEnd {
        frames: SpecSink::default(),
        runtime: OnceLock::new(),
        prompts_left: AtomicUsize::new(10),
        results: results.clone(),
    });
    let options = RuntimeOptions {
        cwd: cwd.path().to_path_buf(),
        agent_dir: agent_dir.path().to_path_buf(),
        provider: Some("faux".into()),
        no_session: true,
        providers: Some(Providers::new().with_faux_scenario(Scenario::default())),
        ..Default::default()
    };
    let rt = Runtime::start(options, sink.clone()).unwrap();
    let _ = sink.runtime.set(rt.clone());
    rt.prompt(
        &RequestContext::detached(None),
        PromptParams {
            message: "Reply with just: first".into(),
            images: None,
            streaming_behavior: None,
        },
    )
    .await
    .unwrap();
    // Eleven runs in all: the first and ten chained from agent_end frames.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let ends = sink
            .frames
            .frames()
            .iter()
            .filter(|f| f["type"] == "agent_end")
            .count();
        let (answered, refused) = {
            let r = results.lock().unwrap();
            (r.len(), r.iter().any(Result::is_err))
        };
        if refused || (ends == 11 && answered == 10) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{ends} runs ended, {answered} prompts answered: {:?}",
            results.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let results = results.lock().unwrap();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    sink.frames.assert_spec();
}
