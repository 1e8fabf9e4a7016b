//! Power cuts at hundreds of points of the writer's work. Each plan is run
//! once whole to learn how many writes and syncs it makes and what each
//! one is part of; then the power is cut at chosen ones, in a fresh run
//! each time. After every reboot, every tick `wal` acknowledged is there,
//! nothing else is missing but the call in flight, the file is sound and
//! the source resumes (`check::after_reboot`).
//!
//! The seed decides every cut; a failure names it and its case, and
//! `DENDRO_POWER_SEED` and `DENDRO_POWER_CASE` rerun just that case. The
//! driver pins down the writer's timers (see `workload::Plan`), so a rerun
//! makes the same operations, save that a prune may write a page more or
//! less (the writer walks streams in hash-map order); a failing case also
//! keeps its rebooted files and says where.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use dendro::SealPolicy;

use crate::check;
use crate::support::{fresh_dir, within, Rng};
use crate::vfs::{self, Cut, Kind, Op, Unsynced};
use crate::workload::{drive, options, plans, ticks_with, Expected, Ledger, Plan, Step};

const SEED: u64 = 0xd0d0_2026_0000_0008;

/// No single call may take longer than this; a hang fails its case.
const LIMIT: Duration = Duration::from_secs(60);

/// The kinds of work every run of the clean-cut test must have been cut
/// in at least twice.
const MUST_COVER: &[&str] = &[
    "append",
    "append carrying a seal",
    "append carrying a prune",
    "seal commit",
    "checkpoint (explicit)",
    "checkpoint (periodic)",
    "checkpoint (at close)",
    "retention",
    "page reclaim",
    "finalize",
    "close",
    "resume",
];

fn seed() -> u64 {
    match std::env::var("DENDRO_POWER_SEED") {
        Ok(text) => {
            let text = text.trim();
            match text.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => text.parse(),
            }
            .expect("DENDRO_POWER_SEED is a number")
        }
        Err(_) => SEED,
    }
}

fn only_case() -> Option<usize> {
    std::env::var("DENDRO_POWER_CASE")
        .ok()
        .map(|v| v.trim().parse().expect("DENDRO_POWER_CASE is a number"))
}

/// What an operation was part of, from what SQLite and the test were
/// doing at the time.
pub fn label(c: &Cut) -> &'static str {
    let checkpoint = |c: &Cut| match (c.pragma.as_deref(), c.phase) {
        (Some("wal_checkpoint"), "checkpoint") => "checkpoint (explicit)",
        (Some("wal_checkpoint"), _) => "checkpoint (periodic)",
        (_, "close") => "checkpoint (at close)",
        _ => "checkpoint (SQLite's own)",
    };
    match c.kind {
        // In WAL mode only a checkpoint writes the main file.
        Kind::MainDb => checkpoint(c),
        // A sync of the log with nothing written since the last one is
        // the checkpoint making sure of the log before copying it.
        Kind::Wal if c.op == Op::Sync && c.wal_writes == 0 => checkpoint(c),
        Kind::Wal if c.pragma.as_deref() == Some("incremental_vacuum") => "page reclaim",
        Kind::Wal => match c.phase {
            "append" if c.seal_waiting => "append carrying a seal",
            "append" if c.prune_due => "append carrying a prune",
            "append" => "append",
            "seal" => "seal commit",
            "evict" => "retention",
            "finalize" => "finalize",
            "close" => "close",
            "resume" => "resume",
            "add_source" => "add source",
            _ => "other",
        },
        Kind::Other => "other",
    }
}

/// A plan's whole run: the operations it makes after creation, described.
/// The finished archive must hold everything and have nothing left
/// unsynced.
fn dry_run(plan: &Plan, context: &str) -> Vec<Cut> {
    vfs::reset();
    let (_dir, path) = fresh_dir();
    vfs::start_trace();
    let ledger = {
        let (path, plan) = (path.clone(), plan.clone());
        within(LIMIT, context, move || drive(&path, &plan, None))
    };
    let trace = vfs::take_trace();
    assert_eq!(
        ledger.failure, None,
        "{context}: the run failed with no cut"
    );
    assert!(ledger.acked.complete, "{context}: the run did not finish");
    let restored = vfs::restore(Unsynced::Lost);
    assert_eq!(
        restored.pending_dropped, 0,
        "{context}: a clean close left writes that no sync made durable"
    );
    let found = reboot_checks(&path, &ledger, context);
    assert_eq!(found, ledger.acked, "{context}: a clean run");
    trace
        .into_iter()
        .filter(|c| c.index > ledger.created_at)
        .collect()
}

/// The reboot's checks, on a thread of their own so a hang fails the case.
fn reboot_checks(path: &Path, ledger: &Ledger, context: &str) -> Expected {
    let (path, ledger, context) = (path.to_path_buf(), ledger.clone(), context.to_string());
    within(LIMIT, &context.clone(), move || {
        check::after_reboot(&path, &ledger, &context)
    })
}

