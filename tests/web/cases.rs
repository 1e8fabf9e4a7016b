//! The engine's test cases, run by `tests/web.rs` (Node) and
//! `tests/web_browser.rs` (headless Chrome). They call the API the way the
//! worker does, and compare with the fixture manifests through the same
//! code as the native tests (`tests/common/manifest.rs`).

use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use dendro::wasm::{envelope_of_batches, JsArchive};
use js_sys::{Array, BigInt64Array, Float64Array as JsF64, Object, Reflect, Uint8Array};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

use crate::manifest::{compare, expected_refusal, kind_matches, observed, Fnv};

struct Fixture {
    file: &'static str,
    bytes: &'static [u8],
    manifest: &'static str,
}

macro_rules! fixture {
    ($file:literal, $manifest:literal) => {
        fixture!("", $file, $manifest)
    };
    ($dir:literal, $file:literal, $manifest:literal) => {
        Fixture {
            file: $file,
            bytes: include_bytes!(concat!("../../../shared/fixtures/", $dir, $file)),
            manifest: include_str!(concat!("../../../shared/fixtures/", $dir, $manifest)),
        }
    };
}

fn fixtures() -> Vec<Fixture> {
    vec![
        fixture!("a0_empty.dendro", "a0_empty.manifest.json"),
        fixture!("a_single_sealed.dendro", "a_single_sealed.manifest.json"),
        fixture!("b_multi_source.dendro", "b_multi_source.manifest.json"),
        fixture!("g_caller_index.dendro", "g_caller_index.manifest.json"),
        fixture!("h_negative_ts.dendro", "h_negative_ts.manifest.json"),
        fixture!(
            "k_replication_b_applied.dendro",
            "k_replication_b_applied.manifest.json"
        ),
        fixture!("i_empty_file.dendro", "i_empty_file.manifest.json"),
        fixture!("i_foreign_app.sqlite", "i_foreign_app.manifest.json"),
        fixture!("i_not_archive.sqlite", "i_not_archive.manifest.json"),
        fixture!("i_not_sqlite.txt", "i_not_sqlite.manifest.json"),
        fixture!("i_truncated_half.dendro", "i_truncated_half.manifest.json"),
        fixture!(
            "i_truncated_header.dendro",
            "i_truncated_header.manifest.json"
        ),
        fixture!("i_wrong_version.dendro", "i_wrong_version.manifest.json"),
        // Schema 5, written by the original's 0.6.1.
        fixture!(
            "schema5/",
            "s5a_multi_source.dendro",
            "s5a_multi_source.manifest.json"
        ),
        fixture!(
            "schema5/",
            "s5b_retention.dendro",
            "s5b_retention.manifest.json"
        ),
    ]
}

fn manifest(f: &Fixture) -> Value {
    serde_json::from_str(f.manifest).expect("manifests are JSON")
}

fn sound() -> Vec<(Fixture, Value)> {
    fixtures()
        .into_iter()
        .map(|f| {
            let m = manifest(&f);
            (f, m)
        })
        .filter(|(_, m)| expected_refusal(m).is_none())
        .collect()
}

fn open_bytes(bytes: &[u8], name: &str) -> Result<JsArchive, JsValue> {
    JsArchive::open(&Uint8Array::from(bytes), name)
}

fn open(f: &Fixture) -> JsArchive {
    open_bytes(f.bytes, f.file).unwrap_or_else(|e| panic!("{}: {}", f.file, message(&e)))
}

pub(crate) fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap()
}

pub(crate) fn kind(err: &JsValue) -> String {
    get(err, "kind").as_string().unwrap_or_default()
}

pub(crate) fn message(err: &JsValue) -> String {
    get(err, "message").as_string().unwrap_or_default()
}

/// A JS value as JSON, with a BigInt as the integer it holds.
fn to_json(v: &JsValue) -> Value {
    if v.is_null() || v.is_undefined() {
        Value::Null
    } else if v.is_bigint() {
        let text: String = js_sys::BigInt::from(v.clone())
            .to_string(10)
            .unwrap()
            .into();
        Value::from(text.parse::<i64>().unwrap())
    } else if let Some(b) = v.as_bool() {
        Value::Bool(b)
    } else if let Some(n) = v.as_f64() {
        if n.fract() == 0.0 && n.abs() < 9e15 {
            Value::from(n as i64)
        } else {
            Value::from(n)
        }
    } else if let Some(s) = v.as_string() {
        Value::String(s)
    } else if Array::is_array(v) {
        Value::Array(Array::from(v).iter().map(|x| to_json(&x)).collect())
    } else {
        let obj: &Object = v.unchecked_ref();
        Value::Object(
            Object::keys(obj)
                .iter()
                .map(|k| {
                    (
                        k.as_string().unwrap(),
                        to_json(&get(v, &k.as_string().unwrap())),
                    )
                })
                .collect(),
        )
    }
}

fn bigints(v: &JsValue) -> Vec<i64> {
    v.clone()
        .dyn_into::<BigInt64Array>()
        .expect("a BigInt64Array")
        .to_vec()
}

#[wasm_bindgen_test]
fn every_sound_fixture_opens_from_bytes_and_reads_back_its_manifest() {
    let mut checked = 0;
    for (f, m) in sound() {
        let archive = open(&f);
        let ours = observed(archive.archive(), f.file).unwrap();
        let mismatches = compare(&m, &ours);
        assert!(
            mismatches.is_empty(),
            "{}:\n{}",
            f.file,
            mismatches.join("\n")
        );
        checked += 1;
    }
    assert_eq!(checked, 8);
}

/// A schema-5 archive's documents as the engine hands them to the page:
/// listed without bodies in the description, and each one's history on
/// demand, bodies verbatim, exactly as the manifest records the table.
#[wasm_bindgen_test]
fn documents_are_listed_in_the_description_and_their_history_read_on_demand() {
    let mut documents = 0;
    for (f, m) in sound() {
        let archive = open(&f);
        let described = to_json(&archive.describe().unwrap());
        let packed = to_json(&archive.describe_packed().unwrap());
        assert_eq!(packed["documents"], described["documents"], "{}", f.file);
        let Some(expected) = m["schema5"]["documents"].as_object() else {
            assert_eq!(described["documents"], serde_json::json!([]), "{}", f.file);
            assert_eq!(described["caller_indexes"], "column", "{}", f.file);
            continue;
        };
        assert_eq!(described["caller_indexes"], "table", "{}", f.file);
        assert_eq!(described["schema_version"], 5, "{}", f.file);
        let listed = described["documents"].as_array().unwrap();
        let history = expected["history"].as_array().unwrap();
        assert_eq!(listed.len(), history.len(), "{}", f.file);
        for (entry, doc) in listed.iter().zip(history) {
            let revisions = doc["revisions"].as_array().unwrap();
            let newest = revisions.last().unwrap();
            assert_eq!(entry["kind"], doc["kind"]);
            assert_eq!(entry["name"], doc["name"]);
            assert_eq!(entry["current"], newest["id"]);
            assert_eq!(entry["deleted"], newest["deleted"]);
            assert_eq!(entry["revisions"], revisions.len());
            let ours = archive
                .document_history(doc["kind"].as_str().unwrap(), doc["name"].as_str().unwrap())
                .unwrap();
            let ours = to_json(&ours);
            assert_eq!(&ours, &doc["revisions"], "{} {}", f.file, doc["name"]);
            documents += 1;
        }
        let none = to_json(&archive.document_history("no.such", "kind").unwrap());
        assert_eq!(none, serde_json::json!([]));
    }
    assert_eq!(documents, 3 + 1);
}

