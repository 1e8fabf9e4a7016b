//! Wall-clock alignment of sources (format §5), so that streams recorded
//! by different sources, in different archives, can share one time axis.
//!
//! A source's timestamps are anchored (`clock_anchor_wall_ns` plus its
//! monotonic clock), and `clock_offsets` samples `wall - ts` at seal
//! points. The viewer draws a single source on its `ts` axis as it is; to
//! compare sources it needs each one's wall clock. This module is that
//! mapping and, as important, what it cannot promise: a source with no
//! observation is placed by its anchor alone, a wall clock that stepped
//! (set by hand, an NTP step) makes one offset wrong for part of the
//! span, and a source whose span meets no other's cannot be compared by
//! eye at all. Each such doubt is a [`Doubt`] whose [`Doubt::words`] is
//! the sentence the viewer shows next to the legend.
//!
//! The offsets drawn are one per source (its median observation): a plot
//! shifts a whole series, and with no step the observations of one source
//! differ by the drift of a disciplined clock (microseconds to
//! milliseconds), far below a pixel of any window worth comparing.

use crate::catalog::ClockOffset;
use crate::container::Archive;
use crate::error::Result;

/// The most clock observations read of one source: a writer records one
/// per seal batch, so a year of minute seals is half of this; a file with
/// more is read up to here and says so ([`Doubt::ObservationsCut`]).
pub const MAX_OBSERVATIONS: u32 = 1_000_000;

/// The smallest change between two consecutive observations counted as a
/// step of the wall clock: 100 ms, far past what a slewing NTP client does
/// between two seals yet well under what a person setting a clock does.
pub const STEP_FLOOR_NS: i64 = 100_000_000;

/// Drift allowed on top of [`STEP_FLOOR_NS`], per second between two
/// observations: 500 ppm, the most an NTP client slews a clock.
pub const SLEW_PPM: i64 = 500;

/// One source to align: its clock observations and the span (in its own
/// `ts`) of what is compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockInput {
    /// The source's clock observations, in any order.
    pub offsets: Vec<ClockOffset>,
    /// First and last `ts` of the compared stream; `None` when it holds no
    /// rows.
    pub span: Option<(i64, i64)>,
    /// Whether `offsets` stops at [`MAX_OBSERVATIONS`] of more.
    pub cut: bool,
}

/// The clock of source `source_id` of `archive`, for a stream spanning
/// `span` (its own `ts`).
pub fn clock_input(
    archive: &Archive,
    source_id: i64,
    span: Option<(i64, i64)>,
) -> Result<ClockInput> {
    let mut offsets = archive.read_snapshot(|s| {
        s.source(source_id)?;
        s.clock_offsets_up_to(source_id, MAX_OBSERVATIONS + 1)
    })?;
    let cut = offsets.len() > MAX_OBSERVATIONS as usize;
    offsets.truncate(MAX_OBSERVATIONS as usize);
    Ok(ClockInput { offsets, span, cut })
}

/// A step of a source's wall clock between two observations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The `ts` of the observation after the step.
    pub ts: i64,
    /// New offset minus old, nanoseconds.
    pub by_ns: i64,
}

/// Why an alignment may be wrong, in a form the viewer says in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Doubt {
    /// No clock observation: the source is placed by its anchor alone.
    NoWallOffset,
    /// The wall clock stepped: the offset drawn is off by up to
    /// `spread_ns` somewhere in the span.
    ClockSteps {
        /// How many steps.
        count: usize,
        /// The largest step, by absolute size.
        largest_ns: i64,
        /// Largest minus smallest observed offset.
        spread_ns: i64,
    },
    /// The compared stream has no rows in this source.
    NoRows,
    /// Its wall span overlaps no other source's (only said when there are
    /// at least two sources with rows).
    NoOverlap,
    /// More than [`MAX_OBSERVATIONS`] observations: the later ones were
    /// not read.
    ObservationsCut,
}

