//! An archive written with the self-describing encoder reads whole, live
//! tail included, by a reader with none of the writer's code; counters
//! read as rates continue across the seam between segments and tail.

use std::sync::Arc;

use dendro::read::range::decode_for_range;
use dendro::read::range::{read_range, RangeRequest};
use dendro::typed::{self, Column, ColumnType, Schema, TypedEncoder, Value};
use dendro::write::{SealPolicy, Writer, WriterOptions};
use dendro::{Archive, Labels, WalRow};

use crate::support::fresh;

const S: i64 = 1_000_000_000;

#[test]
fn the_live_tail_is_plotted_after_the_segments_and_rates_cross_the_seam() {
    let (_dir, path) = fresh("typed.dendro");
    let schema = Schema::new(vec![
        Column::new("bytes", ColumnType::U64)
            .counter()
            .unit("bytes"),
        Column::new("level", ColumnType::F64).gauge(),
    ]);
    let encoder = Arc::new(TypedEncoder::new());
    let id = encoder.register(&schema).unwrap();
    let mut metadata = Labels::new();
    let listed = typed::with_schema(&metadata, "net", &schema).unwrap();
    metadata.insert(typed::SCHEMAS_KEY.into(), listed);
    let options = WriterOptions {
        seal_policy: SealPolicy::never(),
        ..WriterOptions::default()
    };
    let writer = Writer::create_with(&path, encoder.clone(), options).unwrap();
    let source = writer.add_source(Labels::new(), metadata).unwrap();
    // A counter growing by 100 a second, reset to 0 at t = 15 s.
    let total = |t: i64| {
        if t < 15 {
            1_000 + 100 * t as u64
        } else {
            100 * (t - 15) as u64
        }
    };
    let row = |t: i64| {
        let values = [Value::U64(total(t)), Value::F64(t as f64)];
        (
            "net".to_string(),
            WalRow {
                ts: t * S,
                wall_offset: 0,
                row: typed::encode_row(id, &schema, &values).unwrap(),
            },
        )
    };
    for t in 0..10 {
        source.wal(vec![row(t)]).unwrap();
    }
    source.seal(["net"]).unwrap();
    for t in 10..20 {
        source.wal(vec![row(t)]).unwrap();
    }
    source.sync().unwrap();

    let archive = Archive::open(&path).unwrap();
    let rates = ["bytes".to_string()];
    let request = RangeRequest {
        source_id: source.id(),
        stream: "net",
        from: i64::MIN,
        to: i64::MAX,
        columns: None,
        max_points: None,
        rates: Some(&rates),
    };
    let envelope = read_range(&archive, &request, |r, c| decode_for_range(&archive, r, c)).unwrap();
    assert_eq!(
        envelope.rows_in_window, 20,
        "ten sealed rows and ten live ones"
    );
    assert_eq!(envelope.live_rows_in_window, 10);
    assert_eq!(envelope.ts, (0..20).map(|t| t * S).collect::<Vec<_>>());
    let bytes = envelope.columns.iter().find(|c| c.name == "bytes").unwrap();
    assert!(bytes.min[0].is_nan(), "the first row has no rate");
    for t in 1..20 {
        let expected = if t == 15 { 0.0 } else { 100.0 };
        assert_eq!(bytes.min[t], expected, "rate at {t} s (15 s is the reset)");
    }
    let level = envelope.columns.iter().find(|c| c.name == "level").unwrap();
    assert_eq!(level.min[12], 12.0, "a gauge is read as it is");

    // Without rates, the totals themselves.
    let raw = RangeRequest {
        rates: None,
        ..request
    };
    let envelope = read_range(&archive, &raw, |r, c| decode_for_range(&archive, r, c)).unwrap();
    let bytes = envelope.columns.iter().find(|c| c.name == "bytes").unwrap();
    assert_eq!(bytes.min[19], total(19) as f64);
    drop(source);
    writer.join().unwrap();
}