/// The `reserved` object `describe` gives a source, as JSON: the engine's
/// parse of its reserved keys (`dendro::reserved`), in the shape of
/// `Reserved` in types.ts.
fn reserved_json(metadata: &dendro::Labels) -> Value {
    use dendro::reserved::Reserved;
    fn parsed<T>(found: &Result<Vec<T>, String>, item: impl Fn(&T) -> Value) -> Value {
        match found {
            Ok(items) => {
                serde_json::json!({ "ok": true, "value": items.iter().map(item).collect::<Vec<_>>() })
            }
            Err(why) => serde_json::json!({ "ok": false, "why": why }),
        }
    }
    let r = Reserved::of(metadata);
    let mut out = serde_json::Map::new();
    if let Some(found) = &r.writer_sessions {
        out.insert(
            "writer_sessions".into(),
            parsed(found, |s| {
                serde_json::json!({
                    "session": s.session, "dendro": s.dendro,
                    "clock_anchor_wall_ns": s.clock_anchor_wall_ns,
                    "resumed": s.resumed_after_ts.is_some(),
                    "resumed_after_ts": s.resumed_after_ts.flatten(),
                    "extra": s.extra,
                })
            }),
        );
    }
    if let Some(found) = &r.events {
        out.insert(
            "events".into(),
            parsed(found, |e| {
                serde_json::json!({
                    "timestamp": e.timestamp, "description": e.description, "kind": e.kind,
                    "details": e.details, "id": e.id,
                })
            }),
        );
    }
    if let Some(found) = &r.producer_epochs {
        out.insert(
            "producer_epochs".into(),
            parsed(
                found,
                |e| serde_json::json!({ "epoch": e.epoch, "from_ts": e.from_ts }),
            ),
        );
    }
    Value::Object(out)
}

