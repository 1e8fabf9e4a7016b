//! The demo's latency histograms: per host, request latency (running
//! totals, as most agents export) and disk I/O latency (counts per
//! interval), lognormal populations whose medians grow with load, and a
//! storage stall that gives both a visible tail.

use crate::typed::{self, Column, Value};

/// Buckets of the demo's latency histograms.
pub(super) const LATENCY_BUCKETS: usize = 32;

/// The demo's latency bucket edges in nanoseconds: 32 µs to about 2 s, two
/// buckets per factor of two (each edge √2 times the last, rounded).
pub fn latency_bounds() -> Vec<f64> {
    (0..=LATENCY_BUCKETS)
        .map(|i| (32e3 * 2f64.powf(i as f64 / 2.0)).round())
        .collect()
}

/// The demo's latency stream: histograms of request latency (running
/// totals, as most agents export) and disk I/O latency (counts per
/// interval), in nanoseconds.
pub const LATENCY_STREAM: &str = "latency";

pub(super) fn latency_schema() -> typed::Schema {
    use typed::histogram::Cumulation;
    typed::Schema::new(vec![
        Column::histogram("request_ns", latency_bounds(), Cumulation::Counter).unit("ns"),
        Column::histogram("disk_io_ns", latency_bounds(), Cumulation::Delta).unit("ns"),
    ])
}

/// The storage stall: from 45% to 47% of the history (27 to 28.2 minutes
/// into the default hour), disk I/O stalls and a third of the requests
/// take about 0.6 s. Every host sees it, so the first heatmap opened
/// shows a tail.
pub fn stalled(i: u64, ticks: u64) -> bool {
    let x = i as f64 / ticks.max(1) as f64;
    (0.45..0.47).contains(&x)
}

/// The standard normal distribution function, by Abramowitz and Stegun
/// 7.1.26 (error below 1.5e-7): enough to shape demo data.
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// The latency stream's row for one tick: `totals` (request totals, then
/// the disk's last interval) advanced by the expected counts of each
/// population, rounded at random with `unit` (uniform in `[0, 1)`), for a
/// host at `load` in `[0, 1]`, during the stall or not.
pub(super) fn sample(
    totals: &mut [Vec<u64>; 2],
    mut unit: impl FnMut() -> f64,
    load: f64,
    stall: bool,
) -> Vec<Value> {
    let requests = 150.0 + 900.0 * load * (0.8 + 0.4 * unit());
    let ios = 60.0 + 300.0 * load * (0.8 + 0.4 * unit());
    // (count, median ns, spread) of each population.
    let share = |during: f64, otherwise: f64| if stall { during } else { otherwise };
    let request_mix = [
        (requests * share(0.7, 1.0), 2.5e6 * (1.0 + 2.0 * load), 0.55),
        (requests * share(0.3, 0.002), 6.0e8, 0.35),
    ];
    let disk_mix = [
        (ios * share(0.8, 1.0), 1.2e5 * (1.0 + load), 0.7),
        (ios * share(0.2, 0.0), 4.0e7, 0.4),
    ];
    let edges = latency_bounds();
    let mut values = Vec::with_capacity(2);
    for (h, mix) in [request_mix, disk_mix].iter().enumerate() {
        // Expected counts below each edge: values outside the outer edges
        // land in the end buckets.
        let mut below = vec![0.0; LATENCY_BUCKETS + 1];
        for &(n, median, spread) in mix {
            for j in 1..LATENCY_BUCKETS {
                below[j] += n * normal_cdf((edges[j] / median).ln() / spread);
            }
            below[LATENCY_BUCKETS] += n;
        }
        let row = &mut totals[h];
        for b in 0..LATENCY_BUCKETS {
            // Rounded at random, so a rare bucket is hit now and then.
            let count = (below[b + 1] - below[b] + unit()).floor().max(0.0) as u64;
            // Requests are running totals, disk I/O counts per interval.
            row[b] = if h == 0 {
                row[b].saturating_add(count)
            } else {
                count
            };
        }
        values.push(Value::Histogram(row.clone()));
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stall_puts_a_tail_in_both_histograms() {
        let mut calm = [vec![0; LATENCY_BUCKETS], vec![0; LATENCY_BUCKETS]];
        let mut stalled = calm.clone();
        let mut n = 0u64;
        let mut unit = || {
            n = n
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (n >> 11) as f64 / (1u64 << 53) as f64
        };
        let a = sample(&mut calm, &mut unit, 0.5, false);
        let b = sample(&mut stalled, &mut unit, 0.5, true);
        let slow = |v: &Value, from: f64| match v {
            Value::Histogram(c) => {
                let edges = latency_bounds();
                (0..LATENCY_BUCKETS)
                    .filter(|&i| edges[i] >= from)
                    .map(|i| c[i])
                    .sum::<u64>()
            }
            _ => unreachable!(),
        };
        // Requests over 0.25 s, disk I/O over 10 ms: rare when calm,
        // a fifth or more of everything in the stall.
        assert!(slow(&b[0], 2.5e8) > 10 * slow(&a[0], 2.5e8).max(1));
        assert!(slow(&b[1], 1e7) > 10 * slow(&a[1], 1e7).max(1));
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-6);
        assert!(
            (normal_cdf(1.96) - 0.975).abs() < 1e-4 && (normal_cdf(-1.96) - 0.025).abs() < 1e-4
        );
    }
}
