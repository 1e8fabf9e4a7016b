//! The original's 0.6.1 reader (`../shared/bench/original-061`) as the
//! measuring stick: what it reports of a file we wrote. Where it cannot run
//! here, the test that needs it says so through `common::skip`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn binary() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/original-061")
}

/// `original-061 SUBCOMMAND --compact FILE` as JSON, or `None` (recorded
/// as a skip of `test`) when the binary is missing or does not run.
fn run(test: &str, subcommand: &str, file: &Path) -> Option<Value> {
    let out = match Command::new(binary())
        .args([subcommand, "--compact"])
        .arg(file)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            crate::common::skip(test, &format!("original-061 cannot run here: {e}"));
            return None;
        }
    };
    match serde_json::from_slice(&out.stdout) {
        Ok(json) => Some(json),
        Err(e) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.code() == Some(126) || out.status.code() == Some(127) {
                crate::common::skip(test, &format!("original-061 cannot run here: {stderr}"));
                return None;
            }
            panic!("original-061 {subcommand} printed no JSON ({e}): {stderr}");
        }
    }
}

/// What 0.6.1's `describe` reports of `file`.
pub fn describe(test: &str, file: &Path) -> Option<Value> {
    run(test, "describe", file)
}

/// Asserts that 0.6.1's full `verify` finds `file` sound, and that it
/// opened it as `schema`.
pub fn assert_sound(test: &str, file: &Path, schema: u64) {
    let Some(report) = run(test, "verify", file) else {
        return;
    };
    assert_eq!(report["open"]["ok"], true, "{report}");
    assert_eq!(report["schema_version"], schema, "{report}");
    assert_eq!(report["sound"], true, "{report}");
}

/// Every document revision as 0.6.1 reads it, keyed by uuid, with
/// `supersedes` given as the superseded revision's uuid (ids are each
/// file's own).
pub fn revisions_by_uuid(described: &Value) -> BTreeMap<String, Value> {
    let table = described["documents"]["table"].as_array().unwrap();
    let uuid_of: BTreeMap<i64, String> = table
        .iter()
        .map(|r| {
            (
                r["id"].as_i64().unwrap(),
                r["uuid"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    table
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let target = r["supersedes"].as_i64().map(|id| uuid_of[&id].clone());
            r["supersedes"] = target.map_or(Value::Null, Value::String);
            r.as_object_mut().unwrap().remove("id");
            (r["uuid"].as_str().unwrap().to_string(), r)
        })
        .collect()
}

/// Per `(source uuid, stream)`: the caller indexes of its segments as
/// 0.6.1 reads them, in seq order (`null` for none; else length and
/// digest), so copies that renumber ids and seqs compare equal.
pub fn indexes_by_stream(described: &Value) -> BTreeMap<(String, String), Vec<Value>> {
    let mut out = BTreeMap::new();
    for source in described["sources"].as_array().unwrap() {
        let uuid = source["uuid"].as_str().unwrap_or("").to_string();
        for stream in source["streams"].as_array().unwrap() {
            let name = stream["name"].as_str().unwrap().to_string();
            let indexes = stream["segments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| match &s["caller_index"] {
                    Value::Null => Value::Null,
                    i => serde_json::json!([i["len"], i["fnv"]]),
                })
                .collect();
            out.insert((uuid.clone(), name), indexes);
        }
    }
    out
}
