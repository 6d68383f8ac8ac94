#!/usr/bin/env python3
"""Background subagent latency through the real binaries: the parent `dreb` calls the subagent tool (scripted by
`dreb-mock-llm`), a child `dreb --mode rpc --ui agent` process starts, answers one LLM call and exits, and its result
resumes the parent.

Measured per launch (medians over runs), from the parent's `tool_execution_end` of the subagent call:
- to the child's first relayed event (`background_agent_event` with the child's `agent_start`): process start,
  startup, prompt;
- to `background_agent_end`: the whole child lifetime incl. its LLM call, exit and the result delivery.

Usage: python3 crates/dreb/benches/subagent_spawn.py [target/release]   (needs dreb and dreb-mock-llm built there)
Loopback only; a temporary HOME and agent dir.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGET = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release")
RUNS = 20

SCENARIO = {"turns": [{
    "when": {"lastUserContains": "Delegate", "afterToolResult": False},
    "repeat": True,
    "toolCalls": [{"name": "subagent", "arguments": {"task": "Reply with just: done"}}],
}]}

MODELS = """{"providers": {"mock": {"baseUrl": "BASE/v1", "api": "openai-completions", "apiKey": "k",
  "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
  "models": [{"id": "mock-model", "name": "Mock", "reasoning": false, "input": ["text"], "contextWindow": 200000,
              "maxTokens": 32000, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}"""


def main():
    with tempfile.TemporaryDirectory() as home:
        agent_dir = os.path.join(home, ".dreb", "agent")
        cwd = os.path.join(home, "project")
        os.makedirs(agent_dir)
        os.makedirs(cwd)
        scenario = os.path.join(home, "scenario.json")
        with open(scenario, "w") as f:
            json.dump(SCENARIO, f)
        mock = subprocess.Popen([os.path.join(TARGET, "dreb-mock-llm"), "--scenario", scenario],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        base = mock.stdout.readline().decode().strip()
        with open(os.path.join(agent_dir, "models.json"), "w") as f:
            f.write(MODELS.replace("BASE", base))
        env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "DREB_CODING_AGENT_DIR": agent_dir}
        dreb = subprocess.Popen(
            [os.path.join(TARGET, "dreb"), "--mode", "rpc", "--provider", "mock", "--model", "mock-model"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)

        def frames():
            while True:
                line = dreb.stdout.readline()
                if not line:
                    raise SystemExit("dreb exited")
                yield json.loads(line), time.perf_counter()

        stream = frames()
        to_child, to_end = [], []
        for i in range(RUNS):
            dreb.stdin.write((json.dumps({"id": i, "type": "prompt", "message": f"Delegate {i}"}) + "\n").encode())
            dreb.stdin.flush()
            launched = child_started = ended = None
            resumed = False
            for f, t in stream:
                if f.get("type") == "tool_execution_end" and f.get("toolName") == "subagent":
                    launched = t
                elif (f.get("type") == "background_agent_event" and f["event"].get("type") == "agent_start"
                      and child_started is None):
                    child_started = t
                elif f.get("type") == "background_agent_end":
                    ended = t
                elif f.get("type") == "agent_end" and any(
                        "<background-agent-complete>" in json.dumps(m) for m in f.get("messages", [])):
                    resumed = True
                if ended and resumed:
                    break
            to_child.append((child_started - launched) * 1000)
            to_end.append((ended - launched) * 1000)
        dreb.stdin.close()
        dreb.wait()
        mock.stdin.close()
        mock.wait()
    print("| measure | median (ms) | min (ms) | max (ms) |")
    print("|---|---:|---:|---:|")
    for name, xs in [("launch → child's agent_start relayed", to_child), ("launch → background_agent_end", to_end)]:
        print(f"| {name} | {statistics.median(xs):.1f} | {min(xs):.1f} | {max(xs):.1f} |")


if __name__ == "__main__":
    main()
