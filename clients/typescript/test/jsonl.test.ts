import { test } from "node:test";
import assert from "node:assert/strict";
import { JsonlDecoder, encodeFrame } from "../src/index.js";

const enc = new TextEncoder();

function decodeAll(chunks: Uint8Array[]): string[] {
  const decoder = new JsonlDecoder();
  const out: string[] = [];
  for (const chunk of chunks) out.push(...decoder.push(chunk));
  out.push(...decoder.end());
  return out;
}

test("splits on LF only, never on U+2028 / U+2029", () => {
  const text = '{"a":"x\u2028y"}\n{"b":"p\u2029q"}\n';
  const records = decodeAll([enc.encode(text)]);
  assert.deepEqual(records, ['{"a":"x\u2028y"}', '{"b":"p\u2029q"}']);
  assert.equal((JSON.parse(records[0]!) as { a: string }).a, "x\u2028y");
});

test("strips exactly one trailing CR (CRLF input)", () => {
  assert.deepEqual(decodeAll([enc.encode("one\r\ntwo\r\r\nthree\n")]), ["one", "two\r", "three"]);
});

test("empty lines are records, not skipped", () => {
  assert.deepEqual(decodeAll([enc.encode("a\n\nb\n")]), ["a", "", "b"]);
});

test("passes on the unterminated final record at end of stream", () => {
  assert.deepEqual(decodeAll([enc.encode("a\nlast")]), ["a", "last"]);
  assert.deepEqual(decodeAll([enc.encode("a\nlast\r")]), ["a", "last"]);
  assert.deepEqual(decodeAll([enc.encode("a\n")]), ["a"]);
});

test("every split point, including inside multi-byte UTF-8, yields the same records", () => {
  const records = ['{"t":"h\u00e9llo \u{1F600} \u2028 \u4E2D\u6587"}', '{"u":"\u2029"}', "", '{"v":1}'];
  const bytes = enc.encode(records.join("\r\n") + "\n");
  for (let i = 0; i <= bytes.length; i++) {
    for (const j of [i, Math.min(bytes.length, i + 1), Math.min(bytes.length, i + 3)]) {
      const chunks = [bytes.subarray(0, i), bytes.subarray(i, j), bytes.subarray(j)];
      assert.deepEqual(decodeAll(chunks), records, `split at ${i}/${j}`);
    }
  }
});

test("one byte at a time", () => {
  const text = '{"emoji":"\u{1F680}\u{1F680}","sep":"\u2028\u2029"}\n{"x":"\u00fc"}';
  const bytes = enc.encode(text);
  const chunks = Array.from(bytes, (b) => Uint8Array.of(b));
  assert.deepEqual(decodeAll(chunks), text.split("\n"));
});

test("the decoder copies the tail: a reused input buffer does not corrupt records", () => {
  const decoder = new JsonlDecoder();
  const buf = new Uint8Array(4);
  buf.set(enc.encode("abcd"));
  assert.deepEqual(decoder.push(buf), []);
  buf.set(enc.encode("ef\nz"));
  assert.deepEqual(decoder.push(buf), ["abcdef"]);
  assert.deepEqual(decoder.end(), ["z"]);
});

test("encodeFrame escapes U+2028 / U+2029, ends with LF and round-trips", () => {
  const value = { type: "prompt", message: "a\u2028b\u2029c\nd" };
  const frame = encodeFrame(value);
  assert.ok(frame.endsWith("\n"));
  assert.equal(frame.indexOf("\n"), frame.length - 1);
  assert.ok(!frame.includes("\u2028") && !frame.includes("\u2029"));
  assert.ok(frame.includes("\\u2028") && frame.includes("\\u2029"));
  assert.deepEqual(JSON.parse(frame), value);
});

test("encodeFrame rejects values JSON cannot represent", () => {
  assert.throws(() => encodeFrame(undefined), TypeError);
});
