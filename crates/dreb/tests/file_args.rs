//! `@file` arguments and piped stdin in `-p` mode, as the reference combines them: stdin's text, the files and the
//! first message make the first prompt (images attached), each further message is a prompt of its own; a missing
//! file ends the run before anything is sent.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::Env;
use serde_json::{Value, json};

/// A 1x1 PNG.
const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0,
    0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

/// The env with a mock model that takes images.
fn env() -> Env {
    let env = Env::new();
    std::fs::write(
        env.agent_dir().join("models.json"),
        json!({"providers": {"mock": {"baseUrl": env.mock.openai_base_url(), "api": "openai-completions",
            "apiKey": "mock-key", "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [{"id": "mock-model", "input": ["text", "image"]}]}}})
        .to_string(),
    )
    .unwrap();
    env
}

/// `dreb -p --provider mock --model mock-model <args>` with `stdin` piped in: (exit code, stdout, stderr).
fn run(env: &Env, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dreb"))
        .args([
            "-p",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--no-session",
        ])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.home.path())
        .env("DREB_CODING_AGENT_DIR", env.agent_dir())
        .current_dir(env.cwd())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The last user message of a chat-completions request.
fn last_user(body: &Value) -> Value {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .clone()
}

#[test]
fn stdin_files_and_messages_become_the_prompts_with_images_attached() {
    let env = env();
    std::fs::write(env.cwd().join("notes.txt"), "hello notes").unwrap();
    std::fs::write(env.cwd().join("dot.png"), PNG_1X1).unwrap();
    std::fs::write(env.cwd().join("empty.txt"), "").unwrap();
    let (code, stdout, stderr) = run(
        &env,
        &[
            "@notes.txt",
            "@empty.txt",
            "@dot.png",
            "summarize",
            "and again",
        ],
        "  piped context\n",
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.is_empty(), "the final reply is printed");

    let requests = env.mock.requests();
    let chats: Vec<&Value> = requests
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| &r.body)
        .collect();
    assert_eq!(chats.len(), 2, "one request per prompt");
    // Print mode's UI, as the system prompt names it.
    let system = chats[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("\nUI: CLI (one-shot command line"),
        "{system}"
    );
    let cwd = env.cwd().display().to_string();
    let first = last_user(chats[0]);
    let parts = first.as_array().expect("text and image parts");
    assert_eq!(
        parts[0]["text"],
        format!(
            "piped context<file name=\"{cwd}/notes.txt\">\nhello notes\n</file>\n<file name=\"{cwd}/dot.png\"></file>\nsummarize"
        )
    );
    let url = parts[1]["image_url"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{url}"
    );
    let second = last_user(chats[1]);
    let text = match &second {
        Value::String(s) => s.clone(),
        other => other[0]["text"].as_str().unwrap().to_string(),
    };
    assert_eq!(text, "and again");
}

#[test]
fn a_missing_file_ends_the_run_before_anything_is_sent() {
    let env = env();
    let (code, stdout, stderr) = run(&env, &["@missing.txt", "explain"], "");
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    assert!(
        stderr.contains(&format!(
            "Error: File not found: {}/missing.txt",
            env.cwd().display()
        )),
        "{stderr}"
    );
    assert!(env.mock.requests().is_empty());
}
