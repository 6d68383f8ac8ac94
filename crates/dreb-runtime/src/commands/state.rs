//! get_state, get_messages, stats, names, version, git branch.

use std::path::Path;
use std::sync::Arc;

use chrono::Local;
use dreb_agent::{AgentMessage, Conversation, MessageSource};
use dreb_ai::Model;
use dreb_protocol::support::{JsNumber, RequestContext};
use dreb_protocol::*;

use super::daily_cost::scan_daily_cost;
use super::snapshot::snapshot_id;
use crate::services::Runtime;
use crate::services::model_json::ModelEntry;

/// `get_messages` data (`{"messages": [...]}`) borrowed from the agent's state.
#[derive(serde::Serialize)]
pub(crate) struct MessagesData<'a> {
    pub messages: &'a Conversation,
}

/// `contextUsage`: the session's own estimate (last usage + trailing estimates), absent without a window.
pub(crate) fn context_usage(rt: &Runtime, model: Option<&Model>) -> Option<ContextUsage> {
    let model = model?;
    if model.context_window == 0 {
        return None;
    }
    let (tail, usage_is_current) = context_tail_values(rt);
    let tokens = if usage_is_current {
        dreb_compaction::estimate_context_tokens(&tail).tokens
    } else {
        // Every usage on record was measured before the latest compaction, over the context as it was before
        // the summary replaced it: estimate the context as it is now instead.
        tail.iter()
            .map(dreb_compaction::estimate_message_tokens)
            .sum()
    };
    let window = model.context_window as f64;
    Some(ContextUsage {
        tokens: Some(tokens as i64),
        context_window: model.context_window,
        percent: Some(JsNumber(tokens as f64 / window * 100.0)),
    })
}

/// The messages the context estimate reads: the last assistant message with usable usage (not aborted, not
/// an error) and everything after it, or every message when there is none. The estimate of this tail equals
/// the estimate of the whole list, and only the tail is cloned and converted to JSON (`get_state` is polled
/// often, and a long session would otherwise be copied and converted on every call).
///
/// The flag says whether the tail starts at such a message; without one (none yet, or only usage measured
/// before the latest compaction) the tail is every message.
fn context_tail_values(rt: &Runtime) -> (Vec<serde_json::Value>, bool) {
    let (tail, usage_is_current): (Vec<AgentMessage>, bool) =
        rt.agent.with_state(|s| match s.messages.pending_source() {
            Some(source) => match pending_context_tail(source) {
                Some(tail) => (tail, true),
                // Without such a message every one is read: decode them once, for good.
                None => (s.messages.to_vec(), false),
            },
            None => {
                let (tail, current) = context_tail(&s.messages);
                (tail.to_vec(), current)
            }
        });
    let values = tail
        .iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .collect();
    (values, usage_is_current)
}

pub(crate) fn state(rt: &Runtime) -> Result<RpcSessionState, String> {
    let reads = StateReads::read(rt);
    let s = rt.sessions.lock();
    let (session_file, session_name) = session_file_and_name(rt, &s);
    let StateReads {
        model,
        scoped_models,
        tasks,
        thinking_level,
        phase,
        steering_mode,
        follow_up_mode,
        auto_compaction_enabled,
        message_count,
        pending_message_count,
        context_usage,
        model_fallback_message,
    } = reads;
    Ok(RpcSessionState {
        available_thinking_levels: match &model {
            Some(m) => m.levels.clone(),
            None => vec![dreb_ai::ThinkingLevel::Off],
        },
        model: model.map(|m| m.model.clone()),
        scoped_models,
        tasks,
        using_subscription: false,
        thinking_level,
        is_streaming: phase.is_streaming,
        is_retrying: phase.is_retrying,
        retry_attempt: i64::from(phase.retry_attempt),
        is_compacting: phase.is_compacting,
        steering_mode,
        follow_up_mode,
        session_file: session_file.map(String::from),
        session_id: s.session_id().to_string(),
        session_name,
        auto_compaction_enabled,
        message_count,
        pending_message_count,
        context_usage,
        model_fallback_message,
    })
}

