//! Chunking of source code by its declarations (functions, methods, classes, structs, impls, exports, ...).
//!
//! The reference parses with tree-sitter; this build recognises declaration lines per language and finds where
//! each ends by bracket matching (brace languages, skipping strings and comments) or by indentation (Python,
//! GDScript). Like the reference it keeps the outermost declarations only (a class is one chunk with its
//! methods), scans inside blocks that are not declarations (`mod tests { fn .. }`, namespaces), and turns stretches
//! between declarations that hold more than three non-blank lines into `file` chunks. See ADR 0010.

use std::sync::LazyLock;

use regex::Regex;

use super::text::{split_lines, whole_file};
use crate::types::{Chunk, ChunkKind, FileType};

/// Gaps with more non-blank lines than this become their own chunk.
const MIN_GAP_LINES: usize = 3;

/// How a declaration's name is found on its first line.
#[derive(Clone, Copy)]
enum Name {
    /// The regex's first capture group (absent: anonymous).
    Capture,
    /// The implemented type of a Rust `impl` (after `for`, when there is one).
    RustImplType,
    /// The declared name of an `export` statement's function/class/interface/type/enum, if any.
    ExportDecl,
}

/// Whether the declaration needs a `{ .. }` body (C function definitions, struct and class specifiers), or may
/// also end at a `;` (TypeScript `type X = ..;`, `export const x = 1;`, Rust `struct Unit;`).
#[derive(Clone, Copy, PartialEq)]
enum Body {
    Required,
    Optional,
}

struct Rule {
    re: Regex,
    kind: ChunkKind,
    name: Name,
    body: Body,
}

fn rule(re: &str, kind: ChunkKind, name: Name, body: Body) -> Rule {
    Rule {
        re: Regex::new(re).expect("declaration pattern"),
        kind,
        name,
        body,
    }
}

const RUST_VIS: &str = r"(?:pub(?:\s*\([^)]*\))?\s+)?";

static RUST: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    use ChunkKind::*;
    vec![
        rule(
            &format!(
                r#"^{RUST_VIS}(?:default\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+"[^"]*"\s+)?fn\s+([A-Za-z_]\w*)"#
            ),
            Function,
            Name::Capture,
            Body::Optional,
        ),
        rule(
            r"^(?:unsafe\s+)?impl\b",
            Impl,
            Name::RustImplType,
            Body::Required,
        ),
        rule(
            &format!(r"^{RUST_VIS}struct\s+([A-Za-z_]\w*)"),
            Struct,
            Name::Capture,
            Body::Optional,
        ),
        rule(
            &format!(r"^{RUST_VIS}enum\s+([A-Za-z_]\w*)"),
            Enum,
            Name::Capture,
            Body::Required,
        ),
        rule(
            &format!(r"^{RUST_VIS}(?:unsafe\s+)?trait\s+([A-Za-z_]\w*)"),
            Interface,
            Name::Capture,
            Body::Optional,
        ),
    ]
});

fn js_rules(typescript: bool) -> Vec<Rule> {
    use ChunkKind::*;
    let mut rules = vec![
        rule(r"^export\b", Export, Name::ExportDecl, Body::Optional),
        rule(
            r"^(?:async\s+)?function\b\s*\*?\s*([A-Za-z_$][\w$]*)",
            Function,
            Name::Capture,
            Body::Required,
        ),
        rule(
            r"^(?:abstract\s+)?class\s+([A-Za-z_$][\w$]*)",
            Class,
            Name::Capture,
            Body::Required,
        ),
        rule(
            r"^(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:\([^)]*\)|[A-Za-z_$][\w$]*)\s*(?::\s*[^=]+)?=>",
            Function,
            Name::Capture,
            Body::Optional,
        ),
    ];
    if typescript {
        rules.push(rule(
            r"^(?:declare\s+)?interface\s+([A-Za-z_$][\w$]*)",
            Interface,
            Name::Capture,
            Body::Required,
        ));
        rules.push(rule(
            r"^(?:declare\s+)?type\s+([A-Za-z_$][\w$]*)\s*(?:<[^=]*>)?\s*=",
            TypeAlias,
            Name::Capture,
            Body::Optional,
        ));
    }
    rules
}