#[wasm_bindgen_test]
fn describe_in_js_is_the_describe_json_shape_with_bigint_timestamps() {
    for (f, m) in sound() {
        let archive = open(&f);
        let js = archive.describe().unwrap();
        let native = dendro::read::describe(archive.archive()).unwrap();
        let mut expected = serde_json::to_value(&native).unwrap();
        for (source, ours) in expected["sources"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .zip(&native.sources)
        {
            source["caller_row_names"] = serde_json::json!(ours.caller_row_names);
            let counts: serde_json::Map<String, Value> = ours
                .caller_row_names
                .iter()
                .zip(&ours.caller_row_counts)
                .map(|(n, &c)| (n.clone(), Value::from(c)))
                .collect();
            source["caller_row_counts"] = Value::Object(counts);
            source["reserved"] = reserved_json(&ours.source.metadata);
            // The engine also says whether it reads the source's live tails.
            source["live_readable"] =
                Value::from(dendro::typed::reader_for(&ours.source.metadata).is_some());
        }
        assert_eq!(to_json(&js), expected, "{}", f.file);
        assert_eq!(
            to_json(&get(&js, "file_bytes")),
            m["file_bytes"],
            "{}",
            f.file
        );
        let sources = Array::from(&get(&js, "sources"));
        for source in sources.iter() {
            assert!(get(&source, "clock_anchor_wall_ns").is_bigint());
            assert!(get(&source, "id").as_f64().is_some(), "ids are numbers");
            for stream in Array::from(&get(&source, "streams")).iter() {
                assert!(get(&stream, "sealed_rows").as_f64().is_some());
                for seg in Array::from(&get(&stream, "segments")).iter() {
                    assert!(get(&seg, "first_ts").is_bigint() && get(&seg, "last_ts").is_bigint());
                    assert!(get(&seg, "rows").as_f64().is_some());
                }
                let span = get(&stream, "live_span");
                assert!(span.is_null() || Array::from(&span).get(0).is_bigint());
            }
        }
    }
}

#[wasm_bindgen_test]
fn decoded_segments_in_js_match_the_manifest_digests() {
    let mut segments = 0;
    for (f, m) in sound() {
        let archive = open(&f);
        for source in m["sources"].as_array().unwrap() {
            let id = source["id"].as_f64().unwrap();
            for stream in source["streams"].as_array().unwrap() {
                let name = stream["name"].as_str().unwrap();
                for seg in stream["segments"].as_array().unwrap() {
                    let seq = seg["seq"].as_f64().unwrap();
                    let batch = archive.read_segment(id, name, seq, None).unwrap();
                    let decoded = &seg["decoded"];
                    assert_eq!(to_json(&get(&batch, "rows")), decoded["rows"]);
                    let columns = Array::from(&get(&batch, "columns"));
                    for expected in decoded["columns"].as_array().unwrap() {
                        let col = columns
                            .iter()
                            .find(|c| {
                                get(c, "name").as_string().as_deref() == expected["name"].as_str()
                            })
                            .unwrap_or_else(|| panic!("{}: column {}", f.file, expected["name"]));
                        assert_eq!(
                            get(&col, "type").as_string().unwrap(),
                            expected["type"].as_str().unwrap()
                        );
                        assert!(get(&col, "nulls").is_undefined(), "no nulls, no bitmap");
                        let values = get(&col, "values");
                        if let Some(sum) = expected["sum"].as_str() {
                            let v = bigints(&values);
                            assert_eq!(v.len() as u64, expected["count"].as_u64().unwrap());
                            let ours: i128 = v.iter().map(|&x| x as i128).sum();
                            assert_eq!(ours.to_string(), sum, "{} seq {seq}", f.file);
                            assert_eq!(v.iter().min().copied(), expected["min"].as_i64());
                            assert_eq!(v.iter().max().copied(), expected["max"].as_i64());
                        }
                        if let Some(fnv) = expected["fnv"].as_str() {
                            let mut ours = Fnv::new();
                            for s in Array::from(&values).iter() {
                                ours.lp(s.as_string().unwrap().as_bytes());
                            }
                            assert_eq!(ours.hex(), fnv, "{} seq {seq}", f.file);
                        }
                    }
                    segments += 1;
                }
            }
        }
    }
    assert!(segments >= 20, "only {segments} segments");
}

#[wasm_bindgen_test]
fn every_refused_fixture_is_refused_with_the_right_kind() {
    let mut checked = 0;
    for f in fixtures() {
        let m = manifest(&f);
        let Some(expected) = expected_refusal(&m) else {
            continue;
        };
        let native = dendro::Archive::from_bytes(f.file, f.bytes).unwrap_err();
        assert!(kind_matches(&expected, &native), "{}: {native}", f.file);
        let err = match open_bytes(f.bytes, f.file) {
            Ok(_) => panic!("{} must be refused", f.file),
            Err(e) => e,
        };
        assert!(err.is_instance_of::<js_sys::Error>(), "a JS Error");
        assert_eq!(kind(&err), native.kind(), "{}", f.file);
        assert!(
            message(&err).contains(f.file),
            "names the file: {}",
            message(&err)
        );
        // What the file is instead, as data the page can word for itself.
        let detail = get(&err, "detail").as_string();
        let number = |key: &str| get(&err, key).as_f64();
        let (want_detail, want_id, want_version) = match f.file {
            "i_empty_file.dendro" => (Some("empty"), None, None),
            "i_foreign_app.sqlite" => (Some("foreign_app"), Some(305_419_896.0), None),
            "i_not_archive.sqlite" => (Some("unstamped"), None, None),
            "i_not_sqlite.txt" => (Some("not_sqlite"), None, None),
            "i_truncated_header.dendro" => (Some("too_short"), None, None),
            "i_wrong_version.dendro" => (None, None, Some(99.0)),
            _ => (None, None, None),
        };
        assert_eq!(detail.as_deref(), want_detail, "{}: detail", f.file);
        assert_eq!(
            number("application_id"),
            want_id,
            "{}: application_id",
            f.file
        );
        assert_eq!(number("version"), want_version, "{}: version", f.file);
        if want_version.is_some() {
            assert_eq!(
                to_json(&get(&err, "supported_versions")),
                serde_json::json!([4, 5]),
                "{}",
                f.file
            );
        }
        if let dendro::Error::NotAnArchive { cause, .. } = &native {
            assert_eq!(detail.as_deref(), Some(cause.detail()), "{}", f.file);
        }
        checked += 1;
    }
    assert_eq!(checked, 7);
}

fn single() -> Fixture {
    fixture!("a_single_sealed.dendro", "a_single_sealed.manifest.json")
}

#[wasm_bindgen_test]
fn a_truncated_archive_is_an_error_and_the_module_works_afterwards() {
    let f = single();
    for len in [
        f.bytes.len() / 2,
        100,
        4096,
        8192,
        30_000,
        f.bytes.len() - 1,
    ] {
        let name = format!("cut_{len}.dendro");
        match open_bytes(&f.bytes[..len], &name) {
            Err(e) => assert!(!kind(&e).is_empty(), "{name}: {}", message(&e)),
            Ok(a) => {
                // SQLite may open a file cut after the pages it needs first;
                // reading must then fail or report damage, never trap.
                let described = a.describe();
                let verified = a.verify();
                assert!(
                    described.is_err()
                        || verified.is_err()
                        || get(&verified.unwrap(), "sound") == JsValue::FALSE,
                    "{name} reads as sound"
                );
            }
        }
    }
    let archive = open(&f);
    let d = archive.describe().unwrap();
    assert_eq!(Array::from(&get(&d, "sources")).length(), 1);
}

/// The position of segment `seq` of the first stream inside the file.
fn segment_at(f: &Fixture, seq: i64) -> (usize, usize) {
    let m = manifest(f);
    let seg = m["sources"][0]["streams"][0]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["seq"] == seq)
        .unwrap()
        .clone();
    let len = seg["byte_len"].as_u64().unwrap() as usize;
    let fnv = seg["bytes_fnv"].as_str().unwrap();
    let start = (0..f.bytes.len() - len)
        .find(|&i| {
            f.bytes[i..i + 4] == *b"PAR1" && Fnv::new().bytes(&f.bytes[i..i + len]).hex() == fnv
        })
        .expect("the segment's bytes are stored inline");
    (start, len)
}

/// A copy of the fixture with segment 0 changed by `damage`.
fn damaged(f: &Fixture, damage: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let (start, len) = segment_at(f, 0);
    let mut bytes = f.bytes.to_vec();
    damage(&mut bytes[start..start + len]);
    bytes
}

fn footer_len(seg: &[u8]) -> usize {
    let at = seg.len() - 8;
    u32::from_le_bytes(seg[at..at + 4].try_into().unwrap()) as usize
}

fn assert_segment_error(bytes: &[u8], what: &str) {
    let archive = open_bytes(bytes, what).unwrap();
    let err = archive.read_segment(1.0, "temps", 0.0, None).unwrap_err();
    assert_eq!(kind(&err), "Segment", "{what}: {}", message(&err));
    assert!(
        message(&err).contains("segment 0"),
        "names the segment: {}",
        message(&err)
    );
    let err = archive.schema(1.0, "temps").unwrap_err();
    assert_eq!(kind(&err), "Segment", "{what}");
    let err = archive
        .read_range(1.0, "temps", i64::MIN, i64::MAX, None, Some(100), None)
        .unwrap_err();
    assert_eq!(kind(&err), "Segment", "{what}");
    // The other segments of the same archive are unharmed.
    let ok = archive.read_segment(1.0, "temps", 1.0, None).unwrap();
    assert_eq!(get(&ok, "rows").as_f64(), Some(40.0));
}

#[wasm_bindgen_test]
fn hostile_segments_are_errors_for_that_segment_never_traps() {
    let f = single();
    assert_segment_error(
        &damaged(&f, |s| s[..4].copy_from_slice(b"NOPE")),
        "not_parquet.dendro",
    );
    assert_segment_error(
        &damaged(&f, |s| {
            let at = s.len() - 8;
            s[at..at + 4].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
        }),
        "lying_length.dendro",
    );
    assert_segment_error(
        &damaged(&f, |s| {
            let end = s.len() - 8;
            let start = end - footer_len(s);
            s[start..end].fill(0xab);
        }),
        "garbage_footer.dendro",
    );
    assert_segment_error(
        &damaged(&f, |s| {
            let end = s.len() - 8;
            let start = end - footer_len(s);
            s[start..end].fill(0);
        }),
        "zeroed_footer.dendro",
    );
}

