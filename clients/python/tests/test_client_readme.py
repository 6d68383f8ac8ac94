"""This package's README is tested: each ```python block right after an ``<!-- example: <name> -->`` line passes
``mypy --strict`` (always) and runs as written against the real binary (with ``DREB_BIN``; offline ``faux``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
DREB_BIN = os.environ.get("DREB_BIN", "")

EXAMPLES = dict(re.findall(r"<!-- example: ([\w-]+) -->\n```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S))

#: What each example must print when it runs (the faux provider's replies are fixed).
EXPECTED = {
    "host": [
        r"\[tool ask_user\]",
        r"\[asked 'Which database\?', answering SQLite\]",
        r"(?m)^final text: Noted: your answer\.$",
        r"(?m)^stop reason: stop \| output tokens: \d+$",
        r"(?m)^refused \(prompt\): Built-in slash command /fork must be handled by the RPC client",
        r"(?m)^messages: 4$",
    ],
    "narrowing": [r"(?m)^update text_delta$", r"(?m)^agent_end: 4 messages$"],
    "asyncio": [r"(?m)^tool: ls$", r"(?m)^final text: .*faux provider", r"(?m)^state: 8 messages$"],
}


def test_the_readme_has_the_examples() -> None:
    assert sorted(EXAMPLES) == sorted(EXPECTED)


def test_the_readme_examples_pass_mypy_strict(tmp_path: Path) -> None:
    files = []
    for name, code in EXAMPLES.items():
        file = tmp_path / f"example_{name.replace('-', '_')}.py"
        file.write_text(code, encoding="utf-8")
        files.append(str(file))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"), *files],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(not DREB_BIN, reason="set DREB_BIN to a dreb binary to run against the real agent")
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_readme_example_runs_as_written(name: str, tmp_path: Path) -> None:
    env = dict(os.environ)
    env.update(DREB_BIN=str(Path(DREB_BIN).resolve()), HOME=str(tmp_path), DREB_CODING_AGENT_DIR=str(tmp_path / "agent"))
    env.pop("DREB_FAUX_SCENARIO", None)
    done = subprocess.run(
        [sys.executable, "-c", EXAMPLES[name]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for pattern in EXPECTED[name]:
        assert re.search(pattern, done.stdout), f"{pattern!r} not in:\n{done.stdout}"
