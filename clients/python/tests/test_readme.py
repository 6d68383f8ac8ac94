"""The host example in the repository's README runs as written against the real binary (found on PATH, as a
newcomer who followed `cargo install` would have it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DREB_BIN = os.environ.get("DREB_BIN", "")
pytestmark = pytest.mark.skipif(not DREB_BIN, reason="set DREB_BIN to a dreb binary to run against the real agent")

README = Path(__file__).resolve().parents[3] / "README.md"


def test_the_readme_host_example_runs_as_written(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "README.md has no Python host example"
    env = dict(os.environ)
    env["PATH"] = str(Path(DREB_BIN).resolve().parent) + os.pathsep + env.get("PATH", "")
    env["DREB_CODING_AGENT_DIR"] = str(tmp_path / "agent")
    done = subprocess.run(
        [sys.executable, "-c", blocks[0]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    # The faux run adds the prompt and the scripted reply.
    assert int(done.stdout.strip()) >= 2, done.stdout
