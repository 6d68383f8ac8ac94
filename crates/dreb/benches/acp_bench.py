#!/usr/bin/env python3
"""`dreb --mode acp` against `--mode rpc` (issue 16 targets):

- process start to the `initialize` response (ACP) and to the first response (`get_version`, RPC), median of RUNS;
- one prompt whose reply streams N text deltas of 16 bytes (N = 2,000 and 20,000, offline `faux` provider, no
  delay between deltas): wall time from sending the prompt to the last streamed byte of the reply (ACP: the
  `agent_message_chunk`s, RPC: the `text_delta`s, counted by text length since RPC may merge deltas for a slow
  reader), stdout bytes up to then, and the per-chunk overhead of ACP over RPC = (ACP time - RPC time) / N. The
  ACP prompt's response comes after the runtime settled (its after-run work included), so that time is shown too.
  RPC runs twice: with the default `--ui` (every `message_update` carries two cumulative copies of the reply) and
  with `--ui dashboard` (the lean frames the ACP front end reads internally), so the ACP translation itself is the
  difference to the second.

Usage: python3 crates/dreb/benches/acp_bench.py [path/to/dreb]   (default: target/release/dreb)
Runs offline in temporary directories; prints Markdown tables.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/dreb")
RUNS = int(os.environ.get("RUNS", "20"))
STREAM_RUNS = int(os.environ.get("STREAM_RUNS", "5"))


def env_for(home, scenario=None):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "DREB_CODING_AGENT_DIR": os.path.join(home, "agent")}
    if scenario is not None:
        path = os.path.join(home, "scenario.json")
        with open(path, "w") as f:
            json.dump(scenario, f)
        env["DREB_FAUX_SCENARIO"] = path
    return env


def spawn(home, mode, extra=(), scenario=None):
    return subprocess.Popen(
        [BIN, "--mode", mode, "--provider", "faux", "--no-session", *extra],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env_for(home, scenario), cwd=home,
    )


def send(proc, obj):
    proc.stdin.write((json.dumps(obj) + "\n").encode())
    proc.stdin.flush()


def stop(proc):
    proc.stdin.close()
    proc.wait()


def startup(mode):
    times = []
    for _ in range(RUNS):
        with tempfile.TemporaryDirectory() as home:
            t0 = time.perf_counter()
            proc = spawn(home, mode)
            if mode == "acp":
                send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
            else:
                send(proc, {"id": 1, "type": "get_version"})
            json.loads(proc.stdout.readline())
            times.append((time.perf_counter() - t0) * 1000)
            stop(proc)
    return statistics.median(times), min(times)


DELTA = "0123456789abcde "


def scenario(n):
    return {"turns": [{"repeat": True, "text": [DELTA] * n}], "fallback": "error"}


def stream_acp(n):
    with tempfile.TemporaryDirectory() as home:
        proc = spawn(home, "acp", scenario=scenario(n))
        send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        proc.stdout.readline()
        send(proc, {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": home, "mcpServers": []}})
        sid = None
        while sid is None:
            m = json.loads(proc.stdout.readline())
            if m.get("id") == 2:
                sid = m["result"]["sessionId"]
        streamed, answered, total_bytes, chunks = [], [], 0, 0
        for i in range(STREAM_RUNS):
            t0 = time.perf_counter()
            send(proc, {"jsonrpc": "2.0", "id": 10 + i, "method": "session/prompt",
                        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}})
            nbytes, nchunks, text = 0, 0, 0
            while True:
                line = proc.stdout.readline()
                m = json.loads(line)
                if m.get("id") == 10 + i:
                    assert m["result"]["stopReason"] == "end_turn", m
                    answered.append((time.perf_counter() - t0) * 1000)
                    break
                nbytes += len(line)
                update = m.get("params", {}).get("update", {})
                if update.get("sessionUpdate") == "agent_message_chunk":
                    nchunks += 1
                    text += len(update["content"]["text"])
                    if text == len(DELTA) * n:
                        streamed.append((time.perf_counter() - t0) * 1000)
            total_bytes, chunks = nbytes, nchunks
        stop(proc)
        return statistics.median(streamed), statistics.median(answered), total_bytes, chunks


def stream_rpc(n, ui):
    with tempfile.TemporaryDirectory() as home:
        extra = ("--ui", ui) if ui else ()
        proc = spawn(home, "rpc", extra, scenario=scenario(n))
        times, total_bytes = [], 0
        for i in range(STREAM_RUNS):
            t0 = time.perf_counter()
            send(proc, {"id": f"p{i}", "type": "prompt", "message": "go"})
            nbytes, text, done = 0, 0, False
            while True:
                line = proc.stdout.readline()
                if b'"type":"agent_end"' in line:
                    break
                if done:
                    continue
                nbytes += len(line)
                if b'"text_delta"' in line:
                    text += len(json.loads(line)["assistantMessageEvent"]["delta"])
                    if text == len(DELTA) * n:
                        times.append((time.perf_counter() - t0) * 1000)
                        total_bytes, done = nbytes, True
        stop(proc)
        return statistics.median(times), total_bytes


def main():
    print(f"binary: {BIN}\n")
    print("| measure | median | best |")
    print("|---|---:|---:|")
    for mode, label in (("acp", "start → `initialize` response (ACP)"), ("rpc", "start → `get_version` response (RPC)")):
        med, best = startup(mode)
        print(f"| {label}, {RUNS} runs | {med:.1f} ms | {best:.1f} ms |")
    print()
    print("| deltas | mode | prompt → last delta (median) | stdout bytes | per delta | ACP overhead per delta vs RPC dashboard |")
    print("|---:|---|---:|---:|---:|---:|")
    for n in (2000, 20000):
        acp_ms, acp_answer_ms, acp_bytes, chunks = stream_acp(n)
        dash_ms, dash_bytes = stream_rpc(n, "dashboard")
        rows = [("rpc `--ui dashboard`", dash_ms, dash_bytes, "")]
        if n <= 2000:
            full_ms, full_bytes = stream_rpc(n, None)
            rows.insert(0, ("rpc (default `--ui`)", full_ms, full_bytes, ""))
        overhead = (acp_ms - dash_ms) / n * 1000
        rows.append((f"acp ({chunks} chunks; response at {acp_answer_ms:.1f} ms)", acp_ms, acp_bytes, f"{overhead:+.2f} µs"))
        for label, ms, nbytes, extra in rows:
            print(f"| {n:,} | {label} | {ms:.1f} ms | {nbytes:,} | {ms / n * 1000:.2f} µs | {extra} |")


if __name__ == "__main__":
    main()
