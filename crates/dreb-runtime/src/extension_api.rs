//! The agent API extensions call (`protocol/extension.yaml` `commands:`), served over the session: each command
//! maps to what the session already does for a host (often the very RPC command), so an extension and a host
//! see the same rules and error texts.

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use dreb_agent::{AgentEvent, AgentMessage, CustomMessage};
use dreb_extension_protocol as ext;
use dreb_extension_protocol::{Command, ResponseData};
use dreb_protocol::support::RequestContext;
use serde_json::Value;

use crate::convert::wire as convert;
use crate::extensions::SessionPlacement;
use crate::options::ExtensionOptions;
use crate::services::{Runtime, Services};
use dreb_extensions::{ExtensionApi, ExtensionHost, HostEnv};

/// The agent API the extensions are served ([`ApiServer`]), plus the start-up placement of the
/// session that the `session_directory` answer completes.
struct PlacingApi {
    api: crate::extension_api::ApiServer,
    services: std::sync::Weak<Services>,
    /// How the session was placed at start-up while the hook may still move it (taken by the answer).
    placement: std::sync::Mutex<Option<SessionPlacement>>,
}

#[async_trait::async_trait]
impl ExtensionApi for PlacingApi {
    async fn serve(
        &self,
        extension: &str,
        command: dreb_extension_protocol::Command,
    ) -> Result<dreb_extension_protocol::ResponseData, String> {
        self.api.serve(extension, command).await
    }

    fn registrations_changed(&self) {
        self.api.registrations_changed();
    }

    async fn resources_discovered(
        &self,
        found: Vec<(String, dreb_extension_protocol::ResourcesDiscoverResult)>,
    ) {
        self.api.resources_discovered(found).await;
    }

    fn session_directory_open(&self) -> bool {
        crate::sync::lock(&self.placement).is_some()
    }

    async fn session_directory_chosen(&self, dir: PathBuf) {
        let placement = crate::sync::lock(&self.placement).take();
        if let (Some(services), Some(placement)) = (self.services.upgrade(), placement) {
            place_session(&Runtime::from(services), dir, placement).await;
        }
    }
}

/// The extension host of a new session (nothing is started yet).
pub(crate) fn new_host(
    services: &std::sync::Weak<Services>,
    options: &ExtensionOptions,
    placement: Option<SessionPlacement>,
    cwd: &std::path::Path,
    agent_dir: &std::path::Path,
    outbox: &dreb_protocol::Outbox,
) -> Arc<ExtensionHost> {
    let outbox = outbox.clone();
    ExtensionHost::new(HostEnv {
        cwd: cwd.to_path_buf(),
        agent_dir: agent_dir.to_path_buf(),
        has_ui: options.has_ui,
        flag_values: options.flags.iter().cloned().collect(),
        api: Arc::new(PlacingApi {
            api: ApiServer {
                services: services.clone(),
            },
            services: services.clone(),
            placement: std::sync::Mutex::new(placement),
        }),
        // The host of this checkout, for development builds; installed builds find it on PATH.
        javascript_checkout: Some(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/extension-host"),
        ),
        failures: Arc::new(move |f: dreb_hooks::HookFailure| {
            outbox.send(&dreb_protocol::Event::ExtensionError(
                dreb_protocol::ExtensionErrorEvent {
                    extension_path: f.source,
                    event: f.event,
                    error: f.error,
                },
            ))
        }),
    })
}

/// The `session_directory` answer at start-up: the session's directory becomes `dir`, and the session file
/// follows as `placement` says. Runs before the load is marked ready, so nothing that writes the session (a
/// prompt, a host's `bash`) has run yet: a new session's file is not written, and it simply moves.
async fn place_session(rt: &Runtime, dir: PathBuf, placement: SessionPlacement) {
    let session_rt = rt.clone();
    let model = rt.agent.model();
    let thinking = rt.agent.thinking_level();
    let placed = tokio::task::spawn_blocking(move || {
        let mut session = session_rt.sessions.lock();
        let continued = match placement {
            SessionPlacement::Continue => {
                Some(dreb_session::listing::find_most_recent_session(&dir))
            }
            _ => None,
        };
        session.set_session_dir(dir, placement != SessionPlacement::Opened)?;
        match continued {
            // The directory's most recent session, as `--continue` would have opened it there.
            Some(Some(path)) if Some(path.as_path()) != session.session_file() => {
                session.set_session_file(&path)?;
                Ok(true)
            }
            // None there, but one of the default directory was continued: a new session there instead.
            Some(None) if session.is_flushed() => {
                session.new_session(dreb_session::NewSessionOptions::default());
                if let Some(m) = &model {
                    session.append_model_change(&m.provider, &m.id)?;
                }
                session.append_thinking_level_change(thinking.as_str())?;
                Ok(true)
            }
            _ => Ok::<bool, dreb_session::SessionError>(false),
        }
    })
    .await;
    match placed {
        Ok(Ok(true)) => crate::commands::sessions::sync_agent_from_session(rt),
        Ok(Ok(false)) => {}
        Ok(Err(e)) => tracing::warn!(
            "session_directory: the session stays where it was ({}): {e}",
            rt.cwd.display()
        ),
        Err(e) => tracing::warn!("session_directory: {e}"),
    }
}

