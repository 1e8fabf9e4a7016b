//! Replays every input kept under `tests/corpus/<target>/` (the findings of
//! `scripts/fuzz.sh` and a few seeds) through the same entry points the
//! fuzz targets drive (`tests/fuzz_entry/mod.rs`), under plain stable
//! `cargo test`. Each input must end in `Ok` or a typed error, never a
//! panic: a panic hook counts panics, including those the decoder's own
//! `catch_unwind` would turn into an error natively (in wasm32 a panic
//! aborts, so the guard is no excuse).
#![cfg(not(target_arch = "wasm32"))]

mod fuzz_entry;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            default(info);
        }));
    });
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = corpus_dir().join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{} is not readable: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs each input of `target` in turn; fails naming every input that
/// panicked (the first panic's message is printed by the default hook).
fn replay(target: &str) {
    count_panics();
    let run = fuzz_entry::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, run)| *run)
        .unwrap();
    let files = inputs(target);
    assert!(!files.is_empty(), "tests/corpus/{target}/ holds no input");
    let mut failed = Vec::new();
    for file in &files {
        let data = std::fs::read(file).unwrap();
        let before = PANICS.load(Ordering::SeqCst);
        let outcome = std::panic::catch_unwind(|| run(&data));
        if outcome.is_err() || PANICS.load(Ordering::SeqCst) != before {
            failed.push(file.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: {} of {} inputs panicked: {failed:?}",
        failed.len(),
        files.len()
    );
    eprintln!("{target}: {} inputs replayed", files.len());
}

// One test per target, so a failure names its target. The panic count is
// the process's, and tests run in parallel: the lock keeps one replay at a
// time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

macro_rules! target {
    ($name:ident) => {
        #[test]
        fn $name() {
            let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
            replay(stringify!($name));
        }
    };
}

target!(open_bytes);
target!(verify);
target!(segment);
target!(describe);
target!(envelope);
target!(frames);
target!(in_place);

/// Every directory under `tests/corpus/` is a target the replay knows, and
/// the corpus stays small.
#[test]
fn the_corpus_names_known_targets_and_stays_small() {
    let mut total = 0u64;
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            fuzz_entry::TARGETS.iter().any(|(t, _)| *t == name),
            "tests/corpus/{name} is no fuzz target"
        );
        for file in inputs(&name) {
            total += std::fs::metadata(file).unwrap().len();
        }
    }
    assert!(total < 2 << 20, "tests/corpus holds {total} bytes");
}

