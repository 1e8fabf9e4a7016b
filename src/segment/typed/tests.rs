//! The self-describing encoder's tests: rows round-trip through the
//! layout, schemas listed in metadata build the reader, and damaged rows
//! are errors in words.

use super::*;
use arrow_array::Array;

#[test]
fn a_stream_schema_is_the_union_of_its_listings_in_order() {
    let mut metadata = Labels::new();
    let first = Schema::new(vec![Column::new("a", ColumnType::I64).counter()]);
    let second = Schema::new(vec![
        Column::new("b", ColumnType::F64),
        Column::new("a", ColumnType::I64).counter(),
    ]);
    for schema in [&first, &second] {
        let listed = with_schema(&metadata, "s", schema).unwrap();
        metadata.insert(SCHEMAS_KEY.into(), listed);
    }
    let arrow = stream_schema(&metadata, "s").unwrap().unwrap();
    let names: Vec<&str> = arrow.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["ts", "a", "b"]);
    assert_eq!(arrow.field(1).metadata()[KIND_METADATA], "counter");
    assert!(stream_schema(&metadata, "other").unwrap().is_none());
}

#[test]
fn readers_use_it_only_for_sources_that_name_it() {
    let mut metadata = Labels::new();
    metadata.insert(keys::ENCODER.into(), "someone-else/3".into());
    assert!(
        reader_for(&metadata).is_none(),
        "another encoder's rows stay unread"
    );
    metadata.insert(keys::ENCODER.into(), ENCODER.into());
    let listed = with_schema(&metadata, "cpu", &cpu()).unwrap();
    metadata.insert(SCHEMAS_KEY.into(), listed);
    let encoder = reader_for(&metadata).unwrap().unwrap();
    let id = cpu().id();
    let row = row(
        7,
        id,
        &cpu(),
        &[Value::Null, Value::F64(0.5), Value::Null, Value::Null],
    );
    assert_eq!(encoder.decode_rows(&[row]).unwrap().num_rows(), 1);
    metadata.insert(SCHEMAS_KEY.into(), "{not json".into());
    assert!(
        reader_for(&metadata).unwrap().is_err(),
        "damaged schemas: an error"
    );
}

fn cpu() -> Schema {
    Schema::new(vec![
        Column::new("user", ColumnType::U64).counter().unit("ns"),
        Column::new("load", ColumnType::F64).gauge(),
        Column::new("up", ColumnType::Bool),
        Column::new("state", ColumnType::Utf8),
    ])
}

fn row(ts: i64, id: u64, schema: &Schema, values: &[Value]) -> WalRow {
    WalRow {
        ts,
        wall_offset: 0,
        row: encode_row(id, schema, values).unwrap(),
    }
}

#[test]
fn rows_decode_to_the_values_they_were_given() {
    let encoder = TypedEncoder::new();
    let schema = cpu();
    let id = encoder.register(&schema).unwrap();
    let rows = vec![
        row(
            1,
            id,
            &schema,
            &[
                Value::U64(10),
                Value::F64(0.5),
                Value::Bool(true),
                Value::Str("ok".into()),
            ],
        ),
        row(
            2,
            id,
            &schema,
            &[
                Value::Null,
                Value::F64(1.5),
                Value::Null,
                Value::Str("ünï".into()),
            ],
        ),
    ];
    let batch = encoder.decode_rows(&rows).unwrap();
    assert_eq!(batch.num_rows(), 2);
    let schema = batch.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["ts", "user", "load", "up", "state"]);
    assert_eq!(batch.schema().field(1).metadata()[KIND_METADATA], "counter");
    assert_eq!(batch.schema().field(1).metadata()[UNIT_METADATA], "ns");
    use arrow_array::cast::AsArray;
    let user = batch
        .column(1)
        .as_primitive::<arrow_array::types::UInt64Type>();
    assert_eq!((user.value(0), user.is_null(1)), (10, true));
    assert_eq!(batch.column(4).as_string::<i32>().value(1), "ünï");
    let segment = encoder.encode("cpu", &rows).unwrap().unwrap();
    assert_eq!((segment.rows, segment.first_ts, segment.last_ts), (2, 1, 2));
    let back = crate::segment::decode_segment(segment.bytes, None).unwrap();
    assert_eq!(back[0], batch, "the segment holds exactly the decoded rows");
}

#[test]
fn a_stream_that_gains_a_column_reads_as_the_union_with_nulls() {
    let encoder = TypedEncoder::new();
    let v1 = Schema::new(vec![Column::new("a", ColumnType::I64)]);
    let v2 = Schema::new(vec![
        Column::new("a", ColumnType::I64),
        Column::new("b", ColumnType::I64),
    ]);
    let (id1, id2) = (
        encoder.register(&v1).unwrap(),
        encoder.register(&v2).unwrap(),
    );
    assert_ne!(id1, id2);
    let batch = encoder
        .decode_rows(&[
            row(1, id1, &v1, &[Value::I64(1)]),
            row(2, id2, &v2, &[Value::I64(2), Value::I64(20)]),
        ])
        .unwrap();
    assert_eq!(batch.num_columns(), 3);
    assert!(batch.column(2).is_null(0) && !batch.column(2).is_null(1));
}

