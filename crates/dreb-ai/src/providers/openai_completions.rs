//! `openai-completions`: POST `<baseUrl>/chat/completions` with `stream: true` (the OpenAI chat API and every
//! compatible server: Ollama, vLLM, llama.cpp, OpenRouter, Groq, ...). Server quirks are `compat` switches.

use futures::StreamExt;
use serde_json::{Map, Value, json};

use crate::cost::{calculate_cost, sanitize, tokens};
use crate::http::{self, ErrorStyle};
use crate::output::{Output, ProviderError, ProviderResult};
use crate::provider::StreamOptions;
use crate::providers::Tuning;
use crate::thinking::{base_max_tokens, resolve_reasoning_effort};
use crate::transform::{sanitize_id, transform_messages};
use crate::types::{
    AssistantBlock, AssistantMessage, Context, InputKind, Message, Model, StopReason,
    ThinkingContent, ThinkingLevel, Usage, UserBlock, UserContent,
};

const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// Resolved compatibility switches (explicit `compat` over what the provider/baseUrl implies).
#[derive(Debug, Clone)]
pub(crate) struct Compat {
    pub supports_store: bool,
    pub supports_developer_role: bool,
    pub supports_reasoning_effort: bool,
    pub reasoning_effort_map: Map<String, Value>,
    pub supports_usage_in_streaming: bool,
    pub max_tokens_field: String,
    pub requires_tool_result_name: bool,
    pub requires_assistant_after_tool_result: bool,
    pub requires_thinking_as_text: bool,
    pub thinking_format: String,
    pub open_router_routing: Option<Value>,
    pub vercel_gateway_routing: Option<Value>,
    pub supports_strict_mode: bool,
}

pub(crate) fn compat(model: &Model) -> Compat {
    let p = model.provider.as_str();
    let url = model.base_url.as_str();
    let zai = p == "zai" || url.contains("api.z.ai");
    let non_standard = p == "cerebras"
        || url.contains("cerebras.ai")
        || p == "xai"
        || url.contains("api.x.ai")
        || url.contains("chutes.ai")
        || url.contains("deepseek.com")
        || zai
        || p == "opencode"
        || url.contains("opencode.ai");
    let grok = p == "xai" || url.contains("api.x.ai");
    let groq = p == "groq" || url.contains("groq.com");
    let mut effort_map = Map::new();
    if groq && model.id == "qwen/qwen3-32b" {
        for l in ["minimal", "low", "medium", "high", "xhigh"] {
            effort_map.insert(l.into(), json!("default"));
        }
    }
    let empty = Map::new();
    let c = model.compat.as_ref().unwrap_or(&empty);
    let b = |k: &str, d: bool| c.get(k).and_then(Value::as_bool).unwrap_or(d);
    let s = |k: &str, d: &str| c.get(k).and_then(Value::as_str).unwrap_or(d).to_string();
    let thinking_format = s(
        "thinkingFormat",
        if zai {
            "zai"
        } else if p == "openrouter" || url.contains("openrouter.ai") {
            "openrouter"
        } else {
            "openai"
        },
    );
    let mut reasoning_effort_map = c
        .get("reasoningEffortMap")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or(effort_map);
    if thinking_format == "qwen-chat-template"
        && reasoning_effort_map.is_empty()
        && crate::thinking::supports_xhigh(model)
        && model.id.to_lowercase().contains("qwen")
    {
        for (k, v) in [
            ("minimal", "low"),
            ("low", "low"),
            ("medium", "medium"),
            ("high", "xhigh"),
            ("xhigh", "xhigh"),
            ("max", "xhigh"),
        ] {
            reasoning_effort_map.insert(k.into(), json!(v));
        }
    }
    Compat {
        supports_store: b("supportsStore", !non_standard),
        supports_developer_role: b("supportsDeveloperRole", !non_standard),
        supports_reasoning_effort: b("supportsReasoningEffort", !grok && !zai),
        reasoning_effort_map,
        supports_usage_in_streaming: b("supportsUsageInStreaming", true),
        max_tokens_field: s(
            "maxTokensField",
            if url.contains("chutes.ai") {
                "max_tokens"
            } else {
                "max_completion_tokens"
            },
        ),
        requires_tool_result_name: b("requiresToolResultName", false),
        requires_assistant_after_tool_result: b("requiresAssistantAfterToolResult", false),
        requires_thinking_as_text: b("requiresThinkingAsText", false),
        thinking_format,
        open_router_routing: c.get("openRouterRouting").cloned(),
        vercel_gateway_routing: c.get("vercelGatewayRouting").cloned(),
        supports_strict_mode: b("supportsStrictMode", true),
    }
}