/// The skill and prompt paths extensions answered to `resources_discover` (relative ones against the cwd), added to
/// the session's resources (theme paths have no use without a terminal UI).
pub(crate) async fn add_extension_resources(
    rt: &Runtime,
    found: Vec<(String, dreb_extension_protocol::ResourcesDiscoverResult)>,
) {
    let cwd = rt.cwd.clone();
    let paths = |list: &Option<Vec<String>>| -> Vec<PathBuf> {
        list.iter().flatten().map(|p| cwd.join(p)).collect()
    };
    let skills: Vec<PathBuf> = found
        .iter()
        .flat_map(|(_, r)| paths(&r.skill_paths))
        .collect();
    let prompts: Vec<PathBuf> = found
        .iter()
        .flat_map(|(_, r)| paths(&r.prompt_paths))
        .collect();
    if skills.is_empty() && prompts.is_empty() {
        return;
    }
    let rt = rt.clone();
    let _ = tokio::task::spawn_blocking(move || {
        crate::commands::discovery::extend_resources(&rt, skills, prompts)
    })
    .await;
}

/// Serves the extensions of one session.
pub(crate) struct ApiServer {
    pub(crate) services: Weak<Services>,
}

#[async_trait::async_trait]
impl dreb_extensions::ExtensionApi for ApiServer {
    async fn serve(&self, extension: &str, command: Command) -> Result<ResponseData, String> {
        let Some(services) = self.services.upgrade() else {
            return Err("The session has ended".into());
        };
        serve_extension(&Runtime::from(services), extension, command).await
    }

    fn registrations_changed(&self) {
        if let Some(services) = self.services.upgrade() {
            crate::extensions::apply_tools(&services);
            crate::extensions::apply_extension_providers(&services);
        }
    }

    async fn resources_discovered(&self, found: Vec<(String, ext::ResourcesDiscoverResult)>) {
        if let Some(services) = self.services.upgrade() {
            add_extension_resources(&Runtime::from(services), found).await;
        }
    }
}

fn detached() -> RequestContext {
    RequestContext::detached(None)
}

fn dialog_timeout(ms: Option<i64>) -> dreb_dialog::DialogOptions {
    match ms {
        Some(ms) if ms > 0 => dreb_dialog::DialogOptions::timeout(Duration::from_millis(ms as u64)),
        _ => dreb_dialog::DialogOptions::default(),
    }
}

