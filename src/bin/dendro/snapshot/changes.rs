//! What changed between successive images, in 4 KiB units: each step
//! from one image to the next keeps the units that differ, so that the
//! `Dendro-Changed` list from an image to a later one can be given long
//! after the images between were dropped.

use std::collections::VecDeque;

/// Past this many ranges the list is left out: the follower drops its cache.
pub(super) const MAX_RANGES: usize = 400;

/// How many steps between successive images are remembered: how far back
/// an image may be that `Dendro-Changed` still lists changes from.
const MAX_STEPS: usize = 512;

/// The units that changed from one image to the next one taken, as
/// inclusive ranges; `None` when too many to list.
pub(super) struct Step {
    pub(super) from: String,
    pub(super) to: String,
    /// How many units the image `to` has: a list never reaches past it.
    pub(super) to_units: usize,
    pub(super) units: Option<Vec<(usize, usize)>>,
}

/// The steps remembered, oldest first; the last leads to the newest image.
#[derive(Default)]
pub(super) struct Steps(VecDeque<Step>);

impl Steps {
    /// Remembers one more step, forgetting the oldest past [`MAX_STEPS`].
    pub(super) fn push(&mut self, step: Step) {
        self.0.push_back(step);
        if self.0.len() > MAX_STEPS {
            self.0.pop_front();
        }
    }

    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = &Step> {
        self.0.iter()
    }

    /// The `Dendro-Changed` list from image `from` to image `to` (`a-b,c`
    /// unit ranges): every unit that changed in any step between them.
    /// `None` when `from` is not among the images remembered, `to` does
    /// not follow it, or there are too many ranges to list.
    pub(super) fn between(&self, from: &str, to: &str) -> Option<String> {
        let start = self.0.iter().position(|s| s.from == from)?;
        let mut units = Vec::new();
        for step in self.0.iter().skip(start) {
            units.extend_from_slice(step.units.as_deref()?);
            if step.to == to {
                // Units past the end of `to` (an image between grew the
                // file, a later one shrank it) are the follower's to drop
                // anyway; listing them would only make the list doubtful.
                let end = step.to_units;
                let merged: Vec<_> = merged(units)
                    .into_iter()
                    .filter(|&(a, _)| a < end)
                    .map(|(a, b)| (a, b.min(end - 1)))
                    .collect();
                return (merged.len() <= MAX_RANGES).then(|| listed(&merged));
            }
        }
        None
    }
}

/// Adds `unit` to the ranges listed, or gives the list up past [`MAX_RANGES`].
pub(super) fn changed(units: &mut Option<Vec<(usize, usize)>>, unit: usize) {
    let Some(ranges) = units else { return };
    match ranges.last_mut() {
        Some((_, end)) if *end + 1 == unit => *end = unit,
        _ => ranges.push((unit, unit)),
    }
    if ranges.len() > MAX_RANGES {
        *units = None;
    }
}

/// Ranges sorted and joined where they overlap or touch.
fn merged(mut ranges: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    ranges.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match out.last_mut() {
            Some((_, end)) if a <= *end + 1 => *end = (*end).max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Ranges as the header lists them: `a-b` or `a`, joined by commas.
pub(super) fn listed(ranges: &[(usize, usize)]) -> String {
    ranges
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_of_several_steps_merge() {
        assert_eq!(
            merged(vec![(5, 6), (1, 1), (2, 3), (6, 9), (12, 12)]),
            vec![(1, 3), (5, 9), (12, 12)]
        );
        assert_eq!(merged(vec![]), vec![]);
    }
}