impl Doubt {
    /// A short stable name, for tests and data attributes.
    pub fn kind(&self) -> &'static str {
        match self {
            Doubt::NoWallOffset => "no_wall_offset",
            Doubt::ClockSteps { .. } => "clock_steps",
            Doubt::NoRows => "no_rows",
            Doubt::NoOverlap => "no_overlap",
            Doubt::ObservationsCut => "observations_cut",
        }
    }

    /// The sentence shown next to the legend.
    pub fn words(&self) -> String {
        match self {
            Doubt::NoWallOffset => "no clock offsets recorded: placed by its clock anchor alone, \
                 so its times are as its own clock read them"
                .to_string(),
            Doubt::ClockSteps {
                count,
                largest_ns,
                spread_ns,
            } => format!(
                "its wall clock stepped {count} time{} (largest step {}): aligned by its median \
                 offset, off by up to {} in parts",
                if *count == 1 { "" } else { "s" },
                duration(largest_ns.unsigned_abs()),
                duration(spread_ns.unsigned_abs()),
            ),
            Doubt::NoRows => "holds no rows of this stream".to_string(),
            Doubt::NoOverlap => {
                "its time span does not overlap any other source's: nothing to compare it with \
                 at the same wall time"
                    .to_string()
            }
            Doubt::ObservationsCut => {
                format!("more than {MAX_OBSERVATIONS} clock observations: only the first were read")
            }
        }
    }
}

/// Where one source lands on the shared wall-clock axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alignment {
    /// Added to the source's `ts` to get wall-clock nanoseconds.
    pub offset_ns: i64,
    /// The compared span on the wall-clock axis.
    pub wall_span: Option<(i64, i64)>,
    /// Steps of the wall clock, in `ts` order.
    pub steps: Vec<Step>,
    /// What makes the alignment uncertain; empty when nothing does.
    pub doubts: Vec<Doubt>,
}

/// A source's wall clock as its observations describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceClock {
    /// Observations sorted by `ts`.
    offsets: Vec<ClockOffset>,
}

impl SourceClock {
    /// The clock of a source with these observations (any order).
    pub fn new(mut offsets: Vec<ClockOffset>) -> SourceClock {
        offsets.sort_by_key(|o| o.ts);
        SourceClock { offsets }
    }

    /// `wall - ts` at `ts`: the latest observation at or before it (the
    /// offset holds until the next one says otherwise), the first one
    /// before any; `None` without observations.
    pub fn offset_at(&self, ts: i64) -> Option<i64> {
        let after = self.offsets.partition_point(|o| o.ts <= ts);
        let at = after.saturating_sub(1);
        self.offsets.get(at).map(|o| o.offset_ns)
    }

    /// The wall-clock time of `ts`, by [`SourceClock::offset_at`]; `ts`
    /// itself (its anchor's reading) without observations.
    pub fn wall_of(&self, ts: i64) -> i64 {
        ts.saturating_add(self.offset_at(ts).unwrap_or(0))
    }

    /// The median observation (the lower middle of an even count), the
    /// one offset drawn for the whole source; 0 without observations.
    pub fn typical_offset(&self) -> i64 {
        let mut all: Vec<i64> = self.offsets.iter().map(|o| o.offset_ns).collect();
        all.sort_unstable();
        all.get(all.len().saturating_sub(1) / 2)
            .copied()
            .unwrap_or(0)
    }

    /// Changes between consecutive observations larger than a clock
    /// drifts: [`STEP_FLOOR_NS`] plus [`SLEW_PPM`] of the time between them.
    pub fn steps(&self) -> Vec<Step> {
        self.offsets
            .windows(2)
            .filter_map(|w| {
                let by = w[1].offset_ns.saturating_sub(w[0].offset_ns);
                let elapsed = w[1].ts.saturating_sub(w[0].ts).max(0);
                let allowed = STEP_FLOOR_NS.saturating_add(elapsed / 1_000_000 * SLEW_PPM);
                (by.unsigned_abs() > allowed.unsigned_abs()).then_some(Step {
                    ts: w[1].ts,
                    by_ns: by,
                })
            })
            .collect()
    }

    /// Largest minus smallest observation.
    fn spread(&self) -> i64 {
        let lo = self.offsets.iter().map(|o| o.offset_ns).min().unwrap_or(0);
        let hi = self.offsets.iter().map(|o| o.offset_ns).max().unwrap_or(0);
        hi.saturating_sub(lo)
    }
}

