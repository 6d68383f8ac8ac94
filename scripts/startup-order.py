#!/usr/bin/env python3
"""Regenerate or check `crates/dreb/startup-order.txt`, the functions a start-up runs, which the release link of
`dreb` places side by side (docs/adr/0019-start-up-code-layout.md).

  python3 scripts/startup-order.py generate [--binary target-release/release/dreb ...]
  python3 scripts/startup-order.py check    [--binary target-release/release/dreb ...]

`generate` runs the release binary under callgrind (valgrind) through what a host does first: the offline default
and a configured provider (with and without a settings file, with and without a session file), each answering get_state, get_commands, get_available_models and get_messages, then
idling briefly and closing stdin. It writes every function of the binary's own code that ran, by its linker
(mangled) name, in the order callgrind first reports them. `check` runs the same start-up and reports how much of it
the file covers in the given binary: functions that ran and are listed, and listed names the binary no longer has
(names change when a crate's dependencies change, and thin LTO renames some local functions when their module
changes). Regenerate when coverage drops; a stale file only loses the layout, never correctness.

Record from both release builds, each built alone: first the binary as we ship it, `cargo build-dreb` (linked
statically, ADR 0020), then `cargo build --release -p dreb` (linked dynamically; `cargo install` builds it): most
names are the same in both, but not all (glibc's functions are only in the first, and the functions the `dreb`
crate instantiates are named differently in each), and the list takes the names of both. Building other packages
in the same command (the mock LLM) unifies other dependency features, which renames most functions:

  CARGO_TARGET_DIR=target-release cargo build-dreb && cp target-release/release/dreb /tmp/dreb-static
  CARGO_TARGET_DIR=target-release cargo build --release -p dreb
  python3 scripts/startup-order.py generate --binary /tmp/dreb-static --binary target-release/release/dreb
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDER_FILE = os.path.join(ROOT, "crates", "dreb", "startup-order.txt")
FIRST_REQUESTS = [
    {"id": "s", "type": "get_state"},
    {"id": "c", "type": "get_commands"},
    {"id": "m", "type": "get_available_models"},
    {"id": "g", "type": "get_messages"},
]


def run_under_callgrind(binary, args, env, cwd, out_file):
    """One start-up under callgrind; returns the functions of `binary` that ran, in first-reported order."""
    script = "".join(json.dumps(r) + "\n" for r in FIRST_REQUESTS)
    # The requests, then stdin held open for a moment so what runs after the first answers (idle tasks) counts too.
    feeder = subprocess.Popen(["sh", "-c", 'printf "%s" "$0"; sleep 1', script], stdout=subprocess.PIPE)
    subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out_file}", binary,
                    "--mode", "rpc", *args], stdin=feeder.stdout, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env, cwd=cwd, check=True, timeout=300)
    feeder.wait()
    # callgrind names each object and function once, on first mention (in an `ob=`/`cob=` or `fn=`/`cfn=` line),
    # and refers to it by number after that.
    names, objects, functions, current = [], {}, {}, None
    with open(out_file) as f:
        for line in f:
            m = re.match(r"(c?ob|c?fn)=\((\d+)\)(?: (.*))?", line.strip())
            if not m:
                continue
            kind, number, name = m.groups()
            table = objects if kind.endswith("ob") else functions
            if name:
                table[number] = name
            if kind == "ob":
                current = objects.get(number)
            elif kind == "fn" and current == binary:
                names.append(re.sub(r"'\d+$", "", functions[number]))
    return names


def started_functions(binary):
    binary = os.path.abspath(binary)
    seen, order = set(), []
    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, "home")
        agent_dir = os.path.join(tmp, "agent")
        project = os.path.join(tmp, "project")
        for d in (home, agent_dir, project):
            os.makedirs(d)
        # A configured provider as the benchmarks configure it (never contacted: no prompt is sent).
        models = {"providers": {"mock": {
            "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "mock-key",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "mock-model", "name": "Mock", "reasoning": False, "input": ["text"],
                        "contextWindow": 10_000_000, "maxTokens": 32000,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}
        with open(os.path.join(agent_dir, "models.json"), "w") as f:
            json.dump(models, f)
        env = dict(os.environ, HOME=home, DREB_CODING_AGENT_DIR=agent_dir)
        configured = ["--no-session", "--provider", "mock", "--model", "mock-model"]
        # Without and with a settings file, and a run that creates a session file.
        runs = [(["--no-session"], None), (configured, None),
                (configured, {"compaction": {"enabled": False}, "retry": {"enabled": False}}), ([], {})]
        for i, (args, settings) in enumerate(runs):
            settings_file = os.path.join(agent_dir, "settings.json")
            if settings is None:
                if os.path.exists(settings_file):
                    os.remove(settings_file)
            else:
                with open(settings_file, "w") as f:
                    json.dump(settings, f)
            for name in run_under_callgrind(binary, args, env, project, os.path.join(tmp, f"cg{i}.out")):
                if name not in seen:
                    seen.add(name)
                    order.append(name)
    symbols = set(subprocess.run(["nm", "--defined-only", "-j", binary], capture_output=True, text=True,
                                 check=True).stdout.split())
    return [n for n in order if n in symbols], symbols


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["generate", "check"])
    parser.add_argument("--binary", action="append",
                        help="a release build of dreb (repeatable; default target-release/release/dreb)")
    opts = parser.parse_args()
    binaries = opts.binary or [os.path.join(ROOT, "target-release", "release", "dreb")]
    if opts.mode == "generate":
        # Several builds (the static and the dynamic link): the first one's start-up in its order, then each next
        # one's functions the list does not have yet.
        listed, seen = [], set()
        for binary in binaries:
            ran, _ = started_functions(binary)
            listed += [n for n in ran if n not in seen]
            seen.update(ran)
        with open(ORDER_FILE, "w") as f:
            f.write("".join(n + "\n" for n in listed))
        print(f"{len(listed)} functions written to {os.path.relpath(ORDER_FILE, ROOT)}")
        return 0
    with open(ORDER_FILE) as f:
        listed = [l.strip() for l in f if l.strip()]
    listed_set = set(listed)
    for binary in binaries:
        ran, symbols = started_functions(binary)
        covered = sum(1 for n in ran if n in listed_set)
        gone = sum(1 for n in listed if n not in symbols)
        print(f"{binary}: start-up ran {len(ran)} functions of the binary; {covered} "
              f"({100 * covered / max(len(ran), 1):.0f}%) are listed; {gone} of {len(listed)} listed names are not in "
              f"this binary")
    return 0


if __name__ == "__main__":
    sys.exit(main())
