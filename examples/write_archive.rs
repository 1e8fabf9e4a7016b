//! Write an archive with the self-describing encoder: two streams of one
//! host, a gauge and a counter, sealed into a Parquet segment halfway and
//! left with a live tail at the end, then the source finalized. The schema
//! travels in the archive, so any reader (the `read_archive` example, the
//! `dendro` CLI, the browser viewer) decodes every row without this code.
//!
//! ```sh
//! cargo run --example write_archive -- host.dendro
//! cargo run --example read_archive -- host.dendro
//! ```

use dendro::typed::{self, Column, ColumnType, Schema, TypedEncoder, Value};
use dendro::write::Writer;
use dendro::{Labels, WalRow};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: write_archive OUT.dendro")?;

    // One schema per stream. A column's kind says how to plot it: a gauge
    // as it is, a counter (a running total) as a rate per second.
    let cpu = Schema::new(vec![
        Column::new("busy", ColumnType::F64).gauge().unit("%"),
        Column::new("runnable", ColumnType::I64).gauge(),
    ]);
    let net = Schema::new(vec![Column::new("rx_bytes", ColumnType::U64)
        .counter()
        .unit("B")]);

    // The encoder learns the schemas (each gets an id rows refer to), and
    // the source's metadata records them, which is what lets any reader
    // decode the rows later.
    let encoder = TypedEncoder::new();
    let cpu_id = encoder.register(&cpu)?;
    let net_id = encoder.register(&net)?;
    let mut metadata = Labels::new();
    let schemas = typed::with_schema(&metadata, "cpu", &cpu)?;
    metadata.insert(typed::SCHEMAS_KEY.into(), schemas);
    let schemas = typed::with_schema(&metadata, "net", &net)?;
    metadata.insert(typed::SCHEMAS_KEY.into(), schemas);

    // One writer per file (a second is refused with `Error::InUse`); it
    // owns a thread, and each source gets a handle.
    let writer = Writer::create(&path, encoder)?;
    let labels = Labels::from([("host".into(), "web-01".into())]);
    let source = writer.add_source(labels, metadata)?;

    let rows = 2_000u32;
    let mut last_ts = i64::MIN;
    let mut rx_bytes = 0u64;
    for i in 0..rows {
        // Timestamps come from the source's clock and must increase within
        // a stream; a real agent would sleep between ticks.
        let (now, wall_offset) = source.clock().now();
        let ts = now.max(last_ts + 1);
        last_ts = ts;
        let phase = f64::from(i) / 120.0;
        rx_bytes += 1_500 + u64::from(i % 7) * 300;
        let cpu_row = typed::encode_row(
            cpu_id,
            &cpu,
            &[
                Value::F64(50.0 + 30.0 * phase.sin()),
                Value::I64(i64::from(i % 5)),
            ],
        )?;
        let net_row = typed::encode_row(net_id, &net, &[Value::U64(rx_bytes)])?;
        // One call is one transaction: when it returns, both rows are on
        // disk and visible to every reader.
        source.wal(vec![
            (
                "cpu".into(),
                WalRow {
                    ts,
                    wall_offset,
                    row: cpu_row,
                },
            ),
            (
                "net".into(),
                WalRow {
                    ts,
                    wall_offset,
                    row: net_row,
                },
            ),
        ])?;
        if i == rows / 2 {
            // Seal what is live so far into one Parquet segment per stream.
            // (Without this call a `SealPolicy` seals by rows, bytes or age.)
            source.seal(["cpu", "net"])?;
        }
    }

    // The second half stays live: readers see it as the live tail. Finalize
    // records the last clock observation and marks the source complete.
    let mut last = source.clock().offset_now();
    last.ts = last.ts.max(last_ts);
    source.finalize(last)?;
    writer.join()?;
    println!("wrote {rows} ticks of cpu and net to {path}");
    Ok(())
}