/// `get_state`'s data written straight into the response frame, from the same reads as [`state`] (the model as its
/// cached JSON), instead of building an [`RpcSessionState`] and serialising it: the same bytes
/// (`written_state_matches_the_typed_result`).
pub(crate) fn write_state(rt: &Runtime, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    let reads = StateReads::read(rt);
    let s = rt.sessions.lock();
    let (session_file, session_name) = session_file_and_name(rt, &s);
    let off = [dreb_ai::ThinkingLevel::Off];
    StateData {
        model: reads.model.as_deref().map(|m| &*m.json),
        scoped_models: &reads.scoped_models,
        tasks: &reads.tasks,
        thinking_level: reads.thinking_level,
        available_thinking_levels: match &reads.model {
            Some(m) => &m.levels,
            None => &off,
        },
        is_streaming: reads.phase.is_streaming,
        is_retrying: reads.phase.is_retrying,
        retry_attempt: i64::from(reads.phase.retry_attempt),
        is_compacting: reads.phase.is_compacting,
        steering_mode: reads.steering_mode,
        follow_up_mode: reads.follow_up_mode,
        session_file: session_file.as_deref(),
        session_id: s.session_id(),
        session_name: session_name.as_deref(),
        auto_compaction_enabled: reads.auto_compaction_enabled,
        message_count: reads.message_count,
        pending_message_count: reads.pending_message_count,
        context_usage: reads.context_usage.as_ref(),
        model_fallback_message: reads.model_fallback_message.as_deref(),
    }
    .write(out)
}

/// The session's file (`None` with `--no-session`) and name, read under the session lock.
fn session_file_and_name<'a>(
    rt: &Runtime,
    s: &'a dreb_session::SessionManager,
) -> (Option<std::borrow::Cow<'a, str>>, Option<String>) {
    let file = if rt.sessions.no_session() {
        None
    } else {
        s.session_file().map(|p| p.to_string_lossy())
    };
    (file, s.session_name())
}

/// What `get_state` reads besides the session file, each under its owner's lock in turn.
struct StateReads {
    model: Option<Arc<ModelEntry>>,
    scoped_models: Vec<RpcScopedModel>,
    tasks: Vec<RpcSessionTask>,
    thinking_level: dreb_ai::ThinkingLevel,
    phase: crate::run_phase::PhaseView,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
    auto_compaction_enabled: bool,
    message_count: i64,
    pending_message_count: i64,
    context_usage: Option<ContextUsage>,
    model_fallback_message: Option<String>,
}

impl StateReads {
    fn read(rt: &Runtime) -> StateReads {
        let agent = &rt.agent;
        let model = rt.model_json.current(agent);
        let tasks = rt.tasks.get();
        // The run's phase in one reading.
        let phase = rt.phase.view(agent.is_streaming());
        let context_usage = context_usage(rt, model.as_deref().map(|m| &m.model));
        StateReads {
            model,
            scoped_models: crate::commands::model_select::scoped_models_for_state(rt),
            tasks,
            thinking_level: agent.thinking_level(),
            phase,
            steering_mode: agent.steering_mode(),
            follow_up_mode: agent.follow_up_mode(),
            auto_compaction_enabled: rt.settings.auto_compaction(),
            message_count: agent.message_count() as i64,
            pending_message_count: rt.queue.len() as i64,
            context_usage,
            model_fallback_message: rt.models.fallback_message(),
        }
    }
}

/// [`RpcSessionState`] borrowed from where its parts live, the model as its JSON; [`StateData::write`] writes
/// what serialising the typed state writes.
struct StateData<'a> {
    model: Option<&'a [u8]>,
    scoped_models: &'a [RpcScopedModel],
    tasks: &'a [RpcSessionTask],
    thinking_level: dreb_ai::ThinkingLevel,
    available_thinking_levels: &'a [dreb_ai::ThinkingLevel],
    is_streaming: bool,
    is_retrying: bool,
    retry_attempt: i64,
    is_compacting: bool,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
    session_file: Option<&'a str>,
    session_id: &'a str,
    session_name: Option<&'a str>,
    auto_compaction_enabled: bool,
    message_count: i64,
    pending_message_count: i64,
    context_usage: Option<&'a ContextUsage>,
    model_fallback_message: Option<&'a str>,
}

