//! Session files: tree, navigation, fork, new/switch/delete/import, listings.

use std::path::{Path, PathBuf};

use dreb_agent::AgentMessage;
use dreb_ai::ThinkingLevel;
use dreb_compaction::{SummaryLlm, generate_branch_summary, prepare_branch_summary};
use dreb_hooks::{SessionBeforeEvent, SessionBeforeOutcome, SessionStartReason, SwitchReason};
use dreb_protocol::errors::{ExportHtmlError, ForkError, ImportJsonlError, NavigateTreeError};
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_session::{BranchSummaryInput, HtmlExportOptions, ListOptions, NavigateOptions, ToolInfo};

use super::performance::{log_path, log_writer, summaries};
use crate::convert::wire;
use crate::services::Runtime;
use crate::sync::lock;

/// Make the agent's conversation (and thinking level) match the session's current branch.
pub(crate) fn sync_agent_from_session(rt: &Runtime) {
    // The messages stay in the session file until something needs them (see `session_conversation`).
    let context = crate::session_conversation::session_conversation(&rt.sessions.lock());
    rt.agent.replace_messages(context.conversation);
    if let (Some(level), Some(model)) = (
        ThinkingLevel::parse(&context.thinking_level),
        rt.agent.model(),
    ) {
        rt.agent
            .set_thinking_level(dreb_agent::clamp_thinking_level(&model, level));
    }
}

fn ensure_idle(rt: &Runtime) -> Result<(), NavigateTreeError> {
    if rt.phase.is_busy(&rt.agent) {
        return Err(NavigateTreeError::Streaming);
    }
    if rt.phase.is_compacting() {
        return Err(NavigateTreeError::Summarizing);
    }
    Ok(())
}

/// Asks the `session_before_switch` handlers; `true` when one cancelled.
pub(crate) async fn switch_cancelled(
    rt: &Runtime,
    reason: SwitchReason,
    target: Option<&Path>,
) -> bool {
    let event = SessionBeforeEvent::Switch {
        reason,
        target_session_file: target.map(|p| p.to_string_lossy().into_owned()),
    };
    crate::extensions::ask_session_before(rt, &event).await == SessionBeforeOutcome::Cancelled
}

pub(crate) async fn reset_for_new_session(rt: &Runtime) {
    rt.agent.abort();
    rt.agent.wait_for_idle().await;
    rt.agent.reset();
    rt.queue.clear();
    rt.tasks.clear();
    lock(&rt.background.activity).clear();
}