static TS: LazyLock<Vec<Rule>> = LazyLock::new(|| js_rules(true));
static JS: LazyLock<Vec<Rule>> = LazyLock::new(|| js_rules(false));

static GO: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    use ChunkKind::*;
    vec![
        rule(
            r"^func\s*\([^)]*\)\s*([A-Za-z_]\w*)",
            Method,
            Name::Capture,
            Body::Required,
        ),
        rule(
            r"^func\s+([A-Za-z_]\w*)",
            Function,
            Name::Capture,
            Body::Required,
        ),
        rule(
            r"^type\s+([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?\S",
            Struct,
            Name::Capture,
            Body::Optional,
        ),
    ]
});

const JAVA_MODS: &str =
    r"(?:(?:public|private|protected|abstract|final|static|sealed|non-sealed|strictfp)\s+)*";

static JAVA: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    use ChunkKind::*;
    vec![
        rule(
            &format!(r"^{JAVA_MODS}class\s+([A-Za-z_]\w*)"),
            Class,
            Name::Capture,
            Body::Required,
        ),
        rule(
            &format!(r"^{JAVA_MODS}interface\s+([A-Za-z_]\w*)"),
            Interface,
            Name::Capture,
            Body::Required,
        ),
    ]
});

fn c_rules(cpp: bool) -> Vec<Rule> {
    use ChunkKind::*;
    let mut rules = vec![
        rule(
            r"^(?:typedef\s+)?struct(?:\s+([A-Za-z_]\w*))?\s*(?:\{|$)",
            Struct,
            Name::Capture,
            Body::Required,
        ),
        // A definition: specifiers and a declarator on one line, the parameter list opening on it; not a
        // statement keyword, not a preprocessor line. Prototypes (ending in `;`) are rejected by Body::Required.
        rule(
            r"^(?:[A-Za-z_][\w:<>,\*&\s]*?[\s\*&])?\**([A-Za-z_~][\w:~]*)\s*\([^;]*$",
            Function,
            Name::Capture,
            Body::Required,
        ),
    ];
    if cpp {
        rules.insert(
            1,
            rule(
                r"^(?:template\s*<[^>]*>\s*)?class\s+([A-Za-z_]\w*)",
                Class,
                Name::Capture,
                Body::Required,
            ),
        );
    }
    rules
}

static C: LazyLock<Vec<Rule>> = LazyLock::new(|| c_rules(false));
static CPP: LazyLock<Vec<Rule>> = LazyLock::new(|| c_rules(true));

static PYTHON: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    use ChunkKind::*;
    vec![
        rule(
            r"^(?:async\s+)?def\s+([A-Za-z_]\w*)",
            Function,
            Name::Capture,
            Body::Required,
        ),
        rule(
            r"^class\s+([A-Za-z_]\w*)",
            Class,
            Name::Capture,
            Body::Required,
        ),
    ]
});

static GDSCRIPT: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    use ChunkKind::*;
    vec![
        rule(
            r"^(?:static\s+)?func\s+([A-Za-z_]\w*)",
            Function,
            Name::Capture,
            Body::Required,
        ),
        rule(
            r"^class\s+([A-Za-z_]\w*)",
            Class,
            Name::Capture,
            Body::Required,
        ),
        rule(
            r"^enum(?:\s+([A-Za-z_]\w*))?\s*\{",
            Enum,
            Name::Capture,
            Body::Required,
        ),
    ]
});

static C_STATEMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:if|for|while|switch|else|do|return|case|sizeof|goto|typedef|using|namespace|extern|#)\b").unwrap()
});

static EXPORT_DECL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^export\s+(?:default\s+)?(?:declare\s+)?(?:async\s+)?(?:abstract\s+)?(?:function\s*\*?|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)",
    )
    .unwrap()
});

