//! A measurement, not a test (ignored; it asserts nothing about speed):
//! the cost of placing segments in a replica, fresh and re-applied, for
//! one stream of many small segments. `SEGMENTS=4000 cargo test --test
//! replicate placement_cost -- --ignored --nocapture` prints the medians
//! of five rounds (`docs/measurements/2026-12-07-replica-placement.md`).

use std::time::Instant;

use crate::common::{rows_at, FixtureEncoder, FIXTURE_ENCODER_VERSION};
use crate::support::{apply_stream, catch_up_stream};

#[test]
#[ignore]
fn measure_placing_many_segments_fresh_and_again() {
    let n: i64 = std::env::var("SEGMENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000);
    let dir = tempfile::tempdir().unwrap();
    let origin = dir.path().join("o.dendro");
    let enc = FixtureEncoder::default();
    let mut archive = dendro::ArchiveMut::create(&origin).unwrap();
    let tx = archive.transaction().unwrap();
    let mut meta = dendro::Labels::new();
    meta.insert("encoder".into(), FIXTURE_ENCODER_VERSION.into());
    let labels = [("host".to_string(), "m".to_string())].into();
    let id = tx.insert_source(&labels, &meta, 1_000).unwrap();
    for seq in 0..n {
        let seg = dendro::segment::materialize("t", &enc, "cpu", &rows_at(&[seq * 2, seq * 2 + 1]))
            .unwrap()
            .unwrap();
        tx.insert_segment(id, "cpu", seq, &seg).unwrap();
    }
    tx.commit().unwrap();
    drop(archive);
    let stream = catch_up_stream(&origin);
    let mut times = Vec::new();
    for round in 0..5 {
        let replica = dir.path().join(format!("r{round}.dendro"));
        let start = Instant::now();
        apply_stream(&stream, &replica);
        let fresh = start.elapsed();
        let start = Instant::now();
        apply_stream(&stream, &replica);
        times.push((fresh.as_secs_f64(), start.elapsed().as_secs_f64()));
    }
    let mut fresh: Vec<f64> = times.iter().map(|t| t.0).collect();
    let mut again: Vec<f64> = times.iter().map(|t| t.1).collect();
    fresh.sort_by(f64::total_cmp);
    again.sort_by(f64::total_cmp);
    eprintln!(
        "MEASURE segments={n} fresh_median_s={:.3} reapply_median_s={:.3} all={times:?}",
        fresh[2], again[2]
    );
}
