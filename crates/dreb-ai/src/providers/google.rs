//! `google-generative-ai`: POST `<baseUrl>/models/<id>:streamGenerateContent?alt=sse` (Gemini API), SSE back.

use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use serde_json::{Map, Value, json};

use crate::cost::{calculate_cost, now_ms, sanitize, tokens};
use crate::http::{self, ErrorStyle};
use crate::output::{Output, ProviderError, ProviderResult};
use crate::provider::StreamOptions;
use crate::providers::Tuning;
use crate::thinking::{ThinkingBudgets, base_max_tokens, clamp_to_high};
use crate::transform::{sanitize_id, transform_messages};
use crate::types::{
    AssistantBlock, Context, InputKind, Message, Model, StopReason, ThinkingContent, ThinkingLevel,
    Usage, UserBlock, UserContent,
};

static TOOL_CALL_COUNTER: AtomicU64 = AtomicU64::new(0);
const SKIP_THOUGHT_SIGNATURE: &str = "skip_thought_signature_validator";

fn requires_tool_call_id(id: &str) -> bool {
    id.starts_with("claude-") || id.starts_with("gpt-oss-")
}

fn gemini_major(id: &str) -> Option<u32> {
    let id = id.to_lowercase();
    let rest = id
        .strip_prefix("gemini-live-")
        .or_else(|| id.strip_prefix("gemini-"))?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

fn is_gemini3(id: &str, kind: &str) -> bool {
    let id = id.to_lowercase();
    // gemini-3-pro, gemini-3.1-pro, ...
    id.find("gemini-3").is_some_and(|p| {
        let rest = &id[p + "gemini-3".len()..];
        let rest = rest
            .strip_prefix('.')
            .map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit()))
            .unwrap_or(rest);
        rest.starts_with(&format!("-{kind}"))
    })
}

fn valid_signature(sig: Option<&str>) -> bool {
    sig.is_some_and(|s| {
        !s.is_empty()
            && s.len() % 4 == 0
            && s.trim_end_matches('=').len() + 2 >= s.len()
            && s.trim_end_matches('=')
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
    })
}