#[test]
fn interleaved_schemas_put_each_value_under_its_own_name() {
    let encoder = TypedEncoder::new();
    let v1 = Schema::new(vec![
        Column::new("a", ColumnType::I64),
        Column::new("b", ColumnType::F64),
    ]);
    // The same names in another order, one dropped, one new.
    let v2 = Schema::new(vec![
        Column::new("c", ColumnType::Bool),
        Column::new("b", ColumnType::F64),
    ]);
    let (id1, id2) = (
        encoder.register(&v1).unwrap(),
        encoder.register(&v2).unwrap(),
    );
    let batch = encoder
        .decode_rows(&[
            row(1, id1, &v1, &[Value::I64(1), Value::F64(1.5)]),
            row(2, id2, &v2, &[Value::Bool(true), Value::F64(2.5)]),
            row(3, id1, &v1, &[Value::I64(3), Value::Null]),
            row(4, id2, &v2, &[Value::Null, Value::F64(4.5)]),
        ])
        .unwrap();
    let schema = batch.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["ts", "a", "b", "c"], "first seen, first placed");
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    let a = batch.column(1).as_primitive::<Int64Type>();
    let b = batch.column(2).as_primitive::<Float64Type>();
    let c = batch.column(3).as_boolean();
    let a: Vec<Option<i64>> = a.iter().collect();
    let b: Vec<Option<f64>> = b.iter().collect();
    let c: Vec<Option<bool>> = c.iter().collect();
    assert_eq!(a, [Some(1), None, Some(3), None]);
    assert_eq!(b, [Some(1.5), Some(2.5), None, Some(4.5)]);
    assert_eq!(c, [None, Some(true), None, None]);

    let retyped = Schema::new(vec![Column::new("b", ColumnType::I64)]);
    let id3 = encoder.register(&retyped).unwrap();
    let err = encoder
        .decode_rows(&[
            row(1, id1, &v1, &[Value::I64(1), Value::F64(1.5)]),
            row(2, id3, &retyped, &[Value::I64(2)]),
        ])
        .unwrap_err();
    assert!(err.contains("column \"b\" is"), "{err}");
}

#[test]
fn the_metadata_lists_schemas_readers_build_the_encoder_from() {
    let mut metadata = Labels::new();
    let text = with_schema(&metadata, "cpu", &cpu()).unwrap();
    metadata.insert(SCHEMAS_KEY.into(), text);
    let again = with_schema(&metadata, "cpu", &cpu()).unwrap();
    assert_eq!(&again, &metadata[SCHEMAS_KEY], "a schema is listed once");
    let retyped = Schema::new(vec![Column::new("user", ColumnType::I64)]);
    assert!(with_schema(&metadata, "cpu", &retyped)
        .unwrap_err()
        .contains("one thing"));
    let reader = TypedEncoder::from_metadata([&metadata]).unwrap();
    let id = cpu().id();
    let r = row(
        5,
        id,
        &cpu(),
        &[Value::U64(1), Value::Null, Value::Null, Value::Null],
    );
    assert_eq!(reader.decode_rows(&[r]).unwrap().num_rows(), 1);
    assert!(metadata[SCHEMAS_KEY].contains(&format!("{id:016x}")));
}

#[test]
fn damaged_rows_are_errors_in_words() {
    let encoder = TypedEncoder::new();
    let schema = cpu();
    let id = encoder.register(&schema).unwrap();
    let good = encode_row(
        id,
        &schema,
        &[
            Value::U64(1),
            Value::F64(2.0),
            Value::Bool(false),
            Value::Str("x".into()),
        ],
    )
    .unwrap();
    for cut in 0..good.len() {
        let r = WalRow {
            ts: 9,
            wall_offset: 0,
            row: good[..cut].to_vec(),
        };
        assert!(encoder.decode_rows(&[r]).is_err(), "cut at {cut}");
    }
    let mut long = good.clone();
    long.push(0);
    assert!(encoder
        .decode_rows(&[WalRow {
            ts: 9,
            wall_offset: 0,
            row: long
        }])
        .unwrap_err()
        .contains("past its last value"));
    let mut unknown = good;
    unknown[1] ^= 0xff;
    assert!(encoder
        .decode_rows(&[WalRow {
            ts: 9,
            wall_offset: 0,
            row: unknown
        }])
        .unwrap_err()
        .contains("does not list"));
    assert!(
        encode_row(id, &schema, &[Value::I64(1)]).is_err(),
        "too few values"
    );
    assert!(
        encode_row(
            id,
            &schema,
            &[Value::I64(1), Value::Null, Value::Null, Value::Null]
        )
        .is_err(),
        "wrong type"
    );
}

fn latency() -> Schema {
    Schema::new(vec![
        Column::new("host_up", ColumnType::Bool),
        Column::histogram(
            "latency",
            vec![0.0, 1.0, 10.0, 100.0],
            histogram::Cumulation::Counter,
        )
        .unit("ms"),
    ])
}

