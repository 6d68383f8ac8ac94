//! A lenient second look at an input line strict JSON parsing rejected, to find the request's `id` and say
//! clearly what is wrong.
//!
//! JSON allows two things a Rust `String`/`f64` cannot hold: lone UTF-16 surrogate escapes (`"\ud800"`, a high
//! surrogate not followed by a low one, a low one on its own) and numbers outside the `f64` range (`1e400`). Such a
//! line is rejected with a parse error, but the rest of it is often a well-formed command whose `id` the host waits
//! on. [`recover`] rewrites exactly those two things (a lone surrogate escape to `\ufffd`, an out-of-range number to
//! `0`) in one linear pass, parses the result, and takes a top-level `id` if it is a string or a number. Anything
//! else wrong with the line (truncated, garbage) makes the rewritten line fail too: then nothing is recovered.
//!
//! Only run on lines strict parsing rejected, so valid input pays nothing.

use serde_json::Value;

/// What the lenient pass found in a line.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    /// The top-level `id` (a string or a number), if the line parses once its lone surrogates and out-of-range
    /// numbers are replaced.
    pub id: Option<Value>,
    /// A description of the first lone surrogate or out-of-range number, when the rewritten line parses (so that
    /// is what is wrong with it); `None` otherwise (the strict parser's message is the better one then).
    pub message: Option<String>,
}

/// The first problem met while rewriting.
#[derive(Debug)]
enum Problem {
    Surrogate { escape: String, column: usize },
    Number { text: String, column: usize },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Surrogate { escape, column } => write!(
                f,
                "lone UTF-16 surrogate escape `{escape}` in a string at column {column} (a surrogate escape must be \
                 a high surrogate \\ud800-\\udbff immediately followed by a low surrogate \\udc00-\\udfff)"
            ),
            Problem::Number { text, column } => {
                write!(f, "number out of range `{text}` at column {column}")
            }
        }
    }
}

/// Looks at a line strict parsing rejected: see the module doc.
pub fn recover(line: &str) -> Recovered {
    let Some((rewritten, problem)) = rewrite(line) else {
        return Recovered {
            id: None,
            message: None,
        };
    };
    let Ok(value) = serde_json::from_str::<Value>(&rewritten) else {
        return Recovered {
            id: None,
            message: None,
        };
    };
    let id = match value {
        Value::Object(mut obj) => match obj.shift_remove("id") {
            Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
            _ => None,
        },
        _ => None,
    };
    Recovered {
        id,
        message: Some(problem.to_string()),
    }
}

fn hex4(b: &[u8]) -> Option<u16> {
    if b.len() < 4 {
        return None;
    }
    let s = std::str::from_utf8(&b[..4]).ok()?;
    if !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(s, 16).ok()
}

/// Column (1-based, in characters) of byte offset `at`.
fn column(line: &str, at: usize) -> usize {
    line[..at].chars().count() + 1
}

