//! Histogram columns read exactly: each row's counts for its own interval
//! (cumulative rows differenced with the reset rule of
//! [`crate::typed::histogram::step`]), quantiles of summed counts, and the
//! heatmap, whose every pixel column is the sum of the interval counts of
//! the rows it covers, so zooming out never loses a tail.
//!
//! **Which rows count.** Only rows whose time lies in the window. A
//! cumulative row's interval counts are its difference from the row
//! before it. For a heatmap that row may lie before the window (its
//! pieces are read with a lead-in, [`super::window::read_window_led`]):
//! the window's first row then counts in full, so a pixel column holds the
//! same counts whatever window it is drawn in. Without a row before it (a
//! region's statistics depend on the region alone, and the stream's
//! first row has none) the first cumulative row is a baseline that adds no
//! counts. A per-interval histogram's first row counts in full. A row
//! whose buckets go back without a reset is a problem named by stream,
//! segment and row; it adds nothing and becomes the baseline of the next
//! row, so one bad row is one problem.
//!
//! **Quantile rule.** For `q` in `(0, 1]` over counts of total `n > 0`: the
//! upper edge of the first bucket at which the running count reaches
//! `⌈q·n⌉` (at least 1). It is never below the true quantile of the values
//! counted (every value lies below its bucket's upper edge), and is exact
//! to a bucket. The "max" line is the upper edge of the highest non-empty
//! bucket. No counts: no quantile.

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::Array;
use arrow_schema::{DataType, Field};

use crate::read::window::{each_batch, Piece, Problems};
use crate::typed::histogram::{check_bounds, step_into, Cumulation, BOUNDS_METADATA};
use crate::typed::{KIND_METADATA, UNIT_METADATA};

/// A histogram column as its segments describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramColumn {
    /// Its name.
    pub name: String,
    /// Its bucket edges (bucket `i` is `[bounds[i], bounds[i + 1])`).
    pub bounds: Vec<f64>,
    /// Running totals or per-interval counts.
    pub cumulation: Cumulation,
    /// Its unit, when given.
    pub unit: Option<String>,
}

impl HistogramColumn {
    /// How many buckets.
    pub fn buckets(&self) -> usize {
        self.bounds.len() - 1
    }
}

/// The histogram `field` holds: `Ok(None)` for a field that does not claim
/// to be one (no `dendro.bounds`), an error in words for one that claims
/// it and is malformed (bad edges, kind, or an Arrow type other than a
/// fixed-size list of one `UInt64` per bucket).
pub fn histogram_of(field: &Field) -> Result<Option<HistogramColumn>, String> {
    let Some(text) = field.metadata().get(BOUNDS_METADATA) else {
        return Ok(None);
    };
    let name = field.name();
    let bounds: Vec<f64> = serde_json::from_str(text)
        .map_err(|e| format!("histogram column {name:?}: its bucket edges are not a list: {e}"))?;
    check_bounds(&bounds).map_err(|e| format!("histogram column {name:?}: {e}"))?;
    let cumulation = match field.metadata().get(KIND_METADATA).map(String::as_str) {
        Some("counter") => Cumulation::Counter,
        Some("delta") => Cumulation::Delta,
        other => {
            return Err(format!(
                "histogram column {name:?} is of kind {other:?}, not counter or delta"
            ))
        }
    };
    let k = bounds.len() - 1;
    match field.data_type() {
        DataType::FixedSizeList(item, size)
            if item.data_type() == &DataType::UInt64 && *size as usize == k => {}
        other => {
            return Err(format!(
                "histogram column {name:?} has {k} buckets but holds {other}, not {k} UInt64 \
                 counts per row"
            ))
        }
    }
    Ok(Some(HistogramColumn {
        name: name.clone(),
        bounds,
        cumulation,
        unit: field.metadata().get(UNIT_METADATA).cloned(),
    }))
}

