//! prompt, steer, follow_up, abort and the queues.

use dreb_agent::{AgentError, AgentMessage};
use dreb_ai::{ImageContent, TextContent, UserBlock, UserContent, UserMessage};
use dreb_protocol::envelope::Response;
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;

use dreb_hooks::{
    BeforeAgentStartEvent, InputEvent, InputOutcome, InputSource, SessionStartReason, SwitchReason,
};
use dreb_session::NewSessionOptions;

use crate::services::Runtime;
use crate::services::prompt_queue::QueuedDisplay;

/// The folder the "see the docs" texts point at (rpc.yaml's `{docsPath}`; the reference names its install's docs).
pub(crate) const DOCS_PATH: &str = "docs";

/// `prompt`'s refusal when the model's provider has no API key.
pub(crate) fn no_api_key(provider: &str) -> dreb_protocol::errors::PromptError {
    dreb_protocol::errors::PromptError::NoApiKeyFound {
        provider: provider.into(),
        docs_path: DOCS_PATH.into(),
    }
}

/// [`no_api_key`]'s text (the agent's key lookup reports it too).
pub(crate) fn no_api_key_text(provider: &str) -> String {
    no_api_key(provider).to_string()
}

pub(crate) fn builtin_slash_command(message: &str) -> Option<&str> {
    let first = message.split_whitespace().next()?;
    let name = first.strip_prefix('/')?;
    super::discovery::BUILTIN_COMMANDS
        .iter()
        .any(|(n, _, _)| *n == name)
        .then_some(name)
}

/// The refusal of a built-in slash command.
pub(crate) fn reject_builtin(message: &str) -> Result<(), errors::PromptError> {
    match builtin_slash_command(message) {
        Some(name) => Err(errors::PromptError::BuiltinSlashCommand { name: name.into() }),
        None => Ok(()),
    }
}

/// A run that could not start, as `prompt`'s error (the race with another prompt is the listed one).
fn start_error(e: AgentError) -> errors::PromptError {
    match e {
        AgentError::AlreadyProcessingPrompt => errors::PromptError::PromptRace,
        other => errors::PromptError::unexpected(other),
    }
}

fn user_message(text: &str, images: &[ImageContent]) -> AgentMessage {
    let mut content = vec![UserBlock::Text(TextContent {
        text: text.to_string(),
        text_signature: None,
        ..Default::default()
    })];
    content.extend(images.iter().cloned().map(UserBlock::Image));
    AgentMessage::User(UserMessage {
        role: Default::default(),
        content: UserContent::Blocks(content),
        timestamp: dreb_agent::agent::now_ms(),
    })
}

fn images_of(images: &Option<Vec<ImageContent>>) -> Vec<ImageContent> {
    images.clone().unwrap_or_default()
}

fn queue(rt: &Runtime, steering: bool, text: &str, images: Vec<ImageContent>) {
    let message = user_message(text, &images);
    rt.queue.push(QueuedDisplay {
        steering,
        text: text.to_string(),
        images,
    });
    if steering {
        rt.agent.steer(message);
    } else {
        rt.agent.follow_up(message);
    }
}

/// The messages a prompt's run starts with: the user message, then what the `before_agent_start` handlers
/// add; the run's system prompt is theirs when they replace it, else the base one again.
async fn run_messages(rt: &Runtime, text: &str, images: &[ImageContent]) -> Vec<AgentMessage> {
    let base = rt.resources.base_system_prompt();
    let outcome = rt
        .hooks
        .before_agent_start(BeforeAgentStartEvent {
            prompt: text.to_string(),
            images: images.to_vec(),
            system_prompt: base.clone(),
        })
        .await;
    rt.agent
        .set_system_prompt(outcome.system_prompt.unwrap_or(base));
    let mut messages = vec![user_message(text, images)];
    // Custom messages an extension held for this turn (`send_message` with `deliverAs: "nextTurn"`).
    messages.extend(rt.queue.take_next_turn());
    messages.extend(outcome.messages.into_iter().map(AgentMessage::Custom));
    messages
}