/// The cut points of one plan: `uniform` drawn over all its operations,
/// then `per_label` drawn among the operations of each kind, so rare kinds
/// (a finalize, a reclaim pass) are cut too.
fn choose(labels: &[&'static str], rng: &mut Rng, uniform: usize, per_label: usize) -> Vec<u64> {
    let total = labels.len() as u64;
    let mut cuts: Vec<u64> = (0..uniform).map(|_| 1 + rng.below(total)).collect();
    let mut by_label: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (i, l) in labels.iter().enumerate() {
        by_label.entry(l).or_default().push(i as u64 + 1);
    }
    for ops in by_label.values() {
        for _ in 0..per_label {
            cuts.push(ops[rng.below(ops.len() as u64) as usize]);
        }
    }
    cuts
}

/// Figures for the report and for docs/measurements/.
#[derive(Default)]
struct Report {
    cuts: u64,
    by_label: BTreeMap<&'static str, u64>,
    never_reached: u64,
    acked_ticks: u64,
    lost_ticks: u64,
    /// Interrupted calls whose effect is nevertheless in the file.
    landed_anyway: Vec<String>,
    pending_dropped: u64,
    pending_landed: u64,
}

impl Report {
    fn print(&self, title: &str, seed: u64, started: Instant) {
        eprintln!(
            "{title}: seed {seed:#x}, {} cuts in {:.1?}",
            self.cuts,
            started.elapsed()
        );
        for (label, n) in &self.by_label {
            eprintln!("  {n:4}  {label}");
        }
        eprintln!(
            "  ticks acknowledged before the cuts {}, lost {}; cuts past the end of the run {}; \
             unsynced operations dropped {}, landed {}; interrupted calls that landed anyway {}:",
            self.acked_ticks,
            self.lost_ticks,
            self.never_reached,
            self.pending_dropped,
            self.pending_landed,
            self.landed_anyway.len()
        );
        for case in &self.landed_anyway {
            eprintln!("    {case}");
        }
    }
}

/// What the reboot does with the writes no sync made durable.
#[derive(Clone, Copy)]
enum Reboot {
    /// All lost.
    Lost,
    /// A random part lands, whole or torn at a sector boundary.
    Torn,
    /// As `Torn`, and a write may also land as garbage over its range.
    Garbage,
}

/// Runs every plan's cuts, each in a fresh run.
fn run(title: &str, uniform: usize, per_label: usize, reboot: Reboot) -> Report {
    let started = Instant::now();
    let seed = seed();
    let only = only_case();
    let mut rng = Rng(seed);
    let mut report = Report::default();
    let mut case = 0usize;
    for plan in plans() {
        let context = format!("{title}: seed {seed:#x}, plan {}", plan.name);
        let labels: Vec<&str> = dry_run(&plan, &format!("{context}, whole run"))
            .iter()
            .map(label)
            .collect();
        let cuts = choose(&labels, &mut rng, uniform, per_label);
        for at in cuts {
            case += 1;
            let torn_seed = rng.below(u64::MAX);
            if only.is_some_and(|c| c != case) {
                continue;
            }
            let context = format!(
                "{context}, case {case}, cut at operation {at} of {} (aimed at: {}); rerun with \
                 DENDRO_POWER_SEED={seed:#x} DENDRO_POWER_CASE={case}",
                labels.len(),
                labels[at as usize - 1]
            );
            one_cut(&plan, at, reboot, torn_seed, &context, &mut report);
        }
    }
    report.print(title, seed, started);
    report
}

/// One fresh run of `plan`, cut at operation `at`, rebooted and checked.
fn one_cut(plan: &Plan, at: u64, reboot: Reboot, seed: u64, context: &str, report: &mut Report) {
    let mut rng = Rng(seed);
    let mut next = |n| rng.below(n);
    let unsynced = match reboot {
        Reboot::Lost => Unsynced::Lost,
        Reboot::Torn => Unsynced::Torn {
            next: &mut next,
            garbage: false,
        },
        Reboot::Garbage => Unsynced::Torn {
            next: &mut next,
            garbage: true,
        },
    };
    cut_and_check(plan, at, unsynced, context, report)
}

fn cut_and_check(plan: &Plan, at: u64, unsynced: Unsynced<'_>, context: &str, report: &mut Report) {
    vfs::reset();
    let (dir, path) = fresh_dir();
    let ledger = {
        let (path, plan) = (path.clone(), plan.clone());
        within(LIMIT, context, move || drive(&path, &plan, Some(at)))
    };
    let cut = vfs::cut();
    let label = match &cut {
        Some(c) => label(c),
        None => {
            // The run made fewer operations than the whole run did (a
            // prune wrote a page less): it ended uncut.
            assert_eq!(ledger.failure, None, "{context}: a call failed with no cut");
            report.never_reached += 1;
            "(run ended first)"
        }
    };
    let restored = vfs::restore(unsynced);
    // The rebooted files, copied before the checks write to them (the
    // resume does), and kept if the checks fail.
    let evidence = dir.path().join("rebooted");
    std::fs::create_dir(&evidence).unwrap();
    for suffix in ["", "-wal"] {
        let from = vfs::sidecar(&path, suffix);
        if from.exists() {
            std::fs::copy(&from, vfs::sidecar(&evidence.join("power.dendro"), suffix)).unwrap();
        }
    }
    let context = format!("{context}; cut in: {label} {cut:?}");
    let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        reboot_checks(&path, &ledger, &context)
    }));
    let found = match checked {
        Ok(found) => found,
        Err(panic) => {
            let kept = dir.keep().join("rebooted");
            eprintln!(
                "the rebooted files of the failed case are kept in {}",
                kept.display()
            );
            std::panic::resume_unwind(panic)
        }
    };
    report.cuts += 1;
    *report.by_label.entry(label).or_default() += 1;
    report.acked_ticks += ledger.acked_ticks;
    report.lost_ticks += ledger
        .acked
        .ticks
        .iter()
        .filter(|t| !found.ticks.contains(t))
        .count() as u64;
    if found != ledger.acked {
        report.landed_anyway.push(format!(
            "{} cut {at} in {label}: reported {:?}",
            plan.name,
            ledger.failure.as_deref().unwrap_or("nothing")
        ));
    }
    report.pending_dropped += restored.pending_dropped as u64;
    report.pending_landed += restored.pending_landed as u64;
}

