//! Model selection (`resolve_model`, `cycle_model`, `get_state.scopedModels`), discovery (`get_commands`,
//! `get_resources`, `list_agent_types`, `reload`), `get_performance_stats` and the performance log, `get_daily_cost`
//! and the buddy, driven through the real dispatch path with real files in temporary agent dirs. Reference
//! transcripts live in `tests/fixtures/discovery/` (copied from the recorded fixtures); spec examples are read from
//! `protocol/rpc.yaml`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use dreb_ai::Providers;
use dreb_ai::scenario::Scenario;
use dreb_mock_llm::MockLlm;
use dreb_protocol::{Dispatched, dispatch};
use dreb_runtime::{Runtime, RuntimeOptions};

mod common;
use common::SpecSink;
use serde_json::{Value, json};
use tempfile::TempDir;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/discovery");

/// One HOME for the whole test binary (user agents and `~/.agents/skills` are HOME-based); set before any runtime
/// starts, never changed afterwards.
fn home() -> &'static Path {
    static HOME: OnceLock<TempDir> = OnceLock::new();
    HOME.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: set once, before any runtime (or other thread reading the environment) of this binary starts.
        unsafe {
            std::env::set_var("HOME", dir.path());
            std::env::set_var("USER", "tester");
        }
        dir
    })
    .path()
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(FIXTURES).join(name)).unwrap()
}

fn jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The fixture's models.json (two keyed, non-reasoning mock models) with its base URLs pointing at `base`.
fn mock_models_json(base: &str) -> String {
    fixture("models.json").replace("http://127.0.0.1:18431", base)
}

/// A spec example's request and response, found by command and request id in `protocol/rpc.yaml`.
fn spec_example(command: &str, id: &str) -> (Value, Value) {
    let spec = std::fs::read_to_string(dreb_protocol::SPEC_FILE).unwrap();
    let lines: Vec<&str> = spec.lines().collect();
    let wanted_id = format!("\"id\": \"{id}\"");
    let wanted_type = format!("\"type\": \"{command}\"");
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if let Some(req) = t.strip_prefix("request: ")
            && req.contains(&wanted_id)
            && req.contains(&wanted_type)
        {
            let resp = lines[i + 1].trim().strip_prefix("response: ").unwrap();
            return (
                serde_json::from_str(req).unwrap(),
                serde_json::from_str(resp).unwrap(),
            );
        }
    }
    panic!("no spec example {command}/{id}");
}

struct H {
    rt: Runtime,
    sink: Arc<SpecSink>,
    agent_dir: TempDir,
    cwd: TempDir,
}

/// Frames written after a test's last read are checked here (not while a failing test is already unwinding).
impl Drop for H {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.sink.assert_spec();
        }
    }
}

impl H {
    fn agent(&self) -> &Path {
        self.agent_dir.path()
    }

    fn cwd(&self) -> &Path {
        self.cwd.path()
    }

    /// Send one command line through the real dispatch and return the response frame as JSON.
    async fn call(&self, line: Value) -> Value {
        match dispatch(&self.rt, &line.to_string()).await {
            Dispatched::Response(r) => common::checked_response(serde_json::to_value(&r).unwrap()),
            Dispatched::Input(_) => panic!("not a command: {line}"),
        }
    }

    async fn data(&self, line: Value) -> Value {
        let r = self.call(line.clone()).await;
        assert_eq!(r["success"], true, "{line} -> {r}");
        r["data"].clone()
    }
}

/// A runtime in fresh temp dirs; `prepare` writes files into (agent dir, cwd) before start, `configure` edits the
/// options.
fn start(prepare: impl FnOnce(&Path, &Path), configure: impl FnOnce(&mut RuntimeOptions)) -> H {
    home();
    let agent_dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    prepare(agent_dir.path(), cwd.path());
    let mut options = RuntimeOptions {
        cwd: cwd.path().to_path_buf(),
        agent_dir: agent_dir.path().to_path_buf(),
        session_dir: Some(agent_dir.path().join("sessions").join("--test--")),
        ..Default::default()
    };
    configure(&mut options);
    let sink = Arc::new(SpecSink::default());
    let rt = Runtime::start(options, sink.clone()).unwrap();
    H {
        rt,
        sink,
        agent_dir,
        cwd,
    }
}

/// The two mock models of the reference fixtures (no server behind them).
fn start_mock(configure: impl FnOnce(&mut RuntimeOptions)) -> H {
    start(
        |agent, _| {
            std::fs::write(
                agent.join("models.json"),
                mock_models_json("http://127.0.0.1:9"),
            )
            .unwrap()
        },
        configure,
    )
}

fn faux(scenario: Value) -> impl FnOnce(&mut RuntimeOptions) {
    move |o| {
        o.provider = Some("faux".into());
        o.providers = Some(
            Providers::new()
                .with_faux_scenario(serde_json::from_value::<Scenario>(scenario).unwrap()),
        );
    }
}

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

