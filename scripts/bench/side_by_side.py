#!/usr/bin/env python3
"""Side-by-side benchmarks of dreb (this repository) and another implementation of the same RPC protocol.

One command runs every scenario of issue 14 against both implementations, alternating the order of each pair of
runs, and prints per measure each side's median and range and the ratio per pair (other / ours: above 1 means we
are faster or smaller), with the machine load. Inputs are generated in a temporary directory on every run (never
committed); the LLM is `dreb-mock-llm` on 127.0.0.1 (OpenAI wire), so nothing leaves the machine.

  python3 scripts/bench/side_by_side.py [--ours CMD] [--other CMD] [--runs N] [--only a,b,...] [--quick]

  --ours   command that starts our agent (default: target-release/release/dreb)
  --other  command that starts the other implementation, e.g. "node /tmp/ref/packages/coding-agent/dist/cli.js"
           (omitted: ours alone)
  --mock   the dreb-mock-llm binary (default: next to --ours)
  --runs   pairs per measure (default 5; the heavy scenarios use fewer, see RUNS_HEAVY)
  --only   a comma-separated subset of: startup, sequential, pipelined, stream, listing, session, tools, idle
  --quick  smaller inputs (for checking the suite itself)
  --floor  also run the sequential and pipelined loops against `cat` (each line echoed as its own response): the
           fastest any agent could answer this client here
  --client c: run the sequential and pipelined loops in C (rpc_client.c, built with `cc` into the temporary
           directory) on the same agents' pipes instead of in Python, whose own cost per round trip is close to an
           agent's (see --floor); python (the default) as before

Each implementation is started as `CMD --mode rpc --provider mock --model mock-model [--session-dir D] ...` with
HOME and DREB_CODING_AGENT_DIR set to a fresh agent directory holding a models.json that points at the mock.
CPU is the agent's user+system time from /proc (plus waited-for children, for tools that spawn `rg`); RSS is
VmRSS, peak RSS VmHWM, and the idle-agents memory is the sum of Pss over the agents (shared pages split fairly).
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_session  # noqa: E402

RUNS_HEAVY = 3
CLK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------------------------
# process helpers


def proc_cpu_ms(pid, children=False):
    """User + system CPU of `pid` in ms (with `children`, plus its waited-for children)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks * 1000.0 / CLK


def proc_status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def proc_pss_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return proc_status_kb(pid, "VmRSS")


class Agent:
    """One agent process on pipes, read line by line."""

    def __init__(self, impl, env, args=(), cwd=None):
        argv = impl.cmd if impl.echo else impl.cmd + ["--mode", "rpc", "--provider", "mock", "--model", "mock-model", *args]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env.vars, cwd=cwd or env.cwd, bufsize=0,
        )
        self.out = self.proc.stdout
        self.buf = b""
        self.pos = 0

    @property
    def pid(self):
        return self.proc.pid

    def send(self, frame):
        self.proc.stdin.write((json.dumps(frame, separators=(",", ":")) + "\n").encode())
        self.proc.stdin.flush()

    def line(self):
        # The unread part of the last read starts at `pos`: a line is found and cut from there, without copying the
        # rest of the buffer for every line (which made this client quadratic in the lines per read).
        buf, pos = self.buf, self.pos
        i = buf.find(b"\n", pos)
        if i >= 0:
            self.pos = i + 1
            return buf[pos:i]
        # A long line arrives in many reads: collect the parts, search only each new one.
        parts = [buf[pos:]]
        while True:
            chunk = os.read(self.out.fileno(), 1 << 20)
            if not chunk:
                raise EOFError("agent closed stdout")
            i = chunk.find(b"\n")
            if i >= 0:
                parts.append(chunk[:i])
                self.buf, self.pos = chunk, i + 1
                return b"".join(parts)
            parts.append(chunk)

    def until(self, pred):
        """Frames until one satisfies `pred` (returned, parsed) ."""
        while True:
            raw = self.line()
            if pred(raw):
                return raw

    def request(self, frame):
        self.send(frame)
        want = json.dumps(frame.get("id"), separators=(",", ":"))
        raw = self.until(lambda l: b'"type":"response"' in l[:300] and (frame.get("id") is None or b'"id":' + want.encode() + b',' in l[:300]))
        return raw

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Impl:
    def __init__(self, name, cmd, echo=False):
        self.name = name
        self.cmd = shlex.split(cmd)
        # `cat` as the agent (--floor): every line comes back as sent, so the client's own cost is what remains.
        self.echo = echo

    def get_state(self, i):
        """The request the round-trip scenarios send; for the echo, a line its `request` takes as the response."""
        return {"id": i, "type": "response" if self.echo else "get_state"}


