//! One `tool_call` hook round trip to an extension process, through the host as the session uses it
//! (`ExtensionHooks::tool_call` → the call → the extension's answer). The extension is the Python SDK's
//! (`clients/python/src/dreb_extension`, one thread per call), any command given as `HOOK_BENCH_EXTENSION`
//! (a program that answers `initialize` and `tool_call`; a second implementation to compare with), or, with
//! `HOOK_BENCH_JS=1`, a reference-style TypeScript extension in the session's shared Node extension host (this
//! checkout's `clients/extension-host`, its dependencies installed).
//!
//! `cargo bench -p dreb-extensions --bench hook_roundtrip` (prints median, p90, p99 and mean in µs).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dreb_extensions::hooks::ExtensionHooks;
use dreb_extensions::{ExtensionApi, ExtensionHost, ExtensionSource, HostEnv, Launch, Scope};
use dreb_hooks::{HookBus, HookHandler, ToolCallEvent};
use serde_json::json;

struct NoApi;

#[async_trait::async_trait]
impl ExtensionApi for NoApi {
    async fn serve(
        &self,
        _extension: &str,
        command: dreb_extension_protocol::Command,
    ) -> Result<dreb_extension_protocol::ResponseData, String> {
        Err(format!("not served in the benchmark: {}", command.name()))
    }
    fn registrations_changed(&self) {}
}

const PYTHON_EXTENSION: &str = r#"
from dreb_extension import Extension
ext = Extension(name="bench")
@ext.on("tool_call")
def allow(event, ctx):
    return None
ext.run()
"#;

const TYPESCRIPT_EXTENSION: &str = r#"
import type { ExtensionAPI } from "@dreb/coding-agent";
export default function (dreb: ExtensionAPI) {
	dreb.on("tool_call", async () => undefined);
}
"#;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let js = std::env::var_os("HOOK_BENCH_JS").is_some();
    let (launch, label) = match std::env::var("HOOK_BENCH_EXTENSION") {
        _ if js => {
            std::fs::write(dir.path().join("bench.ts"), TYPESCRIPT_EXTENSION).unwrap();
            (
                Launch::JavaScript,
                "TypeScript, shared Node host".to_string(),
            )
        }
        Ok(cmd) => {
            let mut parts = cmd.split_whitespace().map(str::to_string);
            let program = PathBuf::from(parts.next().expect("a command"));
            (
                Launch::Process {
                    program,
                    args: parts.collect(),
                },
                cmd,
            )
        }
        Err(_) => {
            let script = dir.path().join("bench.py");
            std::fs::write(&script, PYTHON_EXTENSION).unwrap();
            // SAFETY: set before any thread exists (the runtime is built below).
            unsafe {
                std::env::set_var("PYTHONPATH", root.join("clients/python/src"));
            }
            (
                Launch::Process {
                    program: "python3".into(),
                    args: vec![script.to_string_lossy().into_owned()],
                },
                "python SDK".to_string(),
            )
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let host = ExtensionHost::new(HostEnv {
            cwd: dir.path().to_path_buf(),
            agent_dir: dir.path().to_path_buf(),
            has_ui: false,
            flag_values: Default::default(),
            api: Arc::new(NoApi),
            failures: Arc::new(|f| eprintln!("failure: {f:?}")),
            javascript_checkout: Some(root.join("clients/extension-host")),
        });
        let bus = HookBus::new();
        host.begin_load();
        host.load(
            vec![ExtensionSource {
                path: dir.path().join(if js { "bench.ts" } else { "bench" }),
                scope: Scope::Temporary,
                launch,
                source: "cli",
                base_dir: None,
            }],
            Vec::new(),
            &bus,
            dreb_extension_protocol::SessionStartReason::Startup,
        )
        .await;
        let ext = host.extensions().pop().expect("the extension loaded");
        let hooks = ExtensionHooks::new(ext, Duration::from_secs(10));
        let cancel = tokio_util::sync::CancellationToken::new();
        let mut event = ToolCallEvent {
            tool_name: "bash".into(),
            tool_call_id: "call_1".into(),
            input: json!({"command": "ls -la"}),
        };
        for _ in 0..200 {
            hooks.tool_call(&mut event, &cancel).await.unwrap();
        }
        let n = 3000;
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            hooks.tool_call(&mut event, &cancel).await.unwrap();
            samples.push(t.elapsed());
        }
        samples.sort();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let mean = samples.iter().map(|d| us(*d)).sum::<f64>() / n as f64;
        println!(
            "tool_call hook round trip ({label}), {n} calls: median {:.0} µs, p90 {:.0} µs, p99 {:.0} µs, mean {:.0} µs",
            us(samples[n / 2]),
            us(samples[n * 9 / 10]),
            us(samples[n * 99 / 100]),
            mean
        );
        host.shutdown(&bus).await;
    });
}
