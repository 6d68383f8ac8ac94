//! The bundled skills through the binary: without `DREB_PACKAGE_DIR` their files are written under the agent dir
//! (`<agentDir>/package/<version>/skills/<name>/SKILL.md`), so the path the agent is given (`get_commands`,
//! `/skill:` expansion, the `skill` tool) is one it can read; a changed copy is put back; with `DREB_PACKAGE_DIR`
//! the paths are reported there and nothing is written.

mod common;

use std::path::{Path, PathBuf};

use common::{Env, result_text, tool_end};
use serde_json::{Value, json};

const SKILLS: [&str; 8] = [
    "mach6-implement",
    "mach6-issue",
    "mach6-plan",
    "mach6-publish",
    "mach6-push",
    "mach6-review",
    "model-routing-guide",
    "telegram-send",
];

fn skills_dir(agent_dir: &Path) -> PathBuf {
    agent_dir
        .join("package")
        .join(env!("CARGO_PKG_VERSION"))
        .join("skills")
}

/// `dreb --mode rpc` with the package dir left to its default (an empty `DREB_PACKAGE_DIR` counts as unset).
fn spawn_default(env: &Env) -> common::Dreb {
    env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
        ],
        &[("DREB_PACKAGE_DIR", "")],
    )
}

fn skill_paths(commands: &Value) -> Vec<String> {
    commands["data"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["sourceInfo"]["source"] == "builtin")
        .map(|c| c["sourceInfo"]["path"].as_str().unwrap().to_string())
        .collect()
}

fn get_commands(dreb: &mut common::Dreb) -> Value {
    dreb.exchange(&json!({"id": "c", "type": "get_commands"}))
        .into_iter()
        .rfind(|f| f["type"] == "response")
        .unwrap()
}

#[test]
fn the_reported_skill_paths_exist_and_hold_the_complete_skills() {
    let env = Env::new();
    let dir = skills_dir(&env.agent_dir());
    assert!(!dir.exists());
    let mut dreb = spawn_default(&env);
    let paths = skill_paths(&get_commands(&mut dreb));
    // telegram-send is for the Telegram front end only; the other seven are listed.
    let expected: Vec<String> = SKILLS[..7]
        .iter()
        .map(|n| dir.join(n).join("SKILL.md").display().to_string())
        .collect();
    assert_eq!(paths, expected);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    let mut total = 0;
    for name in SKILLS {
        let text = std::fs::read_to_string(dir.join(name).join("SKILL.md")).unwrap();
        assert!(text.starts_with(&format!("---\nname: {name}\n")), "{text}");
        let body = text.split("\n---\n").nth(1).unwrap();
        total += body.len();
    }
    // Complete workflows, not summaries (the reference's bodies are about 15k characters together).
    assert!(total > 25_000, "{total}");
}

#[test]
fn the_agent_can_read_the_skill_it_was_pointed_at() {
    // Relative to the cwd (`<home>/project`), the agent dir is `../.dreb/agent`.
    let relative = format!(
        "../.dreb/agent/package/{}/skills/mach6-plan/SKILL.md",
        env!("CARGO_PKG_VERSION")
    );
    let env = Env::with_scenario(
        serde_json::from_value(json!({"turns": [
            {"when": {"lastUserContains": "Open the plan skill", "afterToolResult": false},
             "toolCalls": [{"name": "read", "arguments": {"path": relative}}]},
            {"when": {"afterToolResult": true}, "repeat": true, "text": ["ok"]}
        ]}))
        .unwrap(),
    );
    let mut dreb = spawn_default(&env);
    // The expansion of /skill:mach6-plan names the materialised file as its location.
    dreb.exchange(&json!({"id": "s", "type": "prompt", "message": "/skill:mach6-plan 42"}));
    let location = skills_dir(&env.agent_dir()).join("mach6-plan/SKILL.md");
    let expansion = env.mock.requests()[0].body.to_string();
    assert!(
        expansion.contains(&format!(
            "<skill name=\\\"mach6-plan\\\" location=\\\"{}\\\">",
            location.display()
        )),
        "{expansion}"
    );
    assert!(
        expansion.contains("**Input:** 42 (an issue number)"),
        "{expansion}"
    );

    let frames =
        dreb.exchange(&json!({"id": "r", "type": "prompt", "message": "Open the plan skill"}));
    let end = tool_end(&frames);
    assert_eq!(end["isError"], false, "{end}");
    let text = result_text(&end);
    assert!(text.starts_with("---\nname: mach6-plan\n"), "{text}");
    assert!(text.contains("<!-- mach6-plan -->"), "{text}");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_changed_copy_is_put_back_at_start_up() {
    let env = Env::new();
    let file = skills_dir(&env.agent_dir()).join("mach6-push/SKILL.md");
    let (code, _, _) = spawn_default(&env).finish();
    assert_eq!(code, 0);
    let original = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, "edited").unwrap();
    std::fs::remove_file(skills_dir(&env.agent_dir()).join("mach6-review/SKILL.md")).unwrap();
    let (code, _, _) = spawn_default(&env).finish();
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    assert!(
        skills_dir(&env.agent_dir())
            .join("mach6-review/SKILL.md")
            .is_file()
    );
}

#[test]
fn with_a_package_dir_the_paths_are_reported_there_and_nothing_is_written() {
    let env = Env::new();
    let package = env.home.path().join("installed-package");
    std::fs::create_dir_all(&package).unwrap();
    let mut dreb = env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
        ],
        &[("DREB_PACKAGE_DIR", &package.to_string_lossy())],
    );
    let paths = skill_paths(&get_commands(&mut dreb));
    assert_eq!(
        paths[0],
        package
            .join("skills/mach6-implement/SKILL.md")
            .display()
            .to_string()
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_dir(&package).unwrap().count(), 0);
    assert!(!env.agent_dir().join("package").exists());
}
