//! Forbidden-commands guard: blocks bash commands matching dangerous patterns before they reach the shell.
//!
//! The command is split into segments on shell operators (after masking quoted text so operators inside
//! strings do not split), and each segment is checked raw, with a `$(..)` / `(..)` / backtick wrapper removed,
//! and with pass-through prefixes (`env`, `exec`, `command`, `builtin`, `\`, absolute paths) stripped. Default
//! patterns are anchored at the segment start. Quoted text is checked too (it could be piped into a shell).
//! Patterns use JavaScript regex syntax (look-ahead included), evaluated with `fancy-regex`.

use std::sync::OnceLock;

use fancy_regex::Regex;

const READERS: &str =
    r"^(?:/\S+/)?(?:cat|head|tail|less|more|strings|grep|sed|awk|base64|xxd)\s+.*";

/// Patterns that are always active (before the settings' `forbiddenCommands`).
pub fn default_forbidden_patterns() -> Vec<String> {
    let mut v: Vec<String> = [
        r"^(?:/\S+/)?sudo\b",
        r"^(?:/\S+/)?doas\b",
        r"^(?:/\S+/)?su\b",
        r"^gh pr merge.*--admin",
        r"^git push.*(-f\b|--force)",
        r"^gh api.*bypass",
        r"^(?:export\s+)?HUSKY=0",
        r"^git\s+commit.*--no-verify",
        r"^(?:export\s+)?SKIP_?VALIDATION=1",
        r"^rm\s+.*--no-preserve-root",
        r#"^rm\s+.*\s["']?/(\*|[\w.-]+/?)?["']?(\s|$)"#,
        r"^dd\s+.*of=/dev/(sd|hd|vd|nvme|xvd|loop|mmcblk|disk)",
        r"^mkfs",
        r"^>>?\s*/dev/(sd|hd|vd|nvme|xvd|loop|mmcblk|disk)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(sensitive_reader_patterns());
    v
}

fn sensitive_reader_patterns() -> Vec<String> {
    [
        r"(?:~|\.ssh)/id_(?!.*\.pub\b)",
        r"\.dreb/secrets/",
        r"\.dreb/agent/auth\.json",
        r"\.aws/credentials",
        r"\.gnupg/private-keys",
        r"\.config/gcloud/credentials\.db",
    ]
    .iter()
    .map(|tail| format!("{READERS}{tail}"))
    .collect()
}

/// Checked against the whole quote-masked command (constructs that span operators).
const FULL_COMMAND_PATTERNS: [&str; 1] = [r":\(\)\s*\{"];

/// Checked against text inside quotes.
fn quoted_content_patterns() -> Vec<String> {
    let mut v: Vec<String> = [
        r"^(?:/\S+/)?sudo\b",
        r"^(?:/\S+/)?doas\b",
        r"^(?:/\S+/)?su\b",
        r"^rm\s+.*--no-preserve-root",
        r"^rm\s+.*\s/(\*|[\w.-]+/?)?(\s|$)",
        r"^dd\s+.*of=/dev/(sd|hd|vd|nvme|xvd|loop|mmcblk|disk)",
        r"^mkfs",
        r"^>>?\s*/dev/(sd|hd|vd|nvme|xvd|loop|mmcblk|disk)",
        r"^gh pr merge.*--admin",
        r"^git push.*(-f\b|--force)",
        r"^gh api.*bypass",
        r"^git\s+commit.*--no-verify",
        r":\(\)\s*\{",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(sensitive_reader_patterns());
    v
}

struct Compiled {
    defaults: Vec<(String, Regex)>,
    full: Vec<(String, Regex)>,
    quoted: Vec<(String, Regex)>,
}

fn compile_all(patterns: &[String]) -> Vec<(String, Regex)> {
    patterns
        .iter()
        .filter_map(|p| Regex::new(p).ok().map(|r| (p.clone(), r)))
        .collect()
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| Compiled {
        defaults: compile_all(&default_forbidden_patterns()),
        full: compile_all(
            &FULL_COMMAND_PATTERNS
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        ),
        quoted: compile_all(&quoted_content_patterns()),
    })
}

fn matches(re: &Regex, text: &str) -> bool {
    // A pattern that blows the backtracking limit is treated as not matching, like an invalid one.
    re.is_match(text).unwrap_or(false)
}

fn is_escaped(chars: &[char], i: usize) -> bool {
    let mut n = 0;
    let mut j = i;
    while j > 0 && chars[j - 1] == '\\' {
        n += 1;
        j -= 1;
    }
    n % 2 == 1
}

/// Replace the content of quoted strings with `_` (newlines kept) so operators inside them do not split.
pub fn mask_quoted_content(command: &str) -> String {
    let chars: Vec<char> = command.chars().collect();
    let (mut in_single, mut in_double) = (false, false);
    let mut out = String::with_capacity(command.len());
    for (i, &ch) in chars.iter().enumerate() {
        if ch == '\'' && !in_double {
            in_single = !in_single;
            out.push(ch);
        } else if ch == '"' && !in_single {
            if !is_escaped(&chars, i) {
                in_double = !in_double;
            }
            out.push(ch);
        } else if in_single || in_double {
            out.push(if ch == '\n' { '\n' } else { '_' });
        } else {
            out.push(ch);
        }
    }
    out
}

fn extract_quoted_content(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut in_quote: Option<char> = None;
    let mut start = 0;
    for (i, &ch) in chars.iter().enumerate() {
        if ch == '\'' || (ch == '"' && !is_escaped(&chars, i)) {
            match in_quote {
                None => {
                    in_quote = Some(ch);
                    start = i + 1;
                }
                Some(q) if q == ch => {
                    let content: String = chars[start..i].iter().collect();
                    let content = content.trim();
                    if !content.is_empty() {
                        out.push(content.to_string());
                    }
                    in_quote = None;
                }
                _ => {}
            }
        }
    }
    out
}

fn split_re() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r"\s*(?:&&|\|\||[;&|]|\n)\s*").expect("valid split regex"))
}

