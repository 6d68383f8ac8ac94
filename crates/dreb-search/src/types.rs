//! The shapes shared by the scanner, chunkers, index and ranking.

/// What a file is chunked as. Code languages use the declaration chunker, the rest the text chunker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    TypeScript,
    Tsx,
    JavaScript,
    Python,
    Go,
    Rust,
    Java,
    C,
    Cpp,
    GdScript,
    Markdown,
    Yaml,
    Json,
    Toml,
    Plaintext,
}

impl FileType {
    /// The name stored in the index (the reference's spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            FileType::TypeScript => "typescript",
            FileType::Tsx => "tsx",
            FileType::JavaScript => "javascript",
            FileType::Python => "python",
            FileType::Go => "go",
            FileType::Rust => "rust",
            FileType::Java => "java",
            FileType::C => "c",
            FileType::Cpp => "cpp",
            FileType::GdScript => "gdscript",
            FileType::Markdown => "markdown",
            FileType::Yaml => "yaml",
            FileType::Json => "json",
            FileType::Toml => "toml",
            FileType::Plaintext => "plaintext",
        }
    }

    pub fn parse(s: &str) -> Option<FileType> {
        FileType::ALL.into_iter().find(|t| t.as_str() == s)
    }

    pub const ALL: [FileType; 15] = [
        FileType::TypeScript,
        FileType::Tsx,
        FileType::JavaScript,
        FileType::Python,
        FileType::Go,
        FileType::Rust,
        FileType::Java,
        FileType::C,
        FileType::Cpp,
        FileType::GdScript,
        FileType::Markdown,
        FileType::Yaml,
        FileType::Json,
        FileType::Toml,
        FileType::Plaintext,
    ];

    /// Source code (chunked by declarations) rather than text.
    pub fn is_code(self) -> bool {
        !matches!(
            self,
            FileType::Markdown
                | FileType::Yaml
                | FileType::Json
                | FileType::Toml
                | FileType::Plaintext
        )
    }

    /// The type for a file name, by extension (case-insensitive); `None` for files the index skips.
    pub fn detect(file_name: &str) -> Option<FileType> {
        let ext = file_name.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match ext.as_str() {
            "ts" => FileType::TypeScript,
            "tsx" => FileType::Tsx,
            "js" | "mjs" | "cjs" => FileType::JavaScript,
            "py" => FileType::Python,
            "go" => FileType::Go,
            "rs" => FileType::Rust,
            "java" => FileType::Java,
            "c" | "h" => FileType::C,
            "cpp" | "hpp" | "cc" | "cxx" | "hh" | "hxx" => FileType::Cpp,
            "gd" => FileType::GdScript,
            "md" | "mdx" => FileType::Markdown,
            "yml" | "yaml" => FileType::Yaml,
            "json" => FileType::Json,
            "toml" => FileType::Toml,
            "tscn" | "tres" | "godot" | "txt" | "cfg" | "ini" | "env" | "conf" => {
                FileType::Plaintext
            }
            _ => return None,
        })
    }
}

/// The construct a chunk holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkKind {
    Function,
    Method,
    Class,
    Interface,
    Struct,
    Enum,
    Impl,
    Export,
    TypeAlias,
    Module,
    HeadingSection,
    TopLevelKey,
    Paragraph,
    File,
}

impl ChunkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChunkKind::Function => "function",
            ChunkKind::Method => "method",
            ChunkKind::Class => "class",
            ChunkKind::Interface => "interface",
            ChunkKind::Struct => "struct",
            ChunkKind::Enum => "enum",
            ChunkKind::Impl => "impl",
            ChunkKind::Export => "export",
            ChunkKind::TypeAlias => "type_alias",
            ChunkKind::Module => "module",
            ChunkKind::HeadingSection => "heading_section",
            ChunkKind::TopLevelKey => "top_level_key",
            ChunkKind::Paragraph => "paragraph",
            ChunkKind::File => "file",
        }
    }
}

/// A piece of a file, as the chunkers produce it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Relative to the project root, `/`-separated.
    pub file_path: String,
    /// 1-based, inclusive.
    pub start_line: usize,
    pub end_line: usize,
    pub kind: ChunkKind,
    /// The symbol, heading or key; `None` for anonymous pieces.
    pub name: Option<String>,
    pub content: String,
    pub file_type: FileType,
}

/// A chunk as the index stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredChunk {
    pub id: i64,
    pub file_id: i64,
    pub file_path: String,
    pub start_line: i64,
    pub end_line: i64,
    /// Kept as text: an index written by another build may hold kinds this one does not produce.
    pub kind: String,
    pub name: Option<String>,
    pub content: String,
    pub file_type: String,
}

/// The six ranking metrics of one candidate, each in 0..=1 (higher is better).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MetricScores {
    pub bm25: f64,
    pub cosine: f64,
    pub path_match: f64,
    pub symbol_match: f64,
    pub import_graph: f64,
    pub git_recency: f64,
}

impl MetricScores {
    /// `(name, value)` in the reference's order and spelling.
    pub fn named(&self) -> [(&'static str, f64); 6] {
        [
            ("bm25", self.bm25),
            ("cosine", self.cosine),
            ("pathMatch", self.path_match),
            ("symbolMatch", self.symbol_match),
            ("importGraph", self.import_graph),
            ("gitRecency", self.git_recency),
        ]
    }

    pub fn get(&self, metric: usize) -> f64 {
        self.named()[metric].1
    }
}

/// One ranked answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub chunk: StoredChunk,
    pub scores: MetricScores,
    /// 0 = best.
    pub rank: usize,
}
