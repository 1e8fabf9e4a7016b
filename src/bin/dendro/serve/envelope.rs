//! The accelerator: `GET ARCHIVE?envelope=1&source=S&stream=N&from=F&to=T&points=P`
//! (with `col=C` and `rate=C` repeated) answers a window's envelope,
//! computed here by the range reader the browser runs in wasm
//! (`dendro::read::range`, the same budget and footer shortcut), so a page
//! served with its archive draws the exact plot from a few kilobytes
//! instead of reading footers and segments by range. Archives offered here
//! say so on every answer (`Dendro-Envelope: 1`); a page that sees another
//! version, or none, reads by range as it would from any server.
//!
//! What one request may cost is bounded ([`Limits`]): the buckets asked
//! for, the segments the window makes the reader decode and their bytes,
//! and the envelopes computed at once. The rest is refused in words, with
//! a status a client can act on: 400 for a request that cannot be read,
//! 413 for a window too costly, 503 while others are computed, 412 when
//! the file is no longer the one the page opened (`If-Match`).

use std::path::Path;
use std::sync::Arc;

use dendro::read::envelope::Envelope;
use dendro::read::range::{decode_for_range, Decoded, RangeReader, RangeRequest};
use dendro::read::range::{Stats, VIEWER_SEGMENT_BUDGET};
use dendro::Archive;

/// The version of the query and the answer's layout; the header every
/// archive answer carries names it.
pub const VERSION: u32 = 1;

/// The header that offers the accelerator, with [`VERSION`] as its value.
pub const HEADER: &str = "Dendro-Envelope";

/// The answer's media type.
pub const MEDIA_TYPE: &str = "application/vnd.dendro.envelope";

/// What one envelope request may cost.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Buckets (points) one answer may have: a chart is a few thousand
    /// pixels wide at most.
    pub points: usize,
    /// Segments one window may make the reader decode (those straddling
    /// a bucket boundary, and those without exact statistics).
    pub decoded: usize,
    /// Payload bytes of those segments.
    pub decoded_bytes: u64,
    /// Envelopes computed at once; a request past them is refused, not
    /// queued, so a burst cannot hold the blocking threads that live
    /// archives' images are taken on.
    pub concurrent: usize,
    /// Columns named in one request.
    pub columns: usize,
    /// Threads one envelope decodes on.
    pub threads: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            points: 4_096,
            decoded: 8_192,
            decoded_bytes: 16 << 30,
            concurrent: 2,
            columns: 64,
            threads: 2,
        }
    }
}

impl Limits {
    /// The limits, narrowed by `DENDRO_SERVE_TEST_ENVELOPE` (`decoded=N`,
    /// `concurrent=N`, `hold_ms=N` separated by commas) in a build with
    /// feature `test-hooks` only, so tests can reach each refusal with a
    /// small archive. `hold_ms` keeps each computation busy that long.
    pub fn from_env() -> (Limits, u64) {
        #[allow(unused_mut)]
        let (mut limits, mut hold) = (Limits::default(), 0u64);
        #[cfg(feature = "test-hooks")]
        if let Ok(value) = std::env::var("DENDRO_SERVE_TEST_ENVELOPE") {
            for part in value.split(',') {
                let Some((k, v)) = part.split_once('=') else {
                    continue;
                };
                let Ok(n) = v.trim().parse::<u64>() else {
                    continue;
                };
                match k.trim() {
                    "decoded" => limits.decoded = n as usize,
                    "concurrent" => limits.concurrent = n as usize,
                    "hold_ms" => hold = n,
                    _ => {}
                }
            }
        }
        (limits, hold)
    }
}

/// A request's window, read from its query.
#[derive(Debug, PartialEq)]
pub struct Query {
    pub source: i64,
    pub stream: String,
    pub from: i64,
    pub to: i64,
    pub points: usize,
    /// Sorted and without repeats, as the browser's engine keeps them.
    pub columns: Option<Vec<String>>,
    pub rates: Option<Vec<String>>,
}

/// Whether a query asks for an envelope (`envelope=` among its pairs).
pub fn asks(query: &str) -> bool {
    query
        .split('&')
        .any(|p| p.split('=').next() == Some("envelope"))
}

