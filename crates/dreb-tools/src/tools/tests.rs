//! Behaviour tests of the file and search tools against real files in temp dirs.

use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use dreb_agent::{Tool, ToolError, ToolOutput};
use dreb_ai::UserBlock;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::edit::EditTool;
use super::find::FindTool;
use super::grep::GrepTool;
use super::ls::LsTool;
use super::read::{ReadOptions, ReadTool};
use super::test_util::{noop_update, text_of};
use super::write::WriteTool;

async fn run(tool: &dyn Tool, params: Value) -> Result<ToolOutput, ToolError> {
    tool.execute("call-1", params, CancellationToken::new(), noop_update())
        .await
}

async fn ok_text(tool: &dyn Tool, params: Value) -> String {
    text_of(
        &run(tool, params)
            .await
            .unwrap_or_else(|e| panic!("tool failed: {}", e.message)),
    )
}

async fn err_text(tool: &dyn Tool, params: Value) -> String {
    match run(tool, params).await {
        Ok(o) => panic!("expected an error, got {:?}", text_of(&o)),
        Err(e) => e.message,
    }
}

fn write(dir: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------- read ----------

#[tokio::test]
async fn read_whole_file_and_slices() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", "one\ntwo\nthree");
    let tool = ReadTool::new(dir.path(), ReadOptions::default());
    let out = run(&tool, json!({"path": "a.txt"})).await.unwrap();
    assert_eq!(text_of(&out), "one\ntwo\nthree");
    assert!(out.details.is_none());
    assert_eq!(
        ok_text(&tool, json!({"path": "@a.txt", "offset": 2, "limit": 1})).await,
        "two\n\n[1 more lines in file. Use offset=3 to continue.]"
    );
    assert_eq!(
        ok_text(&tool, json!({"path": "a.txt", "offset": 3})).await,
        "three"
    );
    assert_eq!(
        err_text(&tool, json!({"path": "a.txt", "offset": 10})).await,
        "Offset 10 is beyond end of file (3 lines total)"
    );
}

#[tokio::test]
async fn read_line_and_byte_limits() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "long.txt", numbered(2500));
    let tool = ReadTool::new(dir.path(), ReadOptions::default());
    let out = run(&tool, json!({"path": "long.txt"})).await.unwrap();
    let text = text_of(&out);
    assert!(text.starts_with("line 1\n"));
    assert!(
        text.ends_with("line 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]")
    );
    let t = &out.details.unwrap()["truncation"];
    assert_eq!(t["truncatedBy"], json!("lines"));
    assert_eq!(t["outputLines"], json!(2000));
    assert_eq!(t["maxBytes"], json!(51200));
    assert!(
        ok_text(&tool, json!({"path": "long.txt", "offset": 2001}))
            .await
            .ends_with("line 2500")
    );

    let wide = vec!["x".repeat(1000); 100].join("\n");
    write(dir.path(), "wide.txt", &wide);
    let text = ok_text(&tool, json!({"path": "wide.txt"})).await;
    assert!(
        text.ends_with(
            "\n\n[Showing lines 1-51 of 100 (50.0KB limit). Use offset=52 to continue.]"
        )
    );

    write(
        dir.path(),
        "huge.txt",
        format!("{}\nnext", "y".repeat(60 * 1024)),
    );
    assert_eq!(
        ok_text(&tool, json!({"path": "huge.txt"})).await,
        "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' huge.txt | head -c 51200]"
    );
}

#[tokio::test]
async fn read_errors_and_abort() {
    let dir = tempfile::tempdir().unwrap();
    let tool = ReadTool::new(dir.path(), ReadOptions::default());
    let missing = dir.path().join("nope.txt");
    assert_eq!(
        err_text(&tool, json!({"path": "nope.txt"})).await,
        format!(
            "ENOENT: no such file or directory, access '{}'",
            missing.display()
        )
    );
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    assert!(
        err_text(&tool, json!({"path": "sub"}))
            .await
            .starts_with("EISDIR: illegal operation on a directory")
    );
    let cancel = CancellationToken::new();
    cancel.cancel();
    write(dir.path(), "a.txt", "x");
    let err = tool
        .execute("c", json!({"path": "a.txt"}), cancel, noop_update())
        .await
        .unwrap_err();
    assert_eq!(err.message, "Operation aborted");
}

