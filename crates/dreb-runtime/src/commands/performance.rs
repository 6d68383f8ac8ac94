//! The tokens-per-second log (`<agentDir>/performance.jsonl`): one record per successful assistant message, and the
//! per-model rolling statistics `get_performance_stats` reports.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use dreb_agent::AgentMessage;
use dreb_ai::StopReason;
use dreb_protocol::support::JsNumber;
use dreb_protocol::{
    ModelPerformanceSummary, PerformanceDelta, PerformanceDirection, RollingAverage,
};
use serde_json::{Value, json};

use crate::services::session_store::SessionStore;
use crate::sync::lock;

/// Shorter messages make meaningless rates (the reference's threshold).
const MIN_DURATION_MS: f64 = 10.0;
const LOCK_TIMEOUT: Duration = Duration::from_secs(1);
/// A lock file older than this was left by a crashed writer.
const STALE_LOCK: Duration = Duration::from_secs(5 * 60);
const ROLLING_COUNT: usize = 100;
const RECENT_COUNT: usize = 10;
const BASELINE_COUNT: usize = 10_000;
const STABLE_PERCENT: f64 = 1.0;

pub(crate) fn log_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join("performance.jsonl")
}

/// Event-bridge hook: record a successful assistant message (not error/aborted, some output, a real duration).
pub(crate) fn on_message_end(sessions: &SessionStore, agent_dir: &Path, message: &AgentMessage) {
    let AgentMessage::Assistant(a) = message else {
        return;
    };
    let duration = a.duration_ms.map_or(0.0, JsNumber::get);
    if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)
        || a.usage.output == 0
        || duration < MIN_DURATION_MS
    {
        return;
    }
    let session_id = sessions.session_id();
    let entry = json!({
        "timestamp": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        "sessionId": session_id,
        "provider": a.provider,
        "modelId": a.model,
        "outputTokens": a.usage.output,
        "durationMs": JsNumber(duration),
        "tps": JsNumber(a.usage.output as f64 * 1000.0 / duration),
    });
    log_writer().append(log_path(agent_dir), entry);
}

/// Writes the log off the event path: the lock-file protocol may wait up to a second for another writer, which the
/// agent loop must never do. One thread per process, appending in the order the entries were sent.
pub(crate) struct LogWriter {
    jobs: Mutex<std::sync::mpsc::Sender<Job>>,
}

enum Job {
    Append(PathBuf, Value),
    /// Answered once every entry sent before it is on disk.
    Flush(std::sync::mpsc::Sender<()>),
}

impl LogWriter {
    fn append(&self, path: PathBuf, entry: Value) {
        let _ = lock(&self.jobs).send(Job::Append(path, entry));
    }

    /// Wait until every entry sent so far is written (a blocking call: run it off the async threads).
    pub(crate) fn flush(&self) {
        let (tx, rx) = std::sync::mpsc::channel();
        if lock(&self.jobs).send(Job::Flush(tx)).is_ok() {
            let _ = rx.recv();
        }
    }
}

/// The writer, started by the first entry.
static WRITER: OnceLock<LogWriter> = OnceLock::new();

pub(crate) fn log_writer() -> &'static LogWriter {
    WRITER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("dreb-performance-log".into())
            .spawn(move || {
                for job in rx {
                    match job {
                        Job::Append(path, entry) => {
                            if let Err(e) = append_entry(&path, &entry) {
                                tracing::warn!("Failed to write performance entry: {e}");
                            }
                        }
                        Job::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("no performance log writer: {e}");
        }
        LogWriter {
            jobs: Mutex::new(tx),
        }
    })
}