async fn serve_extension(
    rt: &Runtime,
    extension: &str,
    command: Command,
) -> Result<ResponseData, String> {
    Ok(match command {
        Command::GetContext(_) => ResponseData::GetContext(extension_context(rt)?),
        Command::GetSession(_) => ResponseData::GetSession(session_view(rt)?),
        Command::GetModels(_) => {
            let registry = rt.models.registry();
            let models = convert(&registry.all().to_vec())?;
            let available = registry
                .available()
                .iter()
                .map(|m| format!("{}/{}", m.provider, m.id))
                .collect();
            ResponseData::GetModels(ext::ModelsView { models, available })
        }
        Command::GetTools(_) => ResponseData::GetTools(tool_infos(rt)),
        Command::SendMessage(p) => {
            extension_send_message(rt, p)?;
            ResponseData::SendMessage
        }
        Command::SendUserMessage(p) => {
            extension_send_user_message(rt, p).await?;
            ResponseData::SendUserMessage
        }
        Command::AppendEntry(p) => {
            rt.sessions
                .lock()
                .append_custom_entry(&p.custom_type, p.data)
                .map_err(|e| e.to_string())?;
            ResponseData::AppendEntry
        }
        Command::SetSessionName(p) => {
            dreb_protocol::SessionHandler::set_session_name(
                rt,
                &detached(),
                dreb_protocol::SetSessionNameParams { name: p.name },
            )
            .await
            .map_err(|e| e.to_string())?;
            ResponseData::SetSessionName
        }
        Command::SetLabel(p) => {
            rt.sessions
                .lock()
                .append_label_change(&p.entry_id, p.label.as_deref())
                .map_err(|e| e.to_string())?;
            ResponseData::SetLabel
        }
        Command::SetActiveTools(p) => {
            rt.tools.set_active(p.tool_names);
            crate::extensions::apply_tools(rt);
            ResponseData::SetActiveTools
        }
        Command::SetModel(p) => {
            let ok = dreb_protocol::ModelHandler::set_model(
                rt,
                &detached(),
                dreb_protocol::SetModelParams {
                    provider: p.provider,
                    model_id: p.model_id,
                },
            )
            .await
            .is_ok();
            ResponseData::SetModel(ext::SetModelResult { ok })
        }
        Command::SetThinkingLevel(p) => {
            dreb_protocol::ThinkingHandler::set_thinking_level(
                rt,
                &detached(),
                dreb_protocol::SetThinkingLevelParams {
                    level: convert(&p.level)?,
                },
            )
            .await
            .map_err(|e| e.to_string())?;
            ResponseData::SetThinkingLevel
        }
        Command::Exec(p) => ResponseData::Exec(extension_exec(rt, p).await?),
        Command::Abort(_) => {
            dreb_protocol::PromptingHandler::abort(rt, &detached(), dreb_protocol::AbortParams {})
                .await
                .map_err(|e| e.to_string())?;
            ResponseData::Abort
        }
        Command::Compact(p) => {
            let r = dreb_protocol::CompactionHandler::compact(
                rt,
                &detached(),
                dreb_protocol::CompactParams {
                    custom_instructions: p.custom_instructions,
                },
            )
            .await?;
            ResponseData::Compact(ext::CompactResult {
                summary: r.summary,
                tokens_before: r.tokens_before,
            })
        }
        Command::WaitForIdle(_) => {
            rt.wait_until_settled().await;
            ResponseData::WaitForIdle
        }
        Command::NewSession(p) => {
            let r = dreb_protocol::PromptingHandler::new_session(
                rt,
                &detached(),
                dreb_protocol::NewSessionParams {
                    parent_session: p.parent_session,
                },
            )
            .await
            .map_err(|e| e.to_string())?;
            ResponseData::NewSession(ext::CancelledResult {
                cancelled: r.cancelled,
            })
        }
        Command::Fork(p) => {
            let r = dreb_protocol::SessionHandler::fork(
                rt,
                &detached(),
                dreb_protocol::ForkParams {
                    entry_id: p.entry_id,
                },
            )
            .await?;
            ResponseData::Fork(ext::CancelledResult {
                cancelled: r.cancelled,
            })
        }
        Command::NavigateTree(p) => {
            let r = dreb_protocol::SessionTreeHandler::navigate_tree(
                rt,
                &detached(),
                dreb_protocol::NavigateTreeParams {
                    target_id: p.target_id,
                    summarize: p.summarize,
                    custom_instructions: p.custom_instructions,
                    replace_instructions: p.replace_instructions,
                    label: p.label,
                },
            )
            .await?;
            ResponseData::NavigateTree(ext::CancelledResult {
                cancelled: r.cancelled,
            })
        }
        Command::SwitchSession(p) => {
            let r = dreb_protocol::SessionHandler::switch_session(
                rt,
                &detached(),
                dreb_protocol::SwitchSessionParams {
                    session_path: p.session_path,
                },
            )
            .await
            .map_err(|e| e.to_string())?;
            ResponseData::SwitchSession(ext::CancelledResult {
                cancelled: r.cancelled,
            })
        }
        Command::Reload(_) => {
            // The reload stops this extension too: it is answered first, and the reload runs after.
            let rt = rt.clone();
            tokio::spawn(async move {
                if let Err(e) = dreb_protocol::PromptingHandler::reload(
                    &rt,
                    &detached(),
                    dreb_protocol::ReloadParams {},
                )
                .await
                {
                    tracing::warn!("reload requested by an extension failed: {e}");
                }
            });
            ResponseData::Reload
        }
        Command::UiSelect(p) => ResponseData::UiSelect(ext::ValueResult {
            value: rt
                .dialogs
                .select(&p.title, &p.options, dialog_timeout(p.timeout))
                .await,
        }),
        Command::UiConfirm(p) => ResponseData::UiConfirm(ext::ConfirmResult {
            confirmed: rt
                .dialogs
                .confirm(&p.title, &p.message, dialog_timeout(p.timeout))
                .await,
        }),
        Command::UiInput(p) => ResponseData::UiInput(ext::ValueResult {
            value: rt
                .dialogs
                .input(
                    &p.title,
                    p.placeholder.as_deref(),
                    dialog_timeout(p.timeout),
                )
                .await,
        }),
        Command::UiEditor(p) => ResponseData::UiEditor(ext::ValueResult {
            value: rt.dialogs.editor(&p.title, p.prefill.as_deref()).await,
        }),
        Command::UiAsk(p) => {
            let questions = convert(&p.questions)?;
            let answers = rt
                .dialogs
                .ask(p.title.as_deref(), questions, dialog_timeout(p.timeout))
                .await
                .map_err(|e| e.to_string())?;
            let answers = match answers {
                Some(r) => Some(convert(&r.answers)?),
                None => None,
            };
            ResponseData::UiAsk(ext::AskResult { answers })
        }
        Command::UiNotify(p) => {
            let kind = match &p.notify_type {
                Some(t) => Some(convert(t)?),
                None => None,
            };
            rt.dialogs.notify(&p.message, kind);
            ResponseData::UiNotify
        }
        Command::UiSetStatus(p) => {
            rt.dialogs.set_status(&p.key, p.text.as_deref());
            ResponseData::UiSetStatus
        }
        Command::UiSetWidget(p) => {
            let placement = match &p.placement {
                Some(t) => Some(convert(t)?),
                None => None,
            };
            rt.dialogs.set_widget(&p.key, p.lines, placement);
            ResponseData::UiSetWidget
        }
        Command::UiSetTitle(p) => {
            rt.dialogs.set_title(&p.title);
            ResponseData::UiSetTitle
        }
        Command::UiSetEditorText(p) => {
            rt.dialogs.set_editor_text(&p.text);
            ResponseData::UiSetEditorText
        }
        // Answered by the extension host itself; never forwarded.
        Command::Register(_) | Command::ToolUpdate(_) | Command::UnregisterProvider(_) => {
            return Err(format!("{extension}: not a runtime command"));
        }
    })
}

