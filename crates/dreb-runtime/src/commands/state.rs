//! get_state, get_messages, stats, names, version, git branch.

use std::path::Path;

use chrono::Local;
use dreb_agent::{AgentMessage, available_thinking_levels};
use dreb_ai::Model;
use dreb_protocol::support::{JsNumber, RequestContext};
use dreb_protocol::*;

use super::daily_cost::scan_daily_cost;
use super::snapshot::snapshot_id;
use crate::services::Runtime;

/// `get_messages` data (`{"messages": [...]}`) borrowed from the agent's state.
#[derive(serde::Serialize)]
pub(crate) struct MessagesData<'a> {
    pub messages: &'a [AgentMessage],
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
    let (tail, usage_is_current): (Vec<AgentMessage>, bool) = rt.agent.with_state(|s| {
        let (tail, current) = context_tail(&s.messages);
        (tail.to_vec(), current)
    });
    let values = tail
        .iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .collect();
    (values, usage_is_current)
}

pub(crate) fn state(rt: &Runtime) -> Result<RpcSessionState, String> {
    let agent = &rt.agent;
    let model = agent.model();
    let (session_file, session_id, session_name) = {
        let s = rt.sessions.lock();
        (
            s.session_file().map(|p| p.to_string_lossy().into_owned()),
            s.session_id().to_string(),
            s.session_name(),
        )
    };
    let tasks = rt.tasks.get();
    let levels = match &model {
        Some(m) => available_thinking_levels(m),
        None => vec![dreb_ai::ThinkingLevel::Off],
    };
    // The run's phase in one reading.
    let phase = rt.phase.view(agent.is_streaming());
    let context_usage = context_usage(rt, model.as_ref());
    Ok(RpcSessionState {
        model,
        scoped_models: crate::commands::model_select::scoped_models_for_state(rt),
        tasks,
        using_subscription: false,
        thinking_level: agent.thinking_level(),
        available_thinking_levels: levels,
        is_streaming: phase.is_streaming,
        is_retrying: phase.is_retrying,
        retry_attempt: i64::from(phase.retry_attempt),
        is_compacting: phase.is_compacting,
        steering_mode: agent.steering_mode(),
        follow_up_mode: agent.follow_up_mode(),
        session_file: if rt.sessions.no_session() {
            None
        } else {
            session_file
        },
        session_id,
        session_name,
        auto_compaction_enabled: rt.settings.auto_compaction(),
        message_count: agent.with_state(|s| s.messages.len()) as i64,
        pending_message_count: rt.queue.len() as i64,
        context_usage,
        model_fallback_message: rt.models.fallback_message(),
    })
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

/// The `State` commands.
impl StateHandler for Runtime {
    async fn get_state(
        &self,
        _ctx: &RequestContext,
        _p: GetStateParams,
    ) -> Result<RpcSessionState, errors::GetStateError> {
        use errors::GetStateError as E;
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
                    messages: &messages
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
