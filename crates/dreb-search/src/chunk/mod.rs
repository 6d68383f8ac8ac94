//! Splitting files into chunks: code by declarations ([`code`]), text by its format's boundaries ([`text`]).

pub mod code;
pub mod text;

use crate::types::{Chunk, FileType};

/// Chunk one file's content.
pub fn chunk_file(content: &str, file_path: &str, file_type: FileType) -> Vec<Chunk> {
    if file_type.is_code() {
        code::chunk_code(content, file_path, file_type)
    } else {
        text::chunk_text(content, file_path, file_type)
    }
}
