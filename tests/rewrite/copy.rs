//! Copies: segments pass through byte for byte, the catalog is carried,
//! and a selection takes exactly what it names.

use dendro::read::describe;
use dendro::rewrite::{copy, CopySpec, SourceSelector};
use dendro::{Archive, Error};

use crate::common::{copy_fixture, fixtures, manifest::expected_refusal, rows_at};
use crate::support::*;

#[test]
fn a_full_copy_of_every_fixture_has_the_same_blobs_and_describes_the_same_but_for_seq() {
    let mut checked = 0;
    for (path, manifest) in fixtures() {
        if expected_refusal(&manifest).is_some() {
            continue;
        }
        let (dir, input) = copy_fixture(&path);
        let output = dir.path().join("copy.dendro");
        copy(&input, &output, &CopySpec::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(blobs(&input), blobs(&output), "{}", path.display());
        let normalized = |file: &std::path::Path| {
            let mut d = describe(&Archive::open(file).unwrap()).unwrap();
            d.file_bytes = 0;
            for source in &mut d.sources {
                for stream in &mut source.streams {
                    for (i, segment) in stream.segments.iter_mut().enumerate() {
                        segment.seq = i as i64;
                    }
                }
            }
            d
        };
        assert_eq!(
            normalized(&input),
            normalized(&output),
            "{}",
            path.display()
        );
        assert_eq!(contents(&input), contents(&output), "{}", path.display());
        assert_sound(&output);
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} sound fixtures were copied");
}

#[test]
fn seq_is_renumbered_densely_from_zero() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    build(&input, "gaps", |tx, id| {
        for (seq, start) in [(3, 0), (7, 100), (40, 200)] {
            tx.insert_segment(id, "s", seq, &fixture_segment(&[start, start + 1]))
                .unwrap();
        }
    });
    let output = dir.path().join("out.dendro");
    copy(&input, &output, &CopySpec::default()).unwrap();
    let seqs: Vec<i64> = Archive::open(&output)
        .unwrap()
        .read_snapshot(|s| s.segments(1, "s"))
        .unwrap()
        .iter()
        .map(|s| s.seq)
        .collect();
    assert_eq!(seqs, [0, 1, 2]);
    assert_eq!(blobs(&input), blobs(&output));
}

#[test]
fn a_source_without_a_uuid_gets_a_fresh_one_in_each_copy() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    build(&input, "old", |tx, id| {
        tx.insert_segment(id, "s", 0, &fixture_segment(&[1, 2]))
            .unwrap();
    });
    let conn = rusqlite::Connection::open(&input).unwrap();
    conn.execute("UPDATE sources SET uuid = NULL", []).unwrap();
    drop(conn);
    let uuid_of = |path: &std::path::Path| {
        Archive::open(path)
            .unwrap()
            .read_snapshot(|s| s.sources())
            .unwrap()[0]
            .source
            .uuid
            .clone()
    };
    assert_eq!(uuid_of(&input), None);
    let (a, b) = (dir.path().join("a.dendro"), dir.path().join("b.dendro"));
    copy(&input, &a, &CopySpec::default()).unwrap();
    copy(&input, &b, &CopySpec::default()).unwrap();
    let (ua, ub) = (uuid_of(&a).unwrap(), uuid_of(&b).unwrap());
    assert_ne!(ua, ub, "unknown is never claimed to be the same");
    assert!(uuid::Uuid::parse_str(&ua).is_ok());
}

/// Two sources (hosts `a` and `b`), each with streams `x` (segments at
/// 0..=9 and 10..=19, then live rows 20 and 30) and `y` (one segment
/// 0..=19), caller rows under `x` at 0, 15 and 25, clock offsets at 9, 19.
fn two_sources(path: &std::path::Path) -> Vec<String> {
    let mut archive = dendro::ArchiveMut::create(path).unwrap();
    let tx = archive.transaction().unwrap();
    for host in ["a", "b"] {
        let labels = dendro::Labels::from([("host".to_string(), host.to_string())]);
        let id = tx
            .insert_source(&labels, &dendro::Labels::new(), 5)
            .unwrap();
        tx.insert_segment(id, "x", 0, &fixture_segment(&ts_run(0, 10, 1)))
            .unwrap();
        tx.insert_segment(id, "x", 1, &fixture_segment(&ts_run(10, 10, 1)))
            .unwrap();
        tx.insert_segment(id, "y", 0, &fixture_segment(&ts_run(0, 20, 1)))
            .unwrap();
        tx.insert_wal_rows(id, "x", &rows_at(&[19, 20, 30]))
            .unwrap();
        let caller = |ts: i64| dendro::CallerRow {
            ts,
            blob: vec![ts as u8],
        };
        tx.insert_caller_rows(id, "x", &[caller(0), caller(15), caller(25)])
            .unwrap();
        tx.insert_clock_offset(id, 9, 1).unwrap();
        tx.insert_clock_offset(id, 19, 2).unwrap();
    }
    tx.commit().unwrap();
    drop(archive);
    Archive::open(path)
        .unwrap()
        .read_snapshot(|s| s.sources())
        .unwrap()
        .into_iter()
        .map(|s| s.source.uuid.unwrap())
        .collect()
}

