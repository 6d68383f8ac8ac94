//! The Python example of `spec/rpc.md`, run unchanged against the real binary: `dreb` on PATH is a symlink to
//! ours, and the agent dir's models.json points at the mock LLM. The snippet is in
//! `tests/fixtures/python/rpc_md_snippet.py`; the spec's rendering lost the indentation, which is restored there
//! (nothing else differs).

mod common;

use std::process::Command;

use common::Env;

/// The real interpreter behind `python3` (a version-manager shim may need variables the clean env drops).
fn python() -> Option<String> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn spec_python_snippet_prints_the_mock_reply() {
    let Some(python) = python() else {
        panic!("python3 is required for this test");
    };
    let env = Env::new();
    // No --provider in the snippet: the default model is the first available one, so only the mock provider.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_dreb"), bin.path().join("dreb")).unwrap();
    let script = bin.path().join("snippet.py");
    std::fs::copy(common::fixture("../python/rpc_md_snippet.py"), &script).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(python)
        .arg(&script)
        .env_clear()
        .env("PATH", path)
        .env("HOME", env.home.path())
        .env("DREB_CODING_AGENT_DIR", env.agent_dir())
        .current_dir(env.cwd())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}; stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout,
        "Hello from the mock LLM.\n",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.mock.requests().len(), 1);
}