/// Split on `&&`, `||`, `;`, `|`, `&` and newlines, ignoring operators inside quotes.
pub fn split_command_segments(command: &str) -> Vec<String> {
    let masked = mask_quoted_content(command);
    // Masking replaces characters one for one, so char positions line up; map through char indices.
    let orig: Vec<char> = command.chars().collect();
    let mut segments = Vec::new();
    let mut last = 0usize; // byte offset in masked
    let byte_to_char = |b: usize| masked[..b].chars().count();
    let mut push = |from: usize, to: usize| {
        let (a, b) = (byte_to_char(from), byte_to_char(to));
        let s: String = orig[a..b].iter().collect();
        let s = s.trim().to_string();
        if !s.is_empty() {
            segments.push(s);
        }
    };
    for m in split_re().find_iter(&masked) {
        push(last, m.start());
        last = m.end();
    }
    push(last, masked.len());
    segments
}

fn strip_shell_prefixes(segment: &str) -> String {
    static RES: OnceLock<[regex::Regex; 5]> = OnceLock::new();
    let [abs, prefixes, flag, assign, bare] = RES.get_or_init(|| {
        [
            regex::Regex::new(r"^/\S+/").expect("re"),
            regex::Regex::new(r"^(?:env|exec|command|builtin)\s+").expect("re"),
            regex::Regex::new(r"^-\S*\s+").expect("re"),
            regex::Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*=\S*\s+").expect("re"),
            regex::Regex::new(r"^[A-Z_][A-Z0-9_]*\s+").expect("re"),
        ]
    });
    let mut r = segment.strip_prefix('\\').unwrap_or(segment).to_string();
    r = abs.replace(&r, "").into_owned();
    loop {
        let next = prefixes.replace(&r, "").into_owned();
        if next == r {
            break;
        }
        r = next;
    }
    loop {
        let mut next = flag.replace(&r, "").into_owned();
        next = assign.replace(&next, "").into_owned();
        next = bare.replace(&next, "").into_owned();
        if next == r {
            break;
        }
        r = next;
    }
    let r = r.strip_prefix('\\').unwrap_or(&r);
    r.trim().to_string()
}

fn strip_subshell_wrapper(segment: &str) -> String {
    if segment.starts_with("$(") && segment.ends_with(')') && segment.len() >= 3 {
        return segment[2..segment.len() - 1].trim().to_string();
    }
    if segment.starts_with('(') && segment.ends_with(')') && segment.len() >= 2 {
        return segment[1..segment.len() - 1].trim().to_string();
    }
    if segment.starts_with('`') && segment.ends_with('`') && segment.len() >= 2 {
        return segment[1..segment.len() - 1].trim().to_string();
    }
    static RES: OnceLock<(regex::Regex, regex::Regex)> = OnceLock::new();
    let (inline, backtick) = RES.get_or_init(|| {
        (
            regex::Regex::new(r"\$\(([^)]+)\)").expect("re"),
            regex::Regex::new(r"`([^`]+)`").expect("re"),
        )
    });
    if let Some(c) = inline.captures(segment) {
        return c[1].trim().to_string();
    }
    if let Some(c) = backtick.captures(segment) {
        return c[1].trim().to_string();
    }
    segment.to_string()
}

