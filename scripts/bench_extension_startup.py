#!/usr/bin/env python3
"""Start-up with extensions: time to the first response (`get_version`, which never waits for extensions) and
until the extensions are ready (`get_commands`, which waits for them), with N extensions loaded from a temporary
`-e` list. Generated inputs only; nothing is written outside a temp dir.

    scripts/bench_extension_startup.py --dreb target/release/dreb [--extensions 5] [--runs 20] [--kind python|native|ts]

`python`: N copies of a small SDK extension (clients/python/src/dreb_extension); `native`: N copies of the
protocol-only Rust example (`cargo build --release -p dreb-extensions --example allow_all`); `ts`: N copies of a
reference-style TypeScript extension (TypeBox tool, command, `tool_call` handler), run by the Node extension host of
this checkout (`npm ci` in clients/extension-host first).
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EXTENSION = """
from dreb_extension import Extension
ext = Extension(name="bench-{n}")
@ext.command("cmd{n}", description="benchmark command {n}")
def cmd(args, ctx):
    pass
@ext.on("tool_call")
def allow(event, ctx):
    return None
ext.run()
"""


TS_EXTENSION = """
import {{ Type }} from "@sinclair/typebox";
import type {{ ExtensionAPI }} from "@dreb/coding-agent";
export default function (dreb: ExtensionAPI) {{
	dreb.registerCommand("cmd{n}", {{ description: "benchmark command {n}", handler: async () => {{}} }});
	dreb.registerTool({{
		name: "tool{n}", label: "Tool {n}", description: "benchmark tool {n}",
		parameters: Type.Object({{ text: Type.String() }}),
		async execute(_id, params) {{ return {{ content: [{{ type: "text", text: String(params.text) }}], details: {{}} }}; }},
	}});
	dreb.on("tool_call", async () => undefined);
}}
"""


def run_once(dreb: str, paths: list[str], home: Path) -> tuple[float, float]:
    args = [dreb, "--mode", "rpc", "--provider", "faux", "--no-session"]
    for p in paths:
        args += ["-e", p]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "DREB_CODING_AGENT_DIR": str(home / "agent"),
        "PYTHONPATH": str(ROOT / "clients/python/src"),
    }
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=home, bufsize=0)
    assert proc.stdin and proc.stdout
    proc.stdin.write(b'{"id":"v","type":"get_version"}\n{"id":"c","type":"get_commands"}\n')
    first = ready = 0.0
    while not (first and ready):
        frame = json.loads(proc.stdout.readline())
        if frame.get("id") == "v":
            first = time.perf_counter() - start
        elif frame.get("id") == "c":
            ready = time.perf_counter() - start
            names = {c["name"] for c in frame["data"]["commands"] if c.get("source") == "extension"}
            assert len(names) == len(paths) or not paths[0].endswith((".py", ".ts")), names
    proc.stdin.close()
    proc.wait(timeout=20)
    return first * 1000, ready * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dreb", default=str(ROOT / "target/release/dreb"))
    ap.add_argument("--extensions", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--kind", choices=["python", "native", "ts"], default="python")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "agent").mkdir()
        paths = []
        for n in range(a.extensions):
            if a.kind == "python":
                p = home / f"ext{n}.py"
                p.write_text(EXTENSION.format(n=n))
            elif a.kind == "ts":
                p = home / f"ext{n}.ts"
                p.write_text(TS_EXTENSION.format(n=n))
            else:
                p = home / f"ext{n}"
                os.symlink(ROOT / "target/release/examples/allow_all", p)
            paths.append(str(p))
        for label, exts in (("no extensions", []), (f"{a.extensions} {a.kind} extensions", paths)):
            firsts, readies = [], []
            for _ in range(a.runs):
                f, r = run_once(a.dreb, exts, home)
                firsts.append(f)
                readies.append(r)
            print(
                f"{label}: first response median {statistics.median(firsts):.1f} ms "
                f"({min(firsts):.1f}-{max(firsts):.1f}); extensions ready median {statistics.median(readies):.1f} ms "
                f"({min(readies):.1f}-{max(readies):.1f}), {a.runs} runs"
            )


if __name__ == "__main__":
    main()