/// The hand-written hostile segments of `tests/hostile.rs`: lies a wasm32
/// engine cannot survive unchecked (a 2 GiB zero-filled page, a 16 GiB
/// dictionary or schema capacity, a schema nested 10,000 deep that the
/// parquet crate would convert by recursion, 2^28 nulls in a few bytes). Each `(name, plan, whether
/// the footer itself lies)`.
fn hostile_plans() -> Vec<(&'static str, crate::parquet_bytes::Plan, bool)> {
    use crate::parquet_bytes::{Page, Plan, LZ4_RAW, UNCOMPRESSED};
    let ts: Vec<i64> = (0..20).map(|i| i * 1_000).collect();
    let mut out = Vec::new();
    let mut p = Plan::honest(&ts, LZ4_RAW);
    p.pages[0].uncompressed = i32::MAX;
    p.chunk_uncompressed = Some(i64::from(i32::MAX));
    out.push(("chunk claims 2 GiB", p, true));
    let mut p = Plan::honest(&ts, LZ4_RAW);
    p.pages[0].uncompressed = i32::MAX;
    p.chunk_uncompressed = Some(400);
    out.push(("page claims 2 GiB", p, false));
    let mut p = Plan::honest(&ts[..4], UNCOMPRESSED);
    p.pages.insert(
        0,
        Page {
            kind: 2,
            uncompressed: 32,
            data: vec![0; 32],
            compressed: None,
            num_values: i32::MAX,
        },
    );
    out.push(("dictionary of i32::MAX entries", p, false));
    let mut p = Plan::honest(&ts, UNCOMPRESSED);
    p.root_children = Some(i32::MAX);
    out.push(("i32::MAX children", p, true));
    let mut p = Plan::honest(&ts, UNCOMPRESSED);
    p.nesting = 40;
    out.push(("schema 40 deep", p, true));
    let mut p = Plan::honest(&ts, UNCOMPRESSED);
    p.unknown_nesting = 200;
    out.push(("thrift 200 deep", p, true));
    let mut p = Plan::honest(&ts, UNCOMPRESSED);
    p.row_groups_claimed = Some(i32::MAX as u64);
    out.push(("i32::MAX row groups", p, true));
    // An honest footer over one run of 2^28 null levels: over 2 GiB of
    // decoded slots, refused by the decode budget before they are made.
    out.push(("2^28 nulls in a few bytes", Plan::nulls(1 << 28), false));
    out
}

#[wasm_bindgen_test]
fn hand_made_hostile_segments_are_errors_in_the_engine_never_traps() {
    // Straight to the decoder and the footer reader in this instance,
    // with the schema nested 10,000 deep: unchecked, a stack overflow.
    let mut deep = crate::parquet_bytes::Plan::honest(&[1, 2, 3], 0);
    deep.nesting = 10_000;
    let deep = deep.build();
    assert!(dendro::segment::decode_segment(deep.clone(), None).is_err());
    assert!(dendro::segment::segment_schema(&deep).is_err());
    // The honest builder is real Parquet here too.
    let honest = crate::parquet_bytes::Plan::honest(&[1, 2, 3], 7).build();
    assert_eq!(
        dendro::segment::decode_segment(honest, None).unwrap()[0].num_rows(),
        3
    );
    // Through archives: one engine instance meets every hostile segment in
    // place of a stored one, and still reads the others.
    let f = single();
    for (name, plan, footer_lies) in hostile_plans() {
        let (_, len) = segment_at(&f, 0);
        let bytes = damaged(&f, |s| s.copy_from_slice(&plan.build_padded(len)));
        let archive = open_bytes(&bytes, name).unwrap();
        let err = archive.read_segment(1.0, "temps", 0.0, None).unwrap_err();
        assert_eq!(kind(&err), "Segment", "{name}: {}", message(&err));
        assert!(
            message(&err).contains("segment 0"),
            "{name}: {}",
            message(&err)
        );
        let err = archive
            .read_range(1.0, "temps", i64::MIN, i64::MAX, None, Some(100), None)
            .unwrap_err();
        assert_eq!(kind(&err), "Segment", "{name}");
        assert_eq!(archive.schema(1.0, "temps").is_err(), footer_lies, "{name}");
        let ok = archive.read_segment(1.0, "temps", 1.0, None).unwrap();
        assert_eq!(get(&ok, "rows").as_f64(), Some(40.0), "{name}");
    }
}

#[wasm_bindgen_test]
fn random_damage_to_a_segment_footer_never_traps() {
    let f = single();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut failed, mut changed) = (0, 0);
    for round in 0..300 {
        let bytes = damaged(&f, |s| {
            let end = s.len() - 8;
            let start = end - footer_len(s);
            for _ in 0..1 + next() % 3 {
                let at = start + (next() as usize) % (end - start);
                s[at] = next() as u8;
            }
        });
        changed += usize::from(bytes.as_slice() != f.bytes);
        let archive = open_bytes(&bytes, &format!("fuzz_{round}.dendro")).unwrap();
        if let Err(e) = archive.read_segment(1.0, "temps", 0.0, None) {
            assert_eq!(kind(&e), "Segment", "{}", message(&e));
            failed += 1;
        }
        // Whatever the damaged segment did, the engine still reads the
        // segment next to it.
        let ok = archive.read_segment(1.0, "temps", 1.0, None).unwrap();
        assert_eq!(get(&ok, "rows").as_f64(), Some(40.0), "round {round}");
    }
    // The damage must have reached the decoder: most rounds change the
    // footer, and some of those are refused. A fuzz whose every round
    // reads cleanly tested nothing.
    assert!(
        changed >= 250,
        "only {changed} of 300 rounds changed a byte"
    );
    assert!(
        failed >= 30,
        "only {failed} of 300 damaged footers were refused"
    );
}

#[wasm_bindgen_test]
fn read_range_decodes_only_the_overlapping_segments_and_trims_rows() {
    let f = single();
    let archive = open(&f);
    let t0 = 1_700_000_000_000_000_000i64;
    let s = 1_000_000_000i64;
    // Segments hold 40 rows at 1 s spacing; rows 50..=89 lie in seqs 1 and 2.
    let e = archive
        .read_range(
            1.0,
            "temps",
            t0 + 50 * s,
            t0 + 89 * s,
            None,
            Some(2000),
            None,
        )
        .unwrap();
    assert_eq!(get(&e, "segments_read").as_f64(), Some(2.0));
    assert_eq!(get(&e, "rows_in_window").as_f64(), Some(40.0));
    assert_eq!(get(&e, "reduced"), JsValue::FALSE);
    let ts = bigints(&get(&e, "ts"));
    assert_eq!(ts.first(), Some(&(t0 + 50 * s)));
    assert_eq!(ts.last(), Some(&(t0 + 89 * s)));
    let columns = Array::from(&get(&e, "columns"));
    assert_eq!(columns.length(), 1, "only numeric columns besides ts");
    let value = columns.get(0);
    assert_eq!(get(&value, "name").as_string().unwrap(), "value");
    let min = get(&value, "min").dyn_into::<JsF64>().unwrap().to_vec();
    assert_eq!(min.len(), 40);

    let reduced = archive
        .read_range(1.0, "temps", i64::MIN, i64::MAX, None, Some(10), None)
        .unwrap();
    assert_eq!(get(&reduced, "reduced"), JsValue::TRUE);
    assert_eq!(get(&reduced, "segments_read").as_f64(), Some(5.0));
    assert!(bigints(&get(&reduced, "ts")).len() <= 10);
}

