//! The JS `Archive` class's exact answers over a window: `regionStats`
//! (statistics of a region from its raw rows) and `heatmap` (a histogram
//! column summed per pixel column), shaped as `RegionStats` and `Heatmap`
//! of www/src/engine/types.ts. The computing is
//! [`crate::read::region`]'s and [`crate::read::distribution`]'s.

use js_sys::{Float64Array, Uint8Array};
use wasm_bindgen::prelude::*;

use super::js::{big, Obj};
use super::{cached, describe_segment, fail, normalized, noting, range_key, whole, CACHE};
use super::{JsArchive, JsResult};
use crate::catalog::SegmentRecord;
use crate::error::Error;
use crate::read::distribution::{empty_heatmap, heatmap, histogram_of, HistogramColumn, QUANTILES};
use crate::read::range::decode_for_range;
use crate::read::region::region_stats;
use crate::read::window::{read_window, read_window_led, Piece, Problems};
use crate::typed::histogram::Cumulation;

#[wasm_bindgen(js_class = Archive)]
impl JsArchive {
    /// `RegionStats` of the stream over `[from, to]` (nanoseconds,
    /// inclusive), of `columns` when given, else of every numeric and
    /// histogram column.
    #[wasm_bindgen(js_name = regionStats)]
    pub fn region_stats(
        &self,
        source: f64,
        stream: &str,
        from: i64,
        to: i64,
        columns: Option<Vec<String>>,
    ) -> JsResult<JsValue> {
        let columns = normalized(columns);
        let pieces = self.window_pieces(source, stream, (from, to), columns.as_deref(), false)?;
        let stats = region_stats(&pieces, stream, columns.as_deref(), (from, to))
            .map_err(|message| self.invalid(message))?;
        let column_stats = js_sys::Array::new();
        for c in &stats.columns {
            let opt = |v: Option<f64>| v.map_or(JsValue::NULL, JsValue::from_f64);
            column_stats.push(
                &Obj::new()
                    .set("name", c.name.as_str())
                    .set(
                        "kind",
                        c.kind.as_deref().map_or(JsValue::NULL, JsValue::from_str),
                    )
                    .set("count", c.count as f64)
                    .set("min", opt(c.min))
                    .set("max", opt(c.max))
                    .set("mean", opt(c.mean))
                    .set("p50", opt(c.p50))
                    .set("p99", opt(c.p99))
                    .set("last_minus_first", opt(c.last_minus_first))
                    .set("increase", opt(c.increase))
                    .set("mean_rate", opt(c.mean_rate))
                    .set("integral", opt(c.integral))
                    .build(),
            );
        }
        let histograms = js_sys::Array::new();
        for h in &stats.histograms {
            let counts: Vec<f64> = h.counts.iter().map(|&c| c as f64).collect();
            let mut obj = Obj::new()
                .set("name", h.column.name.as_str())
                .set("histogram", histogram_info(&h.column))
                .set("rows", h.rows as f64)
                .set("counts", Float64Array::from(&counts[..]))
                .set("total", h.total as f64);
            for ((name, _), q) in QUANTILES.iter().zip(&h.quantiles) {
                obj = obj.set(name, q.map_or(JsValue::NULL, JsValue::from_f64));
            }
            let max = h.max_bucket.map_or(JsValue::NULL, JsValue::from_f64);
            histograms.push(&obj.set("max_bucket", max).build());
        }
        let empty = stats
            .empty_message()
            .map_or(JsValue::NULL, |m| JsValue::from_str(&m));
        Ok(with_problems(
            Obj::new()
                .set("stream", stream)
                .set("from", big(from))
                .set("to", big(to))
                .set("rows", stats.rows as f64)
                .set("empty", empty)
                .set("columns", column_stats)
                .set("histograms", histograms),
            &stats.problems,
        ))
    }

    /// `Heatmap` of histogram `column` of the stream over `[from, to]` in
    /// `pixels` pixel columns.
    pub fn heatmap(
        &self,
        source: f64,
        stream: &str,
        column: &str,
        from: i64,
        to: i64,
        pixels: u32,
    ) -> JsResult<JsValue> {
        // Refused before anything is read.
        crate::read::distribution::check_heatmap_request(from, to, pixels as usize)
            .map_err(|message| self.invalid(message))?;
        let wanted = [column.to_string()];
        let pieces = self.window_pieces(source, stream, (from, to), Some(&wanted), true)?;
        let window = (from, to);
        let map = match pieces.iter().any(|p| !p.batches.is_empty()) {
            true => heatmap(&pieces, stream, column, window, pixels as usize),
            // A window no segment overlaps (a gap, a URL opened into
            // one): empty, in the buckets the stream's schema gives it.
            false => match self.histogram_column(source, stream, column)? {
                Some(spec) => empty_heatmap(spec, window, pixels as usize),
                None => Err(format!(
                    "stream {stream:?} has no histogram column {column:?}"
                )),
            },
        }
        .map_err(|message| self.invalid(message))?;
        let empty = (map.rows == 0).then(|| {
            format!("stream {stream:?} has no rows of {column:?} between {from} and {to} ns")
        });
        let seconds = map.pixel_seconds();
        let counts: Vec<f64> = map.counts.iter().map(|&c| c as f64).collect();
        let rates: Vec<f64> = counts.iter().map(|&c| c / seconds).collect();
        let present: Vec<u8> = map.present.iter().map(|&p| u8::from(p)).collect();
        let totals: Vec<f64> = map.totals.iter().map(|&c| c as f64).collect();
        let mut lines = Obj::new();
        for ((name, _), line) in QUANTILES.iter().zip(&map.lines) {
            lines = lines.set(name, Float64Array::from(&line[..]));
        }
        let lines = lines.set("max", Float64Array::from(&map.max[..]));
        Ok(with_problems(
            Obj::new()
                .set("from", big(from))
                .set("to", big(to))
                .set("pixels", map.pixels as u32)
                .set("buckets", map.column.buckets() as u32)
                .set("histogram", histogram_info(&map.column))
                .set("pixel_seconds", seconds)
                .set("counts", Float64Array::from(&counts[..]))
                .set("rates", Float64Array::from(&rates[..]))
                .set("present", Uint8Array::from(&present[..]))
                .set("totals", Float64Array::from(&totals[..]))
                .set("lines", lines.build())
                .set("rows", map.rows as f64)
                .set(
                    "empty",
                    empty.map_or(JsValue::NULL, |m| JsValue::from_str(&m)),
                ),
            &map.problems,
        ))
    }
}