fn convert_messages(model: &Model, ctx: &Context) -> Vec<Value> {
    let needs_id = requires_tool_call_id(&model.id);
    let normalize = |id: &str, _: &crate::types::AssistantMessage| {
        if needs_id {
            sanitize_id(id, 64)
        } else {
            id.to_string()
        }
    };
    let msgs = transform_messages(&ctx.messages, model, Some(&normalize), None);
    let supports_images = model.input.contains(&InputKind::Image);
    let multimodal_results = gemini_major(&model.id).is_none_or(|m| m >= 3);
    let mut contents: Vec<Value> = Vec::new();
    for msg in &msgs {
        match msg {
            Message::User(u) => {
                let parts: Vec<Value> = match &u.content {
                    UserContent::Text(s) => vec![json!({"text": sanitize(s)})],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            UserBlock::Text(t) => Some(json!({"text": sanitize(&t.text)})),
                            UserBlock::Image(i) if supports_images => Some(
                                json!({"inlineData": {"mimeType": i.mime_type, "data": i.data}}),
                            ),
                            UserBlock::Image(_) => None,
                        })
                        .collect(),
                };
                if !parts.is_empty() {
                    contents.push(json!({"role": "user", "parts": parts}));
                }
            }
            Message::Assistant(a) => {
                let same = a.provider == model.provider && a.model == model.id;
                let mut parts = Vec::new();
                for b in &a.content {
                    match b {
                        AssistantBlock::Text(t) => {
                            if t.text.trim().is_empty() {
                                continue;
                            }
                            let mut p = json!({"text": sanitize(&t.text)});
                            if same && valid_signature(t.text_signature.as_deref()) {
                                p["thoughtSignature"] = json!(t.text_signature);
                            }
                            parts.push(p);
                        }
                        AssistantBlock::Thinking(t) => {
                            if t.thinking.trim().is_empty() {
                                continue;
                            }
                            if same {
                                let mut p = json!({"thought": true, "text": sanitize(&t.thinking)});
                                if valid_signature(t.thinking_signature.as_deref()) {
                                    p["thoughtSignature"] = json!(t.thinking_signature);
                                }
                                parts.push(p);
                            } else {
                                parts.push(json!({"text": sanitize(&t.thinking)}));
                            }
                        }
                        AssistantBlock::ToolCall(tc) => {
                            let mut call = json!({"name": tc.name, "args": tc.arguments});
                            if needs_id {
                                call["id"] = json!(tc.id);
                            }
                            let mut p = json!({"functionCall": call});
                            let sig = if same && valid_signature(tc.thought_signature.as_deref()) {
                                tc.thought_signature.clone()
                            } else if model.id.to_lowercase().contains("gemini-3") {
                                Some(SKIP_THOUGHT_SIGNATURE.to_string())
                            } else {
                                None
                            };
                            if let Some(s) = sig {
                                p["thoughtSignature"] = json!(s);
                            }
                            parts.push(p);
                        }
                    }
                }
                if !parts.is_empty() {
                    contents.push(json!({"role": "model", "parts": parts}));
                }
            }
            Message::ToolResult(r) => {
                let text: Vec<&str> = r
                    .content
                    .iter()
                    .filter_map(|b| {
                        if let UserBlock::Text(t) = b {
                            Some(t.text.as_str())
                        } else {
                            None
                        }
                    })
                    .collect();
                let text = text.join("\n");
                let images: Vec<Value> = if supports_images {
                    r.content
                        .iter()
                        .filter_map(|b| if let UserBlock::Image(i) = b { Some(json!({"inlineData": {"mimeType": i.mime_type, "data": i.data}})) } else { None })
                        .collect()
                } else {
                    Vec::new()
                };
                let value = if !text.is_empty() {
                    sanitize(&text)
                } else if !images.is_empty() {
                    "(see attached image)".into()
                } else {
                    String::new()
                };
                let mut fr = Map::new();
                fr.insert("name".into(), json!(r.tool_name));
                fr.insert(
                    "response".into(),
                    if r.is_error {
                        json!({"error": value})
                    } else {
                        json!({"output": value})
                    },
                );
                if !images.is_empty() && multimodal_results {
                    fr.insert("parts".into(), Value::Array(images.clone()));
                }
                if needs_id {
                    fr.insert("id".into(), json!(r.tool_call_id));
                }
                let part = json!({"functionResponse": fr});
                let appended = match contents.last_mut() {
                    Some(last)
                        if last["role"] == "user"
                            && last["parts"].as_array().is_some_and(|p| {
                                p.iter().any(|x| x.get("functionResponse").is_some())
                            }) =>
                    {
                        last["parts"]
                            .as_array_mut()
                            .map(|p| p.push(part.clone()))
                            .is_some()
                    }
                    _ => false,
                };
                if !appended {
                    contents.push(json!({"role": "user", "parts": [part]}));
                }
                if !images.is_empty() && !multimodal_results {
                    let mut parts = vec![json!({"text": "Tool result image:"})];
                    parts.extend(images);
                    contents.push(json!({"role": "user", "parts": parts}));
                }
            }
        }
    }
    contents
}

