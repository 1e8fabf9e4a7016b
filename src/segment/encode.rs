//! The encoder boundary (format §4 rules 4 and 7): the caller turns rows
//! into a Parquet segment, and dendro checks the answer before trusting
//! it, the same check at seal time and at read time. Also the Parquet
//! settings every segment dendro writes uses.

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use crate::catalog::{Labels, WalRow};
use crate::error::{Error, Result};
use crate::format::keys;

/// Parquet's magic, at both ends of every segment.
pub const PARQUET_MAGIC: &[u8; 4] = b"PAR1";

// A segment is a row of the `segments` table as it is inserted: it is
// defined with its table, and the encoder boundary speaks of it from here.
pub use crate::catalog::Segment;

/// Turns a stream's rows into a segment. The only code that knows what a
/// row means; it must work from the rows alone, because an unrelated reader
/// process calls it to materialize a live tail.
pub trait SegmentEncoder: Send + Sync {
    /// Encodes `rows` (ts-ordered, non-empty) of `stream`. `Ok(None)` means
    /// nothing in them is encodable. The segment may drop a leading run the
    /// encoder cannot decode, but never the last row.
    fn encode(&self, stream: &str, rows: &[WalRow])
        -> std::result::Result<Option<Segment>, String>;

    /// The row encoding's version, stored as the `encoder` metadata key and
    /// checked by readers. `None` opts out of the check.
    fn version(&self) -> Option<String> {
        None
    }
}

/// The writer properties of every segment dendro writes: LZ4_RAW and no
/// dictionaries (dictionary state, not row data, sets peak memory during a
/// seal, and monotonic numeric columns gain nothing from it). Statistics
/// stay at Parquet's default, per column chunk and page, said out loud
/// because the viewer's envelope reads a segment's extremes from them
/// instead of decoding it (`read::stats`).
pub fn writer_props() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::LZ4_RAW)
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::Page)
        .build()
}

/// Writes one record batch as a segment's Parquet bytes with [`writer_props`].
pub fn encode_batch(batch: &RecordBatch) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), Some(writer_props()))
        .map_err(|e| e.to_string())?;
    writer.write(batch).map_err(|e| e.to_string())?;
    writer.close().map_err(|e| e.to_string())?;
    Ok(out)
}

/// The segment an encoder answers for `rows` when `batch` holds all of
/// them, one record per row: the batch's bytes with the rows' count and
/// span, and no caller index.
pub fn segment_of_rows(
    rows: &[WalRow],
    batch: &RecordBatch,
) -> std::result::Result<Segment, String> {
    Ok(Segment {
        bytes: encode_batch(batch)?,
        rows: rows.len() as i64,
        first_ts: rows.first().map_or(0, |r| r.ts),
        last_ts: rows.last().map_or(0, |r| r.ts),
        caller_index: None,
    })
}

/// Runs the encoder over `rows` and checks its answer against them: the
/// same check at seal time and at read time, so a reader and the next seal
/// agree about a tail. A segment must hold between one row and as many as
/// it was given, end at the input's last row, start at one of the input's
/// timestamps, and be Parquet by its magic.
pub fn materialize(
    file: &str,
    encoder: &dyn SegmentEncoder,
    stream: &str,
    rows: &[WalRow],
) -> Result<Option<Segment>> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Ok(None);
    };
    let fail = |message: String| Error::Encoder {
        file: file.to_string(),
        stream: stream.to_string(),
        message,
    };
    let segment = match encoder.encode(stream, rows) {
        Ok(Some(segment)) => segment,
        Ok(None) => return Ok(None),
        Err(message) => return Err(fail(message)),
    };
    if segment.last_ts != last.ts {
        return Err(fail(format!(
            "segment ends at {} but its input ends at {}",
            segment.last_ts, last.ts
        )));
    }
    if segment.first_ts < first.ts || segment.first_ts > segment.last_ts {
        return Err(fail(format!(
            "segment starts at {}, outside its input [{}, {}]",
            segment.first_ts, first.ts, last.ts
        )));
    }
    let at_or_after = rows.len() - rows.partition_point(|r| r.ts < segment.first_ts);
    if rows.get(rows.len() - at_or_after).map(|r| r.ts) != Some(segment.first_ts) {
        return Err(fail(format!(
            "segment starts at {}, which is not one of its input rows",
            segment.first_ts
        )));
    }
    if segment.rows < 1 || segment.rows as usize > at_or_after {
        return Err(fail(format!(
            "segment reports {} rows from {} input rows at or after its first timestamp",
            segment.rows, at_or_after
        )));
    }
    if !has_parquet_magic(&segment.bytes) {
        return Err(fail("segment bytes are not a Parquet file".into()));
    }
    Ok(Some(segment))
}

