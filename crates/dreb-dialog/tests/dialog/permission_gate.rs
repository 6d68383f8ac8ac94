//! The permission gate: prompts only for dangerous commands when enabled; denies unless allowed.

use std::sync::Arc;
use std::time::Duration;

use dreb_dialog::{
    DialogOptions, GateDecision, PermissionAnswer, PermissionGate, PermissionGateSettings,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{harness, quiesce};

fn enabled(timeout_ms: u64) -> PermissionGateSettings {
    PermissionGateSettings::from_value(Some(&json!({"enabled": true, "timeoutMs": timeout_ms})))
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn unanswered_prompt_denies() {
    let mut h = harness();
    let e = h.engine.clone();
    let t = tokio::spawn(async move {
        e.confirm_dangerous_command(
            "rm -rf build",
            DialogOptions::timeout(Duration::from_millis(50)),
        )
        .await
    });
    let (req, id) = h.next_request().await;
    assert_eq!(
        req,
        json!({
            "type": "extension_ui_request", "id": id, "method": "select",
            "title": "Allow dangerous command?\n\nrm -rf build",
            "options": ["Allow", "Block"], "timeout": 50
        })
    );
    assert!(!t.await.unwrap());
    assert_eq!(h.handled(), vec![id]);
}

#[tokio::test]
async fn answers_allow_block_cancel() {
    let mut h = harness();
    let e = h.engine.clone();
    for (answer, expected) in [
        (json!({"value": "Allow"}), PermissionAnswer::Allowed),
        (json!({"value": "Block"}), PermissionAnswer::Blocked),
        (json!({"value": "allow"}), PermissionAnswer::Blocked),
        (json!({"cancelled": true}), PermissionAnswer::Blocked),
        (json!({"confirmed": true}), PermissionAnswer::Blocked),
    ] {
        let t = tokio::spawn({
            let e = e.clone();
            async move { e.ask_permission("sudo ls", DialogOptions::default()).await }
        });
        let (_, id) = h.next_request().await;
        h.answer(&id, answer.clone());
        assert_eq!(t.await.unwrap(), expected, "{answer}");
    }
    let t = tokio::spawn({
        let e = e.clone();
        async move {
            e.confirm_dangerous_command("sudo ls", DialogOptions::default())
                .await
        }
    });
    let (_, id) = h.next_request().await;
    h.answer(&id, json!({"value": "Allow"}));
    assert!(t.await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn gate_decisions() {
    let mut h = harness();
    // Disabled (the default): never prompts.
    let gate = PermissionGate::new(h.engine.clone(), PermissionGateSettings::default());
    assert_eq!(
        gate.check("rm -rf /tmp/x", None).await,
        GateDecision::NotGated
    );
    // Enabled but harmless: never prompts.
    let gate = PermissionGate::new(h.engine.clone(), enabled(50));
    assert_eq!(gate.check("ls -la", None).await, GateDecision::NotGated);
    assert!(h.frames().is_empty());

    // Dangerous and unanswered: denied after the timeout.
    let t = tokio::spawn({
        let gate = gate.clone();
        async move { gate.check("rm -rf build", None).await }
    });
    let (req, _) = h.next_request().await;
    assert_eq!(req["timeout"], json!(50));
    assert_eq!(
        t.await.unwrap(),
        GateDecision::Denied {
            reason: "Dangerous command (recursive delete) blocked: the user did not confirm it."
                .into()
        }
    );

    // Dangerous and blocked by the user.
    let t = tokio::spawn({
        let gate = gate.clone();
        async move { gate.check("chmod 777 x", None).await }
    });
    let (_, id) = h.next_request().await;
    h.answer(&id, json!({"value": "Block"}));
    assert_eq!(
        t.await.unwrap(),
        GateDecision::Denied {
            reason: "Dangerous command (world-writable permissions) blocked by the user.".into()
        }
    );

    // Dangerous and allowed.
    let t = tokio::spawn({
        let gate = gate.clone();
        async move { gate.check("sudo ls", None).await }
    });
    let (_, id) = h.next_request().await;
    h.answer(&id, json!({"value": "Allow"}));
    assert_eq!(t.await.unwrap(), GateDecision::Allowed);

    // The run is aborted while the prompt is open: denied.
    let run = CancellationToken::new();
    let t = tokio::spawn({
        let gate = gate.clone();
        let run = run.clone();
        async move { gate.check("git reset --hard", Some(run)).await }
    });
    let _ = h.next_request().await;
    run.cancel();
    assert!(matches!(t.await.unwrap(), GateDecision::Denied { .. }));

    // A custom predicate replaces the built-in patterns.
    let gate =
        PermissionGate::new(h.engine.clone(), enabled(0)).with_predicate(Arc::new(|c: &str| {
            c.contains("deploy").then(|| "deploys".to_string())
        }));
    assert_eq!(
        gate.check("rm -rf build", None).await,
        GateDecision::NotGated
    );
    let t = tokio::spawn({
        let gate = gate.clone();
        async move { gate.check("make deploy", None).await }
    });
    let (req, id) = h.next_request().await;
    assert!(req.get("timeout").is_none(), "timeoutMs 0 means no timeout");
    quiesce().await;
    h.answer(&id, json!({"value": "Allow"}));
    assert_eq!(t.await.unwrap(), GateDecision::Allowed);
    assert!(h.engine.pending_requests().is_empty());
}
