//! A disk that fills while the writer works, and frees up again: every
//! write fails with `SQLITE_FULL` (what the unix VFS answers on `ENOSPC`)
//! for the length of an episode. The rules: a tick that cannot commit is
//! reported to its caller as `TickDropped` naming the file; nothing
//! committed before is lost; the file stays sound; and once space returns
//! the same writer appends and seals again. One episode each hits an
//! append, a seal's commit, a prune, a checkpoint, retention and a close.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use dendro::write::{SourceWriter, Writer, WriterOptions};
use dendro::{Archive, ClockOffset, Error, Labels, SealPolicy};

use crate::check::found;
use crate::common::logs::logs;
use crate::support::fresh_dir;
use crate::vfs;
use crate::workload::{rows_at, CountingEncoder, TS_PER_TICK};

/// Whether a warning naming `path` and containing `needle` was logged.
fn warned(path: &Path, needle: &str) -> bool {
    logs().count(path, needle) > 0
}

fn options(policy: SealPolicy, prune_batch_rows: u64) -> WriterOptions {
    WriterOptions {
        checkpoint_interval: Duration::from_secs(3600),
        seal_policy: policy,
        prune_batch_rows,
        prune_every: 1,
        ..WriterOptions::default()
    }
}

fn start(path: &Path, options: WriterOptions) -> (Writer, SourceWriter) {
    logs();
    let writer = Writer::create_with(path, Arc::new(CountingEncoder), options).unwrap();
    let source = writer.add_source(Labels::new(), Labels::new()).unwrap();
    (writer, source)
}

fn tick(source: &SourceWriter, t: i64) -> dendro::Result<()> {
    source.wal(rows_at(t * TS_PER_TICK))
}

/// Commits ticks `range`, each of which must commit.
fn ticks(source: &SourceWriter, range: std::ops::Range<i64>) {
    for t in range {
        tick(source, t).unwrap();
    }
}

/// A writer whose ticks 0 to 5 are sealed and whose tick 6 is live.
fn six_sealed_and_one_live(path: &Path) -> (Writer, SourceWriter) {
    let (writer, source) = start(path, options(SealPolicy::never(), 16_384));
    ticks(&source, 0..6);
    source.seal(["a", "b"]).unwrap();
    source.sync().unwrap();
    tick(&source, 6).unwrap();
    (writer, source)
}

/// A tick the full disk refused, reported as dropped and naming the file.
fn assert_dropped(result: dendro::Result<()>, path: &Path, source: &SourceWriter) {
    match result {
        Err(Error::TickDropped {
            file,
            source_id,
            cause,
        }) => {
            assert_eq!(file, path.display().to_string());
            assert_eq!(source_id, source.id());
            assert!(
                cause.contains("full"),
                "the cause says the disk is full: {cause}"
            );
        }
        other => panic!("expected the tick to be reported dropped, got {other:?}"),
    }
}

fn sealed_and_live(path: &Path) -> (i64, i64) {
    let archive = Archive::open(path).unwrap();
    let description = dendro::read::describe(&archive).unwrap();
    let stream = description.sources[0]
        .streams
        .iter()
        .find(|s| s.name == "a")
        .unwrap();
    (stream.sealed_rows, stream.live_rows)
}

fn assert_sound(path: &Path) {
    let report = Archive::open(path).unwrap().verify().unwrap();
    assert!(report.sound, "verify: {:?}", report.problems);
}

fn finish(writer: Writer, source: SourceWriter, last: i64) {
    source
        .finalize(ClockOffset {
            ts: last * TS_PER_TICK,
            offset_ns: 0,
        })
        .unwrap();
    writer.join().unwrap();
}

#[test]
fn a_full_disk_drops_the_ticks_it_hits_and_the_writer_carries_on() {
    let _shim = vfs::exclusive();
    let (_dir, path) = fresh_dir();
    let (writer, source) = start(&path, options(SealPolicy::never(), 16_384));
    ticks(&source, 0..5);
    vfs::set_full(true);
    for t in 5..8 {
        assert_dropped(tick(&source, t), &path, &source);
    }
    assert!(vfs::counters().full_refusals > 0);
    // Readers see everything committed before the disk filled.
    assert_eq!(found(&path).ticks, (0..5).collect::<Vec<_>>());
    vfs::set_full(false);
    ticks(&source, 8..12);
    source.seal(["a", "b"]).unwrap();
    source.sync().unwrap();
    let expected: Vec<i64> = (0..5).chain(8..12).collect();
    assert_eq!(found(&path).ticks, expected);
    assert_eq!(sealed_and_live(&path), (9, 0));
    assert_sound(&path);
    finish(writer, source, 11);
    assert_sound(&path);
}

