//! The planner against archives written here and read in place through a
//! lazy file over their bytes that counts what it is asked. Natively
//! SQLite reads the file on disk itself, so "the read" each test checks is
//! what reaches the lazy file: the b-tree pages SQLite would read (every
//! page of the trees listing walks, as `dbstat` names them), payloads read
//! by range (which find their rows by walking the table through the lazy
//! file), and segment footers read as the range reader reads them. After a
//! plan's rounds, none of it may reach the source.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use super::*;
use crate::container::ArchiveMut;
use crate::pager::mock::Image;
use crate::pager::LazyConfig;
use crate::segment::Segment;
use crate::Labels;

/// An archive read in place, as the browser's engine opens one: the head
/// read first, payloads served by range through the same lazy file.
struct Served {
    archive: Rc<Archive>,
    file: SharedFile<Image>,
    image: Image,
    path: std::path::PathBuf,
}

/// The head the engine reads at open (`OPEN_HEAD_BYTES` in the worker).
const HEAD_BYTES: u64 = 64 << 10;

/// The engine's cache for a local file, without its read-ahead: each page
/// a read misses is one read of the source, so a count of reads is a count
/// of pages the plan did not bring in.
const NO_READ_AHEAD: LazyConfig = LazyConfig {
    min_read_bytes: crate::container::PAGE_SIZE as u64,
    max_read_bytes: crate::container::PAGE_SIZE as u64,
    ..LazyConfig::LOCAL_FILE
};

fn serve(path: &Path) -> Served {
    let served = crate::pager::mock::serve_with(
        path,
        std::fs::read(path).unwrap(),
        NO_READ_AHEAD,
        HEAD_BYTES,
    );
    Served {
        archive: served.archive,
        file: served.file,
        image: served.image,
        path: path.to_path_buf(),
    }
}

/// Runs `plan` to its end, fetching what each round names from the image
/// as the worker does; answers the rounds. Fails past `most` rounds.
fn drive(plan: &mut Prefetch<Image>, s: &Served, most: u32) -> u32 {
    let mut rounds = 0;
    while let Need::Ranges(ranges) = plan.next().unwrap() {
        rounds += 1;
        assert!(rounds <= most, "round {rounds} still asks for {ranges:?}");
        assert!(!ranges.is_empty(), "a round names something");
        for (offset, len) in ranges {
            let bytes = &s.image.bytes()[offset as usize..(offset + len) as usize];
            plan.fill(offset, bytes);
        }
    }
    assert_eq!(plan.next().unwrap(), Need::Done, "done for good");
    assert_eq!(plan.rounds(), rounds);
    rounds
}

/// Payload bytes that differ from page to page.
fn payload_of(seq: i64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u64)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(seq as u64 * 97) as u8
        })
        .collect()
}

/// A segment of real Parquet (so its footer reads as the range reader
/// reads it): `rows` rows from `seq * 1000`, values that barely compress.
fn parquet_segment(seq: i64, rows: usize) -> Segment {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("v", DataType::Float64, false),
    ]));
    let first = seq * 1000;
    let ts = Int64Array::from_iter_values((0..rows as i64).map(|i| first + i * 1000 / rows as i64));
    let mut state = seq as u64 * 7919 + 1;
    let v = Float64Array::from_iter_values((0..rows).map(|_| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64
    }));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(ts), Arc::new(v)]).unwrap();
    Segment {
        bytes: crate::segment::encode_batch(&batch).unwrap(),
        rows: rows as i64,
        first_ts: first,
        last_ts: first + 999,
        caller_index: None,
    }
}

/// Writes `segments` (stream, seq, segment) under source 1 in one
/// transaction each call.
fn put(archive: &mut ArchiveMut, segments: impl IntoIterator<Item = (&'static str, i64, Segment)>) {
    let tx = archive.transaction().unwrap();
    for (stream, seq, segment) in segments {
        tx.insert_segment(1, stream, seq, &segment).unwrap();
    }
    tx.commit().unwrap();
}

/// A new archive at `path` with source 1.
fn create(path: &Path) -> ArchiveMut {
    let mut archive = ArchiveMut::create(path).unwrap();
    let tx = archive.transaction().unwrap();
    tx.insert_source(&Labels::new(), &Labels::new(), 0).unwrap();
    tx.commit().unwrap();
    archive
}

/// A catalog too large for the head: three streams of 200 segments each,
/// payloads of a few kB that spill into overflow pages between the
/// table's leaves, so its leaves lie scattered through the file.
fn write_catalog(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("catalog.dendro");
    let mut archive = create(&path);
    for (k, stream) in ["cpu", "disk", "net"].into_iter().enumerate() {
        put(
            &mut archive,
            (0..200).map(|seq| {
                let len = 3000 + (seq as usize * 37 + k * 500) % 6000;
                let segment = Segment {
                    bytes: payload_of(seq, len),
                    rows: 1,
                    first_ts: seq * 10,
                    last_ts: seq * 10 + 5,
                    caller_index: None,
                };
                (stream, seq, segment)
            }),
        );
    }
    path
}

/// Every interior and leaf page of the named trees, as SQLite counts them.
fn tree_pages(path: &Path, trees: &[&str]) -> Vec<u64> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut pages = Vec::new();
    for tree in trees {
        let mut stmt = conn
            .prepare(
                "SELECT pageno FROM dbstat WHERE name = ?1 AND pagetype IN ('internal', 'leaf')",
            )
            .unwrap();
        let found = stmt
            .query_map([tree], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|p| p.unwrap() as u64);
        pages.extend(found);
    }
    assert!(!pages.is_empty());
    pages
}