/// Reads a query, or says in words what is wrong with it.
pub fn parse(query: &str, limits: &Limits) -> Result<Query, String> {
    if query.len() > 16 << 10 {
        return Err("the query is longer than 16 KiB".into());
    }
    let (mut source, mut stream, mut from, mut to, mut points) = (None, None, None, None, None);
    let (mut version, mut columns, mut rates) = (None, Vec::new(), Vec::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, raw) = pair.split_once('=').unwrap_or((pair, ""));
        let value = super::answer::percent_decoded(raw)
            .ok_or_else(|| format!("the value of {key:?} cannot be decoded"))?;
        let number = |what: &str| -> Result<i64, String> {
            value
                .parse::<i64>()
                .map_err(|_| format!("{what} must be a whole number, not {:?}", cut(&value)))
        };
        match key {
            "envelope" => version = Some(number("envelope")?),
            "source" => source = Some(number("source")?),
            "stream" => stream = Some(value.clone()),
            "from" => from = Some(number("from")?),
            "to" => to = Some(number("to")?),
            "points" => points = Some(number("points")?),
            "col" => columns.push(value.clone()),
            "rate" => rates.push(value.clone()),
            "cols" => {}
            other => return Err(format!("unknown parameter {:?}", cut(other))),
        }
    }
    if version != Some(VERSION as i64) {
        return Err(format!("this server answers envelope={VERSION} only"));
    }
    let missing = |what: &str| format!("{what} is missing");
    let (source, stream) = (
        source.ok_or_else(|| missing("source"))?,
        stream.ok_or_else(|| missing("stream"))?,
    );
    let (from, to) = (
        from.ok_or_else(|| missing("from"))?,
        to.ok_or_else(|| missing("to"))?,
    );
    if from > to {
        return Err(format!("the window ends ({to}) before it starts ({from})"));
    }
    let points = points.ok_or_else(|| missing("points"))?;
    if points < 1 || points as u64 > limits.points as u64 {
        return Err(format!(
            "points must be between 1 and {} (one per pixel column), not {points}",
            limits.points
        ));
    }
    if columns.len() + rates.len() > limits.columns {
        return Err(format!("at most {} columns", limits.columns));
    }
    let sorted = |mut c: Vec<String>| {
        c.sort();
        c.dedup();
        c
    };
    // `cols` (empty) says the column list is given, even when it is empty.
    let listed = !columns.is_empty() || query.split('&').any(|p| p.starts_with("cols"));
    Ok(Query {
        source,
        stream,
        from,
        to,
        points: points as usize,
        columns: listed.then(|| sorted(columns)),
        rates: Some(sorted(rates)).filter(|r| !r.is_empty()),
    })
}

/// At most 80 characters of something a client sent, for a message.
fn cut(text: &str) -> String {
    text.chars().take(80).collect()
}

/// Why an envelope was not computed: an HTTP status and the words.
pub struct Refusal {
    pub status: u16,
    pub text: String,
}

fn refused(status: u16, text: impl Into<String>) -> Refusal {
    Refusal {
        status,
        text: text.into(),
    }
}