#[test]
fn a_seal_that_meets_a_full_disk_leaves_its_rows_live_and_lands_once_space_returns() {
    let _shim = vfs::exclusive();
    let (_dir, path) = fresh_dir();
    // Explicit: the seal's own commit meets the full disk, is retried,
    // then deferred with a warning; its rows stay live.
    let (writer, source) = start(&path, options(SealPolicy::never(), 16_384));
    ticks(&source, 0..6);
    vfs::set_full(true);
    source.seal(["a", "b"]).unwrap();
    source.sync().unwrap();
    assert!(warned(&path, "deferred"), "the deferred seal is logged");
    assert_eq!(sealed_and_live(&path), (0, 6));
    assert_dropped(tick(&source, 6), &path, &source);
    vfs::set_full(false);
    tick(&source, 7).unwrap();
    source.seal(["a", "b"]).unwrap();
    source.sync().unwrap();
    assert_eq!(sealed_and_live(&path), (7, 0));
    assert_eq!(found(&path).ticks, vec![0, 1, 2, 3, 4, 5, 7]);
    assert_sound(&path);
    finish(writer, source, 7);
    assert_sound(&path);
}

#[test]
fn a_policy_seal_that_meets_a_full_disk_seals_its_rows_once_space_returns() {
    let _shim = vfs::exclusive();
    let (_dir, path) = fresh_dir();
    // By policy: the seal is asked for by the fourth tick and commits on
    // the next append or on its own, both while the disk is full.
    let (writer, source) = start(&path, options(SealPolicy::never().rows(4), 16_384));
    ticks(&source, 0..4);
    vfs::set_full(true);
    assert_dropped(tick(&source, 4), &path, &source);
    assert_dropped(tick(&source, 5), &path, &source);
    assert_eq!(sealed_and_live(&path), (0, 4));
    vfs::set_full(false);
    ticks(&source, 6..10);
    source.sync().unwrap();
    let (sealed, live) = sealed_and_live(&path);
    assert_eq!(sealed + live, 8);
    assert!(
        sealed >= 4,
        "the policy sealed again once space returned: {sealed} sealed"
    );
    assert_eq!(found(&path).ticks, vec![0, 1, 2, 3, 6, 7, 8, 9]);
    assert_sound(&path);
    finish(writer, source, 9);
    assert_sound(&path);
}

#[test]
fn a_prune_that_meets_a_full_disk_goes_with_the_next_append() {
    let _shim = vfs::exclusive();
    let (_dir, path) = fresh_dir();
    // Every covered row goes with the first append after a seal.
    let (writer, source) = start(&path, options(SealPolicy::never(), 1));
    ticks(&source, 0..5);
    source.seal(["a", "b"]).unwrap();
    source.sync().unwrap();
    let wal_rows = |path: &Path| {
        Archive::open(path)
            .unwrap()
            .read_snapshot(|s| s.wal_rows_total(1, "a"))
            .unwrap()
    };
    assert_eq!(wal_rows(&path), 5, "covered, not yet pruned");
    vfs::set_full(true);
    assert_dropped(tick(&source, 5), &path, &source);
    assert_eq!(wal_rows(&path), 5, "the prune went with the dropped tick");
    vfs::set_full(false);
    tick(&source, 6).unwrap();
    assert_eq!(wal_rows(&path), 1, "the next append carried the prune");
    assert_eq!(found(&path).ticks, vec![0, 1, 2, 3, 4, 6]);
    assert_sound(&path);
    finish(writer, source, 6);
    assert_sound(&path);
}

