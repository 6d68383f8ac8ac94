//! The `subagent` tool: launches child agents in the background (one task, up to eight in parallel, or a chain)
//! and returns at once; each result reaches the parent agent as a message when its child finishes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::{Model, ModelRegistry, ThinkingLevel, ToolDefinition};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::agent_types::{AgentTypeConfig, DEFAULT_AGENT, discover};
use super::child::{ChildSpec, StepMetadata, SubagentResult, run_child};
use super::session::{LaunchHooks, launch};
use super::{arbiter, new_id};
use crate::commands::home_dir;
use crate::services::Services;
use crate::services::models::find_model;
use dreb_protocol::{ArbitrationStatus, DispatchArbitrationRecord, DispatchErrorCode};

const MAX_PARALLEL_TASKS: usize = 8;
/// Longer prompts risk the argument-size limit of the child's command line.
const MAX_TASK_LENGTH: usize = 32_768;
/// Tools a child never gets: it has a task to finish, so no waiting, no recursion, no turn-ending suggestions.
const EXCLUDED_TOOLS: [&str; 4] = ["wait", "watch_github_ci", "subagent", "suggest_next"];
const DEFAULT_TOOLS: &str = "read,bash,edit,write,grep,find,ls,web_search,web_fetch";

#[derive(Debug, Clone, Deserialize)]
struct TaskItem {
    agent: Option<String>,
    task: String,
    cwd: Option<String>,
    model: Option<String>,
    thinking: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Params {
    agent: Option<String>,
    task: Option<String>,
    model: Option<String>,
    thinking: Option<String>,
    tasks: Option<Vec<TaskItem>>,
    chain: Option<Vec<TaskItem>>,
}

fn schema() -> Value {
    let thinking = json!({"type": "string", "enum": dreb_protocol::ThinkingLevel::VALUES,
        "description": "Thinking level for the child model; omit to keep the child's default."});
    let item = json!({
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "Agent type (default: Explore)."},
            "task": {"type": "string", "description": "What this child should do; include the context it needs."},
            "cwd": {"type": "string", "description": "Working directory: absolute, or relative inside the parent's."},
            "model": {"type": "string", "description": "Model for this task (replaces the agent's whole model list)."},
            "thinking": thinking,
        },
        "required": ["task"]
    });
    json!({
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "Agent type (default: Explore)."},
            "task": {"type": "string", "minLength": 1, "description": "A single task."},
            "model": {"type": "string", "description": "Model override (replaces the agent's whole model list). In parallel and chain modes, per-task values win."},
            "thinking": thinking,
            "tasks": {"type": "array", "items": item, "minItems": 1, "maxItems": MAX_PARALLEL_TASKS,
                      "description": "Independent tasks run in parallel (at most 8)."},
            "chain": {"type": "array", "items": item, "minItems": 1,
                      "description": "Steps run one after another; `{previous}` in a task is replaced by the previous step's output."},
            "background": {"type": "boolean", "description": "Ignored: every subagent runs in the background."}
        }
    })
}

pub(crate) struct SubagentTool {
    services: Weak<Services>,
    def: ToolDefinition,
}

impl SubagentTool {
    pub fn new(services: Weak<Services>, cwd: &Path, max_concurrent: usize) -> Self {
        let agents: Vec<String> = discover(home_dir().as_deref(), cwd)
            .iter()
            .map(|a| {
                let default = if a.name == DEFAULT_AGENT {
                    " (default)"
                } else {
                    ""
                };
                let description = if a.description.is_empty() {
                    &a.name
                } else {
                    &a.description
                };
                format!("'{}'{default}: {description}", a.name)
            })
            .collect();
        let description = format!(
            "Delegate focused, independent work to child agents whose role fits it. `task` runs one child, `tasks` \
             up to {MAX_PARALLEL_TASKS} in parallel (at most {max_concurrent} at a time), `chain` a sequence where \
             {{previous}} is the prior step's output. Children run in the background: the call returns at once and \
             each result arrives as a message when its child finishes; end your turn to wait for them. Children have \
             their own context, so give each task the context it needs. Agents: {}.",
            agents.join("; ")
        );
        SubagentTool {
            services,
            def: ToolDefinition {
                name: "subagent".into(),
                description,
                parameters: schema(),
            },
        }
    }
}

fn text(text: impl Into<String>) -> ToolOutput {
    ToolOutput::text(text)
}