// ---------------------------------------------------------------------------------------------------------------
// the system prompt

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// The system prompt shows the memory indexes (dreb's and Claude Code's), the repository's state, the UI and the
/// model, which a model change replaces.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_prompt_shows_memory_the_repository_the_ui_and_the_model() {
    let h = start(
        |root, cwd| {
            write(
                root.join(".dreb/agent/models.json"),
                &mock_models_json("http://127.0.0.1:9"),
            );
            write(
                root.join(".dreb/memory/MEMORY.md"),
                "- [Role](role.md) — who the user is\n",
            );
            write(
                cwd.join(".dreb/memory/MEMORY.md"),
                "- [Plan](plan.md) — the release plan\n",
            );
            let claude_name = cwd.to_string_lossy().replace(['/', '_'], "-");
            write(
                home()
                    .join(".claude/projects")
                    .join(claude_name)
                    .join("memory/MEMORY.md"),
                "- Claude Code's note\n",
            );
            git(cwd, &["init", "-q", "-b", "trunk"]);
            git(cwd, &["add", "-A"]);
            git(cwd, &["commit", "-q", "-m", "First commit"]);
        },
        |o| {
            o.agent_dir = o.agent_dir.join(".dreb/agent");
            o.ui = Some("rpc".into());
        },
    );
    // Start-up's discovery has run once a command has read the resources.
    h.data(json!({"type": "get_commands"})).await;
    let prompt = || h.rt.agent().with_state(|s| s.system_prompt.clone());
    let p = prompt();
    let global = h.agent().join(".dreb/memory");
    let project = h.cwd().join(".dreb/memory");
    for needle in [
        format!("- Global: `{}/`", global.display()),
        format!("- Project: `{}/`", project.display()),
        "Memory last consolidated: Never".to_string(),
        format!(
            "#### dreb memory ({}/)\n\n- [Role](role.md) — who the user is\n",
            global.display()
        ),
        format!(
            "#### dreb memory ({}/)\n\n- [Plan](plan.md) — the release plan\n",
            project.display()
        ),
        "#### Claude Code memory (read-only)".to_string(),
        "- Claude Code's note".to_string(),
        "## Project state (true at session start only)\n\n- Branch: `trunk`\n- Status: clean\n"
            .to_string(),
        " — First commit`\n".to_string(),
        "\nUI: RPC (a program drives this session and consumes your output)".to_string(),
    ] {
        assert!(p.contains(&needle), "{needle:?} is not in:\n{p}");
    }
    let model = h.data(json!({"type": "get_state"})).await["model"].clone();
    let (provider, id) = (
        model["provider"].as_str().unwrap(),
        model["id"].as_str().unwrap(),
    );
    assert!(
        p.ends_with(&format!("\nYou are running on: {provider}/{id}")),
        "{p}"
    );

    let (other_provider, other_id) = if id == "mock-claude" {
        ("mock", "mock-model")
    } else {
        ("mock-anthropic", "mock-claude")
    };
    h.data(json!({"type": "set_model", "provider": other_provider, "modelId": other_id}))
        .await;
    let changed = prompt();
    assert!(changed.ends_with(&format!(
        "\nYou are running on: {other_provider}/{other_id}"
    )));
    assert_eq!(changed.matches("You are running on:").count(), 1);
    assert_eq!(
        changed.replace(
            &format!("{other_provider}/{other_id}"),
            &format!("{provider}/{id}")
        ),
        p,
        "only the model line changed"
    );

    // A session switched to starts afresh: the repository's state and the consolidation record are read again.
    std::fs::write(h.cwd().join("notes.txt"), "one").unwrap();
    git(h.cwd(), &["add", "notes.txt"]);
    git(h.cwd(), &["commit", "-q", "-m", "Second commit"]);
    std::fs::write(h.cwd().join("notes.txt"), "two").unwrap();
    write(global.join(".dream-last-run"), "2026-12-01T08:00:00.000Z");
    let session = h.data(json!({"type": "get_state"})).await["sessionFile"].clone();
    h.data(json!({"type": "switch_session", "sessionPath": session}))
        .await;
    let switched = prompt();
    for needle in [
        "- Status: 1 uncommitted change\n",
        " — Second commit`\n",
        "Memory last consolidated: 2026-12-01 (",
    ] {
        assert!(
            switched.contains(needle),
            "{needle:?} is not in:\n{switched}"
        );
    }
    assert!(switched.ends_with(&format!(
        "\nYou are running on: {other_provider}/{other_id}"
    )));
}

// ---------------------------------------------------------------------------------------------------------------
// resolve_model

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolve_model_applies_the_model_matching_rules_without_switching() {
    let h = start_mock(|_| {});
    let before = h.data(json!({"type": "get_state"})).await["model"].clone();

    let exact = h
        .data(json!({"type": "resolve_model", "pattern": "mock-anthropic/mock-claude"}))
        .await;
    assert_eq!(exact["model"]["provider"], "mock-anthropic");
    assert_eq!(exact["model"]["id"], "mock-claude");
    assert!(exact.get("warning").is_none(), "{exact}");
    // The full registry Model, as the recorded set_model answer shows it.
    let recorded = jsonl(&fixture("runtime_setters.out.jsonl"));
    let r5 = recorded.iter().find(|f| f["id"] == "r5").unwrap();
    let mut expected = r5["data"]["model"].clone();
    expected["baseUrl"] = json!("http://127.0.0.1:9");
    assert_eq!(exact["model"], expected);

    // Fuzzy name match and a valid thinking suffix.
    let fuzzy = h
        .data(json!({"type": "resolve_model", "pattern": "Anthropic wire:high"}))
        .await;
    assert_eq!(fuzzy["model"]["id"], "mock-claude");
    assert!(fuzzy.get("warning").is_none());

    // An invalid suffix resolves the prefix with the reference's warning.
    let warned = h
        .data(json!({"type": "resolve_model", "pattern": "mock-model:turbo"}))
        .await;
    assert_eq!(warned["model"]["id"], "mock-model");
    assert_eq!(
        warned["warning"],
        "Invalid thinking level \"turbo\" in pattern \"mock-model:turbo\". Using default instead."
    );

    // No match: data is null (spec example, byte for byte).
    let (req, resp) = spec_example_by_pattern("no-such-model-xyz");
    assert_eq!(h.call(req).await, resp);

    // Nothing switched.
    assert_eq!(h.data(json!({"type": "get_state"})).await["model"], before);
}