/// Calls `each(ts, counts)` with the interval counts of every row of the
/// histogram `column` in `[from, to]`, in order (see the module's rules).
/// With `lead_in`, a cumulative row before `from` is the baseline of the
/// next (it is never counted); without, rows before `from` are not read.
/// Returns the column as the first segment holding it describes it, `None`
/// when no piece has it. A batch whose column is malformed or whose edges
/// differ from the first is a problem of its first row, and is skipped.
pub fn each_interval(
    pieces: &[Piece],
    stream: &str,
    column: &str,
    (from, to): (i64, i64),
    lead_in: bool,
    problems: &mut Problems,
    mut each: impl FnMut(i64, &[u64]),
) -> Option<HistogramColumn> {
    let mut spec: Option<HistogramColumn> = None;
    // The previous row is read in place (the pieces outlive the pass) and
    // each interval is differenced into one buffer: no row allocates.
    let mut previous: Option<&[u64]> = None;
    let mut delta: Vec<u64> = Vec::new();
    each_batch(pieces, stream, problems, |slice, problems| {
        let schema = slice.batch.schema();
        let Ok(c) = schema.index_of(column) else {
            return;
        };
        let found = match histogram_of(schema.field(c)) {
            Ok(Some(found)) => found,
            Ok(None) => {
                let e = format!("column {column:?} is not a histogram here");
                problems.push(slice.problem(stream, 0, e));
                return;
            }
            Err(e) => {
                problems.push(slice.problem(stream, 0, e));
                return;
            }
        };
        match &spec {
            Some(s) if s.bounds != found.bounds || s.cumulation != found.cumulation => {
                let e = format!(
                    "histogram column {column:?} has other bucket edges or kind here than in \
                     the window's first segment holding it"
                );
                problems.push(slice.problem(stream, 0, e));
                return;
            }
            Some(_) => {}
            None => spec = Some(found),
        }
        let k = spec.as_ref().map_or(0, HistogramColumn::buckets);
        let cumulative = spec.as_ref().map(|s| s.cumulation) == Some(Cumulation::Counter);
        let lists = slice.batch.column(c).as_fixed_size_list();
        let values = lists.values().as_primitive::<UInt64Type>();
        // A null row's counts may be nulls themselves; a row with a value
        // must have every count.
        let holes = values.nulls().filter(|n| n.null_count() > 0);
        let counts = values.values();
        for (i, &ts) in slice.times.iter().enumerate() {
            let before = ts < from && lead_in && cumulative;
            if !(before || (from..=to).contains(&ts)) || lists.is_null(i) {
                continue;
            }
            let start = lists.value_offset_at(i);
            let Some(row) = counts.get(start..start + k) else {
                continue;
            };
            if holes.is_some_and(|n| (start..start + k).any(|j| n.is_null(j))) {
                if !before {
                    let e = format!("histogram column {column:?} has a null count in this row");
                    problems.push(slice.problem(stream, i, e));
                }
                continue;
            }
            if before {
                // A baseline alone: what it differs from its own previous
                // row by is outside the window, and not this read's to judge.
                previous = Some(row);
                continue;
            }
            if !cumulative {
                each(ts, row);
                continue;
            }
            if let Some(before) = previous {
                match step_into(before, row, &mut delta) {
                    Ok(_) => each(ts, &delta),
                    Err(e) => {
                        let e = format!("histogram column {column:?}: {e}");
                        problems.push(slice.problem(stream, i, e));
                    }
                }
            }
            previous = Some(row);
        }
    });
    spec
}

/// The quantile `q` of `counts` over `bounds` by the module's rule, or
/// `None` when nothing was counted.
pub fn quantile(counts: &[u64], bounds: &[f64], q: f64) -> Option<f64> {
    let total: u128 = counts.iter().map(|&c| u128::from(c)).sum();
    if total == 0 {
        return None;
    }
    let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u128).clamp(1, total);
    let mut running = 0u128;
    for (i, &c) in counts.iter().enumerate() {
        running += u128::from(c);
        if running >= rank {
            return bounds.get(i + 1).copied();
        }
    }
    None
}

/// The upper edge of the highest non-empty bucket, `None` when all are empty.
pub fn max_bucket(counts: &[u64], bounds: &[f64]) -> Option<f64> {
    counts
        .iter()
        .rposition(|&c| c > 0)
        .and_then(|i| bounds.get(i + 1).copied())
}

/// The quantiles the viewer draws and region statistics report.
pub const QUANTILES: [(&str, f64); 4] =
    [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)];

/// The most pixel columns a heatmap has.
pub const MAX_PIXELS: usize = 8192;
/// The most cells (pixel columns × buckets) a heatmap has: 32 MiB of counts.
pub const MAX_CELLS: usize = 4 << 20;

