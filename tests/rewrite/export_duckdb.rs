//! `dendro export --segments` read by a query engine: two archives exported into one
//! Hive-partitioned directory, queried with DuckDB (the `duckdb` package
//! from the Python registry, installed by `scripts/setup-test.sh` into a
//! virtual environment whose interpreter `scripts/test.sh` passes as
//! DENDRO_PYTHON; python3 otherwise), must give the row counts and value
//! sums that `dendro cat` prints for every stream. Without DuckDB the test
//! is recorded as skipped; under `CI=true` it fails instead, since CI is
//! where the package must be.
#![cfg(feature = "cli")]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{copy_fixture, fixtures_dir, skip};
use crate::fleet_engines::{dendro, has_module, python};

/// Per `(source uuid, stream)`: rows, sum of `value`, sum of `ts`.
type Totals = BTreeMap<(String, String), (i64, i128, i128)>;

/// What `dendro cat` prints for every stream with sealed rows.
fn cat_totals(archive: &Path, totals: &mut Totals) {
    let path = archive.to_str().unwrap();
    let described: serde_json::Value =
        serde_json::from_slice(&dendro(&["describe", path, "--json"]).stdout).unwrap();
    for source in described["sources"].as_array().unwrap() {
        let id = source["id"].as_i64().unwrap().to_string();
        let uuid = source["uuid"].as_str().unwrap().to_ascii_lowercase();
        for stream in source["streams"].as_array().unwrap() {
            if stream["sealed_rows"].as_i64().unwrap() == 0 {
                continue;
            }
            let name = stream["name"].as_str().unwrap();
            let out = dendro(&["cat", path, "--source", &id, "--stream", name]);
            let entry = totals.entry((uuid.clone(), name.to_string())).or_default();
            for line in String::from_utf8(out.stdout).unwrap().lines() {
                let row: serde_json::Value = serde_json::from_str(line).unwrap();
                entry.0 += 1;
                entry.1 += row["value"].as_i64().unwrap() as i128;
                entry.2 += row["ts"].as_i64().unwrap() as i128;
            }
        }
    }
}

/// The same totals from DuckDB over the export's Parquet files, with the
/// source and stream taken from the Hive partitions.
const QUERY: &str = r#"
import json, sys
import duckdb
root = sys.argv[1]
con = duckdb.connect()
rows = con.execute(
    "SELECT CAST(source AS VARCHAR), CAST(stream AS VARCHAR), count(*), "
    "CAST(sum(value) AS VARCHAR), CAST(sum(ts) AS VARCHAR) "
    "FROM read_parquet(?, hive_partitioning = true, hive_types_autocast = false) "
    "GROUP BY ALL ORDER BY ALL",
    [root + "/**/*.parquet"],
).fetchall()
print(json.dumps([[s, t, str(n), v, ts] for s, t, n, v, ts in rows]))
"#;

#[test]
fn duckdb_over_an_export_of_two_archives_agrees_with_dendro_cat() {
    if !has_module(&python(), "duckdb") {
        let why = format!(
            "{} cannot import duckdb (scripts/setup-test.sh installs it in target/venv)",
            python()
        );
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        skip("duckdb_over_an_export", &why);
        return;
    }
    let (_a_dir, a) = copy_fixture(&fixtures_dir().join("a_single_sealed.dendro"));
    let (_b_dir, b) = copy_fixture(&fixtures_dir().join("b_multi_source.dendro"));
    let out_dir = tempfile::tempdir().unwrap();
    let export = out_dir.path().join("export");
    dendro(&[
        "export",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        export.to_str().unwrap(),
        "--segments",
    ]);
    let mut expected = Totals::new();
    cat_totals(&a, &mut expected);
    cat_totals(&b, &mut expected);
    // Both archives and at least two sources must be in it, or the check
    // says little.
    let sources: std::collections::BTreeSet<_> = expected.keys().map(|(s, _)| s).collect();
    assert!(sources.len() >= 3, "{expected:?}");

    let out = Command::new(python())
        .args(["-c", QUERY, export.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "duckdb query: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<(String, String, i64, i128, i128)> =
        serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout)
            .unwrap()
            .into_iter()
            .map(|r| {
                let text = |i: usize| r[i].as_str().unwrap().to_string();
                (
                    text(0),
                    text(1),
                    text(2).parse().unwrap(),
                    text(3).parse().unwrap(),
                    text(4).parse().unwrap(),
                )
            })
            .collect();
    let got: Totals = rows
        .into_iter()
        .map(|(s, t, n, v, ts)| ((s, t), (n, v, ts)))
        .collect();
    assert_eq!(got, expected);
}
