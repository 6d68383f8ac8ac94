use std::sync::Mutex;

use dreb_ai::TextContent;
use serde_json::json;

use super::*;

/// Answers every point from fixed values and records what it saw.
#[derive(Default)]
struct Scripted {
    tool_call: Option<ToolCallDecision>,
    set_arg: Option<(&'static str, Value)>,
    fail_tool_call: bool,
    patch: Option<ToolResultPatch>,
    input: Option<InputDecision>,
    start: Option<BeforeAgentStartResult>,
    before: Option<SessionBeforeDecision>,
    fail_notify: bool,
    seen: Mutex<Vec<String>>,
}

#[async_trait]
impl HookHandler for Scripted {
    async fn tool_call(
        &self,
        event: &mut ToolCallEvent,
        _cancel: &CancellationToken,
    ) -> HookResult<ToolCallDecision> {
        self.seen.lock().unwrap().push(event.input.to_string());
        if self.fail_tool_call {
            return Err(HookError("boom".into()));
        }
        if let Some((key, value)) = &self.set_arg {
            event.input[*key] = value.clone();
        }
        Ok(self.tool_call.clone().unwrap_or_default())
    }

    async fn tool_result(&self, event: &ToolResultEvent) -> HookResult<Option<ToolResultPatch>> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{}", event.is_error));
        Ok(self.patch.clone())
    }

    async fn input(&self, event: &InputEvent) -> HookResult<InputDecision> {
        self.seen.lock().unwrap().push(event.text.clone());
        Ok(self.input.clone().unwrap_or_default())
    }

    async fn before_agent_start(
        &self,
        event: &BeforeAgentStartEvent,
    ) -> HookResult<Option<BeforeAgentStartResult>> {
        self.seen.lock().unwrap().push(event.system_prompt.clone());
        Ok(self.start.clone())
    }

    async fn session_before(
        &self,
        event: &SessionBeforeEvent,
    ) -> HookResult<SessionBeforeDecision> {
        self.seen.lock().unwrap().push(event.name().into());
        Ok(self.before.clone().unwrap_or_default())
    }

    async fn notify(&self, notice: Notice<'_>) -> HookResult<()> {
        self.seen.lock().unwrap().push(notice.name().into());
        if self.fail_notify {
            return Err(HookError("notify failed".into()));
        }
        Ok(())
    }
}

fn bus_of(handlers: Vec<Arc<Scripted>>) -> (HookBus, Arc<Mutex<Vec<HookFailure>>>) {
    let bus = HookBus::new();
    let failures: Arc<Mutex<Vec<HookFailure>>> = Arc::default();
    let sink = failures.clone();
    bus.set_failure_sink(Arc::new(move |f| sink.lock().unwrap().push(f)));
    for (i, h) in handlers.into_iter().enumerate() {
        bus.register(format!("h{i}"), h);
    }
    (bus, failures)
}

fn text(t: &str) -> UserBlock {
    UserBlock::Text(TextContent {
        text: t.into(),
        text_signature: None,
        ..Default::default()
    })
}

fn call() -> ToolCallEvent {
    ToolCallEvent {
        tool_name: "bash".into(),
        tool_call_id: "c1".into(),
        input: json!({"command": "ls"}),
    }
}

