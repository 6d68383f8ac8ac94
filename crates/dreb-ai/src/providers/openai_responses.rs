//! `openai-responses`: POST `<baseUrl>/responses` with `stream: true`. Reasoning items are kept (JSON, with their
//! encrypted content) in the thinking block's signature and replayed verbatim on the next request.

use futures::StreamExt;
use serde_json::{Map, Value, json};

use crate::cost::{calculate_cost, sanitize, tokens};
use crate::http::{self, ErrorStyle};
use crate::output::{Output, ProviderError, ProviderResult};
use crate::provider::StreamOptions;
use crate::providers::Tuning;
use crate::thinking::{base_max_tokens, resolve_reasoning_effort};
use crate::transform::transform_messages;
use crate::types::{
    AssistantBlock, AssistantMessage, Context, InputKind, Message, Model, StopReason,
    ThinkingContent, Usage, UserBlock, UserContent,
};

/// Providers whose tool call ids (`call|item`) are kept as they are; Azure's requests add Azure's own.
const TOOL_CALL_PROVIDERS: [&str; 3] = ["openai", "openai-codex", "opencode"];
const AZURE_TOOL_CALL_PROVIDERS: [&str; 4] = [
    "openai",
    "openai-codex",
    "opencode",
    "azure-openai-responses",
];

fn normalize_part(part: &str) -> String {
    let s = crate::transform::sanitize_id(part, 64);
    s.trim_end_matches('_').to_string()
}

/// A short stable hash (FNV-1a, base 36) for ids that must be shortened deterministically.
fn short_hash(s: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    let mut out = String::new();
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    while h > 0 {
        out.insert(0, digits[(h % 36) as usize] as char);
        h /= 36;
    }
    out
}

fn parse_text_signature(sig: Option<&str>) -> Option<(String, Option<String>)> {
    let sig = sig?;
    if sig.is_empty() {
        return None;
    }
    if sig.starts_with('{')
        && let Ok(v) = serde_json::from_str::<Value>(sig)
        && v["v"] == 1
        && let Some(id) = v["id"].as_str()
    {
        let phase = v["phase"]
            .as_str()
            .filter(|p| *p == "commentary" || *p == "final_answer")
            .map(str::to_string);
        return Some((id.to_string(), phase));
    }
    Some((sig.to_string(), None))
}

