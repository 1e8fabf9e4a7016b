//! Hostile segments, written byte by byte (`tests/common/parquet_bytes.rs`):
//! a few hundred bytes whose page headers claim gigabytes, footers whose
//! schema claims `i32::MAX` children or nests ten thousand deep, counts no
//! bytes back. Each is refused with an error naming the cause, before the
//! parquet crate allocates or recurses; none panics, aborts or overflows
//! the stack. A counting allocator measures the largest single allocation
//! each refusal made.
#![cfg(not(target_arch = "wasm32"))]

mod common;
#[path = "common/parquet_bytes.rs"]
mod parquet_bytes;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use dendro::segment::{decode_segment, decode_segment_within, read_footer, segment_schema};
use dendro::{Archive, Error};
use parquet_bytes::{Page, Plan, LZ4_RAW, UNCOMPRESSED};

/// The system allocator, noting the largest request of each thread, and
/// refusing any single request over [`CEILING`]: without the checks the
/// lies below would ask for 2 GiB and more, and on a shared machine the
/// test should abort (a refused allocation aborts) rather than take it.
struct Counting;

const CEILING: usize = 1 << 30;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    static TOTAL: Cell<usize> = const { Cell::new(0) };
}

/// Notes a request of `size` bytes; `false` when it is over the ceiling.
fn note(size: usize) -> bool {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
    let _ = TOTAL.try_with(|t| t.set(t.get().saturating_add(size)));
    size <= CEILING
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !note(layout.size()) {
            return std::ptr::null_mut();
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !note(layout.size()) {
            return std::ptr::null_mut();
        }
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !note(new_size) {
            return std::ptr::null_mut();
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `work` and answers its result with the largest single allocation
/// this thread made meanwhile.
fn largest_allocation<T>(work: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    let out = work();
    (out, LARGEST.with(Cell::get))
}

/// Runs `work` and answers its result with the bytes this thread asked
/// the allocator for meanwhile, freed or not.
fn total_allocation<T>(work: impl FnOnce() -> T) -> (T, usize) {
    TOTAL.with(|t| t.set(0));
    let out = work();
    (out, TOTAL.with(Cell::get))
}

/// No refusal may allocate more than this at once: far above what parsing
/// a few hundred bytes needs, far below what the lies claim.
const SMALL: usize = 1 << 20;

/// Every entry point that parses a segment refuses `bytes`, with an error
/// containing `cause`, and none allocates more than [`SMALL`] at once.
fn refused_everywhere(bytes: &[u8], cause: &str, pages_only: bool) {
    let (decoded, largest) = largest_allocation(|| decode_segment(bytes.to_vec(), None));
    let err = decoded.expect_err("decode refuses");
    assert!(err.contains(cause), "decode: {err}");
    assert!(largest < SMALL, "decode allocated {largest} bytes at once");
    if pages_only {
        // The footer alone is honest: the schema and footer readers,
        // which never look at pages, accept it.
        assert!(segment_schema(bytes).is_ok());
        return;
    }
    let (schema, largest) = largest_allocation(|| segment_schema(bytes));
    assert!(schema.expect_err("schema refuses").contains(cause));
    assert!(largest < SMALL, "schema allocated {largest} bytes at once");
    let (footer, largest) = largest_allocation(|| {
        read_footer(bytes.len(), |at, buf| {
            buf.copy_from_slice(&bytes[at..at + buf.len()]);
            Ok(())
        })
    });
    assert!(footer.expect_err("footer refuses").contains(cause));
    assert!(largest < SMALL, "footer allocated {largest} bytes at once");
}

fn ts(n: i64) -> Vec<i64> {
    (0..n).map(|i| i * 1_000).collect()
}

#[test]
fn hand_made_segments_are_real_parquet() {
    for codec in [UNCOMPRESSED, LZ4_RAW] {
        let bytes = Plan::honest(&ts(20), codec).build();
        let batches = decode_segment(bytes.clone(), None).unwrap();
        assert_eq!(batches[0].num_rows(), 20);
        assert_eq!(segment_schema(&bytes).unwrap().field(0).name(), "ts");
    }
    // A few nested groups are fine too.
    let mut nested = Plan::honest(&ts(3), UNCOMPRESSED);
    nested.nesting = 3;
    assert!(segment_schema(&nested.build()).is_ok());
}

#[test]
fn a_tiny_segment_claiming_two_gib_is_refused_by_its_footer() {
    let mut plan = Plan::honest(&ts(20), LZ4_RAW);
    plan.pages[0].uncompressed = i32::MAX;
    plan.chunk_uncompressed = Some(i64::from(i32::MAX) + 100);
    let bytes = plan.build();
    assert!(bytes.len() < 500, "{} bytes", bytes.len());
    refused_everywhere(&bytes, "more than its codec can produce", false);
}

#[test]
fn a_page_claiming_more_than_its_chunk_declares_is_refused_before_decompressing() {
    // The footer's chunk size is honest; only the page header lies.
    let mut plan = Plan::honest(&ts(20), LZ4_RAW);
    plan.pages[0].uncompressed = i32::MAX;
    plan.chunk_uncompressed = Some(400);
    refused_everywhere(&plan.build(), "more than the 400 its footer declares", true);
}

#[test]
fn a_page_claiming_more_bytes_than_its_chunk_holds_is_refused() {
    let mut plan = Plan::honest(&ts(20), UNCOMPRESSED);
    plan.pages[0].compressed = Some(i32::MAX);
    refused_everywhere(&plan.build(), "left", true);
    plan.pages[0].compressed = Some(-5);
    refused_everywhere(&plan.build(), "claims -5 compressed", true);
}

#[test]
fn a_dictionary_claiming_i32_max_entries_is_refused() {
    let mut plan = Plan::honest(&ts(4), UNCOMPRESSED);
    let dictionary = Page {
        kind: 2,
        uncompressed: 32,
        data: ts(4).iter().flat_map(|v| v.to_le_bytes()).collect(),
        compressed: None,
        num_values: i32::MAX,
    };
    plan.pages.insert(0, dictionary);
    refused_everywhere(&plan.build(), "dictionary values", true);
}

/// A page whose type calls for a header it does not carry: here a v2 data
/// page with a v1 page's header. The parquet crate unwraps the v2 header
/// when it looks ahead to the next page (a panic; an abort in wasm32).
/// The `segment` fuzz target found it; its input is kept in
/// `tests/corpus/segment/v2_page_without_its_v2_header`.
#[test]
fn a_page_without_the_header_its_type_calls_for_is_refused() {
    for codec in [UNCOMPRESSED, LZ4_RAW] {
        let mut plan = Plan::honest(&ts(20), codec);
        plan.pages[0].kind = 3;
        refused_everywhere(&plan.build(), "without the header its type calls for", true);
    }
}

#[test]
fn a_schema_claiming_i32_max_children_is_refused() {
    let mut plan = Plan::honest(&ts(5), UNCOMPRESSED);
    plan.root_children = Some(i32::MAX);
    refused_everywhere(&plan.build(), "claims 2147483647 children", false);
    plan.root_children = Some(-1);
    refused_everywhere(&plan.build(), "claims -1 children", false);
}

#[test]
fn a_schema_nested_ten_thousand_deep_is_refused_without_recursion() {
    let mut plan = Plan::honest(&ts(5), UNCOMPRESSED);
    plan.nesting = 10_000;
    // Without the check the parquet crate converts this schema by
    // recursion: a stack overflow, which aborts every build.
    refused_everywhere(&plan.build(), "nests deeper than 32", false);
}

#[test]
fn thrift_nested_past_the_cap_in_an_unknown_field_is_refused() {
    let mut plan = Plan::honest(&ts(5), UNCOMPRESSED);
    plan.unknown_nesting = 10_000;
    refused_everywhere(&plan.build(), "nests more than", false);
}

#[test]
fn a_list_claiming_more_elements_than_bytes_is_refused() {
    let mut plan = Plan::honest(&ts(5), UNCOMPRESSED);
    plan.row_groups_claimed = Some(i32::MAX as u64);
    refused_everywhere(&plan.build(), "claims 2147483647 elements", false);
}

/// A footer field of the wrong wire type: the parquet crate reads a field
/// it knows as the type its definition gives, whatever the wire says, so a
/// `version` sent as a string would have the crate read on inside the
/// string, where a second footer waits with a schema claiming `i32::MAX`
/// children (a capacity overflow: an abort in wasm32), one the walk over
/// the outer footer never saw. Every known field's wire type is checked
/// before anything parses the footer.
#[test]
fn a_footer_hiding_another_in_a_mistyped_field_is_refused() {
    let mut hidden = Plan::honest(&ts(5), UNCOMPRESSED);
    hidden.root_children = Some(i32::MAX);
    let mut plan = Plan::honest(&ts(5), UNCOMPRESSED);
    plan.hidden = Some(Box::new(hidden));
    refused_everywhere(&plan.build(), "field 1 has wire type 8", false);
}

/// The same in a page header, as the `segment` fuzz target found it
/// (`tests/corpus/segment/page_header_skipping_a_boolean_list`): a v2
/// page's `num_rows` sent as a boolean. The crate took the next byte for
/// its value and read on in the wrong place, into lists it skipped for a
/// minute of CPU; the page walk now refuses the header first.
#[test]
fn a_page_header_with_a_mistyped_field_is_refused_before_the_crate_reads_it() {
    let bytes = include_bytes!("corpus/segment/page_header_skipping_a_boolean_list");
    let err = decode_segment(bytes.to_vec(), None).expect_err("decode refuses");
    assert!(
        err.contains("page 2 of column chunk 1") && err.contains("field 3 has wire type 2"),
        "{err}"
    );
    assert!(segment_schema(bytes).is_ok());
}

/// A row group claiming more rows than its column chunks hold values: the
/// decoder takes the count as given, and where no column is read it makes
/// up empty rows to reach it (the `segment` fuzz target found 12.8 billion
/// claimed in a kilobyte, `tests/corpus/segment/row_group_claiming_billions_of_rows`,
/// which kept a decode busy without end). Every row has an entry in every
/// leaf column, so the smallest chunk bounds the rows.
#[test]
fn a_row_group_claiming_more_rows_than_its_chunks_hold_is_refused() {
    let mut plan = Plan::honest(&ts(5), UNCOMPRESSED);
    plan.group_rows = Some(12_861_765_236);
    refused_everywhere(
        &plan.build(),
        "claims 12861765236 rows but column chunk 0 holds 5 values",
        false,
    );
    plan.group_rows = Some(5);
    assert!(
        decode_segment(plan.build(), None).is_ok(),
        "as many rows as values"
    );
    let bytes = include_bytes!("corpus/segment/row_group_claiming_billions_of_rows");
    let err = segment_schema(bytes).expect_err("refused");
    assert!(err.contains("claims 12861765236 rows"), "{err}");
}

/// An index page among a chunk's pages. The parquet crate passes over one
/// when it reads pages one by one, but a repeated column's look-ahead for
/// the next record steps past its header and not its bytes, and reads on
/// from inside them: the `segment` fuzz target's input
/// (`tests/corpus/segment/index_page_in_a_list_column`) spent 3 s of a
/// release build skipping garbage Thrift before an error. No writer of
/// segments writes index pages; the page walk refuses them.
#[test]
fn an_index_page_is_refused_before_the_crate_looks_past_it() {
    let mut plan = Plan::honest(&ts(5), UNCOMPRESSED);
    plan.pages[0].kind = 1;
    refused_everywhere(&plan.build(), "is an index page", true);
    let bytes = include_bytes!("corpus/segment/index_page_in_a_list_column");
    let err = decode_segment(bytes.to_vec(), None).expect_err("refused");
    assert!(
        err.contains("page 1 of column chunk 1 of row group 0 is an index page"),
        "{err}"
    );
}

/// A column the segment's embedded Arrow schema calls text (Utf8) while
/// its Parquet schema marks it as plain bytes, holding bytes that are not
/// UTF-8 (`tests/corpus/segment/text_in_arrow_schema_over_unmarked_bytes`,
/// from the `segment` fuzz target). The parquet crate checks UTF-8 only
/// for columns the Parquet schema marks, but builds the string array the
/// Arrow schema asks for: a panic in a debug build, unchecked bytes posing
/// as text in a release one. Refused before the crate decodes it, while
/// an honest string column (marked in both) decodes.
#[test]
fn text_over_bytes_the_parquet_schema_does_not_mark_utf8_is_refused() {
    let bytes = include_bytes!("corpus/segment/text_in_arrow_schema_over_unmarked_bytes");
    let err = decode_segment(bytes.to_vec(), None).expect_err("refused");
    assert!(
        err.contains("column \"label\" is text in the segment's Arrow schema but not marked UTF-8"),
        "{err}"
    );
    let text: arrow_array::ArrayRef =
        std::sync::Arc::new(arrow_array::StringArray::from(vec!["alpha", "δέλτα", "✓"]));
    let honest = arrow_array::RecordBatch::try_from_iter([("label", text)]).unwrap();
    let encoded = dendro::segment::encode_batch(&honest).unwrap();
    let back = decode_segment(encoded, None).unwrap();
    assert_eq!(back[0], honest);
}

/// The fuzz finding kept in the corpus: a nullable column's LZ4 v1 page
/// whose compressed body holds a bit-packed run of definition levels
/// longer than its bytes. The file walk cannot see inside it; the decoder's
/// page reader checks the decompressed page, so the decode is a typed
/// error, not a panic its guard caught (which in wasm32 would abort).
#[test]
fn a_few_bytes_of_nulls_claiming_a_quarter_billion_values_are_refused_by_the_decode_budget() {
    // One RLE run of definition level 0 stands for any count of nulls;
    // a page may claim up to i32::MAX of them. Each null still takes a
    // value slot in the decoded column: 2^28 of them ask the decoder for
    // over 2 GiB, in batches small enough that no one allocation shows.
    let bytes = Plan::nulls(1 << 28).build();
    assert!(bytes.len() < 300, "{} bytes", bytes.len());
    assert!(segment_schema(&bytes).is_ok(), "the footer is honest");
    let (decoded, total) = total_allocation(|| decode_segment(bytes.to_vec(), None));
    let err = decoded.expect_err("decode refuses");
    assert!(err.contains("bytes of memory"), "{err}");
    assert!(total < 16 << 20, "decode allocated {total} bytes in all");
}

#[test]
fn honest_nulls_decode_within_the_default_budget_and_not_within_a_smaller_one() {
    let rows = 1 << 20;
    let bytes = Plan::nulls(rows).build();
    let batches = decode_segment(bytes.clone(), None).unwrap();
    let decoded: usize = batches.iter().map(|b| b.num_rows()).sum();
    let nulls: usize = batches.iter().map(|b| b.column(0).null_count()).sum();
    assert_eq!((decoded, nulls), (rows as usize, rows as usize));
    let err = decode_segment_within(bytes, |_| None, 4 << 20).expect_err("over budget");
    assert!(err.contains("more than 4194304 bytes of memory"), "{err}");
}

#[test]
fn a_level_run_past_its_bytes_inside_a_compressed_v1_page_is_refused_without_a_panic() {
    let bytes = include_bytes!("corpus/segment/level_run_in_a_compressed_v1_page");
    let panics = std::panic::catch_unwind(|| decode_segment(bytes.to_vec(), None));
    let err = panics
        .expect("no panic escapes")
        .expect_err("decode refuses");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("column chunk") && err.contains("definition levels needs"),
        "{err}"
    );
    // Its footer alone is honest.
    assert!(segment_schema(bytes).is_ok());
}

/// Through an archive: a hostile segment stored as a BLOB is an error of
/// that segment naming the file, and its footer statistics are simply
/// unknown; the archive stays readable.
#[test]
fn a_hostile_blob_in_an_archive_is_a_segment_error_naming_the_file() {
    let fixture = common::fixtures_dir().join("a_single_sealed.dendro");
    let (_dir, path) = common::copy_fixture(&fixture);
    let mut plan = Plan::honest(&ts(20), LZ4_RAW);
    plan.pages[0].uncompressed = i32::MAX;
    plan.chunk_uncompressed = Some(i64::from(i32::MAX));
    let (source_id, stream, seq): (i64, String, i64) = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let key = conn
            .query_row(
                "SELECT source_id, stream, seq FROM segments ORDER BY seq LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        conn.execute(
            "UPDATE segments SET bytes = ?1 WHERE source_id = ?2 AND stream = ?3 AND seq = ?4",
            rusqlite::params![plan.build(), key.0, key.1, key.2],
        )
        .unwrap();
        key
    };
    let archive = Archive::open(&path).unwrap();
    let read =
        dendro::read::stream_range(&archive, source_id, &stream, i64::MIN, i64::MAX, None).unwrap();
    let record = read.segments.iter().find(|r| r.seq == seq).unwrap();
    let bytes = dendro::read::segment_bytes(&archive, source_id, &stream, seq).unwrap();
    let (outcome, largest) =
        largest_allocation(|| dendro::read::decode(&archive, record, bytes, None));
    match outcome {
        Err(Error::Segment { file, cause, .. }) => {
            assert_eq!(file, path.display().to_string());
            assert!(cause.contains("more than its codec can produce"), "{cause}");
        }
        other => panic!("expected a segment error, got {other:?}"),
    }
    assert!(largest < SMALL, "decode allocated {largest} bytes at once");
    assert_eq!(
        dendro::read::stats::segment_stats(&archive, record).unwrap(),
        None
    );
    assert!(
        dendro::read::describe(&archive).is_ok(),
        "the archive stays usable"
    );
}
