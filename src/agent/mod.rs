//! The agent core: the op loop and the turn loop. Knows nothing about terminals.
