#!/usr/bin/env python3
"""`dreb --mode acp` against `--mode rpc` (issue 16 targets):

- process start to the `initialize` response (ACP) and to the first response (`get_version`, RPC), median of RUNS;
- one prompt whose reply streams N text deltas of 16 bytes (N = 2,000 and 20,000, offline `faux` provider, no
  delay between deltas): wall time from sending the prompt to the end of the turn (ACP: the prompt's response;
  RPC: `agent_end`), stdout bytes, and the per-chunk overhead of ACP over RPC = (ACP time - RPC time) / N.
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


def scenario(n):
    return {"turns": [{"repeat": True, "text": ["0123456789abcde "] * n}], "fallback": "error"}


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
        times, total_bytes, chunks = [], 0, 0
        for i in range(STREAM_RUNS):
            t0 = time.perf_counter()
            send(proc, {"jsonrpc": "2.0", "id": 10 + i, "method": "session/prompt",
                        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}})
            nbytes, nchunks = 0, 0
            while True:
                line = proc.stdout.readline()
                nbytes += len(line)
                m = json.loads(line)
                if m.get("id") == 10 + i:
                    assert m["result"]["stopReason"] == "end_turn", m
                    break
                if m.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk":
                    nchunks += 1
            times.append((time.perf_counter() - t0) * 1000)
            total_bytes, chunks = nbytes, nchunks
        stop(proc)
        return statistics.median(times), total_bytes, chunks


def stream_rpc(n, ui):
    with tempfile.TemporaryDirectory() as home:
        extra = ("--ui", ui) if ui else ()
        proc = spawn(home, "rpc", extra, scenario=scenario(n))
        times, total_bytes = [], 0
        for i in range(STREAM_RUNS):
            t0 = time.perf_counter()
            send(proc, {"id": f"p{i}", "type": "prompt", "message": "go"})
            nbytes = 0
            while True:
                line = proc.stdout.readline()
                nbytes += len(line)
                if b'"type":"agent_end"' in line:
                    break
            times.append((time.perf_counter() - t0) * 1000)
            total_bytes = nbytes
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
    print("| deltas | mode | turn time (median) | stdout bytes | per delta | ACP overhead per delta vs RPC dashboard |")
    print("|---:|---|---:|---:|---:|---:|")
    for n in (2000, 20000):
        acp_ms, acp_bytes, chunks = stream_acp(n)
        dash_ms, dash_bytes = stream_rpc(n, "dashboard")
        rows = [("rpc `--ui dashboard`", dash_ms, dash_bytes, "")]
        if n <= 2000:
            full_ms, full_bytes = stream_rpc(n, None)
            rows.insert(0, ("rpc (default `--ui`)", full_ms, full_bytes, ""))
        overhead = (acp_ms - dash_ms) / n * 1000
        rows.append((f"acp ({chunks} chunks)", acp_ms, acp_bytes, f"{overhead:+.2f} µs"))
        for label, ms, nbytes, extra in rows:
            print(f"| {n:,} | {label} | {ms:.1f} ms | {nbytes:,} | {ms / n * 1000:.2f} µs | {extra} |")


if __name__ == "__main__":
    main()