fn map_effort(level: ThinkingLevel, map: &Map<String, Value>) -> String {
    map.get(level.as_str())
        .and_then(Value::as_str)
        .unwrap_or(level.as_str())
        .to_string()
}

fn has_tool_history(messages: &[Message]) -> bool {
    messages.iter().any(|m| match m {
        Message::ToolResult(_) => true,
        Message::Assistant(a) => a.tool_calls().next().is_some(),
        Message::User(_) => false,
    })
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
) -> Request {
    let compat = compat(model);
    // No key (a local server on loopback): no credential header at all.
    let mut headers =
        http::credential_header("authorization", &format!("Bearer {api_key}"), api_key);
    for (k, v) in model.headers.iter().flatten().chain(opts.headers.iter()) {
        http::set_header(&mut headers, k, v.clone());
    }
    let effort = if model.reasoning {
        resolve_reasoning_effort(model, opts.thinking)
    } else {
        None
    };

    let mut messages = convert_messages(model, ctx, &compat);
    if model.provider == "openrouter" && model.id.starts_with("anthropic/") {
        add_openrouter_cache_control(&mut messages);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model.wire_id()));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    if compat.supports_usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        body.insert("store".into(), json!(false));
    }
    let max_tokens = base_max_tokens(model, opts.max_tokens);
    let field = if compat.max_tokens_field == "max_tokens" {
        "max_tokens"
    } else {
        "max_completion_tokens"
    };
    body.insert(field.into(), json!(max_tokens));
    if !ctx.tools.is_empty() {
        let tools: Vec<Value> = ctx
            .tools
            .iter()
            .map(|t| {
                let mut f = json!({"name": t.name, "description": t.description, "parameters": t.parameters});
                if compat.supports_strict_mode {
                    f["strict"] = json!(false);
                }
                json!({"type": "function", "function": f})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    } else if has_tool_history(&ctx.messages) {
        // Some servers reject tool calls in the history when no tools are declared.
        body.insert("tools".into(), json!([]));
    }
    if model.reasoning {
        match compat.thinking_format.as_str() {
            "zai" | "qwen" => {
                body.insert("enable_thinking".into(), json!(effort.is_some()));
            }
            "qwen-chat-template" => {
                body.insert(
                    "chat_template_kwargs".into(),
                    json!({"enable_thinking": effort.is_some()}),
                );
                if let Some(l) = effort {
                    body.insert(
                        "reasoning_effort".into(),
                        json!(map_effort(l, &compat.reasoning_effort_map)),
                    );
                }
            }
            "openrouter" => {
                let e = effort
                    .map(|l| map_effort(l, &compat.reasoning_effort_map))
                    .unwrap_or_else(|| "none".into());
                body.insert("reasoning".into(), json!({"effort": e}));
            }
            "kimi" => {
                if let Some(l) = effort {
                    let e = map_effort(l, &compat.reasoning_effort_map);
                    let thinking = match e.as_str() {
                        "off" => json!({"type": "disabled"}),
                        "auto" => json!({"type": "enabled"}),
                        _ => json!({"type": "enabled", "effort": e}),
                    };
                    body.insert("thinking".into(), thinking);
                }
                if let Some(sid) = &opts.session_id {
                    body.insert("prompt_cache_key".into(), json!(sid));
                }
            }
            _ => {
                if let (Some(l), true) = (effort, compat.supports_reasoning_effort) {
                    body.insert(
                        "reasoning_effort".into(),
                        json!(map_effort(l, &compat.reasoning_effort_map)),
                    );
                }
            }
        }
    }
    if model.base_url.contains("openrouter.ai")
        && let Some(r) = &compat.open_router_routing
    {
        body.insert("provider".into(), r.clone());
    }
    if model.base_url.contains("ai-gateway.vercel.sh")
        && let Some(r) = compat
            .vercel_gateway_routing
            .as_ref()
            .and_then(Value::as_object)
    {
        let mut g = Map::new();
        for k in ["only", "order"] {
            if let Some(v) = r.get(k) {
                g.insert(k.into(), v.clone());
            }
        }
        if !g.is_empty() {
            body.insert("providerOptions".into(), json!({"gateway": g}));
        }
    }
    Request {
        url: http::join_url(&model.base_url, "chat/completions"),
        headers,
        body: Value::Object(body),
    }
}

fn add_openrouter_cache_control(messages: &mut [Value]) {
    for msg in messages.iter_mut().rev() {
        let role = msg["role"].as_str().unwrap_or("");
        if role != "user" && role != "assistant" {
            continue;
        }
        match &mut msg["content"] {
            Value::String(s) => {
                let text = std::mem::take(s);
                msg["content"] =
                    json!([{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]);
                return;
            }
            Value::Array(parts) => {
                if let Some(p) = parts.iter_mut().rev().find(|p| p["type"] == "text") {
                    p["cache_control"] = json!({"type": "ephemeral"});
                    return;
                }
            }
            _ => {}
        }
    }
}

fn data_url(mime: &str, data: &str) -> String {
    format!("data:{mime};base64,{data}")
}

fn convert_messages(model: &Model, ctx: &Context, compat: &Compat) -> Vec<Value> {
    let provider_is_openai = model.provider == "openai";
    let normalize = |id: &str, _: &AssistantMessage| {
        if let Some((call, _)) = id.split_once('|') {
            sanitize_id(call, 40)
        } else if provider_is_openai && id.chars().count() > 40 {
            id.chars().take(40).collect()
        } else {
            id.to_string()
        }
    };
    let preserve = |t: &ThinkingContent, src: &AssistantMessage| {
        model.reasoning
            && !compat.requires_thinking_as_text
            && src.provider == model.provider
            && src.api == "openai-completions"
            && model.api == "openai-completions"
            && t.thinking_signature
                .as_deref()
                .is_some_and(|s| REASONING_FIELDS.contains(&s))
    };
    let msgs = transform_messages(&ctx.messages, model, Some(&normalize), Some(&preserve));
    let mut params: Vec<Value> = Vec::new();
    if let Some(sp) = &ctx.system_prompt {
        let role = if model.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
        params.push(json!({"role": role, "content": sanitize(sp)}));
    }
    let supports_images = model.input.contains(&InputKind::Image);
    let mut last_role: Option<&str> = None;
    let mut i = 0;
    while i < msgs.len() {
        let msg = &msgs[i];
        if compat.requires_assistant_after_tool_result
            && last_role == Some("toolResult")
            && matches!(msg, Message::User(_))
        {
            params.push(
                json!({"role": "assistant", "content": "I have processed the tool results."}),
            );
        }
        match msg {
            Message::User(u) => {
                match &u.content {
                    UserContent::Text(s) => {
                        params.push(json!({"role": "user", "content": sanitize(s)}))
                    }
                    UserContent::Blocks(blocks) => {
                        let mut content: Vec<Value> = Vec::new();
                        let mut had_images = false;
                        for b in blocks {
                            match b {
                                UserBlock::Text(t) => content.push(json!({"type": "text", "text": sanitize(&t.text)})),
                                UserBlock::Image(img) if supports_images => content
                                    .push(json!({"type": "image_url", "image_url": {"url": data_url(&img.mime_type, &img.data)}})),
                                UserBlock::Image(_) => had_images = true,
                            }
                        }
                        if had_images {
                            content.push(json!({"type": "text", "text": "[image omitted: model does not support images]"}));
                        }
                        if content.is_empty() {
                            i += 1;
                            continue;
                        }
                        params.push(json!({"role": "user", "content": content}));
                    }
                }
                last_role = Some("user");
            }
            Message::Assistant(a) => {
                let mut m = Map::new();
                m.insert("role".into(), json!("assistant"));
                m.insert(
                    "content".into(),
                    if compat.requires_assistant_after_tool_result {
                        json!("")
                    } else {
                        Value::Null
                    },
                );
                let texts: Vec<String> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        AssistantBlock::Text(t) if !t.text.trim().is_empty() => {
                            Some(sanitize(&t.text))
                        }
                        _ => None,
                    })
                    .collect();
                if !texts.is_empty() {
                    m.insert("content".into(), json!(texts.concat()));
                }
                let thinking: Vec<&ThinkingContent> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        AssistantBlock::Thinking(t) if !t.thinking.trim().is_empty() => Some(t),
                        _ => None,
                    })
                    .collect();
                if !thinking.is_empty() {
                    if compat.requires_thinking_as_text {
                        let text = sanitize(
                            &thinking
                                .iter()
                                .map(|t| t.thinking.as_str())
                                .collect::<Vec<_>>()
                                .join("\n\n"),
                        );
                        let mut parts = vec![json!({"type": "text", "text": text})];
                        if let Some(Value::String(s)) = m.get("content") {
                            parts.push(json!({"type": "text", "text": s}));
                        }
                        m.insert("content".into(), Value::Array(parts));
                    } else if let Some(sig) = thinking[0]
                        .thinking_signature
                        .as_deref()
                        .filter(|s| REASONING_FIELDS.contains(s))
                    {
                        let text = sanitize(
                            &thinking
                                .iter()
                                .map(|t| t.thinking.as_str())
                                .collect::<Vec<_>>()
                                .join("\n"),
                        );
                        m.insert(sig.to_string(), json!(text));
                    }
                }
                let calls: Vec<_> = a.tool_calls().collect();
                if !calls.is_empty() {
                    let tc: Vec<Value> = calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": Value::Object(c.arguments.clone()).to_string()}})
                        })
                        .collect();
                    m.insert("tool_calls".into(), Value::Array(tc));
                    let details: Vec<Value> = calls
                        .iter()
                        .filter_map(|c| {
                            c.thought_signature
                                .as_deref()
                                .and_then(|s| serde_json::from_str(s).ok())
                        })
                        .collect();
                    if !details.is_empty() {
                        m.insert("reasoning_details".into(), Value::Array(details));
                    }
                }
                let has_content = match m.get("content") {
                    Some(Value::String(s)) => !s.is_empty(),
                    Some(Value::Array(a)) => !a.is_empty(),
                    _ => false,
                };
                if has_content || m.contains_key("tool_calls") {
                    params.push(Value::Object(m));
                }
                last_role = Some("assistant");
            }
            Message::ToolResult(_) => {
                let mut images: Vec<Value> = Vec::new();
                while let Some(Message::ToolResult(r)) = msgs.get(i) {
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
                    let has_images = r.content.iter().any(|b| matches!(b, UserBlock::Image(_)));
                    let mut content = if text.is_empty() {
                        "(see attached image)".to_string()
                    } else {
                        text.clone()
                    };
                    if has_images && !supports_images {
                        content = if text.is_empty() {
                            "(image omitted: model does not support images)".into()
                        } else {
                            format!("{text}\n[tool image omitted: model does not support images]")
                        };
                    }
                    let mut m = json!({"role": "tool", "content": sanitize(&content), "tool_call_id": r.tool_call_id});
                    if compat.requires_tool_result_name && !r.tool_name.is_empty() {
                        m["name"] = json!(r.tool_name);
                    }
                    params.push(m);
                    if has_images && supports_images {
                        for b in &r.content {
                            if let UserBlock::Image(img) = b {
                                images.push(json!({"type": "image_url", "image_url": {"url": data_url(&img.mime_type, &img.data)}}));
                            }
                        }
                    }
                    i += 1;
                }
                if images.is_empty() {
                    last_role = Some("toolResult");
                } else {
                    if compat.requires_assistant_after_tool_result {
                        params.push(json!({"role": "assistant", "content": "I have processed the tool results."}));
                    }
                    let mut content = vec![
                        json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                    ];
                    content.extend(images);
                    params.push(json!({"role": "user", "content": content}));
                    last_role = Some("user");
                }
                continue;
            }
        }
        i += 1;
    }
    params
}