/// `itemCwd` made concrete: absolute paths as given, relative ones inside the parent's cwd only.
fn clamp_cwd(parent: &Path, item: Option<&str>) -> Result<PathBuf, String> {
    let Some(item) = item.filter(|s| !s.is_empty()) else {
        return Ok(parent.to_path_buf());
    };
    if item.starts_with('/') {
        return Ok(PathBuf::from(item));
    }
    let mut resolved = parent.to_path_buf();
    for part in Path::new(item).components() {
        match part {
            std::path::Component::ParentDir => {
                resolved.pop();
            }
            std::path::Component::Normal(p) => resolved.push(p),
            _ => {}
        }
    }
    if resolved.starts_with(parent) {
        Ok(resolved)
    } else {
        Err(format!(
            "Rejected cwd \"{item}\" — resolves outside parent cwd"
        ))
    }
}

/// The agent's tool list without the tools children never get, nor names the child's `--tools` would reject (an
/// agent definition may name tools of other harnesses); the defaults if nothing is left.
pub fn filter_tools(tools: Option<&str>) -> String {
    let kept: Vec<&str> = tools
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty() && !EXCLUDED_TOOLS.contains(t) && crate::is_known_tool(t))
        .collect();
    if kept.is_empty() {
        DEFAULT_TOOLS.to_string()
    } else {
        kept.join(",")
    }
}

/// What one child launch needs from the parent, captured when the tool runs.
#[derive(Clone)]
struct ParentContext {
    agents: Arc<Vec<AgentTypeConfig>>,
    provider: Option<String>,
    model: Option<String>,
    session_file: Option<String>,
    binary: PathBuf,
}

struct SingleLaunch {
    agent: Option<String>,
    task: String,
    cwd: PathBuf,
    model_override: Option<String>,
    thinking: Option<String>,
    session_dir: PathBuf,
    /// Chain step (1-based), for the arbiter's records.
    step: Option<usize>,
}

fn resolve_single(
    spec: &str,
    parent_provider: Option<&str>,
    registry: &ModelRegistry,
) -> Result<Model, String> {
    let explicit_provider = spec.split_once('/').map(|(p, _)| p);
    let provider = if explicit_provider.is_some() {
        None
    } else {
        parent_provider
    };
    let Some(model) = find_model(spec, provider, registry.all()) else {
        return Err(match explicit_provider.or(provider) {
            Some(p) => format!(
                "Model \"{spec}\" not found for provider \"{p}\". Use --list-models to see available models."
            ),
            None => {
                format!("Model \"{spec}\" not found. Use --list-models to see available models.")
            }
        });
    };
    if registry.api_key_for(&model).is_err() {
        return Err(format!(
            "No authentication configured for provider \"{}\". Model \"{spec}\" cannot be used.",
            model.provider
        ));
    }
    Ok(model)
}

/// The first model of `specs` that resolves and has credentials, else the parent's model (with a warning).
fn resolve_with_fallbacks(
    specs: &[String],
    parent_provider: Option<&str>,
    parent_model: Option<&str>,
    registry: &ModelRegistry,
) -> Result<(Model, Option<String>), String> {
    let mut last_error = String::new();
    for spec in specs {
        match resolve_single(spec, parent_provider, registry) {
            Ok(m) => return Ok((m, None)),
            Err(e) => last_error = e,
        }
    }
    if let Some(parent) = parent_model {
        match resolve_single(parent, parent_provider, registry) {
            Ok(m) => {
                let warning = format!(
                    "Agent preferred models were unavailable. Falling back to parent model \"{}\".",
                    m.id
                );
                return Ok((m, Some(warning)));
            }
            Err(e) => last_error = e,
        }
    }
    if specs.len() > 1 || parent_model.is_some() {
        let all: Vec<&str> = specs
            .iter()
            .map(String::as_str)
            .chain(parent_model)
            .collect();
        return Err(format!(
            "None of the fallback models resolved: {}. Last error: {last_error}",
            all.join(", ")
        ));
    }
    Err(last_error)
}

/// How long a model availability probe may take.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// One line, at most 180 characters.
fn compact_reason(reason: &str) -> String {
    let line = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        "unknown error".into()
    } else if line.chars().count() > 180 {
        format!("{}...", line.chars().take(177).collect::<String>())
    } else {
        line
    }
}

enum Probe {
    Available,
    Unavailable(String),
    Aborted,
}

