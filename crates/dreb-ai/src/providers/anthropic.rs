//! `anthropic-messages`: POST `<baseUrl>/v1/messages` with `stream: true`, SSE back.

use futures::StreamExt;
use serde_json::{Map, Value, json};

use crate::cost::{sanitize, tokens};
use crate::http::{self, ErrorStyle};
use crate::output::{Output, ProviderError, ProviderResult};
use crate::provider::StreamOptions;
use crate::providers::Tuning;
use crate::thinking::{
    ThinkingBudgets, adjust_max_tokens_with_budgets, base_max_tokens, supports_adaptive_thinking,
    supports_xhigh,
};
use crate::transform::{sanitize_id, transform_messages};
use crate::types::{
    AssistantBlock, Context, InputKind, Message, Model, StopReason, ThinkingContent, ThinkingLevel,
    UserBlock, UserContent,
};

pub(crate) const API_VERSION: &str = "2023-06-01";
const CLAUDE_CODE_VERSION: &str = "2.1.75";
const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";
const CLAUDE_CODE_TOOLS: [&str; 17] = [
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

fn to_claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .map(|t| t.to_string())
        .unwrap_or_else(|| name.to_string())
}

fn from_claude_code_name(name: &str, ctx: &Context) -> String {
    ctx.tools
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(name))
        .map(|t| t.name.clone())
        .unwrap_or_else(|| name.to_string())
}

fn is_first_party(base_url: &str) -> bool {
    reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .is_some_and(|h| h == "api.anthropic.com" || h.ends_with(".api.anthropic.com"))
}

/// Everything needed to send one request (also used by tests and the benchmark).
pub(crate) struct Request {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub oauth: bool,
}

