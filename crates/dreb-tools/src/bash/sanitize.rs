//! Output clean-up for the RPC `bash` command: ANSI escapes stripped, control characters removed, and a
//! streaming UTF-8 decoder that never splits a character across chunks.

use std::sync::OnceLock;

use regex::Regex;

fn ansi_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // The pattern of the widely used `ansi-regex` package: CSI / OSC / single-character escapes.
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"[\x1B\x{9B}][\[\]()#;?]*(?:(?:(?:(?:;[-a-zA-Z\d/#&.:=?%@~_]+)*",
            r"|[a-zA-Z\d]+(?:;[-a-zA-Z\d/#&.:=?%@~_]*)*)?\x07)",
            r"|(?:(?:\d{1,4}(?:;\d{0,4})*)?[\dA-PR-TZcf-nq-uy=><~]))"
        ))
        .expect("valid ANSI regex")
    })
}

/// Remove ANSI escape sequences.
pub fn strip_ansi(s: &str) -> String {
    if !s.contains(['\x1B', '\u{9B}']) {
        return s.to_string();
    }
    ansi_re().replace_all(s, "").into_owned()
}

/// Drop control characters other than tab, newline and carriage return, and U+FFF9..U+FFFB.
pub fn sanitize_binary_output(s: &str) -> String {
    s.chars()
        .filter(|&c| {
            let code = c as u32;
            matches!(code, 0x09 | 0x0A | 0x0D)
                || (code > 0x1F && !(0xFFF9..=0xFFFB).contains(&code))
        })
        .collect()
}

/// Decodes a byte stream as UTF-8, carrying an incomplete trailing sequence over to the next chunk; invalid
/// bytes become U+FFFD.
#[derive(Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    pub fn decode(&mut self, chunk: &[u8]) -> String {
        self.pending.extend_from_slice(chunk);
        let mut cut = self.pending.len();
        // Keep back at most 3 bytes of an unfinished multi-byte character.
        for back in 1..=3.min(self.pending.len()) {
            let b = self.pending[self.pending.len() - back];
            if b & 0xC0 == 0x80 {
                continue;
            }
            if b >= 0xC0 {
                let need = if b >= 0xF0 {
                    4
                } else if b >= 0xE0 {
                    3
                } else {
                    2
                };
                if need > back {
                    cut = self.pending.len() - back;
                }
            }
            break;
        }
        let rest = self.pending.split_off(cut);
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending = rest;
        text
    }

    /// Whatever is left at end of stream.
    pub fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

/// The RPC executor's per-chunk clean-up: strip ANSI, sanitise, drop every `\r`.
pub fn clean_chunk(text: &str) -> String {
    sanitize_binary_output(&strip_ansi(text)).replace('\r', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_and_sanitises() {
        assert_eq!(strip_ansi("\x1b[31merror\x1b[0m: x"), "error: x");
        assert_eq!(clean_chunk("a\x07b\r\nc\u{FFFA}\td"), "ab\nc\td");
    }

    #[test]
    fn utf8_stream_keeps_split_characters() {
        let bytes = "héllo€".as_bytes();
        let mut s = Utf8Stream::default();
        let mut out = String::new();
        for b in bytes {
            out.push_str(&s.decode(std::slice::from_ref(b)));
        }
        out.push_str(&s.finish());
        assert_eq!(out, "héllo€");
    }
}