/// A heatmap of a histogram column over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    /// The window, inclusive, in nanoseconds.
    pub from: i64,
    /// See `from`.
    pub to: i64,
    /// Pixel columns: column `p` covers `[from + p·w, from + (p+1)·w)` with
    /// `w = (to − from + 1) / pixels` nanoseconds.
    pub pixels: usize,
    /// The column.
    pub column: HistogramColumn,
    /// Summed interval counts, pixel-major: bucket `b` of pixel column `p`
    /// at `p · buckets + b`.
    pub counts: Vec<u64>,
    /// Per pixel column: whether any row's interval counts landed in it
    /// (absent is not zero).
    pub present: Vec<bool>,
    /// Per pixel column: the sum of its counts.
    pub totals: Vec<u64>,
    /// Per quantile of [`QUANTILES`], one value per pixel column, NaN where
    /// it counted nothing.
    pub lines: Vec<Vec<f64>>,
    /// Per pixel column, the upper edge of its highest non-empty bucket
    /// (NaN where it counted nothing).
    pub max: Vec<f64>,
    /// Rows whose counts were summed.
    pub rows: u64,
    /// Rows that could not be used.
    pub problems: Problems,
}

impl Heatmap {
    /// A pixel column's width in seconds: what its counts are divided by
    /// to give a rate per second.
    pub fn pixel_seconds(&self) -> f64 {
        (self.to as f64 - self.from as f64 + 1.0) / self.pixels as f64 / 1e9
    }
}

/// Checks a heatmap's size before anything is allocated: a window that is
/// not empty, at least one and at most [`MAX_PIXELS`] pixel columns.
pub fn check_heatmap_request(from: i64, to: i64, pixels: usize) -> Result<(), String> {
    if from > to {
        return Err(format!("the window ends ({to}) before it starts ({from})"));
    }
    if pixels == 0 || pixels > MAX_PIXELS {
        return Err(format!(
            "a heatmap has 1 to {MAX_PIXELS} pixel columns, not {pixels}"
        ));
    }
    Ok(())
}

/// The heatmap of histogram `column` of `stream` over `[from, to]` in
/// `pixels` columns, from the window's `pieces` ([`super::window::read_window`]).
/// Refuses, in words, a hostile size ([`check_heatmap_request`], more than
/// [`MAX_CELLS`] cells) and a column that is no histogram.
pub fn heatmap(
    pieces: &[Piece],
    stream: &str,
    column: &str,
    (from, to): (i64, i64),
    pixels: usize,
) -> Result<Heatmap, String> {
    check_heatmap_request(from, to, pixels)?;
    let span = (to as i128 - from as i128) + 1;
    let mut problems = Problems::default();
    let mut counts: Vec<u64> = Vec::new();
    let mut present = vec![false; pixels];
    let mut rows = 0u64;
    let mut refused: Option<String> = None;
    let spec = each_interval(
        pieces,
        stream,
        column,
        (from, to),
        true,
        &mut problems,
        |ts, row| {
            if refused.is_some() {
                return;
            }
            if counts.is_empty() {
                if pixels.saturating_mul(row.len()) > MAX_CELLS {
                    refused = Some(format!(
                        "{pixels} pixel columns of {} buckets is over {MAX_CELLS} cells",
                        row.len()
                    ));
                    return;
                }
                counts = vec![0; pixels * row.len()];
            }
            let p = (((ts as i128 - from as i128) * pixels as i128) / span) as usize;
            let p = p.min(pixels - 1);
            for (cell, &c) in counts[p * row.len()..].iter_mut().zip(row) {
                *cell = cell.saturating_add(c);
            }
            present[p] = true;
            rows += 1;
        },
    );
    if let Some(refused) = refused {
        return Err(refused);
    }
    let column = spec.ok_or_else(|| {
        format!("stream {stream:?} has no histogram column {column:?} in this window")
    })?;
    summed(column, (from, to), pixels, counts, present, rows, problems)
}