fn convert_messages(model: &Model, ctx: &Context, tool_call_providers: &[&str]) -> Vec<Value> {
    let provider = model.provider.clone();
    let api = model.api.clone();
    let tool_call_providers: Vec<String> =
        tool_call_providers.iter().map(|p| p.to_string()).collect();
    let normalize = move |id: &str, src: &AssistantMessage| -> String {
        if !tool_call_providers.contains(&provider) || !id.contains('|') {
            return normalize_part(id);
        }
        let (call, item) = id.split_once('|').unwrap_or((id, ""));
        let foreign = src.provider != provider || src.api != api;
        let mut item = if foreign {
            let h = format!("fc_{}", short_hash(item));
            h.chars().take(64).collect()
        } else {
            normalize_part(item)
        };
        if !item.starts_with("fc_") {
            item = normalize_part(&format!("fc_{item}"));
        }
        format!("{}|{}", normalize_part(call), item)
    };
    let msgs = transform_messages(&ctx.messages, model, Some(&normalize), None);
    let mut input: Vec<Value> = Vec::new();
    if let Some(sp) = &ctx.system_prompt {
        let role = if model.reasoning {
            "developer"
        } else {
            "system"
        };
        input.push(json!({"role": role, "content": sanitize(sp)}));
    }
    let supports_images = model.input.contains(&InputKind::Image);
    for (msg_index, msg) in msgs.iter().enumerate() {
        match msg {
            Message::User(u) => match &u.content {
                UserContent::Text(s) => input.push(json!({"role": "user", "content": [{"type": "input_text", "text": sanitize(s)}]})),
                UserContent::Blocks(blocks) => {
                    let content: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            UserBlock::Text(t) => Some(json!({"type": "input_text", "text": sanitize(&t.text)})),
                            UserBlock::Image(i) if supports_images => Some(json!({
                                "type": "input_image", "detail": "auto",
                                "image_url": format!("data:{};base64,{}", i.mime_type, i.data)
                            })),
                            UserBlock::Image(_) => None,
                        })
                        .collect();
                    if !content.is_empty() {
                        input.push(json!({"role": "user", "content": content}));
                    }
                }
            },
            Message::Assistant(a) => {
                let different_model = a.model != model.id && a.provider == model.provider && model.api == a.api.as_str();
                for b in &a.content {
                    match b {
                        AssistantBlock::Thinking(t) => {
                            if let Some(item) = t.thinking_signature.as_deref().and_then(|s| serde_json::from_str::<Value>(s).ok()) {
                                input.push(item);
                            }
                        }
                        AssistantBlock::Text(t) => {
                            let parsed = parse_text_signature(t.text_signature.as_deref());
                            let mut id = parsed.as_ref().map(|p| p.0.clone()).unwrap_or_else(|| format!("msg_{msg_index}"));
                            if id.len() > 64 {
                                id = format!("msg_{}", short_hash(&id));
                            }
                            let mut m = json!({
                                "type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": sanitize(&t.text), "annotations": []}],
                                "status": "completed", "id": id,
                            });
                            if let Some(phase) = parsed.and_then(|p| p.1) {
                                m["phase"] = json!(phase);
                            }
                            input.push(m);
                        }
                        AssistantBlock::ToolCall(tc) => {
                            let (call_id, item_id) = match tc.id.split_once('|') {
                                Some((c, i)) => (c.to_string(), Some(i.to_string())),
                                None => (tc.id.clone(), None),
                            };
                            let item_id = item_id.filter(|i| !(different_model && i.starts_with("fc_")));
                            let mut m = Map::new();
                            m.insert("type".into(), json!("function_call"));
                            if let Some(i) = item_id {
                                m.insert("id".into(), json!(i));
                            }
                            m.insert("call_id".into(), json!(call_id));
                            m.insert("name".into(), json!(tc.name));
                            m.insert("arguments".into(), json!(Value::Object(tc.arguments.clone()).to_string()));
                            input.push(Value::Object(m));
                        }
                    }
                }
            }
            Message::ToolResult(r) => {
                let text: Vec<&str> =
                    r.content.iter().filter_map(|b| if let UserBlock::Text(t) = b { Some(t.text.as_str()) } else { None }).collect();
                let text = text.join("\n");
                let has_images = r.content.iter().any(|b| matches!(b, UserBlock::Image(_)));
                let call_id = r.tool_call_id.split('|').next().unwrap_or("").to_string();
                let output = if has_images && supports_images {
                    let mut parts = Vec::new();
                    if !text.is_empty() {
                        parts.push(json!({"type": "input_text", "text": sanitize(&text)}));
                    }
                    for b in &r.content {
                        if let UserBlock::Image(i) = b {
                            parts.push(json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{};base64,{}", i.mime_type, i.data)}));
                        }
                    }
                    Value::Array(parts)
                } else {
                    json!(sanitize(if text.is_empty() { "(see attached image)" } else { &text }))
                };
                input.push(json!({"type": "function_call_output", "call_id": call_id, "output": output}));
            }
        }
    }
    input
}

