//! Crash safety, measured: a child process appending one tick at a time is
//! SIGKILLed at random moments, some of them in a seal or a checkpoint, and
//! after every kill each tick it reported committed is there, nothing more
//! than the tick in flight is missing, `verify` is clean and the source
//! resumes. And the sidecar case: after a kill, the three files hold every
//! committed row while the main file alone holds what the last checkpoint
//! put there.
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use crate::support::*;
use dendro::demo::DemoEncoder;
use dendro::write::Writer;
use dendro::{Archive, ClockOffset};

/// A child and the lines it prints, read on a thread so waiting can time out.
struct Running {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(mode: &str, args: &[&str]) -> Running {
        let mut child = crate::child::command(mode, args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a line starting with `prefix`, keeping every line seen.
    fn wait_for(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "the child never printed {prefix:?}; it printed {:?}",
                    self.seen.last()
                )
            });
            self.seen.push(line.clone());
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    /// SIGKILL, then every line it managed to print.
    fn kill(mut self) -> Vec<String> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.seen.extend(self.lines.iter());
        self.seen
    }
}

/// The highest tick a child reported committed.
fn last_reported(lines: &[String]) -> Option<i64> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("committed "))
        .map(|n| n.parse::<i64>().unwrap())
        .max()
}

/// Ticks present in both streams, from one read of the archive.
fn ticks(path: &Path) -> Vec<i64> {
    let archive = Archive::open(path).unwrap();
    let a: Vec<i64> = stream_ts(&archive, 1, "a")
        .iter()
        .map(|ts| ts / 1000)
        .collect();
    let b: Vec<i64> = stream_ts(&archive, 1, "b")
        .iter()
        .map(|ts| ts / 1000)
        .collect();
    assert_eq!(a, b, "a tick is one transaction: both streams or neither");
    a
}

/// A small deterministic generator for the kill moments.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn sigkill_at_random_moments_loses_no_committed_tick() {
    let (_dir, path) = fresh("crash.dendro");
    let file = path.to_str().unwrap();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut reported_so_far: Option<i64> = None;
    let (mut kills, mut in_seal, mut in_checkpoint) = (0, 0, 0);
    for round in 0..24 {
        let mut child = Running::start("append", &[file, "7", "15"]);
        child.wait_for("committed");
        match round % 4 {
            0 => std::thread::sleep(Duration::from_millis(5 + rng.below(60))),
            1 => {
                child.wait_for("sealing");
                in_seal += 1;
                std::thread::sleep(Duration::from_micros(rng.below(3000)));
            }
            2 => {
                child.wait_for("checkpointing");
                in_checkpoint += 1;
                std::thread::sleep(Duration::from_micros(rng.below(1500)));
            }
            _ => {
                for _ in 0..rng.below(30) {
                    child.wait_for("committed");
                }
            }
        }
        let lines = child.kill();
        kills += 1;
        let reported = last_reported(&lines).expect("at least one tick was reported");
        let present = ticks(&path);
        let newest = *present.last().unwrap();
        assert_eq!(
            present,
            (0..=newest).collect::<Vec<_>>(),
            "round {round}: every tick from the first on, with no hole"
        );
        assert!(
            newest >= reported,
            "round {round}: tick {reported} was reported but {newest} is the newest"
        );
        assert!(
            newest <= reported + 2,
            "round {round}: {newest} is more than the ticks in flight beyond {reported}"
        );
        if let Some(before) = reported_so_far {
            assert!(
                newest > before,
                "round {round}: the resumed source appended"
            );
        }
        reported_so_far = Some(reported);
        let report = Archive::open(&path).unwrap().verify().unwrap();
        assert!(report.sound, "round {round}: {:?}", report.problems);
    }
    assert!(kills >= 20 && in_seal >= 5 && in_checkpoint >= 5);
    // The source resumes once more, in this process, and finishes cleanly.
    let newest = *ticks(&path).last().unwrap();
    let w = Writer::open(&path, DemoEncoder).unwrap();
    let s = w.resume_source(1).unwrap();
    assert_eq!(s.resumed_after(), Some(newest * 1000));
    let anchor = s.clock().anchor();
    s.finalize(ClockOffset {
        ts: anchor,
        offset_ns: 0,
    })
    .unwrap();
    w.join().unwrap();
    let a = assert_sound(&path);
    let sessions =
        a.read_snapshot(|s| s.source(1)).unwrap().source.metadata["writer_sessions"].clone();
    assert_eq!(
        sessions.matches("\"session\"").count(),
        25,
        "one per child and this one"
    );
}

fn copy_files(from: &Path, to: &Path, suffixes: &[&str]) {
    for suffix in suffixes {
        let mut src = from.as_os_str().to_os_string();
        src.push(suffix);
        let mut dst = to.as_os_str().to_os_string();
        dst.push(suffix);
        std::fs::copy(&src, &dst).unwrap();
    }
}

#[test]
fn after_a_kill_the_three_files_hold_every_row_and_the_main_file_what_was_checkpointed() {
    for checkpoint_at in [25, -1] {
        let (dir, path) = fresh("sidecar.dendro");
        let mut child = Running::start(
            "sidecar",
            &[path.to_str().unwrap(), "60", &checkpoint_at.to_string()],
        );
        child.wait_for("done");
        let lines = child.kill();
        assert_eq!(last_reported(&lines), None);
        let main_only = dir.path().join("main-only.dendro");
        copy_files(&path, &main_only, &[""]);
        let all_three = dir.path().join("all-three.dendro");
        copy_files(&path, &all_three, &["", "-wal", "-shm"]);
        let wal_bytes = std::fs::metadata(dir.path().join("sidecar.dendro-wal"))
            .unwrap()
            .len();
        assert!(wal_bytes > 0, "the kill left the sidecar behind");
        assert_eq!(
            ticks(&all_three),
            (0..60).collect::<Vec<_>>(),
            "every committed row"
        );
        let main = Archive::open(&main_only).unwrap();
        assert!(main.verify().unwrap().sound);
        let sources = main.read_snapshot(|s| s.sources()).unwrap();
        if checkpoint_at < 0 {
            assert!(
                sources.is_empty(),
                "nothing after create reached the main file"
            );
        } else {
            assert_eq!(ticks(&main_only), (0..=checkpoint_at).collect::<Vec<_>>());
        }
    }
}
