//! The CLI's first minutes: `--help` lists the environment and the valid values, bad `--tools` / `--ui` /
//! `--provider` / `--model` / `--session` values fail at start-up with a clear stderr text and exit code 1, and a
//! `~` in `DREB_CODING_AGENT_DIR` means the home directory.

mod common;

use common::{Dreb, Env, is_response};
use serde_json::{Value, json};

/// Runs the binary with `args` and closed stdin; returns the exit code and stderr.
fn start_up(env: &Env, args: &[&str]) -> (i32, String) {
    let (code, frames, stderr) = env.spawn_raw(args, &[]).finish();
    assert!(
        frames.is_empty(),
        "a start-up failure writes nothing to stdout: {frames:#?}"
    );
    (code, stderr)
}

fn response(dreb: &mut Dreb, cmd: Value) -> Value {
    let frames = dreb.exchange(&cmd);
    let r = frames
        .into_iter()
        .find(|f| f["id"] == cmd["id"] && is_response(f))
        .unwrap();
    assert_eq!(r["success"], true, "{r}");
    r
}

fn session_file(dreb: &mut Dreb) -> String {
    let state = response(dreb, json!({"id": "state", "type": "get_state"}));
    state["data"]["sessionFile"].as_str().unwrap().to_string()
}

#[test]
fn help_lists_the_environment_tools_and_ui_types() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dreb"))
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8(out.stdout).unwrap();
    let env_section = help
        .split("Environment:\n")
        .nth(1)
        .expect("an Environment section");
    for var in [
        "DREB_CODING_AGENT_DIR",
        "DREB_LOG",
        "RUST_LOG",
        "DREB_FAUX_SCENARIO",
        "DREB_STDOUT_STALL_TIMEOUT_SECS",
        "DREB_MAX_RECORD_BYTES",
        "DREB_PACKAGE_DIR",
        "DREB_CACHE_RETENTION",
        "DREB_RETRY_BASE_DELAY_MS",
        "DREB_SEARCH_BACKEND",
        "DREB_SEARXNG_URL",
        "DREB_BRAVE_API_KEY",
        "DREB_WEB_SEARCH_RATE_LIMIT_MS",
        "DREB_DDG_URL",
        "DREB_BRAVE_URL",
        "DREB_WEB_FETCH_ALLOW_PRIVATE",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
    ] {
        assert!(
            env_section.contains(&format!(" {var}")),
            "{var} missing from --help:\n{help}"
        );
    }
    for (_, names) in dreb_ai::auth::PROVIDER_KEY_VARS {
        for name in *names {
            assert!(env_section.contains(name), "{name} missing from --help");
        }
    }
    let tools = help
        .split("Tools (--tools):\n")
        .nth(1)
        .expect("a tools list");
    for name in dreb_runtime::provided_tool_names() {
        assert!(tools.contains(name), "tool {name} missing from --help");
    }
    assert!(
        help.contains("UI types (--ui): rpc, agent, dashboard"),
        "{help}"
    );
    // `-h` shows the same footer.
    let short = std::process::Command::new(env!("CARGO_BIN_EXE_dreb"))
        .arg("-h")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&short.stdout).contains("DREB_CODING_AGENT_DIR"));
}

