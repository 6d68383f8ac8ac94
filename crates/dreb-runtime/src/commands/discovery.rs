//! Resource discovery: skills and prompt templates (`get_commands`, `get_resources`), subagent definitions
//! (`list_agent_types`), and `reload`, which re-reads settings, models and resources and rebuilds the system prompt.

use std::sync::Weak;
use std::time::Duration;

use dreb_protocol::errors::McpServerError;
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_settings::context_files::ContextFile;

use crate::project_state::ProjectState;
use crate::services::mcp::info;
use crate::services::resources::DeferredLoad;
use crate::services::{Runtime, Services};
use crate::system_prompt::{PromptParts, build_system_prompt, text_or_file, with_model_line};

mod bundled_skills;
mod expand;
pub(crate) mod resources;
mod skill_tool;

pub(crate) use resources::*;

pub(crate) fn reload_blocking(rt: &Runtime) -> Result<(), errors::ReloadError> {
    use errors::ReloadError as E;
    for e in rt.settings.reload() {
        tracing::warn!("{e}");
    }
    {
        let mut registry = rt.models.registry_mut();
        registry.refresh();
        if let Some(err) = registry.error() {
            return Err(E::Failed {
                message: err.to_string(),
            });
        }
        if let Some(model) = rt.agent.model() {
            let from_models_json = registry
                .prompt_settings(&model.provider, &model.id)
                .is_some();
            let from_settings = rt
                .settings
                .model_prompt_settings(&model.provider, &model.id)
                .map_err(E::unexpected)?;
            if from_models_json && from_settings.is_some() {
                return Err(E::SystemPromptConflict {
                    model: format!("{}/{}", model.provider, model.id),
                });
            }
        }
    }
    let (context_files, resources) = discover(rt);
    rt.resources.replace(resources);
    rebuild_system_prompt(rt, &context_files);
    Ok(())
}

/// The project's context files (their problems logged) and the resources found with them and the command line's
/// flags.
fn discover(services: &Services) -> (Vec<ContextFile>, Resources) {
    let (context_files, diagnostics) = dreb_settings::context_files::load_project_context_files(
        &services.cwd,
        &services.agent_dir,
    );
    for d in diagnostics {
        tracing::warn!("{}", d.message);
    }
    let mut resources = load_resources(
        &services.cwd,
        &services.agent_dir,
        &services.settings,
        services.resources.flags(),
        &context_files,
    );
    let (memory, problems) =
        dreb_settings::memory::load_memory_indexes(&services.cwd, &services.agent_dir);
    for p in problems {
        tracing::warn!("{}", p.message);
    }
    resources.memory = Some(memory);
    resources.project_state = ProjectState::read(&services.cwd);
    (context_files, resources)
}

/// Load the session's resources again with `skills` and `prompts` added (the paths extensions answered to
/// `resources_discover`, loaded as `--skill` / `--prompt-template` paths are), and rebuild the system prompt.
pub(crate) fn extend_resources(
    rt: &Runtime,
    skills: Vec<std::path::PathBuf>,
    prompts: Vec<std::path::PathBuf>,
) {
    let mut flags = rt.resources.flags().clone();
    flags.skills.extend(skills);
    flags.prompt_templates.extend(prompts);
    let (context_files, _) =
        dreb_settings::context_files::load_project_context_files(&rt.cwd, &rt.agent_dir);
    let mut resources =
        load_resources(&rt.cwd, &rt.agent_dir, &rt.settings, &flags, &context_files);
    {
        // Memory and the repository's state are the session's, not the extensions' paths'.
        let current = rt.resources.lock();
        resources.memory = current.memory.clone();
        resources.project_state = current.project_state.clone();
    }
    rt.resources.replace(resources);
    rebuild_system_prompt(rt, &context_files);
}

/// The `skill` tool of this session.
pub(crate) fn skill_tool(rt: &Runtime) -> std::sync::Arc<dyn dreb_agent::Tool> {
    std::sync::Arc::new(skill_tool::SkillTool::new(crate::services::downgrade(rt)))
}

/// Build the system prompt from the session's tools, prompt options, current skills and `context_files` (dated
/// today) and give it to the agent: on `reload` and when extensions add resources.
pub(crate) fn rebuild_system_prompt(rt: &Runtime, context_files: &[ContextFile]) {
    let found = PromptResources::of(&rt.resources.lock());
    let prompt = system_prompt_text(rt, &found, context_files);
    rt.resources.set_base_system_prompt(prompt.clone());
    rt.agent.set_system_prompt(prompt);
}