pub(crate) fn build_request(
    model: &Model,
    ctx: &Context,
    opts: &StreamOptions,
    api_key: &str,
    budgets: &ThinkingBudgets,
) -> Request {
    let first_party = is_first_party(&model.base_url);
    let bearer = model.auth_mode == Some(crate::types::AuthMode::Bearer);
    let oauth = first_party && model.auth_mode.is_none() && api_key.contains("sk-ant-oat");
    let adaptive = supports_adaptive_thinking(model);

    let mut headers: Vec<(String, String)> = vec![("accept".into(), "application/json".into())];
    if api_key.is_empty() {
        // A local server on loopback without a key: no credential header.
    } else if bearer || oauth {
        headers.push(("authorization".into(), format!("Bearer {api_key}")));
    } else {
        headers.push(("x-api-key".into(), api_key.to_string()));
    }
    headers.push(("anthropic-version".into(), API_VERSION.into()));
    if first_party {
        let mut betas = vec!["fine-grained-tool-streaming-2025-05-14"];
        if !adaptive {
            betas.push("interleaved-thinking-2025-05-14");
        }
        headers.push((
            "anthropic-dangerous-direct-browser-access".into(),
            "true".into(),
        ));
        if oauth {
            headers.push((
                "anthropic-beta".into(),
                format!("claude-code-20250219,oauth-2025-04-20,{}", betas.join(",")),
            ));
            headers.push((
                "user-agent".into(),
                format!("claude-cli/{CLAUDE_CODE_VERSION}"),
            ));
            headers.push(("x-app".into(), "cli".into()));
        } else {
            headers.push(("anthropic-beta".into(), betas.join(",")));
        }
    }
    for (k, v) in model.headers.iter().flatten().chain(opts.headers.iter()) {
        // The request-time credential wins over a load-time Authorization header in bearer mode.
        if bearer && k.eq_ignore_ascii_case("authorization") {
            continue;
        }
        http::set_header(&mut headers, k, v.clone());
    }

    // Thinking: adaptive (effort) for Claude ≥ 4.6, a token budget for older reasoning models.
    let level = if model.reasoning {
        opts.thinking
    } else {
        ThinkingLevel::Off
    };
    let mut max_tokens = base_max_tokens(model, opts.max_tokens);
    let mut budget = None;
    if level != ThinkingLevel::Off && !adaptive {
        let (m, b) =
            adjust_max_tokens_with_budgets(max_tokens, model.max_output_tokens(), level, budgets);
        max_tokens = m;
        budget = Some(b);
    }

    let long = std::env::var("DREB_CACHE_RETENTION").is_ok_and(|v| v == "long");
    let cache_control = if long && model.base_url.contains("api.anthropic.com") {
        json!({"type": "ephemeral", "ttl": "1h"})
    } else {
        json!({"type": "ephemeral"})
    };

    let mut body = Map::new();
    body.insert("model".into(), json!(model.wire_id()));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(
            &ctx.messages,
            model,
            oauth,
            &cache_control,
        )),
    );
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    let mut system = Vec::new();
    if oauth {
        system.push(
            json!({"type": "text", "text": CLAUDE_CODE_IDENTITY, "cache_control": cache_control}),
        );
    }
    if let Some(sp) = &ctx.system_prompt {
        system.push(json!({"type": "text", "text": sanitize(sp), "cache_control": cache_control}));
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    if !ctx.tools.is_empty() {
        let tools: Vec<Value> = ctx
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": if oauth { to_claude_code_name(&t.name) } else { t.name.clone() },
                    "description": t.description,
                    "input_schema": {
                        "type": "object",
                        "properties": t.parameters.get("properties").cloned().unwrap_or(json!({})),
                        "required": t.parameters.get("required").cloned().unwrap_or(json!([])),
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if model.reasoning {
        if level == ThinkingLevel::Off {
            body.insert("thinking".into(), json!({"type": "disabled"}));
        } else if adaptive {
            body.insert("thinking".into(), json!({"type": "adaptive"}));
            let effort = match level {
                ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
                ThinkingLevel::Medium => "medium",
                ThinkingLevel::High => "high",
                _ if supports_xhigh(model) => "max",
                _ => "high",
            };
            body.insert("output_config".into(), json!({"effort": effort}));
        } else {
            // Keep at least max(4096, max_tokens/4) for text, never below the API's 1024 minimum, always < max_tokens.
            let requested = budget.filter(|b| *b > 0).unwrap_or(1024);
            let headroom = 4096.max(max_tokens / 4);
            let ceiling = 1024.max(max_tokens.saturating_sub(headroom));
            let b = requested.min(ceiling).min(max_tokens.saturating_sub(1));
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": b}),
            );
        }
    }

    Request {
        url: http::join_url(&model.base_url, "v1/messages"),
        headers,
        body: Value::Object(body),
        oauth,
    }
}

fn image_block(data: &str, mime: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
}

fn tool_result_content(blocks: &[UserBlock]) -> Value {
    let has_images = blocks.iter().any(|b| matches!(b, UserBlock::Image(_)));
    if !has_images {
        let text: Vec<&str> = blocks
            .iter()
            .filter_map(|b| {
                if let UserBlock::Text(t) = b {
                    Some(t.text.as_str())
                } else {
                    None
                }
            })
            .collect();
        return Value::String(sanitize(&text.join("\n")));
    }
    let mut out: Vec<Value> = blocks
        .iter()
        .map(|b| match b {
            UserBlock::Text(t) => json!({"type": "text", "text": sanitize(&t.text)}),
            UserBlock::Image(i) => image_block(&i.data, &i.mime_type),
        })
        .collect();
    if !blocks.iter().any(|b| matches!(b, UserBlock::Text(_))) {
        out.insert(0, json!({"type": "text", "text": "(see attached image)"}));
    }
    Value::Array(out)
}

fn convert_messages(
    messages: &[Message],
    model: &Model,
    oauth: bool,
    cache_control: &Value,
) -> Vec<Value> {
    let normalize = |id: &str, _: &crate::types::AssistantMessage| sanitize_id(id, 64);
    let msgs = transform_messages(messages, model, Some(&normalize), None);
    let supports_images = model.input.contains(&InputKind::Image);
    let mut params: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < msgs.len() {
        match &msgs[i] {
            Message::User(u) => match &u.content {
                UserContent::Text(s) => {
                    if !s.trim().is_empty() {
                        params.push(json!({"role": "user", "content": sanitize(s)}));
                    }
                }
                UserContent::Blocks(blocks) => {
                    let content: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            UserBlock::Text(t) if !t.text.trim().is_empty() => {
                                Some(json!({"type": "text", "text": sanitize(&t.text)}))
                            }
                            UserBlock::Text(_) => None,
                            UserBlock::Image(img) if supports_images => {
                                Some(image_block(&img.data, &img.mime_type))
                            }
                            UserBlock::Image(_) => None,
                        })
                        .collect();
                    if !content.is_empty() {
                        params.push(json!({"role": "user", "content": content}));
                    }
                }
            },
            Message::Assistant(a) => {
                let mut blocks = Vec::new();
                for b in &a.content {
                    match b {
                        AssistantBlock::Text(t) => {
                            if !t.text.trim().is_empty() {
                                blocks.push(json!({"type": "text", "text": sanitize(&t.text)}));
                            }
                        }
                        AssistantBlock::Thinking(t) => {
                            if t.redacted == Some(true) {
                                blocks.push(json!({"type": "redacted_thinking", "data": t.thinking_signature.clone().unwrap_or_default()}));
                                continue;
                            }
                            if t.thinking.trim().is_empty() {
                                continue;
                            }
                            match t.thinking_signature.as_deref().filter(|s| !s.trim().is_empty()) {
                                Some(sig) => blocks.push(json!({"type": "thinking", "thinking": sanitize(&t.thinking), "signature": sig})),
                                // An unsigned thinking block (aborted stream) is replayed as plain text.
                                None => blocks.push(json!({"type": "text", "text": sanitize(&t.thinking)})),
                            }
                        }
                        AssistantBlock::ToolCall(tc) => blocks.push(json!({
                            "type": "tool_use",
                            "id": tc.id,
                            "name": if oauth { to_claude_code_name(&tc.name) } else { tc.name.clone() },
                            "input": tc.arguments,
                        })),
                    }
                }
                if !blocks.is_empty() {
                    params.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::ToolResult(_) => {
                // Consecutive tool results go into one user message.
                let mut results = Vec::new();
                while let Some(Message::ToolResult(r)) = msgs.get(i) {
                    results.push(json!({
                        "type": "tool_result",
                        "tool_use_id": r.tool_call_id,
                        "content": tool_result_content(&r.content),
                        "is_error": r.is_error,
                    }));
                    i += 1;
                }
                params.push(json!({"role": "user", "content": results}));
                continue;
            }
        }
        i += 1;
    }
    // Cache the conversation so far: mark the last block of the last user message.
    if let Some(last) = params.last_mut()
        && last["role"] == "user"
    {
        match last.get_mut("content") {
            Some(Value::Array(blocks)) => {
                if let Some(Value::Object(b)) = blocks.last_mut()
                    && matches!(
                        b.get("type").and_then(Value::as_str),
                        Some("text" | "image" | "tool_result")
                    )
                {
                    b.insert("cache_control".into(), cache_control.clone());
                }
            }
            Some(Value::String(s)) => {
                let text = std::mem::take(s);
                last["content"] =
                    json!([{"type": "text", "text": text, "cache_control": cache_control}]);
            }
            _ => {}
        }
    }
    params
}

fn map_stop_reason(reason: &str) -> Result<StopReason, ProviderError> {
    Ok(match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => StopReason::Stop,
        "max_tokens" => StopReason::Length,
        "tool_use" => StopReason::ToolUse,
        "refusal" | "sensitive" => StopReason::Error,
        other => {
            return Err(ProviderError::msg(format!(
                "Unhandled stop reason: {other}"
            )));
        }
    })
}

