"""Contract: the client never splits records with str.splitlines (it splits on U+2028/U+2029 and more),
never reads in text mode, and never uses a shell."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "dreb_rpc"


def test_no_line_reader_text_mode_or_shell() -> None:
    files = sorted(SRC.glob("*.py"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert ".splitlines(" not in text, path
        assert not re.search(r"for\s+\w+\s+in\s+\w+\.stdout\b", text), path  # line iteration over a pipe
        assert "readline(" not in text, path
        assert "text=True" not in text and "universal_newlines" not in text, path
        assert "shell=True" not in text, path