fn rules_for(file_type: FileType) -> &'static [Rule] {
    match file_type {
        FileType::TypeScript | FileType::Tsx => &TS,
        FileType::JavaScript => &JS,
        FileType::Go => &GO,
        FileType::Rust => &RUST,
        FileType::Java => &JAVA,
        FileType::C => &C,
        FileType::Cpp => &CPP,
        FileType::Python => &PYTHON,
        FileType::GdScript => &GDSCRIPT,
        _ => &[],
    }
}

fn indented(file_type: FileType) -> bool {
    matches!(file_type, FileType::Python | FileType::GdScript)
}

/// A declaration found on a line: its kind and name.
fn match_declaration(line: &str, file_type: FileType) -> Option<(&'static Rule, Option<String>)> {
    let trimmed = line.trim_start();
    if matches!(file_type, FileType::C | FileType::Cpp)
        && C_STATEMENT.is_match(trimmed)
        && !trimmed.starts_with("typedef struct")
    {
        return None;
    }
    let rule = rules_for(file_type)
        .iter()
        .find(|r| r.re.is_match(trimmed))?;
    let name = match rule.name {
        Name::Capture => rule
            .re
            .captures(trimmed)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str().to_string()),
        Name::RustImplType => rust_impl_type(trimmed),
        Name::ExportDecl => EXPORT_DECL.captures(trimmed).map(|c| c[1].to_string()),
    };
    Some((rule, name))
}