/// Append one line under the cross-process lock file `<log>.lock` (shared with the reference's writers).
pub(crate) fn append_entry(path: &Path, entry: &Value) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let lock_path = PathBuf::from(format!("{}.lock", path.display()));
    let started = Instant::now();
    let _guard = loop {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock_path)
        {
            Ok(f) => {
                break LockGuard {
                    _file: f,
                    path: lock_path,
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let stale = std::fs::metadata(&lock_path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok())
                    .is_some_and(|age| age > STALE_LOCK);
                if stale {
                    let _ = std::fs::remove_file(&lock_path);
                }
                if started.elapsed() > LOCK_TIMEOUT {
                    return Err("could not acquire log lock".into());
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| e.to_string())?;
    file.write_all(format!("{entry}\n").as_bytes())
        .map_err(|e| e.to_string())
}

struct LockGuard {
    _file: std::fs::File,
    path: PathBuf,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[derive(Debug, Clone)]
struct Entry {
    provider: String,
    model_id: String,
    time_ms: i64,
    tps: f64,
}

/// Valid entries of the log, in file order (malformed or incomplete lines are skipped, as the reference does).
fn read_entries(path: &Path) -> Vec<Entry> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            let finite = |k: &str| v.get(k).and_then(Value::as_f64).filter(|n| n.is_finite());
            finite("outputTokens")?;
            finite("durationMs")?;
            let time = chrono::DateTime::parse_from_rfc3339(v.get("timestamp")?.as_str()?).ok()?;
            Some(Entry {
                provider: v.get("provider")?.as_str()?.to_string(),
                model_id: v.get("modelId")?.as_str()?.to_string(),
                time_ms: time.timestamp_millis(),
                tps: finite("tps")?,
            })
        })
        .collect()
}

fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// Per-model summaries in order of first appearance in the log: rolling median/mean over the latest 100, and the
/// median of the latest 10 against the latest 10 000 ("stable" within 1%, needing at least 3 samples each).
pub(crate) fn summaries(path: &Path) -> Vec<ModelPerformanceSummary> {
    let entries = read_entries(path);
    let mut models: Vec<(String, String)> = Vec::new();
    for e in &entries {
        if !models
            .iter()
            .any(|(p, m)| *p == e.provider && *m == e.model_id)
        {
            models.push((e.provider.clone(), e.model_id.clone()));
        }
    }
    models
        .into_iter()
        .map(|(provider, model_id)| {
            let mut own: Vec<&Entry> = entries
                .iter()
                .filter(|e| e.provider == provider && e.model_id == model_id)
                .collect();
            // Newest first; a stable sort keeps file order among equal timestamps.
            own.sort_by_key(|e| std::cmp::Reverse(e.time_ms));
            let tps: Vec<f64> = own.iter().map(|e| e.tps).collect();
            let rolling = &tps[..tps.len().min(ROLLING_COUNT)];
            let baseline = &tps[..tps.len().min(BASELINE_COUNT)];
            let recent = &tps[..tps.len().min(RECENT_COUNT)];
            let (baseline_median, recent_median) = (median(baseline), median(recent));
            let (percent, direction) =
                if baseline.len() < 3 || recent.len() < 3 || baseline_median <= 0.0 {
                    (0.0, PerformanceDirection::Stable)
                } else {
                    let p = (recent_median - baseline_median) / baseline_median * 100.0;
                    let direction = if p.abs() < STABLE_PERCENT {
                        PerformanceDirection::Stable
                    } else if p > 0.0 {
                        PerformanceDirection::Above
                    } else {
                        PerformanceDirection::Below
                    };
                    (p, direction)
                };
            let count = |list: &[f64]| i64::try_from(list.len()).unwrap_or(i64::MAX);
            ModelPerformanceSummary {
                provider,
                model_id,
                rolling: RollingAverage {
                    median: JsNumber(median(rolling)),
                    mean: JsNumber(mean(rolling)),
                    count: count(rolling),
                },
                delta: PerformanceDelta {
                    baseline_median: JsNumber(baseline_median),
                    recent_median: JsNumber(recent_median),
                    percent_delta: JsNumber(percent),
                    direction,
                    baseline_count: count(baseline),
                    recent_count: count(recent),
                },
            }
        })
        .collect()
}

/// Wait until the performance entries of every reply so far are on disk (before the process exits).
pub(crate) async fn flush() {
    // Without a writer nothing was sent: no thread to start just to wait for nothing.
    let Some(writer) = WRITER.get() else {
        return;
    };
    let _ = tokio::task::spawn_blocking(|| writer.flush()).await;
}