#[tokio::test]
async fn read_image_and_binary() {
    let dir = tempfile::tempdir().unwrap();
    let img = image::DynamicImage::new_rgb8(4, 3);
    let mut png = std::io::Cursor::new(Vec::new());
    img.write_to(&mut png, image::ImageFormat::Png).unwrap();
    write(dir.path(), "pic.dat", png.get_ref()); // sniffed by content, not by extension
    let tool = ReadTool::new(dir.path(), ReadOptions::default());
    let out = run(&tool, json!({"path": "pic.dat"})).await.unwrap();
    assert_eq!(out.content.len(), 2);
    assert_eq!(text_of(&out), "Read image file [image/png]");
    match &out.content[1] {
        UserBlock::Image(i) => {
            assert_eq!(i.mime_type, "image/png");
            assert_eq!(
                i.data,
                base64::engine::general_purpose::STANDARD.encode(png.get_ref())
            );
        }
        other => panic!("expected image, got {other:?}"),
    }
    let wire = serde_json::to_value(&out.content[1]).unwrap();
    assert_eq!(wire["type"], json!("image"));
    assert_eq!(wire["mimeType"], json!("image/png"));

    write(
        dir.path(),
        "blob.bin",
        [0u8, 159, 146, 150, b'o', b'k', 0xff],
    );
    let text = ok_text(&tool, json!({"path": "blob.bin"})).await;
    assert!(text.contains("ok") && text.contains('\u{FFFD}'));
}

// ---------- write ----------

#[tokio::test]
async fn write_creates_parents_and_counts_js_length() {
    let dir = tempfile::tempdir().unwrap();
    let tool = WriteTool::new(dir.path());
    assert_eq!(
        ok_text(&tool, json!({"path": "deep/er/f.txt", "content": "é😀"})).await,
        "Successfully wrote 3 bytes to deep/er/f.txt"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("deep/er/f.txt")).unwrap(),
        "é😀"
    );
    ok_text(&tool, json!({"path": "deep/er/f.txt", "content": "new"})).await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("deep/er/f.txt")).unwrap(),
        "new"
    );
}

// ---------- edit ----------

#[tokio::test]
async fn edit_replaces_and_reports_diff() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "f.txt", "alpha\nbeta\ngamma\n");
    let tool = EditTool::new(dir.path());
    let out = run(
        &tool,
        json!({"path": "f.txt", "oldText": "beta", "newText": "BETA"}),
    )
    .await
    .unwrap();
    assert_eq!(text_of(&out), "Successfully replaced text in f.txt.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "alpha\nBETA\ngamma\n"
    );
    assert_eq!(
        out.details.unwrap(),
        json!({"diff": " 1 alpha\n-2 beta\n+2 BETA\n 3 gamma", "firstChangedLine": 2})
    );
}

#[tokio::test]
async fn edit_keeps_crlf_and_bom() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "w.txt", "\u{FEFF}one\r\ntwo\r\n");
    let tool = EditTool::new(dir.path());
    ok_text(
        &tool,
        json!({"path": "w.txt", "oldText": "one\ntwo", "newText": "1\n2"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("w.txt")).unwrap(),
        "\u{FEFF}1\r\n2\r\n"
    );
}

#[tokio::test]
async fn edit_fuzzy_match_normalises_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "q.txt", "say “hello” — world   \nnext\n");
    let tool = EditTool::new(dir.path());
    ok_text(
        &tool,
        json!({"path": "q.txt", "oldText": "say \"hello\" - world\n", "newText": "say hi\n"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("q.txt")).unwrap(),
        "say hi\nnext\n"
    );
}