#[wasm_bindgen_test]
fn segments_inside_one_bucket_come_from_their_footers_with_the_same_envelope() {
    use dendro::read::range::{decode_for_range, read_range, RangeRequest};
    let f = single();
    let archive = open(&f);
    let t0 = 1_700_000_000_000_000_000i64;
    let s = 1_000_000_000i64;
    // 5 segments of 40 rows, 1 s apart. Two buckets: the boundary falls in
    // seq 2, so seqs 0, 1, 3 and 4 each lie inside one bucket.
    for (from, to, points, from_stats) in [
        (i64::MIN, i64::MAX, 2, 4.0),
        (t0, t0 + 199 * s, 2, 4.0),
        (i64::MIN, i64::MAX, 10, 0.0),
        (t0 + 30 * s, t0 + 170 * s, 3, 1.0),
        (t0, t0 + 199 * s, 1, 5.0),
    ] {
        let js = archive
            .read_range(1.0, "temps", from, to, None, Some(points), None)
            .unwrap();
        assert_eq!(
            get(&js, "segments_from_stats").as_f64(),
            Some(from_stats),
            "[{from}, {to}] in {points}"
        );
        let request = RangeRequest {
            source_id: 1,
            stream: "temps",
            from,
            to,
            columns: None,
            max_points: Some(points as usize),
            rates: None,
        };
        let decoded = read_range(archive.archive(), &request, |r, c| {
            decode_for_range(archive.archive(), r, c)
        })
        .unwrap();
        assert_eq!(
            get(&js, "segments_read").as_f64().unwrap() + from_stats,
            decoded.segments_read as f64
        );
        assert_eq!(
            to_json(&get(&js, "rows_in_window")),
            Value::from(decoded.rows_in_window)
        );
        assert_eq!(get(&js, "reduced").as_bool(), Some(decoded.reduced));
        assert_eq!(bigints(&get(&js, "ts")), decoded.ts);
        let columns = Array::from(&get(&js, "columns"));
        assert_eq!(columns.length() as usize, decoded.columns.len());
        for (c, want) in columns.iter().zip(&decoded.columns) {
            assert_eq!(get(&c, "name").as_string().unwrap(), want.name);
            let min = get(&c, "min").dyn_into::<JsF64>().unwrap().to_vec();
            let max = get(&c, "max").dyn_into::<JsF64>().unwrap().to_vec();
            assert_eq!((min, max), (want.min.clone(), want.max.clone()));
        }
    }
}

#[wasm_bindgen_test]
fn decimation_keeps_a_one_row_spike_in_a_million_rows() {
    let n = 1_000_000i64;
    let spike_at = 123_457i64;
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("value", DataType::Float64, false),
    ]));
    let batches: Vec<RecordBatch> = (0..n)
        .step_by(65_536)
        .map(|start| {
            let ts: Vec<i64> = (start..(start + 65_536).min(n)).collect();
            let values: Vec<f64> = ts
                .iter()
                .map(|&t| {
                    if t == spike_at {
                        1e12
                    } else {
                        (t % 100) as f64
                    }
                })
                .collect();
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(ts)),
                    Arc::new(Float64Array::from(values)),
                ],
            )
            .unwrap()
        })
        .collect();
    let e = envelope_of_batches(&batches, 0, n - 1, Some(2000));
    assert_eq!(get(&e, "rows_in_window").as_f64(), Some(n as f64));
    assert_eq!(get(&e, "reduced"), JsValue::TRUE);
    let ts = bigints(&get(&e, "ts"));
    assert!(ts.len() <= 2000, "{} points", ts.len());
    let column = Array::from(&get(&e, "columns")).get(0);
    let max = get(&column, "max").dyn_into::<JsF64>().unwrap().to_vec();
    assert_eq!(max.len(), ts.len());
    let at = max
        .iter()
        .position(|&v| v == 1e12)
        .expect("the spike survives");
    assert!(ts[at] <= spike_at && ts.get(at + 1).is_none_or(|&next| next > spike_at));
}