/// `impl<T: X> Trait for Foo<T> where ..` → `Foo<T>`; `impl Foo {` → `Foo`.
fn rust_impl_type(line: &str) -> Option<String> {
    let rest = line
        .trim_start_matches("unsafe")
        .trim_start()
        .strip_prefix("impl")?;
    let mut rest = rest.trim_start();
    if rest.starts_with('<') {
        let mut depth = 0;
        let mut cut = rest.len();
        for (i, ch) in rest.char_indices() {
            match ch {
                '<' => depth += 1,
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        cut = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = rest[cut..].trim_start();
    }
    let end = rest
        .find('{')
        .into_iter()
        .chain(rest.find(" where"))
        .min()
        .unwrap_or(rest.len());
    let head = rest[..end].trim();
    let ty = match head.rfind(" for ") {
        Some(at) => head[at + 5..].trim(),
        None => head,
    };
    (!ty.is_empty()).then(|| ty.to_string())
}

/// Where a brace-language declaration starting on `start` ends: the line that closes its first `{`, or (when the
/// body is optional) the line of a `;` met at depth zero before any `{`. `None`: not a declaration after all.
fn brace_block_end(lines: &[&str], start: usize, file_type: FileType, body: Body) -> Option<usize> {
    let js = matches!(
        file_type,
        FileType::TypeScript | FileType::Tsx | FileType::JavaScript
    );
    let mut depth: i64 = 0;
    let mut opened = false;
    let mut in_block_comment = false;
    for (i, line) in lines.iter().enumerate().skip(start) {
        let chars: Vec<char> = line.chars().collect();
        let mut c = 0;
        while c < chars.len() {
            let ch = chars[c];
            if in_block_comment {
                if ch == '*' && chars.get(c + 1) == Some(&'/') {
                    in_block_comment = false;
                    c += 1;
                }
                c += 1;
                continue;
            }
            match ch {
                '/' if chars.get(c + 1) == Some(&'/') => break,
                '/' if chars.get(c + 1) == Some(&'*') => {
                    in_block_comment = true;
                    c += 1;
                }
                '"' | '`' => c = skip_quoted(&chars, c, ch),
                '\'' if js => c = skip_quoted(&chars, c, ch),
                // A char literal ('x', '\n', '\u{..}'); a Rust lifetime ('a) is left alone.
                '\'' => {
                    if chars.get(c + 1) == Some(&'\\') {
                        c = skip_quoted(&chars, c, ch);
                    } else if chars.get(c + 2) == Some(&'\'') {
                        c += 2;
                    }
                }
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => {
                    depth -= 1;
                    if opened && depth <= 0 {
                        return Some(i);
                    }
                }
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ';' if depth <= 0 && !opened => {
                    return (body == Body::Optional).then_some(i);
                }
                _ => {}
            }
            c += 1;
        }
    }
    // Unterminated: to the end of the file, if a body had begun.
    (opened || body == Body::Optional).then(|| lines.len() - 1)
}

/// The index of the closing quote (or the line's last character when the string runs on).
fn skip_quoted(chars: &[char], open: usize, quote: char) -> usize {
    let mut c = open + 1;
    while c < chars.len() && chars[c] != quote {
        if chars[c] == '\\' {
            c += 1;
        }
        c += 1;
    }
    c.min(chars.len().saturating_sub(1))
}

fn indent_of(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// Where an indentation-language declaration ends: its header (which may span lines inside brackets) and then
/// every line that is blank, more indented, or inside a triple-quoted string; trailing blank lines excluded.
fn indent_block_end(lines: &[&str], start: usize) -> usize {
    let base = indent_of(lines[start]);
    // The header ends where its brackets close.
    let mut depth: i64 = 0;
    let mut i = start;
    loop {
        for ch in lines[i].chars() {
            match ch {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                '#' => break,
                _ => {}
            }
        }
        if depth <= 0 || i + 1 >= lines.len() {
            break;
        }
        i += 1;
    }
    let mut last = i;
    let mut in_string: Option<&str> = None;
    for (j, line) in lines.iter().enumerate().skip(i + 1) {
        let trimmed = line.trim();
        if let Some(q) = in_string {
            last = j;
            if trimmed.contains(q) {
                in_string = None;
            }
            continue;
        }
        if trimmed.is_empty() {
            continue;
        }
        if indent_of(line) <= base {
            break;
        }
        last = j;
        for q in ["\"\"\"", "'''"] {
            if trimmed.matches(q).count() % 2 == 1 {
                in_string = Some(q);
            }
        }
    }
    last
}

/// Chunk a source file by its outermost declarations, plus substantial gaps between them.
pub fn chunk_code(content: &str, file_path: &str, file_type: FileType) -> Vec<Chunk> {
    let lines = split_lines(content);
    let mut regions: Vec<Chunk> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((rule, name)) = match_declaration(lines[i], file_type) else {
            i += 1;
            continue;
        };
        let end = if indented(file_type) {
            Some(indent_block_end(&lines, i))
        } else {
            brace_block_end(&lines, i, file_type, rule.body)
        };
        let Some(end) = end else {
            i += 1;
            continue;
        };
        regions.push(Chunk {
            file_path: file_path.to_string(),
            start_line: i + 1,
            end_line: end + 1,
            kind: rule.kind,
            name,
            content: lines[i..=end].join("\n").trim_start().to_string(),
            file_type,
        });
        i = end + 1;
    }
    if regions.is_empty() {
        return vec![whole_file(content, file_path, file_type)];
    }
    let gaps = gaps(&regions, &lines, file_path, file_type);
    regions.extend(gaps);
    regions.sort_by_key(|c| c.start_line);
    regions
}

fn gaps(regions: &[Chunk], lines: &[&str], file_path: &str, file_type: FileType) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut cursor = 1;
    let bounds = regions
        .iter()
        .map(|r| (r.start_line, r.end_line))
        .chain(std::iter::once((lines.len() + 1, lines.len())));
    for (start, end) in bounds {
        if start > cursor {
            let gap = &lines[cursor - 1..start - 1];
            if gap.iter().filter(|l| !l.trim().is_empty()).count() > MIN_GAP_LINES {
                out.push(Chunk {
                    file_path: file_path.to_string(),
                    start_line: cursor,
                    end_line: start - 1,
                    kind: ChunkKind::File,
                    name: None,
                    content: gap.join("\n"),
                    file_type,
                });
            }
        }
        cursor = end + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(chunks: &[Chunk]) -> Vec<(&'static str, Option<&str>, usize, usize)> {
        chunks
            .iter()
            .map(|c| (c.kind.as_str(), c.name.as_deref(), c.start_line, c.end_line))
            .collect()
    }

    #[test]
    fn rust_items_outermost_with_impl_types_and_nested_modules() {
        let src = r#"use std::fmt;

/// Docs.
pub fn parse<'a>(s: &'a str) -> &'a str {
    let c = '{';
    s
}

impl<T: Clone> fmt::Display for Wrapper<T> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "}}")
    }
}