fn u(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

pub(crate) async fn run(
    out: &mut Output,
    ctx: &Context,
    opts: &StreamOptions,
    api_key: &str,
    tuning: &Tuning,
) -> ProviderResult {
    let req = build_request(&out.model, ctx, opts, api_key, &tuning.budgets);
    let retries = tuning.retry_policy();
    // The Anthropic SDK's stream object exists before the request is answered: `start` comes first.
    out.start();
    let body = crate::provider::rewrite_payload(&opts.on_payload, req.body).await;
    let resp = http::post_json(
        &mut *out,
        &req.url,
        &req.headers,
        &body,
        retries,
        ErrorStyle::Anthropic,
    )
    .await?;
    let mut events = http::sse_events(resp);
    process_stream(out, ctx, req.oauth, &mut events).await
}

/// Maps Anthropic SSE events onto assistant events (public to the crate for the benchmark).
pub(crate) async fn process_stream(
    out: &mut Output,
    ctx: &Context,
    oauth: bool,
    events: &mut (impl futures::Stream<Item = eventsource_stream::Event> + Unpin),
) -> ProviderResult {
    // Anthropic block index → our content index.
    let mut index_map: Vec<(u64, usize)> = Vec::new();
    let find = |map: &Vec<(u64, usize)>, idx: u64| {
        map.iter().rev().find(|(a, _)| *a == idx).map(|(_, c)| *c)
    };
    let mut got_message_delta = false;
    while let Some(ev) = out.wait(events.next()).await? {
        let Ok(data) = serde_json::from_str::<Value>(&ev.data) else {
            continue;
        };
        if ev.event == "error" || data["type"] == "error" {
            return Err(ProviderError::Message(data.to_string()));
        }
        match data["type"].as_str().unwrap_or("") {
            "message_start" => {
                let m = &data["message"];
                out.msg.response_id = m["id"].as_str().map(str::to_string);
                let us = &m["usage"];
                let usage = &mut out.msg.usage;
                usage.input = tokens(u(us, "input_tokens").unwrap_or(0));
                usage.output = tokens(u(us, "output_tokens").unwrap_or(0));
                usage.cache_read = tokens(u(us, "cache_read_input_tokens").unwrap_or(0));
                usage.cache_write = tokens(u(us, "cache_creation_input_tokens").unwrap_or(0));
                usage.total_tokens =
                    usage.input + usage.output + usage.cache_read + usage.cache_write;
                out.recompute_cost();
            }
            "content_block_start" => {
                let idx = data["index"].as_u64().unwrap_or(0);
                let b = &data["content_block"];
                // Each block shows the wire's block index while it streams, as the reference's partials do.
                let index = Some(idx as i64);
                let ci = match b["type"].as_str().unwrap_or("") {
                    "text" => out.text_start_at(index),
                    "thinking" => out.thinking_start(ThinkingContent {
                        thinking: String::new(),
                        thinking_signature: Some(String::new()),
                        redacted: None,
                        index,
                        ..Default::default()
                    }),
                    "redacted_thinking" => out.thinking_start(ThinkingContent {
                        thinking: "[Reasoning redacted]".into(),
                        thinking_signature: b["data"].as_str().map(str::to_string),
                        redacted: Some(true),
                        index,
                        ..Default::default()
                    }),
                    "tool_use" => {
                        let name = b["name"].as_str().unwrap_or("");
                        let name = if oauth {
                            from_claude_code_name(name, ctx)
                        } else {
                            name.to_string()
                        };
                        let args = b["input"].as_object().cloned().unwrap_or_default();
                        let id = b["id"].as_str().unwrap_or("").to_string();
                        out.toolcall_start_at(id, name, args, index)
                    }
                    _ => continue,
                };
                index_map.push((idx, ci));
            }
            "content_block_delta" => {
                let Some(ci) = find(&index_map, data["index"].as_u64().unwrap_or(0)) else {
                    continue;
                };
                let d = &data["delta"];
                match d["type"].as_str().unwrap_or("") {
                    "text_delta" => out.text_delta(ci, d["text"].as_str().unwrap_or("")),
                    "thinking_delta" => {
                        out.thinking_delta(ci, d["thinking"].as_str().unwrap_or(""))
                    }
                    "input_json_delta" => {
                        out.toolcall_delta(ci, d["partial_json"].as_str().unwrap_or(""))
                    }
                    "signature_delta" => {
                        if let Some(t) = out.thinking_mut(ci) {
                            t.thinking_signature
                                .get_or_insert_with(String::new)
                                .push_str(d["signature"].as_str().unwrap_or(""));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let idx = data["index"].as_u64().unwrap_or(0);
                let Some(pos) = index_map.iter().rposition(|(a, _)| *a == idx) else {
                    continue;
                };
                let (_, ci) = index_map.remove(pos);
                match out.msg.content.get(ci) {
                    Some(AssistantBlock::Text(_)) => out.text_end(ci),
                    Some(AssistantBlock::Thinking(_)) => out.thinking_end(ci),
                    Some(AssistantBlock::ToolCall(_)) => out.toolcall_end(ci),
                    None => {}
                }
            }
            "message_delta" => {
                got_message_delta = true;
                if let Some(r) = data["delta"]["stop_reason"].as_str() {
                    out.msg.stop_reason = map_stop_reason(r)?;
                }
                // Only fields present (non-null) update the usage: proxies may omit input_tokens here.
                let us = &data["usage"];
                let usage = &mut out.msg.usage;
                if let Some(v) = u(us, "input_tokens") {
                    usage.input = tokens(v);
                }
                if let Some(v) = u(us, "output_tokens") {
                    usage.output = tokens(v);
                }
                if let Some(v) = u(us, "cache_read_input_tokens") {
                    usage.cache_read = tokens(v);
                }
                if let Some(v) = u(us, "cache_creation_input_tokens") {
                    usage.cache_write = tokens(v);
                }
                usage.total_tokens =
                    usage.input + usage.output + usage.cache_read + usage.cache_write;
                out.recompute_cost();
            }
            _ => {}
        }
    }
    if out.is_cancelled() {
        return Err(ProviderError::Aborted);
    }
    if !got_message_delta {
        return Err(ProviderError::msg(
            "Stream ended without message_delta — connection likely dropped",
        ));
    }
    if matches!(out.msg.stop_reason, StopReason::Error | StopReason::Aborted) {
        return Err(ProviderError::msg("An unknown error occurred"));
    }
    Ok(())
}
