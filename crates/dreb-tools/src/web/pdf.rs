//! Basic PDF text extraction for `web_fetch`: the literal strings of the text objects (`BT` ... `ET`), in
//! uncompressed content and, unlike the reference, in `FlateDecode` streams too (most PDFs compress their pages).
//! Fonts with custom encodings (hex strings through a CMap) and scanned pages are not read: they give the failure
//! text.

use std::io::Read;
use std::sync::LazyLock;

use regex::bytes::Regex;

/// The reference's text when nothing was found.
pub const EXTRACTION_FAILED: &str = "[PDF text extraction failed — the PDF may use embedded fonts or image-based \
                                     content that requires OCR]";

/// One inflated stream is read at most this far.
const MAX_STREAM_BYTES: u64 = 16 * 1024 * 1024;

static TEXT_OBJECT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s-u)\bBT\s(.*?)\bET\b").expect("regex"));
static STREAM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s-u)stream\r?\n(.*?)\r?\n?endstream").expect("regex"));

/// The literal strings `(...)` of one text object, with nesting and escapes (`\n`, `\(`, octal `\ddd`, line
/// continuations) decoded; bytes map to Latin-1 characters.
fn literal_strings(block: &[u8], out: &mut Vec<String>) {
    let mut i = 0;
    while i < block.len() {
        if block[i] != b'(' {
            i += 1;
            continue;
        }
        let mut depth = 1;
        let mut s = String::new();
        i += 1;
        while i < block.len() && depth > 0 {
            let c = block[i];
            match c {
                b'\\' if i + 1 < block.len() => {
                    i += 1;
                    let e = block[i];
                    match e {
                        b'n' => s.push('\n'),
                        b'r' => s.push('\r'),
                        b't' => s.push('\t'),
                        b'b' | b'f' => {}
                        b'\r' | b'\n' => {
                            if e == b'\r' && block.get(i + 1) == Some(&b'\n') {
                                i += 1;
                            }
                        }
                        b'0'..=b'7' => {
                            let mut v: u32 = 0;
                            let mut n = 0;
                            while n < 3 && i < block.len() && (b'0'..=b'7').contains(&block[i]) {
                                v = v * 8 + u32::from(block[i] - b'0');
                                i += 1;
                                n += 1;
                            }
                            i -= 1;
                            s.push(char::from_u32(v & 0xff).unwrap_or(' '));
                        }
                        other => s.push(other as char),
                    }
                }
                b'(' => {
                    depth += 1;
                    s.push('(');
                }
                b')' => {
                    depth -= 1;
                    if depth > 0 {
                        s.push(')');
                    }
                }
                other => s.push(other as char),
            }
            i += 1;
        }
        if !s.trim().is_empty() {
            out.push(s);
        }
    }
}

fn inflate(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(data)
        .take(MAX_STREAM_BYTES)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

fn text_objects(content: &[u8], chunks: &mut Vec<String>) {
    for m in TEXT_OBJECT.captures_iter(content) {
        literal_strings(&m[1], chunks);
    }
}

/// The text of a PDF, whitespace collapsed, or [`EXTRACTION_FAILED`].
pub fn extract_text(pdf: &[u8]) -> String {
    let mut chunks = Vec::new();
    for m in STREAM.captures_iter(pdf) {
        let whole = m.get(0).expect("match");
        // The stream's dictionary ends right before the `stream` keyword.
        let dict_start = whole.start().saturating_sub(1024);
        let dict = &pdf[dict_start..whole.start()];
        let dict = match dict.windows(2).rposition(|w| w == b"<<") {
            Some(p) => &dict[p..],
            None => dict,
        };
        let data = &m[1];
        if dict.windows(12).any(|w| w == b"/FlateDecode") {
            if let Some(inflated) = inflate(data) {
                text_objects(&inflated, &mut chunks);
            }
        } else {
            text_objects(data, &mut chunks);
        }
    }
    if chunks.is_empty() {
        // Text objects outside any stream (hand-written or damaged files), as the reference scanned the raw file.
        text_objects(pdf, &mut chunks);
    }
    if chunks.is_empty() {
        return EXTRACTION_FAILED.to_string();
    }
    chunks
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::Write;

    use super::*;

    /// A one-page PDF whose content stream is `content`, compressed when `flate`.
    pub(crate) fn pdf_with(content: &[u8], flate: bool) -> Vec<u8> {
        let (data, filter) = if flate {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(content).unwrap();
            (e.finish().unwrap(), " /Filter /FlateDecode")
        } else {
            (content.to_vec(), "")
        };
        let mut pdf = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n".to_vec();
        pdf.extend_from_slice(
            format!("4 0 obj << /Length {}{filter} >>\nstream\n", data.len()).as_bytes(),
        );
        pdf.extend_from_slice(&data);
        pdf.extend_from_slice(b"\nendstream\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF\n");
        pdf
    }

    const PAGE: &[u8] = b"BT /F1 12 Tf 72 712 Td (Hello \\(PDF\\) world) Tj ET\n\
        BT [(Second) -250 (line\\041)] TJ T* (caf\\351 (nested)) Tj ET";

    #[test]
    fn uncompressed_and_flate_streams_give_their_text() {
        for flate in [false, true] {
            assert_eq!(
                extract_text(&pdf_with(PAGE, flate)),
                "Hello (PDF) world Second line! café (nested)",
                "flate: {flate}"
            );
        }
    }

    #[test]
    fn a_pdf_without_text_objects_reports_the_failure() {
        assert_eq!(
            extract_text(&pdf_with(b"0 0 612 792 re f", true)),
            EXTRACTION_FAILED
        );
        assert_eq!(extract_text(b"not a pdf"), EXTRACTION_FAILED);
    }
}