/// `steer` and `follow_up` cannot queue an extension command (it would run at once): the name of the one
/// `message` starts with, if any (their `ExtensionCommandNotQueueable` errors, which the reference throws).
async fn unqueueable_extension_command(rt: &Runtime, message: &str) -> Option<String> {
    rt.extensions.ready().await;
    rt.extensions
        .command(message)
        .map(|(_, name, _)| name.to_string())
}

/// `/skill:name args` and `/template args` expanded, as the reference does before prompting or queueing.
fn expand_input(rt: &Runtime, text: &str) -> String {
    let session_id = rt.sessions.lock().session_id().to_string();
    rt.resources.lock().expand_input(text, &session_id)
}

/// `prompt`'s success response is written here, ahead of anything the prompt causes (the reference answers
/// before the run's first event). In-process calls (a detached context) get it as the return value instead.
fn acknowledge_prompt(ctx: &RequestContext) {
    ctx.reply.send_ok(ResponseData::Prompt);
}

/// A prompt from a host (`prompt`) or an extension (`send_user_message`).
pub(crate) async fn prompt_from(
    rt: &Runtime,
    ctx: &RequestContext,
    p: PromptParams,
    source: InputSource,
) -> Result<(), errors::PromptError> {
    use errors::PromptError as E;
    // Extensions still loading may register the command, hooks or tools a host's prompt needs. (An
    // extension's own prompt does not wait: it may come while the extensions initialise.)
    if source == InputSource::Rpc {
        rt.extensions.ready().await;
        rt.mcp.wait_ready().await;
    }
    // An extension command runs at once, even while streaming; the prompt is acknowledged when it is done.
    if let Some((ext, name, args)) = rt.extensions.command(&p.message) {
        rt.extensions.execute_command(&ext, name, args).await;
        acknowledge_prompt(ctx);
        return Ok(());
    }
    // A server prompt: its text is the message.
    let p = match rt.mcp.expand(&p.message).await {
        Some(Ok(message)) => PromptParams { message, ..p },
        Some(Err(message)) => return Err(E::McpPromptFailed { message }),
        None => p,
    };
    reject_builtin(&p.message)?;
    let images = images_of(&p.images);
    // `input`: the handlers may transform the prompt, or handle it (then no run starts).
    let input = InputEvent {
        text: p.message,
        images,
        source,
    };
    let (text, images) = match rt.hooks.input(input).await {
        InputOutcome::Handled => {
            acknowledge_prompt(ctx);
            return Ok(());
        }
        InputOutcome::Continue(input) => (input.text, input.images),
    };
    let message = expand_input(rt, &text);
    let agent = &rt.agent;
    // The host saw agent_end; the loop may still be releasing its slot.
    rt.phase.settle_after_agent_end(&rt.agent).await;
    if agent.is_streaming() {
        let steering = match p.streaming_behavior {
            Some(StreamingBehavior::Steer) => true,
            Some(StreamingBehavior::FollowUp) => false,
            _ => return Err(E::AlreadyProcessing),
        };
        acknowledge_prompt(ctx);
        queue(rt, steering, &message, images);
        return Ok(());
    }
    let Some(model) = agent.model() else {
        return Err(E::NoModelSelected {
            docs_path: DOCS_PATH.into(),
        });
    };
    {
        let registry = rt.models.registry();
        registry
            .api_key_for(&model)
            .map_err(|_| no_api_key(&model.provider))?;
    }
    flush_deferred_bash(rt);
    let Some(pending) = crate::commands::compaction::pre_prompt_compaction(rt) else {
        let messages = run_messages(rt, &message, &images).await;
        // The run is started and acknowledged while the outbox is held: its first event waits for the ack, and
        // a start that fails (a concurrent prompt won) is this request's only response, an error.
        let held = rt.outbox.hold();
        agent.start_prompt(messages).map_err(start_error)?;
        ctx.reply.send_ok_in(&held, ResponseData::Prompt);
        return Ok(());
    };
    acknowledge_prompt(ctx);
    // Compact first, then prompt. Like the reference, the prompt is acknowledged at once; a failure to start
    // afterwards is reported as a second response for the same id.
    let rt = rt.clone();
    let id = ctx.id.clone();
    tokio::spawn(async move {
        crate::commands::compaction::run_pre_prompt_compaction(&rt, pending).await;
        if rt.stop.is_cancelled() {
            return;
        }
        let messages = run_messages(&rt, &message, &images).await;
        let started = rt.agent.start_prompt(messages);
        if let Err(e) = started {
            let late = Response::error(id, Some("prompt".into()), start_error(e).wire_text());
            rt.outbox.send(&late);
        }
    });
    Ok(())
}