/// A session switched to (`switch_session`) starts as at start-up: the repository's state and memory's
/// consolidation record are read again, and the system prompt is rebuilt with them, dated today.
pub(crate) fn refresh_system_prompt_for_session(rt: &Runtime) {
    let (context_files, _) =
        dreb_settings::context_files::load_project_context_files(&rt.cwd, &rt.agent_dir);
    let state = ProjectState::read(&rt.cwd);
    {
        let mut resources = rt.resources.lock();
        resources.project_state = state;
        if let Some(memory) = resources.memory.as_mut() {
            memory.last_consolidated =
                dreb_settings::memory::read_last_consolidated(&memory.global_dir);
        }
    }
    rebuild_system_prompt(rt, &context_files);
}

/// After a model change: the system prompt names the new model (its last line), in the base prompt and the agent's.
pub(crate) fn name_model_in_system_prompt(rt: &Runtime, provider: &str, id: &str) {
    let prompt = rt
        .resources
        .update_base_system_prompt(|p| with_model_line(p, provider, id));
    rt.agent.set_system_prompt(prompt);
}

/// What the system prompt takes from the resources found, copied out of their lock.
struct PromptResources {
    skills: Vec<(String, String)>,
    memory: Option<dreb_settings::memory::MemoryIndexes>,
    project_state: Option<ProjectState>,
}

impl PromptResources {
    fn of(resources: &Resources) -> Self {
        PromptResources {
            skills: resources.model_skills(),
            memory: resources.memory.clone(),
            project_state: resources.project_state.clone(),
        }
    }
}

/// The system prompt for `found` and `context_files`, from the session's tools, prompt options and model, dated
/// today.
fn system_prompt_text(
    services: &Services,
    found: &PromptResources,
    context_files: &[ContextFile],
) -> String {
    let custom = services
        .resources
        .custom_prompt()
        .map(|s| text_or_file(s, &services.cwd));
    let append = services
        .resources
        .append_prompt()
        .map(|s| text_or_file(s, &services.cwd));
    let date = chrono::Local::now().format("%Y-%m-%d").to_string();
    let model = services.agent.model();
    build_system_prompt(&PromptParts {
        custom: custom.as_deref(),
        append: append.as_deref(),
        tools: services.tools.names(),
        context_files,
        skills: &found.skills,
        cwd: &services.cwd,
        date: &date,
        memory: found.memory.as_ref(),
        project_state: found.project_state.as_ref(),
        as_root: nix::unistd::geteuid().is_root(),
        ui: services.resources.ui(),
        model: model.as_ref().map(|m| (m.provider.as_str(), m.id.as_str())),
        subagents_disabled: services.resources.subagents_disabled(),
    })
}

/// Start-up's discovery, deferred (see `services::resources`): the project's context files, the resources found
/// with them and the command line's flags, and the system prompt built from them, which the agent gets too.
pub(crate) fn startup_discovery(services: Weak<Services>) -> DeferredLoad {
    Box::new(move || {
        let Some(services) = services.upgrade() else {
            return (Resources::default(), String::new());
        };
        let (context_files, resources) = discover(&services);
        let prompt =
            system_prompt_text(&services, &PromptResources::of(&resources), &context_files);
        services.agent.set_system_prompt(prompt.clone());
        (resources, prompt)
    })
}

/// The `Discovery` commands.
impl DiscoveryHandler for Runtime {
    async fn mcp_server(
        &self,
        _ctx: &RequestContext,
        p: McpServerParams,
    ) -> Result<McpServerInfo, McpServerError> {
        // A server still being configured at start-up is not "not found" yet.
        let _ = tokio::time::timeout(Duration::from_secs(5), self.mcp.configured()).await;
        let mcp = &self.mcp;
        let done = match p.action {
            McpServerAction::Reconnect => mcp.reconnect(&p.name).await,
            McpServerAction::Disable => mcp.set_enabled(&p.name, false).await,
            McpServerAction::Enable => mcp.set_enabled(&p.name, true).await,
        };
        done.map(info).map_err(|e| match e {
            dreb_mcp::ManageError::NotFound(name) => McpServerError::NotFound { name },
        })
    }

    async fn get_commands(
        &self,
        _ctx: &RequestContext,
        _p: GetCommandsParams,
    ) -> Result<CommandsResult, errors::GetCommandsError> {
        self.extensions.ready().await;
        // Extension commands first, then templates, skills and built-ins (the reference's order).
        let mut commands = self.extensions.commands();
        commands.extend(self.mcp.commands());
        let names: std::collections::HashSet<String> = commands
            .iter()
            .map(|c| command_name(c).to_string())
            .collect();
        let rest = self.resources.lock().commands();
        commands.extend(
            rest.into_iter()
                .filter(|c| !names.contains(command_name(c))),
        );
        Ok(CommandsResult { commands })
    }
}

fn command_name(c: &RpcSlashCommand) -> &str {
    match c {
        RpcSlashCommand::Extension(c) => &c.name,
        RpcSlashCommand::Prompt(c) => &c.name,
        RpcSlashCommand::Skill(c) => &c.name,
        RpcSlashCommand::Mcp(c) => &c.name,
        RpcSlashCommand::Builtin(c) => &c.name,
    }
}