#[test]
fn a_checkpoint_that_meets_a_full_disk_is_reported_and_the_next_one_completes() {
    let _shim = vfs::exclusive();
    let (dir, path) = fresh_dir();
    let (writer, source) = start(&path, options(SealPolicy::never(), 16_384));
    ticks(&source, 0..8);
    vfs::set_full(true);
    let failed = writer
        .checkpoint()
        .expect_err("a checkpoint cannot copy to a full disk");
    let message = failed.to_string();
    assert!(
        message.contains(&path.display().to_string()) && message.contains("full"),
        "the error names the file and the cause: {message}"
    );
    assert_dropped(tick(&source, 8), &path, &source);
    vfs::set_full(false);
    tick(&source, 9).unwrap();
    let report = writer.checkpoint().unwrap();
    assert!(
        !report.busy && report.checkpointed_frames == report.wal_frames,
        "{report:?}"
    );
    // Checkpointed whole: the main file alone now holds every tick.
    let main_only = dir.path().join("main-only.dendro");
    std::fs::copy(&path, &main_only).unwrap();
    let expected: Vec<i64> = (0..8).chain([9]).collect();
    assert_eq!(found(&main_only).ticks, expected);
    assert_eq!(found(&path).ticks, expected);
    assert_sound(&path);
    finish(writer, source, 9);
    assert_sound(&path);
}

#[test]
fn retention_that_meets_a_full_disk_fails_whole_and_succeeds_once_space_returns() {
    let _shim = vfs::exclusive();
    let (_dir, path) = fresh_dir();
    let (writer, source) = six_sealed_and_one_live(&path);
    vfs::set_full(true);
    let failed = source
        .evict_before(6 * TS_PER_TICK)
        .expect_err("retention cannot commit on a full disk");
    assert!(
        failed.to_string().contains(&path.display().to_string()),
        "{failed}"
    );
    assert_eq!(
        found(&path).ticks,
        (0..7).collect::<Vec<_>>(),
        "nothing went"
    );
    vfs::set_full(false);
    let evicted = source.evict_before(6 * TS_PER_TICK).unwrap();
    assert_eq!((evicted.segments, evicted.live_rows), (2, 0));
    assert_eq!(found(&path).ticks, vec![6]);
    tick(&source, 7).unwrap();
    assert_sound(&path);
    finish(writer, source, 7);
    assert_sound(&path);
}

#[test]
fn a_full_disk_at_close_keeps_every_committed_row() {
    let _shim = vfs::exclusive();
    let (_dir, path) = fresh_dir();
    let (writer, source) = six_sealed_and_one_live(&path);
    // The close's prune and SQLite's closing checkpoint both meet the
    // full disk; the log keeps what they could not copy.
    vfs::set_full(true);
    drop(source);
    writer.join().unwrap();
    assert!(warned(&path, "pruning sealed rows at close failed"));
    assert!(
        vfs::sidecar(&path, "-wal").exists(),
        "the log was not folded in"
    );
    vfs::set_full(false);
    assert_eq!(found(&path).ticks, (0..7).collect::<Vec<_>>());
    assert_sound(&path);
    let writer =
        Writer::open_with(&path, Arc::new(CountingEncoder), WriterOptions::default()).unwrap();
    let source = writer.resume_source(1).unwrap();
    let ts = source.clock().now().0;
    source.wal(rows_at(ts)).unwrap();
    finish(writer, source, ts / TS_PER_TICK);
    assert_sound(&path);
}

#[test]
fn a_disk_full_episode_longer_than_thirty_ticks_drops_each_tick_and_the_writer_carries_on() {
    let _shim = vfs::exclusive();
    let (_dir, path) = fresh_dir();
    let (writer, source) = start(&path, options(SealPolicy::never(), 16_384));
    ticks(&source, 0..3);
    vfs::set_full(true);
    for t in 3..38 {
        assert_dropped(tick(&source, t), &path, &source);
    }
    vfs::set_full(false);
    ticks(&source, 38..41);
    source.seal(["a", "b"]).unwrap();
    source.sync().unwrap();
    let expected: Vec<i64> = (0..3).chain(38..41).collect();
    assert_eq!(found(&path).ticks, expected);
    assert_eq!(sealed_and_live(&path), (6, 0));
    assert_sound(&path);
    finish(writer, source, 40);
    assert_sound(&path);
}
