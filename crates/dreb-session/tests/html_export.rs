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
    browser_dom_at(html, "", screenshot)
}

/// [`browser_dom`] with a URL fragment (`#n3`, `#search=x`), which the page's script reads on load.
fn browser_dom_at(html: &Path, fragment: &str, screenshot: Option<&Path>) -> String {
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
        .arg(format!("file://{}{fragment}", html.display()))
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
    // The only links are the sidebar's in-page ones.
    let entries = &dom[dom.find("id=\"entries\"").unwrap()..];
    assert!(!entries.contains("<a ") && !dom.contains("<img") && !dom.contains("<iframe"));
    assert!(!dom.contains("href=\"http"));
}

/// The opening tag of the element with DOM id `id`.
fn tag_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}"));
    let start = dom[..at].rfind('<').unwrap();
    &dom[start..at + dom[at..].find('>').unwrap()]
}

/// The sidebar link of node `n`.
fn link_of(dom: &str, n: usize) -> &str {
    let at = dom
        .find(&format!("href=\"#n{n}\""))
        .unwrap_or_else(|| panic!("no link to #n{n}"));
    let start = dom[..at].rfind('<').unwrap();
    &dom[start..at + dom[at..].find('>').unwrap()]
}

/// Two branches from the first answer; the leaf is on the second.
fn branched_session(dir: &Path) -> SessionManager {
    let mut sm = SessionManager::create("/home/user/project", dir).unwrap();
    let assistant = |text: &str, t: u64| {
        json!({"role":"assistant","content":[{"type":"text","text":text}],"provider":"anthropic",
            "model":"claude-opus-4-6","stopReason":"stop","timestamp":t})
    };
    sm.append_message(json!({"role":"user","content":"How do I speed up the build?","timestamp":1796106531000u64}))
        .unwrap();
    let first = sm
        .append_message(assistant(
            "Use **sccache** or split the crate.",
            1796106532000,
        ))
        .unwrap();
    sm.append_message(
        json!({"role":"user","content":"Try ALPHA-sccache then","timestamp":1796106533000u64}),
    )
    .unwrap();
    sm.append_message(assistant("alpha: sccache saved 40%.", 1796106534000))
        .unwrap();
    sm.move_leaf(&first).unwrap();
    sm.append_message(json!({"role":"user","content":"Split the crate instead, BETA","timestamp":1796106535000u64}))
        .unwrap();
    sm.append_message(assistant("beta: the crate is split in two.", 1796106536000))
        .unwrap();
    sm
}

#[test]
fn the_tree_sidebar_shows_a_branch_per_click_and_searches_every_branch() {
    let dir = tempfile::tempdir().unwrap();
    let sm = branched_session(dir.path());
    let out = dir.path().join("tree.html");
    sm.export_html(&HtmlExportOptions {
        output_path: Some(out.clone()),
        ..Default::default()
    })
    .unwrap();
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(is_self_contained(&html));
    // Nodes in file order: 0 user, 1 answer, 2 ALPHA, 3 alpha reply, 4 BETA, 5 beta reply (the leaf).
    let hidden = |dom: &str, n: usize| tag_of(dom, &format!("n{n}")).contains("hidden");

    // At first: the current branch, both branches in the tree, the leaf marked.
    let dom = browser_dom(&out, None);
    assert_eq!(
        dom.matches("<li class=\"fork\">").count(),
        2,
        "one list per branch"
    );
    for n in [0, 1, 4, 5] {
        assert!(!hidden(&dom, n), "n{n} shown");
        assert!(link_of(&dom, n).contains("on-path"), "n{n} on the path");
    }
    for n in [2, 3] {
        assert!(hidden(&dom, n), "n{n} hidden");
        assert!(!link_of(&dom, n).contains("on-path"));
    }
    assert!(link_of(&dom, 5).contains("leaf"));
    assert!(dom.contains("6 entries, 1 branch point"));
    // Every branch's text is in the file (search reads it), hidden or not.
    assert!(
        dom.contains("Try ALPHA-sccache then") && dom.contains("Split the crate instead, BETA")
    );

    // Jump to the other branch (a tree link is `#n2`): its path down to its newest leaf is shown instead.
    let dom = browser_dom_at(&out, "#n2", None);
    for n in [0, 1, 2, 3] {
        assert!(!hidden(&dom, n), "n{n} shown on the ALPHA branch");
    }
    for n in [4, 5] {
        assert!(hidden(&dom, n), "n{n} hidden on the ALPHA branch");
    }
    assert!(link_of(&dom, 2).contains("selected"));
    let shot = std::env::var_os("DREB_EXPORT_TREE_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().join("tree.png"));
    browser_dom_at(&out, "#n2", Some(&shot));
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);

    // Search covers every branch: the ALPHA user message and its reply match, the rest is dimmed.
    let dom = browser_dom_at(&out, "#search=alpha", None);
    assert!(dom.contains("2 matches"), "status");
    for n in [2, 3] {
        assert!(link_of(&dom, n).contains("match"), "n{n} matches");
    }
    for n in [0, 1, 4, 5] {
        assert!(link_of(&dom, n).contains("dim"), "n{n} dimmed");
    }
    assert!(tag_of(&dom, "n3").contains("hit"));
}

#[test]
fn a_deep_branching_session_renders_without_recursion() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionManager::create("/x", dir.path()).unwrap();
    let mut ids = Vec::new();
    for i in 0..3000u64 {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        ids.push(
            sm.append_message(json!({"role": role, "content": format!("m{i}"), "timestamp": 1796106531000u64 + i}))
                .unwrap(),
        );
        // A side branch every 100 entries.
        if i % 100 == 99 {
            sm.move_leaf(&ids[ids.len() - 2]).unwrap();
            sm.append_message(json!({"role": "user", "content": format!("side {i}"), "timestamp": 1796106531000u64 + i}))
                .unwrap();
            sm.move_leaf(ids.last().unwrap()).unwrap();
        }
    }
    let html = render_html(&sm, &HtmlExportOptions::default());
    assert_eq!(html.matches("<div class=\"node\"").count(), 3030);
    assert_eq!(html.matches("<li class=\"fork\">").count(), 60);
    assert!(html.contains(">side 2999<") && html.contains(">m2999<"));
}
