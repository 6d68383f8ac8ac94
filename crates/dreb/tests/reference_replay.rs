//! Replays the reference transcripts (`tests/fixtures/reference/NAME.in.jsonl`, recorded from upstream dreb
//! 2.61.1) through the real binary and compares with `NAME.out.jsonl`: the order of responses and event types,
//! `command`/`success` of every response, and the shape (keys and JSON types) of every response's `data`.
//! Transcripts that do not match yet are listed in `KNOWN_GAPS` with the reason; the test fails when a listed gap
//! closes (so the list stays honest) or a new one opens.

mod common;

use std::collections::{BTreeMap, HashMap};

use common::{Dreb, Env, fixture, is_response, normalise, read_jsonl, shape};
use serde_json::Value;

/// Transcripts whose replay differs from the reference today, with why. Remove an entry when it passes.
const KNOWN_GAPS: &[(&str, &str)] = &[];

/// One replayed transcript: our frames and what differs from the reference.
struct Replay {
    ours: Vec<Value>,
    problems: Vec<String>,
}

/// A response or event, reduced to what must match exactly.
fn kind(f: &Value) -> String {
    let ty = f.get("type").and_then(Value::as_str).unwrap_or("?");
    if is_response(f) {
        format!(
            "response {} success={}",
            f.get("command")
                .and_then(Value::as_str)
                .unwrap_or("<no command>"),
            f.get("success").map(Value::to_string).unwrap_or_default()
        )
    } else if ty == "message_update" {
        // Deltas per message are the mock's; the sub-event type is what matters.
        format!(
            "message_update {}",
            f["assistantMessageEvent"]["type"].as_str().unwrap_or("?")
        )
    } else {
        ty.to_string()
    }
}

/// Records reference-id → our-id for generated ids found at the same place in a reference and our `data`, so that
/// later input lines naming recorded entry ids (e.g. `navigate_tree` targets) can name ours.
fn map_ids(reference: &Value, ours: &Value, map: &mut HashMap<String, String>) {
    match (reference, ours) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                if let Some(vb) = b.get(k) {
                    if let (Value::String(sa), Value::String(sb)) = (va, vb)
                        && (k == "id" || k.ends_with("Id"))
                        && sa.len() == 8
                    {
                        map.insert(sa.clone(), sb.clone());
                    }
                    map_ids(va, vb, map);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => a.iter().zip(b).for_each(|(x, y)| map_ids(x, y, map)),
        _ => {}
    }
}

