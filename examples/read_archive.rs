//! Read an archive: describe it from its catalog, then read each stream's
//! window (sealed segments decoded to Arrow, the live tail materialized),
//! and verify it. Opening is read-only: this never writes the file, and it
//! can run while a writer appends to it.
//!
//! ```sh
//! cargo run --example write_archive -- host.dendro
//! cargo run --example read_archive -- host.dendro
//! ```

use dendro::read::{self, Tail};
use dendro::Archive;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: read_archive ARCHIVE.dendro")?;
    let archive = Archive::open(&path)?;

    // The catalog alone: sources, streams, segments, live tails. No
    // segment is read, so this is cheap however large the archive is.
    let description = read::describe(&archive)?;
    for source in &description.sources {
        println!(
            "source {} {:?} ({})",
            source.id,
            source.source.labels,
            if source.source.complete {
                "complete"
            } else {
                "open or interrupted"
            }
        );
        for stream in &source.streams {
            println!(
                "  {}: {} segments, {} sealed rows, {} live rows",
                stream.name,
                stream.segments.len(),
                stream.sealed_rows,
                stream.live_rows
            );

            // A time window in nanoseconds; here, everything. The segments
            // that reach into it come back as catalog entries, and their
            // bytes are fetched only when asked for.
            let window =
                read::stream_range(&archive, source.id, &stream.name, i64::MIN, i64::MAX, None)?;
            for segment in &window.segments {
                let bytes = read::segment_bytes(&archive, source.id, &stream.name, segment.seq)?;
                // Decoded to Arrow record batches (every column; pass
                // `Some(&names)` to read only some).
                let batches = read::decode(&archive, segment, bytes, None)?;
                let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                let columns: Vec<String> = batches
                    .first()
                    .map(|b| {
                        b.schema()
                            .fields()
                            .iter()
                            .map(|f| f.name().clone())
                            .collect()
                    })
                    .unwrap_or_default();
                println!(
                    "    segment {}: {rows} rows, columns {columns:?}",
                    segment.seq
                );
            }

            // Rows not sealed yet. The self-describing encoder's rows are
            // readable by anyone; another encoder's need that encoder
            // (`stream_range`'s last argument), and are reported unread,
            // never as missing.
            match window.tail {
                Tail::Empty => println!("    no live tail"),
                Tail::Materialized(tail) => println!("    live tail: {} rows", tail.rows),
                Tail::Unread(span) => {
                    println!("    live tail not readable without its encoder: {span:?}")
                }
            }
        }
    }

    // Every problem in one pass; `sound` when there is none.
    let report = archive.verify()?;
    println!(
        "verify: {}",
        if report.sound {
            "sound"
        } else {
            "problems found"
        }
    );
    Ok(())
}
