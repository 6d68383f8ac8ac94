//! `---`-delimited YAML frontmatter of markdown resources (SKILL.md, prompt templates, agent definitions).
//!
//! Split as the reference's `parseFrontmatter` splits (CRLF and CR normalised; the text must start with `---`; the
//! frontmatter ends at the next `\n---`; the body is what follows, trimmed) and parsed as YAML 1.2 (serde-saphyr),
//! so folded (`>-`) and literal (`|`) scalars, quoted strings, lists and comments read as the reference's `yaml`
//! package reads them.
//!
//! Where the reference throws on frontmatter that is not valid YAML (a skill with `description: Use when: x` is
//! then not loaded), this keeps the file: [`Frontmatter::error`] carries the YAML error for a warning, and the
//! fields come from a line-based reading of the top-level `key: value` lines instead.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// A markdown file's frontmatter and body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frontmatter {
    /// The top-level keys (empty without frontmatter).
    pub fields: Map<String, Value>,
    /// The text after the closing marker, trimmed; the whole text when there is no frontmatter.
    pub body: String,
    /// Whether the text had a frontmatter block.
    pub present: bool,
    /// Why the frontmatter did not parse as a YAML mapping (then `fields` are the line-based fallback).
    pub error: Option<String>,
}

/// Splits and parses `text`.
pub fn parse(text: &str) -> Frontmatter {
    let text = normalize_newlines(text);
    let Some((yaml, body)) = split(&text) else {
        return Frontmatter {
            body: text.into_owned(),
            ..Frontmatter::default()
        };
    };
    let (fields, error) = match simple_fields(yaml).map_or_else(|| parse_yaml(yaml), Ok) {
        Ok(fields) => (fields, None),
        Err(e) => (line_fields(yaml), Some(e)),
    };
    Frontmatter {
        fields,
        body: body.trim().to_string(),
        present: true,
        error,
    }
}

/// The body of `text` alone (what [`parse`] gives as `body`, without reading the YAML).
pub fn body(text: &str) -> String {
    let text = normalize_newlines(text);
    match split(&text) {
        Some((_, body)) => body.trim().to_string(),
        None => text.into_owned(),
    }
}

/// `text` with CRLF and lone CR turned into LF; borrowed when it has no CR (almost always: one `memchr` instead of
/// two copies made by substring searches).
pub fn normalize_newlines(text: &str) -> Cow<'_, str> {
    if memchr::memchr(b'\r', text.as_bytes()).is_some() {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The frontmatter's text and the rest, for normalised `text` (`None` without frontmatter).
fn split(text: &str) -> Option<(&str, &str)> {
    if !text.starts_with("---") {
        return None;
    }
    let end = text[3..].find("\n---")? + 3;
    // `slice(4, end)`: empty when the closing marker follows the opening one at once.
    let yaml = text.get(4..end).unwrap_or("");
    Some((yaml, &text[end + 4..]))
}

fn parse_yaml(yaml: &str) -> Result<Map<String, Value>, String> {
    let options = serde_saphyr::options! {
        strict_booleans: true,
        duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::Error,
    };
    // An empty or comment-only block is an empty mapping (`parse(...) ?? {}`).
    let value: Option<Value> =
        serde_saphyr::from_str_with_options(yaml, options).map_err(|e| e.to_string())?;
    match value {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err("the frontmatter is not a mapping of keys to values".to_string()),
    }
}

/// The mapping of a frontmatter made only of `key: text` lines whose YAML meaning is plain: each value a plain
/// scalar that can only be a string, or a double-quoted one without escapes. That is what skills and agent types
/// almost always hold, and reading it by hand costs a fraction of a YAML parse (a quarter of the start-up's CPU
/// went to parsing the bundled skills' and agent types' frontmatter). `None` for anything else (comments after a
/// value, other quoting, indentation, lists, numbers, booleans, null, duplicate keys...), which the YAML parser
/// reads; a test checks both agree wherever this answers.
fn simple_fields(yaml: &str) -> Option<Map<String, Value>> {
    let mut map = Map::new();
    for line in yaml.split('\n') {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, rest) = line.split_once(':')?;
        let simple_key = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && !is_special_word(key);
        let value = rest.strip_prefix(' ')?.trim_matches(' ');
        if !simple_key || map.contains_key(key) {
            return None;
        }
        let text = if let Some(quoted) = value.strip_prefix('"') {
            let inner = quoted.strip_suffix('"')?;
            if inner.contains(['"', '\\']) {
                return None;
            }
            inner
        } else {
            let plain = !value.is_empty()
                && !value.starts_with(|c: char| {
                    c.is_ascii_digit() || "-?:,[]{}#&*!|>'\"%@`+.~".contains(c)
                })
                && !value.contains(": ")
                && !value.contains(" #")
                && !value.ends_with(':')
                && !value.contains(|c: char| c == '\t' || c.is_control())
                && !is_special_word(value);
            if !plain {
                return None;
            }
            value
        };
        map.insert(key.to_string(), Value::String(text.to_string()));
    }
    Some(map)
}