#[test]
fn a_power_cut_at_any_write_or_sync_keeps_every_acknowledged_tick() {
    let _shim = vfs::exclusive();
    let report = run("power cut, unsynced writes lost", 24, 3, Reboot::Lost);
    assert_eq!(report.lost_ticks, 0);
    if only_case().is_none() {
        assert!(report.cuts >= 200, "hundreds of cuts, not {}", report.cuts);
        for label in MUST_COVER {
            let n = report.by_label.get(label).copied().unwrap_or(0);
            assert!(n >= 2, "only {n} cut(s) landed in {label:?}");
        }
    }
}

/// SQLite's promise under `synchronous=FULL` is that a sync is a barrier:
/// what was written before it survives, and any part of what was written
/// after the last one may survive too, since the log's checksums and salts
/// reject every frame that is not part of a whole, later commit, and a
/// checkpoint's copy into the main file counts for nothing until the main
/// file is synced (the log still holds every page). So the same outcome is
/// asserted, except that the call in flight may now have landed.
#[test]
fn a_power_cut_that_lands_part_of_the_unsynced_writes_keeps_every_acknowledged_tick() {
    let _shim = vfs::exclusive();
    let report = run("power cut, unsynced writes torn", 6, 1, Reboot::Torn);
    assert_eq!(report.lost_ticks, 0);
    if only_case().is_none() {
        assert!(report.pending_landed > 0, "no unsynced write ever landed");
    }
}

/// As above, with a sector caught mid-write landing as garbage, which
/// SQLite also survives (the unix VFS claims powersafe overwrite: nothing
/// outside the write's own range changes).
#[test]
fn a_power_cut_that_leaves_garbage_in_unsynced_writes_keeps_every_acknowledged_tick() {
    let _shim = vfs::exclusive();
    let report = run("power cut, unsynced writes garbled", 8, 1, Reboot::Garbage);
    assert_eq!(report.lost_ticks, 0);
}

/// The smallest case behind the garbled variant's failures: the power goes
/// out as a checkpoint is about to sync what it copied into the main file,
/// and the copy of page 1 lands as garbage. The log still holds every page
/// (SQLite opens the file and finds it whole); dendro must too.
#[test]
fn an_archive_whose_header_page_a_cut_checkpoint_garbled_still_opens() {
    let _shim = vfs::exclusive();
    let plan = Plan {
        name: "header",
        options: options(SealPolicy::never(), Duration::from_secs(3600), 16_384),
        steps: ticks_with(6, &[(6, Step::Checkpoint)]),
    };
    let ops = dry_run(&plan, "header, whole run");
    let at = ops
        .iter()
        .position(|c| c.kind == Kind::MainDb && c.op == Op::Sync && c.phase == "checkpoint")
        .expect("the checkpoint syncs the main file") as u64
        + 1;
    assert!(
        ops.iter()
            .any(|c| c.kind == Kind::MainDb && c.op == Op::Write && c.offset == 0),
        "the checkpoint copies page 1"
    );
    vfs::reset();
    // Every unsynced write lands, as garbage.
    let mut garbage = |n: u64| 3 % n;
    cut_and_check(
        &plan,
        at,
        Unsynced::Torn {
            next: &mut garbage,
            garbage: true,
        },
        &format!("header: cut at operation {at}, the checkpoint's sync of the main file"),
        &mut Report::default(),
    );
}
