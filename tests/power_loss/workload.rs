//! The work a power cut interrupts: plans of appends, seals, checkpoints,
//! retention and writer sessions; a driver that runs one through the
//! public API and records what the writer acknowledged; and the rows of a
//! tick, which carry enough to check them when read back.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use dendro::write::{SourceWriter, TickRows, Writer, WriterOptions};
use dendro::{ClockOffset, Labels, SealPolicy, Segment, SegmentEncoder, WalRow};

use crate::common::{fixture_row, FixtureEncoder};
use crate::vfs;

/// Tick N is a row at ts N * 1000 in both streams.
pub const TS_PER_TICK: i64 = 1000;

/// The value a stream's row at `ts` carries, so a read can check it.
pub fn value_of(stream: &str, ts: i64) -> i64 {
    ts.wrapping_mul(3).wrapping_add((stream == "b") as i64)
}

/// A kilobyte or so of letters that LZ4 cannot shrink much, so segments and
/// WAL rows take real pages and retention frees enough to be reclaimed.
fn filler(ts: i64) -> String {
    let mut x = (ts as u64) ^ 0x9e37_79b9_7f4a_7c15;
    let len = 700 + (ts / TS_PER_TICK).rem_euclid(400) as usize;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (b'a' + (x % 26) as u8) as char
        })
        .collect()
}

/// The rows of one tick: a small one in `a`, a kilobyte in `b`.
pub fn rows_at(ts: i64) -> TickRows {
    ["a", "b"]
        .into_iter()
        .map(|stream| {
            let label = if stream == "a" {
                "a".to_string()
            } else {
                filler(ts)
            };
            (
                stream.to_string(),
                WalRow {
                    ts,
                    wall_offset: 5,
                    row: fixture_row(value_of(stream, ts), &label),
                },
            )
        })
        .collect()
}

/// The fixture encoder, telling the shim each time a seal batch is
/// encoded (the cut report uses it to say a seal was waiting to commit),
/// and stopping at the [`Gate`] when the driver holds it. Every batch here
/// seals both streams, `a` then `b`, and commits in one transaction, so
/// `b` finishing ends its batch.
pub struct CountingEncoder;

impl SegmentEncoder for CountingEncoder {
    fn encode(&self, stream: &str, rows: &[WalRow]) -> Result<Option<Segment>, String> {
        let out = FixtureEncoder::default().encode(stream, rows);
        if stream == "b" && matches!(out, Ok(Some(_))) {
            vfs::seal_encoded();
            GATE.pass();
        }
        out
    }

    fn version(&self) -> Option<String> {
        FixtureEncoder::default().version()
    }
}

/// Where the driver can hold a finished seal batch. A finished seal rides
/// on an append only if one arrives within 2 ms of the writer taking it
/// in, and otherwise commits alone; the driver holds the batch's last
/// encode until it is ready to send that append at once: release, a pause
/// of 0.2 ms for the encoder to hand the segments over, two calls through
/// the writer (after each it takes in finished seals), then the tick.
pub struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    held: bool,
    arrived: bool,
    departed: bool,
}

