//! The full-screen terminal front end.