#[tokio::test]
async fn edit_error_texts() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "f.txt", "a x a x\n");
    let tool = EditTool::new(dir.path());
    assert_eq!(
        err_text(
            &tool,
            json!({"path": "f.txt", "oldText": "zzz", "newText": "y"})
        )
        .await,
        "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."
    );
    assert_eq!(
        err_text(
            &tool,
            json!({"path": "f.txt", "oldText": "x", "newText": "y"})
        )
        .await,
        "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."
    );
    assert_eq!(
        err_text(
            &tool,
            json!({"path": "f.txt", "oldText": "a x a", "newText": "a x a"})
        )
        .await,
        "No changes made to f.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
    );
    assert_eq!(
        err_text(
            &tool,
            json!({"path": "nope.txt", "oldText": "a", "newText": "b"})
        )
        .await,
        "Could not access file: nope.txt. Error code: ENOENT"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "a x a x\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_of_one_file_serialise() {
    let dir = tempfile::tempdir().unwrap();
    let n = 24;
    let body: String = (0..n).map(|i| format!("marker-{i}\n")).collect();
    write(dir.path(), "shared.txt", &body);
    // One tool through a symlink and one through the real path: both must land in the same queue.
    std::os::unix::fs::symlink(dir.path().join("shared.txt"), dir.path().join("link.txt")).unwrap();
    let tool = Arc::new(EditTool::new(dir.path()));
    let mut handles = Vec::new();
    for i in 0..n {
        let tool = tool.clone();
        let path = if i % 2 == 0 { "shared.txt" } else { "link.txt" };
        handles.push(tokio::spawn(async move {
            let params = json!({"path": path, "oldText": format!("marker-{i}\n"), "newText": format!("done-{i}\n")});
            tool.execute("c", params, CancellationToken::new(), noop_update()).await
        }));
    }
    for h in handles {
        h.await.unwrap().unwrap();
    }
    let result = std::fs::read_to_string(dir.path().join("shared.txt")).unwrap();
    let expected: String = (0..n).map(|i| format!("done-{i}\n")).collect();
    assert_eq!(result, expected, "an edit was lost: mutations interleaved");
}

// ---------- ls ----------

#[tokio::test]
async fn ls_lists_sorted_with_limits() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "b.txt", "");
    write(dir.path(), "A.md", "");
    write(dir.path(), ".env", "");
    write(dir.path(), "sub/x", "");
    std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("broken")).unwrap();
    let tool = LsTool::new(dir.path());
    assert_eq!(ok_text(&tool, json!({})).await, ".env\nA.md\nb.txt\nsub/");
    let out = run(&tool, json!({"path": ".", "limit": 2})).await.unwrap();
    assert_eq!(
        text_of(&out),
        ".env\nA.md\n\n[2 entries limit reached. Use limit=4 for more]"
    );
    assert_eq!(out.details.unwrap(), json!({"entryLimitReached": 2}));
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    assert_eq!(
        ok_text(&tool, json!({"path": "empty"})).await,
        "(empty directory)"
    );
    assert_eq!(
        err_text(&tool, json!({"path": "zz"})).await,
        format!("Path not found: {}", dir.path().join("zz").display())
    );
    assert_eq!(
        err_text(&tool, json!({"path": "b.txt"})).await,
        format!("Not a directory: {}", dir.path().join("b.txt").display())
    );
}

#[tokio::test]
async fn ls_byte_limit() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..400 {
        write(dir.path(), &format!("{:0>200}", i), "");
    }
    let tool = LsTool::new(dir.path());
    let out = run(&tool, json!({})).await.unwrap();
    assert!(text_of(&out).ends_with("\n\n[50.0KB limit reached]"));
    assert_eq!(
        out.details.unwrap()["truncation"]["truncatedBy"],
        json!("bytes")
    );
}

// ---------- find / grep ----------

