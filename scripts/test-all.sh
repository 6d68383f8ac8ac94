#!/usr/bin/env bash
# Runs every test of the project: Rust (cargo test), the TypeScript client and the Python client.
# Installs what it needs on first use: Chromium and git when missing (scripts/setup.sh), the client packages'
# dev dependencies (npm / pip into a local venv).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

./scripts/setup.sh

echo "==> Rust: formatting"
cargo fmt --all -- --check

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

if [ -f "$ROOT/clients/python/pyproject.toml" ]; then
  echo "==> Python client"
  cd "$ROOT/clients/python"
  if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
  .venv/bin/python -m mypy --strict src
  .venv/bin/python -m pytest -q
  cd "$ROOT"
fi
echo "==> all tests passed"