impl StateData<'_> {
    /// The JSON object, members in [`RpcSessionState`]'s order, absent options left out as its
    /// `skip_serializing_if` does.
    fn write(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let mut o = JsonObject::begin(out);
        if let Some(model) = self.model {
            o.raw("model", model);
        }
        o.value("scopedModels", self.scoped_models)?;
        o.value("tasks", self.tasks)?;
        o.value("usingSubscription", &false)?;
        o.value("thinkingLevel", &self.thinking_level)?;
        o.value("availableThinkingLevels", self.available_thinking_levels)?;
        o.value("isStreaming", &self.is_streaming)?;
        o.value("isRetrying", &self.is_retrying)?;
        o.value("retryAttempt", &self.retry_attempt)?;
        o.value("isCompacting", &self.is_compacting)?;
        o.value("steeringMode", &self.steering_mode)?;
        o.value("followUpMode", &self.follow_up_mode)?;
        if let Some(file) = self.session_file {
            o.value("sessionFile", file)?;
        }
        o.value("sessionId", self.session_id)?;
        if let Some(name) = self.session_name {
            o.value("sessionName", name)?;
        }
        o.value("autoCompactionEnabled", &self.auto_compaction_enabled)?;
        o.value("messageCount", &self.message_count)?;
        o.value("pendingMessageCount", &self.pending_message_count)?;
        if let Some(usage) = self.context_usage {
            o.value("contextUsage", usage)?;
        }
        if let Some(message) = self.model_fallback_message {
            o.value("modelFallbackMessage", message)?;
        }
        o.end();
        Ok(())
    }
}

/// Writes a JSON object as serde_json's compact serialiser does: keys are plain ASCII names written as they are
/// (nothing in them to escape), values serialised by serde_json.
struct JsonObject<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> JsonObject<'a> {
    fn begin(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        JsonObject { out, empty: true }
    }

    fn key(&mut self, key: &'static str) {
        debug_assert!(key.bytes().all(|b| b.is_ascii_alphanumeric()), "{key}");
        if !std::mem::take(&mut self.empty) {
            self.out.push(b',');
        }
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn value<T: serde::Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        self.key(key);
        serde_json::to_writer(&mut *self.out, value)
    }

    /// A member whose value is already JSON.
    fn raw(&mut self, key: &'static str, json: &[u8]) {
        self.key(key);
        self.out.extend_from_slice(json);
    }

    fn end(self) {
        self.out.push(b'}');
    }
}

/// See [`Runtime::context_tail_values`].
fn context_tail(messages: &[AgentMessage]) -> (&[AgentMessage], bool) {
    // Messages kept by a compaction sit after its summary but were answered before it: their usage counts the
    // context that the summary replaced (the reference skips usage that predates the compaction, too).
    let compacted_at = messages.iter().rev().find_map(|m| match m {
        AgentMessage::CompactionSummary(s) => Some(s.timestamp),
        _ => None,
    });
    let current =
        |m: &AgentMessage| has_usable_usage(m) && compacted_at.is_none_or(|at| m.timestamp() > at);
    match messages.iter().rposition(current) {
        Some(start) => (&messages[start..], true),
        None => (messages, false),
    }
}

/// [`context_tail`] of messages still in their source, decoding only those it reads: the latest compaction
/// summary and the messages from the last current assistant reply on; `None` when there is no such reply.
fn pending_context_tail(source: &dyn MessageSource) -> Option<Vec<AgentMessage>> {
    let n = source.len();
    let compacted_at = (0..n)
        .rev()
        .filter(|&i| source.role(i) == Some("compactionSummary"))
        .find_map(|i| match source.decode(i) {
            Some(AgentMessage::CompactionSummary(s)) => Some(s.timestamp),
            _ => None,
        });
    let start = (0..n)
        .rev()
        .filter(|&i| source.role(i) == Some("assistant"))
        .find(|&i| {
            source.decode(i).is_some_and(|m| {
                has_usable_usage(&m) && compacted_at.is_none_or(|at| m.timestamp() > at)
            })
        })?;
    Some((start..n).filter_map(|i| source.decode(i)).collect())
}

/// Whether the context estimate takes its usage from this message (`dreb_compaction::estimate_context_tokens`
/// skips aborted and failed replies).
fn has_usable_usage(message: &AgentMessage) -> bool {
    matches!(
        message,
        AgentMessage::Assistant(a)
            if !matches!(a.stop_reason, dreb_ai::StopReason::Aborted | dreb_ai::StopReason::Error)
    )
}

/// The branch named by `.git/HEAD`, walking up from `cwd` (worktrees' `.git` files included); `"detached"` for a
/// detached HEAD, `None` outside a repository.
pub(crate) fn git_branch(cwd: &Path) -> Option<String> {
    let mut dir = Some(cwd);
    while let Some(d) = dir {
        let git = d.join(".git");
        let head_path = if git.is_dir() {
            Some(git.join("HEAD"))
        } else if git.is_file() {
            // A worktree: `.git` holds `gitdir: <path>`.
            std::fs::read_to_string(&git).ok().and_then(|t| {
                let gitdir = t.trim().strip_prefix("gitdir:")?.trim().to_string();
                Some(d.join(gitdir).join("HEAD"))
            })
        } else {
            None
        };
        if let Some(head) = head_path {
            let text = std::fs::read_to_string(head).ok()?;
            let text = text.trim();
            return Some(match text.strip_prefix("ref: refs/heads/") {
                Some(branch) => branch.to_string(),
                None if text.starts_with("ref: ") => text.trim_start_matches("ref: ").to_string(),
                None => "detached".to_string(),
            });
        }
        dir = d.parent();
    }
    None
}