/// A small git-like project: `.git` marks the repo root so `.gitignore` applies.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join(".git")).unwrap();
    write(d, ".git/config", "needle in git internals\n");
    write(d, ".gitignore", "target/\n*.log\n.dreb/\n");
    write(
        d,
        "src/main.rs",
        "fn main() {\n    println!(\"needle\");\n}\n",
    );
    write(d, "src/lib/util.rs", "// Needle here\npub fn util() {}\n");
    write(d, "README.md", "a needle in docs\n");
    write(d, ".hidden.rs", "needle hidden\n");
    write(d, "target/out.rs", "needle ignored\n");
    write(d, "debug.log", "needle ignored\n");
    write(d, ".dreb/notes/plan.md", "needle plan\n");
    write(d, ".dreb/secrets/key.md", "needle secret\n");
    dir
}

#[tokio::test]
async fn find_respects_gitignore_and_globs() {
    let dir = project();
    let tool = FindTool::new(dir.path());
    assert_eq!(
        ok_text(&tool, json!({"pattern": "*.rs"})).await,
        ".hidden.rs\nsrc/lib/util.rs\nsrc/main.rs"
    );
    assert_eq!(
        ok_text(&tool, json!({"pattern": "src/**/*.rs"})).await,
        "src/lib/util.rs\nsrc/main.rs"
    );
    assert_eq!(
        ok_text(&tool, json!({"pattern": "*.md"})).await,
        ".dreb/notes/plan.md\nREADME.md"
    );
    assert_eq!(ok_text(&tool, json!({"pattern": "lib"})).await, "src/lib/");
    assert_eq!(
        ok_text(&tool, json!({"pattern": "*.rs", "path": "src"})).await,
        "lib/util.rs\nmain.rs"
    );
    assert_eq!(
        ok_text(&tool, json!({"pattern": "*.py"})).await,
        "No files found matching pattern"
    );
    let out = run(&tool, json!({"pattern": "*.rs", "limit": 2}))
        .await
        .unwrap();
    assert_eq!(
        text_of(&out),
        ".hidden.rs\nsrc/lib/util.rs\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    );
    assert_eq!(out.details.unwrap(), json!({"resultLimitReached": 2}));
    assert_eq!(
        err_text(&tool, json!({"pattern": "*", "path": "missing"})).await,
        format!("Path not found: {}", dir.path().join("missing").display())
    );
}

/// The greps of one turn run at the same time and share their walks: each answer is the one it gets alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn greps_at_the_same_time_answer_as_alone() {
    let dir = project();
    for i in 0..300 {
        write(
            dir.path(),
            &format!("src/gen/m{i:03}.rs"),
            format!("fn f{i}() {{}} // needle {i}\nuse std::fmt;\n"),
        );
    }
    let tool = Arc::new(GrepTool::new(dir.path()));
    let calls = [
        json!({"pattern": "needle"}),
        json!({"pattern": "absent-word"}),
        json!({"pattern": "use std", "limit": 7}),
        json!({"pattern": "needle 2[0-9]+", "glob": "*.rs"}),
        json!({"pattern": "NEEDLE", "ignoreCase": true, "limit": 500}),
    ];
    let mut alone = Vec::new();
    for c in &calls {
        alone.push(ok_text(tool.as_ref(), c.clone()).await);
    }
    for _ in 0..5 {
        let together: Vec<_> = calls
            .iter()
            .map(|c| {
                let (tool, c) = (tool.clone(), c.clone());
                tokio::spawn(async move { ok_text(tool.as_ref(), c).await })
            })
            .collect();
        for (i, t) in together.into_iter().enumerate() {
            assert_eq!(t.await.unwrap(), alone[i], "call {i}");
        }
    }
}