fn pending_messages(rt: &Runtime) -> Result<RpcPendingMessages, String> {
    let queued = rt.queue.queued();
    let view = |steering: bool| -> Result<(Vec<String>, Vec<RpcQueuedMessage>), String> {
        let mut texts = Vec::new();
        let mut messages = Vec::new();
        for q in queued.iter().filter(|q| q.steering == steering) {
            texts.push(q.text.clone());
            let images = if q.images.is_empty() {
                None
            } else {
                Some(q.images.clone())
            };
            messages.push(RpcQueuedMessage {
                text: q.text.clone(),
                images,
            });
        }
        Ok((texts, messages))
    };
    let (steering, steering_messages) = view(true)?;
    let (follow_up, follow_up_messages) = view(false)?;
    Ok(RpcPendingMessages {
        steering,
        follow_up,
        steering_messages,
        follow_up_messages,
    })
}

/// Move `bash` command results recorded during a run into the conversation (keeps tool call/result adjacency).
pub(crate) fn flush_deferred_bash(rt: &Runtime) {
    for m in rt.bash.take_deferred() {
        rt.agent.append_message(m.clone());
        rt.sessions.append(&m, "a bash execution");
    }
}

/// The `Prompting` commands.
impl PromptingHandler for Runtime {
    async fn prompt(
        &self,
        ctx: &RequestContext,
        p: PromptParams,
    ) -> Result<(), errors::PromptError> {
        prompt_from(self, ctx, p, InputSource::Rpc).await
    }

    async fn steer(&self, _ctx: &RequestContext, p: SteerParams) -> Result<(), errors::SteerError> {
        use errors::SteerError as E;
        if let Some(name) = unqueueable_extension_command(self, &p.message).await {
            return Err(E::ExtensionCommandNotQueueable { name });
        }
        if let Some(name) = builtin_slash_command(&p.message) {
            return Err(E::BuiltinSlashCommand { name: name.into() });
        }
        let message = expand_input(self, &p.message);
        let images = images_of(&p.images);
        queue(self, true, &message, images);
        Ok(())
    }

    async fn follow_up(
        &self,
        _ctx: &RequestContext,
        p: FollowUpParams,
    ) -> Result<(), errors::FollowUpError> {
        use errors::FollowUpError as E;
        if let Some(name) = unqueueable_extension_command(self, &p.message).await {
            return Err(E::ExtensionCommandNotQueueable { name });
        }
        if let Some(name) = builtin_slash_command(&p.message) {
            return Err(E::BuiltinSlashCommand { name: name.into() });
        }
        let message = expand_input(self, &p.message);
        let images = images_of(&p.images);
        queue(self, false, &message, images);
        Ok(())
    }

    async fn abort(
        &self,
        _ctx: &RequestContext,
        _p: AbortParams,
    ) -> Result<(), errors::AbortError> {
        // Like the reference, `abort` also stops every background subagent.
        self.background.abort_all();
        self.phase.abort_retry();
        self.agent.abort();
        self.agent.wait_for_idle().await;
        Ok(())
    }