/// What `get_state` returns once its response is written (nothing reads it; built without allocating).
fn unsent_state() -> RpcSessionState {
    RpcSessionState {
        model: None,
        scoped_models: Vec::new(),
        tasks: Vec::new(),
        using_subscription: false,
        thinking_level: dreb_ai::ThinkingLevel::Off,
        available_thinking_levels: Vec::new(),
        is_streaming: false,
        is_retrying: false,
        retry_attempt: 0,
        is_compacting: false,
        steering_mode: QueueMode::All,
        follow_up_mode: QueueMode::All,
        session_file: None,
        session_id: String::new(),
        session_name: None,
        auto_compaction_enabled: false,
        message_count: 0,
        pending_message_count: 0,
        context_usage: None,
        model_fallback_message: None,
    }
}

/// The `State` commands.
impl StateHandler for Runtime {
    async fn get_state(
        &self,
        ctx: &RequestContext,
        _p: GetStateParams,
    ) -> Result<RpcSessionState, errors::GetStateError> {
        use errors::GetStateError as E;
        if ctx.reply.send_ok_written(|out| write_state(self, out)) {
            // Written from the state where it lives; the dispatcher sees the response sent and drops this.
            return Ok(unsent_state());
        }
        state(self).map_err(E::unexpected)
    }

    async fn get_dashboard_snapshot(
        &self,
        ctx: &RequestContext,
        _p: GetDashboardSnapshotParams,
    ) -> Result<RpcDashboardSnapshot, errors::GetDashboardSnapshotError> {
        use errors::GetDashboardSnapshotError as E;
        let id = snapshot_id(&ctx.id);
        let held = self.outbox.hold();
        let snapshot = crate::commands::snapshot::capture_snapshot(
            self,
            id.clone(),
            state(self).map_err(E::unexpected)?,
        )
        .map_err(E::unexpected)?;
        held.send(&Event::DashboardSnapshotBarrier(
            DashboardSnapshotBarrierEvent { snapshot_id: id },
        ));
        ctx.reply
            .send_ok_in(&held, ResponseData::GetDashboardSnapshot(snapshot.clone()));
        Ok(snapshot)
    }

    async fn get_resources(
        &self,
        _ctx: &RequestContext,
        _p: GetResourcesParams,
    ) -> Result<RpcResources, errors::GetResourcesError> {
        self.extensions.ready().await;
        let extensions = self.extensions.resource_infos();
        let mcp_servers = self.mcp.resource_infos();
        let system_prompt_present = self.resources.system_prompt_present();
        let r = self.resources.lock();
        Ok(RpcResources {
            context_files: r
                .context_files
                .iter()
                .map(|p| ContextFileInfo {
                    path: p.to_string_lossy().into_owned(),
                })
                .collect(),
            skills: r
                .visible_skills()
                .map(|s| SkillInfo {
                    name: s.name.clone(),
                    description: s.description.clone(),
                })
                .collect(),
            extensions,
            prompt_templates: r
                .prompts
                .iter()
                .map(|p| PromptTemplateInfo {
                    name: p.name.clone(),
                    description: Some(p.description.clone()),
                })
                .collect(),
            system_prompt_present,
            mcp_servers,
        })
    }

    async fn get_git_branch(
        &self,
        _ctx: &RequestContext,
        _p: GetGitBranchParams,
    ) -> Result<GitBranchResult, errors::GetGitBranchError> {
        Ok(GitBranchResult {
            branch: git_branch(&self.cwd),
        })
    }

    async fn get_daily_cost(
        &self,
        _ctx: &RequestContext,
        _p: GetDailyCostParams,
    ) -> Result<DailyCostResult, errors::GetDailyCostError> {
        use errors::GetDailyCostError as E;
        if let Some(cost) = self.daily_cost.fresh() {
            return Ok(DailyCostResult {
                cost: JsNumber(cost),
            });
        }
        let sessions_dir = self.agent_dir.join("sessions");
        let cost = tokio::task::spawn_blocking(move || {
            scan_daily_cost(&sessions_dir, Local::now().date_naive())
        })
        .await
        .map_err(E::unexpected)?;
        self.daily_cost.store(cost);
        Ok(DailyCostResult {
            cost: JsNumber(cost),
        })
    }

