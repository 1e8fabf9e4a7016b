//! Combining: equal uuid is one source, merged with no segment twice;
//! equal labels under different uuids are two sources.

use dendro::rewrite::{combine, copy, CopySpec};
use dendro::{Archive, Error};

use crate::common::copy_fixture;
use crate::common::fixtures_dir;
use crate::support::*;

#[test]
fn an_archive_combined_with_itself_is_itself() {
    let (dir, input) = copy_fixture(&fixtures_dir().join("b_multi_source.dendro"));
    let output = dir.path().join("twice.dendro");
    let report = combine(&output, &[&input, &input], false).unwrap();
    let segments = Archive::open(&input)
        .unwrap()
        .read_snapshot(|s| s.all_segments())
        .unwrap()
        .len();
    assert_eq!(report.duplicates, segments, "every segment was in both");
    assert_eq!(report.segments, segments);
    assert_eq!(blobs(&input), blobs(&output));
    assert_eq!(contents(&input), contents(&output));
    assert_sound(&output);
}

#[test]
fn two_halves_of_one_source_combine_into_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    many_small(&input, 10, 5);
    let (early, late) = (
        dir.path().join("early.dendro"),
        dir.path().join("late.dendro"),
    );
    // The halves share the segment that straddles ts 225 (200..=240, kept whole by both).
    let half = |from, to| CopySpec {
        from,
        to,
        ..CopySpec::default()
    };
    copy(&input, &early, &half(None, Some(225))).unwrap();
    copy(&input, &late, &half(Some(225), None)).unwrap();
    let whole = dir.path().join("whole.dendro");
    let report = combine(&whole, &[&late, &early], false).unwrap();
    assert_eq!(report.duplicates, 1);
    assert_eq!(blobs(&input), blobs(&whole));
    assert_eq!(contents(&input), contents(&whole));
    assert_sound(&whole);
}

#[test]
fn equal_labels_with_different_uuids_stay_two_sources() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.dendro"), dir.path().join("b.dendro"));
    for path in [&a, &b] {
        build(path, "same-name", |tx, id| {
            tx.insert_segment(id, "s", 0, &fixture_segment(&[1, 2, 3]))
                .unwrap();
        });
    }
    let output = dir.path().join("both.dendro");
    let report = combine(&output, &[&a, &b], false).unwrap();
    assert_eq!((report.sources, report.duplicates), (2, 0));
    let mut expected = contents(&a);
    expected.extend(contents(&b));
    assert_eq!(contents(&output), expected);
}

#[test]
fn two_copies_holding_different_rows_over_one_span_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    many_small(&input, 4, 5);
    let other = dir.path().join("other.dendro");
    copy(&input, &other, &CopySpec::default()).unwrap();
    // Rewrite one segment of the copy with different bytes over the same span.
    let conn = rusqlite::Connection::open(&other).unwrap();
    let replacement = custom_segment(&ts_run(50, 5, 10), "ns", None);
    conn.execute(
        "UPDATE segments SET bytes = ?1 WHERE seq = 1",
        [&replacement.bytes],
    )
    .unwrap();
    drop(conn);
    let output = dir.path().join("both.dendro");
    let err = combine(&output, &[&input, &other], false).unwrap_err();
    assert!(
        matches!(&err, Error::Invalid { message, .. } if message.contains("repeat rows")),
        "{err}"
    );
    assert!(!output.exists());
}
