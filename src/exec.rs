//! Headless front end: `rein exec`.