fn parse_usage(raw: &Value, model: &Model) -> Usage {
    let cached = raw["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or(0);
    let reasoning = raw["completion_tokens_details"]["reasoning_tokens"]
        .as_u64()
        .unwrap_or(0);
    let input = raw["prompt_tokens"]
        .as_u64()
        .unwrap_or(0)
        .saturating_sub(cached);
    let output = raw["completion_tokens"].as_u64().unwrap_or(0) + reasoning;
    let mut usage = Usage {
        input: tokens(input),
        output: tokens(output),
        cache_read: tokens(cached),
        cache_write: 0,
        total_tokens: tokens(input + output + cached),
        ..Default::default()
    };
    calculate_cost(model, &mut usage);
    usage
}

fn map_finish_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" | "end" => (StopReason::Stop, None),
        "length" => (StopReason::Length, None),
        "function_call" | "tool_calls" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider finish_reason: {other}")),
        ),
    }
}

pub(crate) async fn run(
    out: &mut Output,
    ctx: &Context,
    opts: &StreamOptions,
    api_key: &str,
    tuning: &Tuning,
) -> ProviderResult {
    let retries = tuning.retry_policy();
    let req = build_request(&out.model, ctx, opts, api_key);
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
    // The OpenAI SDK resolves the stream once the response headers arrived: `start` comes after them.
    out.start();
    let mut events = http::sse_events(resp);
    process_stream(out, &mut events).await
}