/// Runs `NAME.in.jsonl` through `dreb` line by line, waiting like the recording did, and compares.
fn replay(env: &Env, name: &str, mut dreb: Dreb) -> Replay {
    let inputs = std::fs::read_to_string(fixture(&format!("{name}.in.jsonl"))).unwrap();
    let reference = read_jsonl(&fixture(&format!("{name}.out.jsonl")));
    let ref_responses: Vec<&Value> = reference.iter().filter(|f| is_response(f)).collect();
    let mut ids = HashMap::new();
    let mut ours = Vec::new();
    for (i, line) in inputs.lines().enumerate() {
        let mut line = line.to_string();
        for (from, to) in &ids {
            line = line.replace(&format!("\"{from}\""), &format!("\"{to}\""));
        }
        let is_prompt = serde_json::from_str::<Value>(&line).is_ok_and(|v| v["type"] == "prompt");
        dreb.write_raw(format!("{line}\n").as_bytes());
        let frames = dreb.wait_reply(is_prompt);
        if let (Some(r), Some(o)) = (
            ref_responses.get(i),
            frames.iter().rev().find(|f| is_response(f)),
        ) {
            map_ids(&r["data"], &o["data"], &mut ids);
        }
        ours.extend(frames);
    }
    let (code, rest, stderr) = dreb.finish();
    ours.extend(rest);
    let mut problems = Vec::new();
    if code != 0 {
        problems.push(format!("exit code {code}; stderr: {stderr}"));
    }
    let ref_kinds: Vec<String> = reference.iter().map(kind).collect();
    let our_kinds: Vec<String> = ours.iter().map(kind).collect();
    if ref_kinds != our_kinds {
        problems.push(format!(
            "frame sequence differs:\n  reference: {ref_kinds:?}\n  ours:      {our_kinds:?}"
        ));
    }
    // Event frames: same keys and JSON types, pairwise (only meaningful when the sequences line up). The partial
    // message copies inside `message_update` are excluded: the README calls them recording artefacts (they can
    // hold text of later deltas and the reference's internal streaming fields such as `index`/`partialJson`).
    if ref_kinds == our_kinds {
        for (r, o) in reference.iter().zip(&ours).filter(|(r, _)| !is_response(r)) {
            let (rs, os) = (shape(&summarise(r)), shape(&summarise(o)));
            if rs != os {
                problems.push(format!(
                    "`{}` event shape differs:\n  reference: {rs}\n  ours:      {os}",
                    kind(r)
                ));
            }
        }
    }
    let our_responses: Vec<&Value> = ours.iter().filter(|f| is_response(f)).collect();
    for (r, o) in ref_responses.iter().zip(&our_responses) {
        if r.get("id") != o.get("id") {
            problems.push(format!(
                "response id: reference {:?}, ours {:?}",
                r.get("id"),
                o.get("id")
            ));
        }
        let (rs, os) = (shape(&r["data"]), shape(&o["data"]));
        // Command lists hold no volatile values (the test binary runs with the recording's package dir), so they
        // must match exactly, bundled skills included.
        if r["command"] == "get_commands" && r["data"] != o["data"] {
            problems.push(format!(
                "`get_commands` data differs:\n  reference: {}\n  ours:      {}",
                r["data"], o["data"]
            ));
        }
        if rs != os {
            problems.push(format!(
                "`{}` data shape differs:\n  reference: {rs}\n  ours:      {os}",
                r["command"].as_str().unwrap_or("?")
            ));
        }
        // Error texts are compared exactly, except where DESIGN.md documents a deliberate difference: a JSON parse
        // error names the parser's message, which is JavaScript's in the reference and serde's in ours.
        let parse_error = r["command"] == "parse";
        if !parse_error && r.get("error") != o.get("error") {
            problems.push(format!(
                "error text: reference {:?}, ours {:?}",
                r.get("error"),
                o.get("error")
            ));
        }
        if parse_error
            && !o["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("Failed to parse JSON: "))
        {
            problems.push(format!("parse error text: ours {:?}", o.get("error")));
        }
    }
    let _ = env;
    Replay { ours, problems }
}

fn check_all(results: BTreeMap<String, Replay>, home_of: &HashMap<String, std::path::PathBuf>) {
    let mut failing = BTreeMap::new();
    for (name, r) in &results {
        let normalised: Vec<Value> = r
            .ours
            .iter()
            .map(|f| normalise(&summarise(f), &home_of[name]))
            .collect();
        insta::assert_json_snapshot!(format!("replay__{name}"), normalised);
        if !r.problems.is_empty() {
            failing.insert(name.clone(), r.problems.join("\n"));
        }
    }
    let known: BTreeMap<&str, &str> = KNOWN_GAPS.iter().copied().collect();
    let mut report = String::new();
    for (name, problems) in &failing {
        if !known.contains_key(name.as_str()) {
            report.push_str(&format!(
                "\n== {name} differs from the reference (not in KNOWN_GAPS):\n{problems}\n"
            ));
        }
    }
    for name in known.keys() {
        if results.contains_key(*name) && !failing.contains_key(*name) {
            report.push_str(&format!(
                "\n== {name} now matches the reference: remove it from KNOWN_GAPS\n"
            ));
        }
    }
    assert!(report.is_empty(), "{report}");
}

/// `message_update` frames carry whole partial messages; the snapshot keeps only the sub-event (the reference
/// README says to compare those frames semantically).
fn summarise(f: &Value) -> Value {
    if f["type"] == "message_update" {
        let mut e = f["assistantMessageEvent"].clone();
        if let Value::Object(m) = &mut e {
            m.remove("partial");
        }
        serde_json::json!({"type": "message_update", "assistantMessageEvent": e})
    } else {
        f.clone()
    }
}

#[test]
fn fresh_agent_dir_transcripts() {
    let fresh = [
        ("get_state_fresh", "models.json"),
        ("get_settings", "models.json"),
        ("set_settings", "models.json"),
        ("set_model_thinking", "models.json"),
        (
            "set_model_thinking_reasoning",
            "models-with-reasoning-model.json",
        ),
        ("runtime_setters", "models.json"),
        ("get_commands", "models.json"),
        ("get_available_models", "models.json"),
        ("malformed_input", "models.json"),
    ];
    let mut results = BTreeMap::new();
    let mut homes = HashMap::new();
    for (name, models) in fresh {
        let env = Env::with_models(models);
        let dreb = env.spawn(&[]);
        results.insert(name.to_string(), replay(&env, name, dreb));
        homes.insert(name.to_string(), env.home.path().to_path_buf());
    }
    check_all(results, &homes);
}

#[test]
fn sessions_agent_dir_transcripts() {
    // One shared agent dir and cwd, in recording order, with the reference's pre-seeded settings.
    let env = Env::new();
    std::fs::copy(
        fixture("settings-sessions-agent-dir.json"),
        env.agent_dir().join("settings.json"),
    )
    .unwrap();
    let mut results = BTreeMap::new();
    let mut homes = HashMap::new();
    let home = env.home.path().to_path_buf();
    for name in [
        "prompt_text",
        "prompt_tool_openai",
        "prompt_tool_anthropic",
        "get_session_stats",
        "session_c",
        "session_d",
        "session_f",
    ] {
        let dreb = if name == "prompt_tool_anthropic" {
            env.spawn_raw(
                &[
                    "--mode",
                    "rpc",
                    "--provider",
                    "mock-anthropic",
                    "--model",
                    "mock-claude",
                ],
                &[],
            )
        } else {
            env.spawn(&[])
        };
        results.insert(name.to_string(), replay(&env, name, dreb));
    }
    // get_tree / get_fork_messages / fork open the reference's own session d (so the recorded entry ids match).
    std::fs::create_dir_all(env.session_dir()).unwrap();
    let d = env
        .session_dir()
        .join("2026-12-01T06-29-01-760Z_7169ba87-00a1-477d-b2db-5e82de7274d0.jsonl");
    let text = std::fs::read_to_string(fixture("d-branched-compacted.jsonl")).unwrap();
    std::fs::write(
        &d,
        text.replace("/home/user/project", &env.cwd().to_string_lossy()),
    )
    .unwrap();
    let d = d.to_string_lossy().to_string();
    for name in ["get_tree", "get_fork_messages", "fork"] {
        let dreb = env.spawn(&["--session", &d]);
        results.insert(name.to_string(), replay(&env, name, dreb));
    }
    for name in ["list_sessions", "list_all_sessions"] {
        let dreb = env.spawn(&[]);
        results.insert(name.to_string(), replay(&env, name, dreb));
    }
    for name in results.keys() {
        homes.insert(name.clone(), home.clone());
    }
    check_all(results, &homes);
}