fn thinking_config(
    model: &Model,
    level: ThinkingLevel,
    budgets: &ThinkingBudgets,
) -> Option<Value> {
    if !model.reasoning {
        return None;
    }
    let pro3 = is_gemini3(&model.id, "pro");
    let flash3 = is_gemini3(&model.id, "flash");
    if level == ThinkingLevel::Off {
        return Some(if pro3 {
            json!({"thinkingLevel": "LOW"})
        } else if flash3 {
            json!({"thinkingLevel": "MINIMAL"})
        } else {
            json!({"thinkingBudget": 0})
        });
    }
    let effort = clamp_to_high(level);
    if pro3 || flash3 {
        let l = match (pro3, effort) {
            (true, ThinkingLevel::Minimal | ThinkingLevel::Low) => "LOW",
            (true, _) => "HIGH",
            (false, ThinkingLevel::Minimal) => "MINIMAL",
            (false, ThinkingLevel::Low) => "LOW",
            (false, ThinkingLevel::Medium) => "MEDIUM",
            (false, _) => "HIGH",
        };
        return Some(json!({"includeThoughts": true, "thinkingLevel": l}));
    }
    let budget: i64 = if let Some(b) = budgets.get(effort) {
        b as i64
    } else if model.id.contains("2.5-pro") {
        match effort {
            ThinkingLevel::Minimal => 128,
            ThinkingLevel::Low => 2048,
            ThinkingLevel::Medium => 8192,
            _ => 32768,
        }
    } else if model.id.contains("2.5-flash") {
        match effort {
            ThinkingLevel::Minimal => 128,
            ThinkingLevel::Low => 2048,
            ThinkingLevel::Medium => 8192,
            _ => 24576,
        }
    } else {
        -1
    };
    Some(json!({"includeThoughts": true, "thinkingBudget": budget}))
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
    budgets: &ThinkingBudgets,
) -> Request {
    let mut headers = http::credential_header("x-goog-api-key", api_key, api_key);
    for (k, v) in model.headers.iter().flatten().chain(opts.headers.iter()) {
        http::set_header(&mut headers, k, v.clone());
    }
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(convert_messages(model, ctx)),
    );
    if let Some(sp) = &ctx.system_prompt {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": sanitize(sp)}]}),
        );
    }
    if !ctx.tools.is_empty() {
        let decls: Vec<Value> = ctx
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}))
            .collect();
        body.insert("tools".into(), json!([{"functionDeclarations": decls}]));
    }
    let mut config = Map::new();
    config.insert(
        "maxOutputTokens".into(),
        json!(base_max_tokens(model, opts.max_tokens)),
    );
    if let Some(tc) = thinking_config(model, opts.thinking, budgets) {
        config.insert("thinkingConfig".into(), tc);
    }
    body.insert("generationConfig".into(), Value::Object(config));
    let url = http::join_url(
        &model.base_url,
        &format!("models/{}:streamGenerateContent?alt=sse", model.wire_id()),
    );
    Request {
        url,
        headers,
        body: Value::Object(body),
    }
}

fn map_finish_reason(r: &str) -> StopReason {
    match r {
        "STOP" => StopReason::Stop,
        "MAX_TOKENS" => StopReason::Length,
        _ => StopReason::Error,
    }
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
    let body = crate::provider::rewrite_payload(&opts.on_payload, req.body).await;
    let resp = http::post_json(
        &mut *out,
        &req.url,
        &req.headers,
        &body,
        retries,
        ErrorStyle::Google,
    )
    .await?;
    out.start();
    let mut events = http::sse_events(resp);
    process_stream(out, &mut events).await
}

#[derive(Clone, Copy)]
enum Current {
    None,
    Text(usize),
    Thinking(usize),
}

fn end_block(out: &mut Output, cur: Current) {
    match cur {
        Current::Text(i) => out.text_end(i),
        Current::Thinking(i) => out.thinking_end(i),
        Current::None => {}
    }
}