/// Reads `pages` (1-based) through the lazy file as SQLite's VFS would,
/// answering how many reads reached the source.
fn source_reads_for(s: &Served, pages: &[u64]) -> u64 {
    let before = s.image.reads();
    let page = crate::container::PAGE_SIZE as u64;
    let mut buf = vec![0u8; page as usize];
    for &p in pages {
        s.file.borrow_mut().read(&mut buf, (p - 1) * page).unwrap();
    }
    s.image.reads() - before
}

/// Reads the first bytes of each of `seqs`' payloads by range, which
/// finds each row by walking the `segments` table through the lazy file;
/// answers how many reads reached the source.
fn source_reads_for_rows(s: &Served, rows: &[(&str, i64)]) -> u64 {
    let before = s.image.reads();
    s.archive
        .read_snapshot(|snap| {
            for &(stream, seq) in rows {
                let payload = snap.segment_payload(1, stream, seq)?;
                let mut head = [0u8; 4];
                payload.read_at(0, &mut head)?;
                assert_eq!(head[..], payload_of(seq, 4)[..]);
            }
            Ok(())
        })
        .unwrap();
    s.image.reads() - before
}

#[test]
fn a_catalog_plan_leaves_listing_nothing_to_fetch() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_catalog(dir.path());
    let trees = ["segments", "sqlite_autoindex_segments_1", "sources"];
    // Without a plan, SQLite's reads of the catalog miss one page at a time.
    let cold = serve(&path);
    assert!(source_reads_for(&cold, &tree_pages(&path, &trees)) > 100);

    let s = serve(&path);
    let before = s.image.reads();
    let mut plan = Prefetch::catalog(Rc::clone(&s.archive), Rc::clone(&s.file));
    let rounds = drive(&mut plan, &s, 4);
    assert!(rounds >= 1, "the leaves lie past the head");
    assert_eq!(s.image.reads(), before, "planning reads nothing itself");
    assert_eq!(source_reads_for(&s, &tree_pages(&s.path, &trees)), 0);
    // The listing made from those pages is the archive's.
    let listing = s.archive.read_snapshot(Listing::read).unwrap();
    assert_eq!(listing.stream(1, "disk").len(), 200);
}

#[test]
fn an_outline_plan_brings_the_small_trees_then_each_streams_first_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_catalog(dir.path());
    let small = ["sources", "sqlite_autoindex_segments_1"];
    let firsts = [("cpu", 0), ("disk", 0), ("net", 0)];
    // Without a plan, finding the first rows reads the table's pages.
    let cold = serve(&path);
    assert!(source_reads_for_rows(&cold, &firsts) > 0);

    let s = serve(&path);
    let notes = Rc::new(Notes::default());
    let mut plan = Prefetch::outline(
        Rc::clone(&s.archive),
        Rc::clone(&s.file),
        0,
        Rc::clone(&notes),
    );
    let rounds = drive(&mut plan, &s, 5);
    assert!(rounds >= 2, "the trees, then the rows");
    assert_eq!(notes.segment_count(&s.archive), 600);
    assert_eq!(source_reads_for(&s, &tree_pages(&s.path, &small)), 0);
    assert_eq!(source_reads_for_rows(&s, &firsts), 0);
    assert!(
        source_reads_for_rows(&s, &[("disk", 150)]) > 0,
        "a later row's leaf was not brought in"
    );

    // Fewer segments than an outline needs: the small trees alone.
    let s = serve(&path);
    let notes = Rc::new(Notes::default());
    let mut plan = Prefetch::outline(Rc::clone(&s.archive), Rc::clone(&s.file), 601, notes);
    let fewer = drive(&mut plan, &s, 5);
    assert!(fewer < rounds);
    assert_eq!(source_reads_for(&s, &tree_pages(&s.path, &small)), 0);
    assert!(source_reads_for_rows(&s, &firsts) > 0);
}

