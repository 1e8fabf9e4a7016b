//! Histogram columns of the self-describing encoder: the bucket edges a
//! schema fixes, the helpers that make common edge sets, and the one rule
//! that turns two rows of a cumulative histogram into the counts of the
//! interval between them (resets included). The writer refuses what the
//! rule calls backwards; readers apply the same rule and report such a row
//! instead of guessing.

use serde::{Deserialize, Serialize};

/// The most buckets a histogram column may have. Enough for a log-linear
/// histogram over nanoseconds to hours at a few percent precision, small
/// enough that a row (8 bytes a bucket) and a heatmap column stay small.
pub const MAX_BUCKETS: usize = 1024;

/// Arrow field metadata key under which a histogram column's edges travel,
/// as a JSON array of numbers, so a sealed segment describes itself.
pub const BOUNDS_METADATA: &str = "dendro.bounds";

/// Whether a histogram's rows hold running totals or their own interval's
/// counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cumulation {
    /// Each row holds totals since the producer started (most agents
    /// export this); the interval's counts are the difference from the
    /// previous row, and a fall of the total is a reset.
    Counter,
    /// Each row holds the counts of its own interval.
    Delta,
}

/// Checks a histogram's bucket edges: at least two, at most
/// [`MAX_BUCKETS`] + 1, finite, strictly ascending. Bucket `i` holds the
/// values in `[bounds[i], bounds[i + 1])`.
pub fn check_bounds(bounds: &[f64]) -> Result<(), String> {
    if bounds.len() < 2 {
        return Err(format!(
            "a histogram needs at least two bucket edges, not {}",
            bounds.len()
        ));
    }
    if bounds.len() > MAX_BUCKETS + 1 {
        return Err(format!(
            "a histogram has at most {MAX_BUCKETS} buckets, not {}",
            bounds.len() - 1
        ));
    }
    if let Some(bad) = bounds.iter().find(|b| !b.is_finite()) {
        return Err(format!("bucket edge {bad} is not a finite number"));
    }
    if let Some(i) = (1..bounds.len()).find(|&i| bounds[i] <= bounds[i - 1]) {
        return Err(format!(
            "bucket edges must ascend, but edge {i} ({}) is not above edge {} ({})",
            bounds[i],
            i - 1,
            bounds[i - 1]
        ));
    }
    Ok(())
}

/// Base-2 exponential edges: `first`, `2·first`, … `first·2^buckets`
/// (`buckets` buckets). `first` must be positive.
pub fn exponential_bounds(first: f64, buckets: usize) -> Result<Vec<f64>, String> {
    if !(first > 0.0 && first.is_finite()) {
        return Err(format!("the first edge must be positive, not {first}"));
    }
    let bounds: Vec<f64> = (0..=buckets.min(MAX_BUCKETS + 1))
        .map(|i| first * 2f64.powi(i as i32))
        .collect();
    check_bounds(&bounds)?;
    Ok(bounds)
}

/// Log-linear edges as HdrHistogram lays them out: from `0` up to the
/// first power of two at or above `max`, each power-of-two range
/// `[2^k, 2^(k+1))` split into `sub_buckets` equal buckets (a power of two,
/// at least 2), and the values below `sub_buckets` one bucket each. Past
/// that linear start no bucket is wider than `1 / sub_buckets` of its
/// lower edge.
pub fn log_linear_bounds(max: f64, sub_buckets: u32) -> Result<Vec<f64>, String> {
    if sub_buckets < 2 || !sub_buckets.is_power_of_two() {
        return Err(format!(
            "sub-buckets must be a power of two, at least 2, not {sub_buckets}"
        ));
    }
    if !(max >= 1.0 && max.is_finite()) {
        return Err(format!("the largest value must be at least 1, not {max}"));
    }
    let step0 = f64::from(sub_buckets);
    let mut bounds: Vec<f64> = (0..sub_buckets).map(f64::from).collect();
    let mut start = step0;
    while start < max {
        if bounds.len() > MAX_BUCKETS + 1 {
            break;
        }
        let width = start / step0;
        for i in 0..sub_buckets {
            bounds.push(start + width * f64::from(i));
        }
        start *= 2.0;
    }
    bounds.push(start);
    check_bounds(&bounds)?;
    Ok(bounds)
}

/// Appends `v` as an unsigned LEB128 varint (seven bits a byte, low
/// first, the high bit set on every byte but the last): a row's histogram
/// counts are mostly small, so this keeps rows short.
pub fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads one unsigned LEB128 varint, a byte at a time from `next`. More
/// than ten bytes, or a value past `u64`, is an error.
pub fn read_varint(mut next: impl FnMut() -> Result<u8, String>) -> Result<u64, String> {
    let mut v = 0u64;
    for i in 0..10 {
        let byte = next()?;
        let bits = u64::from(byte & 0x7f);
        if i == 9 && byte > 1 {
            return Err("a count does not fit in 64 bits".into());
        }
        v |= bits << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("a count runs past ten bytes".into())
}

/// What the previous row and this one of a cumulative histogram say about
/// the interval between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The counts of the interval, bucket by bucket.
    Counts(Vec<u64>),
    /// The total fell: the producer restarted and counts from zero, so the
    /// interval's counts are this row's own (as for counters, §9).
    Reset(Vec<u64>),
}

