//! `@file` arguments and piped stdin of a one-shot run, combined into its first prompt as the reference does:
//! stdin's text (trimmed), then each file, then the first positional message, joined without separators; the
//! other messages follow as prompts of their own. A text file becomes `<file name="/abs">\n{content}\n</file>\n`; a
//! supported image (jpeg, png, gif, webp, by its bytes) is attached (fitted to the inline limits when
//! `images.autoResize` is on) and named by `<file name="/abs">{dimension note}</file>\n`; empty files are skipped.

use std::path::Path;

use dreb_protocol::ImageContent;
use dreb_tools::image::{base64, prepare_image, sniff_image_mime};
use dreb_tools::paths::resolve_read_path;

/// The first prompt's text and images, and the prompts after it.
#[derive(Debug, Clone, PartialEq)]
pub struct OneShotInput {
    pub first: Option<(String, Vec<ImageContent>)>,
    pub rest: Vec<String>,
}

/// What the `@file` arguments add to the first prompt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileParts {
    pub text: String,
    pub images: Vec<ImageContent>,
}

/// Reads every `@file` argument (the `@` already removed) relative to `cwd`. A file that does not exist or cannot
/// be read ends the run: the error is the reference's text.
pub fn read_file_args(
    files: &[String],
    cwd: &Path,
    auto_resize: bool,
) -> Result<FileParts, String> {
    let mut parts = FileParts::default();
    for arg in files {
        let path = resolve_read_path(arg, cwd);
        let name = path.display().to_string();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("Error: File not found: {name}"));
            }
            Err(e) => return Err(format!("Error: Could not read file {name}: {e}")),
        };
        if bytes.is_empty() {
            continue;
        }
        let Some(mime) = sniff_image_mime(&bytes[..bytes.len().min(64)]) else {
            let content = String::from_utf8_lossy(&bytes);
            parts
                .text
                .push_str(&format!("<file name=\"{name}\">\n{content}\n</file>\n"));
            continue;
        };
        let (image, note) = if auto_resize {
            match prepare_image(&bytes, mime) {
                Some(img) => {
                    let note = img.dimension_note().unwrap_or_default();
                    (image_content(img.data, img.mime_type), note)
                }
                None => {
                    parts.text.push_str(&format!(
                        "<file name=\"{name}\">[Image omitted: could not be resized below the inline image size limit.]</file>\n"
                    ));
                    continue;
                }
            }
        } else {
            (
                image_content(base64(&bytes), mime.to_string()),
                String::new(),
            )
        };
        parts.images.push(image);
        parts
            .text
            .push_str(&format!("<file name=\"{name}\">{note}</file>\n"));
    }
    Ok(parts)
}

fn image_content(data: String, mime_type: String) -> ImageContent {
    ImageContent {
        r#type: Default::default(),
        data,
        mime_type,
    }
}

/// Splits the positional arguments into `@file` arguments (without the `@`) and messages.
pub fn split_file_args(positional: &[String]) -> (Vec<String>, Vec<String>) {
    let (files, messages): (Vec<&String>, Vec<&String>) =
        positional.iter().partition(|m| m.starts_with('@'));
    (
        files.into_iter().map(|f| f[1..].to_string()).collect(),
        messages.into_iter().cloned().collect(),
    )
}

/// The reference's initial message: stdin's text, the files' text and the first message, joined; the files'
/// images go with it.
pub fn combine(stdin: Option<String>, files: FileParts, mut messages: Vec<String>) -> OneShotInput {
    let mut first = String::new();
    let mut any = false;
    if let Some(s) = stdin {
        first.push_str(&s);
        any = true;
    }
    if !files.text.is_empty() {
        first.push_str(&files.text);
        any = true;
    }
    if !messages.is_empty() {
        first.push_str(&messages.remove(0));
        any = true;
    }
    OneShotInput {
        first: any.then_some((first, files.images)),
        rest: messages,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8,
        0xCF, 0xC0, 0xF0, 0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00,
        0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    #[test]
    fn text_files_are_wrapped_images_attached_and_empty_files_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "line one\nline two").unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        std::fs::write(dir.path().join("dot.png"), PNG_1X1).unwrap();
        let files: Vec<String> = ["notes.txt", "empty.txt", "dot.png"]
            .map(String::from)
            .into();
        let parts = read_file_args(&files, dir.path(), true).unwrap();
        let root = dir.path().display();
        assert_eq!(
            parts.text,
            format!(
                "<file name=\"{root}/notes.txt\">\nline one\nline two\n</file>\n<file name=\"{root}/dot.png\"></file>\n"
            )
        );
        assert_eq!(parts.images.len(), 1);
        assert_eq!(parts.images[0].mime_type, "image/png");
        assert_eq!(parts.images[0].data, base64(PNG_1X1));
    }

    #[test]
    fn a_missing_file_is_the_references_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_file_args(&["nope.md".into()], dir.path(), true).unwrap_err();
        assert_eq!(
            err,
            format!("Error: File not found: {}/nope.md", dir.path().display())
        );
    }

    #[test]
    fn stdin_files_and_the_first_message_make_the_first_prompt() {
        let (files, messages) =
            split_file_args(&["@a.txt".into(), "explain".into(), "then this".into()]);
        assert_eq!(files, vec!["a.txt".to_string()]);
        let parts = FileParts {
            text: "<file name=\"/a.txt\">\nA\n</file>\n".into(),
            images: Vec::new(),
        };
        let input = combine(Some("piped".into()), parts, messages);
        assert_eq!(
            input.first,
            Some((
                "piped<file name=\"/a.txt\">\nA\n</file>\nexplain".to_string(),
                Vec::new()
            ))
        );
        assert_eq!(input.rest, vec!["then this".to_string()]);
        assert_eq!(combine(None, FileParts::default(), Vec::new()).first, None);
    }
}
