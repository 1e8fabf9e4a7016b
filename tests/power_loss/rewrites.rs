//! Power cuts during the rewrites and the staged catch-up: copy, project,
//! vacuum-into and a replica's staged catch-up build a file beside its
//! final name and move it there (file fsync, rename or link, directory
//! fsync); compaction rewrites in place. The shim keeps the contents, the
//! `names` model keeps the renames, and the power goes out at every one of
//! their operations in turn (or a spread of them, for long ones).
//!
//! After each reboot the final name holds nothing (or, for compaction, the
//! archive it held) or a whole sound archive with the expected content,
//! and running the same work again succeeds and leaves no temporary file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dendro::rewrite::{compact, copy, project, vacuum_into, CompactSpec, CopySpec, Target};
use dendro::Archive;

use crate::common::{copy_fixture, fixtures_dir, FixtureEncoder};
use crate::names;
use crate::support::within;
use crate::vfs;

const LIMIT: Duration = Duration::from_secs(120);

/// At most this many cut points per rewrite, spread over all of them.
const MAX_CUTS: u64 = 120;

/// What an archive holds, independent of segmentation and uuids: per
/// source (in id order) its labels and, per stream, sealed rows, their
/// span and live rows.
type Summary = Vec<(String, BTreeMap<String, (i64, i64, i64, usize)>)>;

fn summary(path: &Path) -> Summary {
    let archive = Archive::open(path).unwrap();
    archive
        .read_snapshot(|s| {
            let mut out = Vec::new();
            for source in s.sources()? {
                let mut streams = BTreeMap::new();
                for stream in s.streams(source.id)? {
                    let segments = s.segments(source.id, &stream)?;
                    let rows = segments.iter().map(|r| r.rows).sum();
                    let first = segments.iter().map(|r| r.first_ts).min().unwrap_or(0);
                    let last = segments.iter().map(|r| r.last_ts).max().unwrap_or(0);
                    let live = s.live_wal_rows(source.id, &stream)?.len();
                    streams.insert(stream, (rows, first, last, live));
                }
                out.push((format!("{:?}", source.source.labels), streams));
            }
            Ok(out)
        })
        .unwrap()
}

/// Whether `found` has the sources and streams of `full`, each with at
/// most its rows.
fn is_prefix(found: &Summary, full: &Summary) -> bool {
    found.len() <= full.len()
        && found.iter().zip(full).all(|((labels, streams), (l, s))| {
            labels == l
                && streams.iter().all(|(name, (rows, _, _, live))| {
                    s.get(name).is_some_and(|(r, _, _, lv)| {
                        rows <= r && rows + *live as i64 <= r + *lv as i64
                    })
                })
        })
}

fn assert_sound(path: &Path, what: &str) {
    let report = Archive::open(path).unwrap().verify().unwrap();
    assert!(report.sound, "{what}: {:?}", report.problems);
}

/// Names in `dir` other than the input and the final output (and their
/// SQLite sidecars, which a closed archive may still have as empty files).
fn leftovers(dir: &Path, keep: &[&Path]) -> Vec<String> {
    let keep: Vec<String> = keep
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            !keep.iter().any(|k| {
                n == k
                    || n.strip_prefix(k.as_str())
                        .is_some_and(|s| s.starts_with('-'))
            })
        })
        .collect();
    out.sort();
    out
}

/// One rewrite under test: its name, whether it writes in place, and the
/// work (input, output).
struct Case {
    name: &'static str,
    in_place: bool,
    /// Once in place, the result is an archive a writer keeps appending
    /// to (a replica): a cut after that may leave a sound prefix of it.
    prefix_allowed: bool,
    run: fn(&Path, &Path) -> dendro::Result<()>,
}

fn copy_all(input: &Path, output: &Path) -> dendro::Result<()> {
    copy(input, output, &CopySpec::default()).map(|_| ())
}

fn project_value(input: &Path, output: &Path) -> dendro::Result<()> {
    project(input, output, &["value".to_string()], false).map(|_| ())
}

fn vacuum(input: &Path, output: &Path) -> dendro::Result<()> {
    vacuum_into(input, output, false)
}

fn compact_all(_input: &Path, output: &Path) -> dendro::Result<()> {
    let spec = CompactSpec {
        target: Target::Rows(1 << 40),
        union_fields: true,
    };
    compact(output, &spec, |_| {}).map(|_| ())
}

fn catch_up(input: &Path, output: &Path) -> dendro::Result<()> {
    let mut publisher = dendro::replicate::Publisher::new(Archive::open(input)?);
    let frames = publisher.poll()?;
    drop(publisher);
    let encoder: Arc<dyn dendro::SegmentEncoder> = Arc::new(FixtureEncoder::default());
    let mut subscriber = dendro::replicate::Subscriber::open(output, encoder)?;
    for frame in frames {
        subscriber.apply(frame)?;
    }
    subscriber.finish().map(|_| ())
}