class Env:
    """A fresh agent dir and project dir, with models.json pointing at the mock."""

    def __init__(self, root, base_url, name="env"):
        self.home = os.path.join(root, name)
        self.agent_dir = os.path.join(self.home, ".dreb", "agent")
        self.cwd = os.path.join(self.home, "project")
        os.makedirs(self.agent_dir, exist_ok=True)
        os.makedirs(self.cwd, exist_ok=True)
        models = {"providers": {"mock": {
            "baseUrl": base_url + "/v1", "api": "openai-completions", "apiKey": "mock-key",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "mock-model", "name": "Mock", "reasoning": False, "input": ["text"],
                        "contextWindow": 10_000_000, "maxTokens": 32000,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}
        with open(os.path.join(self.agent_dir, "models.json"), "w") as f:
            json.dump(models, f)
        with open(os.path.join(self.agent_dir, "settings.json"), "w") as f:
            json.dump({"compaction": {"enabled": False}, "retry": {"enabled": False}}, f)
        self.vars = {"PATH": os.environ.get("PATH", ""), "HOME": self.home, "DREB_CODING_AGENT_DIR": self.agent_dir,
                     "NO_COLOR": "1"}
        # Where our binary finds its Node extension host (for a side given `-e ext.ts`): passed through when set.
        if "DREB_EXTENSION_HOST" in os.environ:
            self.vars["DREB_EXTENSION_HOST"] = os.environ["DREB_EXTENSION_HOST"]


# ---------------------------------------------------------------------------------------------------------------
# scenarios: each returns {measure name: value} for one run of one implementation


def m_startup(impl, env, opts):
    t0 = time.perf_counter()
    a = Agent(impl, env, ["--no-session"])
    a.request({"id": 1, "type": "get_state"})
    first = (time.perf_counter() - t0) * 1000
    time.sleep(0.3)
    rss = proc_status_kb(a.pid, "VmRSS") / 1024
    a.close()
    return {"start → first response (ms)": first, "idle RSS (MB)": rss}


def c_client(a, impl, opts, mode, n):
    """Run the C loop (rpc_client.c) on the agent's pipes; its rate."""
    assert a.pos == len(a.buf), "nothing left unread before the C client takes over"
    fds = (a.proc.stdin.fileno(), a.out.fileno())
    kind = "response" if impl.echo else "get_state"
    out = subprocess.run([opts.c_client, mode, str(fds[0]), str(fds[1]), str(n), kind], pass_fds=fds,
                         capture_output=True, text=True, check=True, timeout=120)
    return float(out.stdout)


def m_sequential(impl, env, opts):
    a = Agent(impl, env, ["--no-session"])
    for i in range(200):
        a.request(impl.get_state(i))
    n = opts.seq_n
    if opts.c_client:
        rate = c_client(a, impl, opts, "sequential", n)
        a.close()
        return {f"get_state sequential, {n}, C client (/s)": rate}
    t0 = time.perf_counter()
    for i in range(n):
        a.request(impl.get_state(i))
    rate = n / (time.perf_counter() - t0)
    a.close()
    return {f"get_state sequential, {n} (/s)": rate}


def m_pipelined(impl, env, opts):
    a = Agent(impl, env, ["--no-session"])
    a.request(impl.get_state("warm"))
    n = opts.pipe_n
    if opts.c_client:
        rate = c_client(a, impl, opts, "pipelined", n)
        a.close()
        return {f"get_state pipelined, {n} on one connection, C client (/s)": rate}
    payload = b"".join((json.dumps(impl.get_state(i), separators=(",", ":")) + "\n").encode() for i in range(n))
    t0 = time.perf_counter()
    writer = threading.Thread(target=lambda: (a.proc.stdin.write(payload), a.proc.stdin.flush()))
    writer.start()
    got = 0
    while got < n:
        if b'"type":"response"' in a.line():
            got += 1
    rate = n / (time.perf_counter() - t0)
    writer.join()
    a.close()
    return {f"get_state pipelined, {n} on one connection (/s)": rate}


def m_stream(impl, env, opts):
    out = {}
    for deltas in opts.stream_sizes:
        for ui in (None, "dashboard"):
            args = ["--no-session"] + (["--ui", ui] if ui else [])
            a = Agent(impl, env, args)
            a.request({"id": "s", "type": "get_state"})
            c0 = proc_cpu_ms(a.pid)
            t0 = time.perf_counter()
            a.send({"id": "p", "type": "prompt", "message": f"stream-{deltas}-"})
            label = f"{deltas} deltas, {'--ui dashboard' if ui else 'default UI'}"
            try:
                a.until(lambda l: l.startswith(b'{"type":"agent_end"'))
            except EOFError:
                # The reference exits (code 1) once its stdout queue passes 16 MiB.
                print(f"<!-- {impl.name}: exited during stream {label} (code {a.proc.wait()}) -->", file=sys.stderr)
                continue
            wall = (time.perf_counter() - t0) * 1000
            cpu = proc_cpu_ms(a.pid) - c0
            a.close()
            out[f"stream {label}: agent CPU (ms)"] = cpu
            out[f"stream {label}: wall (ms)"] = wall
    return out


def m_listing(impl, env, opts):
    out = {}
    for n, d in opts.listing_dirs:
        a = Agent(impl, env, ["--session-dir", d])
        a.request({"id": "s", "type": "get_state"})
        c0 = proc_cpu_ms(a.pid)
        t0 = time.perf_counter()
        raw = a.request({"id": "l", "type": "list_sessions"})
        wall = (time.perf_counter() - t0) * 1000
        cpu = proc_cpu_ms(a.pid) - c0
        count = len(json.loads(raw)["data"]["sessions"])
        a.close()
        assert count >= n, f"{impl.name} listed {count} of {n} sessions"
        out[f"list_sessions, {n} files: wall (ms)"] = wall
        out[f"list_sessions, {n} files: CPU (ms)"] = cpu
    return out


def m_session(impl, env, opts):
    src = opts.big_session
    d = tempfile.mkdtemp(dir=opts.root)
    path = os.path.join(d, os.path.basename(src))
    shutil.copyfile(src, path)
    size_mb = os.path.getsize(path) / 1048576
    a = Agent(impl, env, ["--session-dir", d])
    a.request({"id": "s", "type": "get_state"})
    c0 = proc_cpu_ms(a.pid)
    t0 = time.perf_counter()
    raw = a.request({"id": "sw", "type": "switch_session", "sessionPath": path})
    assert b'"success":true' in raw, raw[:300]
    sw_wall = (time.perf_counter() - t0) * 1000
    sw_cpu = proc_cpu_ms(a.pid) - c0
    time.sleep(0.2)
    rss = proc_status_kb(a.pid, "VmRSS") / 1024
    c0 = proc_cpu_ms(a.pid)
    t0 = time.perf_counter()
    raw = a.request({"id": "gm", "type": "get_messages"})
    gm_wall = (time.perf_counter() - t0) * 1000
    gm_cpu = proc_cpu_ms(a.pid) - c0
    gm_bytes = len(raw)
    hwm = proc_status_kb(a.pid, "VmHWM") / 1024
    a.close()
    shutil.rmtree(d, ignore_errors=True)
    return {
        f"switch_session to a {size_mb:.0f} MB session: wall (ms)": sw_wall,
        f"switch_session to a {size_mb:.0f} MB session: CPU (ms)": sw_cpu,
        "RSS after opening it (MB)": rss,
        "RSS after opening it ÷ file size": rss / size_mb,
        f"get_messages on it: wall (ms) [{gm_bytes / 1048576:.0f} MB answer]": gm_wall,
        "get_messages on it: CPU (ms)": gm_cpu,
        "peak RSS after get_messages (MB)": hwm,
    }


def m_tools(impl, env, opts):
    a = Agent(impl, env, ["--no-session"], cwd=opts.tree)
    a.request({"id": "s", "type": "get_state"})
    # One answered prompt first, so that what a first prompt waits for (extensions, MCP servers, a lazy start) is
    # not timed as part of the turn.
    a.send({"id": "w", "type": "prompt", "message": "warmup"})
    a.until(lambda l: l.startswith(b'{"type":"agent_end"'))
    c0 = proc_cpu_ms(a.pid, children=True)
    t0 = time.perf_counter()
    a.send({"id": "p", "type": "prompt", "message": "toolturn"})
    ends = 0
    failed = []
    while True:
        raw = a.line()
        if raw.startswith(b'{"type":"tool_execution_end"'):
            ends += 1
            end = json.loads(raw)
            if end.get("isError"):
                failed.append(json.dumps(end.get("result"))[:200])
        if raw.startswith(b'{"type":"agent_end"'):
            break
    wall = (time.perf_counter() - t0) * 1000
    cpu = proc_cpu_ms(a.pid, children=True) - c0
    a.close()
    assert ends == len(TOOL_CALLS), f"{impl.name}: {ends} tool calls ended"
    # A tool that failed at once (the reference's grep without `rg` on PATH) would time the failure, not a search.
    assert not failed, f"{impl.name}: {len(failed)} tool calls failed, e.g. {failed[0]}"
    return {f"tool-heavy turn ({len(TOOL_CALLS)} grep calls, {opts.tree_files} files): wall (ms)": wall,
            "tool-heavy turn: CPU incl. children (ms)": cpu}


def m_idle(impl, env, opts):
    n = opts.idle_n
    t0 = time.perf_counter()
    agents = [Agent(impl, env, ["--no-session"]) for _ in range(n)]
    for a in agents:
        a.send({"id": 1, "type": "get_state"})
    for a in agents:
        a.until(lambda l: b'"type":"response"' in l)
    all_up = (time.perf_counter() - t0) * 1000
    time.sleep(0.5)
    pss = sum(proc_pss_kb(a.pid) for a in agents) / 1024
    for a in agents:
        a.close()
    return {f"{n} idle agents: all answered (ms)": all_up, f"{n} idle agents: memory, sum of PSS (MB)": pss,
            "memory per idle agent (MB)": pss / n}


SCENARIOS = {
    "startup": (m_startup, None),
    "sequential": (m_sequential, None),
    "pipelined": (m_pipelined, None),
    "stream": (m_stream, RUNS_HEAVY),
    "listing": (m_listing, RUNS_HEAVY),
    "session": (m_session, RUNS_HEAVY),
    "tools": (m_tools, RUNS_HEAVY),
    "idle": (m_idle, RUNS_HEAVY),
}

# Lower is better for every measure except rates (/s).
def higher_is_better(name):
    return "(/s)" in name


TOOL_CALLS = [
    {"name": "grep", "arguments": {"pattern": "fn [a-z_]+\\(", "limit": 100}},
    {"name": "grep", "arguments": {"pattern": "rare_marker_[0-9]+", "limit": 100}},
    {"name": "grep", "arguments": {"pattern": "TODO", "glob": "*.rs", "limit": 100}},
    {"name": "grep", "arguments": {"pattern": "use std::", "limit": 100}},
]


def mock_scenario(opts):
    turns = []
    for n in opts.stream_sizes:
        turns.append({"when": {"lastUserContains": f"stream-{n}-"}, "repeat": True,
                      "text": ["0123456789abcde "] * n})
    turns.append({"when": {"lastUserContains": "warmup"}, "repeat": True, "text": ["Ready."]})
    turns.append({"when": {"lastUserContains": "toolturn", "afterToolResult": False}, "repeat": True,
                  "toolCalls": TOOL_CALLS})
    turns.append({"when": {"afterToolResult": True}, "repeat": True, "text": ["Done."]})
    return {"turns": turns, "fallback": "reference"}


# ---------------------------------------------------------------------------------------------------------------
# generated inputs


def gen_tree(root, files):
    """A source tree of `files` files in 100 packages (a .git marker so .gitignore applies)."""
    os.makedirs(os.path.join(root, ".git"), exist_ok=True)
    per_pkg = max(1, files // 100)
    body = "".join(f"use std::fmt;\nfn handler_{i}(x: u32) -> u32 {{ x + {i} }} // TODO check\n" for i in range(20))
    made = 0
    for p in range(100):
        pkg = os.path.join(root, f"pkg{p:03d}", "src")
        os.makedirs(pkg, exist_ok=True)
        for i in range(per_pkg):
            with open(os.path.join(pkg, f"mod_{i:04d}.rs"), "w") as f:
                f.write(body)
                if made % 997 == 0:
                    f.write(f"// rare_marker_{made}\n")
            made += 1
    return made


def gen_listing(root, n, cwd):
    """`n` small sessions of `cwd` (a few messages each, a name on every tenth)."""
    d = os.path.join(root, f"sessions-{n}")
    os.makedirs(d, exist_ok=True)
    for i in range(n):
        sid = f"00000000-0000-4000-8000-{i:012d}"
        ts = f"2026-12-01T06:{(i // 60) % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z"
        lines = [{"type": "session", "version": 3, "id": sid, "timestamp": ts, "cwd": cwd}]
        parent = None
        for k, (role, text) in enumerate([("user", f"Task {i}: refactor the parser"),
                                          ("assistant", "Sure, here is the plan. " * 20),
                                          ("user", "Thanks, go on."), ("assistant", "Done. " * 40)]):
            eid = f"{i:04x}{k:04x}"
            msg = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1796106531171 + k}
            if role == "assistant":
                msg.update({"api": "openai-completions", "provider": "mock", "model": "mock-model",
                            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                                               "total": 0}},
                            "stopReason": "stop"})
            lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": msg})
            parent = eid
        if i % 10 == 0:
            lines.append({"type": "session_info", "id": f"{i:04x}ffff", "parentId": parent, "timestamp": ts,
                          "name": f"session {i}"})
        name = ts.replace(":", "-").replace(".", "-") + f"_{sid}.jsonl"
        with open(os.path.join(d, name), "w") as f:
            f.write("".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines))
    return d