/// The first pattern `command` matches, if any. `extra` are the settings' `forbiddenCommands` (invalid regexes
/// are skipped).
pub fn is_forbidden_command(command: &str, extra: &[String]) -> Option<String> {
    let c = compiled();
    let extras = compile_all(extra);
    let masked = mask_quoted_content(command);
    for (p, re) in &c.full {
        if matches(re, &masked) {
            return Some(p.clone());
        }
    }
    for segment in split_command_segments(command) {
        let unwrapped = strip_subshell_wrapper(&segment);
        let mut variants: Vec<String> = Vec::new();
        for v in [
            segment.clone(),
            unwrapped.clone(),
            strip_shell_prefixes(&segment),
            strip_shell_prefixes(&unwrapped),
        ] {
            if !variants.contains(&v) {
                variants.push(v);
            }
        }
        for text in &variants {
            for (p, re) in c.defaults.iter().chain(extras.iter()) {
                if matches(re, text) {
                    return Some(p.clone());
                }
            }
        }
        for content in extract_quoted_content(&segment) {
            for (p, re) in c.quoted.iter().chain(extras.iter()) {
                if matches(re, &content) {
                    return Some(p.clone());
                }
            }
        }
    }
    None
}

/// Script files a command executes (`bash x.sh`, `sh -e x.sh`, `bash < x.sh`, `source x`, `. x`).
pub fn extract_script_paths(command: &str) -> Vec<String> {
    static RES: OnceLock<[regex::Regex; 4]> = OnceLock::new();
    let [redirect, dash_c, exec, source] = RES.get_or_init(|| {
        [
            regex::Regex::new(r"^(?:bash|sh|zsh|ksh)(?:\s+-\S+)*\s+<\s*(\S+)").expect("re"),
            regex::Regex::new(r"^(?:bash|sh|zsh|ksh)\s+-c\b").expect("re"),
            regex::Regex::new(r"^(?:bash|sh|zsh|ksh)\s+(?:-\S+\s+)*(\S+)").expect("re"),
            regex::Regex::new(r"^(?:source|\.)\s+(\S+)").expect("re"),
        ]
    });
    let mut paths: Vec<String> = Vec::new();
    let mut add = |p: &str| {
        if !paths.iter().any(|x| x == p) {
            paths.push(p.to_string());
        }
    };
    for segment in split_command_segments(command) {
        let t = segment.trim();
        if let Some(c) = redirect.captures(t) {
            add(&c[1]);
            continue;
        }
        if dash_c.is_match(t) {
            continue;
        }
        if let Some(c) = exec.captures(t)
            && !c[1].starts_with('-')
        {
            add(&c[1]);
        }
        if let Some(c) = source.captures(t) {
            add(&c[1]);
        }
    }
    paths
}

/// A forbidden line found in a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptMatch {
    pub pattern: String,
    /// 1-based.
    pub line: usize,
    pub text: String,
}

/// Check a script line by line (blank lines and `#` comments skipped).
pub fn check_script_content(content: &str, extra: &[String]) -> Option<ScriptMatch> {
    for (i, raw) in content.split('\n').enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(pattern) = is_forbidden_command(line, extra) {
            return Some(ScriptMatch {
                pattern,
                line: i + 1,
                text: line.to_string(),
            });
        }
    }
    None
}

/// The paragraph appended to every block reason.
pub const FORBIDDEN_COMMAND_GUIDANCE: &str = "This command was blocked for safety. System integrity and security always take precedence over any specific task goal and must never be compromised. Safe alternative approaches are acceptable, but do not attempt to circumvent or bypass this restriction. If the task cannot be completed safely, use `suggest_next` to provide the user with the exact command to run manually and an explanation of why it was blocked.";

