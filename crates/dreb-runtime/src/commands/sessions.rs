//! Session files: tree, navigation, fork, new/switch/delete/import, listings.

use std::path::{Path, PathBuf};

use dreb_agent::AgentMessage;
use dreb_ai::ThinkingLevel;
use dreb_compaction::{SummaryLlm, generate_branch_summary, prepare_branch_summary};
use dreb_hooks::{SessionBeforeEvent, SessionBeforeOutcome, SessionStartReason, SwitchReason};
use dreb_protocol::errors::{ForkError, ImportJsonlError, NavigateTreeError};
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_session::{BranchSummaryInput, ListOptions, NavigateOptions, NewSessionOptions};

use crate::convert::wire;
use crate::runtime::Runtime;
use crate::sync::lock;

impl Runtime {
    /// Make the agent's conversation (and thinking level) match the session's current branch.
    pub(crate) fn sync_agent_from_session(&self) {
        // Each message is converted as it is read, so the branch never exists as JSON and as messages at once.
        let context = lock(&self.inner.session).build_session_context_as::<AgentMessage>();
        self.inner.agent.replace_messages(context.messages);
        if let (Some(level), Some(model)) = (
            ThinkingLevel::parse(&context.thinking_level),
            self.inner.agent.model(),
        ) {
            self.inner
                .agent
                .set_thinking_level(dreb_agent::clamp_thinking_level(&model, level));
        }
    }

    fn ensure_idle(&self) -> Result<(), NavigateTreeError> {
        if self.is_busy() {
            return Err(NavigateTreeError::Streaming);
        }
        if self.inner.phase.is_compacting() {
            return Err(NavigateTreeError::Summarizing);
        }
        Ok(())
    }

    pub(crate) async fn cmd_get_tree(
        &self,
        ctx: &RequestContext,
        _p: GetTreeParams,
    ) -> Result<TreeResult, String> {
        let tree = lock(&self.inner.session).tree_dto();
        // Written with the tree's own iterative encoder: the typed result goes through serde's recursion, which
        // a deep session (thousands of entries in a line) exceeds.
        if ctx.reply.is_attached() {
            let held = self.inner.outbox.hold();
            if ctx.reply.send_ok_encoded_in(&held, &tree) {
                return Ok(TreeResult {
                    roots: Vec::new(),
                    leaf_id: None,
                });
            }
        }
        wire(&tree)
    }

    pub(crate) async fn cmd_get_fork_messages(
        &self,
        _ctx: &RequestContext,
        _p: GetForkMessagesParams,
    ) -> Result<ForkMessagesResult, String> {
        let messages = lock(&self.inner.session).fork_messages();
        Ok(ForkMessagesResult {
            messages: wire(&messages)?,
        })
    }

    pub(crate) async fn cmd_list_sessions(
        &self,
        _ctx: &RequestContext,
        _p: ListSessionsParams,
    ) -> Result<SessionsResult, String> {
        let dir = lock(&self.inner.session).session_dir().to_path_buf();
        let sessions = tokio::task::spawn_blocking(move || {
            dreb_session::list_sessions(&dir, ListOptions::default())
        })
        .await
        .map_err(|e| e.to_string())?;
        let rpc: Vec<_> = sessions.iter().map(|s| s.to_rpc()).collect();
        Ok(SessionsResult {
            sessions: wire(&rpc)?,
        })
    }