/// Words YAML reads as null or a boolean rather than text.
fn is_special_word(s: &str) -> bool {
    matches!(
        s,
        "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
    )
}

/// Top-level `key: value` lines, quotes around the value removed: what the frontmatter says when it is not YAML.
fn line_fields(yaml: &str) -> Map<String, Value> {
    let mut map = Map::new();
    for line in yaml.lines() {
        if line.starts_with([' ', '\t', '#', '-']) {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
            .unwrap_or(value);
        let key = key.trim();
        if !key.is_empty() && !map.contains_key(key) {
            map.insert(key.to_string(), Value::String(value.to_string()));
        }
    }
    map
}

impl Frontmatter {
    /// A scalar field as text (`String(x)` for numbers and booleans); `None` when missing, null, empty, or a list
    /// or mapping.
    pub fn string(&self, key: &str) -> Option<String> {
        let s = match self.fields.get(key)? {
            Value::String(s) => s.clone(),
            Value::Number(n) => dreb_js::number::json_number_to_string(n),
            Value::Bool(b) => b.to_string(),
            _ => return None,
        };
        (!s.is_empty()).then_some(s)
    }

    /// `fields[key] === true` (YAML `true`, `True` or `TRUE`; a quoted `"true"` is a string).
    pub fn is_true(&self, key: &str) -> bool {
        self.fields.get(key) == Some(&Value::Bool(true))
    }

    /// A list of scalars (a YAML sequence) as texts; `None` when the field is not a sequence.
    pub fn list(&self, key: &str) -> Option<Vec<String>> {
        let Value::Array(items) = self.fields.get(key)? else {
            return None;
        };
        Some(
            items
                .iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(dreb_js::number::json_number_to_string(n)),
                    Value::Bool(b) => Some(b.to_string()),
                    _ => None,
                })
                .collect(),
        )
    }

    /// Whether the frontmatter has `key` at its top level.
    pub fn has(&self, key: &str) -> bool {
        self.fields.contains_key(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn folded_and_literal_scalars() {
        let f = parse(
            "---\nname: review\ndescription: >-\n  Reviews code\n  for bugs.\nnotes: |\n  one\n  two\n---\n\nBody\n",
        );
        assert_eq!(f.error, None);
        assert_eq!(
            f.string("description").as_deref(),
            Some("Reviews code for bugs.")
        );
        assert_eq!(f.string("notes").as_deref(), Some("one\ntwo\n"));
        assert_eq!(f.string("name").as_deref(), Some("review"));
        assert_eq!(f.body, "Body");
        let g = parse("---\ndescription: >\n  folded\n  keeps the final newline\n---\n");
        assert_eq!(
            g.string("description").as_deref(),
            Some("folded keeps the final newline\n")
        );
    }

    #[test]
    fn quotes_comments_types_and_lists() {
        let f = parse(concat!(
            "---\r\n",
            "# a comment\r\n",
            "name: \"quoted: with colon\"\r\n",
            "description: 'it''s single' # trailing comment\r\n",
            "disable-model-invocation: true\r\n",
            "ui: \"true\"\r\n",
            "version: 1.50\r\n",
            "model:\r\n  - first\r\n  - second\r\n",
            "tools: [read, bash]\r\n",
            "empty:\r\n",
            "---\r\nbody",
        ));
        assert_eq!(f.error, None);
        assert_eq!(f.string("name").as_deref(), Some("quoted: with colon"));
        assert_eq!(f.string("description").as_deref(), Some("it's single"));
        assert!(f.is_true("disable-model-invocation"));
        assert!(!f.is_true("ui"), "a quoted true is a string");
        assert_eq!(f.string("ui").as_deref(), Some("true"));
        assert_eq!(f.string("version").as_deref(), Some("1.5"));
        assert_eq!(f.list("model").unwrap(), ["first", "second"]);
        assert_eq!(f.list("tools").unwrap(), ["read", "bash"]);
        assert_eq!(f.string("model"), None);
        assert!(f.has("empty") && f.string("empty").is_none());
        assert_eq!(f.body, "body");
    }

    #[test]
    fn yaml_1_1_spellings_are_strings() {
        let f = parse("---\na: yes\nb: on\nc: True\n---\n");
        assert_eq!(f.string("a").as_deref(), Some("yes"));
        assert_eq!(f.string("b").as_deref(), Some("on"));
        assert!(f.is_true("c"));
    }

    #[test]
    fn malformed_frontmatter_falls_back_to_lines_and_says_why() {
        // Not YAML: a plain scalar may not hold `: `. The reference throws here; the keys are kept instead.
        let f = parse(
            "---\nname: x\ndescription: Use when: the user asks\n  indented: skipped\n---\nBody",
        );
        assert!(f.error.is_some());
        assert_eq!(f.string("name").as_deref(), Some("x"));
        assert_eq!(
            f.string("description").as_deref(),
            Some("Use when: the user asks")
        );
        assert!(!f.has("indented"));
        assert_eq!(f.body, "Body");
        // Duplicate keys are an error, as in the `yaml` package; the first one wins in the fallback.
        let d = parse("---\na: 1\na: 2\n---\n");
        assert!(d.error.is_some());
        assert_eq!(d.string("a").as_deref(), Some("1"));
        // A list at the top level is not a mapping.
        let l = parse("---\n- a\n- b\n---\nrest");
        assert!(l.error.is_some() && l.fields.is_empty() && l.body == "rest");
    }

    /// Wherever the hand reading answers, it answers what the YAML parser does: on the bundled agent types and
    /// skills, and on every line shape near its edges.
    #[test]
    fn simple_fields_read_as_yaml_reads_them() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dreb-runtime/data");
        let mut texts = Vec::new();
        let mut stack = vec![data];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "md") {
                    texts.push(std::fs::read_to_string(&p).unwrap());
                }
            }
        }
        let bundled = texts.len();
        assert!(bundled >= 10, "{bundled} bundled files");
        let values = [
            "plain words",
            "with, commas — and dashes (3+)",
            "it's fine",
            "a: b",
            "a:b",
            "x #c",
            "x# c",
            "end:",
            "\"quoted: text # here\"",
            "\"with \\\" escape\"",
            "\"open",
            "'single'",
            "123",
            "1.5",
            "-1",
            "+1",
            ".5",
            "~",
            "null",
            "Null",
            "true",
            "False",
            "yes",
            "no",
            "on",
            "off",
            "TRUE",
            "[a, b]",
            "{a: 1}",
            "&anchor",
            "*alias",
            "!tag x",
            "|",
            ">",
            "%x",
            "@x",
            "`x`",
            "?x",
            "-x",
            ":x",
            ",x",
            "#x",
            "x\ty",
            "",
            "  padded  ",
            "0x1F",
            ".inf",
            ".nan",
            "2026-12-06",
            "12:30",
            "a \"b\" c",
            "trailing space ",
            "ok",
            "\u{1F600} emoji",
        ];
        let keys = [
            "name",
            "description",
            "x-y_z",
            "true",
            "1a",
            "a b",
            "\"k\"",
            "_k",
        ];
        for k in keys {
            for v in values {
                texts.push(format!("---\n{k}: {v}\n---\nbody"));
                texts.push(format!("---\nname: n\n# comment\n\n{k}:{v}\n---\nbody"));
                texts.push(format!("---\n{k}: {v}\n{k}: again\n---\nbody"));
                texts.push(format!("---\n{k}: {v}\n  indented: x\n---\nbody"));
            }
        }
        let mut answered = 0;
        for text in &texts {
            let normalised = text.replace("\r\n", "\n");
            let Some((yaml, _)) = split(&normalised) else {
                continue;
            };
            if let Some(fields) = simple_fields(yaml) {
                answered += 1;
                assert_eq!(Ok(fields), parse_yaml(yaml), "{yaml:?}");
            }
        }
        assert!(answered > bundled + 50, "{answered} answered by hand");
    }

    #[test]
    fn newlines_are_normalised_as_two_replaces_would_and_copied_only_with_a_cr() {
        for text in [
            "",
            "a\nb",
            "a\r\nb",
            "a\rb",
            "\r\r\n\n\r",
            "x\r\n\r\ny\r",
            "\r",
        ] {
            let expected = text.replace("\r\n", "\n").replace('\r', "\n");
            let got = normalize_newlines(text);
            assert_eq!(got, expected, "{text:?}");
            assert_eq!(matches!(got, Cow::Borrowed(_)), !text.contains('\r'));
        }
    }

    #[test]
    fn splitting_follows_the_reference() {
        let none = parse("no frontmatter\n---\n");
        assert!(!none.present && none.fields.is_empty());
        assert_eq!(none.body, "no frontmatter\n---\n");
        let unclosed = parse("---\nname: x\nbody");
        assert!(!unclosed.present);
        assert_eq!(unclosed.body, "---\nname: x\nbody");
        let empty = parse("---\n---\nbody");
        assert!(empty.present && empty.fields.is_empty() && empty.error.is_none());
        assert_eq!(empty.body, "body");
        let comments_only = parse("---\n# nothing\n---\n  body  \n");
        assert!(comments_only.fields.is_empty() && comments_only.error.is_none());
        assert_eq!(comments_only.body, "body");
        // A lone CR is a line end too.
        assert_eq!(parse("---\ra: b\r---\rx").string("a").as_deref(), Some("b"));
    }
}