#[wasm_bindgen_test]
fn schema_names_columns_types_and_the_time_axis() {
    let archive = open(&single());
    let s = archive.schema(1.0, "temps").unwrap();
    assert_eq!(get(&s, "ts_column").as_string().unwrap(), "ts");
    let columns: Vec<(String, String, bool)> = Array::from(&get(&s, "columns"))
        .iter()
        .map(|c| {
            (
                get(&c, "name").as_string().unwrap(),
                get(&c, "type").as_string().unwrap(),
                get(&c, "nullable").as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        columns,
        [
            ("ts".into(), "Int64".into(), false),
            ("value".into(), "Int64".into(), false),
            ("label".into(), "Utf8".into(), false),
        ]
    );
    assert!(get(&Array::from(&get(&s, "columns")).get(0), "metadata").is_object());
}

#[wasm_bindgen_test]
fn live_tails_are_reported_as_unread_rows_with_their_span() {
    let f = fixture!("b_multi_source.dendro", "b_multi_source.manifest.json");
    let m = manifest(&f);
    let archive = open(&f);
    let mut tails = 0;
    for source in m["sources"].as_array().unwrap() {
        for stream in source["streams"].as_array().unwrap() {
            let t = archive
                .live_tail(
                    source["id"].as_f64().unwrap(),
                    stream["name"].as_str().unwrap(),
                )
                .unwrap();
            assert_eq!(to_json(&get(&t, "rows")), stream["live_wal_rows"]);
            assert_eq!(to_json(&get(&t, "first_ts")), stream["live_wal_first_ts"]);
            assert_eq!(to_json(&get(&t, "last_ts")), stream["live_wal_last_ts"]);
            if stream["live_wal_rows"].as_i64() > Some(0) {
                assert!(get(&t, "first_ts").is_bigint());
                tails += 1;
            }
        }
    }
    assert!(tails >= 2);
}

#[wasm_bindgen_test]
fn caller_indexes_and_rows_come_back_as_stored() {
    let f = fixture!("g_caller_index.dendro", "g_caller_index.manifest.json");
    let m = manifest(&f);
    let archive = open(&f);
    let source = &m["sources"][0];
    let id = source["id"].as_f64().unwrap();
    for stream in source["streams"].as_array().unwrap() {
        let name = stream["name"].as_str().unwrap();
        for seg in stream["segments"].as_array().unwrap() {
            let index = archive
                .caller_index(id, name, seg["seq"].as_f64().unwrap())
                .unwrap();
            match (&seg["caller_index"], index) {
                (Value::Null, None) => {}
                (expected, Some(bytes)) => {
                    let bytes = bytes.to_vec();
                    assert_eq!(
                        Fnv::new().bytes(&bytes).hex(),
                        expected["fnv"].as_str().unwrap()
                    );
                }
                (expected, None) => panic!("missing index, manifest has {expected}"),
            }
        }
    }
    // Names that are no stream come with their counts in describe().
    let described = Array::from(&get(&archive.describe().unwrap(), "sources")).get(0);
    let streams: Vec<&str> = source["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    let mut others = serde_json::Map::new();
    for (name, expected) in source["caller_rows"].as_object().unwrap() {
        if !streams.contains(&name.as_str()) {
            others.insert(name.clone(), expected["count"].clone());
        }
    }
    assert!(
        !others.is_empty(),
        "the fixture has caller rows under a name that is no stream"
    );
    assert_eq!(
        to_json(&get(&described, "caller_row_counts")),
        Value::Object(others)
    );
    for (name, expected) in source["caller_rows"].as_object().unwrap() {
        let rows = Array::from(&archive.caller_rows(id, name, i64::MIN, i64::MAX).unwrap());
        assert_eq!(
            rows.length() as u64,
            expected["count"].as_u64().unwrap(),
            "{name}"
        );
        let mut fnv = Fnv::new();
        for row in rows.iter() {
            let ts = js_sys::BigInt::from(get(&row, "ts"));
            let ts: i64 = String::from(ts.to_string(10).unwrap()).parse().unwrap();
            let blob = get(&row, "blob").dyn_into::<Uint8Array>().unwrap().to_vec();
            fnv.i64(ts).lp(&blob);
        }
        assert_eq!(fnv.hex(), expected["fnv"].as_str().unwrap(), "{name}");
    }
}

#[wasm_bindgen_test]
fn verify_reports_every_sound_fixture_as_sound() {
    for (f, m) in sound() {
        let report = open(&f).verify().unwrap();
        assert_eq!(
            to_json(&get(&report, "sound")),
            m["verify"]["sound"],
            "{}",
            f.file
        );
        assert_eq!(Array::from(&get(&report, "problems")).length(), 0);
    }
}

#[wasm_bindgen_test]
fn unknown_sources_streams_and_segments_are_not_found() {
    let archive = open(&single());
    for err in [
        archive.schema(99.0, "temps").unwrap_err(),
        archive.schema(1.0, "nope").unwrap_err(),
        archive.read_segment(1.0, "temps", 99.0, None).unwrap_err(),
        archive.read_segment(1.5, "temps", 0.0, None).unwrap_err(),
        archive.live_tail(1.0, "nope").unwrap_err(),
        archive.caller_index(1.0, "temps", 99.0).unwrap_err(),
    ] {
        assert_eq!(kind(&err), "NotFound", "{}", message(&err));
        assert!(message(&err).contains("a_single_sealed.dendro"));
    }
}

#[wasm_bindgen_test]
fn several_archives_stay_open_side_by_side() {
    let a = open(&single());
    let b = open(&fixture!(
        "b_multi_source.dendro",
        "b_multi_source.manifest.json"
    ));
    let first = a.read_segment(1.0, "temps", 0.0, None).unwrap();
    let d = b.describe().unwrap();
    assert_eq!(Array::from(&get(&d, "sources")).length(), 2);
    drop(b);
    let again = a.read_segment(1.0, "temps", 0.0, None).unwrap();
    assert_eq!(to_json(&first), to_json(&again));
    assert_eq!(a.name(), "a_single_sealed.dendro");
}

/// Flat segments as encoders write them (time, numbers, strings, bytes),
/// under every layout the reader may meet: each codec dendro reads,
/// dictionaries, v2 data pages, many small pages.
fn segment_shapes() -> Vec<Vec<u8>> {
    use arrow_array::{BinaryArray, Int32Array, StringArray};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::{WriterProperties, WriterVersion};

    let n = 300i64;
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("label", DataType::Utf8, false),
        Field::new("small", DataType::Int32, false),
        Field::new("value", DataType::Float64, false),
        Field::new("blob", DataType::Binary, false),
    ]));
    let blobs: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; (i % 11) as usize]).collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(0..n)),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("label-{}", i % 7)),
            )),
            Arc::new(Int32Array::from_iter_values((0..n).map(|i| (i * 3) as i32))),
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| i as f64 / 7.0),
            )),
            Arc::new(BinaryArray::from_iter_values(blobs.iter())),
        ],
    )
    .unwrap();
    let variants = [
        WriterProperties::builder()
            .set_compression(Compression::LZ4_RAW)
            .set_dictionary_enabled(false)
            .build(),
        WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_dictionary_enabled(true)
            .build(),
        WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_writer_version(WriterVersion::PARQUET_2_0)
            .build(),
        WriterProperties::builder()
            .set_compression(Compression::UNCOMPRESSED)
            .set_dictionary_enabled(false)
            .set_data_page_row_count_limit(50)
            .build(),
    ];
    variants
        .into_iter()
        .map(|props| {
            let mut out = Vec::new();
            let mut w = ArrowWriter::try_new(&mut out, schema.clone(), Some(props)).unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            out
        })
        .collect()
}

/// Mutations per shape. The seed is fixed, so the sweep is the same every
/// run. Longer sweeps do reach rare panics inside the Parquet and Arrow
/// crates: natively, about 1 in 20,000 of these mutations (a page made to
/// claim a dictionary it lacks), none in 20,000 of the first shape
/// (dendro's own layout), and about 1 in 3,000 once columns are nullable
/// or nested. In the browser a trap is contained by the worker restart,
/// which names the segment (`scripts/test-engine.mjs`); see DESIGN.md.
const ROUNDS: usize = 400;

