//! A small syntax highlighter for the HTML export: comments, strings, numbers, keywords and literals for the
//! languages coding sessions show most (Rust, JS/TS, Python, shell, JSON, Go, C/C++, Java, TOML/YAML, diff).
//! Output is HTML-escaped text with `<span class="…">` tokens.

use super::escape::escape_into;

struct Lang {
    line_comments: &'static [&'static str],
    block_comment: Option<(&'static str, &'static str)>,
    quotes: &'static [char],
    keywords: &'static [&'static str],
    literals: &'static [&'static str],
}

const RUST: Lang = Lang {
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"'],
    keywords: &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "extern", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
        "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "type",
        "unsafe", "use", "where", "while",
    ],
    literals: &["true", "false", "None", "Some", "Ok", "Err"],
};

const JS: Lang = Lang {
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '\'', '`'],
    keywords: &[
        "async",
        "await",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "default",
        "delete",
        "do",
        "else",
        "export",
        "extends",
        "finally",
        "for",
        "from",
        "function",
        "if",
        "import",
        "in",
        "instanceof",
        "interface",
        "let",
        "new",
        "of",
        "return",
        "static",
        "switch",
        "throw",
        "try",
        "type",
        "typeof",
        "var",
        "void",
        "while",
        "yield",
    ],
    literals: &["true", "false", "null", "undefined", "this"],
};

const PYTHON: Lang = Lang {
    line_comments: &["#"],
    block_comment: None,
    quotes: &['"', '\''],
    keywords: &[
        "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
        "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
        "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with",
        "yield",
    ],
    literals: &["True", "False", "None", "self"],
};

const SHELL: Lang = Lang {
    line_comments: &["#"],
    block_comment: None,
    quotes: &['"', '\''],
    keywords: &[
        "if", "then", "else", "elif", "fi", "for", "while", "do", "done", "case", "esac", "in",
        "function", "return", "export", "local", "echo", "cd", "sudo", "set", "unset",
    ],
    literals: &["true", "false"],
};

const JSON: Lang = Lang {
    line_comments: &[],
    block_comment: None,
    quotes: &['"'],
    keywords: &[],
    literals: &["true", "false", "null"],
};

const GO: Lang = Lang {
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '`', '\''],
    keywords: &[
        "break",
        "case",
        "chan",
        "const",
        "continue",
        "default",
        "defer",
        "else",
        "fallthrough",
        "for",
        "func",
        "go",
        "goto",
        "if",
        "import",
        "interface",
        "map",
        "package",
        "range",
        "return",
        "select",
        "struct",
        "switch",
        "type",
        "var",
    ],
    literals: &["true", "false", "nil", "iota"],
};

const C_LIKE: Lang = Lang {
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '\''],
    keywords: &[
        "auto",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "default",
        "do",
        "else",
        "enum",
        "extends",
        "extern",
        "final",
        "for",
        "if",
        "implements",
        "import",
        "include",
        "namespace",
        "new",
        "package",
        "private",
        "protected",
        "public",
        "return",
        "sizeof",
        "static",
        "struct",
        "switch",
        "template",
        "this",
        "throw",
        "try",
        "typedef",
        "union",
        "using",
        "virtual",
        "void",
        "volatile",
        "while",
        "int",
        "char",
        "long",
        "double",
        "float",
        "bool",
        "unsigned",
    ],
    literals: &["true", "false", "null", "NULL", "nullptr"],
};

const CONFIG: Lang = Lang {
    line_comments: &["#"],
    block_comment: None,
    quotes: &['"', '\''],
    keywords: &[],
    literals: &["true", "false", "null", "yes", "no"],
};

fn lang_for(name: &str) -> Option<&'static Lang> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "rs" | "rust" => &RUST,
        "js" | "javascript" | "jsx" | "mjs" | "cjs" | "ts" | "typescript" | "tsx" => &JS,
        "py" | "python" => &PYTHON,
        "sh" | "bash" | "shell" | "zsh" | "console" | "shellsession" => &SHELL,
        "json" | "jsonl" | "jsonc" => &JSON,
        "go" | "golang" => &GO,
        "c" | "h" | "cpp" | "c++" | "cc" | "hpp" | "cxx" | "java" | "kt" | "kotlin" | "cs"
        | "csharp" | "swift" => &C_LIKE,
        "toml" | "yaml" | "yml" | "ini" | "cfg" | "conf" | "dockerfile" | "makefile" => &CONFIG,
        _ => return None,
    })
}

/// The language name for a file path's extension (for highlighting file contents).
pub fn lang_from_path(path: &str) -> Option<&'static str> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    if name.eq_ignore_ascii_case("Dockerfile") || name.eq_ignore_ascii_case("Makefile") {
        return Some("conf");
    }
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    let known = [
        "rs", "js", "jsx", "mjs", "cjs", "ts", "tsx", "py", "sh", "bash", "zsh", "json", "jsonl",
        "go", "c", "h", "cpp", "cc", "hpp", "java", "kt", "cs", "swift", "toml", "yaml", "yml",
        "ini", "cfg", "conf", "diff", "patch",
    ];
    known.iter().find(|k| **k == ext).copied()
}

fn push_span(out: &mut String, class: &str, text: &str) {
    out.push_str("<span class=\"");
    out.push_str(class);
    out.push_str("\">");
    escape_into(text, out);
    out.push_str("</span>");
}

