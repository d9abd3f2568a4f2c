//! OpenAI-compatible Chat Completions wire format.
