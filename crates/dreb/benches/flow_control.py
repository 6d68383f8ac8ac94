#!/usr/bin/env python3
"""Output flow control, measured from outside: one prompt whose reply is N unpaced one-character deltas (the offline
`faux` provider playing a scenario file), read by a host that keeps up, drains at a fixed rate, pauses then drains,
or has stdout go to a regular file.

    python3 crates/dreb/benches/flow_control.py target/release/dreb [--deltas 20000] [--modes fast,rate,pause,file]
        [--rate-mb 10] [--pause 30] [--ui default|dashboard]

Prints one row per mode: wall time, CPU (user+sys of the server process), bytes and frames on stdout, the number of
`message_update` frames that carried the deltas (fewer than N when merged), peak RSS (VmHWM), and whether the reply
arrived complete and in order with `agent_end` last. Any binary that speaks the protocol and plays `faux` scenarios
from DREB_FAUX_SCENARIO can be passed as the command.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time


def peak_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Sampler(threading.Thread):
    """Samples the server's peak RSS until stopped (the kernel's high-water mark, read while the process lives)."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, peak_rss_kib(self.pid))
            time.sleep(0.02)


def check(data, deltas):
    """Parses stdout; returns (frames, updates, complete)."""
    lines = data.split(b"\n")
    assert lines[-1] == b"", "stdout ends on a whole line"
    text, updates, frames, last = [], 0, 0, None
    for line in lines[:-1]:
        frame = json.loads(line)
        frames += 1
        last = frame.get("type")
        ev = frame.get("assistantMessageEvent") or {}
        if last == "message_update" and ev.get("type") == "text_delta":
            text.append(ev["delta"])
            updates += 1
    return frames, updates, "".join(text) == "x" * deltas and last == "agent_end"


def run(cmd, deltas, mode, args, workdir):
    scenario = os.path.join(workdir, f"scenario-{deltas}.json")
    with open(scenario, "w") as f:
        json.dump({"turns": [{"repeat": True, "text": ["x"] * deltas}], "fallback": "error"}, f)
    # No auto-compaction after the long reply: the run ends with `agent_end`.
    os.makedirs(os.path.join(workdir, "agent"))
    with open(os.path.join(workdir, "agent", "settings.json"), "w") as f:
        json.dump({"compaction": {"enabled": False}}, f)
    env = dict(os.environ, DREB_FAUX_SCENARIO=scenario, DREB_CODING_AGENT_DIR=os.path.join(workdir, "agent"),
               HOME=workdir)
    argv = shlex.split(cmd) + ["--mode", "rpc", "--provider", "faux", "--no-session"]
    if args.ui != "default":
        argv += ["--ui", args.ui]
    out_path = os.path.join(workdir, "stdout.jsonl")
    stdout = open(out_path, "wb") if mode == "file" else subprocess.PIPE
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=stdout, env=env, cwd=workdir)
    sampler = Sampler(proc.pid)
    sampler.start()
    proc.stdin.write(b'{"id":"p","type":"prompt","message":"go"}\n')
    proc.stdin.flush()
    chunks = []
    if mode == "file":
        while True:
            with open(out_path, "rb") as f:
                f.seek(max(0, os.path.getsize(out_path) - (1 << 22)))
                end = f.read()
            last = end.rfind(b"\n", 0, len(end) - 1)
            if end.endswith(b"\n") and last >= 0 and end[last + 1:].startswith(b'{"type":"agent_end"'):
                break
            time.sleep(0.02)
    else:
        if mode == "pause":
            time.sleep(args.pause)
        rate = args.rate_mb * 1e6 if mode == "rate" else None
        fd, got, began = proc.stdout.fileno(), 0, time.monotonic()
        head = b""  # the first bytes of the line being received
        while True:
            if rate is not None:
                ahead = got / rate - (time.monotonic() - began)
                if ahead > 0:
                    time.sleep(ahead)
            chunk = os.read(fd, 1 << 16 if rate is not None else 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            done, pos = False, 0
            while (nl := chunk.find(b"\n", pos)) >= 0:
                line_head = (head + chunk[pos:nl])[:32] if len(head) < 32 else head
                done |= line_head.startswith(b'{"type":"agent_end"')
                head, pos = b"", nl + 1
            head = (head + chunk[pos:pos + 32])[:32]
            if done:
                break
    wall = time.monotonic() - start
    sampler.stop.set()
    sampler.join()
    peak = max(sampler.peak, peak_rss_kib(proc.pid))
    proc.stdin.close()
    if mode != "file":
        chunks.append(proc.stdout.read())
    _, status, usage = os.wait4(proc.pid, 0)
    if mode == "file":
        stdout.close()
        with open(out_path, "rb") as f:
            data = f.read()
    else:
        data = b"".join(chunks)
    frames, updates, complete = check(data, deltas)
    return {
        "mode": mode if mode != "rate" else f"rate {args.rate_mb:g} MB/s",
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "bytes": len(data),
        "frames": frames,
        "updates": updates,
        "peak_rss_mb": peak / 1024,
        "complete": complete,
        "exit": os.waitstatus_to_exitcode(status),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", help="the server command, e.g. target/release/dreb")
    p.add_argument("--deltas", type=int, default=20_000)
    p.add_argument("--modes", default="fast,rate,pause,file")
    p.add_argument("--rate-mb", type=float, default=10.0)
    p.add_argument("--pause", type=float, default=30.0)
    p.add_argument("--ui", default="default")
    args = p.parse_args()
    print(f"deltas={args.deltas} ui={args.ui} command={args.command}")
    print("| reader | wall s | CPU s | stdout bytes | frames | delta frames | peak RSS MB | complete | exit |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    ok = True
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory() as workdir:
            r = run(args.command, args.deltas, mode, args, workdir)
        ok &= r["complete"] and r["exit"] == 0
        print(f"| {r['mode']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['bytes']:,} | {r['frames']:,} | "
              f"{r['updates']:,} | {r['peak_rss_mb']:.1f} | {'yes' if r['complete'] else 'NO'} | {r['exit']} |",
              flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