/// The heatmap of a window no row of `column` lies in (a gap of the
/// stream, or before or after it): every pixel column absent. The column
/// is described by the stream's other segments, which the caller read.
pub fn empty_heatmap(
    column: HistogramColumn,
    (from, to): (i64, i64),
    pixels: usize,
) -> Result<Heatmap, String> {
    check_heatmap_request(from, to, pixels)?;
    let present = vec![false; pixels];
    summed(
        column,
        (from, to),
        pixels,
        Vec::new(),
        present,
        0,
        Problems::default(),
    )
}

/// A heatmap from its summed `counts` (empty: none counted), with the
/// totals and quantile lines of each pixel column.
fn summed(
    column: HistogramColumn,
    (from, to): (i64, i64),
    pixels: usize,
    mut counts: Vec<u64>,
    present: Vec<bool>,
    rows: u64,
    problems: Problems,
) -> Result<Heatmap, String> {
    let k = column.buckets();
    if counts.is_empty() {
        if pixels.saturating_mul(k) > MAX_CELLS {
            return Err(format!(
                "{pixels} pixel columns of {k} buckets is over {MAX_CELLS} cells"
            ));
        }
        counts = vec![0; pixels * k];
    }
    let per_pixel = |p: usize| &counts[p * k..(p + 1) * k];
    let totals = (0..pixels)
        .map(|p| per_pixel(p).iter().fold(0u64, |a, &c| a.saturating_add(c)))
        .collect();
    let lines = QUANTILES
        .iter()
        .map(|&(_, q)| {
            (0..pixels)
                .map(|p| quantile(per_pixel(p), &column.bounds, q).unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    let max = (0..pixels)
        .map(|p| max_bucket(per_pixel(p), &column.bounds).unwrap_or(f64::NAN))
        .collect();
    Ok(Heatmap {
        from,
        to,
        pixels,
        column,
        counts,
        present,
        totals,
        lines,
        max,
        rows,
        problems,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_rule_takes_the_upper_edge_where_the_count_is_reached() {
        let bounds = [0.0, 1.0, 2.0, 4.0];
        // Ten values: 5 in [0,1), 4 in [1,2), 1 in [2,4).
        let counts = [5, 4, 1];
        assert_eq!(
            quantile(&counts, &bounds, 0.5),
            Some(1.0),
            "rank 5 is in the first bucket"
        );
        assert_eq!(
            quantile(&counts, &bounds, 0.51),
            Some(2.0),
            "rank 6 is in the second"
        );
        assert_eq!(quantile(&counts, &bounds, 0.9), Some(2.0));
        assert_eq!(quantile(&counts, &bounds, 0.91), Some(4.0));
        assert_eq!(
            quantile(&counts, &bounds, 0.0),
            Some(1.0),
            "at least rank 1"
        );
        assert_eq!(quantile(&[0, 0, 0], &bounds, 0.5), None);
        assert_eq!(max_bucket(&[0, 3, 0], &bounds), Some(2.0));
        assert_eq!(max_bucket(&[0, 0, 0], &bounds), None);
        // Counts past u64 in total do not overflow.
        assert_eq!(quantile(&[u64::MAX, u64::MAX, 1], &bounds, 1.0), Some(4.0));
    }

    #[test]
    fn a_field_claiming_to_be_a_histogram_must_be_one() {
        let field = |ty: DataType, bounds: &str, kind: &str| {
            Field::new("h", ty, true).with_metadata(
                [
                    (BOUNDS_METADATA.to_string(), bounds.to_string()),
                    (KIND_METADATA.to_string(), kind.to_string()),
                ]
                .into_iter()
                .collect::<std::collections::HashMap<_, _>>(),
            )
        };
        let good = crate::typed::histogram_type(2);
        assert!(histogram_of(&field(good.clone(), "[0,1,2]", "counter"))
            .unwrap()
            .is_some());
        assert!(histogram_of(&Field::new("x", DataType::Int64, true))
            .unwrap()
            .is_none());
        for (ty, bounds, kind, cause) in [
            (good.clone(), "[0,1,2,3]", "counter", "holds"),
            (good.clone(), "[0,2,1]", "counter", "ascend"),
            (good.clone(), "[0,1,2]", "gauge", "kind"),
            (good, "zero", "delta", "not a list"),
            (DataType::Int64, "[0,1,2]", "delta", "holds"),
        ] {
            let err = histogram_of(&field(ty, bounds, kind)).unwrap_err();
            assert!(err.contains(cause), "{err}");
        }
    }
}