fn extension_context(rt: &Runtime) -> Result<ext::ExtensionContext, String> {
    let agent = &rt.agent;
    let (session_id, session_file, session_name, leaf_id) = {
        let s = rt.sessions.lock();
        (
            s.session_id().to_string(),
            s.session_file().map(|p| p.to_string_lossy().into_owned()),
            s.session_name(),
            s.leaf_id().map(str::to_string),
        )
    };
    let model = match agent.model() {
        Some(m) => Some(convert(&m)?),
        None => None,
    };
    Ok(ext::ExtensionContext {
        cwd: rt.cwd.to_string_lossy().into_owned(),
        has_ui: rt.extensions.options().has_ui,
        is_idle: !rt.phase.is_busy(&rt.agent),
        has_pending_messages: !rt.queue.is_empty(),
        model,
        thinking_level: convert(&agent.thinking_level())?,
        session_id,
        session_file,
        session_name,
        leaf_id,
        active_tools: agent.with_state(|s| s.tools.iter().map(|t| t.name().to_string()).collect()),
        context_usage: None,
        system_prompt: {
            rt.resources.ensure();
            agent.with_state(|s| s.system_prompt.clone())
        },
    })
}

fn session_view(rt: &Runtime) -> Result<ext::SessionView, String> {
    let s = rt.sessions.lock();
    let to_value = |e: dreb_session::EntryRef<'_>| e.to_value();
    let header = match s.header().to_value() {
        Value::Object(m) => m,
        _ => Default::default(),
    };
    Ok(ext::SessionView {
        session_file: s.session_file().map(|p| p.to_string_lossy().into_owned()),
        header,
        entries: s.entries().map(to_value).collect(),
        branch: s.branch(None).into_iter().map(to_value).collect(),
        leaf_id: s.leaf_id().map(str::to_string),
    })
}

fn tool_infos(rt: &Runtime) -> Vec<ext::ToolInfo> {
    let mut out: Vec<ext::ToolInfo> = rt
        .tools
        .builtin()
        .iter()
        .map(|t| {
            let d = t.definition();
            ext::ToolInfo {
                name: d.name.clone(),
                description: d.description.clone(),
                parameters: d.parameters.as_object().cloned().unwrap_or_default(),
                source: "builtin".into(),
            }
        })
        .collect();
    for t in rt.extensions.tools() {
        let d = dreb_agent::Tool::definition(t.as_ref());
        out.push(ext::ToolInfo {
            name: d.name.clone(),
            description: d.description.clone(),
            parameters: d.parameters.as_object().cloned().unwrap_or_default(),
            source: t.extension().path().to_string(),
        });
    }
    out
}