#[tokio::test]
async fn grep_respects_gitignore_and_formats() {
    let dir = project();
    let tool = GrepTool::new(dir.path());
    assert_eq!(
        ok_text(&tool, json!({"pattern": "needle"})).await,
        ".dreb/notes/plan.md:1: needle plan\n.hidden.rs:1: needle hidden\nREADME.md:1: a needle in docs\nsrc/main.rs:2:     println!(\"needle\");"
    );
    assert_eq!(
        ok_text(
            &tool,
            json!({"pattern": "needle", "ignoreCase": true, "glob": "*.rs", "path": "src"})
        )
        .await,
        "lib/util.rs:1: // Needle here\nmain.rs:2:     println!(\"needle\");"
    );
    assert_eq!(
        ok_text(
            &tool,
            json!({"pattern": "println!(", "literal": true, "context": 1, "path": "src/main.rs"})
        )
        .await,
        "main.rs-1- fn main() {\nmain.rs:2:     println!(\"needle\");\nmain.rs-3- }"
    );
    assert_eq!(
        ok_text(&tool, json!({"pattern": "absent-word"})).await,
        "No matches found"
    );
    let out = run(&tool, json!({"pattern": "needle", "limit": 1}))
        .await
        .unwrap();
    assert_eq!(
        text_of(&out),
        ".dreb/notes/plan.md:1: needle plan\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    );
    assert_eq!(out.details.unwrap(), json!({"matchLimitReached": 1}));
    assert!(!err_text(&tool, json!({"pattern": "("})).await.is_empty());
    assert_eq!(
        err_text(&tool, json!({"pattern": "x", "path": "nope"})).await,
        format!("Path not found: {}", dir.path().join("nope").display())
    );
}

#[tokio::test]
async fn grep_and_find_byte_limit() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..300)
        .map(|i| format!("needle {i} {}\n", "q".repeat(400)))
        .collect();
    write(dir.path(), "big.txt", &body);
    let tool = GrepTool::new(dir.path());
    let out = run(&tool, json!({"pattern": "needle", "limit": 1000}))
        .await
        .unwrap();
    let text = text_of(&out);
    assert!(
        text.ends_with("\n\n[50.0KB limit reached]"),
        "{}",
        &text[text.len() - 80..]
    );
    assert_eq!(
        out.details.unwrap()["truncation"]["truncatedBy"],
        json!("bytes")
    );

    for i in 0..600 {
        write(dir.path(), &format!("d/{}{i}.txt", "n".repeat(100)), "");
    }
    let find = FindTool::new(dir.path());
    let text = ok_text(&find, json!({"pattern": "*.txt"})).await;
    assert!(text.ends_with("\n\n[50.0KB limit reached]"));
}

#[tokio::test]
async fn grep_long_lines_and_binary_files() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "long.txt",
        format!("needle{}\n", "z".repeat(600)),
    );
    write(dir.path(), "bin.dat", b"needle\0binary\n");
    let tool = GrepTool::new(dir.path());
    let out = run(&tool, json!({"pattern": "needle"})).await.unwrap();
    let text = text_of(&out);
    assert!(text.starts_with(&format!(
        "long.txt:1: needle{}... [truncated]",
        "z".repeat(494)
    )));
    assert!(
        text.ends_with("\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]")
    );
    assert!(!text.contains("bin.dat"));
    assert_eq!(out.details.unwrap(), json!({"linesTruncated": true}));
}

#[test]
fn every_schema_is_an_object_schema() {
    use super::*;
    let cwd = std::env::temp_dir();
    let tools: Vec<Box<dyn Tool>> = vec![
        Box::new(read::ReadTool::new(&cwd, Default::default())),
        Box::new(write::WriteTool::new(&cwd)),
        Box::new(edit::EditTool::new(&cwd)),
        Box::new(ls::LsTool::new(&cwd)),
        Box::new(find::FindTool::new(&cwd)),
        Box::new(grep::GrepTool::new(&cwd)),
        Box::new(bash::BashTool::new(&cwd, Default::default())),
        Box::new(tasks::TasksUpdateTool::new(Arc::new(|_| {}))),
        Box::new(suggest_next::SuggestNextTool::new(Arc::new(|_| {}))),
        Box::new(suggest_next::WaitTool::default()),
        Box::new(ask_user::AskUserTool::new(None)),
    ];
    for t in tools {
        let d = t.definition();
        assert_eq!(d.parameters["type"], json!("object"), "{}", d.name);
        assert!(!d.description.is_empty());
        for (name, prop) in d.parameters["properties"].as_object().unwrap() {
            assert!(
                prop.get("description").is_some() || name == "status",
                "{}.{name} lacks a description",
                d.name
            );
        }
    }
}