    async fn new_session(
        &self,
        _ctx: &RequestContext,
        p: NewSessionParams,
    ) -> Result<CancelledResult, errors::NewSessionError> {
        use errors::NewSessionError as E;
        if crate::commands::sessions::switch_cancelled(self, SwitchReason::New, None).await {
            return Ok(CancelledResult { cancelled: true });
        }
        crate::commands::sessions::reset_for_new_session(self).await;
        {
            let mut session = self.sessions.lock();
            session.new_session(NewSessionOptions {
                id: None,
                parent_session: p.parent_session.clone(),
            });
            session
                .append_thinking_level_change(self.agent.thinking_level().as_str())
                .map_err(E::unexpected)?;
        }
        crate::announce::session_start(&self.hooks, SessionStartReason::New).await;
        Ok(CancelledResult { cancelled: false })
    }

    /// Re-read settings and models.json, check the model's prompt settings, reload resources and context files, and
    /// rebuild the system prompt. Every failure is thrown in the reference (the handler adds `Command failed: `).
    async fn reload(
        &self,
        _ctx: &RequestContext,
        _p: ReloadParams,
    ) -> Result<(), errors::ReloadError> {
        // As in the reference: `session_shutdown`, the reload, then `session_start` with reason `reload`. The
        // extensions are stopped with the shutdown and loaded again (discovery included) after the reload.
        self.announce_session_shutdown().await;
        self.stop_extensions().await;
        self.stop_mcp_servers().await;
        let rt = self.clone();
        let reloaded =
            tokio::task::spawn_blocking(move || crate::commands::discovery::reload_blocking(&rt))
                .await
                .map_err(errors::ReloadError::unexpected)
                .and_then(|r| r);
        crate::extensions::load_extensions(self, dreb_hooks::SessionStartReason::Reload);
        crate::mcp::load_mcp_servers(self);
        reloaded?;
        crate::announce::session_start(&self.hooks, dreb_hooks::SessionStartReason::Reload).await;
        self.extensions.ready().await;
        Ok(())
    }
}

/// The `Queue modes` commands.
impl QueueModesHandler for Runtime {
    async fn set_steering_mode(
        &self,
        _ctx: &RequestContext,
        p: SetSteeringModeParams,
    ) -> Result<(), errors::SetSteeringModeError> {
        let mode = p.mode;
        self.agent.set_steering_mode(mode);
        self.settings
            .persist(move |s| s.set_steering_mode(mode.as_str()))
            .await
            .map_err(errors::SetSteeringModeError::unexpected)
    }

    async fn set_follow_up_mode(
        &self,
        _ctx: &RequestContext,
        p: SetFollowUpModeParams,
    ) -> Result<(), errors::SetFollowUpModeError> {
        let mode = p.mode;
        self.agent.set_follow_up_mode(mode);
        self.settings
            .persist(move |s| s.set_follow_up_mode(mode.as_str()))
            .await
            .map_err(errors::SetFollowUpModeError::unexpected)
    }

    async fn get_pending_messages(
        &self,
        _ctx: &RequestContext,
        _p: GetPendingMessagesParams,
    ) -> Result<RpcPendingMessages, errors::GetPendingMessagesError> {
        pending_messages(self).map_err(errors::GetPendingMessagesError::unexpected)
    }

    async fn clear_pending_messages(
        &self,
        _ctx: &RequestContext,
        _p: ClearPendingMessagesParams,
    ) -> Result<RpcPendingMessages, errors::ClearPendingMessagesError> {
        let cleared =
            pending_messages(self).map_err(errors::ClearPendingMessagesError::unexpected)?;
        self.agent.clear_all_queues();
        self.queue.clear();
        Ok(cleared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_commands_match_on_the_first_token_only() {
        assert_eq!(builtin_slash_command("/fork"), Some("fork"));
        assert_eq!(builtin_slash_command("  /fork x"), Some("fork"));
        assert_eq!(builtin_slash_command("/forklift"), None);
        assert_eq!(builtin_slash_command("/unknown"), None);
        assert_eq!(builtin_slash_command("hello /fork"), None);
        assert_eq!(
            reject_builtin("/compact now").unwrap_err().wire_text(),
            "Built-in slash command /compact must be handled by the RPC client; it was not sent to the model."
        );
    }
}
