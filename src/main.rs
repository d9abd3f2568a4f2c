//! The `rein` command.

fn main() {}
