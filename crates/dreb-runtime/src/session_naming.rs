//! Naming an unnamed session after what it is about, as the reference's RPC mode does (its "tab title"): once the
//! session has run `tabTitle.triggerAfter` tool calls (9 by default; `tabTitle.enabled: false` turns it off), one
//! LLM call without tools, on the Explore agent's model (else the session's), writes a short title, which becomes
//! the session's name (a `session_info` entry and `session_name_changed`) unless it got one meanwhile. It runs at
//! most once per process, in the background; a failure is logged and changes nothing. Not in print mode.

use std::time::Duration;

use dreb_ai::{AssistantBlock, Context, Message, Model, StreamOptions, UserContent, UserMessage};
use dreb_protocol::{Event, SessionNameChangedEvent};
use tokio_util::sync::CancellationToken;

use crate::services::{Runtime, Services};
use crate::sync::lock;

/// The whole naming (model resolution and the call) gives up after this long.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A title is cut to this many characters, whatever the model wrote.
const TITLE_HARD_CAP: usize = 300;

/// The agent whose models name sessions (cheap and fast by design).
const NAMING_AGENT: &str = "Explore";

/// A tool call of the session ended: start the naming when it is the one that reaches the threshold.
pub(crate) fn on_tool_end(rt: &Runtime) {
    // A one-shot print run ends with its reply; the reference names sessions of its RPC (and terminal) modes.
    if rt.resources.ui() == Some("cli") {
        return;
    }
    let settings = rt.settings.tab_title_settings();
    if !settings.enabled || session_name(rt).is_some() {
        return;
    }
    if !rt.naming.count_tool_call(settings.trigger_after.max(1)) {
        return;
    }
    let weak = crate::services::downgrade(rt);
    let soft_target = settings.max_title_length.clamp(1, TITLE_HARD_CAP as u64);
    tokio::spawn(async move {
        let Some(services) = weak.upgrade() else {
            return;
        };
        let cancel = services.stop.child_token();
        let naming = name_session(&services, soft_target, &cancel);
        let outcome = tokio::select! {
            r = naming => r,
            _ = tokio::time::sleep(TIMEOUT) => Err(format!("timed out after {}s", TIMEOUT.as_secs())),
        };
        cancel.cancel();
        if let Err(e) = outcome {
            tracing::warn!("[rpc] Session title generation failed: {e}");
        }
    });
}

fn session_name(services: &Services) -> Option<String> {
    services
        .sessions
        .lock()
        .session_name()
        .filter(|n| !n.is_empty())
}

/// Resolve the model, ask it for a title, and name the session with it if it still has no name.
async fn name_session(
    services: &Services,
    soft_target: u64,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let parent = services.agent.model();
    let explore_models = crate::background::agent_types::discover(
        crate::commands::home_dir().as_deref(),
        &services.cwd,
    )
    .into_iter()
    .find(|a| a.name == NAMING_AGENT)
    .map(|a| a.models)
    .unwrap_or_default();
    let resolved = crate::background::tool::resolve_agent_model(
        services,
        NAMING_AGENT,
        &explore_models,
        None,
        parent.as_ref().map(|m| m.provider.as_str()),
        parent.as_ref().map(|m| m.id.as_str()),
        cancel,
    )
    .await;
    let model = match resolved {
        Ok(Some(r)) => r.model,
        // The session's own model is the last resort, as in the reference.
        _ => parent.clone().ok_or("no model to ask")?,
    };
    let Some(request) = title_request(services) else {
        return Ok(());
    };
    let prompt = title_prompt(soft_target);
    let reply = match ask(services, &model, &prompt, &request, cancel).await {
        Ok(reply) => reply,
        Err(first) => match parent
            .as_ref()
            .filter(|p| p.provider != model.provider || p.id != model.id)
        {
            Some(parent) => ask(services, parent, &prompt, &request, cancel)
                .await
                .map_err(|second| {
                    format!(
                        "with {}/{}: {first}; with the session's model {}/{}: {second}",
                        model.provider, model.id, parent.provider, parent.id
                    )
                })?,
            None => return Err(format!("with {}/{}: {first}", model.provider, model.id)),
        },
    };
    let Some(title) = clean_title(&reply) else {
        return Ok(());
    };
    // A name may have come while the model answered: it stays.
    let named = {
        let mut sessions = services.sessions.lock();
        if sessions.session_name().is_some_and(|n| !n.is_empty()) {
            false
        } else {
            sessions
                .set_session_name(&title)
                .map_err(|e| e.to_string())?;
            true
        }
    };
    if named {
        services
            .outbox
            .send(&Event::SessionNameChanged(SessionNameChangedEvent {
                name: title,
            }));
    }
    Ok(())
}

