//! The fleet export's rules, through the library: a rerun adds only what
//! is new (nothing when nothing is), rows split by UTC day and by schema,
//! files close at the target size, hostile label values stay one path
//! component, and what is not a dataset of this layout, a dataset another
//! export holds, or a killed run's leftovers are each dealt with in words.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use dendro::rewrite::{export, export_dataset, read_manifest, DatasetOptions, NULL_PARTITION};
use dendro::{ArchiveMut, Labels};

use crate::common::FIXTURE_ENCODER_VERSION;
use crate::support::*;

/// Every file below `dir` with its bytes, by path relative to `dir`.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                todo.push(entry.path());
            } else {
                let relative = entry.path().strip_prefix(dir).unwrap().to_path_buf();
                out.insert(
                    relative.to_string_lossy().into_owned(),
                    std::fs::read(entry.path()).unwrap(),
                );
            }
        }
    }
    out
}

/// The data files of a tree.
fn data_files(tree: &BTreeMap<String, Vec<u8>>) -> Vec<&String> {
    tree.keys()
        .filter(|k| k.ends_with(".parquet") && k.starts_with("stream="))
        .collect()
}

/// Rows of a Parquet file.
fn parquet_rows(path: &Path) -> i64 {
    let bytes = bytes::Bytes::from(std::fs::read(path).unwrap());
    let reader = parquet::file::serialized_reader::SerializedFileReader::new(bytes).unwrap();
    parquet::file::reader::FileReader::metadata(&reader)
        .file_metadata()
        .num_rows()
}

/// An archive with one source labelled `labels` and stream `s`'s
/// segments at `runs` of ts (one segment each).
fn archive(path: &Path, labels: &[(&str, &str)], runs: &[Vec<i64>]) {
    let mut archive = ArchiveMut::create(path).unwrap();
    let tx = archive.transaction().unwrap();
    let metadata = Labels::from([("encoder".to_string(), FIXTURE_ENCODER_VERSION.to_string())]);
    let labels: Labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let id = tx.insert_source(&labels, &metadata, 1_000).unwrap();
    for (seq, ts) in runs.iter().enumerate() {
        tx.insert_segment(id, "s", seq as i64, &custom_segment(ts, "B", None))
            .unwrap();
    }
    tx.commit().unwrap();
}

/// Adds one more segment of stream `s` to the archive's only source.
fn append(path: &Path, seq: i64, ts: &[i64], extra: Option<&str>) {
    let mut archive = ArchiveMut::open(path).unwrap();
    let tx = archive.transaction().unwrap();
    tx.insert_segment(1, "s", seq, &custom_segment(ts, "B", extra))
        .unwrap();
    tx.commit().unwrap();
}

const HOUR: i64 = 3_600_000_000_000;
/// 2026-12-07T00:00:00Z.
const DAY: i64 = 1_796_601_600_000_000_000;

#[test]
fn a_rerun_adds_only_what_is_new_and_nothing_when_nothing_is() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.dendro");
    let out = dir.path().join("dataset");
    archive(
        &a,
        &[("host", "web-1")],
        &[ts_run(DAY, 100, 1_000), ts_run(DAY + HOUR, 50, 1_000)],
    );
    let first = export_dataset(&[&a], &out, &DatasetOptions::default()).unwrap();
    assert_eq!(
        (first.rows_written, first.files_written, first.generation),
        (150, 1, 1)
    );
    let before = tree(&out);

    // The same archive twice (one source): nothing new, nothing written.
    let again = export_dataset(&[&a, &a], &out, &DatasetOptions::default()).unwrap();
    assert_eq!(
        (again.rows_written, again.files_written, again.generation),
        (0, 0, 1)
    );
    // The plan takes the source's segments once: both skipped whole.
    assert_eq!(again.segments_skipped, 2);
    assert_eq!(
        tree(&out),
        before,
        "a rerun with nothing new changed the dataset"
    );

    append(&a, 2, &ts_run(DAY + 2 * HOUR, 30, 1_000), None);
    let third = export_dataset(&[&a], &out, &DatasetOptions::default()).unwrap();
    assert_eq!(
        (third.rows_written, third.files_written, third.generation),
        (30, 1, 2)
    );
    assert_eq!(third.segments_read, 1);
    let after = tree(&out);
    for (path, bytes) in before.iter().filter(|(p, _)| p.starts_with("stream=")) {
        assert_eq!(after.get(path), Some(bytes), "{path} was rewritten");
    }
    let added: Vec<_> = data_files(&after)
        .into_iter()
        .filter(|p| !before.contains_key(*p))
        .collect();
    assert_eq!(added.len(), 1, "{added:?}");
    assert_eq!(parquet_rows(&out.join(added[0])), 30);

    let manifest = read_manifest(&out).unwrap();
    assert_eq!(manifest.files.len(), 2);
    assert_eq!(manifest.cursors.len(), 1);
    assert_eq!(manifest.cursors[0].rows, 180);
    assert_eq!(manifest.cursors[0].last_ts, DAY + 2 * HOUR + 29_000);
    let newest = &manifest.files[1];
    assert_eq!(
        (newest.ts_min, newest.ts_max),
        (DAY + 2 * HOUR, DAY + 2 * HOUR + 29_000)
    );
    assert_eq!(newest.sources[0].labels["host"], "web-1");
    assert!(out.join("_manifest.parquet").is_file());
    assert!(!out.join("_staging").exists());
}