/// The line with lone surrogate escapes and out-of-range numbers replaced, and the first one found; `None` when
/// there is nothing to replace (the line fails for another reason). Linear in the line's length.
fn rewrite(line: &str) -> Option<(String, Problem)> {
    let b = line.as_bytes();
    let mut out: Vec<u8> = Vec::new();
    let mut copied = 0; // bytes of `line` before this are in `out`
    let mut first: Option<Problem> = None;
    let mut i = 0;
    let mut in_string = false;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'"' => {
                    in_string = false;
                    i += 1;
                }
                b'\\' if b.get(i + 1) == Some(&b'u') => {
                    let Some(unit) = hex4(&b[i + 2..]) else {
                        i += 2; // a malformed escape: left for the parser to reject
                        continue;
                    };
                    let paired = (0xD800..0xDC00).contains(&unit)
                        && b.get(i + 6) == Some(&b'\\')
                        && b.get(i + 7) == Some(&b'u')
                        && hex4(&b[i + 8..]).is_some_and(|low| (0xDC00..0xE000).contains(&low));
                    if paired {
                        i += 12;
                    } else if (0xD800..0xE000).contains(&unit) {
                        out.extend_from_slice(&b[copied..i]);
                        out.extend_from_slice(b"\\ufffd");
                        if first.is_none() {
                            first = Some(Problem::Surrogate {
                                escape: line[i..i + 6].to_string(),
                                column: column(line, i),
                            });
                        }
                        i += 6;
                        copied = i;
                    } else {
                        i += 6;
                    }
                }
                b'\\' => i += 2,
                _ => i += 1,
            }
        } else if c == b'"' {
            in_string = true;
            i += 1;
        } else if c == b'-' || c.is_ascii_digit() {
            let start = i;
            while i < b.len() && matches!(b[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                i += 1;
            }
            let text = &line[start..i];
            if text.parse::<f64>().is_ok_and(|n| n.is_infinite()) {
                out.extend_from_slice(&b[copied..start]);
                out.push(b'0');
                copied = i;
                if first.is_none() {
                    first = Some(Problem::Number {
                        text: text.to_string(),
                        column: column(line, start),
                    });
                }
            }
        } else {
            i += 1;
        }
    }
    let problem = first?;
    out.extend_from_slice(&b[copied.min(b.len())..]);
    // Only ASCII replaced at ASCII boundaries: still UTF-8.
    Some((String::from_utf8(out).ok()?, problem))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(line: &str) -> Option<Value> {
        assert!(
            serde_json::from_str::<Value>(line).is_err(),
            "strictly valid: {line}"
        );
        recover(line).id
    }

    #[test]
    fn lone_surrogates_are_replaced_and_the_id_recovered() {
        assert_eq!(
            id(r#"{"id":"a","type":"prompt","message":"\ud800"}"#),
            Some(json!("a"))
        );
        assert_eq!(id(r#"{"id":"a","message":"\udc00"}"#), Some(json!("a")));
        assert_eq!(id(r#"{"id":"a","message":"x\ud800y"}"#), Some(json!("a")));
        assert_eq!(
            id(r#"{"id":"a","message":"\ud800\u0041"}"#),
            Some(json!("a"))
        );
        assert_eq!(
            id(r#"{"id":"a","message":"\ud800\ud800"}"#),
            Some(json!("a"))
        );
        assert_eq!(id(r#"{"id":"a","message":"\uDBFF"}"#), Some(json!("a")));
        // Before the id key, in the id itself, in a nested key.
        assert_eq!(
            id(r#"{"message":"\ud800","id":"b","type":"prompt"}"#),
            Some(json!("b"))
        );
        assert_eq!(
            id(r#"{"id":"c\udc00","type":"get_state"}"#),
            Some(json!("c\u{fffd}"))
        );
        assert_eq!(id(r#"{"x":{"\ud800":1},"id":7}"#), Some(json!(7)));
        // A valid pair next to a lone one stays a pair.
        let got = recover(r#"{"id":"d","m":"\ud83d\ude00\ud800"}"#);
        assert_eq!(got.id, Some(json!("d")));
        assert!(
            got.message
                .unwrap()
                .contains("`\\ud800` in a string at column 28")
        );
    }

    #[test]
    fn out_of_range_numbers_are_replaced_and_the_id_recovered() {
        assert_eq!(
            id(r#"{"id":"n","type":"set_thinking_budget","x":1e400}"#),
            Some(json!("n"))
        );
        assert_eq!(id(r#"{"x":-1E+400,"id":"m"}"#), Some(json!("m")));
        assert_eq!(id(r#"{"x":[1e309, 2],"id":5}"#), Some(json!(5)));
        let got = recover(r#"{"id":"n","x":1e400}"#);
        assert_eq!(
            got.message.as_deref(),
            Some("number out of range `1e400` at column 15")
        );
    }

    #[test]
    fn the_message_names_the_first_problem() {
        let got = recover(r#"{"id":"a","message":"\ud800"}"#);
        assert_eq!(
            got.message.as_deref(),
            Some(
                "lone UTF-16 surrogate escape `\\ud800` in a string at column 22 (a surrogate escape must be a high \
                 surrogate \\ud800-\\udbff immediately followed by a low surrogate \\udc00-\\udfff)"
            )
        );
    }

    #[test]
    fn only_string_or_number_ids_at_the_top_level() {
        assert_eq!(id(r#"{"id":null,"m":"\ud800"}"#), None);
        assert_eq!(id(r#"{"id":{"a":1},"m":"\ud800"}"#), None);
        assert_eq!(id(r#"[{"id":"a"},"\ud800"]"#), None);
        assert_eq!(id(r#"{"x":{"id":"inner"},"m":"\ud800"}"#), None);
        assert_eq!(id(r#""\ud800""#), None);
    }

    #[test]
    fn nothing_is_recovered_from_other_broken_lines() {
        for line in [
            "",
            "this is not json",
            r#"{"id":"a","type":"prompt""#,
            r#"{"id":"a","type":"prompt","message":"\ud800""#,
            r#"{"id":"a","m":"\ud800"} trailing"#,
            r#"{"id":"a","m":"\x"}"#,
            r#"{"id":"a","m":"\u12"}"#,
            r#"{"id":"a","m":"\ud800\u12"}"#,
            r#"{"id":"a" "m":1e400}"#,
            r#"{"id":"a","m":"\"}"#,
            "{\"id\":\"a\",\"m\":\"\\ud800",
            "\\",
            "\"\\u",
            "-",
        ] {
            assert_eq!(
                recover(line),
                Recovered {
                    id: None,
                    message: None
                },
                "{line}"
            );
        }
    }

    #[test]
    fn escaped_quotes_and_backslashes_do_not_confuse_the_scanner() {
        // `\\ud800` is a backslash followed by text, not an escape; `"1e400"` is a string.
        assert!(serde_json::from_str::<Value>(r#"{"a":"\\ud800","b":"1e400"}"#).is_ok());
        assert_eq!(
            id(r#"{"a":"\\ud800\"","b":"1e400","id":"q","m":"\udfff"}"#),
            Some(json!("q"))
        );
        let got = recover(r#"{"a":"\\ud800\"","b":"1e400","id":"q","m":"\udfff"}"#);
        assert!(got.message.unwrap().contains("`\\udfff`"));
    }

    #[test]
    fn linear_on_a_long_line() {
        let mut line = String::from(r#"{"id":"big","m":""#);
        line.push_str(&"\\ud800".repeat(200_000));
        line.push_str(r#"","n":["#);
        line.push_str(&"1e400,".repeat(200_000));
        line.push_str("1]}");
        let start = std::time::Instant::now();
        assert_eq!(id(&line), Some(json!("big")));
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }
}