/// The common streamed chunk, read without building a JSON tree: at most `id`, the first choice's `finish_reason`
/// and its `delta.content` matter. [`plain_chunk`] returns it only when nothing else the general path acts on is
/// there (an `error`, `usage`, tool calls, reasoning), so both paths give the same events.
#[derive(serde::Deserialize)]
struct PlainChunk<'a> {
    #[serde(borrow, default)]
    id: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    usage: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    choices: Option<Vec<PlainChoice<'a>>>,
}

#[derive(serde::Deserialize)]
struct PlainChoice<'a> {
    #[serde(borrow, default)]
    finish_reason: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    usage: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    delta: Option<PlainDelta<'a>>,
}

#[derive(serde::Deserialize)]
struct PlainDelta<'a> {
    #[serde(borrow, default)]
    content: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_text: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    reasoning_details: Option<serde::de::IgnoredAny>,
}

/// `data` as a [`PlainChunk`], or `None` for the general path: not an object, a field of another type than the
/// general path reads (it then ignores it), a duplicate key, or anything besides text and a finish reason. Absent
/// and `null` fields are the same to both paths.
fn plain_chunk(data: &str) -> Option<PlainChunk<'_>> {
    // A JSON array would deserialise into the struct by position; the general path skips it.
    if !data
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return None;
    }
    let chunk: PlainChunk = serde_json::from_str(data).ok()?;
    let plain_choice = |c: &PlainChoice| {
        c.usage.is_none()
            && c.delta.as_ref().is_none_or(|d| {
                d.tool_calls.is_none()
                    && d.reasoning_details.is_none()
                    && [&d.reasoning_content, &d.reasoning, &d.reasoning_text]
                        .iter()
                        .all(|r| r.as_deref().is_none_or(str::is_empty))
            })
    };
    let plain = chunk.error.is_none()
        && chunk.usage.is_none()
        && chunk
            .choices
            .as_ref()
            .and_then(|c| c.first())
            .is_none_or(plain_choice);
    plain.then_some(chunk)
}