#[test]
fn sources_are_selected_by_id_uuid_or_label_and_streams_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    let uuids = two_sources(&input);
    let whole = contents(&input);
    for (n, selector) in [
        SourceSelector::parse("2"),
        SourceSelector::parse(&uuids[1].to_uppercase()),
        SourceSelector::parse("host=b"),
    ]
    .into_iter()
    .enumerate()
    {
        let output = dir.path().join(format!("sel{n}.dendro"));
        let spec = CopySpec {
            sources: vec![selector.clone()],
            streams: vec!["x".into()],
            ..CopySpec::default()
        };
        let report = copy(&input, &output, &spec).unwrap();
        assert_eq!(report.sources, 1, "{selector}");
        let got = contents(&output);
        let source = &got[&uuids[1]];
        assert_eq!(got.len(), 1);
        assert_eq!(source.sealed.keys().collect::<Vec<_>>(), ["x"]);
        assert_eq!(source.sealed["x"], whole[&uuids[1]].sealed["x"]);
        assert_eq!(source.live["x"], whole[&uuids[1]].live["x"]);
        assert_eq!(source.caller_rows, whole[&uuids[1]].caller_rows);
    }
    let nothing = CopySpec {
        sources: vec![SourceSelector::parse("host=zzz")],
        ..CopySpec::default()
    };
    let err = copy(&input, dir.path().join("none.dendro"), &nothing).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    let unknown = CopySpec {
        streams: vec!["nope".into()],
        ..CopySpec::default()
    };
    assert!(matches!(
        copy(&input, dir.path().join("none2.dendro"), &unknown),
        Err(Error::NotFound { .. })
    ));
    assert!(!dir.path().join("none.dendro").exists());
}

#[test]
fn a_time_bound_keeps_a_segment_partly_inside_whole_and_carries_what_lies_inside() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    let uuids = two_sources(&input);
    let output = dir.path().join("bounded.dendro");
    let spec = CopySpec {
        from: Some(12),
        to: Some(25),
        ..CopySpec::default()
    };
    copy(&input, &output, &spec).unwrap();
    let before = blobs(&input);
    let after = blobs(&output);
    let key = (uuids[0].clone(), "x".to_string());
    // x's first segment (0..=9) is outside; its second (10..=19) partly
    // inside and kept whole, with its caller index.
    assert_eq!(after[&key], before[&key][1..]);
    let key = (uuids[0].clone(), "y".to_string());
    assert_eq!(after[&key], before[&key], "0..=19 reaches into the window");
    let got = &contents(&output)[&uuids[0]];
    assert_eq!(
        got.live["x"],
        rows_at(&[20]),
        "live rows inside the window stay live"
    );
    assert_eq!(got.caller_rows["x"], [(15, vec![15]), (25, vec![25])]);
    assert_eq!(got.clock_offsets, [(19, 2)]);
    assert_sound(&output);
}

#[test]
fn a_trim_reencodes_only_the_segments_that_reach_outside_and_drops_their_index() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    let uuids = two_sources(&input);
    let output = dir.path().join("trimmed.dendro");
    let spec = CopySpec {
        sources: vec![SourceSelector::Id(1)],
        from: Some(10),
        to: Some(14),
        trim: true,
        ..CopySpec::default()
    };
    let report = copy(&input, &output, &spec).unwrap();
    assert_eq!(
        report.reencoded, 2,
        "x's 10..=19 and y's 0..=19 reach outside"
    );
    let archive = Archive::open(&output).unwrap();
    let x = archive.read_snapshot(|s| s.segments(1, "x")).unwrap();
    assert_eq!(x.len(), 1);
    assert_eq!((x[0].rows, x[0].first_ts, x[0].last_ts), (5, 10, 14));
    assert!(
        !x[0].caller_index,
        "an index over the untrimmed rows is dropped"
    );
    let ts: Vec<String> = sealed_rows(&archive, 1, "x")
        .iter()
        .map(|r| r["ts"].clone().unwrap())
        .collect();
    assert_eq!(ts, ["10", "11", "12", "13", "14"]);
    let whole = contents(&input);
    let kept: Vec<Row> = whole[&uuids[0]].sealed["x"][10..15].to_vec();
    assert_eq!(
        sealed_rows(&archive, 1, "x"),
        kept,
        "the rows inside, values and all"
    );
    drop(archive);
    assert_sound(&output);
}

#[test]
fn an_existing_output_is_never_replaced_unless_asked_and_never_by_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    two_sources(&input);
    let output = dir.path().join("out.dendro");
    std::fs::write(&output, b"precious").unwrap();
    let err = copy(&input, &output, &CopySpec::default()).unwrap_err();
    assert!(
        matches!(&err, Error::Invalid { file, .. } if file.contains("out.dendro")),
        "{err}"
    );
    assert_eq!(std::fs::read(&output).unwrap(), b"precious");
    let replace = CopySpec {
        replace: true,
        ..CopySpec::default()
    };
    copy(&input, &output, &replace).unwrap();
    assert_eq!(blobs(&input), blobs(&output));
    let err = copy(&input, &input, &replace).unwrap_err();
    assert!(err.to_string().contains("also an input"), "{err}");
    assert_sound(&input);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
