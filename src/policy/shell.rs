//! Parse a command line into the simple commands it would run.