/// A tiny real completion: does this model answer right now (credentials, quota, outage)?
async fn probe_model(services: &Services, model: &Model, cancel: &CancellationToken) -> Probe {
    let api_key = {
        let registry = services.models.registry();
        match registry.api_key_for(model) {
            Ok(k) => k,
            Err(e) => return Probe::Unavailable(compact_reason(&e)),
        }
    };
    let context = dreb_ai::Context {
        system_prompt: Some("Reply with the single word OK.".into()),
        messages: vec![dreb_ai::Message::User(dreb_ai::UserMessage {
            role: Default::default(),
            content: dreb_ai::UserContent::Text("hi".into()),
            timestamp: chrono::Utc::now().timestamp_millis(),
        })],
        tools: Vec::new(),
    };
    let call_cancel = cancel.child_token();
    let options = dreb_ai::StreamOptions {
        api_key,
        thinking: proposed_thinking(services, Some(model), None),
        cancel: call_cancel.clone(),
        ..Default::default()
    };
    let stream = dreb_ai::LlmClient::stream(services.models.providers(), model, &context, options);
    let outcome = async {
        match dreb_ai::final_message(stream).await {
            Some(Ok(_)) => Ok(()),
            Some(Err(error)) => Err(error
                .error_message
                .unwrap_or_else(|| "provider returned an error".into())),
            None => Err("the stream ended without a result".to_string()),
        }
    };
    let result = tokio::select! {
        r = outcome => r,
        _ = tokio::time::sleep(PROBE_TIMEOUT) => {
            call_cancel.cancel();
            Err(format!("Model availability probe timed out after {}ms", PROBE_TIMEOUT.as_millis()))
        }
    };
    if cancel.is_cancelled() {
        return Probe::Aborted;
    }
    match result {
        Ok(()) => Probe::Available,
        Err(e) => Probe::Unavailable(compact_reason(&e)),
    }
}

/// A model chosen for a child, with what was skipped on the way.
pub(crate) struct Resolution {
    pub(crate) model: Model,
    warning: Option<String>,
    /// `(model spec, reason)` of fallback entries passed over.
    skipped: Vec<(String, String)>,
}

/// A fallback list from an agent definition or the settings: each entry must resolve and then answer a probe;
/// the parent's model is the last resort (not probed).
async fn resolve_probed(
    services: &Services,
    specs: &[String],
    parent_provider: Option<&str>,
    parent_model: Option<&str>,
    cancel: &CancellationToken,
) -> Result<Resolution, (String, Vec<(String, String)>)> {
    const ABORTED: &str = "Aborted before spawn";
    let mut skipped = Vec::new();
    let mut last_error = String::new();
    for spec in specs {
        if cancel.is_cancelled() {
            return Err((ABORTED.into(), skipped));
        }
        let resolved = {
            let registry = services.models.registry();
            resolve_single(spec, parent_provider, &registry)
        };
        let model = match resolved {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(
                    "[subagent] Model \"{spec}\" unavailable ({}). Trying next fallback...",
                    compact_reason(&e)
                );
                skipped.push((spec.clone(), compact_reason(&e)));
                last_error = e;
                continue;
            }
        };
        match probe_model(services, &model, cancel).await {
            Probe::Available => {
                return Ok(Resolution {
                    model,
                    warning: None,
                    skipped,
                });
            }
            Probe::Aborted => return Err((ABORTED.into(), skipped)),
            Probe::Unavailable(reason) => {
                tracing::warn!(
                    "[subagent] Model \"{spec}\" failed probe ({reason}). Trying next fallback..."
                );
                skipped.push((spec.clone(), reason.clone()));
                last_error = reason;
            }
        }
    }
    if cancel.is_cancelled() {
        return Err((ABORTED.into(), skipped));
    }
    if let Some(parent) = parent_model {
        let resolved = {
            let registry = services.models.registry();
            resolve_single(parent, parent_provider, &registry)
        };
        match resolved {
            Ok(model) => {
                let warning = format!(
                    "Agent preferred models were unavailable. Falling back to parent model \"{}\".",
                    model.id
                );
                return Ok(Resolution {
                    model,
                    warning: Some(warning),
                    skipped,
                });
            }
            Err(e) => last_error = e,
        }
    }
    let all: Vec<&str> = specs
        .iter()
        .map(String::as_str)
        .chain(parent_model)
        .collect();
    let last = if last_error.is_empty() {
        "all probes failed".to_string()
    } else {
        last_error
    };
    Err((
        format!(
            "None of the fallback models passed availability checks: {}. Last error: {last}",
            all.join(", ")
        ),
        skipped,
    ))
}