/// The reset rule. A row whose total (the sum of its buckets) is below the
/// previous row's is a reset: the interval's counts are the row itself.
/// Otherwise every bucket must be at or above the previous row's; a bucket
/// that fell while the total did not is an error naming the bucket, since
/// neither a reset nor growth explains it. Rows of different widths are an
/// error too.
pub fn step(previous: &[u64], row: &[u64]) -> Result<Step, String> {
    let mut counts = Vec::with_capacity(row.len());
    Ok(match step_into(previous, row, &mut counts)? {
        true => Step::Reset(counts),
        false => Step::Counts(counts),
    })
}

/// [`step`] into `counts` (emptied first), which a reader of many rows
/// keeps from row to row so that no row allocates: whether the row is a
/// reset, or why it is neither a reset nor growth.
pub fn step_into(previous: &[u64], row: &[u64], counts: &mut Vec<u64>) -> Result<bool, String> {
    counts.clear();
    if previous.len() != row.len() {
        return Err(format!(
            "{} buckets after a row of {}",
            row.len(),
            previous.len()
        ));
    }
    let total = |r: &[u64]| r.iter().map(|&c| u128::from(c)).sum::<u128>();
    if total(row) < total(previous) {
        counts.extend_from_slice(row);
        return Ok(true);
    }
    for (i, (&before, &now)) in previous.iter().zip(row).enumerate() {
        match now.checked_sub(before) {
            Some(d) => counts.push(d),
            None => {
                counts.clear();
                return Err(format!(
                    "bucket {i} went back from {before} to {now} while the total did not fall \
                     (not a reset)"
                ));
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_must_be_finite_ascending_and_few() {
        assert!(check_bounds(&[0.0, 1.0, 2.0]).is_ok());
        let err = check_bounds(&[0.0, 2.0, 2.0]).unwrap_err();
        assert!(err.contains("edge 2"), "{err}");
        assert!(check_bounds(&[1.0]).is_err());
        assert!(check_bounds(&[0.0, f64::NAN]).is_err());
        assert!(check_bounds(&[0.0, f64::INFINITY]).is_err());
        let many: Vec<f64> = (0..=MAX_BUCKETS + 1).map(|i| i as f64).collect();
        assert!(check_bounds(&many).unwrap_err().contains("at most"));
        assert!(check_bounds(&many[..=MAX_BUCKETS]).is_ok());
    }

    #[test]
    fn helpers_make_the_documented_edges() {
        assert_eq!(
            exponential_bounds(1.0, 4).unwrap(),
            [1.0, 2.0, 4.0, 8.0, 16.0]
        );
        assert!(exponential_bounds(0.0, 4).is_err());
        let ll = log_linear_bounds(64.0, 4).unwrap();
        assert_eq!(
            ll,
            [
                0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0, 14.0, 16.0, 20.0, 24.0,
                28.0, 32.0, 40.0, 48.0, 56.0, 64.0
            ]
        );
        // Past the linear start, no bucket is wider than 1/sub_buckets of its lower edge.
        for w in ll[4..].windows(2) {
            assert!((w[1] - w[0]) / w[0] <= 0.25 + 1e-12, "{w:?}");
        }
        assert!(log_linear_bounds(64.0, 3).is_err());
        assert!(
            log_linear_bounds(1e300, 2).is_err(),
            "too many buckets is refused"
        );
    }

    #[test]
    fn counts_round_trip_as_varints() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            push_varint(&mut out, v);
            let mut bytes = out.iter();
            let back = read_varint(|| bytes.next().copied().ok_or("ends".to_string()));
            assert_eq!(back, Ok(v));
            assert!(bytes.next().is_none(), "{v} used every byte it wrote");
        }
        let mut short = [0x80u8].iter();
        assert!(read_varint(|| short.next().copied().ok_or("ends".to_string())).is_err());
        let mut long = [0xffu8; 11].iter();
        assert!(read_varint(|| long.next().copied().ok_or("ends".to_string())).is_err());
        let mut over = [0xffu8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02].iter();
        let err = read_varint(|| over.next().copied().ok_or("ends".to_string())).unwrap_err();
        assert!(err.contains("64 bits"), "{err}");
    }

    #[test]
    fn the_reset_rule() {
        assert_eq!(step(&[1, 2], &[3, 2]).unwrap(), Step::Counts(vec![2, 0]));
        assert_eq!(step(&[5, 5], &[1, 0]).unwrap(), Step::Reset(vec![1, 0]));
        // Total grew but a bucket fell: neither growth nor a reset.
        let err = step(&[5, 5], &[9, 4]).unwrap_err();
        assert!(err.contains("bucket 1"), "{err}");
        assert!(step(&[1], &[1, 2]).is_err());
        // Totals past u64 do not overflow the rule.
        assert_eq!(
            step(&[u64::MAX, u64::MAX], &[u64::MAX, u64::MAX]).unwrap(),
            Step::Counts(vec![0, 0])
        );
    }

    #[test]
    fn step_into_reuses_its_buffer_and_answers_as_step() {
        let mut counts = Vec::with_capacity(2);
        let room = counts.as_ptr();
        assert_eq!(step_into(&[1, 2], &[3, 2], &mut counts), Ok(false));
        assert_eq!(counts, [2, 0]);
        assert_eq!(step_into(&[5, 5], &[1, 0], &mut counts), Ok(true));
        assert_eq!(counts, [1, 0]);
        assert_eq!(counts.as_ptr(), room, "no new allocation");
        let err = step_into(&[5, 5], &[9, 4], &mut counts).unwrap_err();
        assert!(err.contains("bucket 1"), "{err}");
        assert!(counts.is_empty(), "an error leaves no half-made counts");
        assert!(step_into(&[1], &[1, 2], &mut counts).is_err());
    }
}