/// The system prompt of the naming call.
fn title_prompt(soft_target: u64) -> String {
    format!(
        "You write the title of a coding session, so that a person can tell their sessions apart at a glance. You \
         are not the session's assistant and never address its user: answer with the title alone, without quotes, \
         explanation or preamble. Say what is being done in the session (for example 'Fix login timeout' or 'Plan \
         the parser refactor'), based first on what the user asked and the work done; use the branch, repository and \
         directory only to tell apart requests that are otherwise alike, never in place of the request. Do not write \
         bare references such as '#12', and leave out the word 'dreb'. Aim for about {soft_target} characters; a \
         little longer is fine when it is clearer."
    )
}

/// What the model is shown: the first and the latest user request, the recent activity (the labels the Dispatch
/// Arbiter is shown too), and where the session runs. `None` when there is nothing to go on.
fn title_request(services: &Services) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    let requests = crate::background::arbiter::user_texts(services);
    if let (Some(first), Some(last)) = (requests.first(), requests.last()) {
        lines.push("What the user asked:".into());
        lines.push(format!("- {first}"));
        if last != first {
            lines.push(format!("- {last}"));
        }
    }
    let activity = lock(&services.background.activity).build();
    if !activity.is_empty() {
        lines.push(String::new());
        lines.push("What happened in the session:".into());
        lines.push(activity);
    }
    if lines.is_empty() {
        return None;
    }
    let branch = services
        .resources
        .lock()
        .project_state
        .as_ref()
        .map(|s| s.branch.clone());
    lines.push(String::new());
    lines.push("Only to tell similar sessions apart:".into());
    if let Some(branch) = branch {
        lines.push(format!("Branch: {branch}"));
    }
    if let Some(repo) = services.cwd.file_name() {
        lines.push(format!("Repository: {}", repo.to_string_lossy()));
    }
    lines.push(format!("Directory: {}", services.cwd.display()));
    Some(lines.join("\n"))
}

/// One call of `model`, no tools, no retries; its reply's text.
async fn ask(
    services: &Services,
    model: &Model,
    system_prompt: &str,
    request: &str,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let api_key = services
        .models
        .registry()
        .api_key_for(model)
        .map_err(|e| e.to_string())?;
    let context = Context {
        system_prompt: Some(system_prompt.to_string()),
        messages: vec![Message::User(UserMessage {
            role: Default::default(),
            content: UserContent::Text(request.to_string()),
            timestamp: chrono::Utc::now().timestamp_millis(),
        })],
        tools: Vec::new(),
    };
    let options = StreamOptions {
        api_key,
        cancel: cancel.child_token(),
        ..Default::default()
    };
    let stream = dreb_ai::LlmClient::stream(services.models.providers(), model, &context, options);
    match dreb_ai::final_message(stream).await {
        Some(Ok(message)) => Ok(message
            .content
            .iter()
            .find_map(|b| match b {
                AssistantBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .unwrap_or_default()),
        Some(Err(message)) => Err(message
            .error_message
            .unwrap_or_else(|| "the provider returned an error".into())),
        None => Err("the stream ended without a result".into()),
    }
}

/// The reply as a title: trimmed, without surrounding quotes, on one line, at most [`TITLE_HARD_CAP`] characters.
fn clean_title(reply: &str) -> Option<String> {
    let mut title = reply.trim();
    for quote in ['"', '\''] {
        if title.len() >= 2 && title.starts_with(quote) && title.ends_with(quote) {
            title = title[1..title.len() - 1].trim();
        }
    }
    let one_line = title
        .split(['\r', '\n'])
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let title: String = one_line.trim().chars().take(TITLE_HARD_CAP).collect();
    (!title.is_empty()).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_cleaned() {
        assert_eq!(
            clean_title("  \"Fix the login timeout\"\n").as_deref(),
            Some("Fix the login timeout")
        );
        assert_eq!(clean_title("'Plan'").as_deref(), Some("Plan"));
        assert_eq!(clean_title("Two\r\nlines").as_deref(), Some("Two lines"));
        assert_eq!(clean_title("  \n "), None);
        assert_eq!(clean_title("\"\""), None);
        let long = "é".repeat(400);
        assert_eq!(clean_title(&long).unwrap().chars().count(), TITLE_HARD_CAP);
    }
}