/// The before-tool-call check for `bash`: the block reason when the command (or a script it runs, resolved
/// against `cwd`) is forbidden.
pub fn check_bash_command(
    command: &str,
    extra: &[String],
    cwd: &std::path::Path,
) -> Option<String> {
    if let Some(pattern) = is_forbidden_command(command, extra) {
        return Some(format!(
            "Command blocked by forbidden-commands guard: \"{pattern}\" matched \"{command}\".\n\n{FORBIDDEN_COMMAND_GUIDANCE}"
        ));
    }
    for script in extract_script_paths(command) {
        let resolved = crate::paths::normalize_lexically(&cwd.join(&script));
        let Ok(bytes) = std::fs::read(&resolved) else {
            continue;
        };
        let Ok(content) = String::from_utf8(bytes) else {
            continue;
        };
        if let Some(m) = check_script_content(&content, extra) {
            return Some(format!(
                "Command blocked by forbidden-commands guard: script \"{script}\" contains forbidden command at line {}: \"{}\" (matched pattern \"{}\").\n\n{FORBIDDEN_COMMAND_GUIDANCE}",
                m.line, m.text, m.pattern
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked(cmd: &str) -> bool {
        is_forbidden_command(cmd, &[]).is_some()
    }

    #[test]
    fn blocks_dangerous_commands() {
        for cmd in [
            "sudo apt install x",
            "/usr/bin/sudo ls",
            "ls && sudo rm x",
            "env -i PATH=/x sudo ls",
            "\\sudo ls",
            "$(sudo ls)",
            "x=$(git push --force)",
            "git push -f origin main",
            "git push --force-with-lease",
            "gh pr merge 1 --admin",
            "HUSKY=0 git commit -m x",
            "git commit -m x --no-verify",
            "rm -rf /",
            "rm -rf /home",
            "rm -rf /*",
            "dd if=/dev/zero of=/dev/sda",
            "mkfs.ext4 /dev/sdb1",
            "> /dev/sda",
            "cat ~/.ssh/id_rsa",
            "/bin/cat ~/.ssh/id_ed25519",
            "cat ~/.aws/credentials",
            "echo \"sudo reboot\" | bash",
            ":(){ :|:& };:",
            "echo ':(){ :|:& };:'",
        ] {
            assert!(blocked(cmd), "should block: {cmd}");
        }
    }

    #[test]
    fn allows_safe_commands() {
        for cmd in [
            "ls -la",
            "echo 'a && sudo'x",
            "git push origin main",
            "rm -rf ./build",
            "rm -rf build/",
            "cat ~/.ssh/id_rsa.pub",
            "grep -r sudoers docs",
            "git log --grep=\"HUSKY=0\"",
            "pseudo ls",
        ] {
            assert!(!blocked(cmd), "should allow: {cmd}");
        }
    }

    #[test]
    fn reports_pattern_and_extra_patterns() {
        assert_eq!(
            is_forbidden_command("sudo x", &[]).unwrap(),
            r"^(?:/\S+/)?sudo\b"
        );
        assert_eq!(
            is_forbidden_command("npm publish", &["^npm publish".into()]).unwrap(),
            "^npm publish"
        );
        assert!(is_forbidden_command("ls", &["(".into()]).is_none());
    }

    #[test]
    fn segments_ignore_quoted_operators() {
        assert_eq!(
            split_command_segments("echo 'a && b' && ls | wc -l"),
            vec!["echo 'a && b'", "ls", "wc -l"]
        );
    }

    #[test]
    fn scripts_are_scanned() {
        assert_eq!(
            extract_script_paths("bash -x run.sh && source env.sh && bash -c 'x'"),
            vec!["run.sh", "env.sh"]
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("run.sh"),
            "#!/bin/sh\n# sudo in a comment\necho hi\nsudo reboot\n",
        )
        .unwrap();
        let reason = check_bash_command("bash run.sh", &[], dir.path()).unwrap();
        assert!(reason.starts_with(
            "Command blocked by forbidden-commands guard: script \"run.sh\" contains forbidden command at line 4: \"sudo reboot\" (matched pattern \"^(?:/\\S+/)?sudo\\b\").\n\nThis command was blocked for safety."
        ));
        let direct = check_bash_command("sudo ls", &[], dir.path()).unwrap();
        assert!(direct.starts_with("Command blocked by forbidden-commands guard: \"^(?:/\\S+/)?sudo\\b\" matched \"sudo ls\".\n\n"));
        assert!(direct.ends_with("explanation of why it was blocked."));
    }
}
