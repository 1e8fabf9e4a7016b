//! Comparison across sources and windows: each source's clock for the
//! wall-clock alignment (`Archive.clockInput`), the alignment of sources
//! from several archives (`alignSources`), and the pairing of two windows
//! of a stream for a time-shift comparison (`pairShift`). The decisions
//! are [`crate::read::align`]'s and [`crate::read::shift`]'s; this is glue.

use js_sys::{BigInt64Array, Float64Array};
use wasm_bindgen::prelude::*;

use super::{fail, js, whole, JsArchive, JsResult};
use crate::catalog::ClockOffset;
use crate::read::align::{align, clock_input, ClockInput};
use crate::read::shift::{pair, Side};

#[wasm_bindgen(js_class = Archive)]
impl JsArchive {
    /// A source's clock observations for `alignSources`: `{offsets:
    /// BigInt64Array [ts, offset, …], cut}`, at most
    /// `read::align::MAX_OBSERVATIONS` pairs.
    #[wasm_bindgen(js_name = clockInput)]
    pub fn clock_input(&self, source: f64) -> JsResult<JsValue> {
        let source = whole("source", self.archive().file(), source)?;
        let input = clock_input(self.archive(), source, None).map_err(fail)?;
        let flat: Vec<i64> = input
            .offsets
            .iter()
            .flat_map(|o| [o.ts, o.offset_ns])
            .collect();
        Ok(js::Obj::new()
            .set("offsets", BigInt64Array::from(&flat[..]))
            .set("cut", input.cut)
            .build())
    }
}

/// Aligns sources on one wall-clock axis. `offsets[i]` is source i's
/// `clockInput().offsets`, `cut[i]` its `cut`, `spans` two `ts` per
/// source (the compared stream's first and last; `from > to` for a stream
/// without rows). Answers one `{offset_ns, wall_from, wall_to, doubts:
/// [{kind, words}]}` per source, in order.
#[wasm_bindgen(js_name = alignSources)]
pub fn align_sources(
    offsets: js_sys::Array,
    cut: Vec<u8>,
    spans: Vec<i64>,
) -> JsResult<js_sys::Array> {
    let n = offsets.length() as usize;
    if cut.len() != n || spans.len() != 2 * n {
        return Err(js::error(
            "Internal",
            "alignSources: one cut flag and two span ends per source",
        ));
    }
    let inputs: Vec<ClockInput> = (0..n)
        .map(|i| {
            let flat: Vec<i64> = BigInt64Array::from(offsets.get(i as u32)).to_vec();
            ClockInput {
                offsets: flat
                    .chunks_exact(2)
                    .map(|p| ClockOffset {
                        ts: p[0],
                        offset_ns: p[1],
                    })
                    .collect(),
                span: (spans[2 * i] <= spans[2 * i + 1])
                    .then_some((spans[2 * i], spans[2 * i + 1])),
                cut: cut[i] != 0,
            }
        })
        .collect();
    let out = js_sys::Array::new();
    for a in align(&inputs) {
        let doubts = js_sys::Array::new();
        for d in &a.doubts {
            doubts.push(
                &js::Obj::new()
                    .set("kind", d.kind())
                    .set("words", d.words())
                    .build(),
            );
        }
        let (from, to) = match a.wall_span {
            Some((f, t)) => (js::big(f), js::big(t)),
            None => (JsValue::NULL, JsValue::NULL),
        };
        out.push(
            &js::Obj::new()
                .set("offset_ns", js::big(a.offset_ns))
                .set("wall_from", from)
                .set("wall_to", to)
                .set("doubts", doubts)
                .build(),
        );
    }
    Ok(out)
}

/// Window B drawn onto window A's axis (`b_ts + shift`) in `buckets`
/// equal buckets of `[from, to]`, and A − B: see [`crate::read::shift`].
#[wasm_bindgen(js_name = pairShift)]
#[allow(clippy::too_many_arguments)]
pub fn pair_shift(
    from: i64,
    to: i64,
    buckets: u32,
    a_ts: Vec<i64>,
    a_min: Vec<f64>,
    a_max: Vec<f64>,
    b_ts: Vec<i64>,
    b_min: Vec<f64>,
    b_max: Vec<f64>,
    shift: i64,
) -> JsValue {
    let a = Side {
        ts: &a_ts,
        min: &a_min,
        max: &a_max,
    };
    let b = Side {
        ts: &b_ts,
        min: &b_min,
        max: &b_max,
    };
    let p = pair(from, to, buckets.min(1 << 16) as usize, a, b, shift);
    let f = |v: &[f64]| Float64Array::from(v);
    js::Obj::new()
        .set("ts", BigInt64Array::from(&p.ts[..]))
        .set("a_min", f(&p.a_min))
        .set("a_max", f(&p.a_max))
        .set("b_min", f(&p.b_min))
        .set("b_max", f(&p.b_max))
        .set("d_min", f(&p.d_min))
        .set("d_max", f(&p.d_max))
        .build()
}
