#!/usr/bin/env python3
"""Seeds the fuzz corpora from the examples of protocol/rpc.yaml, plus hand-made framing edge cases.

    python3 fuzz/seed_corpus.py          # from the repository root (needs PyYAML)

Writes fuzz/corpus/decode_dispatch/seed-* (one JSON line per example: a `request:` object serialised compactly,
or a raw `line:`; an `inputs` example is itself the line) and fuzz/corpus/frame_reader/seed-* (the same lines
behind the frame_reader header: limit byte, chunk-pattern length, pattern; see
crates/dreb-fuzz-bodies/src/frame_reader.rs). Old seed-* files are removed first; any other file in the corpus
(regressions, inputs the fuzzer found and someone kept) is left alone. The output is deterministic.
"""

import json
import os
import re
import sys
import zlib

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = os.path.join(ROOT, "protocol", "rpc.yaml")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")

# decode_dispatch's input line cap (MAX_RECORD_BYTES in crates/dreb-fuzz-bodies/src/decode_dispatch.rs).
DISPATCH_MAX = 1024


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def spec_lines(spec):
    """(name, line bytes without LF) for every example that is stdin input."""
    out = []
    for ex in spec["envelope"].get("examples", []):
        if "line" in ex:
            out.append(("envelope-" + ex["name"], ex["line"].encode()))
        elif "request" in ex:
            out.append(("envelope-" + ex["name"], compact(ex["request"]).encode()))
    for command, body in spec["commands"].items():
        for i, ex in enumerate(body.get("examples") or []):
            if "request" in ex:
                name = ex.get("name") or str(i)
                out.append((f"command-{command}-{name}", compact(ex["request"]).encode()))
    for name, body in (spec.get("inputs") or {}).items():
        for i, ex in enumerate(body.get("examples") or []):
            out.append((f"input-{name}-{i}", compact(ex).encode()))
    return out


# Hand-made edge cases: (name, stdin bytes). Both corpora get them.
EDGE_CASES = [
    ("crlf", b'{"id":"c1","type":"get_version"}\r\n{"id":"c2","type":"get_state"}\r\n'),
    ("empty-lines", b"\n\n\r\n\n"),
    ("invalid-utf8", b'{"id":"u","type":"get_version","x":"\xff\xfe"}\n\xc3\x28\n{"id":"ok","type":"get_version"}\n'),
    ("truncated-utf8-at-eof", b'{"id":"t","type":"get_version"}\n"\xe2\x80'),
    ("no-trailing-newline", b'{"id":"n1","type":"get_version"}\n{"id":"n2","type":"get_state"}'),
    ("u2028-in-string", '{"id":"s\u2028x","type":"prompt","message":"a\u2028b\u2029c"}\n'.encode()),
    ("lone-surrogate", b'{"id":"sur","type":"get_version","x":"\\ud800"}\n'),
    ("lone-surrogate-id", b'{"id":"\\udc00","type":"get_version"}\n'),
    ("number-out-of-range", b'{"id":"big","type":"set_thinking_level","level":1e400}\n{"id":1e400,"type":"get_version"}\n'),
    ("over-the-limit", b'{"id":"long","type":"prompt","message":"' + b"x" * (DISPATCH_MAX + 10) + b'"}\n{"id":"after","type":"get_version"}\n'),
    ("exactly-the-limit", b'{"id":"e","type":"get_version","pad":"' + b"p" * (DISPATCH_MAX - 45) + b'"}\n'),
    ("cr-only", b'{"id":"r","type":"get_version"}\r{"id":"r2","type":"get_version"}\r'),
    ("ids-of-every-kind", b'{"id":null,"type":"get_version"}\n{"id":0,"type":"get_version"}\n{"id":-0.0,"type":"get_version"}\n{"id":[1,{"a":2}],"type":"get_version"}\n{"id":{"x":"y"},"type":"get_version"}\n{"id":true,"type":"get_version"}\n{"id":"","type":"get_version"}\n'),
    ("duplicate-keys", b'{"id":"d","type":"get_version","type":"get_state"}\n'),
    ("prompt-steer-abort", b'{"id":"p","type":"prompt","message":"hi"}\n{"id":"s","type":"steer","message":"more"}\n{"id":"f","type":"follow_up","message":"then"}\n{"id":"a","type":"abort"}\n{"id":"g","type":"get_state"}\n'),
    ("ui-response-without-dialog", b'{"type":"extension_ui_response","id":"nope","value":"x"}\n{"type":"extension_ui_response"}\n'),
    ("nesting", b"[" * 200 + b"]" * 200 + b"\n" + b'{"id":' + b"[" * 100 + b"]" * 100 + b',"type":"get_version"}\n'),
]


def frame_reader_header(i):
    """A deterministic variety of record limits and chunk patterns (see frame_reader.rs)."""
    if i % 3 == 0:
        return bytes([0xF0, 0])  # default limit, one read
    limit = (i * 7) % 48
    pattern = bytes([(i * 13 + k * 29) % 256 for k in range(1 + i % 5)])
    return bytes([limit, len(pattern)]) + pattern


def clean(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    with open(os.path.join(d, "seed-" + clean(name)), "wb") as f:
        f.write(data)


def main():
    with open(SPEC, encoding="utf-8") as f:
        spec = yaml.safe_load(f)
    for target in ("decode_dispatch", "frame_reader"):
        d = os.path.join(CORPUS, target)
        os.makedirs(d, exist_ok=True)
        for old in os.listdir(d):
            if old.startswith("seed-"):
                os.remove(os.path.join(d, old))
    lines = spec_lines(spec)
    names = set()
    for name, line in lines:
        if name in names:
            sys.exit(f"duplicate example name {name}")
        names.add(name)
        write("decode_dispatch", name, line + b"\n")
    for i, (name, data) in enumerate(EDGE_CASES):
        write("decode_dispatch", "edge-" + name, data)
        write("frame_reader", "edge-" + name, bytes([0xF0, 0]) + data)
        write("frame_reader", "edge-" + name + "-chunked", frame_reader_header(i + 1) + data)
    # The frame reader cares about bytes, not commands: a sample of the spec lines (picked by a hash of the name, so
    # that a new example does not shift the others), alone and concatenated.
    sample = [(name, line) for name, line in lines if zlib.crc32(name.encode()) % 8 == 0]
    for name, line in sample:
        write("frame_reader", name, frame_reader_header(zlib.crc32(name.encode())) + line + b"\n")
    everything = b"\n".join(line for _, line in lines[:60]) + b"\n"
    write("frame_reader", "spec-lines-concatenated", bytes([0xF0, 3, 1, 0, 200]) + everything)
    print(f"seeded {len(lines) + len(EDGE_CASES)} decode_dispatch and "
          f"{2 * len(EDGE_CASES) + len(sample) + 1} frame_reader inputs under {CORPUS}")


if __name__ == "__main__":
    main()