pub struct Unit;

enum Color { Red, Green }

mod tests {
    #[test]
    fn works() {
        assert!(true);
    }
}
"#;
        let c = chunk_code(src, "src/lib.rs", FileType::Rust);
        assert_eq!(
            summary(&c),
            vec![
                ("function", Some("parse"), 4, 7),
                ("impl", Some("Wrapper<T>"), 9, 13),
                ("struct", Some("Unit"), 15, 15),
                ("enum", Some("Color"), 17, 17),
                ("function", Some("works"), 21, 23),
            ]
        );
        assert!(c[1].content.contains("fn fmt"));
    }

    #[test]
    fn typescript_exports_classes_arrows_and_gaps() {
        let src = r#"import { a } from "./a.js";
import { b } from "./b.js";
import { c } from "./c.js";
import { d } from "./d.js";

export function handle(req: Request): Response {
  const s = "}";
  return new Response(s);
}

class Limiter {
  take() { return 1; }
}

const double = (x: number) => {
  return x * 2;
};

type Id = string;
export const VERSION = 3;
"#;
        let c = chunk_code(src, "src/a.ts", FileType::TypeScript);
        assert_eq!(
            summary(&c),
            vec![
                ("file", None, 1, 5),
                ("export", Some("handle"), 6, 9),
                ("class", Some("Limiter"), 11, 13),
                ("function", Some("double"), 15, 17),
                ("type_alias", Some("Id"), 19, 19),
                ("export", None, 20, 20),
            ]
        );
    }

    #[test]
    fn python_blocks_end_by_indentation() {
        let src = "import os\n\nclass Store:\n    \"\"\"Docs\nat column zero\n\"\"\"\n    def get(self):\n        return 1\n\n\ndef helper(\n    a,\n):\n    return a\n\nx = 1\n";
        let c = chunk_code(src, "s.py", FileType::Python);
        assert_eq!(
            summary(&c),
            vec![
                ("class", Some("Store"), 3, 8),
                ("function", Some("helper"), 11, 14)
            ]
        );
    }

    #[test]
    fn go_methods_functions_and_types() {
        let src = "package main\n\ntype Server struct {\n\taddr string\n}\n\nfunc (s *Server) Start() error {\n\treturn nil\n}\n\nfunc main() {\n\tprintln(\"{\")\n}\n";
        let c = chunk_code(src, "main.go", FileType::Go);
        assert_eq!(
            summary(&c),
            vec![
                ("struct", Some("Server"), 3, 5),
                ("method", Some("Start"), 7, 9),
                ("function", Some("main"), 11, 13),
            ]
        );
    }

    #[test]
    fn c_definitions_not_prototypes() {
        let src = "#include \"util.h\"\n\nint add(int a, int b);\n\nstatic int\nadd_impl(int a,\n         int b)\n{\n    return a + b;\n}\n\nstruct point {\n    int x;\n};\n\nint main(void) {\n    if (add(1, 2)) { return 0; }\n    return 1;\n}\n";
        let c = chunk_code(src, "m.c", FileType::C);
        let s = summary(&c);
        assert!(s.contains(&("struct", Some("point"), 12, 14)), "{s:?}");
        assert!(s.contains(&("function", Some("main"), 16, 19)), "{s:?}");
        assert!(s.contains(&("function", Some("add_impl"), 6, 10)), "{s:?}");
        assert!(
            !s.iter().any(|(_, n, l, _)| *n == Some("add") && *l == 3),
            "{s:?}"
        );
    }

    #[test]
    fn no_declarations_is_one_file_chunk() {
        let c = chunk_code("x = 1\ny = 2\n", "a.py", FileType::Python);
        assert_eq!(summary(&c), vec![("file", None, 1, 3)]);
    }
}
