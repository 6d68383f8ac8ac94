//! The model routing guide the Dispatch Arbiter reads: a markdown file with a YAML frontmatter that must cover
//! exactly the live model scope, one `## Model: provider/id` section per model with every required subsection.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

pub const DEFAULT_GUIDE_PATH: &str = "~/.dreb/agent/model-routing-guide.md";
pub const MAX_GUIDE_BYTES: u64 = 128 * 1024;

const REQUIRED_SUBSECTIONS: [&str; 11] = [
    "Capabilities and thinking support",
    "Strengths",
    "Weaknesses and failure modes",
    "Recommended roles and tasks",
    "Discouraged roles and tasks",
    "Tool use, long context, and vision",
    "Latency and cost",
    "Local evidence",
    "External evidence and contrary findings",
    "Confidence and limitations",
    "Sources",
];

pub fn is_canonical_model_id(value: &str) -> bool {
    match value.find('/') {
        Some(slash) => {
            slash > 0 && slash < value.len() - 1 && !value.chars().any(char::is_whitespace)
        }
        None => false,
    }
}

/// Read and validate the guide; returns its full text.
pub fn load(configured: Option<&str>, cwd: &Path, scope: &[String]) -> Result<String, String> {
    let configured = configured
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_GUIDE_PATH);
    let path = crate::commands::resolve_entry(configured, cwd);
    let shown = path.display();
    let size = std::fs::metadata(&path)
        .map_err(|e| format!("Cannot read routing guide at {shown}: {e}"))?
        .len();
    if size > MAX_GUIDE_BYTES {
        return Err(format!(
            "Routing guide at {shown} is too large ({size} bytes; maximum {MAX_GUIDE_BYTES})."
        ));
    }
    let content = std::fs::read_to_string(&path)
        .map_err(|e| format!("Cannot read routing guide at {shown}: {e}"))?;
    if content.len() as u64 > MAX_GUIDE_BYTES {
        return Err(format!(
            "Routing guide at {shown} exceeds the maximum size after reading."
        ));
    }
    validate(&content, scope)?;
    Ok(content)
}

fn split_frontmatter(content: &str) -> Result<(Value, &str), String> {
    let normalised = content.strip_prefix('\u{feff}').unwrap_or(content);
    let Some(rest) = normalised
        .strip_prefix("---\n")
        .or_else(|| normalised.strip_prefix("---\r\n"))
    else {
        return Ok((Value::Object(Default::default()), normalised));
    };
    let end = rest
        .find("\n---")
        .ok_or("Routing guide YAML frontmatter is malformed: missing closing ---")?;
    let yaml = &rest[..end];
    let body = rest[end + 4..].trim_start_matches(['\r', '\n']);
    let value: Value = if yaml.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_saphyr::from_str(yaml)
            .map_err(|e| format!("Routing guide YAML frontmatter is malformed: {e}"))?
    };
    Ok((value, body))
}

fn compare_sets(actual: &[String], expected: &[String], label: &str) -> Result<(), String> {
    let a: BTreeSet<&str> = actual.iter().map(String::as_str).collect();
    let e: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    // Reported in the scope's and the guide's own order.
    let missing: Vec<&str> = expected
        .iter()
        .map(String::as_str)
        .filter(|v| !a.contains(v))
        .collect();
    let extra: Vec<&str> = actual
        .iter()
        .map(String::as_str)
        .filter(|v| !e.contains(v))
        .collect();
    if missing.is_empty() && extra.is_empty() {
        return Ok(());
    }
    let mut details = Vec::new();
    if !missing.is_empty() {
        details.push(format!("missing: {}", missing.join(", ")));
    }
    if !extra.is_empty() {
        details.push(format!("extra: {}", extra.join(", ")));
    }
    Err(format!(
        "{label} does not match the active model scope ({}).",
        details.join("; ")
    ))
}

fn is_iso_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    if b.len() < 20 || !s.ends_with('Z') {
        return false;
    }
    let shape = digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    let fraction = &s[19..s.len() - 1];
    let fraction_ok = fraction.is_empty()
        || (fraction.len() > 1
            && fraction.starts_with('.')
            && fraction[1..].bytes().all(|c| c.is_ascii_digit()));
    shape && fraction_ok && chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

