//! The BERT uncased tokenizer (the normaliser, pre-tokeniser and WordPiece model of a `tokenizer.json`, or a
//! `vocab.txt`): clean control characters, space out CJK ideographs, lowercase, strip accents, split at
//! whitespace and punctuation, then greedy longest-match WordPiece with `##` continuations.

use std::collections::HashMap;
use std::path::Path;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::ModelError;

pub struct WordPiece {
    vocab: HashMap<String, u32>,
    unk: u32,
    pub cls: u32,
    pub sep: u32,
    max_word_chars: usize,
}

impl WordPiece {
    /// From a model directory's `tokenizer.json` (WordPiece model) or, failing that, its `vocab.txt`.
    pub fn load(dir: &Path) -> Result<WordPiece, ModelError> {
        let json_path = dir.join("tokenizer.json");
        let vocab: HashMap<String, u32> = if json_path.is_file() {
            let text =
                std::fs::read_to_string(&json_path).map_err(|e| ModelError::io(&json_path, e))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| ModelError::format(&json_path, e.to_string()))?;
            let model = &v["model"];
            if model["type"] != "WordPiece" {
                return Err(ModelError::format(
                    &json_path,
                    "not a WordPiece tokenizer".into(),
                ));
            }
            model["vocab"]
                .as_object()
                .ok_or_else(|| ModelError::format(&json_path, "no vocab".into()))?
                .iter()
                .filter_map(|(k, id)| Some((k.clone(), id.as_u64()? as u32)))
                .collect()
        } else {
            let txt = dir.join("vocab.txt");
            let text = std::fs::read_to_string(&txt).map_err(|e| ModelError::io(&txt, e))?;
            text.lines()
                .enumerate()
                .map(|(i, t)| (t.to_string(), i as u32))
                .collect()
        };
        let id = |t: &str| {
            vocab
                .get(t)
                .copied()
                .ok_or_else(|| ModelError::format(&json_path, format!("vocab lacks {t}")))
        };
        Ok(WordPiece {
            unk: id("[UNK]")?,
            cls: id("[CLS]")?,
            sep: id("[SEP]")?,
            vocab,
            max_word_chars: 100,
        })
    }

    /// Token ids of `text` without special tokens, at most `max` of them.
    pub fn encode(&self, text: &str, max: usize) -> Vec<u32> {
        let mut ids = Vec::new();
        for word in pre_tokenize(&normalize(text)) {
            if ids.len() >= max {
                break;
            }
            self.word_pieces(&word, &mut ids);
        }
        ids.truncate(max);
        ids
    }

    fn word_pieces(&self, word: &str, out: &mut Vec<u32>) {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > self.max_word_chars {
            out.push(self.unk);
            return;
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        let mut buf = String::new();
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while start < end {
                buf.clear();
                if start > 0 {
                    buf.push_str("##");
                }
                buf.extend(&chars[start..end]);
                if let Some(id) = self.vocab.get(&buf) {
                    found = Some(*id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => pieces.push(id),
                None => {
                    out.push(self.unk);
                    return;
                }
            }
            start = end;
        }
        out.extend(pieces);
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || (!c.is_ascii() && !c.is_alphanumeric() && !c.is_whitespace() && !is_combining_mark(c))
}

/// Clean, space CJK, lowercase and strip accents.
fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{FFFD}' || (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) {
            continue;
        }
        if c.is_whitespace() {
            cleaned.push(' ');
        } else if is_cjk(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    cleaned
        .to_lowercase()
        .nfd()
        .filter(|c| !is_combining_mark(*c))
        .collect()
}

/// Words: runs between whitespace, each punctuation character on its own.
fn pre_tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
        } else if is_punctuation(c) {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            words.push(c.to_string());
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_and_splits_like_bert() {
        assert_eq!(
            pre_tokenize(&normalize("Héllo, WORLD!\tfoo_bar()")),
            vec!["hello", ",", "world", "!", "foo", "_", "bar", "(", ")"]
        );
    }

    #[test]
    fn wordpiece_longest_match_and_unknowns() {
        let vocab: HashMap<String, u32> = [
            "[UNK]", "[CLS]", "[SEP]", "play", "##ing", "##s", "un", "##play",
        ]
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), i as u32))
        .collect();
        let wp = WordPiece {
            vocab,
            unk: 0,
            cls: 1,
            sep: 2,
            max_word_chars: 100,
        };
        assert_eq!(
            wp.encode("Playing plays unplay xyz", 10),
            vec![3, 4, 3, 5, 6, 7, 0]
        );
        assert_eq!(wp.encode("playing plays", 2), vec![3, 4]);
    }
}
