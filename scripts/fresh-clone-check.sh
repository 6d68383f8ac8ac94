#!/usr/bin/env bash
# Follows README.md as a newcomer on a fresh machine would, in a fresh clone in a temporary directory:
#
#   1. the README's promises: prerequisites (the Rust version is the workspace's rust-version and the installed
#      rustc meets it; the Node and Python versions match the client manifests), the install step, links to both
#      client packages, a host example in each language, a LICENSE that is the manifests' MIT;
#   2. "Run the agent": the README's quick-start command, taken from the README, run in the clone with a prompt piped
#      in (offline, the faux provider); the run must end with the faux reply (stdin is kept open until agent_end,
#      then closed: the agent must exit 0);
#   3. the install step (`cargo install --path crates/dreb`, into a temporary root) and `dreb -p` from PATH;
#   4. TypeScript: `npm ci && npm pack` in clients/typescript gives a non-empty package that installs into a fresh
#      project, where the README's TypeScript host compiles under `tsc --strict` and runs with dreb on PATH;
#   5. Python: `pip install ./clients/python` into a fresh venv, where the README's Python host passes
#      `mypy --strict` and runs;
#   6. with --msrv, the prerequisite's floor: `cargo +<rust-version> check --locked -p dreb` (rustup installs it);
#   7. with --full, "Run every test": the README's `./scripts/test-all.sh`, in the clone.
#
# Usage: scripts/fresh-clone-check.sh [--full] [--msrv] [--keep] [--source <path or URL>]
#   --source   what to clone (default: this checkout; a clone has only its committed files, as a fresh machine has)
#   --full     also run the README's test command in the clone (slow: the whole suite, cold)
#   --msrv     also check that the binary builds with the README's minimum Rust (the workspace's rust-version)
#   --keep     keep the temporary directory
# Environment: FRESH_TARGET_DIR reuses a cargo target directory (default: a new one in the temporary directory, so
# the build is cold as on a fresh machine). Needs git, cargo, node/npm and python3; steps 4-6 download the clients'
# dev dependencies from the npm and PyPI registries, as a newcomer's install does. The agent itself never contacts
# the network (faux provider). The cheap, offline parts of 4 and 5 also run in the client test suites
# (clients/typescript/test/pack.test.ts, clients/python/tests/test_fresh_install.py).
set -euo pipefail

HERE="$(cd "$(dirname "$0")/.." && pwd)"
SOURCE="$HERE"
FULL=0
MSRV_CHECK=0
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --full) FULL=1 ;;
    --msrv) MSRV_CHECK=1 ;;
    --keep) KEEP=1 ;;
    --source) SOURCE="$2"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/dreb-fresh-clone.XXXXXX")"