#[test]
fn rows_split_by_utc_day_and_by_schema_and_files_close_at_the_target_size() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.dendro");
    let out = dir.path().join("dataset");
    // One segment across midnight.
    archive(&a, &[("host", "h")], &[ts_run(DAY - 10, 20, 1)]);
    append(&a, 1, &ts_run(DAY + 100, 10, 1), Some("extra"));
    let report = export_dataset(&[&a], &out, &DatasetOptions::default()).unwrap();
    assert_eq!(report.streams_split_by_schema, ["s"]);
    let manifest = read_manifest(&out).unwrap();
    let mut shape: Vec<(String, u64, String)> = manifest
        .files
        .iter()
        .map(|f| (f.date.clone(), f.rows, f.schema_id.clone()))
        .collect();
    shape.sort();
    assert_eq!(shape.len(), 3, "{shape:?}");
    assert_eq!((shape[0].0.as_str(), shape[0].1), ("2026-12-06", 10));
    assert_eq!(
        (shape[1].0.as_str(), shape[2].0.as_str()),
        ("2026-12-07", "2026-12-07")
    );
    assert_ne!(shape[1].2, shape[2].2, "two schemas share a file id");
    assert_eq!(manifest.schemas.len(), 2);
    assert!(manifest
        .schemas
        .values()
        .any(|s| s.iter().any(|[n, _]| n == "extra")));

    // A one-byte target closes a file after every write: each segment's
    // rows on one day are then a file of their own.
    let small = dir.path().join("small");
    let options = DatasetOptions {
        target_size: 1,
        ..DatasetOptions::default()
    };
    let report = export_dataset(&[&a], &small, &options).unwrap();
    assert_eq!(report.files_written, 3);
    let files = tree(&small);
    let rows: i64 = data_files(&files)
        .iter()
        .map(|p| parquet_rows(&small.join(p)))
        .sum();
    assert_eq!(rows, 30);
}

#[test]
fn hostile_label_values_are_one_path_component_each() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = ["../../escape", "a/b", "..", NULL_PARTITION, "%41"];
    let mut inputs: Vec<PathBuf> = Vec::new();
    for (i, host) in hostile.iter().enumerate() {
        let path = dir.path().join(format!("{i}.dendro"));
        archive(&path, &[("host", host)], &[ts_run(DAY, 5, 1)]);
        inputs.push(path);
    }
    let unlabelled = dir.path().join("none.dendro");
    archive(&unlabelled, &[("role", "x")], &[ts_run(DAY, 5, 1)]);
    inputs.push(unlabelled);
    let out = dir.path().join("dataset");
    let options = DatasetOptions {
        partition_by: Some("host".into()),
        ..DatasetOptions::default()
    };
    export_dataset(&inputs, &out, &options).unwrap();
    let entries: Vec<String> = std::fs::read_dir(out.join("stream=s/date=2026-12-07"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries.len(), hostile.len() + 1, "{entries:?}");
    for entry in &entries {
        let value = entry.strip_prefix("host=").unwrap();
        assert!(
            !value.contains('/') && value != ".." && value != ".",
            "{entry}"
        );
    }
    assert!(entries.contains(&format!("host={NULL_PARTITION}")));
    // Nothing outside the dataset; the manifest has each value as it is.
    let outside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.contains(".dendro") && n != "dataset")
        .collect();
    assert!(outside.is_empty(), "{outside:?}");
    let manifest = read_manifest(&out).unwrap();
    let mut values: Vec<Option<String>> =
        manifest.files.iter().map(|f| f.partition.clone()).collect();
    values.sort();
    let mut expected: Vec<Option<String>> = hostile.iter().map(|h| Some(h.to_string())).collect();
    expected.push(None);
    expected.sort();
    assert_eq!(values, expected);
    // The label is the path's, not a file column (Spark refuses both).
    for file in &manifest.files {
        assert!(file.path.contains("/host="), "{}", file.path);
    }
    // Another partitioning of the same dataset is refused.
    let err = export_dataset(&inputs, &out, &DatasetOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("partitioned by label \"host\""),
        "{err}"
    );
}

