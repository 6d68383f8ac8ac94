//! `/skill:<name> args` and `/<template> args` in `prompt`, `steer` and `follow_up` are expanded before the model
//! sees them (the reference does this in the session before prompting or queueing).

mod common;

use common::Env;
use serde_json::json;

#[test]
fn skill_and_template_commands_are_expanded_before_the_model_sees_them() {
    let env = Env::new();
    let skill = env.cwd().join(".dreb/skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Greets someone.\n---\nSay hello to $1 from ${DREB_SKILL_DIR}.\n",
    )
    .unwrap();
    let prompts = env.cwd().join(".dreb/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("shout.md"),
        "---\ndescription: Shouts.\n---\nReply with just: $ARGUMENTS!\n",
    )
    .unwrap();
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "/skill:greet Bob"}));
    let frames = dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "/shout loud"}));
    let end = frames.iter().rfind(|f| f["type"] == "agent_end").unwrap();
    assert_eq!(end["messages"][1]["content"][0]["text"], "loud!");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);

    let requests = env.mock.requests();
    let first = requests[0].body.to_string();
    let dir = skill.display().to_string();
    assert!(
        first.contains(&format!(
            "<skill name=\\\"greet\\\" location=\\\"{dir}/SKILL.md\\\">\\nReferences are relative to {dir}.\\n\\nSay hello to Bob from {dir}.\\n</skill>"
        )),
        "{first}"
    );
    assert!(!first.contains("/skill:greet"));
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("Reply with just: loud!")
    );
}
