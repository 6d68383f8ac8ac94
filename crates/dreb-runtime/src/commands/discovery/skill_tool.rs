//! The `skill` tool: the model loads a skill's instructions by name, expanded exactly as `/skill:<name> args` is
//! when the user types it. Skills whose frontmatter disables model invocation are refused with a note to ask the
//! user; an unknown name gets the list of skills the model may use.

use std::sync::Weak;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Skill;
use super::expand::expand_skill;
use crate::services::Services;

#[derive(Debug, Deserialize)]
struct Params {
    skill: String,
    args: Option<String>,
}

pub(crate) struct SkillTool {
    services: Weak<Services>,
    def: ToolDefinition,
}

impl SkillTool {
    pub fn new(services: Weak<Services>) -> Self {
        SkillTool {
            services,
            def: ToolDefinition {
                name: "skill".into(),
                description: "Load a skill: detailed instructions for one kind of task. Call it when the task \
                              matches a skill described in the available_skills list of the system prompt, then \
                              follow the instructions it returns."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "skill": {"type": "string", "description": "Name of the skill, as listed in available_skills (e.g. \"mach6-review\")"},
                        "args": {"type": "string", "description": "Arguments for the skill, if it takes any"}
                    },
                    "required": ["skill"]
                }),
            },
        }
    }
}

fn output(text: String, details: Value) -> ToolOutput {
    ToolOutput {
        details: Some(details),
        ..ToolOutput::text(text)
    }
}

/// The result of invoking `name` among `skills` (the skills of this UI type; re-read at each call so `reload` is
/// seen). Every outcome is a normal result, not an error: the text tells the model what to do next.
pub(crate) fn invoke_skill(
    skills: &[Skill],
    name: &str,
    args: &str,
    session_id: &str,
) -> ToolOutput {
    let details =
        |found: bool, warned: bool| json!({"skillName": name, "found": found, "warned": warned});
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        let available: Vec<String> = skills
            .iter()
            .filter(|s| !s.disable_model_invocation)
            .map(|s| format!("  - {}: {}", s.name, s.description))
            .collect();
        let available = if available.is_empty() {
            "  (none loaded)".to_string()
        } else {
            available.join("\n")
        };
        return output(
            format!("Unknown skill \"{name}\". Available skills:\n{available}"),
            details(false, false),
        );
    };
    if skill.disable_model_invocation {
        return output(
            format!(
                "The skill \"{n}\" has model invocation disabled. This skill is intended to be invoked explicitly by \
                 the user (via /skill:{n}), not by the model. Please ask the user for clarification before proceeding.",
                n = skill.name
            ),
            details(true, true),
        );
    }
    match expand_skill(skill, args, session_id) {
        Ok(text) => output(text, details(true, false)),
        Err(e) => {
            let mut d = details(true, false);
            d["error"] = json!(e);
            output(format!("Error loading skill \"{}\": {e}", skill.name), d)
        }
    }
}

#[async_trait]
impl Tool for SkillTool {
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
        let services = self
            .services
            .upgrade()
            .ok_or_else(|| ToolError::new("The session has ended"))?;
        let session_id = services.sessions.lock().session_id().to_string();
        let skills: Vec<Skill> = services
            .resources
            .lock()
            .visible_skills()
            .cloned()
            .collect();
        Ok(invoke_skill(
            &skills,
            &p.skill,
            p.args.as_deref().unwrap_or(""),
            &session_id,
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::Source;
    use super::*;

    fn skill(name: &str, disabled: bool, text: &'static str) -> Skill {
        Skill {
            name: name.into(),
            description: format!("About {name}"),
            ui: None,
            disable_model_invocation: disabled,
            text: Some(text),
            source: Source {
                path: PathBuf::from(format!("/s/{name}/SKILL.md")),
                source: "auto",
                scope: dreb_protocol::SourceScope::Project,
                base_dir: None,
            },
        }
    }

    fn text(out: &ToolOutput) -> String {
        serde_json::to_value(out).unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn skills() -> Vec<Skill> {
        vec![
            skill(
                "review",
                false,
                "---\nname: review\ndescription: About review\n---\nReview $1 (all: $@) in ${DREB_SKILL_DIR}, session ${DREB_SESSION_ID}.\n",
            ),
            skill("routing", true, "---\ndescription: x\n---\nSecret.\n"),
        ]
    }

    #[test]
    fn a_known_skill_expands_like_the_skill_command() {
        let out = invoke_skill(&skills(), "review", "src/a.rs \"two words\"", "sess-1");
        assert_eq!(
            text(&out),
            "<skill name=\"review\" location=\"/s/review/SKILL.md\">\nReferences are relative to /s/review.\n\n\
             Review src/a.rs (all: src/a.rs two words) in /s/review, session sess-1.\n</skill>"
        );
        assert_eq!(
            out.details,
            Some(json!({"skillName": "review", "found": true, "warned": false}))
        );
    }

    #[test]
    fn an_unknown_skill_lists_the_ones_the_model_may_use() {
        let out = invoke_skill(&skills(), "nope", "", "s");
        assert_eq!(
            text(&out),
            "Unknown skill \"nope\". Available skills:\n  - review: About review"
        );
        assert_eq!(
            out.details,
            Some(json!({"skillName": "nope", "found": false, "warned": false}))
        );
        let none = invoke_skill(&[], "nope", "", "s");
        assert_eq!(
            text(&none),
            "Unknown skill \"nope\". Available skills:\n  (none loaded)"
        );
    }

    #[test]
    fn a_disabled_skill_is_refused_with_guidance() {
        let out = invoke_skill(&skills(), "routing", "", "s");
        let t = text(&out);
        assert!(
            t.starts_with("The skill \"routing\" has model invocation disabled."),
            "{t}"
        );
        assert!(t.contains("(via /skill:routing)"), "{t}");
        assert!(!t.contains("Secret"), "{t}");
        assert_eq!(
            out.details,
            Some(json!({"skillName": "routing", "found": true, "warned": true}))
        );
    }

    #[test]
    fn an_unreadable_skill_file_is_reported() {
        let mut s = skill("gone", false, "");
        s.text = None;
        s.source.path = PathBuf::from("/nonexistent-dreb-test/gone/SKILL.md");
        let out = invoke_skill(&[s], "gone", "", "s");
        assert!(
            text(&out).starts_with("Error loading skill \"gone\": "),
            "{}",
            text(&out)
        );
        assert_eq!(out.details.as_ref().unwrap()["found"], true);
        assert!(out.details.as_ref().unwrap()["error"].is_string());
    }
}
