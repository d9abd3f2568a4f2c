//! git's own files read by hand, never by running git: the index (for its gitlinks) and
//! configuration files (as git's `config.c` reads them), and the allow-lists of keys the
//! policy and the sandbox judge them by. One reader each, so the policy and the sandbox
//! never disagree about what a file says.

pub(crate) mod allow;
pub(crate) mod config;
pub(crate) mod index;