#[test]
fn unknown_tool_names_are_rejected_naming_the_valid_ones() {
    let env = Env::new();
    let (code, stderr) = start_up(
        &env,
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--tools",
            "read,bogus_tool, bash",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("unknown tool in --tools: bogus_tool"),
        "{stderr}"
    );
    assert!(
        stderr.contains("read, bash, edit"),
        "names the valid tools: {stderr}"
    );

    // Every listed name starts.
    let list = dreb_runtime::provided_tool_names().join(",");
    let mut dreb = env.spawn(&["--no-session", "--tools", &list]);
    let state = response(&mut dreb, json!({"id": "s", "type": "get_state"}));
    assert!(state["data"].is_object());
    let (code, _, stderr) = dreb.finish();
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn unknown_ui_types_are_rejected() {
    let env = Env::new();
    let (code, stderr) = start_up(&env, &["--mode", "rpc", "--ui", "fancy"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("invalid --ui \"fancy\" (expected one of rpc, agent, dashboard)"),
        "{stderr}"
    );
    for ui in ["rpc", "agent", "dashboard"] {
        let (code, _, stderr) = env.spawn(&["--no-session", "--ui", ui]).finish();
        assert_eq!(code, 0, "--ui {ui}: {stderr}");
    }
}

#[test]
fn an_unknown_provider_names_the_known_ones() {
    let env = Env::new();
    let (code, stderr) = start_up(&env, &["--mode", "rpc", "--provider", "bogus"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("Model not found: provider bogus"),
        "{stderr}"
    );
    // Built-in providers and the models.json one.
    for p in ["anthropic", "faux", "mock"] {
        assert!(stderr.contains(p), "{p} not named: {stderr}");
    }
    let (code, stderr) = start_up(
        &env,
        &["--mode", "rpc", "--provider", "bogus", "--model", "x"],
    );
    assert_eq!(code, 1);
    assert!(stderr.contains("Model not found: bogus/x"), "{stderr}");
    assert!(stderr.contains("known providers:"), "{stderr}");
}

#[test]
fn a_model_with_its_provider_prefix_is_not_prefixed_again() {
    let env = Env::new();
    let (code, stderr) = start_up(
        &env,
        &[
            "--mode",
            "rpc",
            "--provider",
            "faux",
            "--model",
            "faux/doesnotexist",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stderr.trim_end(), "Model not found: faux/doesnotexist");
    let (_, stderr) = start_up(
        &env,
        &[
            "--mode",
            "rpc",
            "--provider",
            "faux",
            "--model",
            "doesnotexist",
        ],
    );
    assert_eq!(stderr.trim_end(), "Model not found: faux/doesnotexist");
}

#[test]
fn a_session_id_prefix_that_matches_nothing_is_an_error() {
    let env = Env::new();
    let (code, stderr) = start_up(
        &env,
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--session",
            "deadbeef",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("No session found matching 'deadbeef'"),
        "{stderr}"
    );
    assert!(!env.cwd().join("deadbeef").exists(), "no ./deadbeef file");
    assert_eq!(std::fs::read_dir(env.cwd()).unwrap().count(), 0);
}

#[test]
fn a_session_id_prefix_opens_the_matching_session() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "Reply with just: one"}));
    let state = response(&mut dreb, json!({"id": "s", "type": "get_state"}));
    let file = state["data"]["sessionFile"].as_str().unwrap().to_string();
    let id = state["data"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(dreb.finish().0, 0);
    assert!(std::path::Path::new(&file).exists());

    let mut dreb = env.spawn(&["--session", &id[..8]]);
    assert_eq!(session_file(&mut dreb), file);
    assert_eq!(dreb.finish().0, 0);
}

#[test]
fn a_session_path_that_does_not_exist_starts_a_session_there() {
    // The reference reads a value with a slash or ending in `.jsonl` as a path, and a missing file as a new
    // session at that path.
    let env = Env::new();
    let path = env.home.path().join("elsewhere").join("mine.jsonl");
    let mut dreb = env.spawn(&["--session", path.to_str().unwrap()]);
    assert_eq!(session_file(&mut dreb), path.to_string_lossy());
    assert_eq!(dreb.finish().0, 0);
    let mut dreb = env.spawn(&["--session", "new.jsonl"]);
    assert_eq!(
        session_file(&mut dreb),
        env.cwd().join("new.jsonl").to_string_lossy()
    );
    assert_eq!(dreb.finish().0, 0);
}

#[test]
fn a_tilde_in_the_agent_dir_is_the_home_directory() {
    let env = Env::new();
    // The agent dir (with models.json naming the mock provider) is `<HOME>/.dreb/agent`, written with `~`.
    let mut dreb = env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
        ],
        &[("DREB_CODING_AGENT_DIR", "~/.dreb/agent")],
    );
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "Reply with just: home"}));
    let file = session_file(&mut dreb);
    let (code, _, stderr) = dreb.finish();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        std::path::Path::new(&file).starts_with(env.agent_dir().join("sessions")),
        "{file}"
    );
    assert!(std::path::Path::new(&file).exists());
    assert!(
        !env.cwd().join("~").exists(),
        "no literal ~ directory in the project"
    );
}

#[test]
fn a_session_id_prefix_found_only_elsewhere_is_forked_here() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "Reply with just: one"}));
    let state = response(&mut dreb, json!({"id": "s", "type": "get_state"}));
    let original = state["data"]["sessionFile"].as_str().unwrap().to_string();
    let id = state["data"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(dreb.finish().0, 0);

    // Another session dir: the prefix is not found there, but under `<agentDir>/sessions`.
    let here = env.home.path().join("other-sessions");
    let mut dreb = env.spawn(&[
        "--session-dir",
        here.to_str().unwrap(),
        "--session",
        &id[..8],
    ]);
    let forked = session_file(&mut dreb);
    assert_eq!(dreb.finish().0, 0);
    assert!(std::path::Path::new(&forked).starts_with(&here), "{forked}");
    let text = std::fs::read_to_string(&forked).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["parentSession"], original.as_str());
    assert!(text.contains("Reply with just: one"));
}

#[test]
fn start_up_creates_the_memory_directory_next_to_the_agent_dir() {
    let env = Env::new();
    let memory = env.home.path().join(".dreb/memory");
    assert!(!memory.exists());
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&serde_json::json!({"id": "v", "type": "get_version"}));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    assert!(memory.is_dir(), "{} exists", memory.display());
}

#[test]
fn provider_keys_in_the_secrets_file_make_their_provider_available() {
    let env = Env::new();
    let available = |env: &Env| {
        let mut dreb = env.spawn(&[]);
        let models = response(
            &mut dreb,
            json!({"id": "m", "type": "get_available_models"}),
        );
        let (code, _, _) = dreb.finish();
        assert_eq!(code, 0);
        models["data"]["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["provider"] == "anthropic")
    };
    assert!(!available(&env), "no key: no anthropic models");
    let secrets = env.home.path().join(".dreb/secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(
        secrets.join("providers.env"),
        "# keys\nexport ANTHROPIC_API_KEY=\"sk-ant-test\"\n",
    )
    .unwrap();
    assert!(available(&env), "the key from providers.env counts");
}
