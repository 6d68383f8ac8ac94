//! HTML export, checked in a real headless Chromium (Debian package `chromium`; `scripts/setup.sh`, run by the test command, installs it).
//!
//! Chromium loads the exported file from disk with networking disabled, and we read back the DOM it built:
//! message texts, tool names, collapsed tool output, summaries, and escaped (inert) hostile text.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use dreb_session::export_html::{HtmlExportOptions, ToolInfo, is_self_contained, render_html};
use dreb_session::{SessionManager, paths};
use serde_json::json;

fn chromium() -> PathBuf {
    for candidate in [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ] {
        if Path::new(candidate).exists() {
            return PathBuf::from(candidate);
        }
    }
    panic!(
        "headless Chromium is required for the HTML export test: run ./scripts/setup.sh (or apt-get install -y chromium)"
    );
}

/// Runs headless Chromium on `html` and returns the DOM it produced (`--dump-dom`), optionally a screenshot.
fn browser_dom(html: &Path, screenshot: Option<&Path>) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        // Belt and braces: any host name would fail to resolve.
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()));
    match screenshot {
        Some(shot) => {
            cmd.arg(format!("--screenshot={}", shot.display()))
                .arg("--window-size=1000,1400");
        }
        None => {
            cmd.arg("--dump-dom");
        }
    }
    let out = cmd
        .arg(format!("file://{}", html.display()))
        .stdin(Stdio::null())
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A session with everything the page renders: thinking, code, tool calls and results, bash, a custom message, a
/// compaction and a branch summary, plus hostile text.
fn rich_session(dir: &Path) -> SessionManager {
    let mut sm = SessionManager::create("/home/user/project", dir).unwrap();
    sm.append_model_change("anthropic", "claude-opus-4-6")
        .unwrap();
    sm.append_thinking_level_change("high").unwrap();
    sm.append_message(json!({"role":"user","content":[{"type":"text","text":"Fix the build <script>window.PWNED=1</script> please"}],"timestamp":1796106531171u64})).unwrap();
    sm.append_message(json!({"role":"assistant","content":[
        {"type":"thinking","thinking":"The linker probably misses a library."},
        {"type":"text","text":"Let me look at **build.rs**:\n\n```rust\nfn main() { println!(\"cargo:rustc-link-lib=ssl\"); }\n```"},
        {"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"cargo build 2>&1 | tail -n 3"}}],
        "api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-6",
        "usage":{"input":1200,"output":80,"cacheRead":0,"cacheWrite":0,"totalTokens":1280,"cost":{"input":0.006,"output":0.002,"cacheRead":0,"cacheWrite":0,"total":0.008}},
        "stopReason":"toolUse","timestamp":1796106532000u64})).unwrap();
    sm.append_message(json!({"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":"error: linking with `cc` failed\nnote: /usr/bin/ld: cannot find -lssl\nHIDDEN-TOOL-OUTPUT-MARKER <img src=x onerror=alert(1)>"}],"isError":false,"timestamp":1796106533000u64})).unwrap();
    sm.append_message(json!({"role":"assistant","content":[
        {"type":"toolCall","id":"call_2","name":"edit","arguments":{"path":"build.rs","oldText":"ssl","newText":"crypto"}}],
        "provider":"anthropic","model":"claude-opus-4-6","stopReason":"toolUse","timestamp":1796106534000u64})).unwrap();
    sm.append_message(json!({"role":"toolResult","toolCallId":"call_2","toolName":"edit","content":[{"type":"text","text":"Edited build.rs"}],"isError":false,"timestamp":1796106535000u64})).unwrap();
    sm.append_message(json!({"role":"bashExecution","command":"ls -la","output":"total 0\ndrwxr-xr-x build.rs\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1796106536000u64})).unwrap();
    let kept = sm
        .append_message(
            json!({"role":"user","content":"Now run the tests","timestamp":1796106537000u64}),
        )
        .unwrap();
    sm.append_message(json!({"role":"assistant","content":[{"type":"text","text":"All 42 tests pass."}],"provider":"anthropic","model":"claude-opus-4-6","stopReason":"stop","timestamp":1796106538000u64})).unwrap();
    sm.append_compaction(dreb_session::CompactionData {
        summary: "## Goal\nFix the build.\n## Progress\n- Switched to libcrypto".into(),
        first_kept_entry_id: kept,
        tokens_before: 15000,
        details: Some(json!({"readFiles": [], "modifiedFiles": ["build.rs"]})),
        from_hook: Some(false),
    })
    .unwrap();
    let leaf = sm.leaf_id().unwrap().to_string();
    sm.branch_with_summary(
        Some(&leaf),
        "The user explored a different branch: tried static linking.",
        None,
        Some(false),
    )
    .unwrap();
    sm.append_custom_message_entry(
        "system_warning",
        json!("[System Warning] Disk almost full."),
        true,
        None,
    )
    .unwrap();
    sm.append_message(json!({"role":"assistant","content":[{"type":"text","text":"Final answer: done."}],"provider":"anthropic","model":"claude-opus-4-6","stopReason":"stop","timestamp":1796106539000u64})).unwrap();
    sm.set_session_name("Build fix <b>session</b>").unwrap();
    sm
}

#[test]
fn export_renders_in_chromium_with_collapsed_tool_output() {
    let dir = tempfile::tempdir().unwrap();
    let sm = rich_session(dir.path());
    let out = dir.path().join("export.html");
    let options = HtmlExportOptions {
        output_path: Some(out.clone()),
        system_prompt: Some("You are a coding agent.".into()),
        tools: vec![ToolInfo {
            name: "bash".into(),
            description: "Run a shell command".into(),
        }],
    };
    assert_eq!(sm.export_html(&options).unwrap(), out);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(is_self_contained(&html), "no external references");
    assert!(!html.contains("http://") && !html.contains("https://"));

    let dom = browser_dom(&out, None);
    // What a reader sees.
    for text in [
        "Build fix &lt;b&gt;session&lt;/b&gt;",
        "Fix the build &lt;script&gt;window.PWNED=1&lt;/script&gt; please",
        "The linker probably misses a library.",
        "cargo:rustc-link-lib=ssl",
        "All 42 tests pass.",
        "Final answer: done.",
        "Compaction summary",
        "Switched to libcrypto",
        "Branch summary",
        "tried static linking",
        "[System Warning] Disk almost full.",
        "You are a coding agent.",
        "Run a shell command",
        "drwxr-xr-x build.rs",
        "Edited build.rs",
    ] {
        assert!(dom.contains(text), "missing {text:?}");
    }
    // Tool names and highlighted code.
    assert!(dom.contains("<span class=\"tool-name\">bash</span>"));
    assert!(dom.contains("<span class=\"tool-name\">edit</span>"));
    assert!(dom.contains("<span class=\"hl-kw\">fn</span>"));
    assert!(dom.contains("<span class=\"hl-del\">-ssl</span>"));
    // Tool output is present but collapsed.
    let marker = dom
        .find("HIDDEN-TOOL-OUTPUT-MARKER")
        .expect("tool output in the DOM");
    let details_start = dom[..marker].rfind("<details").unwrap();
    let details_tag = &dom[details_start..details_start + dom[details_start..].find('>').unwrap()];
    assert!(
        details_tag.contains("tool-output") && !details_tag.contains("open"),
        "{details_tag}"
    );
    // Hostile text stayed text: no injected elements.
    assert!(!dom.contains("<img src=\"x\""));
    assert!(!dom.contains("<script>window.PWNED"));
    assert!(dom.contains("&lt;img src=x onerror=alert(1)&gt;"));

    // A screenshot, for a human look (kept when DREB_EXPORT_SCREENSHOT names a path).
    let shot = std::env::var_os("DREB_EXPORT_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().join("shot.png"));
    browser_dom(&out, Some(&shot));
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);
}

#[test]
fn every_fixture_exports_and_renders() {
    let agent = tempfile::tempdir().unwrap();
    let dir = paths::default_session_dir("/home/user/project", agent.path());
    std::fs::create_dir_all(&dir).unwrap();
    for (name, expect) in [
        ("b-tool-openai", "hello-from-bash"),
        ("c-name-bash-label", "bash-rpc-output"),
        ("d-branched-compacted", "answer short one-word questions"),
        (
            "f-branch-summary",
            "The abandoned branch asked for two and got two.",
        ),
    ] {
        let sm = SessionManager::open(install(&dir, name), None).unwrap();
        let out = agent.path().join(format!("{name}.html"));
        sm.export_html(&HtmlExportOptions {
            output_path: Some(out.clone()),
            ..Default::default()
        })
        .unwrap();
        let dom = browser_dom(&out, None);
        assert!(dom.contains(expect), "{name}: missing {expect:?}");
        assert!(dom.contains("class=\"entry user\""), "{name}");
    }
}

#[test]
fn export_errors_match_the_reference() {
    let sm = SessionManager::in_memory("/x");
    assert_eq!(
        sm.export_html(&HtmlExportOptions::default())
            .unwrap_err()
            .to_string(),
        "Cannot export in-memory session to HTML"
    );
    let dir = tempfile::tempdir().unwrap();
    let sm = SessionManager::create("/x", dir.path()).unwrap();
    assert_eq!(
        sm.export_html(&HtmlExportOptions::default())
            .unwrap_err()
            .to_string(),
        "Nothing to export yet - start a conversation first"
    );
    // The page itself never depends on the file.
    assert!(render_html(&sm, &HtmlExportOptions::default()).starts_with("<!DOCTYPE html>"));
}

#[test]
fn gfm_markdown_renders_in_chromium_and_stays_inert() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionManager::create("/home/user/project", dir.path()).unwrap();
    sm.append_message(json!({"role":"user","content":"Compare them","timestamp":1796106531171u64}))
        .unwrap();
    let text = "| tool | *status* |\n|---|:-:|\n| cargo | ~~broken~~ fixed |\n\n\
                - [x] build\n- [ ] test\n  1. unit\n  2. e2e\n\n\
                See [the docs](https://docs.example.test/guide) or <https://x.example.test>.\n\
                ![diagram](https://img.example.test/d.png)\n\n\
                <iframe src=\"https://evil.example.test\"></iframe>";
    sm.append_message(json!({"role":"assistant","content":[{"type":"text","text":text}],
        "provider":"anthropic","model":"claude-opus-4-6","stopReason":"stop","timestamp":1796106532000u64}))
        .unwrap();
    let out = dir.path().join("gfm.html");
    sm.export_html(&HtmlExportOptions {
        output_path: Some(out.clone()),
        ..Default::default()
    })
    .unwrap();
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        is_self_contained(&html),
        "links and images are not followed"
    );

    let dom = browser_dom(&out, None);
    for part in [
        "<th style=\"text-align: center\"><em>status</em></th>",
        "<td style=\"text-align: center\"><del>broken</del> fixed</td>",
        "<input disabled=\"\" type=\"checkbox\" checked=\"\">",
        "<ol>\n<li>unit</li>\n<li>e2e</li>\n</ol>",
        "<span class=\"link\" title=\"https://docs.example.test/guide\">the docs</span>",
        "<span class=\"link-url\">(https://docs.example.test/guide)</span>",
        "[image: diagram]",
        "&lt;iframe src=\"https://evil.example.test\"&gt;&lt;/iframe&gt;",
    ] {
        assert!(dom.contains(part), "missing {part:?} in the DOM");
    }
    assert!(!dom.contains("<a ") && !dom.contains("<img") && !dom.contains("<iframe"));
}
