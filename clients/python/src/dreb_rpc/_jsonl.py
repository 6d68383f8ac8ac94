"""Strict JSON-lines framing, as the dreb RPC protocol requires.

- LF (0x0A) is the only record delimiter; one trailing CR is stripped, so CRLF input works.
- U+2028 / U+2029 (and every other Unicode line break) are ordinary characters inside JSON strings:
  records are split on bytes, never with ``str.splitlines``.
- Splitting happens before UTF-8 decoding, and 0x0A never occurs inside a multi-byte UTF-8
  sequence, so a character split across two reads is reassembled correctly.
- An unterminated final record is passed on at end of stream.
"""

from __future__ import annotations

import json
from typing import Any

_LF = b"\n"
_CR = 0x0D


class JsonlDecoder:
    """Incremental splitter: feed byte chunks, get complete records as ``str``."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def push(self, chunk: bytes) -> list[str]:
        """Feeds one chunk; returns every record it completes, in order."""
        records: list[str] = []
        start = 0
        while True:
            lf = chunk.find(_LF, start)
            if lf == -1:
                break
            if self._pending:
                self._pending += chunk[start:lf]
                records.append(_decode(bytes(self._pending)))
                self._pending.clear()
            else:
                records.append(_decode(chunk[start:lf]))
            start = lf + 1
        self._pending += chunk[start:]
        return records

    def end(self) -> list[str]:
        """Ends the stream: returns the unterminated final record, if any bytes are left."""
        if not self._pending:
            return []
        record = _decode(bytes(self._pending))
        self._pending.clear()
        return [record]


def _decode(record: bytes) -> str:
    if record and record[-1] == _CR:
        record = record[:-1]
    # Invalid UTF-8 must not kill the reader; the JSON parse of the record reports it instead.
    return record.decode("utf-8", errors="replace")


def encode_frame(value: Any) -> bytes:
    """Serialises one frame: compact JSON, UTF-8, LF-terminated.

    ``ensure_ascii=False`` keeps text readable; U+2028 / U+2029 are escaped anyway so that naive
    line readers on the other side cannot split a record.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return text.encode("utf-8") + _LF