/// `send_message`: queued while streaming (`steer` by default, `followUp`, or held for the next prompt with
/// `nextTurn`); appended when idle, and a run started with it when `triggerTurn`.
fn extension_send_message(rt: &Runtime, p: ext::SendMessageParams) -> Result<(), String> {
    let message = AgentMessage::Custom(CustomMessage {
        role: Default::default(),
        custom_type: p.message.custom_type,
        content: convert(&p.message.content)?,
        display: p.message.display.unwrap_or(true),
        details: p.message.details,
        timestamp: dreb_agent::agent::now_ms(),
    });
    if p.deliver_as == Some(ext::DeliverAs::NextTurn) {
        rt.queue.hold_for_next_turn(message);
        return Ok(());
    }
    if rt.phase.is_busy(&rt.agent) {
        match p.deliver_as {
            Some(ext::DeliverAs::FollowUp) => rt.agent.follow_up(message),
            _ => rt.agent.steer(message),
        }
        return Ok(());
    }
    if p.trigger_turn == Some(true) {
        return rt
            .agent
            .start_prompt(vec![message])
            .map(|_| ())
            .map_err(|e| e.to_string());
    }
    // Idle: into the conversation and the session file, with the events a host sees for any message.
    rt.agent.append_message(message.clone());
    rt.outbox.send(&AgentEvent::MessageStart {
        message: message.clone(),
    });
    rt.outbox.send(&AgentEvent::MessageEnd {
        message: message.clone(),
    });
    let mut session = rt.sessions.lock();
    crate::persist::append_agent_message(&mut session, &message).map_err(|e| e.to_string())?;
    Ok(())
}

/// `send_user_message`: a prompt from the extension (through the `input` hook with source `extension`).
async fn extension_send_user_message(
    rt: &Runtime,
    p: ext::SendUserMessageParams,
) -> Result<(), String> {
    // The extension's image blocks have the RPC protocol's shape: converted once, straight to the prompt's.
    let (text, images): (String, Vec<dreb_protocol::ImageContent>) = match p.content {
        ext::UserContent::String(s) => (s, Vec::new()),
        ext::UserContent::ListContentBlock(blocks) => {
            let mut text = Vec::new();
            let mut images = Vec::new();
            for b in blocks {
                match b {
                    ext::ContentBlock::Text(t) => text.push(t.text),
                    ext::ContentBlock::Image(i) => images.push(convert(&i)?),
                }
            }
            (text.join("\n"), images)
        }
    };
    let behavior = match p.deliver_as {
        Some(ext::DeliverAs::Steer) => Some(dreb_protocol::StreamingBehavior::Steer),
        Some(ext::DeliverAs::FollowUp) => Some(dreb_protocol::StreamingBehavior::FollowUp),
        _ => None,
    };
    let images = (!images.is_empty()).then_some(images);
    crate::commands::prompting::prompt_from(rt,
        &detached(),
        dreb_protocol::PromptParams {
            message: text,
            images,
            streaming_behavior: behavior,
        },
        dreb_hooks::InputSource::Extension,
    )
    .await
    .map_err(|e| match e {
        dreb_protocol::errors::PromptError::AlreadyProcessing => {
            "Agent is already processing. Specify deliverAs ('steer' or 'followUp') to queue the message."
                .to_string()
        }
        other => other.to_string(),
    })
}

/// `exec`: a program (no shell), with a timeout in milliseconds; killed when it runs over.
async fn extension_exec(rt: &Runtime, p: ext::ExecParams) -> Result<ext::ExecResult, String> {
    let cwd = match &p.cwd {
        Some(c) => rt.cwd.join(c),
        None => rt.cwd.clone(),
    };
    let child = tokio::process::Command::new(&p.command)
        .args(p.args.iter().flatten())
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("Cannot run {}: {e}", p.command))?;
    let wait = child.wait_with_output();
    let (output, killed) = match p.timeout.filter(|t| *t > 0) {
        Some(ms) => match tokio::time::timeout(Duration::from_millis(ms as u64), wait).await {
            Ok(out) => (Some(out.map_err(|e| e.to_string())?), false),
            Err(_) => (None, true),
        },
        None => (Some(wait.await.map_err(|e| e.to_string())?), false),
    };
    Ok(match output {
        Some(out) => ext::ExecResult {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(-1) as i64,
            killed,
        },
        None => ext::ExecResult {
            stdout: String::new(),
            stderr: String::new(),
            code: -1,
            killed,
        },
    })
}