AGENT_PID=""
cleanup() {
  if [ -n "$AGENT_PID" ]; then kill "$AGENT_PID" 2>/dev/null || true; fi
  if [ "$KEEP" = 1 ]; then echo "kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

step() { printf '\n==> %s\n' "$*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# Nothing of this machine's dreb set-up may leak in: no DREB_BIN, a fresh HOME (so a fresh ~/.dreb) and agent
# directory. The toolchains and the package managers' download caches stay where they are.
unset DREB_BIN DREB_FAUX_SCENARIO DREB_CODING_AGENT_DIR
REAL_HOME="$HOME"
export CARGO_HOME="${CARGO_HOME:-$REAL_HOME/.cargo}"
export RUSTUP_HOME="${RUSTUP_HOME:-$REAL_HOME/.rustup}"
export npm_config_cache="${npm_config_cache:-$REAL_HOME/.npm}"
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$REAL_HOME/.cache/pip}"
export HOME="$WORK/home"
mkdir -p "$HOME"
export CARGO_TARGET_DIR="${FRESH_TARGET_DIR:-$WORK/target}"

step "clone $SOURCE"
git clone --quiet "$SOURCE" "$WORK/dreb-rs"
CLONE="$WORK/dreb-rs"
cd "$CLONE"
ok "cloned $(git rev-parse --short HEAD) into $CLONE"

# Blocks of a language in a README section (between its heading and the next heading of the same level).
readme_blocks() { # file, heading line, language → blocks separated by NUL
  python3 - "$1" "$2" "$3" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
heading, lang = sys.argv[2], sys.argv[3]
start = text.index(heading + "\n")
level = heading.split(" ")[0]
end = text.find("\n" + level + " ", start + len(heading))
section = text[start:] if end < 0 else text[start:end]
sys.stdout.write("\0".join(re.findall(r"```" + lang + r"\n(.*?)```", section, re.S)))
EOF
}

step "README: prerequisites, install step, client links, host examples, LICENSE"
README="$CLONE/README.md"
[ -f LICENSE ] && grep -q '^MIT License' LICENSE || fail "no MIT LICENSE file"
grep -q '^license = "MIT"' Cargo.toml || fail "the workspace manifest is not MIT"
grep -q '"license": "MIT"' clients/typescript/package.json || fail "the TypeScript client is not MIT"
grep -q 'license = { text = "MIT" }' clients/python/pyproject.toml || fail "the Python client is not MIT"
ok "LICENSE (MIT) matches every manifest"
MSRV="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)"
grep -q "Rust $MSRV or newer" "$README" || fail "README prerequisites do not say Rust $MSRV (the workspace's rust-version)"
RUSTC="$(rustc --version | awk '{print $2}')"
[ "$(printf '%s\n%s\n' "$MSRV" "$RUSTC" | sort -V | head -1)" = "$MSRV" ] || fail "rustc $RUSTC is older than $MSRV"
NODE_MIN="$(sed -n 's/.*"node": ">=\([0-9]*\)".*/\1/p' clients/typescript/package.json)"
PY_MIN="$(sed -n 's/^requires-python = ">=\(.*\)"/\1/p' clients/python/pyproject.toml)"
grep -q "Node.js $NODE_MIN+" "$README" || fail "README prerequisites do not say Node.js $NODE_MIN+ (package.json engines)"
grep -q "Python $PY_MIN+" "$README" || fail "README prerequisites do not say Python $PY_MIN+ (pyproject requires-python)"
node -e "process.exit(Number(process.versions.node.split('.')[0]) >= $NODE_MIN ? 0 : 1)" || fail "node is older than $NODE_MIN"
python3 -c "import sys; sys.exit(0 if sys.version_info >= tuple(map(int, '$PY_MIN'.split('.'))) else 1)" ||
  fail "python3 is older than $PY_MIN"
ok "prerequisites: Rust $MSRV (have $RUSTC), Node.js $NODE_MIN+ (have $(node --version)), Python $PY_MIN+ (have $(python3 --version | awk '{print $2}'))"
grep -q 'cargo install --path crates/dreb' "$README" || fail "README has no install step for the binary"
grep -q '](clients/typescript)' "$README" && grep -q '](clients/python)' "$README" || fail "README does not link both clients"
[ -f clients/typescript/README.md ] && [ -f clients/python/README.md ] || fail "a client has no README"
INSTALL="## Install the binary and drive it from a host"
TS_HOST="$(readme_blocks "$README" "$INSTALL" ts)"
PY_HOST="$(readme_blocks "$README" "$INSTALL" python)"
[ -n "$TS_HOST" ] && [ -n "$PY_HOST" ] || fail "README has no TypeScript and Python host example under '$INSTALL'"
ok "install step, links to both clients, a host example in each language"

step "Run the agent (the README's quick-start command, a prompt piped in)"
RUN_CMD="$(readme_blocks "$README" "## Quick start" sh | tr '\0' '\n' | sed -n '1p')"
case "$RUN_CMD" in *"--mode rpc"*"--provider faux"*) ;; *) fail "unexpected quick-start command: $RUN_CMD" ;; esac
echo "\$ $RUN_CMD    (cold build: this takes a while)"
mkfifo "$WORK/agent.in"
bash -c "$RUN_CMD" <"$WORK/agent.in" >"$WORK/agent.out" 2>"$WORK/agent.err" &
AGENT_PID=$!
exec 3>"$WORK/agent.in"
printf '%s\n' '{"id":"q1","type":"prompt","message":"hello"}' >&3
# Wait for the run's end (the build comes first); no timed assertion, only a generous bound against a hang.
for _ in $(seq 1 7200); do
  grep -q '"type":"agent_end"' "$WORK/agent.out" 2>/dev/null && break
  kill -0 "$AGENT_PID" 2>/dev/null || break
  sleep 0.5