/// Aligns sources on one wall-clock axis, each with its doubts, in the
/// order given. Overlap is judged between the sources given here only.
pub fn align(inputs: &[ClockInput]) -> Vec<Alignment> {
    let mut out: Vec<Alignment> = inputs
        .iter()
        .map(|input| {
            let clock = SourceClock::new(input.offsets.clone());
            let offset_ns = clock.typical_offset();
            let steps = clock.steps();
            let mut doubts = Vec::new();
            if input.offsets.is_empty() {
                doubts.push(Doubt::NoWallOffset);
            }
            if input.cut {
                doubts.push(Doubt::ObservationsCut);
            }
            // The first of equally large steps.
            let largest =
                steps
                    .iter()
                    .map(|s| s.by_ns)
                    .fold(None, |best: Option<i64>, b| match best {
                        Some(x) if x.unsigned_abs() >= b.unsigned_abs() => Some(x),
                        _ => Some(b),
                    });
            if let Some(largest) = largest {
                doubts.push(Doubt::ClockSteps {
                    count: steps.len(),
                    largest_ns: largest,
                    spread_ns: clock.spread(),
                });
            }
            let wall_span = input
                .span
                .map(|(a, b)| (a.saturating_add(offset_ns), b.saturating_add(offset_ns)));
            if wall_span.is_none() {
                doubts.push(Doubt::NoRows);
            }
            Alignment {
                offset_ns,
                wall_span,
                steps,
                doubts,
            }
        })
        .collect();
    let spans: Vec<Option<(i64, i64)>> = out.iter().map(|a| a.wall_span).collect();
    if spans.iter().flatten().count() >= 2 {
        for (i, a) in out.iter_mut().enumerate() {
            let Some((lo, hi)) = spans[i] else { continue };
            let meets = spans
                .iter()
                .enumerate()
                .any(|(j, s)| j != i && s.is_some_and(|(l, h)| l <= hi && lo <= h));
            if !meets {
                a.doubts.push(Doubt::NoOverlap);
            }
        }
    }
    out
}

