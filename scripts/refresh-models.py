#!/usr/bin/env python3
"""Refresh the built-in model catalogue (crates/dreb-ai/data/models.json) from the reference's generated models.

Usage:
    scripts/refresh-models.py MODELS_FILE [--out PATH] [--check]

MODELS_FILE is the reference's generated catalogue: `models.generated.ts` from its source tree (written by its
`generate-models` script) or `dist/models.generated.js` from its published `ai` package. The file is read as data
only: the object literal after `export const MODELS =` is turned into JSON. For each provider this build speaks
(the ones already in the catalogue, except the offline `faux`), every model the reference lists is taken in the
reference's order with the fields the registry reads (id, name, api, provider, baseUrl, reasoning, input, cost,
contextWindow, maxTokens); `defaultModel` and the `faux` provider stay as they are. `--check` only reports the
differences and exits 1 when there are any. See docs/providers.md ("The built-in catalogue").
"""

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "crates/dreb-ai/data/models.json"
FIELDS = ["id", "name", "api", "provider", "baseUrl", "reasoning", "input", "cost", "contextWindow", "maxTokens"]
COST_FIELDS = ["input", "output", "cacheRead", "cacheWrite"]
OFFLINE = {"faux"}


def parse_generated(text: str) -> dict:
    """The `MODELS` object literal of a generated .ts/.js file, as JSON."""
    marker = re.search(r"export\s+const\s+MODELS\s*=\s*", text)
    if not marker:
        sys.exit("no `export const MODELS =` in the input file")
    body = text[marker.end():]
    # The literal ends at the first top-level closing brace.
    depth, end, in_str, quote, escaped = 0, None, False, "", False
    for i, ch in enumerate(body):
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                in_str = False
            continue
        if ch in "\"'`":
            in_str, quote = True, ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                end = i + 1
                break
    if end is None:
        sys.exit("unbalanced MODELS literal")
    literal = body[:end]
    literal = re.sub(r"\s*satisfies\s+Model<[^>]*>", "", literal)
    literal = re.sub(r"\s*as\s+Model<[^>]*>", "", literal)
    literal = re.sub(r"^(\s*)([A-Za-z_$][A-Za-z0-9_$]*)\s*:", r'\1"\2":', literal, flags=re.M)
    literal = re.sub(r"'((?:[^'\\]|\\.)*)'", lambda m: json.dumps(m.group(1)), literal)
    literal = re.sub(r",(\s*[}\]])", r"\1", literal)
    return json.loads(literal)


def number(v):
    """Integers stay integers (JSON output as the catalogue writes them)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def convert(model: dict) -> dict:
    missing = [f for f in FIELDS if f not in model]
    if missing:
        sys.exit(f"model {model.get('provider')}/{model.get('id')} lacks {missing}")
    out = {f: model[f] for f in FIELDS}
    out["cost"] = {k: number(model["cost"].get(k, 0)) for k in COST_FIELDS}
    out["contextWindow"] = number(model["contextWindow"])
    out["maxTokens"] = number(model["maxTokens"])
    return out


def refresh(current: dict, generated: dict) -> dict:
    providers = {}
    for name, entry in current["providers"].items():
        if name in OFFLINE:
            providers[name] = entry
            continue
        if name not in generated:
            sys.exit(f"provider {name} is not in the reference's catalogue")
        models = [convert(m) for m in generated[name].values()]
        ids = {m["id"] for m in models}
        if entry["defaultModel"] not in ids:
            sys.exit(f"default model {name}/{entry['defaultModel']} is not in the reference's catalogue")
        providers[name] = {"defaultModel": entry["defaultModel"], "models": models}
    return {"providers": providers}


def differences(old: dict, new: dict) -> list:
    lines = []
    for name, entry in new["providers"].items():
        before = {m["id"]: m for m in old["providers"].get(name, {}).get("models", [])}
        after = {m["id"]: m for m in entry["models"]}
        for mid in after.keys() - before.keys():
            lines.append(f"+ {name}/{mid}")
        for mid in before.keys() - after.keys():
            lines.append(f"- {name}/{mid}")
        for mid in after.keys() & before.keys():
            for f in FIELDS:
                if before[mid].get(f) != after[mid].get(f):
                    lines.append(f"~ {name}/{mid} {f}: {before[mid].get(f)} -> {after[mid].get(f)}")
        if list(before) != [m for m in after if m in before]:
            lines.append(f"~ {name}: order")
    return sorted(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models_file", type=Path)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="report differences only; exit 1 if any")
    args = ap.parse_args()

    generated = parse_generated(args.models_file.read_text(encoding="utf-8"))
    current = json.loads(args.out.read_text(encoding="utf-8"))
    new = refresh(current, generated)
    diff = differences(current, new)
    for line in diff:
        print(line)
    if args.check:
        return 1 if diff else 0
    args.out.write_text(json.dumps(new, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({sum(len(p['models']) for p in new['providers'].values())} models)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
