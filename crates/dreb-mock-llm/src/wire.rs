//! Renders a scripted turn as each provider's SSE stream, and error bodies as each provider writes them.

use dreb_ai::scenario::{ScriptedStop, Turn};
use serde_json::{Value, json};

use crate::Wire;

/// `(is_delta, bytes)`: deltas are the frames a scenario's `deltaDelayMs` / `cutAfter` count.
pub(crate) type Frame = (bool, Vec<u8>);

fn named(event: &str, data: &Value) -> Vec<u8> {
    format!("event: {event}\ndata: {data}\n\n").into_bytes()
}

fn data(data: &Value) -> Vec<u8> {
    format!("data: {data}\n\n").into_bytes()
}

/// The error body a provider sends for an HTTP error.
pub(crate) fn error_body(wire: Wire, status: u16, kind: &str, message: &str) -> String {
    match wire {
        Wire::Anthropic => {
            json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
        }
        Wire::OpenAiCompletions | Wire::OpenAiResponses => {
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
                .to_string()
        }
        Wire::Google => {
            let s = match status {
                429 => "RESOURCE_EXHAUSTED",
                400 => "INVALID_ARGUMENT",
                503 | 529 => "UNAVAILABLE",
                _ => "INTERNAL",
            };
            json!({"error": {"code": status, "message": message, "status": s}}).to_string()
        }
    }
}

/// Frames for one turn; the stream stops early after `cutAfter` deltas (no terminal frames).
pub(crate) fn render(wire: Wire, turn: &Turn, n: u64, model: &str) -> Vec<Frame> {
    let mut frames = match wire {
        Wire::Anthropic => anthropic(turn, n, model),
        Wire::OpenAiCompletions => openai(turn, n, model),
        Wire::OpenAiResponses => responses(turn, n, model),
        Wire::Google => google(turn, n),
    };
    if let Some(cut) = turn.cut_after {
        let mut seen = 0;
        let pos = frames.iter().position(|(d, _)| {
            if *d {
                seen += 1;
            }
            *d && seen > cut
        });
        if let Some(p) = pos {
            frames.truncate(p);
        } else {
            // Fewer deltas than the cut: drop everything after the last delta (the terminal frames).
            if let Some(last) = frames.iter().rposition(|(d, _)| *d) {
                frames.truncate(last + 1);
            }
        }
    }
    frames
}

fn tool_id(prefix: &str, n: u64, k: usize, explicit: &Option<String>) -> String {
    explicit.clone().unwrap_or_else(|| {
        if k == 0 {
            format!("{prefix}_{n}")
        } else {
            format!("{prefix}_{n}_{k}")
        }
    })
}