fn resolve_against(cwd: &Path, p: &str) -> PathBuf {
    let path = Path::new(p);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// A deletion error as `delete_session`'s typed error: the reference returns every one as it is (a failure it
/// does not name is its message, `Failed`).
fn delete_error(e: dreb_session::SessionError) -> errors::DeleteSessionError {
    use dreb_session::SessionError as S;
    use errors::DeleteSessionError as E;
    match e {
        S::NotASessionFile(path) => E::NotASessionFile { path },
        S::DeleteActiveSession => E::ActiveSession,
        S::SessionFileMissing(path) => E::SessionFileDoesNotExist { path },
        S::DeleteFailed(message) if message.is_empty() => E::UnknownDeletionError,
        S::DeleteFailed(message) => E::Failed { message },
        other => E::Failed {
            message: other.to_string(),
        },
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

/// The `Session` commands.
impl SessionHandler for Runtime {
    async fn get_session_stats(
        &self,
        _ctx: &RequestContext,
        _p: GetSessionStatsParams,
    ) -> Result<SessionStats, errors::GetSessionStatsError> {
        let (mut user, mut assistant, mut calls, mut results) = (0i64, 0i64, 0i64, 0i64);
        let mut tokens = SessionTokenStats {
            input: 0,
            output: 0,
            cache_read: 0,
            cache_write: 0,
            total: 0,
        };
        let mut cost = 0.0;
        // Read in place (a long conversation is not copied for a count).
        let total_messages = self.agent.with_state(|s| {
            for m in s.messages.iter() {
                match m {
                    AgentMessage::User(_) => user += 1,
                    AgentMessage::Assistant(a) => {
                        assistant += 1;
                        calls += a.tool_calls().count() as i64;
                        tokens.input += a.usage.input;
                        tokens.output += a.usage.output;
                        tokens.cache_read += a.usage.cache_read;
                        tokens.cache_write += a.usage.cache_write;
                        cost += a.usage.cost.total;
                    }
                    AgentMessage::ToolResult(_) => results += 1,
                    _ => {}
                }
            }
            s.messages.len()
        });
        tokens.total = tokens.input + tokens.output + tokens.cache_read + tokens.cache_write;
        let (session_file, session_id) = {
            let s = self.sessions.lock();
            (
                s.session_file().map(|p| p.to_string_lossy().into_owned()),
                s.session_id().to_string(),
            )
        };
        Ok(SessionStats {
            session_file: if self.sessions.no_session() {
                None
            } else {
                session_file
            },
            session_id,
            user_messages: user,
            assistant_messages: assistant,
            tool_calls: calls,
            tool_results: results,
            total_messages: total_messages as i64,
            tokens,
            cost: JsNumber(cost),
            context_usage: crate::commands::state::context_usage(self, self.agent.model().as_ref()),
        })
    }

    async fn get_performance_stats(
        &self,
        _ctx: &RequestContext,
        _p: GetPerformanceStatsParams,
    ) -> Result<RpcPerformanceStats, errors::GetPerformanceStatsError> {
        use errors::GetPerformanceStatsError as E;
        let path = log_path(&self.agent_dir);
        // Entries of replies that just ended may still be on their way to the file.
        let models = tokio::task::spawn_blocking(move || {
            log_writer().flush();
            summaries(&path)
        })
        .await
        .map_err(E::unexpected)?;
        Ok(RpcPerformanceStats { models })
    }

    async fn export_html(
        &self,
        _ctx: &RequestContext,
        p: ExportHtmlParams,
    ) -> Result<ExportHtmlResult, ExportHtmlError> {
        self.resources.ensure();
        let (system_prompt, tools) = self.agent.with_state(|s| {
            let tools = s
                .tools
                .iter()
                .map(|t| ToolInfo {
                    name: t.definition().name.clone(),
                    description: t.definition().description.clone(),
                })
                .collect::<Vec<_>>();
            (s.system_prompt.clone(), tools)
        });
        // Default: `dreb-session-<session file name>.html`, relative, so it lands in the process cwd.
        let options = HtmlExportOptions {
            output_path: p.output_path.map(PathBuf::from),
            system_prompt: Some(system_prompt),
            tools,
        };
        // Rendering and writing a long session takes a while: keep it off the async threads.
        let rt = self.clone();
        let path = tokio::task::spawn_blocking(move || rt.sessions.lock().export_html(&options))
            .await
            .map_err(ExportHtmlError::unexpected)?
            .map_err(|e| match e {
                dreb_session::SessionError::ExportInMemory => ExportHtmlError::InMemorySession,
                dreb_session::SessionError::NothingToExport => ExportHtmlError::NothingToExport,
                other => ExportHtmlError::unexpected(other),
            })?;
        Ok(ExportHtmlResult {
            path: path.to_string_lossy().into_owned(),
        })
    }

    async fn import_jsonl(
        &self,
        _ctx: &RequestContext,
        p: ImportJsonlParams,
    ) -> Result<CancelledResult, ImportJsonlError> {
        let input = resolve_against(&self.cwd, &p.input_path);
        if !input.exists() {
            return Err(ImportJsonlError::FileNotFound {
                path: input.display().to_string(),
            });
        }
        let imported = self
            .sessions
            .lock()
            .import_jsonl(&input)
            .map_err(ImportJsonlError::unexpected)?;
        // As in the reference: the copy is made, then switching to it can be cancelled.
        if switch_cancelled(self, SwitchReason::Resume, Some(&imported)).await {
            return Ok(CancelledResult { cancelled: true });
        }
        reset_for_new_session(self).await;
        self.sessions
            .lock()
            .set_session_file(&imported)
            .map_err(ImportJsonlError::unexpected)?;
        sync_agent_from_session(self);
        crate::announce::session_start(&self.hooks, SessionStartReason::Resume).await;
        Ok(CancelledResult { cancelled: false })
    }

    async fn switch_session(
        &self,
        _ctx: &RequestContext,
        p: SwitchSessionParams,
    ) -> Result<CancelledResult, errors::SwitchSessionError> {
        use errors::SwitchSessionError as E;
        let path = resolve_against(&self.cwd, &p.session_path);
        if switch_cancelled(self, SwitchReason::Resume, Some(&path)).await {
            return Ok(CancelledResult { cancelled: true });
        }
        reset_for_new_session(self).await;
        self.sessions
            .lock()
            .set_session_file(&path)
            .map_err(E::unexpected)?;
        sync_agent_from_session(self);
        // Files and `git`: off the runtime thread.
        let rt = self.clone();
        let _ = tokio::task::spawn_blocking(move || {
            crate::commands::discovery::refresh_system_prompt_for_session(&rt)
        })
        .await;
        crate::announce::session_start(&self.hooks, SessionStartReason::Resume).await;
        Ok(CancelledResult { cancelled: false })
    }

    async fn delete_session(
        &self,
        _ctx: &RequestContext,
        p: DeleteSessionParams,
    ) -> Result<DeleteSessionResult, errors::DeleteSessionError> {
        use errors::DeleteSessionError as E;
        let active = self.sessions.lock().session_file().map(Path::to_path_buf);
        let path = p.session_path.clone();
        let method = tokio::task::spawn_blocking(move || {
            dreb_session::delete_session(&path, active.as_deref(), &dreb_session::Trash::from_env())
        })
        .await
        .map_err(|e| E::Failed {
            message: e.to_string(),
        })?
        .map_err(delete_error)?;
        Ok(DeleteSessionResult { method })
    }

    async fn fork(&self, _ctx: &RequestContext, p: ForkParams) -> Result<ForkResult, ForkError> {
        // A cancelled fork answers the text a fork would have returned; bad entries fail before the handlers.
        let text = self
            .sessions
            .lock()
            .fork_text(&p.entry_id)
            .map_err(fork_error)?;
        let event = SessionBeforeEvent::Fork {
            entry_id: p.entry_id.clone(),
        };
        let skip_conversation_restore =
            match crate::extensions::ask_session_before(self, &event).await {
                SessionBeforeOutcome::Cancelled => {
                    return Ok(ForkResult {
                        text,
                        cancelled: true,
                    });
                }
                SessionBeforeOutcome::Continue {
                    skip_conversation_restore,
                    ..
                } => skip_conversation_restore,
            };
        self.agent.abort();
        self.agent.wait_for_idle().await;
        let result = self.sessions.lock().fork(&p.entry_id).map_err(fork_error)?;
        // A handler may keep the agent's conversation as it is (the reference's `skipConversationRestore`).
        if !skip_conversation_restore {
            sync_agent_from_session(self);
        }
        self.queue.clear();
        self.agent.clear_all_queues();
        crate::announce::session_start(&self.hooks, SessionStartReason::Fork).await;
        Ok(ForkResult {
            text: result.text,
            cancelled: false,
        })
    }

    async fn get_fork_messages(
        &self,
        _ctx: &RequestContext,
        _p: GetForkMessagesParams,
    ) -> Result<ForkMessagesResult, errors::GetForkMessagesError> {
        let messages = self.sessions.lock().fork_messages();
        Ok(ForkMessagesResult { messages })
    }

    async fn get_last_assistant_text(
        &self,
        _ctx: &RequestContext,
        _p: GetLastAssistantTextParams,
    ) -> Result<LastAssistantTextResult, errors::GetLastAssistantTextError> {
        let text = self.agent.messages().iter().rev().find_map(|m| match m {
            AgentMessage::Assistant(a)
                if !(a.content.is_empty() && a.stop_reason == dreb_ai::StopReason::Aborted) =>
            {
                Some(a.text().trim().to_string())
            }
            _ => None,
        });
        Ok(LastAssistantTextResult {
            text: text.filter(|t| !t.is_empty()),
        })
    }

    async fn set_session_name(
        &self,
        _ctx: &RequestContext,
        p: SetSessionNameParams,
    ) -> Result<(), errors::SetSessionNameError> {
        use errors::SetSessionNameError as E;
        let name = p.name.trim().to_string();
        if name.is_empty() {
            return Err(E::EmptyName);
        }
        self.sessions
            .lock()
            .set_session_name(&name)
            .map_err(E::unexpected)?;
        self.outbox
            .send(&Event::SessionNameChanged(SessionNameChangedEvent { name }));
        Ok(())
    }
}

/// The `Session listing` commands.
impl SessionListingHandler for Runtime {
    async fn list_sessions(
        &self,
        _ctx: &RequestContext,
        _p: ListSessionsParams,
    ) -> Result<SessionsResult, errors::ListSessionsError> {
        use errors::ListSessionsError as E;
        let dir = self.sessions.lock().session_dir().to_path_buf();
        let sessions = tokio::task::spawn_blocking(move || {
            dreb_session::list_sessions(&dir, ListOptions::default())
        })
        .await
        .map_err(E::unexpected)?;
        Ok(SessionsResult {
            sessions: sessions.iter().map(|s| s.to_rpc()).collect(),
        })
    }

    async fn list_all_sessions(
        &self,
        _ctx: &RequestContext,
        _p: ListAllSessionsParams,
    ) -> Result<SessionsResult, errors::ListAllSessionsError> {
        use errors::ListAllSessionsError as E;
        let root = dreb_session::paths::sessions_root(&self.agent_dir);
        let sessions = tokio::task::spawn_blocking(move || {
            dreb_session::list_all_sessions(&root, ListOptions::default())
        })
        .await
        .map_err(E::unexpected)?
        .map_err(|e| E::Failed {
            message: format!("Failed to list sessions: {e}"),
        })?;
        Ok(SessionsResult {
            sessions: sessions.iter().map(|s| s.to_rpc()).collect(),
        })
    }
}

/// The `Session tree` commands.
impl SessionTreeHandler for Runtime {
    async fn get_tree(
        &self,
        ctx: &RequestContext,
        _p: GetTreeParams,
    ) -> Result<TreeResult, errors::GetTreeError> {
        let tree = self.sessions.lock().tree_dto();
        // Written with the tree's own iterative encoder: the typed result goes through serde's recursion, which
        // a deep session (thousands of entries in a line) exceeds.
        if ctx.reply.is_attached() {
            let held = self.outbox.hold();
            if ctx.reply.send_ok_encoded_in(&held, &tree) {
                return Ok(TreeResult {
                    roots: Vec::new(),
                    leaf_id: None,
                });
            }
        }
        wire(&tree).map_err(errors::GetTreeError::unexpected)
    }

    async fn navigate_tree(
        &self,
        ctx: &RequestContext,
        p: NavigateTreeParams,
    ) -> Result<NavigateTreeResult, NavigateTreeError> {
        ensure_idle(self)?;
        if self.sessions.lock().entry(&p.target_id).is_none() {
            return Err(NavigateTreeError::EntryNotFound {
                id: p.target_id.clone(),
            });
        }
        let cancelled = NavigateTreeResult {
            cancelled: true,
            editor_text: None,
        };
        let preparation = crate::extensions::tree_preparation(&self.sessions, &p);
        let (supplied, overrides) = match crate::extensions::ask_session_before(
            self,
            &SessionBeforeEvent::TreeNavigation {
                target_id: p.target_id.clone(),
                summarize: p.summarize == Some(true),
                preparation,
            },
        )
        .await
        {
            SessionBeforeOutcome::Cancelled => return Ok(cancelled),
            SessionBeforeOutcome::Continue { supplied, tree, .. } => (supplied, tree),
        };
        // A handler may override the request's summary instructions and label (as the reference's may).
        let custom_instructions = overrides
            .custom_instructions
            .or(p.custom_instructions.clone());
        let replace_instructions =
            overrides.replace_instructions.or(p.replace_instructions) == Some(true);
        let label = overrides.label.or(p.label.clone());
        // The handlers may have taken a while: the session must still be idle (the reference checks again too).
        ensure_idle(self)?;
        let mut summary = None;
        if let Some(s) = supplied.filter(|_| p.summarize == Some(true)) {
            summary = Some(BranchSummaryInput {
                summary: s.summary,
                details: s.details,
                from_hook: Some(true),
            });
        } else if p.summarize == Some(true) {
            let Some(model) = self.agent.model() else {
                return Err(NavigateTreeError::NoModel);
            };
            let api_key = {
                let registry = self.models.registry();
                registry
                    .api_key_for(&model)
                    .map_err(|_| NavigateTreeError::NoApiKey {
                        provider: model.provider.clone(),
                    })?
            };
            let entries: Vec<serde_json::Value> = {
                let session = self.sessions.lock();
                let old_leaf = session.leaf_id().map(str::to_string);
                let source = session.entries_for_branch_summary(old_leaf.as_deref(), &p.target_id);
                source.entries.iter().map(|e| e.to_value()).collect()
            };
            if !entries.is_empty() {
                let budget = model
                    .context_window_tokens()
                    .saturating_sub(self.settings.branch_summary_settings().reserve_tokens);
                let prep = prepare_branch_summary(&entries, budget);
                let cancel = self.stop.child_token();
                let llm = SummaryLlm {
                    client: self.models.providers(),
                    model: &model,
                    api_key,
                    cancel,
                };
                self.phase.begin_summary();
                // The summary call is a long wait: later commands go ahead (as in the reference).
                ctx.release_order();
                let result = generate_branch_summary(
                    &prep,
                    &llm,
                    custom_instructions.as_deref(),
                    replace_instructions,
                )
                .await;
                self.phase.end_summary();
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
        let result = self
            .sessions
            .lock()
            .navigate(&p.target_id, NavigateOptions { summary, label })
            .map_err(|e| NavigateTreeError::Failed {
                message: e.to_string(),
            })?;
        sync_agent_from_session(self);
        Ok(NavigateTreeResult {
            cancelled: false,
            editor_text: result.editor_text,
        })
    }
}
