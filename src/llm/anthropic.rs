//! Anthropic Messages wire format.