/// Parquet segments whose later payloads reuse the pages earlier ones
/// freed (SQLite hands out free-list pages before growing the file), so
/// their overflow chains break wherever a freed run ends: 40 segments of
/// about 30 kB, every other one deleted, then six of about 200 kB.
fn write_fragmented(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("fragmented.dendro");
    {
        let mut archive = create(&path);
        put(
            &mut archive,
            (0..40).map(|seq| ("m", seq, parquet_segment(seq, 3_500))),
        );
    }
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("DELETE FROM segments WHERE seq % 2 = 1", [])
        .unwrap();
    let mut archive = ArchiveMut::open(&path).unwrap();
    put(
        &mut archive,
        (100..106).map(|seq| ("m", seq, parquet_segment(seq, 25_000))),
    );
    path
}

/// The archive's listing, read by SQLite from the file itself.
fn listing_of(path: &Path) -> Listing {
    let archive = Archive::open(path).unwrap();
    archive.read_snapshot(Listing::read).unwrap()
}

/// A window plan with nothing summarized yet.
fn window_plan(s: &Served, from: i64, to: i64, notes: &Rc<Notes>) -> Prefetch<Image> {
    let ask = WindowAsk {
        source_id: 1,
        stream: "m".into(),
        from,
        to,
        columns: None,
        max_points: Some(500),
        rates: None,
        preview: true,
        budget: crate::read::range::VIEWER_SEGMENT_BUDGET,
    };
    let listing = Rc::new(s.archive.read_snapshot(Listing::read).unwrap());
    let file = Rc::clone(&s.file);
    let summarized: Summarized = Box::new(|_| false);
    Prefetch::window(
        Rc::clone(&s.archive),
        file,
        ask,
        listing,
        Rc::clone(notes),
        summarized,
    )
}

/// The footers of `records` read as the range reader reads them, each
/// with a summary; answers how many reads reached the source.
fn source_reads_for_footers(s: &Served, records: &[SegmentRecord]) -> u64 {
    let before = s.image.reads();
    for record in records {
        let stats = crate::read::stats::segment_stats(&s.archive, record).unwrap();
        assert!(stats.is_some(), "segment {} has a summary", record.seq);
    }
    s.image.reads() - before
}

#[test]
fn a_window_plan_over_fragmented_chains_leaves_the_footers_nothing_to_fetch() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_fragmented(dir.path());
    let listing = listing_of(&path);
    let all = listing.stream(1, "m").to_vec();
    assert_eq!(all.len(), 26);
    // Without a plan, each footer costs reads of its own.
    let cold = serve(&path);
    assert!(source_reads_for_footers(&cold, &all) >= all.len() as u64);

    let s = serve(&path);
    let notes = Rc::new(Notes::default());
    let mut plan = window_plan(&s, 0, i64::MAX, &notes);
    // The table's levels, then the footers: the pointer maps with the
    // guessed pages, then the pages the maps name.
    let rounds = drive(&mut plan, &s, 6);
    assert!(rounds >= 2, "{rounds} rounds");
    assert_eq!(source_reads_for_footers(&s, &all), 0);
    // The footers found held are remembered: the same window again plans
    // nothing, and runs no footer's read on the cache.
    let mut again = window_plan(&s, 0, i64::MAX, &notes);
    assert_eq!(drive(&mut again, &s, 0), 0);
}

#[test]
fn a_window_plan_asks_only_for_the_segments_the_window_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_fragmented(dir.path());
    let listing = listing_of(&path);
    let (inside, outside): (Vec<_>, Vec<_>) = listing
        .stream(1, "m")
        .iter()
        .cloned()
        .partition(|r| r.seq >= 100);
    let s = serve(&path);
    let notes = Rc::new(Notes::default());
    let mut plan = window_plan(&s, 100_000, 106_000, &notes);
    drive(&mut plan, &s, 6);
    assert_eq!(source_reads_for_footers(&s, &inside), 0);
    assert!(source_reads_for_footers(&s, &outside) > 0);
}

