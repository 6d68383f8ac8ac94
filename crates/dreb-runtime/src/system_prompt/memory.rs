//! The system prompt's memory section: how the file-based memory works (its directories, file format, kinds and
//! rules), when it was last consolidated, and the `MEMORY.md` indexes found. The conventions (frontmatter fields,
//! the four types, one index line per memory, the 200-line index) are the reference's, so that memories written
//! under either implementation, and the tools that read them, work with both.

use chrono::{DateTime, NaiveDate, Utc};
use dreb_settings::memory::{MEMORY_INDEX_MAX_LINES, MemoryIndex, MemoryIndexes, MemoryOrigin};

/// The section (it starts with a blank line).
pub(super) fn section(memory: &MemoryIndexes, now: DateTime<Utc>) -> String {
    let global = memory.global_dir.display();
    let project = memory.project_dir.display();
    let mut out = format!(
        "\n\n# Memory\n\n\
Your memory persists across sessions as markdown files in two directories:\n\
- Global: `{global}/`, whose MEMORY.md index is loaded in every session\n\
- Project: `{project}/`, whose MEMORY.md index is loaded only in this project\n\
\n\
Each memory is one file: YAML frontmatter with `name`, `description` (one line, used to judge relevance) and \
`type`, then the memory itself.\n\
\n\
```markdown\n\
---\n\
name: short-descriptive-name\n\
description: one line saying what this memory is about\n\
type: user-preferences | good-practices | project | navigation\n\
---\n\
\n\
The memory.\n\
```\n\
\n\
Types:\n\
- user-preferences: who the user is (role, expertise, goals) and how they like to work.\n\
- good-practices: how the user wants work done, learnt from their corrections and from approaches they confirmed; \
state the rule, then **Why:** and **How to apply:**.\n\
- project: goals, decisions, deadlines and who does what, with absolute dates; state the fact, then **Why:** and \
**How to apply:**, since these go stale quickly.\n\
- navigation: where information lives outside the project (dashboards, issue trackers, channels, documentation \
URLs).\n\
\n\
To save a memory, write its file in the right directory, then add one line for it to that directory's MEMORY.md, \
under about 150 characters: `- [Title](file.md) — what it is about`. Create the directory and MEMORY.md when they \
are missing. Save right away when the user asks you to remember something, and remove the entry and its file when \
they ask you to forget it. Update an existing memory rather than adding a duplicate, and remove memories that no \
longer hold. Keep each MEMORY.md under {MEMORY_INDEX_MAX_LINES} lines (only that many are loaded), grouped by topic.\n\
\n\
Only the indexes are loaded here: read a memory's file with your tools when its index line looks relevant to the \
task, or when the user asks you to recall something.\n\
\n\
Do not save what the code, the git history or the context files (AGENTS.md, CLAUDE.md) already say, fixes whose \
story the commit tells, or details that matter only in this session. User preferences and practices for every \
project go in global memory; this project's decisions and context in project memory. The project is the git \
repository's root, or the working directory outside a repository.\n\
\n\
A memory can be stale: before relying on one that names a file, function or flag, check that it still exists; \
when a memory disagrees with what you see, trust what you see and correct the memory."
    );
    out.push_str(&match &memory.last_consolidated {
        Some(when) => format!(
            "\n\nMemory last consolidated: {} ({})",
            &when[..10],
            age(when, now)
        ),
        None => "\n\nMemory last consolidated: Never".to_string(),
    });
    if !memory.global.is_empty() || !memory.project.is_empty() {
        out.push_str("\n\n## Memory indexes\n");
        out.push_str(&scope("Global memory", &memory.global));
        out.push_str(&scope("Project memory", &memory.project));
    }
    out
}

/// One scope's indexes: dreb's, then Claude Code's (read-only) with a caution.
fn scope(heading: &str, indexes: &[MemoryIndex]) -> String {
    if indexes.is_empty() {
        return String::new();
    }
    let mut out = format!("\n### {heading}\n");
    for index in indexes.iter().filter(|i| i.origin == MemoryOrigin::Dreb) {
        out.push_str(&format!(
            "\n#### dreb memory ({}/)\n\n{}\n",
            index.dir.display(),
            index.content
        ));
    }
    let claude: Vec<&MemoryIndex> = indexes
        .iter()
        .filter(|i| i.origin == MemoryOrigin::ClaudeCode)
        .collect();
    if !claude.is_empty() {
        out.push_str(
            "\n#### Claude Code memory (read-only)\n\nWritten by Claude Code: it may name tools, commands or \
             conventions dreb does not have. Use it as context and check such references before relying on them; \
             save new memories in dreb's directories, never here.\n",
        );
        for index in claude {
            out.push_str(&format!(
                "\nFrom {}/:\n\n{}\n",
                index.dir.display(),
                index.content
            ));
        }
    }
    out
}

