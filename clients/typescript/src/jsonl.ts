/**
 * Strict JSON-lines framing, as the dreb RPC protocol requires.
 *
 * - LF (0x0A) is the only record delimiter. One trailing CR is stripped, so CRLF input works.
 * - U+2028 / U+2029 are ordinary characters inside JSON strings: we never split on them
 *   (this is why `node:readline` must not be used for this protocol).
 * - Records are split on bytes before UTF-8 decoding. 0x0A never occurs inside a multi-byte
 *   UTF-8 sequence, so a character split across two chunks is reassembled correctly.
 * - An unterminated final record is passed on at end of stream.
 */

const LF = 0x0a;
const CR = 0x0d;

const utf8 = new TextDecoder("utf-8");

/** Incremental splitter: feed byte chunks, get complete records (as strings, without LF / CR). */
export class JsonlDecoder {
  /** Bytes of the record being assembled (chunks since the last LF). */
  private pending: Uint8Array[] = [];
  private pendingLength = 0;

  /** Feeds one chunk; returns every record completed by it, in order. */
  push(chunk: Uint8Array): string[] {
    const records: string[] = [];
    let start = 0;
    for (;;) {
      const lf = chunk.indexOf(LF, start);
      if (lf === -1) break;
      records.push(this.take(chunk.subarray(start, lf)));
      start = lf + 1;
    }
    if (start < chunk.length) {
      // Copy: the caller may reuse its buffer.
      const rest = chunk.slice(start);
      this.pending.push(rest);
      this.pendingLength += rest.length;
    }
    return records;
  }

  /** Ends the stream: returns the unterminated final record, if any bytes are left. */
  end(): string[] {
    if (this.pendingLength === 0) return [];
    return [this.take(new Uint8Array(0))];
  }

  /** Joins the pending bytes with `tail`, strips one trailing CR and decodes. */
  private take(tail: Uint8Array): string {
    let bytes: Uint8Array;
    if (this.pendingLength === 0) {
      bytes = tail;
    } else {
      bytes = new Uint8Array(this.pendingLength + tail.length);
      let offset = 0;
      for (const part of this.pending) {
        bytes.set(part, offset);
        offset += part.length;
      }
      bytes.set(tail, offset);
      this.pending = [];
      this.pendingLength = 0;
    }
    if (bytes.length > 0 && bytes[bytes.length - 1] === CR) bytes = bytes.subarray(0, bytes.length - 1);
    return utf8.decode(bytes);
  }
}

/**
 * Serialises one frame: compact JSON, U+2028/U+2029 escaped (still valid JSON, and safe for
 * naive line readers on the other side), terminated by LF.
 */
export function encodeFrame(value: unknown): string {
  const json = JSON.stringify(value);
  if (json === undefined) throw new TypeError("value cannot be serialised as JSON");
  return json.replace(/[\u2028\u2029]/g, (ch) => (ch === "\u2028" ? "\\u2028" : "\\u2029")) + "\n";
}