fn is_date(s: &str) -> bool {
    s.len() == 10 && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok()
}

/// The text under each `## Model: <id>` heading, in order.
fn model_sections(body: &str) -> Result<Vec<(String, String)>, String> {
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in body.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if let Some(id) = trimmed.strip_prefix("## Model: ") {
            let id = id.trim().to_string();
            if !is_canonical_model_id(&id) {
                return Err(format!(
                    "Routing guide has invalid canonical model heading \"{id}\"."
                ));
            }
            if sections.iter().any(|(s, _)| *s == id) {
                return Err(format!(
                    "Routing guide has duplicate model heading \"{id}\"."
                ));
            }
            sections.push((id, String::new()));
        } else if let Some((_, text)) = sections.last_mut() {
            text.push_str(line);
        }
    }
    Ok(sections)
}

fn has_line(body: &str, line: &str) -> bool {
    body.lines().any(|l| l.trim_end() == line)
}

pub fn validate(content: &str, scope: &[String]) -> Result<(), String> {
    if scope.is_empty() {
        return Err("Dispatch arbitration requires a non-empty explicit live model scope. Start dreb with --models or configure enabledModels.".into());
    }
    if scope.iter().collect::<BTreeSet<_>>().len() != scope.len() {
        return Err("The active model scope contains duplicate canonical model IDs.".into());
    }
    if let Some(bad) = scope.iter().find(|id| !is_canonical_model_id(id)) {
        return Err(format!(
            "The active model scope contains invalid canonical ID \"{bad}\"."
        ));
    }
    let (front, body) = split_frontmatter(content)?;
    if front.get("schema_version").and_then(Value::as_f64) != Some(1.0) {
        return Err("Routing guide schema_version must be 1.".into());
    }
    if !front
        .get("generated_at")
        .and_then(Value::as_str)
        .is_some_and(is_iso_timestamp)
    {
        return Err("Routing guide generated_at must be a valid timestamp.".into());
    }
    let evidence = front.get("local_evidence").and_then(Value::as_str);
    if !matches!(evidence, Some("available" | "cold-start")) {
        return Err("Routing guide local_evidence must be \"available\" or \"cold-start\".".into());
    }
    let dirs_ok = front
        .get("analyzed_session_directories")
        .and_then(Value::as_array)
        .is_some_and(|a| {
            !a.is_empty() && a.iter().all(|v| v.as_str().is_some_and(|s| !s.is_empty()))
        });
    if !dirs_ok {
        return Err(
            "Routing guide analyzed_session_directories must be an array of strings.".into(),
        );
    }
    let Some(range) = front.get("session_date_range").and_then(Value::as_object) else {
        return Err("Routing guide frontmatter requires session_date_range.".into());
    };
    let mut bounds = Vec::new();
    for key in ["start", "end"] {
        match range.get(key) {
            Some(Value::Null) => bounds.push(None),
            Some(Value::String(s)) if is_date(s) => bounds.push(Some(s.clone())),
            _ => {
                return Err(format!(
                    "Routing guide session_date_range.{key} must be YYYY-MM-DD or null."
                ));
            }
        }
    }
    if evidence == Some("cold-start") && bounds.iter().any(Option::is_some) {
        return Err("Cold-start routing guides require null session date-range bounds.".into());
    }
    if evidence == Some("available") && bounds.iter().any(Option::is_none) {
        return Err(
            "Routing guides with local evidence require non-null session date-range bounds.".into(),
        );
    }
    let Some(covered) = front
        .get("covered_model_ids")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    else {
        return Err("Routing guide covered_model_ids must be a non-empty array.".into());
    };
    let mut covered_ids = Vec::new();
    for v in covered {
        match v.as_str().filter(|s| is_canonical_model_id(s)) {
            Some(s) => covered_ids.push(s.to_string()),
            None => {
                return Err(
                    "Routing guide covered_model_ids contains an invalid canonical model ID."
                        .into(),
                );
            }
        }
    }
    if covered_ids.iter().collect::<BTreeSet<_>>().len() != covered_ids.len() {
        return Err("Routing guide covered_model_ids contains duplicates.".into());
    }
    compare_sets(&covered_ids, scope, "Routing guide frontmatter coverage")?;
    if !has_line(body, "# Model Routing Guide") {
        return Err("Routing guide body requires the heading \"# Model Routing Guide\".".into());
    }
    if !has_line(body, "## Routing safeguards") {
        return Err("Routing guide body requires the section \"## Routing safeguards\".".into());
    }
    let sections = model_sections(body)?;
    let ids: Vec<String> = sections.iter().map(|(id, _)| id.clone()).collect();
    compare_sets(&ids, scope, "Routing guide model headings")?;
    for (id, section) in &sections {
        for sub in REQUIRED_SUBSECTIONS {
            let heading = format!("### {sub}");
            let mut lines = section.lines().skip_while(|l| l.trim_end() != heading);
            if lines.next().is_none() {
                return Err(format!(
                    "Routing guide model \"{id}\" is missing subsection \"{sub}\"."
                ));
            }
            let has_body = lines
                .take_while(|l| !l.starts_with("### ") && !l.starts_with("## "))
                .any(|l| !l.trim().is_empty());
            if !has_body {
                return Err(format!(
                    "Routing guide model \"{id}\" has empty subsection \"{sub}\"."
                ));
            }
        }
    }
    Ok(())
}

