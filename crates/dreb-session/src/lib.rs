//! Session tree files (v3 JSONL), listing, forking, navigation and HTML export
