//! Server-sent events framing (CRLF, comments, multi-line data, event names).