#[wasm_bindgen_test]
fn mutated_segments_of_many_shapes_give_errors_never_traps() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (shape, whole) in segment_shapes().into_iter().enumerate() {
        assert!(dendro::segment::decode_segment(whole.clone(), None).is_ok());
        // Counted per shape: a shape whose damage is never noticed fails
        // even when another shape's was.
        let (mut read, mut refused) = (0, 0);
        let body = 4..whole.len() - 8;
        for _ in 0..ROUNDS {
            let mut bytes = whole.clone();
            for _ in 0..1 + next() % 3 {
                let at = body.start + (next() as usize) % body.len();
                match next() % 3 {
                    // One random byte.
                    0 => bytes[at] = next() as u8,
                    // A lying length or count: a varint of about 2^31
                    // (negative once zigzag-decoded), one that decodes to
                    // i32::MAX, a list header claiming 2^31 elements, or a
                    // little-endian u32 near u32::MAX.
                    1 => {
                        let lie: &[u8] = match next() % 4 {
                            0 => &[0xff, 0xff, 0xff, 0xff, 0x07],
                            1 => &[0xfe, 0xff, 0xff, 0xff, 0x0f],
                            2 => &[0xfc, 0x80, 0x80, 0x80, 0x80, 0x08],
                            _ => &[0xfd, 0xff, 0xff, 0xff],
                        };
                        for (k, b) in lie.iter().enumerate() {
                            if at + k < body.end {
                                bytes[at + k] = *b;
                            }
                        }
                    }
                    // Deep nesting: a run of struct-field headers, each
                    // opening a struct inside the last.
                    2 if next() % 4 == 0 => {
                        let end = (at + 64 + (next() as usize) % 4096).min(body.end);
                        bytes[at..end].fill(0x1c);
                    }
                    // A run of zeros.
                    _ => {
                        let end = (at + 1 + (next() as usize) % 16).min(body.end);
                        bytes[at..end].fill(0);
                    }
                }
            }
            match dendro::segment::decode_segment(bytes, None) {
                Ok(_) => read += 1,
                Err(_) => refused += 1,
            }
        }
        assert!(
            refused > 0,
            "shape {shape}: damage was never noticed in {read} reads"
        );
    }
}

#[wasm_bindgen_test]
fn preview_range_answers_from_footers_what_the_native_preview_does() {
    use dendro::read::range::{preview_range, RangeRequest};
    use dendro::read::stats::segment_stats;
    let f = single();
    let archive = open(&f);
    // 5 segments of 40 rows: 200 rows in 10 points are bucketed.
    let js = archive
        .preview_range(1.0, "temps", i64::MIN, i64::MAX, None, Some(10), None, None)
        .unwrap();
    assert_eq!(get(&js, "preview"), JsValue::TRUE);
    assert_eq!(get(&js, "reduced"), JsValue::TRUE);
    assert_eq!(get(&js, "segments_read").as_f64(), Some(0.0));
    assert_eq!(get(&js, "segments_from_stats").as_f64(), Some(5.0));
    assert_eq!(get(&js, "segments_unsummarized").as_f64(), Some(0.0));
    let request = RangeRequest {
        source_id: 1,
        stream: "temps",
        from: i64::MIN,
        to: i64::MAX,
        columns: None,
        max_points: Some(10),
        rates: None,
    };
    let stats = |r: &dendro::SegmentRecord| Ok(segment_stats(archive.archive(), r)?.map(Arc::new));
    let native = preview_range(archive.archive(), &request, None, stats)
        .unwrap()
        .unwrap();
    assert_eq!(bigints(&get(&js, "ts")), native.envelope.ts);
    let exact = archive
        .read_range(1.0, "temps", i64::MIN, i64::MAX, None, Some(10), None)
        .unwrap();
    assert_eq!(
        bigints(&get(&exact, "ts")),
        native.envelope.ts,
        "the same buckets"
    );
    let columns = Array::from(&get(&js, "columns"));
    let exact_columns = Array::from(&get(&exact, "columns"));
    assert_eq!(columns.length() as usize, native.envelope.columns.len());
    for ((c, want), x) in columns
        .iter()
        .zip(&native.envelope.columns)
        .zip(exact_columns.iter())
    {
        assert_eq!(get(&c, "name").as_string().unwrap(), want.name);
        assert_eq!(get(&c, "gaps").as_f64(), Some(0.0));
        let min = get(&c, "min").dyn_into::<JsF64>().unwrap().to_vec();
        let max = get(&c, "max").dyn_into::<JsF64>().unwrap().to_vec();
        assert_eq!((&min, &max), (&want.min, &want.max));
        let xmin = get(&x, "min").dyn_into::<JsF64>().unwrap().to_vec();
        let xmax = get(&x, "max").dyn_into::<JsF64>().unwrap().to_vec();
        for k in 0..min.len() {
            assert!(
                min[k] <= xmin[k] && max[k] >= xmax[k],
                "bucket {k} holds the exact one"
            );
        }
    }
    // Every row fits the points: nothing to band.
    let few = archive
        .preview_range(
            1.0,
            "temps",
            i64::MIN,
            i64::MAX,
            None,
            Some(2000),
            None,
            None,
        )
        .unwrap();
    assert!(few.is_undefined());
    // Without max_points either.
    let all = archive
        .preview_range(1.0, "temps", i64::MIN, i64::MAX, None, None, None, None)
        .unwrap();
    assert!(all.is_undefined());
    // The stepped job's preview: none once every segment's rows are cached
    // (the readRange above cached them under the same columns).
    let job = archive
        .begin_range(1.0, "temps", i64::MIN, i64::MAX, None, Some(10), None)
        .unwrap();
    assert!(job.preview().unwrap().is_undefined());
    let other = vec!["value".to_string()];
    let job = archive
        .begin_range(
            1.0,
            "temps",
            i64::MIN,
            i64::MAX,
            Some(other),
            Some(10),
            None,
        )
        .unwrap();
    let stepped = job.preview().unwrap();
    assert_eq!(get(&stepped, "preview"), JsValue::TRUE);
    assert_eq!(bigints(&get(&stepped, "ts")), native.envelope.ts);
}

