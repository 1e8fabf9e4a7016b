//! Transports (feature `write`): the format leaves them to the caller.
