//! What the benchmarks share, included by each with `mod common;`: the
//! median of repeated runs, time in milliseconds, the load average to quote
//! beside a run, and a figure printed as one JSON line on stdout (what the
//! tables in docs/measurements/ are made from) and a table row on stderr.
#![allow(dead_code)]

use std::time::Instant;

/// This thread's CPU time in seconds: what a decode costs, apart from
/// whatever else the shared machine is running.
pub fn thread_cpu_s() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// The median of `v` (the upper middle of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `f` `reps` times; the median of what it returns.
pub fn median_of(reps: usize, mut f: impl FnMut() -> f64) -> f64 {
    median((0..reps).map(|_| f()).collect())
}

/// Runs `f` `reps` times; the median of its time, in milliseconds. What
/// `f` returns is dropped after the clock stops.
pub fn median_ms<T>(reps: usize, mut f: impl FnMut() -> T) -> f64 {
    median_of(reps, || {
        let started = Instant::now();
        let out = std::hint::black_box(f());
        let elapsed = ms(started);
        drop(out);
        elapsed
    })
}

/// Milliseconds since `started`.
pub fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}

/// One figure, on stdout as JSON and on stderr as a row of a table.
pub fn figure(name: &str, value: f64, unit: &str) {
    figure_json(name, value, unit);
    eprintln!("  {name:<44} {value:>14.4} {unit}");
}

/// One figure, on stdout as JSON only (for a bench that prints its table
/// at the end).
pub fn figure_json(name: &str, value: f64, unit: &str) {
    println!("{{\"figure\": \"{name}\", \"median\": {value}, \"unit\": \"{unit}\"}}");
}

/// The 1, 5 and 15 minute load averages, for the run's notes.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