/// A spec example without an id, found by its `pattern`.
fn spec_example_by_pattern(pattern: &str) -> (Value, Value) {
    let spec = std::fs::read_to_string(dreb_protocol::SPEC_FILE).unwrap();
    let lines: Vec<&str> = spec.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.contains("request: ") && l.contains(&format!("\"pattern\": \"{pattern}\"")))
        .unwrap();
    let req = serde_json::from_str(lines[i].trim().strip_prefix("request: ").unwrap()).unwrap();
    let resp =
        serde_json::from_str(lines[i + 1].trim().strip_prefix("response: ").unwrap()).unwrap();
    (req, resp)
}

// ---------------------------------------------------------------------------------------------------------------
// cycle_model and scoped models

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cycle_model_without_scope_matches_the_recorded_transcript_and_persists_the_default() {
    let h = start_mock(|_| {});
    assert_eq!(
        h.data(json!({"type": "get_state"})).await["model"]["id"],
        "mock-model"
    );

    let got = h.call(json!({"id": "r5", "type": "cycle_model"})).await;
    let recorded = jsonl(&fixture("runtime_setters.out.jsonl"));
    let mut expected = recorded.iter().find(|f| f["id"] == "r5").unwrap().clone();
    expected["data"]["model"]["baseUrl"] = json!("http://127.0.0.1:9");
    assert_eq!(got, expected);

    // Persisted like set_model (and, as in the recording, no thinking level for non-reasoning models).
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(h.agent().join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        settings,
        json!({"defaultProvider": "mock-anthropic", "defaultModel": "mock-claude"})
    );
    assert_eq!(
        h.data(json!({"type": "get_state"})).await["model"]["id"],
        "mock-claude"
    );

    // Forward only, wrapping around.
    let back = h.data(json!({"type": "cycle_model"})).await;
    assert_eq!(
        (back["model"]["id"].clone(), back["isScoped"].clone()),
        (json!("mock-model"), json!(false))
    );
    assert_eq!(
        h.data(json!({"type": "get_state"})).await["scopedModels"],
        json!([])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cycle_model_is_null_with_a_single_candidate() {
    // One available model (the spec example, byte for byte).
    let h = start(
        |agent, _| {
            let mut models: Value =
                serde_json::from_str(&mock_models_json("http://127.0.0.1:9")).unwrap();
            models["providers"]
                .as_object_mut()
                .unwrap()
                .remove("mock-anthropic");
            std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
        },
        |_| {},
    );
    let (req, resp) = spec_example("cycle_model", "c2");
    assert_eq!(h.call(req).await, resp);

    // A scope of one model: null too, although two models are available; the session stays on the scoped model
    // it started with.
    let h = start_mock(|o| o.models = Some("mock-claude".into()));
    assert_eq!(h.data(json!({"type": "cycle_model"})).await, Value::Null);
    assert_eq!(
        h.data(json!({"type": "get_state"})).await["model"]["id"],
        "mock-claude"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scoped_models_come_from_the_models_flag_and_drive_cycling() {
    let h = start_mock(|o| o.models = Some("mock-claude:high, mock-model".into()));
    let state = h.data(json!({"type": "get_state"})).await;
    assert_eq!(
        state["scopedModels"],
        json!([
            {"provider": "mock-anthropic", "id": "mock-claude", "name": "Mock (Anthropic wire)", "reasoning": false, "thinkingLevel": "high"},
            {"provider": "mock", "id": "mock-model", "name": "Mock (OpenAI wire)", "reasoning": false},
        ])
    );
    // With a scope and no saved default, the session starts on the first scoped model.
    assert_eq!(state["model"]["id"], "mock-claude");
    // Forward from index 0 is mock-model, then it wraps to mock-claude; the pinned `high` is clamped to the
    // non-reasoning model.
    let next = h.data(json!({"type": "cycle_model"})).await;
    assert_eq!(
        (next["model"]["id"].clone(), next["isScoped"].clone()),
        (json!("mock-model"), json!(true))
    );
    let next = h.data(json!({"type": "cycle_model"})).await;
    assert_eq!(
        (
            next["model"]["id"].clone(),
            next["thinkingLevel"].clone(),
            next["isScoped"].clone()
        ),
        (json!("mock-claude"), json!("off"), json!(true))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_prefers_a_saved_default_inside_the_scope() {
    let h = start(
        |agent, _| {
            std::fs::write(
                agent.join("models.json"),
                mock_models_json("http://127.0.0.1:9"),
            )
            .unwrap();
            std::fs::write(
                agent.join("settings.json"),
                json!({"defaultProvider": "mock", "defaultModel": "mock-model"}).to_string(),
            )
            .unwrap();
        },
        |o| o.models = Some("mock-claude, mock-model".into()),
    );
    assert_eq!(
        h.data(json!({"type": "get_state"})).await["model"]["id"],
        "mock-model"
    );

    // A saved default outside the scope gives way to the first scoped model.
    let h = start(
        |agent, _| {
            std::fs::write(
                agent.join("models.json"),
                mock_models_json("http://127.0.0.1:9"),
            )
            .unwrap();
            std::fs::write(
                agent.join("settings.json"),
                json!({"defaultProvider": "mock", "defaultModel": "mock-model"}).to_string(),
            )
            .unwrap();
        },
        |o| o.models = Some("mock-claude".into()),
    );
    assert_eq!(
        h.data(json!({"type": "get_state"})).await["model"]["id"],
        "mock-claude"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scoped_models_fall_back_to_settings_enabled_models() {
    let h = start(
        |agent, _| {
            std::fs::write(
                agent.join("models.json"),
                mock_models_json("http://127.0.0.1:9"),
            )
            .unwrap();
            std::fs::write(
                agent.join("settings.json"),
                json!({"enabledModels": ["mock-anthropic/*"]}).to_string(),
            )
            .unwrap();
        },
        |_| {},
    );
    let state = h.data(json!({"type": "get_state"})).await;
    assert_eq!(
        state["scopedModels"],
        json!([{"provider": "mock-anthropic", "id": "mock-claude", "name": "Mock (Anthropic wire)", "reasoning": false}])
    );
    assert_eq!(state["model"]["id"], "mock-claude");
    assert_eq!(h.data(json!({"type": "cycle_model"})).await, Value::Null);
}

// ---------------------------------------------------------------------------------------------------------------
// get_commands, get_resources, reload

fn builtins(commands: &[Value]) -> Vec<Value> {
    commands
        .iter()
        .filter(|c| c["source"] == "builtin")
        .cloned()
        .collect()
}

/// The directory the bundled skills are written to when `DREB_PACKAGE_DIR` is not set (as in these tests).
fn package_dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join("package").join(env!("CARGO_PKG_VERSION"))
}

/// The recorded `get_commands` with the reference's package directory replaced by ours.
fn recorded_commands_for_this_package(agent_dir: &Path) -> Value {
    let recorded = jsonl(&fixture("get_commands.out.jsonl"));
    let recorded = recorded.iter().find(|f| f["id"] == "gc1").unwrap();
    let text = recorded["data"]["commands"].to_string().replace(
        "/usr/lib/node_modules/@dreb/coding-agent",
        &package_dir(agent_dir).to_string_lossy(),
    );
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_commands_lists_the_bundled_skills_and_the_twenty_builtins_as_recorded() {
    let h = start(|_, _| {}, faux(json!({})));
    let got = h.call(json!({"id": "gc1", "type": "get_commands"})).await;
    let expected = recorded_commands_for_this_package(h.agent());
    assert_eq!(builtins(expected.as_array().unwrap()).len(), 20);
    // The bundled skills (telegram-send is for the Telegram UI only), then the built-ins.
    assert_eq!(expected.as_array().unwrap().len(), 27);
    assert_eq!(got["data"]["commands"], expected);
    assert_eq!(
        (
            got["id"].clone(),
            got["command"].clone(),
            got["success"].clone()
        ),
        (json!("gc1"), json!("get_commands"), json!(true))
    );
    let terminal_only: Vec<&str> = got["data"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["dashboard"] == false)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(terminal_only, ["copy", "hotkeys", "buddy"]);
    // get_resources lists the same skills.
    let resources = h.data(json!({"type": "get_resources"})).await;
    let skills: Vec<&str> = resources["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(skills, BUNDLED_RPC_SKILLS);
}

/// The bundled skills an RPC session sees, in order.
const BUNDLED_RPC_SKILLS: [&str; 7] = [
    "mach6-implement",
    "mach6-issue",
    "mach6-plan",
    "mach6-publish",
    "mach6-push",
    "mach6-review",
    "model-routing-guide",
];

/// `get_resources.skills` entries of the bundled skills, from the recorded `get_commands`.
fn bundled_skill_resources() -> Vec<Value> {
    // Only names and descriptions: the directory does not matter.
    recorded_commands_for_this_package(Path::new("/"))
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["source"] == "skill")
        .map(|c| json!({"name": c["name"].as_str().unwrap().trim_start_matches("skill:"), "description": c["description"]}))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_skill_replaces_a_bundled_skill_of_the_same_name() {
    let h = start(
        |agent, _| {
            write(
                agent.join("skills/mach6-push/SKILL.md"),
                &skill("mach6-push", "Our own push workflow"),
            );
        },
        faux(json!({})),
    );
    let commands = h.data(json!({"type": "get_commands"})).await["commands"]
        .as_array()
        .unwrap()
        .clone();
    let push: Vec<&Value> = commands
        .iter()
        .filter(|c| c["name"] == "skill:mach6-push")
        .collect();
    assert_eq!(push.len(), 1);
    assert_eq!(push[0]["description"], "Our own push workflow");
    assert_eq!(push[0]["sourceInfo"]["source"], "auto");
    // User skills come before the built-in ones.
    assert_eq!(commands[0]["name"], "skill:mach6-push");
    assert_eq!(commands[1]["name"], "skill:mach6-implement");
}

fn skill(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\nDo the thing.\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_commands_orders_prompts_then_skills_then_builtins_with_source_info() {
    let h = start(
        |agent, cwd| {
            write(
                cwd.join(".dreb/prompts/fix-tests.md"),
                "---\ndescription: Fix failing tests\n---\nFix them: $@\n",
            );
            write(
                cwd.join(".dreb/prompts/plan.md"),
                "Create an implementation plan for the change the user describes in detail\n",
            );
            write(
                agent.join("prompts/plan.md"),
                "---\ndescription: shadowed by the project\n---\nx\n",
            );
            write(agent.join("prompts/review.md"), "\n\nReview the diff\n");
            // Collides with the built-in `model`: the built-in replaces it in place.
            write(
                agent.join("prompts/model.md"),
                "---\ndescription: not a real command\n---\nx\n",
            );
            write(
                cwd.join(".dreb/skills/lint/SKILL.md"),
                &skill("lint", "Run the linters"),
            );
            write(
                agent.join("skills/brave-search/SKILL.md"),
                &skill("brave-search", "Web search via Brave API"),
            );
            write(
                agent.join("skills/lint/SKILL.md"),
                &skill("lint", "shadowed by the project skill"),
            );
            write(
                agent.join("skills/no-desc/SKILL.md"),
                "---\nname: no-desc\n---\nbody\n",
            );
            write(
                agent.join("skills/tui-only/SKILL.md"),
                "---\nname: tui-only\ndescription: Only in the TUI\nui: tui\n---\n",
            );
        },
        faux(json!({})),
    );
    let commands = h.data(json!({"type": "get_commands"})).await["commands"]
        .as_array()
        .unwrap()
        .clone();
    let names: Vec<&str> = commands
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let bundled: Vec<String> = BUNDLED_RPC_SKILLS
        .iter()
        .map(|s| format!("skill:{s}"))
        .collect();
    let mut expected = vec![
        "fix-tests",
        "plan",
        "model",
        "review",
        "skill:lint",
        "skill:brave-search",
    ];
    expected.extend(bundled.iter().map(String::as_str));
    expected.extend([
        "settings",
        "scoped-models",
        "export",
        "import",
        "copy",
        "name",
    ]);
    expected.extend([
        "session", "hotkeys", "fork", "tree", "login", "logout", "new",
    ]);
    expected.extend(["compact", "dream", "resume", "reload", "buddy", "quit"]);
    assert_eq!(names, expected);

    let cwd = h.cwd().to_string_lossy().to_string();
    let agent = h.agent().to_string_lossy().to_string();
    assert_eq!(
        commands[0],
        json!({"name": "fix-tests", "description": "Fix failing tests", "source": "prompt", "sourceInfo": {
            "path": format!("{cwd}/.dreb/prompts/fix-tests.md"), "source": "auto", "scope": "project", "origin": "top-level",
            "baseDir": format!("{cwd}/.dreb")}})
    );
    // First non-empty body line, cut at 60 characters.
    assert_eq!(
        commands[1]["description"],
        "Create an implementation plan for the change the user descri..."
    );
    assert_eq!(
        commands[2],
        json!({"name": "model", "description": "Select model (opens selector UI)", "source": "builtin", "dashboard": true})
    );
    assert_eq!(commands[3]["description"], "Review the diff");
    assert_eq!(commands[3]["sourceInfo"]["scope"], "user");
    assert_eq!(commands[4]["description"], "Run the linters");
    assert_eq!(
        commands[5],
        json!({"name": "skill:brave-search", "description": "Web search via Brave API", "source": "skill", "sourceInfo": {
            "path": format!("{agent}/skills/brave-search/SKILL.md"), "source": "auto", "scope": "user", "origin": "top-level",
            "baseDir": agent}})
    );

    // get_resources reports the same skills and templates as metadata only.
    let resources = h.data(json!({"type": "get_resources"})).await;
    let mut skills = vec![
        json!({"name": "lint", "description": "Run the linters"}),
        json!({"name": "brave-search", "description": "Web search via Brave API"}),
    ];
    skills.extend(bundled_skill_resources());
    assert_eq!(
        resources,
        json!({
            "contextFiles": [],
            "skills": skills,
            "extensions": [],
            "promptTemplates": [
                {"name": "fix-tests", "description": "Fix failing tests"},
                {"name": "plan", "description": "Create an implementation plan for the change the user descri..."},
                {"name": "model", "description": "not a real command"},
                {"name": "review", "description": "Review the diff"},
            ],
            "systemPromptPresent": false,
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_commands_takes_paths_listed_in_settings_first() {
    let h = start(
        |agent, cwd| {
            write(
                agent.join("extra/skills/deploy/SKILL.md"),
                &skill("deploy", "Deploy the app"),
            );
            write(
                home().join("shared-prompts/standup.md"),
                "---\ndescription: Write the standup\n---\nx\n",
            );
            write(cwd.join("team/triage.md"), "Triage new issues\n");
            write(
                agent.join("prompts/standup.md"),
                "---\ndescription: shadowed by the settings path\n---\nx\n",
            );
            let global = json!({"skills": ["extra/skills", "-deploy"], "prompts": ["~/shared-prompts/standup.md", "missing.md"]});
            std::fs::write(agent.join("settings.json"), global.to_string()).unwrap();
            write(
                cwd.join(".dreb/settings.json"),
                &json!({"prompts": ["../team"]}).to_string(),
            );
        },
        faux(json!({})),
    );
    let commands = h.data(json!({"type": "get_commands"})).await["commands"]
        .as_array()
        .unwrap()
        .clone();
    let names: Vec<&str> = commands
        .iter()
        .take(3)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["triage", "standup", "skill:deploy"]);
    let cwd = h.cwd().to_string_lossy().to_string();
    assert_eq!(
        commands[0]["sourceInfo"],
        json!({"path": format!("{cwd}/team/triage.md"), "source": "local", "scope": "project", "origin": "top-level"})
    );
    assert_eq!(commands[1]["description"], "Write the standup");
    assert_eq!(commands[1]["sourceInfo"]["scope"], "user");
    assert_eq!(commands[2]["sourceInfo"]["source"], "local");
    assert_eq!(commands.len(), 23 + BUNDLED_RPC_SKILLS.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_resources_lists_context_files_and_the_appended_prompt() {
    let h = start(
        |_, cwd| write(cwd.join("AGENTS.md"), "# Rules\nBe nice.\n"),
        |o| {
            faux(json!({}))(o);
            o.append_system_prompt = Some("Always answer in French.".into());
        },
    );
    let resources = h.data(json!({"type": "get_resources"})).await;
    let cwd = h.cwd().to_string_lossy().to_string();
    assert_eq!(
        resources["contextFiles"],
        json!([{"path": format!("{cwd}/AGENTS.md")}])
    );
    assert_eq!(resources["systemPromptPresent"], true);
    // Key order of the wire object.
    let keys: Vec<&String> = resources.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "contextFiles",
            "skills",
            "extensions",
            "promptTemplates",
            "systemPromptPresent"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_picks_up_new_resources_and_reports_a_broken_models_json() {
    let server = MockLlm::start(
        serde_json::from_value(json!({"turns": [{"text": ["ok"], "repeat": true}]})).unwrap(),
    )
    .unwrap();
    let h = start_buddy(&server);
    let names = |v: Value| {
        v["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    // Start-up's discovery has run once a command has read the resources (it runs just after start-up).
    let before = names(h.data(json!({"type": "get_commands"})).await);
    write(
        h.cwd().join(".dreb/prompts/later.md"),
        "---\ndescription: Added after start\n---\nx\n",
    );
    write(h.cwd().join("AGENTS.md"), "Project rules.\n");
    assert_eq!(names(h.data(json!({"type": "get_commands"})).await), before);
    assert!(!before.contains(&"later".to_string()));

    assert_eq!(
        h.call(json!({"id": "r1", "type": "reload"})).await,
        spec_example("reload", "r1").1
    );
    assert_eq!(
        names(h.data(json!({"type": "get_commands"})).await)[0],
        "later"
    );
    assert_eq!(
        h.data(json!({"type": "get_resources"})).await["contextFiles"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // The rebuilt system prompt carries the new context file.
    h.data(json!({"type": "prompt", "message": "hi"})).await;
    h.rt.wait_for_idle().await;
    let requests = server.requests();
    assert!(
        requests
            .last()
            .unwrap()
            .body
            .to_string()
            .contains("Project rules."),
        "{:?}",
        requests.last()
    );

    std::fs::write(h.agent().join("models.json"), "{ not json").unwrap();
    let r = h.call(json!({"id": "r2", "type": "reload"})).await;
    assert_eq!(r["success"], false);
    assert!(
        r["error"].as_str().unwrap().starts_with("Command failed: "),
        "{r}"
    );
    assert!(r["error"].as_str().unwrap().contains("models.json"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_rejects_prompt_settings_configured_twice() {
    let h = start_mock(|_| {});
    let mut models: Value = serde_json::from_str(&mock_models_json("http://127.0.0.1:9")).unwrap();
    models["providers"]["mock"]["models"][0]["appendSystemPrompt"] = json!("from models.json");
    std::fs::write(h.agent().join("models.json"), models.to_string()).unwrap();
    std::fs::write(
        h.agent().join("settings.json"),
        json!({"modelSettings": {"mock/mock-model": {"appendSystemPrompt": "from settings"}}})
            .to_string(),
    )
    .unwrap();
    let r = h.call(json!({"id": "r2", "type": "reload"})).await;
    assert_eq!(
        r,
        json!({"id": "r2", "type": "response", "command": "reload", "success": false,
               "error": "Command failed: System prompt behavior for mock/mock-model is configured in both models.json and settings.json; remove one source"})
    );
}

// ---------------------------------------------------------------------------------------------------------------
// list_agent_types

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_types_project_over_user_over_bundled_sorted_by_name() {
    let h = start(
        |_, cwd| {
            // HOME-based user agents (this test binary's HOME), and project agents.
            write(
                home().join(".dreb/agents/explore.md"),
                "---\nname: Explore\ndescription: user explore\n---\nbody\n",
            );
            write(
                home().join(".dreb/agents/zeta-user.md"),
                "---\nname: zeta-user\ndescription: only in home\n---\n",
            );
            write(
                home().join(".dreb/agents/broken.md"),
                "no frontmatter here\n",
            );
            write(
                cwd.join(".dreb/agents/explore.md"),
                "---\nname: Explore\ndescription: project explore\n---\n",
            );
            write(cwd.join(".dreb/agents/alpha.md"), "---\nname: alpha\n---\n");
            write(
                cwd.join(".dreb/agents/notes.txt"),
                "---\nname: ignored\n---\n",
            );
        },
        faux(json!({})),
    );
    let types = h.data(json!({"type": "list_agent_types"})).await["agentTypes"].clone();
    let pairs: Vec<(String, String)> = types
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["description"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let names: Vec<&str> = pairs.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "alpha",
            "code-reviewer",
            "completeness-checker",
            "developers-advocate",
            "devils-advocate",
            "error-auditor",
            "Explore",
            "feature-dev",
            "independent-assessor",
            "Sandbox",
            "simplifier",
            "test-reviewer",
            "zeta-user"
        ]
    );
    assert_eq!(pairs[0].1, "");
    assert!(
        pairs[1].1.starts_with("Reviews a change"),
        "bundled: {}",
        pairs[1].1
    );
    assert_eq!(pairs[6].1, "project explore");
    assert_eq!(pairs[12].1, "only in home");
}

// ---------------------------------------------------------------------------------------------------------------
// performance

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn performance_stats_from_the_recorded_log() {
    let h = start(
        |agent, _| {
            std::fs::write(
                agent.join("performance.jsonl"),
                fixture("performance.jsonl"),
            )
            .unwrap()
        },
        faux(json!({})),
    );
    // Expected values computed with the reference's algorithm over the same file.
    assert_eq!(
        h.data(json!({"type": "get_performance_stats"})).await,
        json!({"models": [
            {"provider": "mock", "modelId": "mock-model",
             "rolling": {"median": 38.370719323502875, "mean": 53.41107651586083, "count": 8},
             "delta": {"baselineMedian": 38.370719323502875, "recentMedian": 38.370719323502875, "percentDelta": 0,
                       "direction": "stable", "baselineCount": 8, "recentCount": 8}},
            {"provider": "mock-anthropic", "modelId": "mock-claude",
             "rolling": {"median": 91.32327850642884, "mean": 91.32327850642884, "count": 1},
             "delta": {"baselineMedian": 91.32327850642884, "recentMedian": 91.32327850642884, "percentDelta": 0,
                       "direction": "stable", "baselineCount": 1, "recentCount": 1}},
        ]})
    );
}

fn perf_line(provider: &str, model: &str, second: u32, tps: f64) -> String {
    json!({"timestamp": format!("2026-11-30T10:00:{second:02}.000Z"), "sessionId": "s", "provider": provider, "modelId": model,
           "outputTokens": 10, "durationMs": 1000.0 * 10.0 / tps, "tps": tps})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn performance_delta_compares_the_latest_ten_with_the_baseline() {
    let mut log = Vec::new();
    // 15 older samples at 100 tps, then 10 newer at 50: recent median 50 vs baseline median 100.
    for i in 0..25 {
        log.push(perf_line(
            "p",
            "slower",
            i,
            if i < 15 { 100.0 } else { 50.0 },
        ));
    }
    // The other way round: 15 at 10, then 10 at 20.
    for i in 0..25 {
        log.push(perf_line(
            "p",
            "faster",
            i,
            if i < 15 { 10.0 } else { 20.0 },
        ));
    }
    log.push("{ not json".into());
    log.push(json!({"timestamp": "2026-11-30T10:00:00.000Z", "provider": "p", "modelId": "bad", "outputTokens": 1, "durationMs": 10}).to_string());
    log.push(json!({"timestamp": "yesterday", "provider": "p", "modelId": "bad", "outputTokens": 1, "durationMs": 10, "tps": 1}).to_string());
    let h = start(
        |agent, _| std::fs::write(agent.join("performance.jsonl"), log.join("\n") + "\n").unwrap(),
        faux(json!({})),
    );
    let models = h.data(json!({"type": "get_performance_stats"})).await["models"].clone();
    assert_eq!(
        models.as_array().unwrap().len(),
        2,
        "invalid lines are skipped: {models}"
    );
    assert_eq!(models[0]["modelId"], "slower");
    assert_eq!(
        models[0]["rolling"],
        json!({"median": 100, "mean": 80, "count": 25})
    );
    assert_eq!(
        models[0]["delta"],
        json!({"baselineMedian": 100, "recentMedian": 50, "percentDelta": -50, "direction": "below", "baselineCount": 25, "recentCount": 10})
    );
    assert_eq!(models[1]["delta"]["direction"], "above");
    assert_eq!(models[1]["delta"]["percentDelta"], 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_performance_stats_match_the_spec_example() {
    let h = start(|_, _| {}, faux(json!({})));
    let (req, resp) = spec_example("get_performance_stats", "ps1");
    assert_eq!(h.call(req).await, resp);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn successful_assistant_messages_are_appended_to_the_performance_log() {
    // The first byte waits 30 ms so the message is long enough to count (>= 10 ms); the failed turn is not logged.
    let scenario = json!({"turns": [
        {"firstByteDelayMs": 30, "text": ["hello ", "there"], "usage": {"input": 5, "output": 7}},
        {"fault": {"status": 500}},
    ], "fallback": "error"});
    let h = start(|_, _| {}, faux(scenario));
    h.data(json!({"type": "set_auto_retry", "enabled": false}))
        .await;
    for text in ["first", "second"] {
        h.data(json!({"type": "prompt", "message": text})).await;
        h.rt.wait_for_idle().await;
    }
    // Written off the event path: wait for the writer.
    h.rt.flush_performance_log().await;
    let log = jsonl(&std::fs::read_to_string(h.agent().join("performance.jsonl")).unwrap());
    assert_eq!(log.len(), 1, "{log:?}");
    let entry = &log[0];
    let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "timestamp",
            "sessionId",
            "provider",
            "modelId",
            "outputTokens",
            "durationMs",
            "tps"
        ]
    );
    let state = h.data(json!({"type": "get_state"})).await;
    assert_eq!(entry["sessionId"], state["sessionId"]);
    assert_eq!(
        (entry["provider"].clone(), entry["modelId"].clone()),
        (json!("faux"), state["model"]["id"].clone())
    );
    assert_eq!(entry["outputTokens"], 7);
    let duration = entry["durationMs"].as_f64().unwrap();
    assert!(duration >= 30.0, "{entry}");
    assert!((entry["tps"].as_f64().unwrap() - 7000.0 / duration).abs() < 1e-9);
    assert!(!h.agent().join("performance.jsonl.lock").exists());
    // And the stats see it.
    let stats = h.data(json!({"type": "get_performance_stats"})).await;
    assert_eq!(stats["models"][0]["rolling"]["count"], 1);
}

// ---------------------------------------------------------------------------------------------------------------
// daily cost

fn session_file_name(at: chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "{}_{}.jsonl",
        at.format("%Y-%m-%dT%H-%M-%S-%3fZ"),
        "0b5e3c1a-0000-4000-8000-000000000000"
    )
}

fn assistant_entry(cost: f64) -> String {
    json!({"type": "message", "id": "a", "parentId": null, "timestamp": "x",
           "message": {"role": "assistant", "usage": {"cost": {"total": cost}}}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daily_cost_sums_todays_session_files_then_answers_from_the_cache() {
    let h = start(
        |agent, _| {
            let now = chrono::Utc::now();
            let today = [
                json!({"type": "session", "version": 3, "id": "x"}).to_string(),
                assistant_entry(0.5),
                json!({"type": "message", "message": {"role": "user", "usage": {"cost": {"total": 100.0}}}}).to_string(),
                "{ malformed".to_string(),
                assistant_entry(0.25),
            ];
            write(
                agent.join("sessions/--a--").join(session_file_name(now)),
                &today.join("\n"),
            );
            write(
                agent.join("sessions/--b--").join(session_file_name(now)),
                &assistant_entry(1.0),
            );
            // Other days, and names that are not session files.
            let old = chrono::Utc::now() - chrono::Duration::days(3);
            write(
                agent.join("sessions/--a--").join(session_file_name(old)),
                &assistant_entry(10.0),
            );
            write(
                agent.join("sessions/--a--/notes.jsonl"),
                &assistant_entry(10.0),
            );
            write(
                agent
                    .join("sessions/--a--")
                    .join(session_file_name(now).replace(".jsonl", ".txt")),
                &assistant_entry(10.0),
            );
        },
        faux(json!({})),
    );
    assert_eq!(
        h.data(json!({"type": "get_daily_cost"})).await,
        json!({"cost": 1.75})
    );
    // A new file is not seen until the cache refreshes (a minute later).
    write(
        h.agent()
            .join("sessions/--c--")
            .join(session_file_name(chrono::Utc::now())),
        &assistant_entry(2.0),
    );
    assert_eq!(
        h.data(json!({"type": "get_daily_cost"})).await,
        json!({"cost": 1.75})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daily_cost_is_zero_without_sessions() {
    let h = start(
        |_, _| {},
        |o| {
            faux(json!({}))(o);
            o.no_session = true;
        },
    );
    assert_eq!(
        h.data(json!({"type": "get_daily_cost"})).await,
        json!({"cost": 0})
    );
}

// ---------------------------------------------------------------------------------------------------------------
// buddy

fn bones(state: &Value) -> Value {
    json!([
        state["species"],
        state["rarity"],
        state["shiny"],
        state["stats"],
        state["eyeStyle"],
        state["hat"]
    ])
}

fn start_buddy(server: &MockLlm) -> H {
    let base = server.base_url();
    start(
        move |agent, _| std::fs::write(agent.join("models.json"), mock_models_json(&base)).unwrap(),
        |_| {},
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buddy_hatch_names_the_buddy_with_the_model_and_persists_it() {
    let scenario = json!({"turns": [
        {"text": ["NAME: Pibbleton\n", "PERSONALITY: Unflappable and quietly amused.\n", "BACKSTORY: Found napping in a warm server rack."]},
        {"text": ["NAME: Hoot\nPERSONALITY: Precise.\nBACKSTORY: Reviewed every commit overnight."]},
    ], "fallback": "error"});
    let server = MockLlm::start(serde_json::from_value(scenario).unwrap()).unwrap();
    let h = start_buddy(&server);

    let (req, resp) = spec_example("buddy_reroll", "b2");
    assert_eq!(h.call(req).await, resp, "nothing to reroll before a hatch");

    let hatched = h.data(json!({"type": "buddy_hatch"})).await["state"].clone();
    assert_eq!(hatched["name"], "Pibbleto", "names are cut to 8 characters");
    assert_eq!(hatched["personality"], "Unflappable and quietly amused.");
    assert_eq!(hatched["backstory"], "Found napping in a warm server rack.");
    assert_eq!(hatched["rerollCount"], 0);
    let keys: Vec<&String> = hatched.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "species",
            "rarity",
            "shiny",
            "stats",
            "eyeStyle",
            "hat",
            "rerollCount",
            "name",
            "personality",
            "backstory",
            "hatchedAt"
        ]
    );
    for stat in ["DEBUGGING", "PATIENCE", "CHAOS", "WISDOM", "SNARK"] {
        let v = hatched["stats"][stat].as_u64().unwrap();
        assert!((10..=100).contains(&v), "{stat}={v}");
    }
    // The request went to the session model with the character sheet.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0]
            .body
            .to_string()
            .contains(hatched["species"].as_str().unwrap())
    );

    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(h.agent().join("buddy.json")).unwrap())
            .unwrap();
    assert_eq!(
        stored,
        json!({"rerollCount": 0, "name": "Pibbleto", "personality": "Unflappable and quietly amused.",
        "backstory": "Found napping in a warm server rack.", "hatchedAt": hatched["hatchedAt"]})
    );

    // Reroll: new bones from the next count, new soul, persisted.
    let rerolled = h.data(json!({"type": "buddy_reroll"})).await["state"].clone();
    assert_eq!(
        (rerolled["rerollCount"].clone(), rerolled["name"].clone()),
        (json!(1), json!("Hoot"))
    );
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(h.agent().join("buddy.json")).unwrap())
            .unwrap();
    assert_eq!(stored["rerollCount"], 1);

    // The server has no more turns: the soul falls back to the reference's defaults, the bones stay those of
    // count 1 (deterministic), and a new runtime on the same agent dir sees the same buddy.
    let again = h.data(json!({"type": "buddy_hatch"})).await["state"].clone();
    assert_eq!(bones(&again), bones(&rerolled));
    assert_eq!(again["rerollCount"], 1);
    assert_eq!(again["name"], again["species"]);
    assert_eq!(
        again["personality"],
        format!(
            "A {} {} companion.",
            again["rarity"].as_str().unwrap(),
            again["species"].as_str().unwrap()
        )
    );
    assert_eq!(again["backstory"], "A mysterious past shrouded in legend.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buddy_bones_are_deterministic_across_agent_dirs() {
    let server =
        MockLlm::start(serde_json::from_value(json!({"turns": [], "fallback": "error"})).unwrap())
            .unwrap();
    let a = start_buddy(&server);
    let b = start_buddy(&server);
    let first = a.data(json!({"type": "buddy_hatch"})).await["state"].clone();
    let second = b.data(json!({"type": "buddy_hatch"})).await["state"].clone();
    assert_eq!(bones(&first), bones(&second));
    let r1 = a.data(json!({"type": "buddy_reroll"})).await["state"].clone();
    let r2 = b.data(json!({"type": "buddy_reroll"})).await["state"].clone();
    assert_eq!(bones(&r1), bones(&r2));
    assert_eq!(r1["rerollCount"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buddy_needs_a_key_for_the_session_model() {
    // The saved default is a built-in model whose provider has no key configured here.
    let h = start_mock(|_| {});
    h.rt.agent().set_model(Some(
        dreb_ai::ModelRegistry::builtin()
            .find("anthropic", "claude-sonnet-4-5")
            .unwrap()
            .clone(),
    ));
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        return; // a real key in the environment: nothing to check
    }
    let (req, resp) = spec_example("buddy_hatch", "b3");
    assert_eq!(h.call(req).await, resp);
    let r = h.call(json!({"id": "b3", "type": "buddy_reroll"})).await;
    assert_eq!(r["error"], "No API key available for the current model.");
    h.rt.agent().set_model(None);
    let (req, resp) = spec_example("buddy_hatch", "b1");
    assert_eq!(h.call(req).await, resp);
}
