//! Where the first plot's engine time goes, natively: for every segment of
//! one stream across all sources, reading its footer, parsing it (the
//! parquet crate's Thrift decode), summarizing its statistics, fetching
//! the payload and decoding the columns a plot asks for; then the preview
//! and the exact envelope as the viewer asks for them. Medians of REPS
//! passes over a warm file, per segment in microseconds; CPU time of this
//! thread (the machine is shared).
//!
//! `cargo bench --bench first_plot -- ARCHIVE [STREAM] [PLOTS] [REPS]`

mod common;

use dendro::read::range::{preview_range, read_range_bounded, RangeRequest, Stats};
use dendro::read::stats::{segment_stats, summarize};
use dendro::read::{describe, segment_bytes};
use dendro::Archive;
use parquet::file::metadata::ParquetMetaDataReader;

/// Runs `f` `reps` times and answers the median CPU time in ms.
fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..reps {
        let t = common::thread_cpu_s();
        last = Some(f());
        times.push((common::thread_cpu_s() - t) * 1e3);
    }
    (common::median(times), last.unwrap())
}

fn main() {
    // `cargo bench` passes `--bench`; the arguments are what follows it.
    let args: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let path = args
        .get(1)
        .expect("usage: first_plot ARCHIVE [STREAM] [PLOTS] [REPS]");
    let stream = args.get(2).map_or("cpu", String::as_str);
    let plots: usize = args.get(3).map_or(8, |s| s.parse().unwrap());
    let reps: usize = args.get(4).map_or(5, |s| s.parse().unwrap());
    let archive = Archive::open(path).unwrap();
    let description = describe(&archive).unwrap();
    let mut records = Vec::new();
    let mut sources = Vec::new();
    for source in &description.sources {
        if let Some(s) = source.streams.iter().find(|s| s.name == stream) {
            sources.push((source.id, s.span().unwrap()));
            let all = archive
                .read_snapshot(|snap| snap.segments(source.id, stream))
                .unwrap();
            records.extend(all);
        }
    }
    println!(
        "{} segments of {stream} in {} sources",
        records.len(),
        sources.len()
    );

    let footers: Vec<Vec<u8>> = records
        .iter()
        .map(|r| {
            archive
                .read_snapshot(|s| {
                    let p = s.segment_payload(r.source_id, &r.stream, r.seq)?;
                    let mut tail = [0u8; 8];
                    p.read_at(p.len() - 8, &mut tail)?;
                    let n = u32::from_le_bytes(tail[..4].try_into().unwrap()) as usize;
                    let mut meta = vec![0u8; n];
                    p.read_at(p.len() - 8 - n, &mut meta)?;
                    Ok(meta)
                })
                .unwrap()
        })
        .collect();
    let footer_bytes: usize = footers.iter().map(Vec::len).sum();
    println!(
        "footers: {} KB on average",
        footer_bytes / footers.len() / 1024
    );

    let n = records.len() as f64;
    let (read_footer, _) = time(reps, || {
        for r in &records {
            archive
                .read_snapshot(|s| {
                    let p = s.segment_payload(r.source_id, &r.stream, r.seq)?;
                    let footer = dendro::segment::read_footer(p.len(), |at, buf| {
                        p.read_at(at, buf).map_err(|e| e.to_string())
                    });
                    Ok(footer.is_ok())
                })
                .unwrap();
        }
    });
    let (parse, metas) = time(reps, || {
        footers
            .iter()
            .map(|f| ParquetMetaDataReader::decode_metadata(f).unwrap())
            .collect::<Vec<_>>()
    });
    {
        use parquet::file::metadata::{ParquetMetaDataOptions, ParquetStatisticsPolicy};
        let skip = ParquetStatisticsPolicy::SkipAll;
        let lean = ParquetMetaDataOptions::new()
            .with_encoding_stats_policy(skip.clone())
            .with_size_stats_policy(skip.clone());
        let (lean_t, _) = time(reps, || {
            footers
                .iter()
                .map(|f| {
                    ParquetMetaDataReader::decode_metadata_with_options(f, Some(&lean)).unwrap()
                })
                .collect::<Vec<_>>()
        });
        let keep: Vec<usize> = (0..10).collect();
        let few = lean
            .clone()
            .with_column_stats_policy(ParquetStatisticsPolicy::skip_except(&keep));
        let (few_t, _) = time(reps, || {
            footers
                .iter()
                .map(|f| {
                    ParquetMetaDataReader::decode_metadata_with_options(f, Some(&few)).unwrap()
                })
                .collect::<Vec<_>>()
        });
        let schema = metas[0].file_metadata().schema_descr_ptr();
        let known = few.clone().with_schema(schema);
        let (known_t, _) = time(reps, || {
            footers
                .iter()
                .map(|f| {
                    ParquetMetaDataReader::decode_metadata_with_options(f, Some(&known)).unwrap()
                })
                .collect::<Vec<_>>()
        });
        println!(
            "parse per segment: all {:.0} us, without encoding and size stats {:.0} us, and statistics of 10 columns {:.0} us, and the schema given {:.0} us",
            parse / n * 1e3,
            lean_t / n * 1e3,
            few_t / n * 1e3,
            known_t / n * 1e3
        );
    }
    let (summ, _) = time(reps, || metas.iter().map(summarize).count());
    let (stats_all, _) = time(reps, || {
        records
            .iter()
            .map(|r| segment_stats(&archive, r).unwrap())
            .collect::<Vec<_>>()
    });
    println!(
        "per segment: read+check+parse footer {:.0} us (parse alone {:.0} us), summarize {:.0} us, segment_stats {:.0} us",
        read_footer / n * 1e3,
        parse / n * 1e3,
        summ / n * 1e3,
        stats_all / n * 1e3
    );

    let schema = dendro::segment::segment_schema(
        &segment_bytes(&archive, records[0].source_id, stream, records[0].seq).unwrap(),
    )
    .unwrap();
    let numeric: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| dendro::read::columns::is_numeric(f.data_type()))
        .map(|f| f.name().clone())
        .collect();
    let picked: Vec<String> = numeric.iter().skip(1).take(plots).cloned().collect();
    println!("{} numeric columns; plotting {:?}", numeric.len(), picked);

    let (fetch, payloads) = time(reps, || {
        records
            .iter()
            .map(|r| segment_bytes(&archive, r.source_id, stream, r.seq).unwrap())
            .collect::<Vec<_>>()
    });
    let payload_bytes: usize = payloads.iter().map(Vec::len).sum();
    let mut with_ts = picked.clone();
    with_ts.push("ts".into());
    let mut fetched = 0usize;
    let (sparse, _) = time(reps, || {
        fetched = 0;
        for r in &records {
            archive
                .read_snapshot(|s| {
                    let p = s.segment_payload(r.source_id, &r.stream, r.seq)?;
                    let bytes = dendro::segment::read_columns(
                        p.len(),
                        |at, buf| {
                            fetched += buf.len();
                            p.read_at(at, buf).map_err(|e| e.to_string())
                        },
                        |_| Some(with_ts.clone()),
                    );
                    Ok(bytes.unwrap().expect("some columns"))
                })
                .unwrap();
        }
    });
    println!(
        "per segment: fetch the footer and {} columns' chunks {:.0} us ({} KB)",
        with_ts.len(),
        sparse / n * 1e3,
        fetched / records.len() / 1024
    );
    let (decode, _) = time(reps, || {
        for p in &payloads {
            dendro::read::range::decode_range_bytes(p.clone(), Some(&picked)).unwrap();
        }
    });
    println!(
        "per segment: fetch payload {:.0} us ({} KB), decode {} columns {:.0} us",
        fetch / n * 1e3,
        payload_bytes / payloads.len() / 1024,
        picked.len(),
        decode / n * 1e3
    );

    for (source, (from, to)) in &sources {
        let (rows, metadata) = archive
            .read_snapshot(|s| {
                Ok((
                    s.live_wal_rows_between(*source, stream, *from, *to)?,
                    s.source(*source)?.source.metadata,
                ))
            })
            .unwrap();
        let typed = dendro::typed::reader_for(&metadata).unwrap().unwrap();
        let (tail, _) = time(reps, || typed.decode_rows(&rows).unwrap());
        println!(
            "source {source}: live tail {} rows, decoded in {tail:.1} ms",
            rows.len()
        );
        let request = RangeRequest {
            source_id: *source,
            stream,
            from: *from,
            to: *to,
            columns: Some(&picked),
            max_points: Some(1200),
            rates: None,
        };
        let stats = |r: &dendro::SegmentRecord| -> dendro::Result<Option<Stats>> {
            Ok(segment_stats(&archive, r)?.map(std::sync::Arc::new))
        };
        let (preview, p) = time(reps, || {
            preview_range(&archive, &request, Some(4096), stats).unwrap()
        });
        let (exact, e) = time(reps, || {
            read_range_bounded(&archive, &request, Some(4096), stats, |r, cols| {
                dendro::read::range::decode_for_range(&archive, r, cols)
            })
            .unwrap()
        });
        println!(
            "source {source}: preview {preview:.1} ms ({} from stats), exact {exact:.1} ms ({} read, {} from stats)",
            p.map_or(0, |p| p.envelope.segments_from_stats),
            e.segments_read,
            e.segments_from_stats
        );
    }
}