#[test]
fn what_is_not_a_dataset_is_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.dendro");
    archive(&a, &[("host", "h")], &[ts_run(DAY, 5, 1)]);

    let old = dir.path().join("old");
    export(&[&a], &old, false).unwrap();
    let before = tree(&old);
    let err = export_dataset(&[&a], &old, &DatasetOptions::default()).unwrap_err();
    assert!(err.to_string().contains("older export"), "{err}");
    assert_eq!(tree(&old), before, "the older export was changed");

    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), b"mine").unwrap();
    let err = export_dataset(&[&a], &other, &DatasetOptions::default()).unwrap_err();
    assert!(err.to_string().contains("not a dendro dataset"), "{err}");
    assert!(err.to_string().contains("notes.txt"), "{err}");

    let bad = dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("_manifest.json"), b"{\"format\": 3}").unwrap();
    let err = export_dataset(&[&a], &bad, &DatasetOptions::default()).unwrap_err();
    assert!(err.to_string().contains("_manifest.json"), "{err}");

    let unreadable = dir.path().join("garbage.dendro");
    std::fs::write(&unreadable, b"not an archive at all").unwrap();
    let fresh = dir.path().join("fresh");
    let err = export_dataset(&[&a, &unreadable], &fresh, &DatasetOptions::default()).unwrap_err();
    assert!(err.to_string().contains("garbage.dendro"), "{err}");
    assert!(
        read_manifest(&fresh).is_err(),
        "a failed export left a manifest"
    );
}

#[test]
fn a_dataset_another_export_holds_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.dendro");
    archive(&a, &[("host", "h")], &[ts_run(DAY, 5, 1)]);
    let out = dir.path().join("dataset");
    export_dataset(&[&a], &out, &DatasetOptions::default()).unwrap();
    // Another process holds the lock (flock(1), as another export would).
    // `-o`: only flock itself holds it, in a group of its own to end.
    let mut holder = std::process::Command::new("flock")
        .arg("-o")
        .arg(out.join("_lock"))
        .args(["-c", "echo held; exec sleep 30"])
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "held");
    append(&a, 1, &ts_run(DAY + HOUR, 5, 1), None);
    let refused = export_dataset(&[&a], &out, &DatasetOptions::default());
    let group = format!("-{}", holder.id());
    std::process::Command::new("kill")
        .args(["-KILL", "--", &group])
        .status()
        .unwrap();
    holder.wait().unwrap();
    let err = refused.unwrap_err();
    assert!(
        err.to_string().contains("another export is writing"),
        "{err}"
    );
    // Once it is gone (a dead holder's lock goes with it), the export runs.
    let report = export_dataset(&[&a], &out, &DatasetOptions::default()).unwrap();
    assert_eq!(report.rows_written, 5);
}

#[test]
fn a_killed_runs_leftovers_are_removed_and_its_rows_exported_again() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.dendro");
    archive(&a, &[("host", "h")], &[ts_run(DAY, 5, 1)]);
    let out = dir.path().join("dataset");
    export_dataset(&[&a], &out, &DatasetOptions::default()).unwrap();
    let committed = tree(&out);
    append(&a, 1, &ts_run(DAY + HOUR, 7, 1), None);
    // What a run killed after placing a file and before its commit leaves:
    // the staging directory and a file the manifest does not list.
    let placed = "stream=s/date=2026-12-07/part-000002-00000.parquet";
    std::fs::create_dir_all(out.join("_staging/stream=s")).unwrap();
    std::fs::write(out.join("_staging/stream=s/x.parquet"), b"half").unwrap();
    std::fs::write(out.join(placed), b"not committed").unwrap();
    let report = export_dataset(&[&a], &out, &DatasetOptions::default()).unwrap();
    assert_eq!(report.leftovers_removed, Some(1));
    assert_eq!(report.rows_written, 7);
    let after = tree(&out);
    assert!(
        !after.keys().any(|k| k.starts_with("_staging")),
        "{:?}",
        after.keys()
    );
    for (path, bytes) in committed.iter().filter(|(p, _)| p.starts_with("stream=")) {
        assert_eq!(after.get(path), Some(bytes), "{path}");
    }
    assert_eq!(
        parquet_rows(&out.join(placed)),
        7,
        "the rows were not exported again"
    );
    let manifest = read_manifest(&out).unwrap();
    let listed: Vec<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(data_files(&after).len(), listed.len());
}

#[test]
fn a_run_that_fails_before_its_commit_leaves_the_dataset_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.dendro");
    archive(&a, &[("host", "h")], &[ts_run(DAY, 5, 1)]);
    let out = dir.path().join("dataset");
    export_dataset(&[&a], &out, &DatasetOptions::default()).unwrap();
    // Two new days; the second's directory cannot be made (a file holds
    // its name), so the run fails after placing the first day's file.
    append(&a, 1, &ts_run(DAY + HOUR, 5, 1), None);
    append(&a, 2, &ts_run(DAY + 24 * HOUR, 5, 1), None);
    let blocker = out.join("stream=s/date=2026-12-08");
    std::fs::write(&blocker, b"in the way").unwrap();
    let before = tree(&out);
    let err = export_dataset(&[&a], &out, &DatasetOptions::default()).unwrap_err();
    assert!(err.to_string().contains("date=2026-12-08"), "{err}");
    assert_eq!(tree(&out), before, "a failed run changed the dataset");
    std::fs::remove_file(&blocker).unwrap();
    let report = export_dataset(&[&a], &out, &DatasetOptions::default()).unwrap();
    assert_eq!((report.rows_written, report.files_written), (10, 2));
}
