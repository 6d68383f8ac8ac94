//! The `skill` tool and the system prompt's `<available_skills>` list, through the real binary: the model loads a
//! skill by name (expanded like `/skill:name args`), unknown and user-only skills get guidance instead, and the tool
//! is active whatever `--tools` says.

mod common;

use common::{Dreb, Env, Frame};
use dreb_mock_llm::Scenario;
use serde_json::{Value, json};

/// A mock that calls `skill` with `arguments` when the user's message contains the trigger, then answers "Done".
fn env_calling_skills(calls: &[(&str, Value)]) -> Env {
    let mut turns: Vec<Value> = calls
        .iter()
        .map(|(trigger, arguments)| {
            json!({
                "when": {"lastUserContains": trigger, "afterToolResult": false},
                "toolCalls": [{"name": "skill", "arguments": arguments}]
            })
        })
        .collect();
    turns.push(json!({"when": {"afterToolResult": true}, "repeat": true, "text": ["Done"]}));
    let scenario: Scenario = serde_json::from_value(json!({ "turns": turns })).unwrap();
    Env::with_scenario(scenario)
}

fn write_skill(env: &Env, name: &str, frontmatter: &str, body: &str) -> std::path::PathBuf {
    let dir = env.cwd().join(".dreb/skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\n{frontmatter}\n---\n{body}\n"),
    )
    .unwrap();
    dir
}

/// The `skill` call's `tool_execution_end` of a prompt's frames.
fn skill_result(frames: &[Frame]) -> Value {
    frames
        .iter()
        .find(|f| f["type"] == "tool_execution_end" && f["toolName"] == "skill")
        .unwrap_or_else(|| panic!("no skill result in {frames:?}"))
        .clone()
}

fn result_text(end: &Value) -> String {
    end["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

fn prompt(dreb: &mut Dreb, id: &str, message: &str) -> Vec<Frame> {
    dreb.exchange(&json!({"id": id, "type": "prompt", "message": message}))
}

fn system_prompt(body: &Value) -> String {
    assert_eq!(body["messages"][0]["role"], "system", "{body}");
    body["messages"][0]["content"].as_str().unwrap().to_string()
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_model_loads_a_skill_by_name_and_is_guided_otherwise() {
    let env = env_calling_skills(&[
        (
            "use review",
            json!({"skill": "review", "args": "src/a.rs \"b c\""}),
        ),
        ("use hidden", json!({"skill": "hidden"})),
        ("use ghost", json!({"skill": "ghost"})),
    ]);
    let review = write_skill(
        &env,
        "review",
        "description: Reviews <code> & \"diffs\"",
        "Review $1 (all: $ARGUMENTS) using ${DREB_SKILL_DIR}/checklist.md.",
    );
    write_skill(
        &env,
        "hidden",
        "description: Only on request\ndisable-model-invocation: true",
        "Secret steps.",
    );
    let mut dreb = env.spawn(&[]);

    let end = skill_result(&prompt(&mut dreb, "p1", "please use review"));
    let dir = review.display();
    assert_eq!(
        result_text(&end),
        format!(
            "<skill name=\"review\" location=\"{dir}/SKILL.md\">\nReferences are relative to {dir}.\n\n\
             Review src/a.rs (all: src/a.rs b c) using {dir}/checklist.md.\n</skill>"
        )
    );
    assert_eq!(end["isError"], false);
    assert_eq!(
        end["result"]["details"],
        json!({"skillName": "review", "found": true, "warned": false})
    );

    let end = skill_result(&prompt(&mut dreb, "p2", "now use hidden"));
    let text = result_text(&end);
    assert!(
        text.starts_with("The skill \"hidden\" has model invocation disabled."),
        "{text}"
    );
    assert!(!text.contains("Secret steps"), "{text}");
    assert_eq!(end["result"]["details"]["warned"], true);

    let end = skill_result(&prompt(&mut dreb, "p3", "then use ghost"));
    let text = result_text(&end);
    assert!(
        text.starts_with("Unknown skill \"ghost\". Available skills:\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  - review: Reviews <code> & \"diffs\""),
        "{text}"
    );
    // The bundled skills are there too, but neither user-only nor other-UI ones.
    assert!(text.contains("\n  - mach6-review: "), "{text}");
    assert!(!text.contains("hidden"), "{text}");
    assert!(!text.contains("model-routing-guide"), "{text}");
    assert!(!text.contains("telegram-send"), "{text}");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);

    let requests = env.mock.requests();
    let body = &requests[0].body;
    let tools = tool_names(body);
    let skill = tools.iter().position(|t| t == "skill").expect("skill tool");
    assert_eq!(tools[skill - 1], "ask_user", "{tools:?}");
    assert_eq!(tools[skill + 1], "tasks_update", "{tools:?}");

    let system = system_prompt(body);
    assert!(
        system.contains(
            "<available_skills>\n  <skill>\n    <name>review</name>\n    <description>Reviews &lt;code&gt; \
             &amp; &quot;diffs&quot;</description>\n  </skill>\n"
        ),
        "{system}"
    );
    assert!(system.contains("<name>mach6-review</name>"), "{system}");
    assert!(!system.contains("<name>hidden</name>"), "{system}");
    assert!(
        !system.contains("<name>model-routing-guide</name>"),
        "{system}"
    );
    assert!(!system.contains("<name>telegram-send</name>"), "{system}");
    let block_end = system.find("</available_skills>").unwrap();
    // The memory section follows the skills (then the date, the cwd, the UI and the model).
    assert!(
        system[block_end..].starts_with("</available_skills>\n\n# Memory\n"),
        "{system}"
    );
}

#[test]
fn skill_tasks_update_and_search_stay_active_with_an_explicit_tool_list() {
    for (args, expected) in [
        (
            &["--tools", "read,bash"][..],
            &["read", "bash", "skill", "tasks_update", "search"][..],
        ),
        (
            &["--tools", "skill,read"][..],
            &["skill", "read", "tasks_update", "search"][..],
        ),
        (
            &["--no-tools"][..],
            &["skill", "tasks_update", "search"][..],
        ),
    ] {
        let env = Env::new();
        write_skill(&env, "review", "description: Reviews", "Review.");
        let mut dreb = env.spawn(args);
        prompt(&mut dreb, "p", "hi");
        let (code, _, _) = dreb.finish();
        assert_eq!(code, 0);
        let body = &env.mock.requests()[0].body;
        assert_eq!(tool_names(body), expected, "{args:?}");
        // The skill tool is active, so the model is told which skills exist.
        assert!(
            system_prompt(body).contains("<name>review</name>"),
            "{args:?}"
        );
    }
}

#[test]
fn reload_refreshes_the_skills_the_model_sees() {
    let env = env_calling_skills(&[("use fresh", json!({"skill": "fresh"}))]);
    let mut dreb = env.spawn(&[]);
    prompt(&mut dreb, "p1", "hi");
    write_skill(&env, "fresh", "description: Added later", "Fresh steps.");
    let reload = dreb.exchange(&json!({"id": "r", "type": "reload"}));
    assert_eq!(reload.last().unwrap()["success"], true, "{reload:?}");
    let end = skill_result(&prompt(&mut dreb, "p2", "use fresh"));
    assert!(result_text(&end).contains("\n\nFresh steps.\n</skill>"));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);

    let requests = env.mock.requests();
    assert!(!system_prompt(&requests[0].body).contains("<name>fresh</name>"));
    let last = requests.last().unwrap();
    assert!(
        system_prompt(&last.body)
            .contains("<name>fresh</name>\n    <description>Added later</description>")
    );
}
