#!/usr/bin/env bash
# Runs every test of the project: Rust (cargo test), the TypeScript client and the Python client.
# Installs what it needs on first use: Chromium and git when missing (scripts/setup.sh), the client packages'
# dev dependencies (npm / pip into a local venv).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

./scripts/setup.sh
# The search tool's model tests fail instead of skipping when setup did not install the model.
export DREB_REQUIRE_SEARCH_MODEL=1

echo "==> Rust: formatting"
cargo fmt --all -- --check

# The Rust end-to-end tests run a TypeScript extension through the Node extension host: its dependencies first.
if [ -f "$ROOT/clients/extension-host/package.json" ]; then
  cd "$ROOT/clients/extension-host"
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then npm ci --no-audit --no-fund; fi
  cd "$ROOT"
fi

# The MCP tests run third-party MCP servers (docs/mcp.md): server-everything from npm, the official Python SDK.
cd "$ROOT/tests/mcp-peers"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then npm ci --no-audit --no-fund; fi
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
if [ ! -f .venv/.installed ] || [ requirements.txt -nt .venv/.installed ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
  touch .venv/.installed
fi
cd "$ROOT"

echo "==> Rust: cargo test --workspace"
# Default targets (libs, bins, tests, doctests). Benchmarks are run on purpose with `cargo bench`, not here:
# in a debug build their numbers mean nothing and their large generated inputs only cost CI time.
cargo test --workspace

# The client suites also drive the real binary (offline, --provider faux).
cargo build -p dreb
export DREB_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/dreb"

if [ -f "$ROOT/clients/typescript/package.json" ]; then
  echo "==> TypeScript client"
  cd "$ROOT/clients/typescript"
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then npm ci --no-audit --no-fund; fi
  npm test
  cd "$ROOT"
fi

if [ -f "$ROOT/tests/acp-sdk/package.json" ]; then
  echo "==> ACP: the official TypeScript SDK as the client of dreb --mode acp"
  cd "$ROOT/tests/acp-sdk"
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then npm ci --no-audit --no-fund; fi
  npm test
  cd "$ROOT"
fi

if [ -f "$ROOT/clients/extension-host/package.json" ]; then
  echo "==> Node extension host"
  cd "$ROOT/clients/extension-host"
  npm test
  cd "$ROOT"
fi

if [ -f "$ROOT/clients/python/pyproject.toml" ]; then
  echo "==> Python client"
  cd "$ROOT/clients/python"
  if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
  .venv/bin/python -m mypy --strict src
  .venv/bin/python -m pytest -q
  cd "$ROOT"
fi

echo "==> Fuzzing: a short bounded run of each cargo-fuzz target (docs/fuzzing.md)"
# Seconds per target, on the stable toolchain (RUSTC_BOOTSTRAP=1 allows the nightly-only flags cargo-fuzz passes),
# without a sanitizer (safe Rust; none of the build-std cost) and in the dev profile (the build is the cost: about
# 5 min cold on 2 cores, seconds when warm). New inputs go to a temporary corpus, never into fuzz/corpus/ (the
# checked-in seeds are the second, read-only corpus dir). A crash, a hang or a broken invariant fails this step;
# the input is saved under fuzz/artifacts/<target>/.
if ! cargo fuzz --version >/dev/null 2>&1; then cargo install cargo-fuzz --locked; fi
FUZZ_SECONDS="${DREB_FUZZ_SECONDS:-5}"
FUZZ_WORK="$(mktemp -d)"
for target in frame_reader decode_dispatch; do
  mkdir -p "$FUZZ_WORK/$target"
  if [ "$target" = decode_dispatch ]; then
    # 5-30 inputs/s in the dev build, and replaying its ~200 seeds alone takes ~15 s: bounded in inputs (the seeds,
    # then 20 mutated inputs per second asked for) so that it always mutates, with a time cap.
    seeds="$(find "fuzz/corpus/$target" -type f | wc -l)"
    bound=(-runs="$((seeds + 20 * FUZZ_SECONDS))" -max_total_time="$((8 * FUZZ_SECONDS))")
  else
    bound=(-max_total_time="$FUZZ_SECONDS" -runs=200000)
  fi
  # TMPDIR: the decode_dispatch body keeps its temp HOME for the whole process (a static); it goes with FUZZ_WORK.
  TMPDIR="$FUZZ_WORK" RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none --dev "$target" "$FUZZ_WORK/$target" "fuzz/corpus/$target" -- \
    "${bound[@]}" -timeout=60 -print_final_stats=1
done
rm -rf "$FUZZ_WORK"
echo "==> all tests passed"