/// [`write_catalog`] turned into a schema-5 file as the original's 0.6
/// lays one out: `segments` without `caller_index`, every segment's index
/// (1,500 bytes, past what an index page keeps in its cell, so each
/// spills into an overflow page) in the `WITHOUT ROWID` table
/// `segment_indexes`, and 300 document revisions.
fn write_schema_5_catalog(dir: &Path) -> std::path::PathBuf {
    let path = write_catalog(dir);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE segments DROP COLUMN caller_index;
         CREATE TABLE segment_indexes(
           source_id INTEGER NOT NULL, stream TEXT NOT NULL, seq INTEGER NOT NULL,
           bytes BLOB NOT NULL, PRIMARY KEY (source_id, stream, seq),
           FOREIGN KEY (source_id, stream, seq)
             REFERENCES segments(source_id, stream, seq) ON DELETE CASCADE
         ) WITHOUT ROWID;
         CREATE TABLE documents(
           id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
           name TEXT NOT NULL, schema TEXT, body TEXT, created_wall_ns INTEGER NOT NULL,
           supersedes INTEGER REFERENCES documents(id),
           CHECK ((schema IS NULL) = (body IS NULL)));
         CREATE INDEX documents_by_name ON documents(kind, name, id);
         INSERT INTO segment_indexes
           SELECT source_id, stream, seq, randomblob(1500) FROM segments;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
           INSERT INTO documents SELECT i, 'u' || i, 'k' || (i % 7), 'n' || (i % 40),
             's/1', json_object('i', i, 'pad', hex(randomblob(200))), i, NULL FROM n;
         PRAGMA user_version = 5;",
    )
    .unwrap();
    drop(conn);
    path
}

#[test]
fn a_catalog_plan_brings_a_schema_5_files_index_table_and_documents() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_schema_5_catalog(dir.path());
    let trees = [
        "segments",
        "sqlite_autoindex_segments_1",
        "sources",
        "segment_indexes",
        "documents",
        "documents_by_name",
    ];
    let cold = serve(&path);
    assert!(source_reads_for(&cold, &tree_pages(&path, &["segment_indexes"])) > 10);

    let s = serve(&path);
    assert_eq!(s.archive.layout(), crate::format::Layout::SCHEMA_5);
    let mut plan = Prefetch::catalog(Rc::clone(&s.archive), Rc::clone(&s.file));
    drive(&mut plan, &s, 5);
    assert_eq!(source_reads_for(&s, &tree_pages(&s.path, &trees)), 0);
    // What the listing and the description read from those pages.
    let listing = s.archive.read_snapshot(Listing::read).unwrap();
    assert_eq!(listing.all().len(), 600);
    assert!(listing.all().iter().all(|r| r.caller_index));
    let d = crate::read::describe_with(&s.archive, Some(&listing)).unwrap();
    // (i mod 7, i mod 40) repeats every 280 revisions.
    assert_eq!(d.documents.len(), 280);
    assert_eq!(d.document_revisions(), 300);
}

/// The schema-5 fixtures the original's 0.6.1 wrote, read in place: every
/// payload by range gives SQLite's bytes, and the description is the one
/// read from the file whole.
#[test]
fn the_schema_5_fixtures_read_in_place_as_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/schema5");
    let mut payloads = 0;
    for name in ["s5a_multi_source.dendro", "s5b_retention.dendro"] {
        let path = dir.path().join(name);
        std::fs::copy(fixtures.join(name), &path).unwrap();
        let whole = crate::read::describe(&Archive::open(&path).unwrap()).unwrap();
        let s = serve(&path);
        let mut plan = Prefetch::catalog(Rc::clone(&s.archive), Rc::clone(&s.file));
        drive(&mut plan, &s, 5);
        let d = crate::read::describe(&s.archive).unwrap();
        assert_eq!(d.documents, whole.documents, "{name}");
        assert_eq!(d.sources, whole.sources, "{name}");
        assert!(d
            .sources
            .iter()
            .flat_map(|s| &s.streams)
            .any(|st| st.segments.iter().any(|g| g.caller_index)));
        s.archive
            .read_snapshot(|snap| {
                for r in snap.all_segments()? {
                    let payload = snap.segment_payload(r.source_id, &r.stream, r.seq)?;
                    assert!(
                        payload.in_place().is_some(),
                        "{name}: seq {} in place",
                        r.seq
                    );
                    let mut by_range = vec![0u8; payload.len()];
                    payload.read_at(0, &mut by_range)?;
                    crate::pager::set_in_place_payloads(false);
                    let sqlite = snap.segment_bytes(r.source_id, &r.stream, r.seq);
                    crate::pager::set_in_place_payloads(true);
                    assert_eq!(by_range, sqlite?, "{name}: seq {}", r.seq);
                    payloads += 1;
                }
                Ok(())
            })
            .unwrap();
    }
    assert_eq!(payloads, 16 + 5);
}

#[test]
fn an_archive_without_the_trees_plans_nothing() {
    // A header that is not cached: no walk can start, and the plan says
    // so at once rather than guessing.
    let dir = tempfile::tempdir().unwrap();
    let path = write_catalog(dir.path());
    let image = Image::new(std::fs::read(&path).unwrap());
    let file = Rc::new(RefCell::new(image.lazy(NO_READ_AHEAD)));
    let archive = Rc::new(Archive::open(&path).unwrap());
    let mut plan = Prefetch::catalog(archive, file);
    assert_eq!(plan.next().unwrap(), Need::Done);
    assert_eq!(image.reads(), 0);
}