fn anthropic(turn: &Turn, n: u64, model: &str) -> Vec<Frame> {
    let u = turn.usage();
    let id = turn
        .response_id
        .clone()
        .unwrap_or_else(|| format!("msg_mock_{n}"));
    let mut f: Vec<Frame> = vec![(
        false,
        named(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": u.input, "output_tokens": 1, "cache_read_input_tokens": u.cache_read, "cache_creation_input_tokens": u.cache_write}
            }}),
        ),
    )];
    let mut index = 0;
    if !turn.thinking.is_empty() {
        f.push((false, named("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))));
        for d in &turn.thinking {
            f.push((true, named("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": d}}))));
        }
        let sig = turn
            .thinking_signature
            .clone()
            .unwrap_or_else(|| format!("sig_mock_{n}"));
        f.push((false, named("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": sig}}))));
        f.push((
            false,
            named(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ),
        ));
        index += 1;
    }
    if !turn.text.is_empty() {
        f.push((false, named("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))));
        for d in &turn.text {
            f.push((true, named("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": d}}))));
        }
        f.push((
            false,
            named(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ),
        ));
        index += 1;
    }
    for (k, call) in turn.tool_calls.iter().enumerate() {
        let id = tool_id("toolu_mock", n, k, &call.id);
        f.push((false, named("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": call.name, "input": {}}}))));
        for piece in call.argument_chunks() {
            f.push((true, named("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}))));
        }
        f.push((
            false,
            named(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ),
        ));
        index += 1;
    }
    let stop = match turn.stop_reason() {
        ScriptedStop::Stop => "end_turn",
        ScriptedStop::Length => "max_tokens",
        ScriptedStop::ToolUse => "tool_use",
    };
    f.push((false, named("message_delta", &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": u.output}}))));
    f.push((
        false,
        named("message_stop", &json!({"type": "message_stop"})),
    ));
    f
}

fn openai(turn: &Turn, n: u64, model: &str) -> Vec<Frame> {
    let u = turn.usage();
    let id = turn
        .response_id
        .clone()
        .unwrap_or_else(|| format!("chatcmpl-mock-{n}"));
    let chunk = |delta: Value, finish: Value| {
        data(
            &json!({"id": id, "object": "chat.completion.chunk", "created": 1_796_106_531, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut f: Vec<Frame> = vec![(
        false,
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
    )];
    for d in &turn.thinking {
        f.push((true, chunk(json!({"reasoning_content": d}), Value::Null)));
    }
    for d in &turn.text {
        f.push((true, chunk(json!({"content": d}), Value::Null)));
    }
    for (k, call) in turn.tool_calls.iter().enumerate() {
        let id = tool_id("call_mock", n, k, &call.id);
        f.push((false, chunk(json!({"tool_calls": [{"index": k, "id": id, "type": "function", "function": {"name": call.name, "arguments": ""}}]}), Value::Null)));
        for piece in call.argument_chunks() {
            f.push((
                true,
                chunk(
                    json!({"tool_calls": [{"index": k, "function": {"arguments": piece}}]}),
                    Value::Null,
                ),
            ));
        }
    }
    let finish = match turn.stop_reason() {
        ScriptedStop::Stop => "stop",
        ScriptedStop::Length => "length",
        ScriptedStop::ToolUse => "tool_calls",
    };
    f.push((false, chunk(json!({}), json!(finish))));
    let output = u.output.unwrap_or(0);
    let prompt = u.input + u.cache_read;
    f.push((
        false,
        data(&json!({"id": id, "object": "chat.completion.chunk", "created": 1_796_106_531, "model": model, "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output,
                      "prompt_tokens_details": {"cached_tokens": u.cache_read}}})),
    ));
    f.push((false, b"data: [DONE]\n\n".to_vec()));
    f
}

fn responses(turn: &Turn, n: u64, model: &str) -> Vec<Frame> {
    let u = turn.usage();
    let id = turn
        .response_id
        .clone()
        .unwrap_or_else(|| format!("resp_mock_{n}"));
    let ev = |ty: &str, mut v: Value| {
        v["type"] = json!(ty);
        named(ty, &v)
    };
    let mut f: Vec<Frame> = vec![(
        false,
        ev(
            "response.created",
            json!({"response": {"id": id, "object": "response", "status": "in_progress", "model": model}}),
        ),
    )];
    let mut out_index = 0;
    if !turn.thinking.is_empty() {
        let rid = format!("rs_mock_{n}");
        f.push((false, ev("response.output_item.added", json!({"output_index": out_index, "item": {"type": "reasoning", "id": rid, "summary": []}}))));
        f.push((false, ev("response.reasoning_summary_part.added", json!({"item_id": rid, "output_index": out_index, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}))));
        for d in &turn.thinking {
            f.push((true, ev("response.reasoning_summary_text.delta", json!({"item_id": rid, "output_index": out_index, "summary_index": 0, "delta": d}))));
        }
        let full = turn.thinking.concat();
        f.push((false, ev("response.reasoning_summary_part.done", json!({"item_id": rid, "output_index": out_index, "summary_index": 0, "part": {"type": "summary_text", "text": full}}))));
        let enc = turn
            .thinking_signature
            .clone()
            .unwrap_or_else(|| format!("enc_mock_{n}"));
        f.push((false, ev("response.output_item.done", json!({"output_index": out_index, "item": {"type": "reasoning", "id": rid, "summary": [{"type": "summary_text", "text": full}], "encrypted_content": enc}}))));
        out_index += 1;
    }
    if !turn.text.is_empty() {
        let mid = format!("msg_mock_{n}");
        f.push((false, ev("response.output_item.added", json!({"output_index": out_index, "item": {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}}))));
        f.push((false, ev("response.content_part.added", json!({"item_id": mid, "output_index": out_index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}))));
        for d in &turn.text {
            f.push((true, ev("response.output_text.delta", json!({"item_id": mid, "output_index": out_index, "content_index": 0, "delta": d}))));
        }
        let full = turn.text.concat();
        f.push((false, ev("response.output_item.done", json!({"output_index": out_index, "item": {"type": "message", "id": mid, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": full, "annotations": []}]}}))));
        out_index += 1;
    }
    for (k, call) in turn.tool_calls.iter().enumerate() {
        let call_id = tool_id("call_mock", n, k, &call.id);
        let item_id = if k == 0 {
            format!("fc_mock_{n}")
        } else {
            format!("fc_mock_{n}_{k}")
        };
        f.push((false, ev("response.output_item.added", json!({"output_index": out_index, "item": {"type": "function_call", "id": item_id, "call_id": call_id, "name": call.name, "arguments": "", "status": "in_progress"}}))));
        for piece in call.argument_chunks() {
            f.push((
                true,
                ev(
                    "response.function_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": out_index, "delta": piece}),
                ),
            ));
        }
        let args = call.arguments_text();
        f.push((
            false,
            ev(
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": out_index, "arguments": args}),
            ),
        ));
        f.push((false, ev("response.output_item.done", json!({"output_index": out_index, "item": {"type": "function_call", "id": item_id, "call_id": call_id, "name": call.name, "arguments": args, "status": "completed"}}))));
        out_index += 1;
    }
    let status = if turn.stop_reason() == ScriptedStop::Length {
        "incomplete"
    } else {
        "completed"
    };
    let output = u.output.unwrap_or(0);
    let input = u.input + u.cache_read;
    f.push((
        false,
        ev("response.completed", json!({"response": {"id": id, "object": "response", "status": status, "model": model,
            "usage": {"input_tokens": input, "output_tokens": output, "total_tokens": input + output,
                      "input_tokens_details": {"cached_tokens": u.cache_read}}}})),
    ));
    f
}

fn google(turn: &Turn, n: u64) -> Vec<Frame> {
    let u = turn.usage();
    let id = turn
        .response_id
        .clone()
        .unwrap_or_else(|| format!("mock-{n}"));
    let chunk = |parts: Value| {
        data(
            &json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}], "responseId": id}),
        )
    };
    let mut f: Vec<Frame> = Vec::new();
    for (i, d) in turn.thinking.iter().enumerate() {
        let mut part = json!({"text": d, "thought": true});
        if i + 1 == turn.thinking.len()
            && let Some(s) = &turn.thinking_signature
        {
            part["thoughtSignature"] = json!(s);
        }
        f.push((true, chunk(json!([part]))));
    }
    for d in &turn.text {
        f.push((true, chunk(json!([{"text": d}]))));
    }
    for call in &turn.tool_calls {
        let mut fc = json!({"name": call.name, "args": call.arguments});
        if let Some(id) = &call.id {
            fc["id"] = json!(id);
        }
        f.push((true, chunk(json!([{"functionCall": fc}]))));
    }
    let finish = if turn.stop_reason() == ScriptedStop::Length {
        "MAX_TOKENS"
    } else {
        "STOP"
    };
    let output = u.output.unwrap_or(0);
    let prompt = u.input + u.cache_read;
    f.push((
        false,
        data(&json!({"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": finish, "index": 0}],
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output, "cachedContentTokenCount": u.cache_read},
            "responseId": id})),
    ));
    f
}
