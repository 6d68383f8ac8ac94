#!/usr/bin/env python3
"""RPC-level benchmarks of the `dreb` binary (DESIGN.md targets):

- process start to first response (`get_version`), median over runs;
- idle resident memory (VmRSS after startup and one command);
- `get_state` round trips per second on one connection, sequential (send, wait, repeat) and pipelined;
- the client's own floor: the same sequential loop against `cat` (which echoes each request line), i.e. the
  fastest any server could answer this Python client on this machine.

- `get_state` round trips in a longer conversation (40 offline turns with ~1 KB prompts, 160 messages), where any
  per-call work proportional to the conversation shows.

Sequential figures are the median and best of ROUNDS rounds of 5,000 requests (after 500 warm-up requests), since a
shared machine moves them a lot.

Usage: python3 crates/dreb/benches/rpc_roundtrip.py [path/to/dreb]   (default: target/release/dreb)
Runs offline (`--provider faux --no-session`) in a temporary agent dir. Prints a Markdown table.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/dreb")


def spawn(agent_dir, cwd):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": agent_dir, "DREB_CODING_AGENT_DIR": agent_dir}
    return subprocess.Popen(
        [BIN, "--mode", "rpc", "--provider", "faux", "--no-session"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd,
    )


def request(proc, frame):
    proc.stdin.write((json.dumps(frame) + "\n").encode())
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


ROUNDS = int(os.environ.get("ROUNDS", "5"))


def sequential_rates(proc, n=5000):
    for i in range(500):
        request(proc, {"id": i, "type": "get_state"})
    rates = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for i in range(n):
            request(proc, {"id": i, "type": "get_state"})
        rates.append(n / (time.perf_counter() - t0))
    return rates


def long_conversation_rate(proc, turns=40, n=2000):
    text = "lorem ipsum dolor sit amet " * 40
    for i in range(turns):
        proc.stdin.write((json.dumps({"id": f"p{i}", "type": "prompt", "message": f"{i} {text}"}) + "\n").encode())
        proc.stdin.flush()
        while json.loads(proc.stdout.readline()).get("type") != "agent_end":
            pass
    count = request(proc, {"type": "get_state"})["data"]["messageCount"]
    t0 = time.perf_counter()
    for i in range(n):
        request(proc, {"id": i, "type": "get_state"})
    return count, n / (time.perf_counter() - t0)


def main():
    with tempfile.TemporaryDirectory() as agent_dir, tempfile.TemporaryDirectory() as cwd:
        starts = []
        for _ in range(20):
            t0 = time.perf_counter()
            p = spawn(agent_dir, cwd)
            resp = request(p, {"id": 1, "type": "get_version"})
            starts.append((time.perf_counter() - t0) * 1000)
            assert resp["success"], resp
            p.stdin.close()
            p.wait()

        p = spawn(agent_dir, cwd)
        request(p, {"type": "get_state"})
        time.sleep(0.3)
        with open(f"/proc/{p.pid}/status") as f:
            rss_kb = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))

        seq = sequential_rates(p)

        n2 = 20000
        payload = "".join(json.dumps({"id": i, "type": "get_state"}) + "\n" for i in range(n2)).encode()
        t0 = time.perf_counter()
        import threading
        writer = threading.Thread(target=lambda: (p.stdin.write(payload), p.stdin.flush()))
        writer.start()
        for _ in range(n2):
            line = p.stdout.readline()
            assert line
        writer.join()
        piped = n2 / (time.perf_counter() - t0)
        p.stdin.close()
        p.wait()

        p = spawn(agent_dir, cwd)
        messages, long_rate = long_conversation_rate(p)
        p.stdin.close()
        p.wait()

        echo = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        floor = sequential_rates(echo)
        echo.stdin.close()
        echo.wait()

    print("| measure | result | target |")
    print("|---|---:|---:|")
    print(f"| start → first response (`get_version`), median of 20 | {statistics.median(starts):.1f} ms | < 10 ms |")
    print(f"| idle RSS after startup | {rss_kb / 1024:.1f} MB | < 15 MB |")
    rates = lambda r: f"{statistics.median(r):,.0f} /s (best {max(r):,.0f})"
    print(f"| `get_state` round trips, sequential, median of {ROUNDS} | {rates(seq)} | > 20,000 /s |")
    print(f"| `get_state` round trips, sequential, {messages} messages in the conversation | {long_rate:,.0f} /s | |")
    print(f"| client floor: same loop against `cat`, median of {ROUNDS} | {rates(floor)} | |")
    print(f"| `get_state` responses, pipelined (20,000 requests) | {piped:,.0f} /s | |")


if __name__ == "__main__":
    main()
