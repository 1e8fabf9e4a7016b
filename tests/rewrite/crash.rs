//! A compaction killed at any moment leaves a sound archive holding every
//! row: a child compacting is SIGKILLed right after a randomly chosen step
//! (a run begun, a run committed, pages handed back), dozens of times, and
//! each time the archive verifies clean, reads back exactly its rows, and
//! compacts to the end when run again.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use dendro::rewrite::{compact, CompactSpec, Target};

use crate::support::*;

/// A small deterministic generator, so a failing kill point can be replayed.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

const KILLS: u64 = 36;
const TARGET_ROWS: &str = "60";

#[test]
fn a_compaction_killed_at_random_steps_always_leaves_a_sound_archive_with_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.dendro");
    many_small(&base, 48, 6);
    let expected = contents(&base);
    // A full run's steps: one "started", then per run a begin, a commit and
    // usually a reclaim.
    let runs = 48 / 10 + 1;
    let steps = 1 + 3 * runs as u64;
    let mut rng = Lcg(0x5eed);
    let mut finished_before_kill = 0;
    let mut caught_between_runs = 0;
    let segments = |path: &std::path::Path| {
        dendro::Archive::open(path)
            .unwrap()
            .read_snapshot(|s| s.all_segments())
            .unwrap()
            .len()
    };
    for round in 0..KILLS {
        let path = dir.path().join(format!("round{round}.dendro"));
        std::fs::copy(&base, &path).unwrap();
        let kill_after = rng.below(steps + 1);
        let mut child =
            crate::common::child_command("compact", &[path.to_str().unwrap(), TARGET_ROWS])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        let mut done = false;
        while seen < kill_after {
            match lines.next() {
                Some(Ok(line)) if line.starts_with("event") => seen += 1,
                Some(Ok(line)) if line == "done" => {
                    done = true;
                    break;
                }
                Some(Ok(_)) => {}
                _ => break,
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        finished_before_kill += done as u32;
        assert_sound(&path);
        let left = segments(&path);
        caught_between_runs += (left > runs && left < 48) as u32;
        assert_eq!(
            contents(&path),
            expected,
            "round {round}: killed after {kill_after} steps"
        );
        let spec = CompactSpec {
            target: Target::Rows(TARGET_ROWS.parse().unwrap()),
            union_fields: false,
        };
        compact(&path, &spec, |_| {}).unwrap();
        assert_sound(&path);
        assert_eq!(contents(&path), expected, "round {round}: after finishing");
        std::fs::remove_file(&path).unwrap();
    }
    assert!(
        caught_between_runs > 0,
        "no kill left the archive part-way through its runs"
    );
    assert!(
        finished_before_kill < KILLS as u32 / 2,
        "most kills must land inside the compaction, {finished_before_kill} did not"
    );
}