/// A guide that passes [`validate`] for `scope`.
#[cfg(test)]
pub fn sample(scope: &[&str]) -> String {
    let ids = scope
        .iter()
        .map(|s| format!("  - {s}"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut text = format!(
        "---\nschema_version: 1\ngenerated_at: \"2026-11-30T12:00:00Z\"\ncovered_model_ids:\n{ids}\n\
         local_evidence: cold-start\nanalyzed_session_directories:\n  - none\nsession_date_range:\n  start: null\n  \
         end: null\n---\n# Model Routing Guide\n\n## Routing safeguards\n\nPrefer the cheapest adequate model.\n"
    );
    for id in scope {
        text.push_str(&format!("\n## Model: {id}\n"));
        for sub in REQUIRED_SUBSECTIONS {
            text.push_str(&format!("\n### {sub}\n\nNotes on {sub}.\n"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_complete_guide_for_the_scope_is_valid() {
        let guide = sample(&["a/one", "b/two"]);
        assert_eq!(validate(&guide, &scope(&["a/one", "b/two"])), Ok(()));
    }

    #[test]
    fn coverage_must_match_the_scope_exactly() {
        let guide = sample(&["a/one"]);
        assert_eq!(
            validate(&guide, &scope(&["a/one", "b/two"])).unwrap_err(),
            "Routing guide frontmatter coverage does not match the active model scope (missing: b/two)."
        );
        assert!(
            validate(&guide, &[])
                .unwrap_err()
                .contains("non-empty explicit live model scope")
        );
    }

    #[test]
    fn structure_errors_are_named() {
        let guide = sample(&["a/one"]);
        let broken = guide.replace("schema_version: 1", "schema_version: 2");
        assert_eq!(
            validate(&broken, &scope(&["a/one"])).unwrap_err(),
            "Routing guide schema_version must be 1."
        );
        let broken = guide.replace("\nNotes on Sources.\n", "\n");
        assert_eq!(
            validate(&broken, &scope(&["a/one"])).unwrap_err(),
            "Routing guide model \"a/one\" has empty subsection \"Sources\"."
        );
        let broken = guide.replace("### Strengths\n", "");
        assert_eq!(
            validate(&broken, &scope(&["a/one"])).unwrap_err(),
            "Routing guide model \"a/one\" is missing subsection \"Strengths\"."
        );
        let broken = guide.replace("local_evidence: cold-start", "local_evidence: available");
        assert_eq!(
            validate(&broken, &scope(&["a/one"])).unwrap_err(),
            "Routing guides with local evidence require non-null session date-range bounds."
        );
    }
}
