//! Sessions on disk: append-only JSONL, list, resume, export.
