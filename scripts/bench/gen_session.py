#!/usr/bin/env python3
"""Writes a v3 session file of about SIZE_MB megabytes: realistic coding turns (user prompt, assistant with
thinking and a tool call, a tool result with a 16 KB output, a final answer), the shape of
`crates/dreb-session/benches/open_session.rs`. Generated on the fly, never committed.

Usage: gen_session.py OUT.jsonl [SIZE_MB=100] [CWD=/bench/project]
"""
import json
import sys


def main():
    out = sys.argv[1]
    size = int(float(sys.argv[2] if len(sys.argv) > 2 else 100) * 1024 * 1024)
    cwd = sys.argv[3] if len(sys.argv) > 3 else "/bench/project"
    dumps = lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    tool_output = "".join(f"line {i}: fn example_{i}() {{ let x = {i}; }}\n" for i in range(400))
    thinking = "I should read the file first, then edit it carefully. " * 20
    answer = "Done. The module now uses a builder pattern; here is why it is better. " * 10
    written = 0
    n = 0
    parent = None

    def entry(f, obj):
        nonlocal written, n, parent
        eid = f"{n:08x}"
        n += 1
        line = dumps({"type": obj.pop("type"), "id": eid, "parentId": parent,
                      "timestamp": "2026-12-01T06:29:04.331Z", **obj}) + "\n"
        parent = eid
        f.write(line)
        written += len(line.encode())

    with open(out, "w", encoding="utf-8") as f:
        header = dumps({"type": "session", "version": 3, "id": "0b0c0a0e-0000-4000-8000-000000000001",
                        "timestamp": "2026-12-01T06:29:04.331Z", "cwd": cwd}) + "\n"
        f.write(header)
        written += len(header)
        entry(f, {"type": "model_change", "provider": "anthropic", "modelId": "claude-opus-4-6"})
        entry(f, {"type": "thinking_level_change", "thinkingLevel": "high"})
        turn = 0
        while written < size:
            ts = 1_796_106_531_171 + turn * 1000
            usage = {"input": 12000, "output": 350, "cacheRead": 11000, "cacheWrite": 900, "totalTokens": 24250,
                     "cost": {"input": 0.06, "output": 0.02625, "cacheRead": 0.0055, "cacheWrite": 0.005625,
                              "total": 0.097375}}
            entry(f, {"type": "message", "message": {"role": "user", "content": [
                {"type": "text", "text": f"Please refactor module {turn} and explain the change in detail."}],
                "timestamp": ts}})
            entry(f, {"type": "message", "message": {"role": "assistant", "content": [
                {"type": "thinking", "thinking": thinking, "thinkingSignature": "sig"},
                {"type": "toolCall", "id": f"toolu_{turn}", "name": "read",
                 "arguments": {"path": f"src/module_{turn}.rs"}}],
                "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-6", "usage": usage,
                "stopReason": "toolUse", "timestamp": ts + 10, "responseId": f"msg_{turn}"}})
            entry(f, {"type": "message", "message": {"role": "toolResult", "toolCallId": f"toolu_{turn}",
                "toolName": "read", "content": [{"type": "text", "text": tool_output}], "isError": False,
                "timestamp": ts + 20}})
            entry(f, {"type": "message", "message": {"role": "assistant", "content": [
                {"type": "text", "text": answer}],
                "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-6", "usage": usage,
                "stopReason": "stop", "timestamp": ts + 30, "responseId": f"msg_{turn}b"}})
            turn += 1
    print(f"{out}: {written / 1048576:.1f} MB, {n} entries", file=sys.stderr)


if __name__ == "__main__":
    main()