/// A duration in words at a sensible precision: "350 ms", "1.2 s".
pub fn duration(ns: u64) -> String {
    const UNITS: [(u64, &str); 7] = [
        (86_400_000_000_000, "d"),
        (3_600_000_000_000, "h"),
        (60_000_000_000, "min"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "µs"),
        (1, "ns"),
    ];
    let (unit, name) = UNITS
        .iter()
        .copied()
        .find(|(u, _)| ns >= *u)
        .unwrap_or((1, "ns"));
    let whole = ns / unit;
    let tenth = (ns % unit) * 10 / unit;
    if whole >= 10 || tenth == 0 {
        format!("{whole} {name}")
    } else {
        format!("{whole}.{tenth} {name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(pairs: &[(i64, i64)]) -> Vec<ClockOffset> {
        pairs
            .iter()
            .map(|&(ts, offset_ns)| ClockOffset { ts, offset_ns })
            .collect()
    }

    #[test]
    fn offsets_hold_from_their_observation_until_the_next() {
        let clock = SourceClock::new(obs(&[(300, 7), (100, 5), (200, 6)]));
        assert_eq!(clock.offset_at(50), Some(5), "before the first: the first");
        assert_eq!(clock.offset_at(100), Some(5));
        assert_eq!(clock.offset_at(199), Some(5));
        assert_eq!(clock.offset_at(200), Some(6));
        assert_eq!(clock.offset_at(10_000), Some(7));
        assert_eq!(clock.wall_of(250), 256);
        assert_eq!(SourceClock::new(vec![]).offset_at(5), None);
        assert_eq!(
            SourceClock::new(vec![]).wall_of(5),
            5,
            "no observation: ts as the anchor gives it"
        );
    }

    #[test]
    fn the_offset_drawn_is_the_median_observation() {
        assert_eq!(
            SourceClock::new(obs(&[(1, 9), (2, 1), (3, 5)])).typical_offset(),
            5
        );
        assert_eq!(
            SourceClock::new(obs(&[(1, 9), (2, 1), (3, 5), (4, 7)])).typical_offset(),
            5
        );
        assert_eq!(SourceClock::new(vec![]).typical_offset(), 0);
    }

    #[test]
    fn drift_is_not_a_step_but_a_set_clock_is() {
        let s = 1_000_000_000;
        // 1 ms per second of drift stays under 100 ms + 500 ppm over 10 s.
        let drift = SourceClock::new(obs(&[(0, 0), (10 * s, 10_000_000), (20 * s, 20_000_000)]));
        assert!(drift.steps().is_empty());
        // Just over the floor and 1 ms of slew (500 ns) is a step.
        let set = SourceClock::new(obs(&[(0, 0), (s / 1000, STEP_FLOOR_NS + 501)]));
        assert_eq!(
            set.steps(),
            vec![Step {
                ts: s / 1000,
                by_ns: STEP_FLOOR_NS + 501
            }]
        );
        // Exactly the floor plus the slew allowance is not.
        let edge = SourceClock::new(obs(&[(0, 0), (s, STEP_FLOOR_NS + SLEW_PPM * 1000)]));
        assert!(edge.steps().is_empty());
        // Backwards counts the same as forwards.
        let back = SourceClock::new(obs(&[(0, 0), (s, -3 * s)]));
        assert_eq!(
            back.steps(),
            vec![Step {
                ts: s,
                by_ns: -3 * s
            }]
        );
    }

    #[test]
    fn sources_land_on_one_axis_by_their_offsets() {
        let s = 1_000_000_000;
        // Two hosts recording the same minute: b's anchored ts runs 5 s
        // behind the wall, a's 2 s ahead.
        let a = ClockInput {
            offsets: obs(&[(100 * s, -2 * s), (160 * s, -2 * s + 1000)]),
            span: Some((100 * s, 160 * s)),
            cut: false,
        };
        let b = ClockInput {
            offsets: obs(&[(93 * s, 5 * s), (153 * s, 5 * s + 500)]),
            span: Some((93 * s, 153 * s)),
            cut: false,
        };
        let out = align(&[a, b]);
        assert_eq!(out[0].offset_ns, -2 * s);
        assert_eq!(out[1].offset_ns, 5 * s);
        assert_eq!(out[0].wall_span, Some((98 * s, 158 * s)));
        assert_eq!(out[1].wall_span, Some((98 * s, 158 * s)));
        assert!(out.iter().all(|a| a.doubts.is_empty()), "{out:?}");
    }

    #[test]
    fn doubts_are_said_each_where_it_applies() {
        let s = 1_000_000_000;
        let plain = ClockInput {
            offsets: obs(&[(0, 0)]),
            span: Some((0, 10 * s)),
            cut: false,
        };
        let bare = ClockInput {
            offsets: vec![],
            span: Some((5 * s, 20 * s)),
            cut: false,
        };
        let stepped = ClockInput {
            offsets: obs(&[(0, 0), (2 * s, 2 * s), (4 * s, 0)]),
            span: Some((0, 8 * s)),
            cut: false,
        };
        let far = ClockInput {
            offsets: obs(&[(0, 0)]),
            span: Some((1000 * s, 1001 * s)),
            cut: false,
        };
        let empty = ClockInput {
            offsets: obs(&[(0, 0)]),
            span: None,
            cut: false,
        };
        let out = align(&[plain, bare, stepped, far, empty]);
        let kinds: Vec<Vec<&str>> = out
            .iter()
            .map(|a| a.doubts.iter().map(Doubt::kind).collect())
            .collect();
        assert_eq!(
            kinds,
            vec![
                vec![],
                vec!["no_wall_offset"],
                vec!["clock_steps"],
                vec!["no_overlap"],
                vec!["no_rows"]
            ]
        );
        assert_eq!(
            out[2].doubts[0],
            Doubt::ClockSteps {
                count: 2,
                largest_ns: 2 * s,
                spread_ns: 2 * s
            }
        );
        assert_eq!(
            out[2].doubts[0].words(),
            "its wall clock stepped 2 times (largest step 2 s): aligned by its median offset, off by up to 2 s in parts"
        );
        let cut = align(&[ClockInput {
            offsets: obs(&[(0, 0)]),
            span: Some((0, 1)),
            cut: true,
        }]);
        assert_eq!(cut[0].doubts, vec![Doubt::ObservationsCut]);
        // One source alone is not said to overlap nothing.
        let alone = align(&[ClockInput {
            offsets: obs(&[(0, 0)]),
            span: Some((0, 1)),
            cut: false,
        }]);
        assert!(alone[0].doubts.is_empty());
    }

    #[test]
    fn durations_read_at_a_sensible_precision() {
        assert_eq!(duration(0), "0 ns");
        assert_eq!(duration(1_500), "1.5 µs");
        assert_eq!(duration(350_000_000), "350 ms");
        assert_eq!(duration(1_200_000_000), "1.2 s");
        assert_eq!(duration(90 * 60 * 1_000_000_000), "1.5 h");
    }
}