/// The window's envelope, as the browser's engine computes it: the same
/// reader, segment budget and footer statistics; the segments to decode
/// are decoded on up to [`Limits::threads`] threads, each with its own
/// connection to the file.
pub fn compute(path: &Path, query: &Query, limits: &Limits) -> Result<Envelope, Refusal> {
    let failed = |e: dendro::Error| refused(500, e.to_string());
    let archive = Archive::open(path).map_err(failed)?;
    let request = RangeRequest {
        source_id: query.source,
        stream: &query.stream,
        from: query.from,
        to: query.to,
        columns: query.columns.as_deref(),
        max_points: Some(query.points),
        rates: query.rates.as_deref(),
    };
    let stats = |record: &dendro::SegmentRecord| -> dendro::Result<Option<Stats>> {
        Ok(dendro::read::stats::segment_stats(&archive, record)?.map(Arc::new))
    };
    let budget = Some(VIEWER_SEGMENT_BUDGET);
    let mut reader = RangeReader::bounded(&archive, &request, budget, stats).map_err(failed)?;
    let mut pending = Vec::new();
    let mut bytes = 0u64;
    while let Some((index, record)) = reader.next_to_decode() {
        bytes = bytes.saturating_add(record.bytes.max(0) as u64);
        pending.push((index, record));
        if pending.len() > limits.decoded || bytes > limits.decoded_bytes {
            return Err(refused(
                413,
                format!(
                    "this window needs more than {} segments ({} MB) decoded; the server decodes at most {} segments or {} MB for one envelope: narrow the window or ask for fewer points",
                    pending.len() - 1,
                    bytes >> 20,
                    limits.decoded,
                    limits.decoded_bytes >> 20
                ),
            ));
        }
    }
    let columns = request.columns;
    let threads = limits
        .threads
        .clamp(1, 8)
        .min(pending.len().div_ceil(4).max(1));
    let decode = |archive: &Archive, (i, r): &(usize, dendro::SegmentRecord)| {
        decode_for_range(archive, r, columns)
            .map(|d| (*i, d))
            .map_err(|e| e.to_string())
    };
    let decoded: Vec<Result<(usize, Decoded), String>> = if threads <= 1 {
        pending.iter().map(|p| decode(&archive, p)).collect()
    } else {
        let share = pending.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = pending
                .chunks(share)
                .map(|part| {
                    scope.spawn(move || match Archive::open(path) {
                        Ok(own) => part.iter().map(|p| decode(&own, p)).collect(),
                        Err(e) => vec![Err(e.to_string())],
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| {
                    h.join()
                        .unwrap_or_else(|_| vec![Err("a decoding thread stopped".to_string())])
                })
                .collect()
        })
    };
    for result in decoded {
        let (index, rows) = result.map_err(|e| refused(500, e))?;
        reader.supply(index, rows);
    }
    Ok(reader.finish())
}

/// The answer's body: one line of JSON (the counts, the column names, the
/// point count), padded with spaces so that the arrays after it start at
/// a multiple of 8 bytes; then the points' timestamps (`i64`), then each
/// column's minima and maxima (`f64`), all little-endian. 800 points of
/// one column are about 19 KB.
pub fn encode(envelope: &Envelope) -> Vec<u8> {
    let names: Vec<&str> = envelope.columns.iter().map(|c| c.name.as_str()).collect();
    let head = serde_json::json!({
        "version": VERSION,
        "points": envelope.ts.len(),
        "columns": names,
        "reduced": envelope.reduced,
        "rows_in_window": envelope.rows_in_window,
        "live_rows_in_window": envelope.live_rows_in_window,
        "segments_read": envelope.segments_read,
        "segments_from_stats": envelope.segments_from_stats,
        "segments_left_out": envelope.segments_left_out,
        "rows_left_out": envelope.rows_left_out,
    })
    .to_string();
    let mut out = head.into_bytes();
    while !(out.len() + 1).is_multiple_of(8) {
        out.push(b' ');
    }
    out.push(b'\n');
    for t in &envelope.ts {
        out.extend_from_slice(&t.to_le_bytes());
    }
    for c in &envelope.columns {
        for v in c.min.iter().chain(&c.max) {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_read_and_its_columns_sorted() {
        let q = parse(
            "envelope=1&source=2&stream=cpu%20load&from=-5&to=9&points=800&col=b&col=a&col=b",
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(q.stream, "cpu load");
        assert_eq!((q.source, q.from, q.to, q.points), (2, -5, 9, 800));
        assert_eq!(q.columns, Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(q.rates, None);
        let all = parse(
            "envelope=1&source=1&stream=s&from=0&to=1&points=1",
            &Limits::default(),
        );
        assert_eq!(all.unwrap().columns, None);
    }

    #[test]
    fn malformed_and_costly_queries_are_refused_in_words() {
        let limits = Limits::default();
        let base = "envelope=1&source=1&stream=s&from=0&to=10";
        for (query, words) in [
            (
                format!("{base}&points=5000"),
                "points must be between 1 and 4096",
            ),
            (format!("{base}&points=0"), "points must be between"),
            (format!("{base}&points=x"), "points must be a whole number"),
            (base.to_string(), "points is missing"),
            (
                "envelope=1&source=1&stream=s&from=9&to=1&points=5".into(),
                "ends (1) before it starts (9)",
            ),
            (
                "envelope=2&source=1&stream=s&from=0&to=1&points=5".to_string(),
                "envelope=1 only",
            ),
            (
                format!("{base}&points=5&from=99999999999999999999"),
                "from must be a whole number",
            ),
            (
                format!("{base}&points=5&evil=1"),
                "unknown parameter \"evil\"",
            ),
            (format!("{base}&points=5&stream=%00"), "cannot be decoded"),
        ] {
            let err = parse(&query, &limits).unwrap_err();
            assert!(err.contains(words), "{query}: {err}");
        }
        let many: String = (0..65).map(|i| format!("&col=c{i}")).collect();
        assert!(parse(&format!("{base}&points=5{many}"), &limits)
            .unwrap_err()
            .contains("at most 64 columns"));
    }

    #[test]
    fn the_body_lays_its_arrays_on_eight_byte_boundaries() {
        let envelope = Envelope {
            rows_in_window: 3,
            live_rows_in_window: 0,
            segments_read: 1,
            segments_from_stats: 0,
            segments_left_out: 0,
            rows_left_out: 0,
            reduced: true,
            ts: vec![1, -2],
            columns: vec![dendro::read::envelope::ColumnEnvelope {
                name: "v".into(),
                min: vec![0.5, f64::NAN],
                max: vec![1.5, f64::NAN],
            }],
        };
        let body = encode(&envelope);
        let line = body.iter().position(|&b| b == b'\n').unwrap() + 1;
        assert_eq!(line % 8, 0);
        assert_eq!(body.len(), line + 2 * 8 * 3);
        assert_eq!(
            i64::from_le_bytes(body[line + 8..line + 16].try_into().unwrap()),
            -2
        );
        let head: serde_json::Value = serde_json::from_slice(&body[..line]).unwrap();
        assert_eq!(head["columns"][0], "v");
    }
}