/// Runs `case` once clean to learn its operations and result, then once
/// per cut point from a fresh start, checking each reboot.
fn sweep(case: &Case) {
    let _shim = vfs::exclusive();
    let (dir, input) = copy_fixture(&fixtures_dir().join("g_caller_index.dendro"));
    let output: PathBuf = dir.path().join("out.dendro");
    let fresh = |output: &Path| {
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path != input {
                let _ = std::fs::remove_file(&path);
            }
        }
        if case.in_place {
            std::fs::copy(&input, output).unwrap();
        }
    };
    let before = summary(&input);

    fresh(&output);
    vfs::reset();
    let observing = names::install();
    let start = vfs::counters().ops;
    let run = case.run;
    let (i, o) = (input.clone(), output.clone());
    within(LIMIT, case.name, move || run(&i, &o)).unwrap();
    let total = vfs::counters().ops - start;
    drop(observing);
    let expected = summary(&output);
    assert_eq!(
        expected, before,
        "{}: the clean run changed the content",
        case.name
    );
    assert!(total > 3, "{}: only {total} operations seen", case.name);

    // The power goes right after the work said it was done: all of it
    // must be on disk, names included.
    fresh(&output);
    vfs::reset();
    let observing = names::install();
    let (i, o) = (input.clone(), output.clone());
    within(LIMIT, case.name, move || run(&i, &o)).unwrap();
    names::restore();
    drop(observing);
    assert!(
        output.exists(),
        "{}: the result vanished in a cut after success",
        case.name
    );
    assert_sound(&output, case.name);
    assert_eq!(
        summary(&output),
        expected,
        "{}: a cut after success",
        case.name
    );

    let step = total.div_ceil(MAX_CUTS).max(1);
    let mut cuts = 0;
    let mut whole_after_cut = 0;
    for k in (1..=total).step_by(step as usize) {
        fresh(&output);
        vfs::reset();
        let observing = names::install();
        vfs::arm(vfs::counters().ops + k);
        let (i, o) = (input.clone(), output.clone());
        let result = within(LIMIT, case.name, move || run(&i, &o));
        let cut = vfs::cut();
        names::restore();
        drop(observing);
        let what = format!("{} cut at operation {k} of {total} ({cut:?})", case.name);
        if cut.is_some() {
            cuts += 1;
        }
        // Success may be claimed despite a cut only if what it claims
        // was already durable (a close's best-effort checkpoint failing).
        if result.is_ok() {
            assert!(
                output.exists() && summary(&output) == expected,
                "{what}: the work claimed success but its result is not on disk"
            );
        }
        if output.exists() && std::fs::metadata(&output).unwrap().len() > 0 {
            assert_sound(&output, &what);
            let found = summary(&output);
            if found == expected {
                whole_after_cut += 1;
            } else if case.prefix_allowed {
                assert!(
                    is_prefix(&found, &expected),
                    "{what}: the replica holds what the stream never said: {found:?} vs {expected:?}"
                );
            } else {
                assert!(
                    case.in_place && found == before,
                    "{what}: the output holds neither the result nor the original: {found:?}"
                );
            }
        } else {
            assert!(
                !case.in_place,
                "{what}: the archive compacted in place is gone"
            );
        }
        // Running again finishes the work and leaves nothing beside it.
        vfs::reset();
        if !case.in_place && output.exists() {
            std::fs::remove_file(&output).unwrap();
            for suffix in ["-wal", "-shm", "-journal"] {
                let _ = std::fs::remove_file(vfs::sidecar(&output, suffix));
            }
        }
        let (i, o) = (input.clone(), output.clone());
        within(LIMIT, case.name, move || run(&i, &o))
            .unwrap_or_else(|e| panic!("{what}: the next run failed: {e}"));
        assert_eq!(summary(&output), expected, "{what}: the next run");
        assert_eq!(
            leftovers(dir.path(), &[&input, &output]),
            Vec::<String>::new(),
            "{what}: files left beside the output"
        );
    }
    assert!(cuts > 0, "{}: no cut landed", case.name);
    eprintln!(
        "{}: {total} operations, {cuts} cuts, {whole_after_cut} left the whole result",
        case.name
    );
}

#[test]
fn a_power_cut_during_a_copy_leaves_nothing_or_the_whole_copy() {
    sweep(&Case {
        name: "copy",
        in_place: false,
        prefix_allowed: false,
        run: copy_all,
    });
}

#[test]
fn a_power_cut_during_a_projection_leaves_nothing_or_the_whole_projection() {
    sweep(&Case {
        name: "project",
        in_place: false,
        prefix_allowed: false,
        run: project_value,
    });
}

#[test]
fn a_power_cut_during_vacuum_into_leaves_nothing_or_the_whole_copy() {
    sweep(&Case {
        name: "vacuum-into",
        in_place: false,
        prefix_allowed: false,
        run: vacuum,
    });
}

#[test]
fn a_power_cut_during_compaction_leaves_the_archive_sound_with_every_row() {
    sweep(&Case {
        name: "compact",
        in_place: true,
        prefix_allowed: false,
        run: compact_all,
    });
}

#[test]
fn a_power_cut_during_a_staged_catch_up_leaves_no_replica_or_a_whole_one() {
    sweep(&Case {
        name: "catch-up",
        in_place: false,
        prefix_allowed: true,
        run: catch_up,
    });
}