fn skipped_lines(skipped: &[(String, String)]) -> String {
    skipped
        .iter()
        .map(|(m, r)| format!("- {m}: {r}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `[MODEL FALLBACK: …]` heading the output when fallback entries were passed over.
fn fallback_summary(
    skipped: &[(String, String)],
    proposal: Option<&str>,
    selected: Option<&str>,
) -> Option<String> {
    if skipped.is_empty() {
        return None;
    }
    let route = match selected {
        Some(sel) if Some(sel) != proposal => format!(
            "proposal resolved to \"{}\" before arbitration selected \"{sel}\".",
            proposal.unwrap_or("unknown")
        ),
        _ => format!("using \"{}\".", selected.or(proposal).unwrap_or("unknown")),
    };
    Some(format!(
        "[MODEL FALLBACK: skipped {} unavailable model(s); {route}]\n{}",
        skipped.len(),
        skipped_lines(skipped)
    ))
}

pub(crate) fn validate_thinking(model: &Model, level: &str) -> Result<(), String> {
    if level == "off" {
        return Ok(());
    }
    let model_ref = format!("{}/{}", model.provider, model.id);
    if !model.reasoning {
        return Err(format!(
            "Thinking level \"{level}\" is not supported by non-reasoning model \"{model_ref}\". Use \"off\" or choose a reasoning model."
        ));
    }
    let supported = ThinkingLevel::parse(level)
        .is_some_and(|l| dreb_agent::available_thinking_levels(model).contains(&l));
    match (supported, level) {
        (false, "max") => Err(format!(
            "Thinking level \"max\" is not supported by model \"{model_ref}\". Use \"xhigh\" or choose a max-capable model."
        )),
        (false, "xhigh") => Err(format!(
            "Thinking level \"xhigh\" is not supported by model \"{model_ref}\". Use \"high\" or choose an xhigh-capable model."
        )),
        _ => Ok(()),
    }
}

/// Resolve the agent and its model, then run the child.
/// The model an agent runs on. Precedence: `model_override` (a call's `model`), then the settings' `agentModels`
/// for `agent`, then the agent's own list `models`, then the parent's model. Fallback lists (settings, or several
/// models in the definition) are probed; single models are not. `None`: nothing to resolve (no parent model).
pub(crate) async fn resolve_agent_model(
    live: &Services,
    agent: &str,
    models: &[String],
    model_override: Option<&str>,
    parent_provider: Option<&str>,
    parent_model: Option<&str>,
    cancel: &CancellationToken,
) -> Result<Option<Resolution>, String> {
    let from_settings = live
        .settings
        .agent_models_for_agent(agent)
        .filter(|l| !l.is_empty());
    let (configured, probe): (Vec<String>, bool) = match (model_override, from_settings) {
        (Some(m), _) => (vec![m.to_string()], false),
        (None, Some(list)) => (list, true),
        (None, None) => (models.to_vec(), models.len() > 1),
    };
    if configured.is_empty() {
        let registry = live.models.registry();
        return match parent_model {
            Some(m) => resolve_single(m, parent_provider, &registry).map(|model| {
                Some(Resolution {
                    model,
                    warning: None,
                    skipped: Vec::new(),
                })
            }),
            None => Ok(None),
        };
    }
    if probe {
        return resolve_probed(live, &configured, parent_provider, parent_model, cancel)
            .await
            .map(Some)
            .map_err(|(error, skipped)| {
                if skipped.is_empty() {
                    error
                } else {
                    format!("{error}\n\nSkipped models:\n{}", skipped_lines(&skipped))
                }
            });
    }
    let registry = live.models.registry();
    resolve_with_fallbacks(&configured, parent_provider, parent_model, &registry).map(
        |(model, warning)| {
            Some(Resolution {
                model,
                warning,
                skipped: Vec::new(),
            })
        },
    )
}

async fn execute_single(
    services: &Weak<Services>,
    parent: &ParentContext,
    launch: SingleLaunch,
    hooks: &LaunchHooks,
) -> SubagentResult {
    let name = launch
        .agent
        .clone()
        .unwrap_or_else(|| DEFAULT_AGENT.to_string());
    let Some(config) = parent.agents.iter().find(|a| a.name == name) else {
        let available: Vec<&str> = parent.agents.iter().map(|a| a.name.as_str()).collect();
        return SubagentResult::failed(
            &name,
            &launch.task,
            format!(
                "Unknown agent type \"{name}\". Available: {}. If you expected \"{name}\" to exist, check the .md \
                 file in ~/.dreb/agents/ or .dreb/agents/ for syntax errors.",
                available.join(", ")
            ),
        );
    };
    if launch.task.chars().count() > MAX_TASK_LENGTH {
        let head: String = launch.task.chars().take(200).collect();
        return SubagentResult::failed(
            &name,
            &format!("{head}..."),
            format!(
                "Task prompt too long ({} chars, max {MAX_TASK_LENGTH}). Shorten the prompt.",
                launch.task.chars().count()
            ),
        );
    }
    let Some(live) = services.upgrade() else {
        return SubagentResult::failed(&name, &launch.task, "The parent session has ended.");
    };
    let resolved = resolve_agent_model(
        &live,
        &config.name,
        &config.models,
        launch.model_override.as_deref(),
        parent.provider.as_deref(),
        parent.model.as_deref(),
        &hooks.cancel,
    )
    .await;
    let (mut model, warning, skipped) = match resolved {
        Ok(Some(r)) => (Some(r.model), r.warning, r.skipped),
        Ok(None) => (None, None, Vec::new()),
        Err(e) => return SubagentResult::failed(&name, &launch.task, e),
    };
    if let Some(level) = launch.thinking.as_deref()
        && model.is_none()
        && level != "off"
    {
        return SubagentResult::failed(
            &name,
            &launch.task,
            format!(
                "Cannot validate thinking level \"{level}\" because agent \"{name}\" has no configured model \
                     and no parent model is available. Set a model on the agent or pass a per-call model override."
            ),
        );
    }

    // The Dispatch Arbiter (when the global policy enables it) may replace the whole route before the spawn.
    let mut name = name;
    let mut config = config;
    let mut thinking = launch.thinking.clone();
    let proposed = arbiter::Route {
        agent: name.clone(),
        model: model
            .as_ref()
            .map(|m| format!("{}/{}", m.provider, m.id))
            .unwrap_or_default(),
        thinking: proposed_thinking(&live, model.as_ref(), thinking.as_deref()),
    };
    let request = arbiter::Request {
        task: &launch.task,
        cwd: &launch.cwd,
        proposed: proposed.clone(),
        agents: agent_summaries(&live, &parent.agents),
        parent_session_file: parent.session_file.as_deref(),
        step: launch.step,
    };
    let record = |status, final_route, changed, error: Option<(DispatchErrorCode, String)>| {
        let (error_code, error_message) = error.unzip();
        DispatchArbitrationRecord {
            status,
            proposed: proposed.clone(),
            r#final: final_route,
            changed,
            step: launch.step.map(|s| i64::try_from(s).unwrap_or(i64::MAX)),
            error_code,
            error_message,
        }
    };
    let arbitrated = match arbiter::arbitrate(&live, request, &hooks.cancel).await {
        arbiter::Outcome::Disabled => false,
        arbiter::Outcome::Failed { code, error } => {
            hooks.record_arbitration(record(
                ArbitrationStatus::Failure,
                None,
                Vec::new(),
                Some((code, error.clone())),
            ));
            return SubagentResult::failed(
                &name,
                &launch.task,
                format!("Dispatch arbitration failed: {error}"),
            );
        }
        arbiter::Outcome::Decided {
            decision,
            changed,
            model: chosen,
        } => {
            // The arbiter only picks among the agents it was shown, so the lookup holds.
            if let Some(c) = parent.agents.iter().find(|a| a.name == decision.agent) {
                config = c;
            }
            name = decision.agent.clone();
            model = Some(chosen);
            thinking = Some(decision.thinking.as_str().to_string());
            hooks.record_arbitration(record(
                ArbitrationStatus::Success,
                Some(decision),
                changed,
                None,
            ));
            true
        }
    };
    drop(live);
    if let (Some(level), Some(m)) = (thinking.as_deref(), model.as_ref())
        && let Err(e) = validate_thinking(m, level)
    {
        return SubagentResult::failed(&name, &launch.task, e);
    }
    let spec = ChildSpec {
        binary: parent.binary.clone(),
        cwd: launch.cwd,
        agent: name,
        task: launch.task,
        tools: filter_tools(config.tools.as_deref()),
        system_prompt: config.system_prompt.clone(),
        model: model.as_ref().map(|m| m.id.clone()),
        provider: model.as_ref().map(|m| m.provider.clone()),
        thinking,
        session_dir: launch.session_dir,
        parent_session: parent.session_file.clone(),
    };
    let relay = |event: Value| hooks.relay(event);
    let control = |c| hooks.set_control(c);
    let used = spec
        .model
        .as_ref()
        .map(|id| format!("{}/{id}", spec.provider.as_deref().unwrap_or_default()));
    let mut result = run_child(&spec, &hooks.cancel, &relay, &control).await;
    let selected = result.model.clone().or(used);
    let summary = if arbitrated {
        fallback_summary(&skipped, Some(&proposed.model), selected.as_deref())
    } else {
        fallback_summary(&skipped, selected.as_deref(), None)
    };
    if let Some(summary) = summary {
        result.output = format!("{summary}\n\n{}", result.output);
    }
    if let Some(w) = warning {
        let w = if arbitrated {
            format!("Proposal resolution: {w}")
        } else {
            w
        };
        result.output = format!("[WARNING: {w}]\n\n{}", result.output);
    }
    result
}

/// The thinking level the proposal states: the call's, else the default level, made concrete for the model.
fn proposed_thinking(
    services: &Services,
    model: Option<&Model>,
    requested: Option<&str>,
) -> ThinkingLevel {
    let level = requested
        .and_then(ThinkingLevel::parse)
        .or_else(|| {
            services
                .settings
                .default_thinking_level()
                .and_then(|t| ThinkingLevel::parse(&t))
        })
        .unwrap_or(ThinkingLevel::Xhigh);
    match model {
        Some(m) => dreb_agent::clamp_thinking_level(m, level),
        None => level,
    }
}

/// Children always get these in addition to their listed tools.
const ALWAYS_ACTIVE_TOOLS: [&str; 3] = ["search", "skill", "tasks_update"];

/// What the arbiter is told about each agent type.
fn agent_summaries(services: &Services, agents: &[AgentTypeConfig]) -> Vec<arbiter::AgentSummary> {
    agents
        .iter()
        .map(|a| {
            let mut tools: Vec<String> = Vec::new();
            for t in filter_tools(a.tools.as_deref())
                .split(',')
                .chain(ALWAYS_ACTIVE_TOOLS)
            {
                if !t.is_empty() && !tools.iter().any(|x| x == t) {
                    tools.push(t.to_string());
                }
            }
            arbiter::AgentSummary {
                name: a.name.clone(),
                description: a.description.clone(),
                tools,
                model_defaults: services
                    .settings
                    .agent_models_for_agent(&a.name)
                    .filter(|l| !l.is_empty())
                    .unwrap_or_else(|| a.models.clone()),
            }
        })
        .collect()
}

/// A single result as text (chains list one per step).
pub fn format_single_result(r: &SubagentResult) -> String {
    let metadata: Vec<String> = [
        r.model.as_ref().map(|m| format!("model: {m}")),
        r.thinking.as_ref().map(|t| format!("thinking: {t}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut text = if metadata.is_empty() {
        format!("## Agent: {}\n", r.agent)
    } else {
        format!("## Agent: {} ({})\n", r.agent, metadata.join(", "))
    };
    if !r.success() {
        text.push_str(&format!(
            "**Error** (exit {}): {}\n",
            r.exit_code,
            r.error_message.as_deref().unwrap_or("Unknown error")
        ));
        if !r.stderr.is_empty() {
            text.push_str(&format!("\nStderr:\n{}\n", r.stderr));
        }
    } else if let Some(e) = &r.error_message {
        text.push_str(&format!("**Error**: {e}\n"));
    }
    if !r.output.is_empty() {
        text.push_str(&format!("\n{}", r.output));
    } else if r.success() && r.error_message.is_none() {
        text.push_str("\n(No output)");
    }
    if let Some(f) = &r.session_file {
        text.push_str(&format!("\n\nSession log: {}", f.display()));
    }
    text
}

async fn execute_chain(
    services: &Weak<Services>,
    parent: &ParentContext,
    steps: Vec<TaskItem>,
    defaults: (Option<String>, Option<String>, Option<String>),
    cwd: PathBuf,
    chain_dir: PathBuf,
    hooks: &LaunchHooks,
) -> Vec<SubagentResult> {
    let (default_agent, default_model, default_thinking) = defaults;
    let mut results: Vec<SubagentResult> = Vec::new();
    let mut previous = String::new();
    for (i, step) in steps.iter().enumerate() {
        if hooks.cancel.is_cancelled() {
            break;
        }
        let agent = step.agent.clone().or(default_agent.clone());
        let agent_name = agent.clone().unwrap_or_else(|| DEFAULT_AGENT.to_string());
        let task = step.task.replace("{previous}", &previous);
        if task.chars().count() > MAX_TASK_LENGTH {
            let head: String = task.chars().take(200).collect();
            results.push(SubagentResult::failed(
                &agent_name,
                &format!("{head}..."),
                format!(
                    "Task prompt too long after {{previous}} substitution ({} chars, max {MAX_TASK_LENGTH}). Shorten \
                     the prompt or summarize previous output.",
                    task.chars().count()
                ),
            ));
            break;
        }
        let step_cwd = match clamp_cwd(&cwd, step.cwd.as_deref()) {
            Ok(c) => c,
            Err(e) => {
                results.push(SubagentResult::failed(&agent_name, &task, e));
                break;
            }
        };
        let result = execute_single(
            services,
            parent,
            SingleLaunch {
                agent,
                task,
                cwd: step_cwd,
                model_override: step.model.clone().or(default_model.clone()),
                thinking: step.thinking.clone().or(default_thinking.clone()),
                session_dir: chain_dir.join(format!("step-{}", i + 1)),
                step: Some(i + 1),
            },
            hooks,
        )
        .await;
        let ok = result.success();
        previous = result.output.clone();
        results.push(result);
        if !ok {
            break;
        }
    }
    results
}

#[async_trait]
impl Tool for SubagentTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        _cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let p: Params = serde_json::from_value(params)?;
        let modes = [p.task.is_some(), p.tasks.is_some(), p.chain.is_some()]
            .iter()
            .filter(|m| **m)
            .count();
        if modes == 0 {
            return Ok(text(
                "Error: provide one of `task` (single), `tasks` (parallel), or `chain`.",
            ));
        }
        if modes > 1 {
            return Ok(text(
                "Error: modes are mutually exclusive — provide only one of `task`, `tasks`, or `chain`.",
            ));
        }
        let services = self
            .services
            .upgrade()
            .ok_or_else(|| ToolError::new("The session has ended."))?;
        let cwd = services.cwd.clone();
        let parent_model = services.agent.model();
        let parent = ParentContext {
            agents: Arc::new(discover(home_dir().as_deref(), &cwd)),
            provider: parent_model.as_ref().map(|m| m.provider.clone()),
            model: parent_model.as_ref().map(|m| m.id.clone()),
            session_file: services
                .sessions
                .lock()
                .session_file()
                .map(|f| f.display().to_string()),
            binary: services.background.binary.clone(),
        };
        let sessions_base = services.agent_dir.join("subagent-sessions");
        let weak = self.services.clone();

        let launch_single = |agent_name: String,
                             task: String,
                             label: String,
                             task_cwd: PathBuf,
                             model: Option<String>,
                             thinking: Option<String>| {
            let session_dir = sessions_base.join(new_id());
            let parent = parent.clone();
            let weak = weak.clone();
            let run = SingleLaunch {
                agent: (agent_name != DEFAULT_AGENT).then(|| agent_name.clone()),
                task,
                cwd: task_cwd.clone(),
                model_override: model,
                thinking,
                session_dir: session_dir.clone(),
                step: None,
            };
            launch(
                &services,
                &agent_name,
                &label,
                session_dir,
                task_cwd,
                move |hooks| async move { execute_single(&weak, &parent, run, &hooks).await },
            )
        };

        if let Some(task) = p.task {
            let agent_name = p.agent.unwrap_or_else(|| DEFAULT_AGENT.to_string());
            let id = launch_single(
                agent_name.clone(),
                task,
                format!("{agent_name} task"),
                cwd.clone(),
                p.model,
                p.thinking,
            );
            return Ok(ToolOutput {
                details: Some(json!({"mode": "single", "agentCount": 1})),
                end_turn: true,
                ..text(format!(
                    "Background agent {id} started ({agent_name}). You will be notified when it completes."
                ))
            });
        }

        if let Some(tasks) = p.tasks {
            let total = tasks.len();
            let mut launched = Vec::new();
            let mut skipped = Vec::new();
            for (i, item) in tasks.into_iter().enumerate() {
                let agent_name = item
                    .agent
                    .clone()
                    .or(p.agent.clone())
                    .unwrap_or_else(|| DEFAULT_AGENT.to_string());
                let preview: String = item.task.chars().take(80).collect();
                match clamp_cwd(&cwd, item.cwd.as_deref()) {
                    Err(e) => {
                        let short: String = item.task.chars().take(60).collect();
                        skipped.push(format!("  SKIPPED: {short} — {e}"));
                    }
                    Ok(task_cwd) => {
                        let id = launch_single(
                            agent_name.clone(),
                            item.task,
                            format!("{agent_name} task {}/{total}", i + 1),
                            task_cwd,
                            item.model.or(p.model.clone()),
                            item.thinking.or(p.thinking.clone()),
                        );
                        launched.push(format!("  {id} ({agent_name}): {preview}"));
                    }
                }
            }
            let mut parts = vec![format!(
                "{} background agents started:\n{}",
                launched.len(),
                launched.join("\n")
            )];
            if !skipped.is_empty() {
                parts.push(format!(
                    "\n{} task(s) failed to launch:\n{}",
                    skipped.len(),
                    skipped.join("\n")
                ));
            }
            parts.push(if launched.is_empty() {
                "\nNo agents were launched.".into()
            } else {
                "\nEach will notify independently when complete.".into()
            });
            return Ok(ToolOutput {
                details: Some(json!({"mode": "parallel", "agentCount": launched.len()})),
                end_turn: !launched.is_empty(),
                ..text(parts.join("\n"))
            });
        }

        let steps = p.chain.unwrap_or_default();
        let agent_name = p
            .agent
            .clone()
            .or(steps.first().and_then(|s| s.agent.clone()))
            .unwrap_or_else(|| DEFAULT_AGENT.to_string());
        let summary = format!("{}-step chain", steps.len());
        let step_count = steps.len();
        let chain_dir = sessions_base.join(format!("chain-{}", new_id()));
        let defaults = (p.agent, p.model, p.thinking);
        let (chain_agent, chain_summary, chain_cwd, chain_dir2) = (
            agent_name.clone(),
            summary.clone(),
            cwd.clone(),
            chain_dir.clone(),
        );
        let id = launch(
            &services,
            &agent_name,
            &summary,
            chain_dir,
            cwd,
            move |hooks| async move {
                let results = execute_chain(
                    &weak, &parent, steps, defaults, chain_cwd, chain_dir2, &hooks,
                )
                .await;
                let failed = results.iter().any(|r| !r.success());
                let output = results
                    .iter()
                    .enumerate()
                    .map(|(i, r)| format!("### Step {}\n{}", i + 1, format_single_result(r)))
                    .collect::<Vec<_>>()
                    .join("\n\n---\n\n");
                SubagentResult {
                    agent: chain_agent,
                    task: chain_summary,
                    steps: Some(
                        results
                            .iter()
                            .enumerate()
                            .map(|(i, r)| StepMetadata {
                                step: i + 1,
                                agent: r.agent.clone(),
                                success: r.success(),
                                model: r.model.clone(),
                                thinking: r.thinking.clone(),
                            })
                            .collect(),
                    ),
                    exit_code: i32::from(failed),
                    error_message: failed.then(|| {
                        format!(
                            "Chain stopped at step {} of {step_count}: {}",
                            results.len(),
                            results
                                .last()
                                .and_then(|r| r.error_message.clone())
                                .unwrap_or_default()
                        )
                    }),
                    output,
                    ..Default::default()
                }
            },
        );
        Ok(ToolOutput {
            details: Some(json!({"mode": "chain", "agentCount": step_count})),
            end_turn: true,
            ..text(format!(
                "Background chain {id} started ({summary}). You will be notified when it completes."
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lists_drop_what_children_never_get() {
        assert_eq!(
            filter_tools(Some("read, subagent, bash, wait")),
            "read,bash"
        );
        assert_eq!(filter_tools(Some("subagent")), DEFAULT_TOOLS);
        assert_eq!(
            filter_tools(Some("read,mcp_thing,web_fetch")),
            "read,web_fetch"
        );
        assert_eq!(filter_tools(Some("mcp_thing")), DEFAULT_TOOLS);
        assert!(DEFAULT_TOOLS.split(',').all(crate::is_known_tool));
        assert_eq!(filter_tools(None), DEFAULT_TOOLS);
    }

    #[test]
    fn a_relative_cwd_must_stay_inside_the_parent() {
        let parent = Path::new("/home/u/project");
        assert_eq!(
            clamp_cwd(parent, Some("src/../lib")).unwrap(),
            Path::new("/home/u/project/lib")
        );
        assert_eq!(clamp_cwd(parent, None).unwrap(), parent);
        assert_eq!(clamp_cwd(parent, Some("/tmp")).unwrap(), Path::new("/tmp"));
        assert_eq!(
            clamp_cwd(parent, Some("../other")).unwrap_err(),
            "Rejected cwd \"../other\" — resolves outside parent cwd"
        );
    }

    #[test]
    fn results_read_like_the_reference() {
        let ok = SubagentResult {
            agent: "Explore".into(),
            model: Some("p/m".into()),
            output: "found it".into(),
            session_file: Some("/s/x.jsonl".into()),
            ..Default::default()
        };
        assert_eq!(
            format_single_result(&ok),
            "## Agent: Explore (model: p/m)\n\nfound it\n\nSession log: /s/x.jsonl"
        );
        let failed = SubagentResult::failed("Explore", "t", "boom");
        assert_eq!(
            format_single_result(&failed),
            "## Agent: Explore\n**Error** (exit 1): boom\n"
        );
    }
}