pub(crate) async fn process_stream(
    out: &mut Output,
    events: &mut (impl futures::Stream<Item = eventsource_stream::Event> + Unpin),
) -> ProviderResult {
    let mut cur = Current::None;
    let mut got_finish = false;
    while let Some(ev) = out.wait(events.next()).await? {
        let Ok(chunk) = serde_json::from_str::<Value>(&ev.data) else {
            continue;
        };
        if let Some(err) = chunk.get("error").filter(|e| e.is_object()) {
            return Err(ProviderError::Message(json!({"error": err}).to_string()));
        }
        if out.msg.response_id.is_none() {
            out.msg.response_id = chunk["responseId"].as_str().map(str::to_string);
        }
        let cand = &chunk["candidates"][0];
        if let Some(parts) = cand["content"]["parts"].as_array() {
            for part in parts {
                if let Some(text) = part["text"].as_str() {
                    let thinking = part["thought"] == true;
                    let sig = part["thoughtSignature"].as_str().filter(|s| !s.is_empty());
                    let i = match (cur, thinking) {
                        (Current::Thinking(i), true) | (Current::Text(i), false) => i,
                        (c, _) => {
                            end_block(out, c);
                            if thinking {
                                let i = out.thinking_start(ThinkingContent {
                                    thinking: String::new(),
                                    thinking_signature: None,
                                    redacted: None,
                                    ..Default::default()
                                });
                                cur = Current::Thinking(i);
                                i
                            } else {
                                let i = out.text_start();
                                cur = Current::Text(i);
                                i
                            }
                        }
                    };
                    if thinking {
                        if let (Some(s), Some(t)) = (sig, out.thinking_mut(i)) {
                            t.thinking_signature = Some(s.to_string());
                        }
                        out.thinking_delta(i, text);
                    } else {
                        if let (Some(s), Some(t)) = (sig, out.text_mut(i)) {
                            t.text_signature = Some(s.to_string());
                        }
                        out.text_delta(i, text);
                    }
                }
                if let Some(fc) = part.get("functionCall").filter(|f| f.is_object()) {
                    end_block(out, cur);
                    cur = Current::None;
                    let name = fc["name"].as_str().unwrap_or("").to_string();
                    let provided = fc["id"].as_str().filter(|s| !s.is_empty());
                    let duplicate =
                        provided.is_some_and(|p| out.msg.tool_calls().any(|t| t.id == p));
                    let id = match provided {
                        Some(p) if !duplicate => p.to_string(),
                        _ => format!(
                            "{}_{}_{}",
                            name,
                            now_ms(),
                            TOOL_CALL_COUNTER.fetch_add(1, Ordering::Relaxed) + 1
                        ),
                    };
                    let args = fc["args"].as_object().cloned().unwrap_or_default();
                    let delta = Value::Object(args.clone()).to_string();
                    // Gemini sends whole calls: start, one delta with the full JSON, end.
                    let i = out.toolcall_start(id, name, Map::new());
                    if let Some(t) = out.toolcall_mut(i) {
                        t.thought_signature = part["thoughtSignature"]
                            .as_str()
                            .filter(|s| !s.is_empty())
                            .map(str::to_string);
                    }
                    out.toolcall_delta(i, &delta);
                    if let Some(t) = out.toolcall_mut(i) {
                        t.arguments = args;
                    }
                    out.toolcall_end(i);
                }
            }
        }
        if let Some(r) = cand["finishReason"].as_str() {
            got_finish = true;
            out.msg.stop_reason = map_finish_reason(r);
            if out.msg.tool_calls().next().is_some() {
                out.msg.stop_reason = StopReason::ToolUse;
            }
        }
        let um = &chunk["usageMetadata"];
        if um.is_object() {
            let n = |k: &str| tokens(um[k].as_u64().unwrap_or(0));
            let cached = n("cachedContentTokenCount");
            out.msg.usage = Usage {
                input: n("promptTokenCount").saturating_sub(cached).max(0),
                output: n("candidatesTokenCount") + n("thoughtsTokenCount"),
                cache_read: cached,
                cache_write: 0,
                total_tokens: n("totalTokenCount"),
                ..Default::default()
            };
            calculate_cost(&out.model, &mut out.msg.usage);
        }
    }
    end_block(out, cur);
    if out.is_cancelled() {
        return Err(ProviderError::Aborted);
    }
    if !got_finish {
        return Err(ProviderError::msg(
            "Stream ended without finishReason — connection likely dropped",
        ));
    }
    if matches!(out.msg.stop_reason, StopReason::Error | StopReason::Aborted) {
        return Err(ProviderError::msg("An unknown error occurred"));
    }
    Ok(())
}