    pub(crate) async fn cmd_list_all_sessions(
        &self,
        _ctx: &RequestContext,
        _p: ListAllSessionsParams,
    ) -> Result<SessionsResult, String> {
        let root = dreb_session::paths::sessions_root(&self.inner.agent_dir);
        let sessions = tokio::task::spawn_blocking(move || {
            dreb_session::list_all_sessions(&root, ListOptions::default())
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("Failed to list sessions: {e}"))?;
        let rpc: Vec<_> = sessions.iter().map(|s| s.to_rpc()).collect();
        Ok(SessionsResult {
            sessions: wire(&rpc)?,
        })
    }

    pub(crate) async fn cmd_navigate_tree(
        &self,
        ctx: &RequestContext,
        p: NavigateTreeParams,
    ) -> Result<NavigateTreeResult, NavigateTreeError> {
        self.ensure_idle()?;
        if lock(&self.inner.session).entry(&p.target_id).is_none() {
            return Err(NavigateTreeError::EntryNotFound {
                id: p.target_id.clone(),
            });
        }
        let cancelled = NavigateTreeResult {
            cancelled: true,
            editor_text: None,
        };
        let supplied = match self
            .ask_session_before(&SessionBeforeEvent::Tree {
                target_id: p.target_id.clone(),
                summarize: p.summarize == Some(true),
            })
            .await
        {
            SessionBeforeOutcome::Cancelled => return Ok(cancelled),
            SessionBeforeOutcome::Continue { supplied } => supplied,
        };
        // The handlers may have taken a while: the session must still be idle (the reference checks again too).
        self.ensure_idle()?;
        let mut summary = None;
        if let Some(s) = supplied.filter(|_| p.summarize == Some(true)) {
            summary = Some(BranchSummaryInput {
                summary: s.summary,
                details: s.details,
                from_hook: Some(true),
            });
        } else if p.summarize == Some(true) {
            let Some(model) = self.inner.agent.model() else {
                return Err(NavigateTreeError::NoModel);
            };
            let api_key = {
                let registry = self.registry();
                registry
                    .api_key_for(&model)
                    .map_err(|_| NavigateTreeError::NoApiKey {
                        provider: model.provider.clone(),
                    })?
            };
            let entries: Vec<serde_json::Value> = {
                let session = lock(&self.inner.session);
                let old_leaf = session.leaf_id().map(str::to_string);
                let source = session.entries_for_branch_summary(old_leaf.as_deref(), &p.target_id);
                source.entries.iter().map(|e| e.to_value()).collect()
            };
            if !entries.is_empty() {
                let budget = model
                    .context_window
                    .saturating_sub(self.inner.settings.branch_summary_settings().reserve_tokens);
                let prep = prepare_branch_summary(&entries, budget);
                let cancel = self.inner.stop.child_token();
                let llm = SummaryLlm {
                    client: &self.inner.providers,
                    model: &model,
                    api_key,
                    cancel,
                };
                self.inner.phase.begin_summary();
                // The summary call is a long wait: later commands go ahead (as in the reference).
                ctx.release_order();
                let result = generate_branch_summary(
                    &prep,
                    &llm,
                    p.custom_instructions.as_deref(),
                    p.replace_instructions == Some(true),
                )
                .await;
                self.inner.phase.end_summary();
                match result {
                    Ok(s) => {
                        summary = Some(BranchSummaryInput {
                            summary: s.summary,
                            details: Some(s.details),
                            from_hook: Some(false),
                        })
                    }
                    Err(dreb_compaction::SummaryError::Aborted) => return Ok(cancelled),
                    Err(e) => {
                        return Err(NavigateTreeError::Failed {
                            message: e.to_string(),
                        });
                    }
                }
            }
        }
        let result = lock(&self.inner.session)
            .navigate(
                &p.target_id,
                NavigateOptions {
                    summary,
                    label: p.label.clone(),
                },
            )
            .map_err(|e| NavigateTreeError::Failed {
                message: e.to_string(),
            })?;
        self.sync_agent_from_session();
        Ok(NavigateTreeResult {
            cancelled: false,
            editor_text: result.editor_text,
        })
    }

    pub(crate) async fn cmd_fork(
        &self,
        _ctx: &RequestContext,
        p: ForkParams,
    ) -> Result<ForkResult, ForkError> {
        // A cancelled fork answers the text a fork would have returned; bad entries fail before the handlers.
        let text = lock(&self.inner.session)
            .fork_text(&p.entry_id)
            .map_err(fork_error)?;
        let event = SessionBeforeEvent::Fork {
            entry_id: p.entry_id.clone(),
        };
        if self.ask_session_before(&event).await == SessionBeforeOutcome::Cancelled {
            return Ok(ForkResult {
                text,
                cancelled: true,
            });
        }
        self.inner.agent.abort();
        self.inner.agent.wait_for_idle().await;
        let result = lock(&self.inner.session)
            .fork(&p.entry_id)
            .map_err(fork_error)?;
        self.sync_agent_from_session();
        lock(&self.inner.queued).clear();
        self.inner.agent.clear_all_queues();
        self.announce_session_start(SessionStartReason::Fork).await;
        Ok(ForkResult {
            text: result.text,
            cancelled: false,
        })
    }

    /// Asks the `session_before_switch` handlers; `true` when one cancelled.
    async fn switch_cancelled(&self, reason: SwitchReason, target: Option<&Path>) -> bool {
        let event = SessionBeforeEvent::Switch {
            reason,
            target_session_file: target.map(|p| p.to_string_lossy().into_owned()),
        };
        self.ask_session_before(&event).await == SessionBeforeOutcome::Cancelled
    }

    async fn reset_for_new_session(&self) {
        self.inner.agent.abort();
        self.inner.agent.wait_for_idle().await;
        self.inner.agent.reset();
        lock(&self.inner.queued).clear();
        *lock(&self.inner.tasks) = serde_json::Value::Array(Vec::new());
        lock(&self.inner.background.activity).clear();
    }

    pub(crate) async fn cmd_new_session(
        &self,
        _ctx: &RequestContext,
        p: NewSessionParams,
    ) -> Result<CancelledResult, String> {
        if self.switch_cancelled(SwitchReason::New, None).await {
            return Ok(CancelledResult { cancelled: true });
        }
        self.reset_for_new_session().await;
        {
            let mut session = lock(&self.inner.session);
            session.new_session(NewSessionOptions {
                id: None,
                parent_session: p.parent_session.clone(),
            });
            session
                .append_thinking_level_change(self.inner.agent.thinking_level().as_str())
                .map_err(|e| e.to_string())?;
        }
        self.announce_session_start(SessionStartReason::New).await;
        Ok(CancelledResult { cancelled: false })
    }

    pub(crate) async fn cmd_switch_session(
        &self,
        _ctx: &RequestContext,
        p: SwitchSessionParams,
    ) -> Result<CancelledResult, String> {
        let path = resolve_against(&self.inner.cwd, &p.session_path);
        if self
            .switch_cancelled(SwitchReason::Resume, Some(&path))
            .await
        {
            return Ok(CancelledResult { cancelled: true });
        }
        self.reset_for_new_session().await;
        lock(&self.inner.session)
            .set_session_file(&path)
            .map_err(|e| e.to_string())?;
        self.sync_agent_from_session();
        self.announce_session_start(SessionStartReason::Resume)
            .await;
        Ok(CancelledResult { cancelled: false })
    }

    pub(crate) async fn cmd_import_jsonl(
        &self,
        _ctx: &RequestContext,
        p: ImportJsonlParams,
    ) -> Result<CancelledResult, ImportJsonlError> {
        let input = resolve_against(&self.inner.cwd, &p.input_path);
        if !input.exists() {
            return Err(ImportJsonlError::FileNotFound {
                path: input.display().to_string(),
            });
        }
        let imported = lock(&self.inner.session)
            .import_jsonl(&input)
            .map_err(ImportJsonlError::unexpected)?;
        // As in the reference: the copy is made, then switching to it can be cancelled.
        if self
            .switch_cancelled(SwitchReason::Resume, Some(&imported))
            .await
        {
            return Ok(CancelledResult { cancelled: true });
        }
        self.reset_for_new_session().await;
        lock(&self.inner.session)
            .set_session_file(&imported)
            .map_err(ImportJsonlError::unexpected)?;
        self.sync_agent_from_session();
        self.announce_session_start(SessionStartReason::Resume)
            .await;
        Ok(CancelledResult { cancelled: false })
    }

    pub(crate) async fn cmd_delete_session(
        &self,
        _ctx: &RequestContext,
        p: DeleteSessionParams,
    ) -> Result<DeleteSessionResult, String> {
        let active = lock(&self.inner.session)
            .session_file()
            .map(Path::to_path_buf);
        let path = p.session_path.clone();
        let method = tokio::task::spawn_blocking(move || {
            dreb_session::delete_session(&path, active.as_deref(), &dreb_session::Trash::from_env())
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
        wire(&serde_json::json!({ "method": match method {
            dreb_session::DeleteMethod::Trash => "trash",
            dreb_session::DeleteMethod::Unlink => "unlink",
        }}))
    }
}

fn resolve_against(cwd: &Path, p: &str) -> PathBuf {
    let path = Path::new(p);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// A session error of `fork` as the command's typed error (the texts the spec lists, the rest unexpected).
fn fork_error(e: dreb_session::SessionError) -> ForkError {
    use dreb_session::SessionError as S;
    match e {
        S::InvalidForkEntry => ForkError::InvalidEntryId,
        S::UnforkableAssistant => ForkError::UnforkableTurn,
        other => ForkError::unexpected(other),
    }
}