/// Highlights `code` in `lang` (escaped plain text for unknown languages).
pub fn highlight(code: &str, lang: Option<&str>) -> String {
    let mut out = String::with_capacity(code.len() + code.len() / 4);
    match lang.map(|l| l.trim().to_ascii_lowercase()) {
        Some(l) if l == "diff" || l == "patch" => highlight_diff(code, &mut out),
        Some(l) => match lang_for(&l) {
            Some(spec) => highlight_with(code, spec, &mut out),
            None => escape_into(code, &mut out),
        },
        None => escape_into(code, &mut out),
    }
    out
}

fn highlight_diff(code: &str, out: &mut String) {
    for (i, line) in code.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let class = if line.starts_with("+++") || line.starts_with("---") || line.starts_with("@@")
        {
            Some("hl-meta")
        } else if line.starts_with('+') {
            Some("hl-add")
        } else if line.starts_with('-') {
            Some("hl-del")
        } else {
            None
        };
        match class {
            Some(c) => push_span(out, c, line),
            None => escape_into(line, out),
        }
    }
}

fn highlight_with(code: &str, lang: &Lang, out: &mut String) {
    let mut rest = code;
    let mut plain_start = 0usize; // start of pending plain text in `code`
    let base = code.as_ptr() as usize;
    let flush = |out: &mut String, from: usize, to: usize| escape_into(&code[from..to], out);
    while let Some(c) = rest.chars().next() {
        let pos = rest.as_ptr() as usize - base;
        // Comments.
        if let Some(marker) = lang.line_comments.iter().find(|m| rest.starts_with(**m)) {
            // `#` only starts a shell/config comment at a word boundary (not in `a#b` or `$#`).
            let boundary =
                *marker != "#" || pos == 0 || code[..pos].ends_with(|ch: char| ch.is_whitespace());
            if boundary {
                let end = rest.find('\n').unwrap_or(rest.len());
                flush(out, plain_start, pos);
                push_span(out, "hl-com", &rest[..end]);
                rest = &rest[end..];
                plain_start = pos + end;
                continue;
            }
        }
        if let Some((open, close)) = lang.block_comment
            && rest.starts_with(open)
        {
            let end = rest[open.len()..]
                .find(close)
                .map_or(rest.len(), |e| open.len() + e + close.len());
            flush(out, plain_start, pos);
            push_span(out, "hl-com", &rest[..end]);
            rest = &rest[end..];
            plain_start = pos + end;
            continue;
        }
        // Strings (with backslash escapes; an unterminated string ends at the line end, except backticks).
        if lang.quotes.contains(&c) {
            let mut end = rest.len();
            let mut escaped = false;
            for (i, ch) in rest.char_indices().skip(1) {
                if escaped {
                    escaped = false;
                } else if ch == '\\' {
                    escaped = true;
                } else if ch == c {
                    end = i + ch.len_utf8();
                    break;
                } else if ch == '\n' && c != '`' {
                    end = i;
                    break;
                }
            }
            flush(out, plain_start, pos);
            push_span(out, "hl-str", &rest[..end]);
            rest = &rest[end..];
            plain_start = pos + end;
            continue;
        }
        // Numbers (not inside identifiers).
        let prev_ident = code[..pos]
            .chars()
            .next_back()
            .is_some_and(|p| p.is_alphanumeric() || p == '_');
        if c.is_ascii_digit() && !prev_ident {
            let end = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.' || ch == '_'))
                .unwrap_or(rest.len());
            flush(out, plain_start, pos);
            push_span(out, "hl-num", &rest[..end]);
            rest = &rest[end..];
            plain_start = pos + end;
            continue;
        }
        // Words: keywords and literals.
        if (c.is_alphabetic() || c == '_') && !prev_ident {
            let end = rest
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            let word = &rest[..end];
            let class = if lang.keywords.contains(&word) {
                Some("hl-kw")
            } else if lang.literals.contains(&word) {
                Some("hl-lit")
            } else {
                None
            };
            if let Some(class) = class {
                flush(out, plain_start, pos);
                push_span(out, class, word);
                plain_start = pos + end;
            }
            rest = &rest[end..];
            continue;
        }
        rest = &rest[c.len_utf8()..];
    }
    flush(out, plain_start, code.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlights_and_escapes() {
        let h = highlight("fn main() { let s = \"<a>\"; // hi & bye\n}", Some("rust"));
        assert_eq!(
            h,
            "<span class=\"hl-kw\">fn</span> main() { <span class=\"hl-kw\">let</span> s = \
             <span class=\"hl-str\">&quot;&lt;a&gt;&quot;</span>; <span class=\"hl-com\">// hi &amp; bye</span>\n}"
        );
        assert_eq!(highlight("<b>", None), "&lt;b&gt;");
        assert_eq!(
            highlight("x1 = 42", Some("python")),
            "x1 = <span class=\"hl-num\">42</span>"
        );
        assert_eq!(
            highlight("echo $# # note", Some("sh")),
            "<span class=\"hl-kw\">echo</span> $# <span class=\"hl-com\"># note</span>"
        );
        assert_eq!(
            highlight("-a\n+b", Some("diff")),
            "<span class=\"hl-del\">-a</span>\n<span class=\"hl-add\">+b</span>"
        );
        assert_eq!(
            highlight("{\"k\": true}", Some("json")),
            "{<span class=\"hl-str\">&quot;k&quot;</span>: <span class=\"hl-lit\">true</span>}"
        );
        assert_eq!(lang_from_path("src/main.rs"), Some("rs"));
        assert_eq!(lang_from_path("README"), None);
    }
}