/// A text delta: into the open text block, or a new one after closing what was open.
fn push_text(out: &mut Output, cur: &mut Current, text: &str) {
    let i = match *cur {
        Current::Text(i) => i,
        c => {
            finish_block(out, c);
            let i = out.text_start();
            *cur = Current::Text(i);
            i
        }
    };
    out.text_delta(i, text);
}

#[derive(Clone, Copy, PartialEq)]
enum Current {
    None,
    Text(usize),
    Thinking(usize),
    Tool(usize),
}

fn finish_block(out: &mut Output, cur: Current) {
    match cur {
        Current::Text(i) => out.text_end(i),
        Current::Thinking(i) => out.thinking_end(i),
        Current::Tool(i) => out.toolcall_end(i),
        Current::None => {}
    }
}

pub(crate) async fn process_stream(
    out: &mut Output,
    events: &mut (impl futures::Stream<Item = eventsource_stream::Event> + Unpin),
) -> ProviderResult {
    let mut cur = Current::None;
    let mut got_finish = false;
    loop {
        let ev = match out.wait(events.next()).await {
            Ok(Some(ev)) => ev,
            Ok(None) => break,
            // Like the OpenAI SDK's stream, an abort ends the iteration quietly: the open block still gets its
            // `*_end` event before the aborted message.
            Err(ProviderError::Aborted) => break,
            Err(e) => return Err(e),
        };
        if ev.data == "[DONE]" {
            break;
        }
        if let Some(chunk) = plain_chunk(&ev.data) {
            // The same steps as below, for the fields a plain chunk can have.
            if out.msg.response_id.is_none() {
                out.msg.response_id = chunk.id.filter(|s| !s.is_empty()).map(|s| s.into_owned());
            }
            let Some(choice) = chunk.choices.as_ref().and_then(|c| c.first()) else {
                continue;
            };
            if let Some(reason) = choice.finish_reason.as_deref() {
                got_finish = true;
                let (stop, err) = map_finish_reason(reason);
                out.msg.stop_reason = stop;
                if err.is_some() {
                    out.msg.error_message = err;
                }
            }
            if let Some(text) = choice
                .delta
                .as_ref()
                .and_then(|d| d.content.as_deref())
                .filter(|s| !s.is_empty())
            {
                push_text(out, &mut cur, text);
            }
            continue;
        }
        let Ok(chunk) = serde_json::from_str::<Value>(&ev.data) else {
            continue;
        };
        if !chunk.is_object() {
            continue;
        }
        if let Some(err) = chunk.get("error").filter(|e| e.is_object()) {
            // An error object inside the stream (OpenAI-compatible servers do this).
            let msg = err["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            return Err(ProviderError::Message(msg));
        }
        if out.msg.response_id.is_none() {
            out.msg.response_id = chunk["id"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string);
        }
        if chunk["usage"].is_object() {
            out.msg.usage = parse_usage(&chunk["usage"], &out.model);
        }
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        if !chunk["usage"].is_object() && choice["usage"].is_object() {
            out.msg.usage = parse_usage(&choice["usage"], &out.model);
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            got_finish = true;
            let (stop, err) = map_finish_reason(reason);
            out.msg.stop_reason = stop;
            if err.is_some() {
                out.msg.error_message = err;
            }
        }
        let delta = &choice["delta"];
        if !delta.is_object() {
            continue;
        }
        if let Some(text) = delta["content"].as_str().filter(|s| !s.is_empty()) {
            push_text(out, &mut cur, text);
        }
        if let Some((field, text)) = REASONING_FIELDS.iter().find_map(|f| {
            delta[*f]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(|s| (*f, s))
        }) {
            let i = match cur {
                Current::Thinking(i) => i,
                c => {
                    finish_block(out, c);
                    let i = out.thinking_start(ThinkingContent {
                        thinking: String::new(),
                        thinking_signature: Some(field.to_string()),
                        redacted: None,
                        ..Default::default()
                    });
                    cur = Current::Thinking(i);
                    i
                }
            };
            out.thinking_delta(i, text);
        }
        if let Some(calls) = delta["tool_calls"].as_array() {
            for call in calls {
                let id = call["id"].as_str().filter(|s| !s.is_empty());
                let name = call["function"]["name"].as_str().filter(|s| !s.is_empty());
                let same = match (cur, id) {
                    (Current::Tool(i), Some(id)) => out.toolcall_mut(i).is_some_and(|t| t.id == id),
                    (Current::Tool(_), None) => true,
                    _ => false,
                };
                let i = if same {
                    let Current::Tool(i) = cur else {
                        unreachable!()
                    };
                    i
                } else {
                    finish_block(out, cur);
                    let i = out.toolcall_start(
                        id.unwrap_or("").to_string(),
                        name.unwrap_or("").to_string(),
                        Map::new(),
                    );
                    cur = Current::Tool(i);
                    i
                };
                if let Some(t) = out.toolcall_mut(i) {
                    if let Some(id) = id {
                        t.id = id.to_string();
                    }
                    if let Some(name) = name {
                        t.name = name.to_string();
                    }
                }
                let args = call["function"]["arguments"].as_str().unwrap_or("");
                out.toolcall_delta(i, args);
            }
        }
        if let Some(details) = delta["reasoning_details"].as_array() {
            for d in details {
                if d["type"] == "reasoning.encrypted" && d["id"].is_string() && !d["data"].is_null()
                {
                    let id = d["id"].as_str().unwrap_or("");
                    for b in out.content_mut().iter_mut() {
                        if let AssistantBlock::ToolCall(t) = b
                            && t.id == id
                        {
                            t.thought_signature = Some(d.to_string());
                        }
                    }
                }
            }
        }
    }
    finish_block(out, cur);
    if out.is_cancelled() {
        return Err(ProviderError::Aborted);
    }
    if !got_finish {
        return Err(ProviderError::msg(
            "Stream ended without finish_reason — connection likely dropped",
        ));
    }
    match out.msg.stop_reason {
        StopReason::Aborted => Err(ProviderError::Aborted),
        StopReason::Error => Err(ProviderError::Message(
            out.msg
                .error_message
                .clone()
                .unwrap_or_else(|| "Provider returned an error stop reason".into()),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod plain_chunk_tests {
    use super::*;

    /// What the general path reads from a chunk that has none of the fields only it handles: the response id, the
    /// first choice's finish reason and its text.
    fn general(data: &str) -> (Option<String>, Option<String>, Option<String>) {
        let chunk: Value = serde_json::from_str(data).unwrap();
        let choice = &chunk["choices"][0];
        (
            chunk["id"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            choice["finish_reason"].as_str().map(str::to_string),
            choice["delta"]["content"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        )
    }

    fn plain(data: &str) -> Option<(Option<String>, Option<String>, Option<String>)> {
        let chunk = plain_chunk(data)?;
        let choice = chunk.choices.as_ref().and_then(|c| c.first());
        Some((
            chunk.id.filter(|s| !s.is_empty()).map(|s| s.into_owned()),
            choice
                .and_then(|c| c.finish_reason.as_deref())
                .map(str::to_string),
            choice
                .and_then(|c| c.delta.as_ref())
                .and_then(|d| d.content.as_deref())
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        ))
    }

    #[test]
    fn plain_chunks_read_the_same_as_the_general_path() {
        for data in [
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"a \"quoted\"\nline \u00e9"},"finish_reason":null}]}"#,
            r#"{"id":"","choices":[{"delta":{"content":""},"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
            r#"{"id":"c1","choices":[]}"#,
            r#"{"id":"c1"}"#,
            r#"{"choices":[{"delta":null,"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"delta":{"content":"x","reasoning_content":"","tool_calls":null,"reasoning":null}}]}"#,
            r#"  {"error":null,"choices":[{"delta":{"content":"x"},"usage":null}],"extra":{"nested":[1,2]}}"#,
        ] {
            assert_eq!(plain(data), Some(general(data)), "{data}");
        }
    }

    #[test]
    fn anything_else_takes_the_general_path() {
        for data in [
            r#"{"error":{"message":"overloaded"}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5}}"#,
            r#"{"choices":[{"delta":{},"usage":{"prompt_tokens":3}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"think"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_text":"think"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_details":[]}}]}"#,
            r#"{"choices":[{"delta":"text"}]}"#,
            r#"{"choices":[null]}"#,
            r#"{"choices":[{"delta":{"content":"x"}}, 5]}"#,
            r#"{"choices":{"0":{"delta":{"content":"x"}}}}"#,
            r#"{"id":7,"choices":[]}"#,
            r#"{"choices":[{"delta":{"content":7}}]}"#,
            r#"{"choices":[{"finish_reason":1}]}"#,
            r#"{"id":"a","id":"b","choices":[]}"#,
            r#"["c1",[{"delta":{"content":"x"}}]]"#,
            r#"[DONE"#,
            r#"5"#,
        ] {
            assert!(plain_chunk(data).is_none(), "{data}");
        }
    }
}
