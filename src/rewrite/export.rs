//! Export for query engines (not yet built).
