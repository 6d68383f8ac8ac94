//! Expansion of user input that names a skill (`/skill:<name> args`) or a prompt template (`/<name> args`), as the
//! reference applies it to `prompt`, `steer` and `follow_up` text before anything else sees it.

use std::path::Path;

use super::{Resources, Skill};
use crate::system_prompt::escape_xml;

/// Words of an argument string: split on spaces and tabs, `"…"` and `'…'` group (quotes removed, no escapes).
pub(crate) fn parse_command_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == ' ' || c == '\t' => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            None => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Replaces each match of a `$`-placeholder, one pass over `text` (inserted values are not rescanned by this pass).
/// `matcher` gets the text after a `$` and returns the matched length and its replacement.
fn replace_dollar(text: &str, matcher: impl Fn(&str) -> Option<(usize, String)>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        match matcher(after) {
            Some((len, value)) => {
                out.push_str(&value);
                rest = &after[len..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn leading_digits(s: &str) -> usize {
    s.bytes().take_while(u8::is_ascii_digit).count()
}

/// Argument placeholders, in the reference's order of passes: `$1`…, then `${@:N}` / `${@:N:L}`, then `$ARGUMENTS`,
/// then `$@`.
pub(crate) fn substitute_args(content: &str, args: &[String]) -> String {
    let arg = |n: &str| {
        n.parse::<usize>()
            .ok()
            .and_then(|n| args.get(n - 1))
            .cloned()
            .unwrap_or_default()
    };
    let text = replace_dollar(content, |after| {
        let n = leading_digits(after);
        (n > 0 && !after.starts_with('0')).then(|| (n, arg(&after[..n])))
    });
    let text = replace_dollar(&text, |after| {
        let inner = after.strip_prefix("{@:")?;
        let start_len = leading_digits(inner);
        if start_len == 0 {
            return None;
        }
        let mut used = 3 + start_len;
        let mut rest = &inner[start_len..];
        let mut length = None;
        if let Some(r) = rest.strip_prefix(':') {
            let l = leading_digits(r);
            if l > 0 {
                length = Some(&r[..l]);
                used += 1 + l;
                rest = &r[l..];
            }
        }
        rest.strip_prefix('}')?;
        used += 1;
        let start = inner[..start_len]
            .parse::<usize>()
            .unwrap_or(usize::MAX)
            .saturating_sub(1);
        let from = start.min(args.len());
        let to = match length {
            Some(l) => from
                .saturating_add(l.parse::<usize>().unwrap_or(usize::MAX))
                .min(args.len()),
            None => args.len(),
        };
        Some((used, args[from..to].join(" ")))
    });
    let all = args.join(" ");
    let text = text.replace("$ARGUMENTS", &all);
    text.replace("$@", &all)
}

/// The body of a markdown file without its `---` frontmatter, trimmed when there was frontmatter.
pub(super) fn body_of(text: &str) -> String {
    dreb_settings::frontmatter::body(text)
}

/// A skill's instructions for `args`: the body with `$0` (the first argument), the argument placeholders,
/// `${DREB_SKILL_DIR}` and `${DREB_SESSION_ID}` filled in, wrapped in a `<skill>` block naming its file.
pub(crate) fn expand_skill(skill: &Skill, args: &str, session_id: &str) -> Result<String, String> {
    let text = match skill.text {
        Some(text) => text.to_string(),
        None => std::fs::read_to_string(&skill.source.path).map_err(|e| e.to_string())?,
    };
    let dir = skill.source.path.parent().unwrap_or(Path::new(""));
    let dir = dir.to_string_lossy();
    let args = parse_command_args(args);
    let first = args.first().cloned().unwrap_or_default();
    let body = replace_dollar(body_of(&text).trim(), |after| {
        (after.starts_with('0') && leading_digits(after) == 1).then(|| (1, first.clone()))
    });
    let body = substitute_args(&body, &args)
        .replace("${DREB_SKILL_DIR}", &dir)
        .replace("${DREB_SESSION_ID}", session_id);
    Ok(format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {dir}.\n\n{body}\n</skill>",
        escape_xml(&skill.name),
        escape_xml(&skill.source.path.to_string_lossy()),
    ))
}

impl Resources {
    /// `text` with a leading `/skill:<name> args` replaced by that skill's instructions, then a leading
    /// `/<template> args` replaced by the template's body. Unknown names, and skills whose file cannot be read, leave
    /// the text as it is. Every loaded skill can be named, whatever its `ui`.
    pub(crate) fn expand_input(&self, text: &str, session_id: &str) -> String {
        let text = self.expand_skill_command(text, session_id);
        self.expand_prompt_template(&text)
    }

    fn expand_skill_command(&self, text: &str, session_id: &str) -> String {
        let Some(rest) = text.strip_prefix("/skill:") else {
            return text.to_string();
        };
        let (name, args) = match rest.split_once(' ') {
            Some((name, args)) => (name, args.trim()),
            None => (rest, ""),
        };
        let Some(skill) = self.skills.iter().find(|s| s.name == name) else {
            tracing::warn!("Unknown skill \"{name}\" — no skill found with that name");
            return text.to_string();
        };
        expand_skill(skill, args, session_id).unwrap_or_else(|e| {
            tracing::warn!("Skill expansion failed for \"{name}\": {e}");
            text.to_string()
        })
    }

    fn expand_prompt_template(&self, text: &str) -> String {
        let Some(rest) = text.strip_prefix('/') else {
            return text.to_string();
        };
        let (name, args) = rest.split_once(' ').unwrap_or((rest, ""));
        match self.prompts.iter().find(|p| p.name == name) {
            Some(template) => substitute_args(&template.content, &parse_command_args(args)),
            None => text.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::{PromptTemplate, Source};
    use super::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_split_on_blanks_and_group_in_quotes() {
        assert_eq!(
            parse_command_args(" a  \"b c\"\t'd \"e' f\"g\"h "),
            words(&["a", "b c", "d \"e", "fgh"])
        );
        assert!(parse_command_args("").is_empty());
    }

    #[test]
    fn placeholders_are_filled_pass_by_pass() {
        let args = words(&["one", "two", "three"]);
        assert_eq!(
            substitute_args("$1|$3|$4|$0|$01|$10", &args),
            "one|three||$0|$01|"
        );
        assert_eq!(
            substitute_args("${@:2}|${@:1:2}|${@:0}|${@:9}|${@:2:}", &args),
            "two three|one two|one two three||${@:2:}"
        );
        assert_eq!(
            substitute_args("$ARGUMENTS / $@", &args),
            "one two three / one two three"
        );
        // Values inserted for `$1` are not rescanned for `$2`, but later passes see them (as in the reference).
        assert_eq!(substitute_args("$1 $2", &words(&["$2", "$@"])), "$2 $2 $@");
    }

    fn resources(skill_text: &'static str) -> Resources {
        let source = |path: &str| Source {
            path: PathBuf::from(path),
            source: "builtin",
            scope: dreb_protocol::SourceScope::User,
            base_dir: None,
        };
        Resources {
            context_files: Vec::new(),
            skills: vec![Skill {
                name: "greet".into(),
                description: "Greets".into(),
                ui: Some("telegram".into()),
                disable_model_invocation: false,
                text: Some(skill_text),
                source: source("/pkg/skills/greet/SKILL.md"),
            }],
            prompts: vec![PromptTemplate {
                name: "fix".into(),
                description: "Fix".into(),
                content: "Fix $1 in ${@:2}".into(),
                source: source("/p/.dreb/prompts/fix.md"),
            }],
            ..Resources::default()
        }
    }

    #[test]
    fn a_skill_command_becomes_its_instructions() {
        let r = resources(
            "---\nname: greet\ndescription: Greets\n---\n\nSay hi to $0 ($ARGUMENTS) from ${DREB_SKILL_DIR} in ${DREB_SESSION_ID}; $00 stays.\n",
        );
        assert_eq!(
            r.expand_input("/skill:greet Ann \"Bo Li\"", "s1"),
            "<skill name=\"greet\" location=\"/pkg/skills/greet/SKILL.md\">\nReferences are relative to \
             /pkg/skills/greet.\n\nSay hi to Ann (Ann Bo Li) from /pkg/skills/greet in s1; $00 stays.\n</skill>"
        );
        // Unknown skills and other text are left alone.
        assert_eq!(r.expand_input("/skill:nope x", "s1"), "/skill:nope x");
        assert_eq!(
            r.expand_input("hello /skill:greet", "s1"),
            "hello /skill:greet"
        );
    }

    #[test]
    fn a_template_command_becomes_its_body() {
        let r = resources("---\ndescription: d\n---\nx");
        assert_eq!(r.expand_input("/fix parser a b", "s"), "Fix parser in a b");
        assert_eq!(r.expand_input("/fix", "s"), "Fix  in ");
        assert_eq!(r.expand_input("/other x", "s"), "/other x");
    }

    #[test]
    fn the_body_follows_the_closing_frontmatter_marker() {
        assert_eq!(body_of("---\na: b\n---\n\n body \n"), "body");
        assert_eq!(body_of("no frontmatter\r\n"), "no frontmatter\n");
        assert_eq!(body_of("---\nunclosed"), "---\nunclosed");
    }
}