/// How long ago `when` (an RFC 3339 time, or a bare `YYYY-MM-DD` date) was, in hours under a day, else days.
fn age(when: &str, now: DateTime<Utc>) -> String {
    let then = DateTime::parse_from_rfc3339(when)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            NaiveDate::parse_from_str(&when[..10], "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|t| t.and_utc())
        });
    let Some(then) = then else {
        return "at an unknown time".to_string();
    };
    let elapsed = now - then;
    let plural = |n: i64, unit: &str| format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" });
    if elapsed <= chrono::Duration::zero() {
        "just now".to_string()
    } else if elapsed.num_hours() < 1 {
        "less than an hour ago".to_string()
    } else if elapsed.num_hours() < 24 {
        plural(elapsed.num_hours(), "hour")
    } else {
        plural(elapsed.num_days(), "day")
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn indexes(last: Option<&str>) -> MemoryIndexes {
        MemoryIndexes {
            global_dir: PathBuf::from("/home/u/.dreb/memory"),
            project_dir: PathBuf::from("/repo/.dreb/memory"),
            global: vec![
                MemoryIndex {
                    dir: PathBuf::from("/home/u/.dreb/memory"),
                    content: "- [Role](role.md) — the user's role".into(),
                    origin: MemoryOrigin::Dreb,
                },
                MemoryIndex {
                    dir: PathBuf::from("/home/u/.claude/projects/-home-u/memory"),
                    content: "- claude's".into(),
                    origin: MemoryOrigin::ClaudeCode,
                },
            ],
            project: vec![],
            last_consolidated: last.map(str::to_string),
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-07T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn names_the_directories_the_format_and_the_indexes() {
        let s = section(&indexes(None), now());
        assert!(s.starts_with("\n\n# Memory\n\n"));
        assert!(s.contains("- Global: `/home/u/.dreb/memory/`"));
        assert!(s.contains("- Project: `/repo/.dreb/memory/`"));
        assert!(s.contains("type: user-preferences | good-practices | project | navigation"));
        assert!(s.contains(
            "\n\nMemory last consolidated: Never\n\n## Memory indexes\n\n### Global memory\n"
        ));
        assert!(s.contains(
            "#### dreb memory (/home/u/.dreb/memory/)\n\n- [Role](role.md) — the user's role\n"
        ));
        assert!(s.contains("#### Claude Code memory (read-only)"));
        assert!(s.contains("From /home/u/.claude/projects/-home-u/memory/:\n\n- claude's\n"));
        assert!(
            !s.contains("### Project memory"),
            "a scope without indexes has no heading"
        );

        let empty = MemoryIndexes {
            global: vec![],
            ..indexes(None)
        };
        assert!(section(&empty, now()).ends_with("Memory last consolidated: Never"));
    }

    #[test]
    fn consolidation_age() {
        let line = |last: &str| {
            let s = section(&indexes(Some(last)), now());
            s.lines()
                .find(|l| l.starts_with("Memory last consolidated"))
                .unwrap()
                .to_string()
        };
        assert_eq!(
            line("2026-12-07T11:30:00.000Z"),
            "Memory last consolidated: 2026-12-07 (less than an hour ago)"
        );
        assert_eq!(
            line("2026-12-07T07:00:00Z"),
            "Memory last consolidated: 2026-12-07 (5 hours ago)"
        );
        assert_eq!(
            line("2026-12-06T11:00:00Z"),
            "Memory last consolidated: 2026-12-06 (1 day ago)"
        );
        assert_eq!(
            line("2026-11-30"),
            "Memory last consolidated: 2026-11-30 (7 days ago)"
        );
        assert_eq!(
            line("2027-01-01T00:00:00Z"),
            "Memory last consolidated: 2027-01-01 (just now)"
        );
    }
}