#[test]
fn histogram_rows_decode_to_fixed_size_lists_and_survive_a_segment() {
    use arrow_array::cast::AsArray;
    let encoder = TypedEncoder::new();
    let schema = latency();
    let id = encoder.register(&schema).unwrap();
    let rows = vec![
        row(
            1,
            id,
            &schema,
            &[Value::Bool(true), Value::Histogram(vec![1, 2, 3])],
        ),
        row(2, id, &schema, &[Value::Bool(true), Value::Null]),
        row(
            3,
            id,
            &schema,
            &[Value::Null, Value::Histogram(vec![4, 5, u64::MAX])],
        ),
    ];
    let batch = encoder.decode_rows(&rows).unwrap();
    let field = batch.schema().field(2).clone();
    assert_eq!(field.data_type(), &histogram_type(3));
    assert_eq!(field.metadata()[KIND_METADATA], "counter");
    assert_eq!(
        field.metadata()[histogram::BOUNDS_METADATA],
        "[0.0,1.0,10.0,100.0]"
    );
    let lists = batch.column(2).as_fixed_size_list();
    assert!(lists.is_null(1));
    let third = lists.value(2);
    let third = third.as_primitive::<arrow_array::types::UInt64Type>();
    assert_eq!(third.values().to_vec(), [4, 5, u64::MAX]);
    let segment = encoder.encode("http", &rows).unwrap().unwrap();
    let back = crate::segment::decode_segment(segment.bytes, None).unwrap();
    assert_eq!(
        back[0], batch,
        "Parquet keeps the fixed-size lists and their metadata"
    );
}

#[test]
fn the_encoder_refuses_bad_histograms() {
    let bad_edges = Schema::new(vec![Column::histogram(
        "h",
        vec![0.0, 5.0, 5.0],
        histogram::Cumulation::Delta,
    )]);
    let err = TypedEncoder::new().register(&bad_edges).unwrap_err();
    assert!(err.contains("\"h\"") && err.contains("ascend"), "{err}");
    assert!(with_schema(&Labels::new(), "s", &bad_edges).is_err());
    let mut gauge = Column::histogram("h", vec![0.0, 1.0], histogram::Cumulation::Delta);
    gauge.kind = Some(Kind::Gauge);
    assert!(Schema::new(vec![gauge]).check().is_err());
    let mut delta = Column::new("n", ColumnType::U64);
    delta.kind = Some(Kind::Delta);
    assert!(Schema::new(vec![delta])
        .check()
        .unwrap_err()
        .contains("only a histogram"));
    let schema = latency();
    let err = encode_row(1, &schema, &[Value::Null, Value::Histogram(vec![1, 2])]).unwrap_err();
    assert!(
        err.contains("3 buckets") && err.contains("2 counts"),
        "{err}"
    );
    let mut rows = RowEncoder::new(schema.id(), schema).unwrap();
    let h = |c: Vec<u64>| [Value::Null, Value::Histogram(c)];
    rows.encode(&h(vec![1, 2, 3])).unwrap();
    let err = rows.encode(&h(vec![5, 1, 3])).unwrap_err();
    assert!(
        err.contains("bucket 1") && err.contains("not a reset"),
        "{err}"
    );
    // The refused row left the previous one in place: a reset is accepted.
    rows.encode(&h(vec![0, 1, 0])).unwrap();
    rows.encode(&h(vec![0, 1, 9])).unwrap();
}

#[test]
fn a_histogram_keeps_its_edges_for_the_life_of_a_stream() {
    let mut metadata = Labels::new();
    metadata.insert(
        SCHEMAS_KEY.into(),
        with_schema(&metadata, "s", &latency()).unwrap(),
    );
    let other = Schema::new(vec![Column::histogram(
        "latency",
        vec![0.0, 2.0, 10.0, 100.0],
        histogram::Cumulation::Counter,
    )]);
    let err = with_schema(&metadata, "s", &other).unwrap_err();
    assert!(err.contains("bucket edges"), "{err}");
}

#[test]
fn schemas_without_histograms_keep_their_ids() {
    // The id of a schema written before histograms existed: its JSON has
    // no `bounds`, so adding the field changed neither text nor id.
    let old = Schema::new(vec![Column::new("a", ColumnType::I64).counter().unit("ns")]);
    assert_eq!(
        serde_json::to_string(&old).unwrap(),
        r#"{"columns":[{"name":"a","type":"i64","kind":"counter","unit":"ns"}]}"#
    );
}

#[test]
fn a_reader_that_does_not_know_histograms_refuses_the_listing() {
    // What an older reader does with a listing naming a type it lacks:
    // its schema list fails to parse, in words, rather than misreading
    // rows. Shown with a type this reader lacks in turn.
    let mut metadata = Labels::new();
    metadata.insert(
        SCHEMAS_KEY.into(),
        r#"{"s":[{"id":"0000000000000001","columns":[{"name":"x","type":"sketch"}]}]}"#.into(),
    );
    let err = schemas_of(&metadata).unwrap_err();
    assert!(err.contains("sketch"), "{err}");
}