# ---------------------------------------------------------------------------------------------------------------


def summarise(name, ours, other):
    def fmt(v):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}" if abs(v) < 10 else f"{v:,.1f}"

    def cell(vals):
        if not vals:
            return "-"
        return f"{fmt(statistics.median(vals))} ({fmt(min(vals))}–{fmt(max(vals))})"

    ratio = "-"
    if ours and other:
        if higher_is_better(name):
            pairs = [u / o for u, o in zip(ours, other) if o]
        else:
            pairs = [o / u for u, o in zip(ours, other) if u]
        if pairs:
            ratio = f"{statistics.median(pairs):.2f}× ({min(pairs):.2f}–{max(pairs):.2f})"
    return f"| {name} | {cell(ours)} | {cell(other)} | {ratio} |"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    repo = os.path.dirname(os.path.dirname(HERE))
    ap.add_argument("--ours", default=os.path.join(repo, "target-release/release/dreb"))
    ap.add_argument("--other")
    ap.add_argument("--mock")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--client", choices=["python", "c"], default="python")
    opts = ap.parse_args()
    ours = Impl("ours", opts.ours)
    impls = [ours] + ([Impl("other", opts.other)] if opts.other else [])
    mock_bin = opts.mock or os.path.join(os.path.dirname(ours.cmd[0]), "dreb-mock-llm")
    selected = opts.only.split(",") if opts.only else list(SCENARIOS)
    for s in selected:
        if s not in SCENARIOS:
            sys.exit(f"unknown scenario {s!r}; choose from {', '.join(SCENARIOS)}")

    q = opts.quick
    opts.seq_n = 200 if q else 1000
    opts.pipe_n = 1000 if q else 10000
    opts.stream_sizes = [200, 2000] if q else [2000, 20000]
    opts.idle_n = 5 if q else 20
    opts.tree_files = 2700 if q else 27000
    with tempfile.TemporaryDirectory(prefix="dreb-bench-") as root:
        opts.root = root
        opts.c_client = None
        if opts.client == "c":
            opts.c_client = os.path.join(root, "rpc_client")
            subprocess.run(["cc", "-O2", "-pthread", "-o", opts.c_client, os.path.join(HERE, "rpc_client.c")],
                           check=True)
        with open(os.path.join(root, "scenario.json"), "w") as f:
            json.dump(mock_scenario(opts), f)
        mock = subprocess.Popen([mock_bin, "--scenario", os.path.join(root, "scenario.json")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        base_url = mock.stdout.readline().decode().strip()
        envs = {impl.name: Env(root, base_url, impl.name) for impl in impls}
        if "listing" in selected:
            cwd = envs["ours"].cwd
            opts.listing_dirs = [(n, gen_listing(root, n, cwd)) for n in ([100, 1000] if q else [1000, 10000])]
        if "session" in selected:
            opts.big_session = os.path.join(root, "big.jsonl")
            sys.argv = ["gen_session", opts.big_session, "10" if q else "100", envs["ours"].cwd]
            gen_session.main()
        if "tools" in selected:
            opts.tree = os.path.join(root, "tree")
            opts.tree_files = gen_tree(opts.tree, opts.tree_files)

        load = open("/proc/loadavg").read().split()[:3]
        print(f"# dreb side-by-side benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        print(f"ours: `{opts.ours}`; other: `{opts.other or '-'}`; load average at start: {' '.join(load)}\n")
        print("| measure | ours: median (range) | other: median (range) | other ÷ ours per pair, median (range) |")
        print("|---|---:|---:|---:|")
        for s in selected:
            fn, heavy = SCENARIOS[s]
            runs = min(opts.runs, heavy) if heavy else opts.runs
            results = {impl.name: {} for impl in impls}
            for r in range(runs):
                order = impls if r % 2 == 0 else list(reversed(impls))
                for impl in order:
                    try:
                        vals = fn(impl, envs[impl.name], opts)
                    except Exception as e:  # a scenario the other side does not support
                        print(f"<!-- {impl.name} {s}: {e!r} -->", file=sys.stderr)
                        continue
                    for k, v in vals.items():
                        results[impl.name].setdefault(k, []).append(v)
            names = list(dict.fromkeys(k for impl in impls for k in results[impl.name]))
            for k in names:
                print(summarise(k, results["ours"].get(k, []), results.get("other", {}).get(k, [])), flush=True)
            if opts.floor and s in ("sequential", "pipelined"):
                floor = Impl("floor", "cat", echo=True)
                vals = {}
                for r in range(runs):
                    for k, v in fn(floor, envs["ours"], opts).items():
                        vals.setdefault(k, []).append(v)
                for k, v in vals.items():
                    print(summarise(f"client floor: {k} against `cat`", v, []), flush=True)
        load = open("/proc/loadavg").read().split()[:3]
        print(f"\nload average at the end: {' '.join(load)}")
        mock.stdin.close()
        mock.wait()


if __name__ == "__main__":
    main()
