//! Segments (format §4): the encoder boundary, where a caller's encoder
//! turns rows into Parquet and dendro checks the answer (`encode.rs`), and
//! decoding, where a segment's footer and pages are checked before the
//! Parquet reader may act on them (`decode.rs`).
//!
//! The seam: this layer is the only one that makes or parses segment
//! bytes. The writer seals through [`materialize`]; readers decode through
//! [`decode_segment`] and its kin, and never write.

// Called on 32-bit targets only (see its docs); tested on every target.
#[cfg_attr(not(target_pointer_width = "32"), allow(dead_code))]
mod byte_arrays;
mod decode;
mod encode;
mod footer;
mod guard;
mod pages;
mod shapes;
mod thrift;
pub mod typed;

pub use decode::{
    arrow_schema, concat, decode_budget, decode_segment, decode_segment_with,
    decode_segment_within, footer_schema, read_columns, read_footer, segment_schema, SchemaKey,
    DECODE_BUDGET_FLOOR,
};
pub use encode::{
    check_encoder, encode_batch, has_parquet_magic, materialize, segment_of_rows, writer_props,
    Segment, SegmentEncoder, PARQUET_MAGIC,
};
