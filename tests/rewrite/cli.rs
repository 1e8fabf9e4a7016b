//! The rewrite commands of `dendro`: help, refusals with exit code 2,
//! and outputs never overwritten without --force.