done
exec 3>&-  # end of input: the agent must finish and exit 0
status=0
wait "$AGENT_PID" || status=$?
AGENT_PID=""
[ "$status" = 0 ] || { tail -20 "$WORK/agent.err" >&2; fail "the agent exited with $status"; }
python3 - "$WORK/agent.out" <<'EOF' || { tail -20 "$WORK/agent.err" >&2; exit 1; }
import json, sys
frames = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
response = next(f for f in frames if f.get("type") == "response" and f.get("id") == "q1")
assert response["success"] is True, response
end = next(f for f in frames if f["type"] == "agent_end")
reply = [m for m in end["messages"] if m["role"] == "assistant"][-1]
text = "".join(b.get("text", "") for b in reply["content"] if b["type"] == "text")
assert reply["stopReason"] == "stop" and "faux provider" in text, reply
tools = [f["toolName"] for f in frames if f["type"] == "tool_execution_start"]
print(f"ok: {len(frames)} frames, tools {tools}, reply: {text!r}")
EOF

step "Install the binary (cargo install --path crates/dreb, into a temporary root)"
cargo install --quiet --locked --path crates/dreb --root "$WORK/cargo-root"
export PATH="$WORK/cargo-root/bin:$PATH"
[ "$(command -v dreb)" = "$WORK/cargo-root/bin/dreb" ] || fail "dreb is not the installed one on PATH"
REPLY_TEXT="$(cd "$WORK" && dreb -p "hello" --provider faux)"
case "$REPLY_TEXT" in *"faux provider"*) ok "dreb on PATH: $REPLY_TEXT" ;; *) fail "dreb -p said: $REPLY_TEXT" ;; esac

step "TypeScript: npm ci && npm pack, install the tarball into a fresh project, a host under tsc --strict"
(cd clients/typescript && npm ci --no-audit --no-fund --silent && npm pack --silent >/dev/null)
TARBALL="$(ls "$CLONE"/clients/typescript/dreb-rs-client-*.tgz)"
[ "$(wc -c <"$TARBALL")" -gt 10000 ] || fail "the package is (nearly) empty: $TARBALL"
tar -tzf "$TARBALL" | grep -q '^package/dist/src/index.d.ts$' || fail "the package has no built client"
ok "$(basename "$TARBALL"): $(tar -tzf "$TARBALL" | wc -l) files, $(wc -c <"$TARBALL") bytes"
TS_PROJECT="$WORK/ts-host"
mkdir -p "$TS_PROJECT" && cd "$TS_PROJECT"
printf '{"name":"ts-host","private":true,"type":"module"}\n' >package.json
TS_VERSION="$(node -p "require('$CLONE/clients/typescript/node_modules/typescript/package.json').version")"
NODE_TYPES="$(node -p "require('$CLONE/clients/typescript/node_modules/@types/node/package.json').version")"
npm install --no-audit --no-fund --silent "$TARBALL" "typescript@$TS_VERSION" "@types/node@$NODE_TYPES"
printf '%s' "$TS_HOST" | tr -d '\0' >host.ts
printf '{"compilerOptions":{"strict":true,"target":"ES2022","module":"NodeNext","moduleResolution":"NodeNext"},"files":["host.ts"]}\n' >tsconfig.json
npx tsc -p tsconfig.json || fail "the README's TypeScript host does not compile under tsc --strict"
TS_OUT="$(node host.js)"
echo "$TS_OUT"
case "$TS_OUT" in *"faux provider"*) ok "the TypeScript host ran (tsc $TS_VERSION --strict)" ;; *) fail "unexpected output" ;; esac
cd "$CLONE"

step "Python: pip install ./clients/python into a fresh venv, a host under mypy --strict"
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet --disable-pip-version-check ./clients/python mypy
printf '%s' "$PY_HOST" | tr -d '\0' >"$WORK/host.py"
(cd "$WORK" && "$WORK/venv/bin/python" -m mypy --strict --no-incremental host.py) ||
  fail "the README's Python host does not pass mypy --strict"
PY_OUT="$(cd "$WORK" && "$WORK/venv/bin/python" host.py)"
[ "$PY_OUT" -ge 2 ] 2>/dev/null || fail "the Python host printed: $PY_OUT"
ok "the Python host ran: $PY_OUT messages"

if [ "$MSRV_CHECK" = 1 ]; then
  step "The minimum Rust: cargo +$MSRV check --locked -p dreb"
  rustup toolchain install "$MSRV" --profile minimal >/dev/null
  cargo +"$MSRV" check --quiet --locked -p dreb --target-dir "$WORK/target-msrv"
  ok "dreb builds with Rust $MSRV"
fi

if [ "$FULL" = 1 ]; then
  step "Run every test (./scripts/test-all.sh in the clone)"
  ./scripts/test-all.sh
fi

step "fresh-clone check passed ($(git -C "$CLONE" rev-parse --short HEAD)$([ "$FULL" = 1 ] && echo ', with the full test suite'))"