    async fn get_messages(
        &self,
        ctx: &RequestContext,
        _p: GetMessagesParams,
    ) -> Result<MessagesResult, errors::GetMessagesError> {
        if ctx.reply.is_attached() {
            // Encoded straight from the agent's messages into the frame: no copy of them, no typed result (the
            // JSON is the same: `get_messages_frame_matches_the_typed_result`). The outbox is held first (lock
            // order: outbox before runtime state).
            let held = self.outbox.hold();
            let sent = self.agent.with_state(|s| {
                ctx.reply.send_ok_encoded_in(
                    &held,
                    &MessagesData {
                        messages: &s.messages,
                    },
                )
            });
            if sent {
                return Ok(MessagesResult {
                    messages: Vec::new(),
                });
            }
        }
        Ok(MessagesResult {
            messages: self.agent.messages(),
        })
    }
}

/// The `Version` commands.
impl VersionHandler for Runtime {
    async fn get_version(
        &self,
        _ctx: &RequestContext,
        _p: GetVersionParams,
    ) -> Result<VersionResult, errors::GetVersionError> {
        Ok(VersionResult {
            version: env!("CARGO_PKG_VERSION").to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `get_messages` writes `MessagesData` straight from the agent's messages; the bytes must be those of the
    /// typed result it replaces, for every message shape the recorded sessions hold (and for odd ones).
    #[test]
    fn get_messages_frame_matches_the_typed_result() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../dreb-session/tests/fixtures/sessions");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let sm = dreb_session::SessionManager::open(&path, None).unwrap();
            let mut messages: Vec<AgentMessage> = sm.build_session_context_as().messages;
            messages.extend(
                [
                    serde_json::json!({"role": "user", "content": "a\u{2028}b \u{1F600} \"q\"", "timestamp": 1}),
                    serde_json::json!({"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "x",
                        "arguments": {"deep": {"n": [1, -0.0, 1e21, 123456789012345678u64]}}}],
                        "api": "faux", "provider": "faux", "model": "faux", "stopReason": "toolUse", "timestamp": 2,
                        "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                            "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.30000000000000004}}}),
                ]
                .into_iter()
                .map(|v| serde_json::from_value(v).unwrap()),
            );
            let typed = MessagesResult {
                messages: messages.clone(),
            };
            assert_eq!(
                serde_json::to_string(&MessagesData {
                    messages: &messages.into()
                })
                .unwrap(),
                serde_json::to_string(&typed).unwrap(),
                "{}",
                path.display()
            );
            checked += 1;
        }
        assert!(checked >= 8, "{checked} sessions checked");
    }

    /// `get_state` writes [`StateData`] into the frame instead of serialising an [`RpcSessionState`]; the bytes
    /// must be the typed state's for every shape it takes (options present and absent, odd strings, numbers).
    #[test]
    fn written_state_matches_the_typed_result() {
        let model: Model = serde_json::from_value(serde_json::json!({
            "id": "m\u{2028}1", "name": "Mo \"del\"", "api": "openai-completions", "provider": "p",
            "baseUrl": "http://x/v1", "reasoning": true, "input": ["text", "image"],
            "cost": {"input": 0.1, "output": 1e-7, "cacheRead": 0, "cacheWrite": 3},
            "contextWindow": 200000, "maxTokens": 8192, "headers": {"b": "1", "a": "2"},
            "compat": {"z": true, "a": {"n": [1, 2.5]}, "supportsDeveloperRole": false}
        }))
        .unwrap();
        let full: RpcSessionState = serde_json::from_value(serde_json::json!({
            "scopedModels": [{"provider": "p", "id": "a", "name": "A", "reasoning": true, "thinkingLevel": "high"},
                {"provider": "q", "id": "b"}],
            "tasks": [{"id": "1", "title": "s \u{1F600}", "status": "in_progress"}],
            "usingSubscription": false, "thinkingLevel": "medium",
            "availableThinkingLevels": ["off", "minimal", "low", "medium", "high"], "isStreaming": true,
            "isRetrying": true, "retryAttempt": 3, "isCompacting": true, "steeringMode": "all",
            "followUpMode": "one-at-a-time", "sessionFile": "/tmp/a \\ b/\u{2029}.jsonl",
            "sessionId": "0192-abc", "sessionName": "named \"x\"", "autoCompactionEnabled": true,
            "messageCount": 12, "pendingMessageCount": 2,
            "contextUsage": {"tokens": 1234, "contextWindow": 200000, "percent": 0.617},
            "modelFallbackMessage": "fell back\nto p/m"
        }))
        .unwrap();
        let mut bare = full.clone();
        bare.scoped_models.clear();
        bare.tasks.clear();
        bare.session_file = None;
        bare.session_name = None;
        bare.context_usage = None;
        bare.model_fallback_message = None;
        let mut no_percent = full.clone();
        no_percent.context_usage = Some(ContextUsage {
            tokens: None,
            context_window: 1,
            percent: None,
        });
        for mut typed in [full, bare, no_percent] {
            for model in [Some(model.clone()), None] {
                typed.model = model;
                let json = typed.model.as_ref().map(|m| serde_json::to_vec(m).unwrap());
                // Every field, so that one added to the spec's type fails to compile here until it is written.
                let RpcSessionState {
                    model: _,
                    scoped_models,
                    tasks,
                    using_subscription: _,
                    thinking_level,
                    available_thinking_levels,
                    is_streaming,
                    is_retrying,
                    retry_attempt,
                    is_compacting,
                    steering_mode,
                    follow_up_mode,
                    session_file,
                    session_id,
                    session_name,
                    auto_compaction_enabled,
                    message_count,
                    pending_message_count,
                    context_usage,
                    model_fallback_message,
                } = &typed;
                let data = StateData {
                    model: json.as_deref(),
                    scoped_models,
                    tasks,
                    thinking_level: *thinking_level,
                    available_thinking_levels,
                    is_streaming: *is_streaming,
                    is_retrying: *is_retrying,
                    retry_attempt: *retry_attempt,
                    is_compacting: *is_compacting,
                    steering_mode: *steering_mode,
                    follow_up_mode: *follow_up_mode,
                    session_file: session_file.as_deref(),
                    session_id,
                    session_name: session_name.as_deref(),
                    auto_compaction_enabled: *auto_compaction_enabled,
                    message_count: *message_count,
                    pending_message_count: *pending_message_count,
                    context_usage: context_usage.as_ref(),
                    model_fallback_message: model_fallback_message.as_deref(),
                };
                let mut written = Vec::new();
                data.write(&mut written).unwrap();
                assert_eq!(
                    String::from_utf8(written).unwrap(),
                    serde_json::to_string(&typed).unwrap()
                );
            }
        }
    }

    fn values(messages: &[AgentMessage]) -> Vec<serde_json::Value> {
        messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect()
    }

    #[test]
    fn the_context_tail_estimates_like_the_whole_conversation() {
        let user =
            |text: &str| serde_json::json!({"role": "user", "content": text, "timestamp": 1});
        let assistant = |stop: &str, total: u64| {
            serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": "reply text"}],
                "api": "faux", "provider": "faux", "model": "faux", "stopReason": stop, "timestamp": 2,
                "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}})
        };
        let cases = [
            vec![],
            vec![user("only a question")],
            vec![
                user("q"),
                assistant("stop", 100),
                user("next question here"),
            ],
            vec![
                user("q"),
                assistant("stop", 100),
                user("again"),
                assistant("aborted", 7),
                user("more"),
            ],
            vec![user("q"), assistant("error", 50), user("retry please")],
            vec![assistant("toolUse", 0), user("a"), assistant("length", 300)],
        ];
        for case in cases {
            let messages: Vec<AgentMessage> = case
                .into_iter()
                .map(|v| serde_json::from_value(v).unwrap())
                .collect();
            let whole = dreb_compaction::estimate_context_tokens(&values(&messages));
            let (tail, current) = context_tail(&messages);
            assert_eq!(current, tail.first().is_some_and(has_usable_usage));
            let tail = dreb_compaction::estimate_context_tokens(&values(tail));
            assert_eq!(tail.tokens, whole.tokens, "{messages:?}");
            assert_eq!(tail.usage_tokens, whole.usage_tokens);
            assert_eq!(tail.trailing_tokens, whole.trailing_tokens);
        }
    }

    /// A session file with every message shape on lines long enough to stay in the file: a compaction that keeps
    /// part of the branch, tool calls, an aborted reply, custom and branch-summary entries, a message of a role this
    /// version does not know, and a message with a `\r` between its tokens.
    fn write_long_session(path: &Path) {
        let pad = "words of a long reply ".repeat(20);
        let later = 1_796_083_300_000u64;
        let assistant = |stop: &str, total: u64, ts: u64| {
            serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": pad},
                {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.rs", "n": [1, 2.5, -0.0]}}],
                "api": "faux", "provider": "faux", "model": "faux",
                "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total,
                    "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.30000000000000004}},
                "stopReason": stop, "timestamp": ts})
        };
        let entry = |ty: &str, id: &str, parent: Option<&str>, mut rest: serde_json::Value| {
            let mut e = serde_json::json!({"type": ty, "id": id, "parentId": parent,
                "timestamp": "2026-12-01T00:00:00.000Z"});
            e.as_object_mut()
                .unwrap()
                .append(rest.as_object_mut().unwrap());
            serde_json::to_string(&e).unwrap()
        };
        let message = |id: &str, parent: &str, m: serde_json::Value| {
            entry(
                "message",
                id,
                Some(parent),
                serde_json::json!({ "message": m }),
            )
        };
        let mut lines = vec![
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T00:00:00.000Z","cwd":"/p"}"#.to_string(),
            message("m1", "s1", serde_json::json!({"role": "user", "content": pad, "timestamp": 1})),
            message("m2", "m1", assistant("toolUse", 100, 2)),
            message("m3", "m2", serde_json::json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                "content": [{"type": "text", "text": format!("{pad}\n\t\"quoted\" \u{1F600}")}], "isError": false, "timestamp": 3})),
            entry("compaction", "k1", Some("m3"), serde_json::json!({"summary": pad, "firstKeptEntryId": "m2",
                "tokensBefore": 5000})),
            message("m4", "k1", serde_json::json!({"role": "user", "content": [{"type": "text", "text": pad}], "timestamp": later})),
            message("m5", "m4", assistant("stop", 200, later + 1)),
            entry("custom_message", "c1", Some("m5"), serde_json::json!({"customType": "note", "content": pad,
                "display": true})),
            entry("branch_summary", "b1", Some("c1"), serde_json::json!({"summary": pad, "fromId": "m5"})),
            message("m6", "b1", serde_json::json!({"role": "mystery", "content": pad, "timestamp": later + 2})),
            message("m7", "m6", assistant("aborted", 300, later + 3)),
        ];
        lines.push(
            message(
                "m8",
                "m7",
                serde_json::json!({"role": "user", "content": pad, "timestamp": later + 4}),
            )
            .replacen(r#""content""#, "\r\"content\"", 1),
        );
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }

    /// Messages as another program may write them: keys in another order, escapes JSON.stringify would not write,
    /// spaces between tokens.
    fn write_odd_session(path: &Path) {
        let pad = "x".repeat(300);
        let text = format!(
            r#"{{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T00:00:00.000Z","cwd":"/p"}}
{{"type":"message","id":"m1","parentId":"s1","timestamp":"2026-12-01T00:00:00.000Z","message":{{"timestamp":1,"content":"caf\u00e9 \/ {pad}","role":"user"}}}}
{{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-12-01T00:00:00.000Z","message": {{ "role" : "user", "content" : [ {{"text":"{pad}","type":"text"}} ], "timestamp" : 2 }} }}
"#
        );
        std::fs::write(path, text).unwrap();
    }

    /// A recorded session with a filler field on every line, so that its messages stay in the file (short lines
    /// are kept parsed).
    fn write_padded(src: &Path, path: &Path) {
        let pad = "p".repeat(300);
        let text = std::fs::read_to_string(src).unwrap();
        let lines: Vec<String> = text
            .lines()
            .map(|l| match l.trim_end().strip_suffix('}') {
                Some(head) if l.starts_with('{') => format!(r#"{head},"zzPad":"{pad}"}}"#),
                _ => l.to_string(),
            })
            .collect();
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }

    /// The conversation a switch or resume gives the agent, kept in the session file, answers what the decoded
    /// context answers: the same `get_messages` bytes (written from the file's text, nothing decoded), the same
    /// count, the same tail for the context estimate; decoded, the same messages.
    #[test]
    fn a_deferred_conversation_answers_like_the_decoded_context() {
        let dir = tempfile::tempdir().unwrap();
        let fixtures =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../dreb-session/tests/fixtures/sessions");
        // With whether the file's messages are written as JSON.stringify writes them (ours and the reference's).
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&fixtures).unwrap() {
            let src = entry.unwrap().path();
            if src.extension().is_some_and(|e| e == "jsonl") {
                let path = dir.path().join(src.file_name().unwrap());
                write_padded(&src, &path);
                files.push((path, true));
            }
        }
        let long = dir.path().join("long.jsonl");
        write_long_session(&long);
        files.push((long, true));
        let odd = dir.path().join("odd.jsonl");
        write_odd_session(&odd);
        files.push((odd, false));
        let mut lines_kept = 0;
        for (path, canonical) in &files {
            let sm = dreb_session::SessionManager::open(path, None).unwrap();
            let decoded = crate::persist::session_context(&sm).messages;
            let deferred = crate::session_conversation::session_conversation(&sm).conversation;
            let source = deferred.pending_source().expect("nothing decoded yet");
            lines_kept += (0..source.len())
                .filter(|&i| source.role(i).is_some())
                .count();
            assert_eq!(deferred.len(), decoded.len(), "{}", path.display());
            let (tail, current) = context_tail(&decoded);
            assert_eq!(
                pending_context_tail(source).map(|t| values(&t)),
                current.then(|| values(tail)),
                "{}",
                path.display()
            );
            let decoded_conversation = Conversation::from(decoded.clone());
            let written = serde_json::to_string(&MessagesData {
                messages: &deferred,
            })
            .unwrap();
            let typed = serde_json::to_string(&MessagesData {
                messages: &decoded_conversation,
            })
            .unwrap();
            if *canonical {
                assert_eq!(written, typed, "{}", path.display());
            } else {
                // The file's own text: the same JSON values, not the same bytes.
                assert_ne!(written, typed);
                let value = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
                assert_eq!(value(&written), value(&typed), "{}", path.display());
            }
            assert!(
                deferred.pending_source().is_some(),
                "writing decodes nothing"
            );
            assert_eq!(values(&deferred), values(&decoded));
            assert!(deferred.pending_source().is_none());
        }
        assert!(files.len() >= 10 && lines_kept > 30, "{lines_kept} lines");

        // A message of a known role that does not decode (a string timestamp) is counted and shown as the file
        // holds it (as the reference shows it) until the conversation is decoded, which leaves it out.
        let bad = dir.path().join("bad.jsonl");
        let pad = "x".repeat(300);
        std::fs::write(&bad, format!("{{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"cwd\":\"/p\"}}\n\
            {{\"type\":\"message\",\"id\":\"m1\",\"parentId\":\"s1\",\"message\":{{\"role\":\"user\",\"content\":\"{pad}\",\"timestamp\":\"soon\"}}}}\n")).unwrap();
        let sm = dreb_session::SessionManager::open(&bad, None).unwrap();
        let deferred = crate::session_conversation::session_conversation(&sm).conversation;
        assert_eq!(deferred.len(), 1);
        let written = serde_json::to_string(&deferred).unwrap();
        assert!(written.contains(r#""timestamp":"soon""#), "{written}");
        assert!(deferred.is_empty() || deferred.as_slice().is_empty());
        assert_eq!(deferred.len(), 0);
    }

    #[test]
    fn usage_from_before_the_latest_compaction_is_not_current() {
        let message = |v: serde_json::Value| -> AgentMessage { serde_json::from_value(v).unwrap() };
        let assistant = |timestamp: u64| {
            message(
                serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": "kept reply"}],
                "api": "faux", "provider": "faux", "model": "faux", "stopReason": "stop", "timestamp": timestamp,
                "usage": {"input": 90000, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 90005,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}),
            )
        };
        let summary = message(
            serde_json::json!({"role": "compactionSummary", "summary": "## Goal", "tokensBefore": 90005, "timestamp": 50}),
        );
        let user = message(
            serde_json::json!({"role": "user", "content": "kept question", "timestamp": 10}),
        );
        // After compacting: summary, then the kept turn (answered at 20, before the compaction at 50).
        let compacted = vec![summary, user.clone(), assistant(20)];
        let (tail, current) = context_tail(&compacted);
        assert!(!current);
        assert_eq!(tail.len(), 3, "every message is estimated");
        // A reply after the compaction carries current usage again.
        let mut later = compacted.clone();
        later.extend([user, assistant(60)]);
        let (tail, current) = context_tail(&later);
        assert!(current);
        assert_eq!(tail.len(), 1);
    }

    #[test]
    fn git_branch_reads_head_walking_up() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(git_branch(dir.path()), None);
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(git_branch(&sub).as_deref(), Some("feature/x"));
        std::fs::write(
            dir.path().join(".git/HEAD"),
            "0123456789abcdef0123456789abcdef01234567\n",
        )
        .unwrap();
        assert_eq!(git_branch(dir.path()).as_deref(), Some("detached"));
    }
}