/// Writes the seeds made here: a small archive (`open_bytes`, `verify`),
/// a replication stream (`frames`), and segments (`segment`):
/// layouts the fixtures lack (nullable, nested and repeated columns,
/// dictionaries, data page v2, each codec), so the fuzzer starts where
/// definition and repetition levels are decoded. Run once by hand:
/// `cargo test --test corpus -- --ignored write_seeds`.
#[test]
#[ignore]
fn write_seeds() {
    for (target, name, bytes) in [
        (
            "open_bytes",
            "seed_sample_archive",
            fuzz_entry::sample_archive(),
        ),
        (
            "verify",
            "seed_sample_archive",
            fuzz_entry::sample_archive(),
        ),
        (
            "frames",
            "seed_one_of_each_kind",
            fuzz_entry::sample_frames(),
        ),
        (
            "in_place",
            "seed_fragmented_chains",
            fuzz_entry::fragmented_archive(),
        ),
        (
            "in_place",
            "seed_sample_archive",
            fuzz_entry::sample_archive(),
        ),
    ] {
        let dir = corpus_dir().join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), &bytes).unwrap();
        eprintln!("{target}/{name}: {} bytes", bytes.len());
    }
    use std::sync::Arc;

    use arrow_array::builder::{Int64Builder, ListBuilder};
    use arrow_array::{
        ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, StructArray,
    };
    use arrow_schema::{DataType, Field, Fields};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::{WriterProperties, WriterVersion};

    let n = 12i64;
    let ts: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
    let nullable: ArrayRef = Arc::new(Int64Array::from_iter(
        (0..n).map(|i| (i % 3 != 0).then_some(i * 11)),
    ));
    let text: ArrayRef = Arc::new(StringArray::from_iter(
        (0..n).map(|i| (i % 4 != 1).then(|| ["up", "down"][(i % 2) as usize])),
    ));
    let floats: ArrayRef = Arc::new(Float64Array::from_iter(
        (0..n).map(|i| (i != 5).then_some(i as f64 / 3.0)),
    ));
    let flags: ArrayRef = Arc::new(BooleanArray::from_iter((0..n).map(|i| Some(i % 2 == 0))));
    let mut list = ListBuilder::new(Int64Builder::new());
    for i in 0..n {
        if i % 5 == 4 {
            list.append_null();
        } else {
            for j in 0..(i % 3) {
                list.values().append_value(i * 10 + j);
            }
            list.append(true);
        }
    }
    let list: ArrayRef = Arc::new(list.finish());
    let inner = Fields::from(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
    ]);
    let structs: ArrayRef = Arc::new(StructArray::new(
        inner,
        vec![Arc::clone(&nullable), Arc::clone(&text)],
        None,
    ));
    let batch = |columns: Vec<(&str, ArrayRef)>| {
        RecordBatch::try_from_iter(columns.into_iter().map(|(n, a)| (n.to_string(), a))).unwrap()
    };
    let base = |c: Compression, v: WriterVersion, dictionary: bool| {
        WriterProperties::builder()
            .set_compression(c)
            .set_writer_version(v)
            .set_dictionary_enabled(dictionary)
            .set_data_page_row_count_limit(4)
            .set_write_batch_size(4)
            .build()
    };
    let seeds = [
        (
            "seed_nullable_v1_plain",
            batch(vec![("ts", ts.clone()), ("value", nullable.clone())]),
            base(Compression::UNCOMPRESSED, WriterVersion::PARQUET_1_0, false),
        ),
        (
            "seed_dictionary_v2_snappy",
            batch(vec![("ts", ts.clone()), ("label", text.clone())]),
            base(Compression::SNAPPY, WriterVersion::PARQUET_2_0, true),
        ),
        (
            "seed_list_v2_zstd",
            batch(vec![("ts", ts.clone()), ("items", list.clone())]),
            base(
                Compression::ZSTD(ZstdLevel::default()),
                WriterVersion::PARQUET_2_0,
                false,
            ),
        ),
        (
            "seed_struct_v1_lz4",
            batch(vec![("ts", ts.clone()), ("pair", structs)]),
            base(Compression::LZ4_RAW, WriterVersion::PARQUET_1_0, true),
        ),
        (
            "seed_mixed_v2_uncompressed",
            batch(vec![
                ("ts", ts),
                ("f", floats),
                ("flag", flags),
                ("items", list),
            ]),
            base(Compression::UNCOMPRESSED, WriterVersion::PARQUET_2_0, true),
        ),
    ];
    let dir = corpus_dir().join("segment");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, batch, props) in seeds {
        let mut out = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        std::fs::write(dir.join(name), &out).unwrap();
        eprintln!("{name}: {} bytes", out.len());
    }
}

/// The hand-made segment seeds are honest Parquet: the checks that refuse
/// the findings must still let every one of them decode.
#[test]
fn the_segment_seeds_still_decode() {
    let seeds: Vec<PathBuf> = inputs("segment")
        .into_iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("seed_")
        })
        .collect();
    assert!(seeds.len() >= 5);
    for seed in seeds {
        let bytes = std::fs::read(&seed).unwrap();
        let batches = dendro::segment::decode_segment(bytes, None)
            .unwrap_or_else(|e| panic!("{}: {e}", seed.display()));
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 12);
    }
}
