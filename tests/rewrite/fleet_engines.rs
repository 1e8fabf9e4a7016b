//! The fleet export read by real engines: two fixtures and two demo
//! archives (typed columns, histograms, a live tail) exported into one
//! dataset, then DuckDB (and Spark, when `scripts/check-spark.sh` provides
//! it) reads the files `_manifest.parquet` lists and must give, per source
//! and stream, the rows, a column's sum, and min/max `ts` that `dendro cat`
//! prints; one source over one hour is read from at most two files.
//!
//! The engines run in `scripts/lib/fleet_engines.py`, under DENDRO_PYTHON
//! (the suite's venv with DuckDB, `scripts/setup-test.sh`; python3
//! otherwise). Without DuckDB the test is recorded as skipped, and fails
//! under `CI=true`. Spark runs only when DENDRO_SPARK_PYTHON names a
//! Python with pyspark (too slow for CI).
#![cfg(feature = "cli")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{copy_fixture, fixtures_dir, skip};

/// Per `uuid/stream`: rows, sum (text, or null), min ts, max ts.
pub type Totals = BTreeMap<String, [Option<String>; 4]>;
/// Per stream: the column summed and how (`scalar`, `list`, or none).
pub type Spec = BTreeMap<String, (String, Option<&'static str>)>;

pub fn dendro(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_dendro"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "dendro {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Which column of a stream to sum, from one row `cat` printed: the
/// first (by name) holding an integer, else the first holding a list.
fn choose(row: &serde_json::Map<String, Value>) -> (String, Option<&'static str>) {
    let columns = row.iter().filter(|(k, _)| k.as_str() != "ts");
    if let Some((k, _)) = columns.clone().find(|(_, v)| v.is_i64() || v.is_u64()) {
        return (k.clone(), Some("scalar"));
    }
    if let Some((k, _)) = columns.clone().find(|(_, v)| v.is_array()) {
        return (k.clone(), Some("list"));
    }
    (String::new(), None)
}

/// What `dendro cat` prints, per source and stream, summing `spec`'s
/// column (chosen from the first row of a stream met).
pub fn cat_totals(archive: &Path, totals: &mut Totals, spec: &mut Spec) {
    let path = archive.to_str().unwrap();
    let described: Value =
        serde_json::from_slice(&dendro(&["describe", path, "--json"]).stdout).unwrap();
    for source in described["sources"].as_array().unwrap() {
        let id = source["id"].as_i64().unwrap().to_string();
        let uuid = source["uuid"].as_str().unwrap().to_ascii_lowercase();
        for stream in source["streams"].as_array().unwrap() {
            let name = stream["name"].as_str().unwrap();
            let out = dendro(&["cat", path, "--source", &id, "--stream", name]);
            let (mut n, mut sum, mut lo, mut hi) = (0u64, None::<i128>, i64::MAX, i64::MIN);
            for line in String::from_utf8(out.stdout).unwrap().lines() {
                let row: Value = serde_json::from_str(line).unwrap();
                let row = row.as_object().unwrap();
                let (column, kind) = spec
                    .entry(name.to_string())
                    .or_insert_with(|| choose(row))
                    .clone();
                let value = row.get(&column);
                let add = match (kind, value) {
                    (Some("scalar"), Some(v)) => v.as_i64().map(i128::from),
                    (Some("list"), Some(v)) => v.as_array().map(|a| a.len() as i128),
                    _ => None,
                };
                if let Some(add) = add {
                    sum = Some(sum.unwrap_or(0) + add);
                }
                let ts = row["ts"].as_i64().unwrap();
                (n, lo, hi) = (n + 1, lo.min(ts), hi.max(ts));
            }
            if n > 0 {
                totals.insert(
                    format!("{uuid}/{name}"),
                    [
                        Some(n.to_string()),
                        sum.map(|s| s.to_string()),
                        Some(lo.to_string()),
                        Some(hi.to_string()),
                    ],
                );
            }
        }
    }
}

/// Runs `fleet_engines.py MODE DATASET ARG` under `python`.
pub fn engine(python: &str, mode: &str, dataset: &Path, arg: &Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/lib/fleet_engines.py");
    let out = Command::new(python)
        .arg(script)
        .args([mode, dataset.to_str().unwrap(), &arg.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{mode}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The spec as the script reads it.
pub fn spec_json(spec: &Spec) -> Value {
    spec.iter()
        .map(|(stream, (column, kind))| (stream.clone(), serde_json::json!([column, kind])))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// An engine's answer as [`Totals`].
pub fn as_totals(answer: &Value) -> Totals {
    answer
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let cell = |i: usize| v[i].as_str().map(str::to_string);
            (k.clone(), [cell(0), cell(1), cell(2), cell(3)])
        })
        .collect()
}

/// The Python with DuckDB: the test suite's venv, or python3.
pub fn python() -> String {
    std::env::var("DENDRO_PYTHON").unwrap_or_else(|_| "python3".into())
}

pub fn has_module(python: &str, module: &str) -> bool {
    Command::new(python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Two small demo archives of two hosts each, beside two fixtures.
pub fn fleet(dir: &Path) -> (Vec<PathBuf>, Vec<tempfile::TempDir>) {
    let (a_dir, a) = copy_fixture(&fixtures_dir().join("a_single_sealed.dendro"));
    let (b_dir, b) = copy_fixture(&fixtures_dir().join("b_multi_source.dendro"));
    let mut archives = vec![a, b];
    for i in 0..2 {
        let path = dir.join(format!("demo{i}.dendro"));
        dendro(&[
            "demo",
            path.to_str().unwrap(),
            "--hosts",
            "2",
            "--minutes",
            "10",
            "--seal-every",
            "60",
        ]);
        archives.push(path);
    }
    (archives, vec![a_dir, b_dir])
}

#[test]
fn engines_over_a_fleet_export_agree_with_dendro_cat() {
    let python = python();
    if !has_module(&python, "duckdb") {
        let why = format!(
            "{python} cannot import duckdb (scripts/setup-test.sh installs it in target/venv)"
        );
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        skip("engines_over_a_fleet_export", &why);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (archives, _held) = fleet(dir.path());
    let dataset = dir.path().join("dataset");
    let mut args: Vec<&str> = vec!["export"];
    args.extend(archives.iter().map(|a| a.to_str().unwrap()));
    // Small files, so that choosing by the manifest has something to skip.
    args.extend(["--out", dataset.to_str().unwrap(), "--target-size", "128K"]);
    dendro(&args);

    let mut expected = Totals::new();
    let mut spec = Spec::new();
    for archive in &archives {
        cat_totals(archive, &mut expected, &mut spec);
    }
    assert!(expected.len() >= 10, "{expected:?}");
    assert!(
        spec.values().any(|(_, kind)| *kind == Some("list")),
        "{spec:?}"
    );
    let got = as_totals(&engine(&python, "duckdb", &dataset, &spec_json(&spec)));
    assert_eq!(got, expected, "DuckDB disagrees with dendro cat");

    // One source of a demo archive over one hour: the manifest chooses
    // its files, DuckDB reads at most two of the stream's many.
    let manifest = dendro::rewrite::read_manifest(&dataset).unwrap();
    let files_of_cpu = manifest.files.iter().filter(|f| f.stream == "cpu").count();
    let demo_source = manifest
        .files
        .iter()
        .filter(|f| f.stream == "cpu")
        .flat_map(|f| &f.sources)
        .next()
        .unwrap();
    let from = demo_source.ts_min;
    let query = serde_json::json!({
        "stream": "cpu",
        "source_uuid": demo_source.source_uuid,
        "from_ns": from,
        "to_ns": from + 3_600_000_000_000i64,
    });
    let read = engine(&python, "onehour", &dataset, &query);
    let key = format!("{}/cpu", demo_source.source_uuid);
    assert_eq!(
        read["rows"].to_string(),
        expected[&key][0].clone().unwrap(),
        "{read}"
    );
    let files_read = read["files_read"].as_u64().unwrap();
    assert!(
        (1..=2).contains(&files_read) && files_of_cpu > 2,
        "{files_read} of {files_of_cpu} files read: {read}"
    );

    if let Ok(spark) = std::env::var("DENDRO_SPARK_PYTHON") {
        let got = as_totals(&engine(&spark, "spark", &dataset, &spec_json(&spec)));
        assert_eq!(got, expected, "Spark disagrees with dendro cat");
        if let Ok(result) = std::env::var("DENDRO_SPARK_RESULT") {
            let text = serde_json::json!({
                "streams_and_sources": expected.len(),
                "spark_equals_dendro_cat": true,
                "duckdb_one_hour": read,
            });
            std::fs::write(result, text.to_string()).unwrap();
        }
    }
}
