//! Rust identifiers for wire names: snake-case fields, PascalCase variants, keyword escapes, de-duplication.

use std::collections::HashSet;

use dreb_codegen_core::ir::{pascal_case, snake_case};
use proc_macro2::{Ident, Span};

const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// The snake-case field (or method) name for a wire name: keywords become raw identifiers (`r#type`), except
/// those that cannot be raw (`self`, `super`, `crate`, `Self`), which get a trailing underscore.
pub fn field_name(wire: &str) -> String {
    let mut s = snake_case(wire);
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s = format!("f_{s}");
    }
    if ["self", "super", "crate", "Self", "_"].contains(&s.as_str()) {
        format!("{s}_")
    } else if KEYWORDS.contains(&s.as_str()) {
        format!("r#{s}")
    } else {
        s
    }
}

/// A `PascalCase` identifier for a wire value (enum values, tags, message names).
pub fn variant_name(wire: &str) -> String {
    let mut s = pascal_case(wire);
    s.retain(|c| c.is_ascii_alphanumeric() || c == '_');
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s = format!("V{s}");
    }
    if s == "Self" { "Self_".into() } else { s }
}

/// Makes names unique by appending `2`, `3`, ... to repeats (order kept); `reserved` names are taken already.
pub fn dedupe(names: Vec<String>, reserved: &[&str]) -> Vec<String> {
    let mut seen: HashSet<String> = reserved.iter().map(|s| s.to_string()).collect();
    names
        .into_iter()
        .map(|n| {
            let mut cand = n.clone();
            let mut i = 2;
            while !seen.insert(cand.clone()) {
                cand = format!("{n}{i}");
                i += 1;
            }
            cand
        })
        .collect()
}

/// The token for a name made by this module (`r#type` becomes a raw identifier).
pub fn ident(name: &str) -> Ident {
    match name.strip_prefix("r#") {
        Some(raw) => Ident::new_raw(raw, Span::call_site()),
        None => Ident::new(name, Span::call_site()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(field_name("type"), "r#type");
        assert_eq!(field_name("self"), "self_");
        assert_eq!(field_name("fullOutputPath"), "full_output_path");
        assert_eq!(variant_name("anthropic-messages"), "AnthropicMessages");
        assert_eq!(variant_name("set_editor_text"), "SetEditorText");
        assert_eq!(variant_name("5m"), "V5m");
        assert_eq!(dedupe(vec!["A".into(), "A".into()], &[]), ["A", "A2"]);
        assert_eq!(ident("r#type").to_string(), "r#type");
    }
}
