//! A realistic demo archive (placeholder while the writer is built).