#[tokio::test]
async fn tool_call_arguments_chain_and_the_first_block_wins() {
    let first = Arc::new(Scripted {
        set_arg: Some(("command", json!("ls -la"))),
        ..Default::default()
    });
    let blocker = Arc::new(Scripted {
        tool_call: Some(ToolCallDecision::Block {
            reason: Some("no".into()),
        }),
        ..Default::default()
    });
    let last = Arc::new(Scripted::default());
    let (bus, _) = bus_of(vec![first, blocker.clone(), last.clone()]);
    let mut event = call();
    let decision = bus.tool_call(&mut event, &CancellationToken::new()).await;
    assert_eq!(
        decision,
        ToolCallDecision::Block {
            reason: Some("no".into())
        }
    );
    assert_eq!(
        blocker.seen.lock().unwrap().as_slice(),
        [r#"{"command":"ls -la"}"#]
    );
    assert!(
        last.seen.lock().unwrap().is_empty(),
        "not asked after a block"
    );
}

#[tokio::test]
async fn a_failing_tool_call_handler_blocks_and_is_reported() {
    let (bus, failures) = bus_of(vec![Arc::new(Scripted {
        fail_tool_call: true,
        ..Default::default()
    })]);
    let decision = bus.tool_call(&mut call(), &CancellationToken::new()).await;
    let ToolCallDecision::Block {
        reason: Some(reason),
    } = decision
    else {
        panic!("{decision:?}")
    };
    assert!(reason.contains("h0") && reason.contains("boom"), "{reason}");
    assert_eq!(
        failures.lock().unwrap().as_slice(),
        [HookFailure {
            source: "h0".into(),
            event: "tool_call".into(),
            error: "boom".into()
        }]
    );
}

#[tokio::test]
async fn tool_result_patches_chain() {
    let first = Arc::new(Scripted {
        patch: Some(ToolResultPatch {
            is_error: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    });
    let second = Arc::new(Scripted {
        patch: Some(ToolResultPatch {
            content: Some(vec![text("scrubbed")]),
            ..Default::default()
        }),
        ..Default::default()
    });
    let (bus, _) = bus_of(vec![first, second.clone()]);
    let result = bus
        .tool_result(ToolResultEvent {
            tool_name: "read".into(),
            tool_call_id: "c".into(),
            input: json!({}),
            content: vec![text("secret")],
            details: None,
            is_error: false,
        })
        .await;
    assert!(result.is_error);
    assert_eq!(result.content, vec![text("scrubbed")]);
    assert_eq!(
        second.seen.lock().unwrap().as_slice(),
        ["true"],
        "saw the first's change"
    );
}

#[tokio::test]
async fn input_transforms_chain_and_handled_stops() {
    let upper = Arc::new(Scripted {
        input: Some(InputDecision::Transform {
            text: "HELLO".into(),
            images: None,
        }),
        ..Default::default()
    });
    let second = Arc::new(Scripted::default());
    let (bus, _) = bus_of(vec![upper, second.clone()]);
    let event = InputEvent {
        text: "hello".into(),
        images: vec![],
        source: InputSource::Rpc,
    };
    let InputOutcome::Continue(out) = bus.input(event.clone()).await else {
        panic!()
    };
    assert_eq!(out.text, "HELLO");
    assert_eq!(second.seen.lock().unwrap().as_slice(), ["HELLO"]);

    let (bus, _) = bus_of(vec![
        Arc::new(Scripted {
            input: Some(InputDecision::Handled),
            ..Default::default()
        }),
        second.clone(),
    ]);
    assert_eq!(bus.input(event).await, InputOutcome::Handled);
    assert_eq!(
        second.seen.lock().unwrap().len(),
        1,
        "not asked after Handled"
    );
}

#[tokio::test]
async fn before_agent_start_keeps_every_message_and_chains_the_prompt() {
    let message = |t: &str| CustomMessage {
        role: Default::default(),
        custom_type: t.into(),
        content: dreb_ai::UserContent::Text(t.into()),
        display: false,
        details: None,
        timestamp: 0,
    };
    let first = Arc::new(Scripted {
        start: Some(BeforeAgentStartResult {
            message: Some(message("a")),
            system_prompt: Some("prompt A".into()),
        }),
        ..Default::default()
    });
    let second = Arc::new(Scripted {
        start: Some(BeforeAgentStartResult {
            message: Some(message("b")),
            system_prompt: None,
        }),
        ..Default::default()
    });
    let (bus, _) = bus_of(vec![first, second.clone()]);
    let outcome = bus
        .before_agent_start(BeforeAgentStartEvent {
            prompt: "hi".into(),
            images: vec![],
            system_prompt: "base".into(),
        })
        .await;
    assert_eq!(outcome.messages, vec![message("a"), message("b")]);
    assert_eq!(outcome.system_prompt.as_deref(), Some("prompt A"));
    assert_eq!(second.seen.lock().unwrap().as_slice(), ["prompt A"]);
}

#[tokio::test]
async fn session_before_tree_overrides_come_from_the_last_handler_that_sets_each() {
    let event = SessionBeforeEvent::TreeNavigation {
        target_id: "t".into(),
        summarize: true,
        preparation: Default::default(),
    };
    let tree = |summary: Option<&str>, overrides: TreeOverrides| SessionBeforeDecision::Tree {
        summary: summary.map(|s| SuppliedSummary {
            summary: s.into(),
            details: None,
        }),
        overrides,
    };
    let (bus, _) = bus_of(vec![
        Arc::new(Scripted {
            before: Some(tree(
                Some("first"),
                TreeOverrides {
                    custom_instructions: Some("focus on tests".into()),
                    replace_instructions: Some(true),
                    label: Some("one".into()),
                },
            )),
            ..Default::default()
        }),
        Arc::new(Scripted {
            before: Some(tree(
                Some("second"),
                TreeOverrides {
                    label: Some("two".into()),
                    ..Default::default()
                },
            )),
            ..Default::default()
        }),
    ]);
    assert_eq!(
        bus.session_before(&event).await,
        SessionBeforeOutcome::Continue {
            supplied: Some(Supplied {
                summary: "first".into(),
                ..Default::default()
            }),
            tree: TreeOverrides {
                custom_instructions: Some("focus on tests".into()),
                replace_instructions: Some(true),
                label: Some("two".into()),
            },
            skip_conversation_restore: false,
        }
    );
}

#[tokio::test]
async fn session_before_fork_skip_is_the_last_handlers_choice() {
    let event = SessionBeforeEvent::Fork {
        entry_id: "e".into(),
    };
    let fork = |skip| SessionBeforeDecision::Fork {
        skip_conversation_restore: skip,
    };
    let outcome = |skip| SessionBeforeOutcome::Continue {
        supplied: None,
        tree: TreeOverrides::default(),
        skip_conversation_restore: skip,
    };
    let (bus, _) = bus_of(vec![
        Arc::new(Scripted {
            before: Some(fork(true)),
            ..Default::default()
        }),
        Arc::new(Scripted::default()),
    ]);
    assert_eq!(bus.session_before(&event).await, outcome(true));
    let (bus, _) = bus_of(vec![
        Arc::new(Scripted {
            before: Some(fork(true)),
            ..Default::default()
        }),
        Arc::new(Scripted {
            before: Some(fork(false)),
            ..Default::default()
        }),
    ]);
    assert_eq!(bus.session_before(&event).await, outcome(false));
    assert_eq!(
        HookBus::default().session_before(&event).await,
        SessionBeforeOutcome::proceed()
    );
}

#[tokio::test]
async fn session_before_first_cancel_wins_and_the_first_supply_is_used() {
    let supply = |s: &str| {
        SessionBeforeDecision::Supply(SuppliedSummary {
            summary: s.into(),
            details: None,
        })
    };
    let event = SessionBeforeEvent::Compaction {
        preparation: Default::default(),
        branch_entries: Vec::new(),
        custom_instructions: None,
    };
    let (bus, _) = bus_of(vec![
        Arc::new(Scripted {
            before: Some(supply("first")),
            ..Default::default()
        }),
        Arc::new(Scripted {
            before: Some(supply("second")),
            ..Default::default()
        }),
    ]);
    assert_eq!(
        bus.session_before(&event).await,
        SessionBeforeOutcome::Continue {
            supplied: Some(Supplied {
                summary: "first".into(),
                ..Default::default()
            }),
            tree: TreeOverrides::default(),
            skip_conversation_restore: false,
        }
    );
    let (bus, _) = bus_of(vec![
        Arc::new(Scripted {
            before: Some(supply("first")),
            ..Default::default()
        }),
        Arc::new(Scripted {
            before: Some(SessionBeforeDecision::Cancel),
            ..Default::default()
        }),
    ]);
    assert_eq!(
        bus.session_before(&event).await,
        SessionBeforeOutcome::Cancelled
    );
}

#[tokio::test]
async fn a_failing_notification_handler_is_reported_and_the_others_still_hear() {
    let failing = Arc::new(Scripted {
        fail_notify: true,
        ..Default::default()
    });
    let other = Arc::new(Scripted::default());
    let (bus, failures) = bus_of(vec![failing, other.clone()]);
    bus.notify(Notice::SessionStart(SessionStartReason::Startup))
        .await;
    assert_eq!(other.seen.lock().unwrap().as_slice(), ["session_start"]);
    assert_eq!(failures.lock().unwrap()[0].event, "session_start");
    bus.unregister("h0");
    assert_eq!(bus.sources(), ["h1"]);
}
