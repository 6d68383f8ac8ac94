//! What kind of query this is, which decides how much each metric weighs in the ranking.

use std::sync::LazyLock;

use regex::Regex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryType {
    /// A code name (`AuthMiddleware`, `parse_file`): keyword and symbol matches weigh double.
    Identifier,
    /// A question or description: semantic similarity weighs double.
    NaturalLanguage,
    /// A path or file name (`src/auth/`, `config.yaml`): path matches weigh triple.
    PathLike,
}

static CAMEL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[a-z][A-Z]").unwrap());
static SNAKE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\w+_\w+").unwrap());
static SCREAMING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$").unwrap());
static PATH_SEP: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[/\\]").unwrap());
static DOTTED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\w+\.\w+\.\w+").unwrap());
static FILE_EXT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\.\w{1,5}$").unwrap());

pub fn classify(query: &str) -> QueryType {
    let q = query.trim();
    if q.is_empty() {
        return QueryType::NaturalLanguage;
    }
    if PATH_SEP.is_match(q) || DOTTED.is_match(q) {
        return QueryType::PathLike;
    }
    let words: Vec<&str> = q.split_whitespace().collect();
    if words.len() == 1 && FILE_EXT.is_match(q) {
        return QueryType::PathLike;
    }
    if words.len() == 1 {
        return QueryType::Identifier;
    }
    if words.len() <= 3
        && words
            .iter()
            .any(|w| CAMEL.is_match(w) || SNAKE.is_match(w) || SCREAMING.is_match(w))
    {
        return QueryType::Identifier;
    }
    QueryType::NaturalLanguage
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_like_the_reference() {
        assert_eq!(classify("src/auth/"), QueryType::PathLike);
        assert_eq!(classify("config.yaml"), QueryType::PathLike);
        assert_eq!(classify("a.b.c"), QueryType::PathLike);
        assert_eq!(classify("AuthMiddleware"), QueryType::Identifier);
        assert_eq!(classify("find parse_file usage"), QueryType::Identifier);
        assert_eq!(
            classify("where is rate limiting handled"),
            QueryType::NaturalLanguage
        );
        assert_eq!(classify("   "), QueryType::NaturalLanguage);
    }
}
