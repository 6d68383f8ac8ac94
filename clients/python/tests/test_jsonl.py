import json

import pytest

from dreb_rpc import JsonlDecoder, encode_frame


def decode_all(chunks: list[bytes]) -> list[str]:
    decoder = JsonlDecoder()
    out: list[str] = []
    for chunk in chunks:
        out += decoder.push(chunk)
    return out + decoder.end()


def test_splits_on_lf_only_never_on_unicode_separators() -> None:
    text = '{"a":"x\u2028y"}\n{"b":"p\u2029q\x85r\x0bs\x0ct\x1cu"}\n'
    records = decode_all([text.encode()])
    assert records == ['{"a":"x\u2028y"}', '{"b":"p\u2029q\x85r\x0bs\x0ct\x1cu"}']
    assert json.loads(records[0])["a"] == "x\u2028y"


def test_strips_exactly_one_trailing_cr() -> None:
    assert decode_all([b"one\r\ntwo\r\r\nthree\n"]) == ["one", "two\r", "three"]


def test_empty_lines_are_records() -> None:
    assert decode_all([b"a\n\nb\n"]) == ["a", "", "b"]


def test_unterminated_final_record_is_passed_on_at_end() -> None:
    assert decode_all([b"a\nlast"]) == ["a", "last"]
    assert decode_all([b"a\nlast\r"]) == ["a", "last"]
    assert decode_all([b"a\n"]) == ["a"]
    assert decode_all([]) == []


def test_every_split_point_including_inside_utf8_gives_the_same_records() -> None:
    records = ['{"t":"h\u00e9llo \U0001F600 \u2028 \u4e2d\u6587"}', '{"u":"\u2029"}', "", '{"v":1}']
    data = ("\r\n".join(records) + "\n").encode()
    for i in range(len(data) + 1):
        for j in {i, min(len(data), i + 1), min(len(data), i + 3)}:
            assert decode_all([data[:i], data[i:j], data[j:]]) == records, (i, j)


def test_one_byte_at_a_time() -> None:
    text = '{"emoji":"\U0001F680\U0001F680","sep":"\u2028\u2029"}\n{"x":"\u00fc"}'
    data = text.encode()
    assert decode_all([data[i : i + 1] for i in range(len(data))]) == text.split("\n")


def test_invalid_utf8_does_not_raise() -> None:
    assert decode_all([b"\xff\xfe{}\n"]) == ["\ufffd\ufffd{}"]


def test_encode_frame_escapes_separators_and_round_trips() -> None:
    value = {"type": "prompt", "message": "a\u2028b\u2029c\nd \u00e9"}
    frame = encode_frame(value)
    assert frame.endswith(b"\n") and frame.count(b"\n") == 1
    assert "\u2028".encode() not in frame and "\u2029".encode() not in frame
    assert b"\\u2028" in frame and b"\\u2029" in frame
    assert json.loads(frame) == value


def test_encode_frame_rejects_nan() -> None:
    with pytest.raises(ValueError):
        encode_frame({"x": float("nan")})