/// Refuses a reader whose encoder version differs from the one that wrote
/// the source. An encoder reporting no version, or a source with no
/// `encoder` key, is never checked.
pub fn check_encoder(
    file: &str,
    source_id: i64,
    metadata: &Labels,
    encoder: &dyn SegmentEncoder,
) -> Result<()> {
    match (encoder.version(), metadata.get(keys::ENCODER)) {
        (Some(ours), Some(theirs)) if &ours != theirs => Err(Error::EncoderMismatch {
            file: file.to_string(),
            source_id,
            archive: theirs.clone(),
            ours,
        }),
        _ => Ok(()),
    }
}

/// Whether `bytes` start and end with Parquet's magic and are long enough
/// to hold a footer. Cheap: the columns are not looked at.
pub fn has_parquet_magic(bytes: &[u8]) -> bool {
    bytes.len() >= 12 && bytes.starts_with(PARQUET_MAGIC) && bytes.ends_with(PARQUET_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(std::result::Result<Option<Segment>, String>);
    impl SegmentEncoder for Fixed {
        fn encode(&self, _: &str, _: &[WalRow]) -> std::result::Result<Option<Segment>, String> {
            self.0.clone()
        }
        fn version(&self) -> Option<String> {
            Some("v1".into())
        }
    }

    fn rows(ts: &[i64]) -> Vec<WalRow> {
        ts.iter()
            .map(|&ts| WalRow {
                ts,
                wall_offset: 0,
                row: vec![],
            })
            .collect()
    }

    fn seg(rows: i64, first_ts: i64, last_ts: i64) -> Segment {
        Segment {
            bytes: b"PAR1\0\0\0\0\0\0\0\0PAR1".to_vec(),
            rows,
            first_ts,
            last_ts,
            caller_index: None,
        }
    }

    fn check(answer: Segment, input: &[i64]) -> Result<Option<Segment>> {
        materialize("f", &Fixed(Ok(Some(answer))), "s", &rows(input))
    }

    #[test]
    fn an_honest_segment_passes_and_may_drop_a_leading_run() {
        assert!(check(seg(3, 1, 3), &[1, 2, 3]).unwrap().is_some());
        assert!(check(seg(2, 2, 3), &[1, 2, 3]).unwrap().is_some());
    }

    #[test]
    fn a_segment_contradicting_its_input_is_refused() {
        for (answer, input, why) in [
            (seg(3, 1, 2), [1, 2, 3], "must end at the last row"),
            (seg(4, 1, 3), [1, 2, 3], "more rows than given"),
            (seg(0, 1, 3), [1, 2, 3], "no rows"),
            (seg(3, 0, 3), [1, 2, 3], "starts before its input"),
            (seg(1, 5, 3), [1, 2, 5], "first after last"),
            (seg(2, 4, 5), [1, 2, 5], "first is not an input row"),
            (
                seg(3, 2, 3),
                [1, 2, 3],
                "rows beyond those at or after first",
            ),
        ] {
            assert!(check(answer, &input).is_err(), "{why}");
        }
        let mut not_parquet = seg(3, 1, 3);
        not_parquet.bytes = b"hello".to_vec();
        assert!(check(not_parquet, &[1, 2, 3]).is_err());
    }

    #[test]
    fn an_encoder_error_names_the_stream() {
        let err = materialize("f", &Fixed(Err("boom".into())), "cpu", &rows(&[1])).unwrap_err();
        assert!(err.to_string().contains("\"cpu\"") && err.to_string().contains("boom"));
    }

    #[test]
    fn encoder_versions_are_checked_only_when_both_sides_have_one() {
        let enc = Fixed(Ok(None));
        let mut meta = Labels::new();
        assert!(check_encoder("f", 1, &meta, &enc).is_ok());
        meta.insert(keys::ENCODER.into(), "v1".into());
        assert!(check_encoder("f", 1, &meta, &enc).is_ok());
        meta.insert(keys::ENCODER.into(), "v2".into());
        assert!(matches!(
            check_encoder("f", 1, &meta, &enc),
            Err(Error::EncoderMismatch { .. })
        ));
        struct Silent;
        impl SegmentEncoder for Silent {
            fn encode(
                &self,
                _: &str,
                _: &[WalRow],
            ) -> std::result::Result<Option<Segment>, String> {
                Ok(None)
            }
        }
        assert!(check_encoder("f", 1, &meta, &Silent).is_ok());
    }
}