/// Each image keeps its own listing of the catalog (describe, schemas and
/// range reads answer from it), while images of one followed archive share
/// decoded segments (`shareCache`): a newer image that shares an earlier
/// one's cache must still answer from its own catalog, as a fresh open of
/// it does, and the earlier one from its own. Every pair of sound fixtures
/// stands in for an earlier and a newer image.
#[wasm_bindgen_test]
fn a_newer_image_sharing_the_cache_answers_from_its_own_listing() {
    let streams = |d: &Value| -> Vec<(f64, String)> {
        let mut out = Vec::new();
        for s in d["sources"].as_array().unwrap() {
            for st in s["streams"].as_array().unwrap() {
                out.push((
                    s["id"].as_i64().unwrap() as f64,
                    st["name"].as_str().unwrap().to_string(),
                ));
            }
        }
        out
    };
    // Every window read of an image, as JSON: the whole span at 50 points
    // and every row, and the stream's schema.
    // A refusal (a live stream no encoder here reads) is an answer too.
    let answer = |r: Result<JsValue, JsValue>| match r {
        Ok(v) => to_json(&v),
        Err(e) => Value::String(format!("{}: {}", kind(&e), message(&e))),
    };
    let answers = |a: &JsArchive, of: &[(f64, String)]| -> Vec<Value> {
        let mut out = Vec::new();
        for (source, stream) in of {
            for points in [Some(50), None] {
                let env = a.read_range(*source, stream, i64::MIN, i64::MAX, None, points, None);
                out.push(answer(env));
            }
            out.push(answer(a.schema(*source, stream)));
        }
        out
    };
    let fixtures = sound();
    let mut pairs = 0;
    for (earlier, _) in &fixtures {
        for (later, _) in &fixtures {
            if earlier.file == later.file {
                continue;
            }
            let a = open(earlier);
            let a_described = to_json(&a.describe().unwrap());
            let a_streams = streams(&a_described);
            let a_answers = answers(&a, &a_streams);
            let mut b = open(later);
            b.share_cache(&a);
            let fresh = open(later);
            let here = format!("{} after {}", later.file, earlier.file);
            let described = to_json(&b.describe().unwrap());
            assert_eq!(described, to_json(&fresh.describe().unwrap()), "{here}");
            let of = streams(&described);
            assert_eq!(answers(&b, &of), answers(&fresh, &of), "{here}");
            // The earlier image still answers from its own listing.
            assert_eq!(to_json(&a.describe().unwrap()), a_described, "{here}");
            assert_eq!(answers(&a, &a_streams), a_answers, "{here}");
            pairs += 1;
        }
    }
    assert!(pairs >= 12, "only {pairs} pairs of images");
}

/// A sampled preview bands the window from the footers of k of its
/// segments spread through it, and says so: `sample` names how many of
/// how many, `segments_left_out` the rest; every bucket it fills holds
/// the exact envelope's extremes of the segments it read.
#[wasm_bindgen_test]
fn a_sampled_preview_reads_k_footers_spread_through_the_window_and_says_so() {
    let f = single();
    let archive = open(&f);
    let total = archive
        .window_segments(1.0, "temps", i64::MIN, i64::MAX)
        .unwrap();
    assert_eq!(get(&total, "total").as_f64(), Some(5.0));
    let js = archive
        .preview_range(
            1.0,
            "temps",
            i64::MIN,
            i64::MAX,
            None,
            Some(10),
            None,
            Some(2),
        )
        .unwrap();
    assert_eq!(get(&js, "preview"), JsValue::TRUE);
    let sample = get(&js, "sample");
    assert_eq!(get(&sample, "taken").as_f64(), Some(2.0));
    assert_eq!(get(&sample, "of").as_f64(), Some(5.0));
    assert_eq!(get(&js, "segments_from_stats").as_f64(), Some(2.0));
    assert_eq!(get(&js, "segments_left_out").as_f64(), Some(3.0));
    assert_eq!(get(&js, "segments_read").as_f64(), Some(0.0));
    // The whole preview, every footer, bands at least what the sample does.
    let whole = archive
        .preview_range(1.0, "temps", i64::MIN, i64::MAX, None, Some(10), None, None)
        .unwrap();
    assert!(get(&whole, "sample").is_undefined());
    // Its buckets are the whole preview's (the sample holds the window's
    // first and last segments), those its segments fill.
    let (ts, whole_ts) = (bigints(&get(&js, "ts")), bigints(&get(&whole, "ts")));
    let at: Vec<usize> = ts
        .iter()
        .map(|t| {
            whole_ts
                .iter()
                .position(|w| w == t)
                .expect("a bucket of the whole")
        })
        .collect();
    assert!(!ts.is_empty() && ts.len() < whole_ts.len(), "{ts:?}");
    for (c, w) in Array::from(&get(&js, "columns"))
        .iter()
        .zip(Array::from(&get(&whole, "columns")).iter())
    {
        let values = |v: &JsValue, k: &str| get(v, k).dyn_into::<JsF64>().unwrap().to_vec();
        let (min, max, wmin, wmax) = (
            values(&c, "min"),
            values(&c, "max"),
            values(&w, "min"),
            values(&w, "max"),
        );
        for (k, &j) in at.iter().enumerate() {
            assert!(min[k] >= wmin[j] && max[k] <= wmax[j], "bucket {k}");
        }
    }
    // A sample as large as the window is the window.
    let all = archive
        .preview_range(
            1.0,
            "temps",
            i64::MIN,
            i64::MAX,
            None,
            Some(10),
            None,
            Some(64),
        )
        .unwrap();
    assert_eq!(get(&get(&all, "sample"), "taken").as_f64(), Some(5.0));
    assert_eq!(get(&all, "segments_left_out").as_f64(), Some(0.0));
}

/// Before the catalog is listed, a window's reads list it from the time
/// index: every answer is the one they give once the whole listing is
/// held, for every sound fixture's every stream and a few windows.
#[wasm_bindgen_test]
fn window_reads_before_the_listing_answer_as_after_it() {
    let answer = |r: Result<JsValue, JsValue>| match r {
        Ok(v) => to_json(&v),
        Err(e) => Value::String(format!("{}: {}", kind(&e), message(&e))),
    };
    let mut windows = 0;
    for (f, _) in sound() {
        let listed = open(&f);
        let d = to_json(&listed.describe().unwrap());
        for s in d["sources"].as_array().unwrap() {
            let source = s["id"].as_i64().unwrap() as f64;
            for st in s["streams"].as_array().unwrap() {
                let stream = st["name"].as_str().unwrap();
                let segs = st["segments"].as_array().unwrap();
                let ts = |i: usize, k: &str| segs.get(i).and_then(|g| g[k].as_i64());
                let mid = ts(segs.len() / 2, "first_ts").unwrap_or(0);
                let spans = [
                    (i64::MIN, i64::MAX),
                    (mid, i64::MAX),
                    (i64::MIN, mid),
                    (mid, mid.saturating_add(1)),
                ];
                for (from, to) in spans {
                    let fresh = open(&f);
                    for points in [Some(7), None] {
                        let before = fresh.read_range(source, stream, from, to, None, points, None);
                        let after = listed.read_range(source, stream, from, to, None, points, None);
                        assert_eq!(
                            answer(before),
                            answer(after),
                            "{} {stream} [{from}, {to}]",
                            f.file
                        );
                    }
                    let count = fresh.window_segments(source, stream, from, to).unwrap();
                    let want = segs
                        .iter()
                        .filter(|g| {
                            g["last_ts"].as_i64().unwrap() >= from
                                && g["first_ts"].as_i64().unwrap() <= to
                        })
                        .count();
                    assert_eq!(
                        get(&count, "total").as_f64(),
                        Some(want as f64),
                        "{} {stream}",
                        f.file
                    );
                    windows += 1;
                }
            }
        }
    }
    assert!(windows >= 20, "only {windows} windows");
}