impl JsArchive {
    /// The decoded pieces of a window, segments through the shared cache;
    /// with `lead_in`, the row before it too ([`read_window_led`]).
    fn window_pieces(
        &self,
        source: f64,
        stream: &str,
        window: (i64, i64),
        columns: Option<&[String]>,
        lead_in: bool,
    ) -> JsResult<Vec<Piece>> {
        let file = self.archive.file();
        let source = whole("source", file, source)?;
        self.require_stream(source, stream)?;
        let decode = |record: &SegmentRecord, columns: Option<&[String]>| {
            cached(range_key(self.cache_id, record, columns), || {
                noting(
                    || describe_segment(file, record.source_id, &record.stream, record.seq),
                    || decode_for_range(&self.archive, record, columns),
                )
            })
        };
        // The window's segments count toward the cache's working window
        // (src/read/cache.rs): kept for the next read of it.
        CACHE.with(|c| c.borrow_mut().begin_window());
        let pieces = if lead_in {
            read_window_led(&self.archive, source, stream, window, columns, decode)
        } else {
            read_window(&self.archive, source, stream, window, columns, decode)
        };
        CACHE.with(|c| c.borrow_mut().end_window());
        pieces.map_err(fail)
    }

    /// Histogram `column` as the stream's schema describes it (its first
    /// segment's footer, or the self-describing encoder's schema when
    /// nothing is sealed); `None` when it has no such histogram.
    fn histogram_column(
        &self,
        source: f64,
        stream: &str,
        column: &str,
    ) -> JsResult<Option<HistogramColumn>> {
        let file = self.archive.file();
        let source = whole("source", file, source)?;
        let listing = self.listing()?;
        let probed = noting(
            || describe_first(file, source, stream),
            || crate::read::probe_listed(&self.archive, source, stream, Some(&listing)),
        );
        let schema = match probed.map_err(fail)? {
            Some((_, Ok(schema))) => Some(schema),
            Some((_, Err(_))) => None,
            None => {
                let metadata = self
                    .archive
                    .read_snapshot(|s| s.source(source))
                    .map_err(fail)?
                    .source
                    .metadata;
                crate::typed::stream_schema(&metadata, stream)
                    .ok()
                    .flatten()
                    .map(std::sync::Arc::new)
            }
        };
        let field = schema.as_ref().and_then(|s| s.field_with_name(column).ok());
        Ok(field.and_then(|f| histogram_of(f).ok().flatten()))
    }

    /// A refused request as a JS error naming the archive.
    fn invalid(&self, message: String) -> JsValue {
        fail(Error::Invalid {
            file: self.archive.file().to_string(),
            message,
        })
    }
}

/// What a trap while reading the stream's first footer names.
fn describe_first(file: &str, source: i64, stream: &str) -> String {
    format!("the footer of the first segment of stream {stream:?} (source {source}) of {file}")
}

/// `HistogramInfo` of types.ts.
pub(super) fn histogram_info(c: &HistogramColumn) -> JsValue {
    let cumulation = match c.cumulation {
        Cumulation::Counter => "counter",
        Cumulation::Delta => "delta",
    };
    Obj::new()
        .set(
            "bounds",
            c.bounds
                .iter()
                .map(|&b| JsValue::from_f64(b))
                .collect::<js_sys::Array>(),
        )
        .set("cumulation", cumulation)
        .set(
            "unit",
            c.unit.as_deref().map_or(JsValue::NULL, JsValue::from_str),
        )
        .build()
}

/// `obj` with `problems` and `problems_left_out` (`RowProblem` of types.ts).
fn with_problems(obj: Obj, problems: &Problems) -> JsValue {
    let listed = js_sys::Array::new();
    for p in &problems.listed {
        listed.push(
            &Obj::new()
                .set("stream", p.stream.as_str())
                .set(
                    "segment",
                    p.segment
                        .map_or(JsValue::NULL, |s| JsValue::from_f64(s as f64)),
                )
                .set("row", p.row as f64)
                .set("ts", big(p.ts))
                .set("message", p.message.as_str())
                .build(),
        );
    }
    obj.set("problems", listed)
        .set("problems_left_out", problems.left_out as f64)
        .build()
}
