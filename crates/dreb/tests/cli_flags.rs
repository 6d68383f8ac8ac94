//! The reference's command-line flags: accepted with their meaning (`-c`, `--fork`, `--skill`, `--no-skills`,
//! `--prompt-template`, `--no-prompt-templates`, `--list-models`, `--export`, `--verbose`), accepted and ignored
//! where they concern what this build does not have (themes, `--offline`, `--no-extensions`, unknown `--flags` as
//! extension flags, `-e` with a warning), or refused with a clear error (`-r`, `-p`, `--fork` with `--no-session`).

mod common;

use std::process::{Command, Stdio};

use common::{Dreb, Env, is_response};
use serde_json::{Value, json};

fn response(dreb: &mut Dreb, cmd: Value) -> Value {
    let frames = dreb.exchange(&cmd);
    let r = frames
        .into_iter()
        .find(|f| f["id"] == cmd["id"] && is_response(f))
        .unwrap();
    assert_eq!(r["success"], true, "{r}");
    r["data"].clone()
}

/// The binary with `args`, no stdin, in the env's home: (exit code, stdout, stderr).
fn run(env: &Env, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dreb"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.home.path())
        .env("DREB_CODING_AGENT_DIR", env.agent_dir())
        .current_dir(env.cwd())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn terminal_only_and_extension_flags_are_accepted() {
    let env = Env::new();
    let mut dreb = env.spawn(&[
        "--no-extensions",
        "-ne",
        "--theme",
        "dark",
        "--no-themes",
        "--offline",
        "--verbose",
        "--plan-mode",
        "--my-extension-level",
        "3",
        "--other=x",
        "-e",
        "./ext/hello.ts",
    ]);
    let version = response(&mut dreb, json!({"id": "v", "type": "get_version"}));
    assert!(version["version"].is_string());
    // The `-e` path does not exist: one `extension_error` says so, and the session goes on.
    let resources = response(&mut dreb, json!({"id": "r", "type": "get_resources"}));
    assert_eq!(resources["extensions"], json!([]));
    let error = dreb
        .seen
        .iter()
        .find(|f| f["type"] == "extension_error")
        .cloned()
        .expect("the missing extension is reported");
    assert_eq!(error["event"], "load");
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .starts_with("Extension not found: "),
        "{error}"
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn flags_rpc_mode_cannot_honour_are_refused() {
    let env = Env::new();
    for (args, text) in [
        (
            &["--mode", "rpc", "-r"][..],
            "--resume opens an interactive session picker",
        ),
        (
            &["--mode", "rpc", "--print"],
            "-p/--print cannot be combined with --mode rpc",
        ),
        (
            &["--mode", "rpc", "--fork", "abc", "--no-session"],
            "--fork cannot be combined",
        ),
    ] {
        let (code, stdout, stderr) = run(&env, args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
        assert!(stderr.contains(text), "{args:?}: {stderr}");
    }
}

/// A session of this cwd with one exchange; its file.
fn one_exchange(env: &Env) -> String {
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hello"}));
    let file = response(&mut dreb, json!({"id": "s", "type": "get_state"}))["sessionFile"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(dreb.finish().0, 0);
    file
}

#[test]
fn continue_opens_the_latest_session_and_fork_copies_one() {
    let env = Env::new();
    let file = one_exchange(&env);

    let mut dreb = env.spawn(&["-c"]);
    let state = response(&mut dreb, json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["sessionFile"], file.as_str());
    assert_eq!(state["messageCount"], 2);
    dreb.finish();

    let mut dreb = env.spawn(&["--fork", &file]);
    let state = response(&mut dreb, json!({"id": "s", "type": "get_state"}));
    assert_ne!(state["sessionFile"], file.as_str(), "a new file");
    assert_eq!(state["messageCount"], 2, "with the same messages");
    let forked = state["sessionFile"].as_str().unwrap().to_string();
    dreb.finish();
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&forked)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["parentSession"], file.as_str());
}

#[test]
fn skill_and_prompt_template_flags_replace_discovery() {
    let env = Env::new();
    let extra = env.home.path().join("extra");
    std::fs::create_dir_all(extra.join("cli-skill")).unwrap();
    std::fs::write(
        extra.join("cli-skill/SKILL.md"),
        "---\nname: cli-skill\ndescription: Given on the command line\n---\nDo the thing.\n",
    )
    .unwrap();
    std::fs::write(
        extra.join("greet.md"),
        "---\ndescription: Greets\n---\nSay hello to $1.\n",
    )
    .unwrap();
    let skill = extra.join("cli-skill");
    let template = extra.join("greet.md");
    let names = |dreb: &mut Dreb| -> Vec<(String, String)> {
        response(dreb, json!({"id": "c", "type": "get_commands"}))["commands"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["source"] != "builtin")
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["sourceInfo"]["scope"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };

    let mut dreb = env.spawn(&[]);
    let discovered = names(&mut dreb);
    dreb.finish();
    assert!(
        discovered.iter().any(|(n, _)| n.starts_with("skill:")),
        "bundled skills by default: {discovered:?}"
    );

    let mut dreb = env.spawn(&[
        "--no-skills",
        "--skill",
        skill.to_str().unwrap(),
        "--no-prompt-templates",
        "--prompt-template",
        template.to_str().unwrap(),
    ]);
    let only = names(&mut dreb);
    dreb.finish();
    assert_eq!(
        only,
        [
            ("greet".to_string(), "temporary".to_string()),
            ("skill:cli-skill".to_string(), "temporary".to_string())
        ]
    );
}

#[test]
fn list_models_prints_the_available_models_and_exits() {
    let env = Env::new();
    let (code, stdout, _) = run(&env, &["--list-models"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("provider") && lines[0].contains("context"),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("mock ") && l.contains("mock-model")),
        "{stdout}"
    );
    let (code, stdout, _) = run(&env, &["--list-models", "claude"]);
    assert_eq!(code, 0);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(stdout.contains("mock-claude"));
    let (code, stdout, stderr) = run(&env, &["--list-models", "no-such-model"]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert!(stderr.contains("No models matching"), "{stderr}");
}

#[test]
fn export_writes_the_html_and_exits() {
    let env = Env::new();
    let file = one_exchange(&env);
    let out = env.home.path().join("out.html");
    let (code, stdout, stderr) = run(&env, &["--export", &file, out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), format!("Exported to: {}", out.display()));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("hello"));
    let (code, _, stderr) = run(&env, &["--export", "/no/such/session.jsonl"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("session file not found"), "{stderr}");
}

#[test]
fn print_mode_writes_the_final_reply_and_json_mode_every_event() {
    let env = Env::new();
    let (code, json_out, stderr) = run(
        &env,
        &[
            "--mode",
            "json",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "hello",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<Value> = json_out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session", "the session header first");
    for frame in &lines[1..] {
        dreb_spec_check::assert_frame(frame);
    }
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "agent_end");
    let reply = end["messages"].as_array().unwrap().last().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();

    let (code, text_out, stderr) = run(
        &env,
        &["-p", "--provider", "mock", "--model", "mock-model", "hello"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(text_out, format!("{reply}\n"), "only the reply's text");
}

#[test]
fn print_mode_exits_1_with_the_error_when_the_reply_fails() {
    let env = Env::new();
    env.write_settings(&json!({"retry": {"enabled": false}}));
    std::fs::write(
        env.agent_dir().join("models.json"),
        json!({"providers": {"down": {"baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions",
            "models": [{"id": "m"}]}}})
        .to_string(),
    )
    .unwrap();
    let (code, stdout, stderr) = run(
        &env,
        &[
            "-p",
            "--provider",
            "down",
            "--model",
            "m",
            "--no-session",
            "hello",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    assert!(stderr.contains("Error: Connection error."), "{stderr}");
}
