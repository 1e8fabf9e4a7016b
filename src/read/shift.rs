//! Time-shift comparison: window B of a stream drawn onto window A's axis,
//! and the difference A − B as a series of its own.
//!
//! Values are paired by bucket, never by nearest timestamp: A's window is
//! cut into the same equal buckets the envelope reader uses
//! ([`super::envelope`]), B's points are moved by the shift onto A's axis,
//! and each side's points that land in one bucket are folded to that
//! bucket's min and max. Where both sides have a value in a bucket the
//! difference is `A.min − B.min` and `A.max − B.max` (equal, and the exact
//! difference of two rows, when each side has one row there); where either
//! has none it is a gap (NaN). Both envelopes come from the engine over
//! equally long windows with the same point budget, so one bucket holds at
//! most a bucket's worth of each.

use super::envelope::{bucket_bounds, bucket_of};

/// Points of one side as the engine answered them (row times, or bucket
/// starts), with each point's min and max; NaN where a point has none.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// One timestamp per point, ascending.
    pub ts: &'a [i64],
    /// Per point, the smallest value.
    pub min: &'a [f64],
    /// Per point, the largest value.
    pub max: &'a [f64],
}

/// Both windows on A's axis, bucket by bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    /// The start of each bucket on A's axis.
    pub ts: Vec<i64>,
    /// A's min and max per bucket.
    pub a_min: Vec<f64>,
    /// A's max per bucket.
    pub a_max: Vec<f64>,
    /// B's min per bucket, shifted onto A's axis.
    pub b_min: Vec<f64>,
    /// B's max per bucket.
    pub b_max: Vec<f64>,
    /// `a_min − b_min`; NaN where either is missing.
    pub d_min: Vec<f64>,
    /// `a_max − b_max`; NaN where either is missing.
    pub d_max: Vec<f64>,
}

/// Pairs `a` (times on A's axis, window `[from, to]`) with `b` (its own
/// times; `b.ts + shift` is on A's axis) in `buckets` equal buckets.
/// Points outside the window are left out. `buckets` of 0 gives nothing.
pub fn pair(from: i64, to: i64, buckets: usize, a: Side<'_>, b: Side<'_>, shift: i64) -> Paired {
    if buckets == 0 || from > to {
        return Paired {
            ts: Vec::new(),
            a_min: Vec::new(),
            a_max: Vec::new(),
            b_min: Vec::new(),
            b_max: Vec::new(),
            d_min: Vec::new(),
            d_max: Vec::new(),
        };
    }
    let bounds = bucket_bounds((from, to), buckets);
    let fold = |side: Side<'_>, shift: i64| {
        let mut lo = vec![f64::NAN; buckets];
        let mut hi = vec![f64::NAN; buckets];
        let mut cursor = 0;
        let n = side.ts.len().min(side.min.len()).min(side.max.len());
        for i in 0..n {
            let t = side.ts[i].saturating_add(shift);
            if t < from || t > to {
                continue;
            }
            let k = bucket_of(&bounds, t, &mut cursor);
            // f64::min and max skip NaN, so a missing value adds nothing.
            lo[k] = lo[k].min(side.min[i]);
            hi[k] = hi[k].max(side.max[i]);
        }
        (lo, hi)
    };
    let (a_min, a_max) = fold(a, 0);
    let (b_min, b_max) = fold(b, shift);
    let diff = |x: &[f64], y: &[f64]| -> Vec<f64> { x.iter().zip(y).map(|(x, y)| x - y).collect() };
    Paired {
        ts: bounds[..buckets].to_vec(),
        d_min: diff(&a_min, &b_min),
        d_max: diff(&a_max, &b_max),
        a_min,
        a_max,
        b_min,
        b_max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_at_the_same_offsets_pair_exactly_and_a_missing_side_is_a_gap() {
        // A: rows at 0, 10, 20, 30; B a day later at the same offsets,
        // without its row at +20.
        let day = 86_400_000_000_000i64;
        let a = Side {
            ts: &[0, 10, 20, 30],
            min: &[1.0, 2.0, 3.0, 4.0],
            max: &[1.0, 2.0, 3.0, 4.0],
        };
        let b_ts = [day, day + 10, day + 30];
        let b = Side {
            ts: &b_ts,
            min: &[0.5, 5.0, 1.0],
            max: &[0.5, 5.0, 1.0],
        };
        let p = pair(0, 39, 4, a, b, -day);
        assert_eq!(p.ts, vec![0, 10, 20, 30]);
        assert_eq!(p.d_max[0], 0.5);
        assert_eq!(p.d_max[1], -3.0);
        assert!(
            p.d_max[2].is_nan() && p.d_min[2].is_nan(),
            "B has no row there"
        );
        assert_eq!(p.d_min[3], 3.0);
        assert!(p.b_max[2].is_nan());
        assert_eq!(p.a_max[2], 3.0);
    }

    #[test]
    fn several_points_in_a_bucket_fold_to_its_extremes_and_nan_adds_nothing() {
        let a = Side {
            ts: &[0, 1, 2, 3],
            min: &[5.0, f64::NAN, -1.0, 7.0],
            max: &[5.0, f64::NAN, 2.0, 9.0],
        };
        let b = Side {
            ts: &[100, 103],
            min: &[1.0, 2.0],
            max: &[1.0, 3.0],
        };
        let p = pair(0, 3, 1, a, b, -100);
        assert_eq!((p.a_min[0], p.a_max[0]), (-1.0, 9.0));
        assert_eq!((p.b_min[0], p.b_max[0]), (1.0, 3.0));
        assert_eq!((p.d_min[0], p.d_max[0]), (-2.0, 6.0));
    }

    #[test]
    fn points_shifted_outside_the_window_are_left_out() {
        let a = Side {
            ts: &[0],
            min: &[1.0],
            max: &[1.0],
        };
        let b = Side {
            ts: &[50, 200],
            min: &[1.0, 2.0],
            max: &[1.0, 2.0],
        };
        let p = pair(0, 99, 2, a, b, 0);
        assert_eq!(p.b_max[1], 1.0, "b's 50 lands in the second bucket");
        assert!(p.b_max[0].is_nan());
        assert!(pair(0, 99, 0, a, b, 0).ts.is_empty());
    }
}