pub(crate) struct Request {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

pub(crate) fn build_request(
    model: &Model,
    ctx: &Context,
    opts: &StreamOptions,
    api_key: &str,
) -> Result<Request, String> {
    let azure = (model.api.as_str() == crate::types::api::AZURE_OPENAI_RESPONSES)
        .then(|| super::azure::target(&model.id, &model.base_url, |name| std::env::var(name).ok()))
        .transpose()?;
    let mut headers = match &azure {
        Some(_) => http::credential_header("api-key", api_key, api_key),
        None => http::credential_header("authorization", &format!("Bearer {api_key}"), api_key),
    };
    for (k, v) in model.headers.iter().flatten().chain(opts.headers.iter()) {
        http::set_header(&mut headers, k, v.clone());
    }
    let long = std::env::var("DREB_CACHE_RETENTION").is_ok_and(|v| v == "long");
    let mut body = Map::new();
    let (model_name, tool_call_providers): (&str, &[&str]) = match &azure {
        Some(t) => (&t.deployment, &AZURE_TOOL_CALL_PROVIDERS),
        None => (model.wire_id(), &TOOL_CALL_PROVIDERS),
    };
    body.insert("model".into(), json!(model_name));
    body.insert(
        "input".into(),
        Value::Array(convert_messages(model, ctx, tool_call_providers)),
    );
    body.insert("stream".into(), json!(true));
    if let Some(sid) = &opts.session_id {
        body.insert("prompt_cache_key".into(), json!(sid));
    }
    // Azure's requests, as the reference's, keep neither the retention nor `store`.
    if azure.is_none() {
        if long && model.base_url.contains("api.openai.com") {
            body.insert("prompt_cache_retention".into(), json!("24h"));
        }
        body.insert("store".into(), json!(false));
    }
    body.insert(
        "max_output_tokens".into(),
        json!(base_max_tokens(model, opts.max_tokens)),
    );
    if !ctx.tools.is_empty() {
        let tools: Vec<Value> = ctx
            .tools
            .iter()
            .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": false}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if model.reasoning {
        match resolve_reasoning_effort(model, opts.thinking) {
            Some(level) => {
                body.insert(
                    "reasoning".into(),
                    json!({"effort": level.as_str(), "summary": "auto"}),
                );
                body.insert("include".into(), json!(["reasoning.encrypted_content"]));
            }
            None if model.provider != "github-copilot" || azure.is_some() => {
                body.insert("reasoning".into(), json!({"effort": "none"}));
            }
            None => {}
        }
    }
    Ok(Request {
        url: match azure {
            Some(t) => t.url,
            None => http::join_url(&model.base_url, "responses"),
        },
        headers,
        body: Value::Object(body),
    })
}

pub(crate) async fn run(
    out: &mut Output,
    ctx: &Context,
    opts: &StreamOptions,
    api_key: &str,
    tuning: &Tuning,
) -> ProviderResult {
    let retries = tuning.retry_policy();
    let req = build_request(&out.model, ctx, opts, api_key).map_err(ProviderError::Message)?;
    let body = crate::provider::rewrite_payload(&opts.on_payload, req.body).await;
    let resp = http::post_json(
        &mut *out,
        &req.url,
        &req.headers,
        &body,
        retries,
        ErrorStyle::OpenAi,
    )
    .await?;
    out.start();
    let mut events = http::sse_events(resp);
    process_stream(out, &mut events).await?;
    if out.is_cancelled() {
        return Err(ProviderError::Aborted);
    }
    if matches!(out.msg.stop_reason, StopReason::Error | StopReason::Aborted) {
        return Err(ProviderError::msg("An unknown error occurred"));
    }
    Ok(())
}

enum Item {
    None,
    Reasoning {
        block: usize,
        item: Value,
    },
    Message {
        block: usize,
        parts: Vec<(String, String)>,
    },
    Call {
        block: usize,
    },
}

pub(crate) async fn process_stream(
    out: &mut Output,
    events: &mut (impl futures::Stream<Item = eventsource_stream::Event> + Unpin),
) -> ProviderResult {
    let mut cur = Item::None;
    let mut completed = false;
    while let Some(ev) = out.wait(events.next()).await? {
        let Ok(e) = serde_json::from_str::<Value>(&ev.data) else {
            continue;
        };
        let ty = e["type"].as_str().unwrap_or(ev.event.as_str()).to_string();
        match ty.as_str() {
            "response.created" => {
                out.msg.response_id = e["response"]["id"].as_str().map(str::to_string);
            }
            "response.output_item.added" => {
                let item = &e["item"];
                match item["type"].as_str().unwrap_or("") {
                    "reasoning" => {
                        let block = out.thinking_start(ThinkingContent {
                            thinking: String::new(),
                            thinking_signature: None,
                            redacted: None,
                            ..Default::default()
                        });
                        let mut item = item.clone();
                        if !item["summary"].is_array() {
                            item["summary"] = json!([]);
                        }
                        cur = Item::Reasoning { block, item };
                    }
                    "message" => {
                        let block = out.text_start();
                        cur = Item::Message {
                            block,
                            parts: Vec::new(),
                        };
                    }
                    "function_call" => {
                        let id = format!(
                            "{}|{}",
                            item["call_id"].as_str().unwrap_or(""),
                            item["id"].as_str().unwrap_or("")
                        );
                        let block = out.toolcall_start(
                            id,
                            item["name"].as_str().unwrap_or("").to_string(),
                            Map::new(),
                        );
                        if let Some(a) = item["arguments"].as_str().filter(|a| !a.is_empty()) {
                            out.set_raw_args(block, a.to_string());
                        }
                        cur = Item::Call { block };
                    }
                    _ => {}
                }
            }
            "response.reasoning_summary_part.added" => {
                if let Item::Reasoning { item, .. } = &mut cur
                    && let Some(s) = item["summary"].as_array_mut()
                {
                    s.push(e["part"].clone());
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_summary_part.done" => {
                if let Item::Reasoning { block, item } = &mut cur {
                    let delta = if ty.ends_with(".delta") {
                        e["delta"].as_str().unwrap_or("").to_string()
                    } else {
                        "\n\n".to_string()
                    };
                    if let Some(last) = item["summary"].as_array_mut().and_then(|s| s.last_mut()) {
                        let t = format!("{}{}", last["text"].as_str().unwrap_or(""), delta);
                        last["text"] = json!(t);
                        let b = *block;
                        out.thinking_delta(b, &delta);
                    }
                }
            }
            "response.content_part.added" => {
                if let Item::Message { parts, .. } = &mut cur {
                    let kind = e["part"]["type"].as_str().unwrap_or("");
                    if kind == "output_text" || kind == "refusal" {
                        parts.push((kind.to_string(), String::new()));
                    }
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Item::Message { block, parts } = &mut cur {
                    let want = if ty == "response.output_text.delta" {
                        "output_text"
                    } else {
                        "refusal"
                    };
                    if let Some(last) = parts.last_mut().filter(|p| p.0 == want) {
                        let d = e["delta"].as_str().unwrap_or("");
                        last.1.push_str(d);
                        let b = *block;
                        out.text_delta(b, d);
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                if let Item::Call { block } = cur {
                    out.toolcall_delta(block, e["delta"].as_str().unwrap_or(""));
                }
            }
            "response.function_call_arguments.done" => {
                if let Item::Call { block } = cur {
                    let a = e["arguments"].as_str().unwrap_or("").to_string();
                    if let Some(t) = out.toolcall_mut(block) {
                        t.arguments = crate::partial_json::parse_streaming_json(&a);
                    }
                    out.set_raw_args(block, a);
                }
            }
            "response.output_item.done" => {
                let item = &e["item"];
                match (
                    item["type"].as_str().unwrap_or(""),
                    std::mem::replace(&mut cur, Item::None),
                ) {
                    ("reasoning", Item::Reasoning { block, .. }) => {
                        let summary: Vec<&str> = item["summary"]
                            .as_array()
                            .map(|s| s.iter().filter_map(|p| p["text"].as_str()).collect())
                            .unwrap_or_default();
                        if let Some(t) = out.thinking_mut(block) {
                            t.thinking = summary.join("\n\n");
                            t.thinking_signature = Some(item.to_string());
                        }
                        out.thinking_end(block);
                    }
                    ("message", Item::Message { block, .. }) => {
                        let text: String = item["content"]
                            .as_array()
                            .map(|c| {
                                c.iter()
                                    .map(|p| {
                                        if p["type"] == "output_text" {
                                            p["text"].as_str().unwrap_or("")
                                        } else {
                                            p["refusal"].as_str().unwrap_or("")
                                        }
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        let mut sig = json!({"v": 1, "id": item["id"].as_str().unwrap_or("")});
                        if let Some(p) = item["phase"].as_str() {
                            sig["phase"] = json!(p);
                        }
                        if let Some(t) = out.text_mut(block) {
                            t.text = text;
                            t.text_signature = Some(sig.to_string());
                        }
                        out.text_end(block);
                    }
                    ("function_call", Item::Call { block }) => {
                        let raw = out.take_raw_args(block).filter(|s| !s.is_empty());
                        if let Some(t) = out.toolcall_mut(block) {
                            let text = raw.unwrap_or_else(|| {
                                item["arguments"].as_str().unwrap_or("{}").to_string()
                            });
                            t.arguments = crate::partial_json::parse_streaming_json(&text);
                            t.id = format!(
                                "{}|{}",
                                item["call_id"].as_str().unwrap_or(""),
                                item["id"].as_str().unwrap_or("")
                            );
                            t.name = item["name"].as_str().unwrap_or(&t.name).to_string();
                        }
                        out.toolcall_end(block);
                    }
                    (_, other) => cur = other,
                }
            }
            "response.completed" | "response.done" | "response.incomplete" => {
                completed = true;
                let r = &e["response"];
                if let Some(id) = r["id"].as_str() {
                    out.msg.response_id = Some(id.to_string());
                }
                if r["usage"].is_object() {
                    let us = &r["usage"];
                    let cached = us["input_tokens_details"]["cached_tokens"]
                        .as_u64()
                        .unwrap_or(0);
                    let n = |k: &str| us[k].as_u64().unwrap_or(0);
                    out.msg.usage = Usage {
                        input: tokens(n("input_tokens").saturating_sub(cached)),
                        output: tokens(n("output_tokens")),
                        cache_read: tokens(cached),
                        cache_write: 0,
                        total_tokens: tokens(n("total_tokens")),
                        ..Default::default()
                    };
                }
                calculate_cost(&out.model, &mut out.msg.usage);
                let tier = r["service_tier"].as_str();
                let mult = match tier {
                    Some("flex") => 0.5,
                    Some("priority") => 2.0,
                    _ => 1.0,
                };
                if mult != 1.0 {
                    let c = &mut out.msg.usage.cost;
                    c.input *= mult;
                    c.output *= mult;
                    c.cache_read *= mult;
                    c.cache_write *= mult;
                    c.total = c.input + c.output + c.cache_read + c.cache_write;
                }
                out.msg.stop_reason = match r["status"].as_str() {
                    Some("incomplete") => StopReason::Length,
                    Some("failed" | "cancelled") => StopReason::Error,
                    _ => StopReason::Stop,
                };
                if out.msg.stop_reason == StopReason::Stop && out.msg.tool_calls().next().is_some()
                {
                    out.msg.stop_reason = StopReason::ToolUse;
                }
            }
            "error" => {
                return Err(ProviderError::Message(format!(
                    "Error Code {}: {}",
                    e["code"]
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| e["code"].to_string()),
                    e["message"].as_str().unwrap_or("")
                )));
            }
            "response.failed" => {
                let r = &e["response"];
                let msg = if r["error"].is_object() {
                    format!(
                        "{}: {}",
                        r["error"]["code"].as_str().unwrap_or("unknown"),
                        r["error"]["message"].as_str().unwrap_or("no message")
                    )
                } else if let Some(reason) = r["incomplete_details"]["reason"].as_str() {
                    format!("incomplete: {reason}")
                } else {
                    "Unknown error (no error details in response)".to_string()
                };
                return Err(ProviderError::Message(msg));
            }
            _ => {}
        }
    }
    if out.is_cancelled() {
        return Err(ProviderError::Aborted);
    }
    if !completed {
        return Err(ProviderError::msg(
            "Stream ended without response.completed — connection likely dropped",
        ));
    }
    Ok(())
}
