//! The fleet export (issue 37): ten demo archives of about 100 MB (three
//! hosts, an hour each) exported into one dataset, against `cp` of the
//! same bytes; then one more hour in each archive, and what the second
//! export writes; then a rerun with nothing new.
//!
//! An archive "with one more hour" is the demo written for two hours; the
//! first export reads a copy of its first hour (`rewrite::copy` with `--to`
//! and `--trim`, which keeps the sources' uuids), the second the whole of
//! it: the same sources with an hour appended, as a writer would leave them.
//!
//! `cargo bench --bench fleet_export [-- --archives N --mb M --keep]`;
//! the archives and the dataset are written under `target/fleet-bench/`
//! (removed at the end unless `--keep`). A table on stderr, one JSON line
//! per figure on stdout.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dendro::demo::{write_demo, DemoOptions};
use dendro::rewrite::{copy, export_dataset, read_manifest, CopySpec, DatasetOptions};

const HOUR_NS: i64 = 3_600_000_000_000;

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// `cp` of every file into `to`, each synced (as the export syncs its own).
fn cp(files: &[PathBuf], to: &Path) -> Duration {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    let started = Instant::now();
    let status = std::process::Command::new("cp")
        .args(files)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
    for f in std::fs::read_dir(to).unwrap() {
        std::fs::File::open(f.unwrap().path())
            .unwrap()
            .sync_all()
            .unwrap();
    }
    let took = started.elapsed();
    std::fs::remove_dir_all(to).unwrap();
    took
}

fn main() {
    let archives = arg("--archives", 10) as usize;
    let mb = arg("--mb", 100);
    let keep = std::env::args().any(|a| a == "--keep");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fleet-bench");
    std::fs::create_dir_all(&root).unwrap();
    let dataset = root.join("dataset");
    let _ = std::fs::remove_dir_all(&dataset);

    // Two hours each, about `mb` per hour; the first hour copied apart.
    let mut full = Vec::new();
    let mut first = Vec::new();
    let generated = Instant::now();
    for i in 0..archives {
        let whole = root.join(format!("host{i:02}-2h.dendro"));
        let head = root.join(format!("host{i:02}-1h.dendro"));
        if !whole.exists() {
            let options = DemoOptions {
                duration: Duration::from_secs(7200),
                ..DemoOptions::sized(mb * 1_000_000)
            };
            write_demo(&whole, options).unwrap();
        }
        if !head.exists() {
            let newest = dendro::write::wall_clock_ns();
            let spec = CopySpec {
                to: Some(
                    newest.min(
                        std::fs::metadata(&whole)
                            .unwrap()
                            .modified()
                            .map_or(newest, |t| {
                                t.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64
                            }),
                    ) - HOUR_NS,
                ),
                trim: true,
                ..CopySpec::default()
            };
            copy(&whole, &head, &spec).unwrap();
        }
        full.push(whole);
        first.push(head);
    }
    eprintln!("inputs ready in {:?}", generated.elapsed());
    let first_bytes: u64 = first.iter().map(|p| size(p)).sum();
    let full_bytes: u64 = full.iter().map(|p| size(p)).sum();

    // cp of the first hour's bytes, three times.
    let cp_took = median((0..3).map(|_| cp(&first, &root.join("cp"))).collect());

    let options = DatasetOptions::default();
    let started = Instant::now();
    let one = export_dataset(&first, &dataset, &options).unwrap();
    let export_took = started.elapsed();
    let manifest = read_manifest(&dataset).unwrap();
    let segments_in = one.segments_read;

    let started = Instant::now();
    let two = export_dataset(&full, &dataset, &options).unwrap();
    let second_took = started.elapsed();
    let after = read_manifest(&dataset).unwrap();
    let untouched = manifest
        .files
        .iter()
        .all(|f| after.files.iter().any(|g| g == f));

    let started = Instant::now();
    let three = export_dataset(&full, &dataset, &options).unwrap();
    let rerun_took = started.elapsed();

    let mbs = |bytes: u64, t: Duration| bytes as f64 / 1e6 / t.as_secs_f64();
    let export_mbs = mbs(first_bytes, export_took);
    let cp_mbs = mbs(first_bytes, cp_took);
    let rows = |m: &dendro::rewrite::Manifest| m.files.iter().map(|f| f.rows).sum::<u64>();
    let figures = serde_json::json!({
        "archives": archives,
        "input_bytes_first_hour": first_bytes,
        "input_bytes_two_hours": full_bytes,
        "cp_s_median_of_3": cp_took.as_secs_f64(),
        "cp_mb_s": cp_mbs,
        "export_s": export_took.as_secs_f64(),
        "export_mb_s": export_mbs,
        "export_over_cp": export_mbs / cp_mbs,
        "first": {"files": one.files_written, "bytes": one.bytes_written, "rows": one.rows_written,
                  "segments_read": segments_in, "passed_through": 0},
        "second": {"s": second_took.as_secs_f64(), "files": two.files_written,
                   "bytes": two.bytes_written, "rows": two.rows_written,
                   "segments_read": two.segments_read, "segments_skipped": two.segments_skipped,
                   "rows_already_exported": two.rows_already_exported,
                   "earlier_files_untouched": untouched},
        "rerun": {"s": rerun_took.as_secs_f64(), "files": three.files_written,
                  "bytes": three.bytes_written},
        "dataset_rows": rows(&after),
        "dataset_files": after.files.len(),
    });
    println!("{figures}");
    eprintln!(
        "first hour: {} archives, {:.0} MB: cp {:.2} s ({:.0} MB/s), export {:.2} s ({:.0} MB/s): \
         {:.2}x cp; {} files, {:.0} MB, {} rows, {} segments merged, none passed through",
        archives,
        first_bytes as f64 / 1e6,
        cp_took.as_secs_f64(),
        cp_mbs,
        export_took.as_secs_f64(),
        export_mbs,
        export_mbs / cp_mbs,
        one.files_written,
        one.bytes_written as f64 / 1e6,
        one.rows_written,
        segments_in
    );
    eprintln!(
        "one more hour: {:.2} s, {} files, {:.0} MB, {} rows written; {} segments read, {} \
         skipped whole, {} rows of read segments already exported; earlier files untouched: {}",
        second_took.as_secs_f64(),
        two.files_written,
        two.bytes_written as f64 / 1e6,
        two.rows_written,
        two.segments_read,
        two.segments_skipped,
        two.rows_already_exported,
        untouched
    );
    eprintln!(
        "rerun with nothing new: {:.2} s, {} files",
        rerun_took.as_secs_f64(),
        three.files_written
    );
    if !keep {
        std::fs::remove_dir_all(&root).unwrap();
    }
}