pub static GATE: Gate = Gate {
    state: Mutex::new(GateState {
        held: false,
        arrived: false,
        departed: false,
    }),
    changed: Condvar::new(),
};

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next batch to finish will wait here.
    pub fn hold(&self) {
        *self.lock() = GateState {
            held: true,
            ..GateState::default()
        };
    }

    /// Lets a waiting batch go, and any later one pass.
    pub fn release(&self) {
        self.lock().held = false;
        self.changed.notify_all();
    }

    /// Called by the encoder. Bounded, so that a test that failed while
    /// holding the gate cannot stall the next one's encoder for ever.
    fn pass(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut state = self.lock();
        state.arrived = true;
        self.changed.notify_all();
        while state.held && std::time::Instant::now() < deadline {
            state = self
                .changed
                .wait_timeout(state, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        state.departed = true;
        self.changed.notify_all();
    }

    /// Lets the held batch go and waits until its encoder thread is
    /// running again; what it has left to do (checks, hand the segments
    /// over) takes microseconds.
    pub fn release_held(&self) {
        let mut state = self.lock();
        state.held = false;
        self.changed.notify_all();
        while !state.departed {
            state = self
                .changed
                .wait_timeout(state, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits until a batch is held here, or the power is out (the writer
    /// may then never encode it). Returns whether one arrived.
    pub fn wait_arrival(&self) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut state = self.lock();
        while !state.arrived {
            if vfs::power_is_off() {
                return false;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no seal batch reached the gate"
            );
            state = self
                .changed
                .wait_timeout(state, Duration::from_millis(5))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

/// One call, or a short sequence, a plan makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Append the next tick.
    Tick,
    /// Ask for a seal of both streams, wait until the encoder is done and
    /// the writer has taken the segments in, so that the next step, which
    /// must be a tick, carries their commit.
    SealRide,
    /// Seal both streams and wait until the segments are committed, on a
    /// transaction of their own.
    SealSync,
    /// `Writer::checkpoint`.
    Checkpoint,
    /// Seal and wait, then evict everything before the previous such
    /// boundary (so no segment straddles the cutoff and the rows that go
    /// are exactly known). Retention reclaims pages once enough are free.
    Evict,
    /// Finalize, close the writer, reopen the file and resume the source.
    Session,
    /// The same without finalizing: the handle is dropped, so the close
    /// itself prunes what the source's segments cover.
    Restart,
}

/// A workload: writer options and the steps, ending with a finalize and a
/// clean close (which prunes and hands back free pages).
///
/// The writer decides some things by the clock: a finished seal rides on
/// an append that comes within 2 ms or else commits alone, and the
/// periodic checkpoint follows its interval. The driver pins both down so
/// that a plan makes the same operations in the same order run after run:
/// seals are waited for (committed alone, or taken in just before the tick
/// that carries them), and the one plan with periodic checkpoints sets the
/// interval to zero, so one follows every call. What remains is the
/// writer's own: it deletes covered rows stream by stream in hash-map
/// order, which can change by a page what a prune writes.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: &'static str,
    pub options: WriterOptions,
    pub steps: Vec<Step>,
}

pub fn options(policy: SealPolicy, checkpoint: Duration, prune_batch_rows: u64) -> WriterOptions {
    WriterOptions {
        checkpoint_interval: checkpoint,
        seal_policy: policy,
        prune_batch_rows,
        prune_every: 1,
        ..WriterOptions::default()
    }
}

/// `n` ticks, with `every` steps inserted after each `k`-th tick.
pub fn ticks_with(n: usize, every: &[(usize, Step)]) -> Vec<Step> {
    let mut steps = Vec::new();
    for i in 1..=n {
        steps.push(Step::Tick);
        for (k, step) in every {
            if i % k == 0 {
                steps.push(*step);
            }
        }
    }
    steps
}

/// The plans every cut is drawn from; each exercises its own part of the
/// writer, and together they cover every operation that writes the file.
pub fn plans() -> Vec<Plan> {
    let hour = Duration::from_secs(3600);
    vec![
        Plan {
            // Explicit seals, committed alone and riding on appends; pages
            // pruned as they fill; explicit checkpoints.
            name: "explicit",
            options: options(SealPolicy::never(), hour, 16_384),
            steps: ticks_with(
                24,
                &[
                    (5, Step::SealSync),
                    (7, Step::SealRide),
                    (6, Step::Checkpoint),
                ],
            ),
        },
        Plan {
            // Seals by policy, alternately alone and riding on an append,
            // each followed by a prune of every covered row.
            name: "policy",
            options: options(SealPolicy::never().rows(4), hour, 1),
            steps: ticks_with(26, &[]),
        },
        Plan {
            // The periodic checkpoint, after every call.
            name: "periodic",
            options: options(SealPolicy::never(), Duration::ZERO, 16_384),
            steps: ticks_with(20, &[(5, Step::SealSync)]),
        },
        Plan {
            // Retention: evictions that free most of the file, so page
            // reclaim runs, and the close hands back the rest.
            name: "retention",
            options: options(SealPolicy::never(), hour, 1),
            steps: ticks_with(24, &[(6, Step::Evict), (4, Step::Checkpoint)]),
        },
        Plan {
            // Writer sessions: finalize (or not), close, reopen and resume,
            // with policy seals and checkpoints between.
            name: "sessions",
            options: options(SealPolicy::never().rows(5), hour, 16_384),
            steps: ticks_with(
                27,
                &[
                    (8, Step::Session),
                    (13, Step::Restart),
                    (3, Step::Checkpoint),
                ],
            ),
        },
    ]
}

/// What a reader must find once the power is back, as far as this test
/// tracks it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    /// The source exists.
    pub source: bool,
    /// Ticks present in both streams, ascending.
    pub ticks: Vec<i64>,
    /// The source is marked complete.
    pub complete: bool,
}

/// What the writer acknowledged before the cut, and the one call it was
/// making when the power went.
#[derive(Debug, Default, Clone)]
pub struct Ledger {
    /// The state every acknowledged call implies.
    pub acked: Expected,
    /// The state if the interrupted call had landed after all (it failed,
    /// so it may or may not have).
    pub landed: Option<Expected>,
    /// Ticks the writer acknowledged.
    pub acked_ticks: u64,
    /// The error that stopped the run, if one did.
    pub failure: Option<String>,
    /// Writes, syncs and truncations after the archive was created.
    pub ops: u64,
    /// The shim's operation count when the archive had been created.
    pub created_at: u64,
}

impl Ledger {
    /// Records a call's outcome: `effect` is what it does to the state.
    /// Returns the value on success; on failure keeps the alternative.
    fn call<T>(&mut self, result: dendro::Result<T>, effect: impl Fn(&mut Expected)) -> Option<T> {
        match result {
            Ok(v) => {
                effect(&mut self.acked);
                Some(v)
            }
            Err(e) => {
                let mut landed = self.acked.clone();
                effect(&mut landed);
                self.landed = Some(landed);
                self.failure = Some(e.to_string());
                None
            }
        }
    }
}

fn labels() -> Labels {
    Labels::from([("host".into(), "power".into())])
}

/// Runs `plan` against a new archive at `path` until it ends, a call
/// fails, or the power goes out, then stops the writer. With `cut`, the
/// power goes out at that write, sync or truncation counted from the
/// first call after the archive's creation (creation itself is one
/// connection laying down the catalog, not the writer's work). Returns
/// what was acknowledged. The writer is stopped in every case, so no
/// SQLite file stays open.
pub fn drive(path: &Path, plan: &Plan, cut: Option<u64>) -> Ledger {
    let encoder: Arc<dyn SegmentEncoder> = Arc::new(CountingEncoder);
    vfs::phase("create");
    let writer = Writer::create_with(path, Arc::clone(&encoder), plan.options.clone())
        .expect("the archive is created before any cut is armed");
    let created_at = vfs::counters().ops;
    if let Some(k) = cut {
        vfs::arm(created_at + k);
    }
    let mut driver = Driver {
        path,
        plan,
        encoder,
        ledger: Ledger {
            created_at,
            ..Ledger::default()
        },
        writer: Some(writer),
        source: None,
        next: 0,
        boundaries: Vec::new(),
        unsealed: 0,
        policy_seals: 0,
    };
    driver.run();
    // A batch held at the gate when the power went must not stop the
    // writer's close from draining it.
    GATE.release();
    // Whatever happened, nothing stays open.
    drop(driver.source.take());
    if let Some(writer) = driver.writer.take() {
        vfs::phase("close");
        let _ = writer.join();
    }
    vfs::phase("after");
    let mut ledger = driver.ledger;
    ledger.ops = vfs::counters().ops - created_at;
    ledger
}

/// The state of one run.
struct Driver<'a> {
    path: &'a Path,
    plan: &'a Plan,
    encoder: Arc<dyn SegmentEncoder>,
    ledger: Ledger,
    writer: Option<Writer>,
    source: Option<SourceWriter>,
    /// The next tick to append.
    next: i64,
    /// The first tick after each acknowledged seal-and-wait.
    boundaries: Vec<i64>,
    /// Ticks since the last seal, as the writer's row policy counts them.
    unsealed: u64,
    /// Seal batches the row policy asked for.
    policy_seals: u64,
}

impl Driver<'_> {
    fn writer(&self) -> &Writer {
        self.writer
            .as_ref()
            .expect("a writer is open between steps")
    }

    fn source(&self) -> &SourceWriter {
        self.source
            .as_ref()
            .expect("a source is open between steps")
    }

    /// Runs the plan; returns when it ends or must stop.
    fn run(&mut self) {
        vfs::phase("add_source");
        let added = self.writer().add_source(labels(), Labels::new());
        let Some(source) = self.ledger.call(added, |e| e.source = true) else {
            return;
        };
        self.source = Some(source);
        for step in self.plan.steps.clone() {
            let ok = match step {
                Step::Tick => self.tick(),
                Step::SealRide => self.seal_ride(),
                Step::SealSync => self.seal_sync(),
                Step::Checkpoint => {
                    vfs::phase("checkpoint");
                    let done = self.writer().checkpoint();
                    self.ledger.call(done, |_| {}).is_some()
                }
                Step::Evict => self.evict(),
                Step::Session => self.session(true),
                Step::Restart => self.session(false),
            };
            if !ok || vfs::power_is_off() {
                return;
            }
        }
        if self.finalize() && !vfs::power_is_off() {
            vfs::phase("close");
            let writer = self.writer.take().expect("open");
            self.ledger.call(writer.join(), |_| {});
        }
    }

    fn tick(&mut self) -> bool {
        // Whether this tick makes the row policy ask for a seal (before
        // the writer answers), and whether that seal is to ride on the
        // next tick (every second one) or commit alone.
        let due = self
            .plan
            .options
            .seal_policy
            .max_rows
            .is_some_and(|rows| self.unsealed + 1 >= rows);
        let ride = due && self.policy_seals % 2 == 1;
        if ride {
            GATE.hold();
        }
        vfs::phase("append");
        let tick = self.next;
        self.next += 1;
        let done = self.source().wal(rows_at(tick * TS_PER_TICK));
        if self.ledger.call(done, |e| e.ticks.push(tick)).is_none() {
            return false;
        }
        self.ledger.acked_ticks += 1;
        self.unsealed += 1;
        if !due {
            return true;
        }
        self.unsealed = 0;
        self.policy_seals += 1;
        if ride {
            return self.taken_in();
        }
        vfs::phase("seal");
        let synced = self.source().sync();
        self.ledger.call(synced, |_| {}).is_some()
    }

    /// Asks for a seal of both streams, if they hold unsealed rows.
    fn seal(&mut self) -> bool {
        vfs::phase("seal");
        let asked = self.source().seal(["a", "b"]);
        if self.ledger.call(asked, |_| {}).is_none() {
            return false;
        }
        self.unsealed = 0;
        true
    }

    fn seal_sync(&mut self) -> bool {
        if !self.seal() {
            return false;
        }
        let synced = self.source().sync();
        let done = self.ledger.call(synced, |_| {}).is_some();
        if done {
            self.boundaries.push(self.next);
        }
        done
    }

    fn seal_ride(&mut self) -> bool {
        if self.unsealed == 0 {
            // Nothing to seal: no batch will reach the gate.
            return self.seal();
        }
        GATE.hold();
        self.seal() && self.taken_in()
    }

    /// Waits for the held batch at the gate, lets it go, and passes two
    /// calls through the writer, after each of which it takes in finished
    /// seals: the next step, a tick, then carries them.
    fn taken_in(&mut self) -> bool {
        if !GATE.wait_arrival() {
            GATE.release();
            return false;
        }
        GATE.release_held();
        std::thread::sleep(Duration::from_micros(200));
        vfs::phase("seal");
        for _ in 0..2 {
            let asked = self.writer().archive_bytes();
            if self.ledger.call(asked, |_| {}).is_none() {
                return false;
            }
        }
        true
    }

    fn evict(&mut self) -> bool {
        if !self.seal_sync() || vfs::power_is_off() {
            return false;
        }
        let cutoff = self.boundaries[self.boundaries.len().saturating_sub(2)];
        vfs::phase("evict");
        let evicted = self.source().evict_before(cutoff * TS_PER_TICK);
        self.ledger
            .call(evicted, |e| e.ticks.retain(|t| *t >= cutoff))
            .is_some()
    }

    fn finalize(&mut self) -> bool {
        let last = ClockOffset {
            ts: (self.next - 1).max(0) * TS_PER_TICK,
            offset_ns: 0,
        };
        vfs::phase("finalize");
        let source = self.source.take().expect("open");
        self.ledger
            .call(source.finalize(last), |e| e.complete = true)
            .is_some()
    }

    fn session(&mut self, finalize: bool) -> bool {
        if finalize {
            if !self.finalize() || vfs::power_is_off() {
                return false;
            }
        } else {
            drop(self.source.take());
        }
        vfs::phase("close");
        let writer = self.writer.take().expect("open");
        if self.ledger.call(writer.join(), |_| {}).is_none() || vfs::power_is_off() {
            return false;
        }
        vfs::phase("resume");
        let reopened = Writer::open_with(
            self.path,
            Arc::clone(&self.encoder),
            self.plan.options.clone(),
        );
        let Some(writer) = self.ledger.call(reopened, |_| {}) else {
            return false;
        };
        let writer = self.writer.insert(writer);
        let anchor = self.next * TS_PER_TICK - 1;
        let resumed = writer.resume_source_at(1, anchor);
        let Some(source) = self.ledger.call(resumed, |e| e.complete = false) else {
            return false;
        };
        self.source = Some(source);
        true
    }
}
