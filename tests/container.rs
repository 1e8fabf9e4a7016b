//! The container rules (format §2): stamps and geometry, refusal before
//! SQLite touches a foreign file, the one-file rule, read-only media,
//! damaged files, and the exclusive write handle.
#![cfg(all(feature = "write", not(target_arch = "wasm32")))]

mod common;

use std::path::Path;

use dendro::container::{sniff, FileKind, APPLICATION_ID, SCHEMA_VERSION};
use dendro::{Archive, ArchiveMut, Error, NotArchive};

fn header(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()[..100].to_vec()
}

fn be(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap())
}

#[test]
fn a_created_archive_carries_its_stamps_and_geometry_in_the_main_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.dendro");
    drop(ArchiveMut::create(&path).unwrap());
    let h = header(&path);
    assert_eq!(&h[..16], b"SQLite format 3\0");
    assert_eq!(be(&h, 68), APPLICATION_ID);
    assert_eq!(be(&h, 60), SCHEMA_VERSION);
    assert_eq!(u16::from_be_bytes([h[16], h[17]]), 4096, "page size");
    assert_eq!((h[18], h[19]), (2, 2), "WAL mode");
    assert_ne!(be(&h, 52), 0, "auto_vacuum is on");
    assert_eq!(be(&h, 64), 1, "incremental vacuum");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let vacuum: i64 = conn
        .query_row("PRAGMA auto_vacuum", [], |r| r.get(0))
        .unwrap();
    assert_eq!(vacuum, 2);
    let tables: i64 = conn
        .query_row("SELECT COUNT(*) FROM sqlite_master WHERE name IN ('sources','segments','wal','clock_offsets','caller_rows','segments_by_time','caller_rows_by_time')", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 7);
}

#[test]
fn a_plain_copy_of_the_main_file_alone_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.dendro");
    let archive = ArchiveMut::create(&path).unwrap();
    let copy = dir.path().join("copy.dendro");
    std::fs::copy(&path, &copy).unwrap();
    let opened = Archive::open(&copy).unwrap();
    assert!(dendro::read::describe(&opened).unwrap().sources.is_empty());
    drop(archive);
}

fn stamped_sqlite(path: &Path, application_id: i32, user_version: i32) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA application_id = {application_id}; PRAGMA user_version = {user_version};
         CREATE TABLE sources(id INTEGER PRIMARY KEY);"
    ))
    .unwrap();
}

#[test]
fn foreign_sqlite_files_are_refused_before_sqlite_touches_them() {
    let dir = tempfile::tempdir().unwrap();
    for (name, app, cause) in [
        ("rez.sqlite", 0, NotArchive::UnstampedSqlite),
        (
            "other.sqlite",
            0x1234_5678,
            NotArchive::ForeignApplication(0x1234_5678),
        ),
    ] {
        let path = dir.path().join(name);
        stamped_sqlite(&path, app, 4);
        let before = std::fs::read(&path).unwrap();
        let err = Archive::open(&path).unwrap_err();
        assert!(
            matches!(&err, Error::NotAnArchive { cause: c, .. } if *c == cause),
            "{err}"
        );
        assert!(err.to_string().contains(name));
        assert!(matches!(
            ArchiveMut::open(&path),
            Err(Error::NotAnArchive { .. })
        ));
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "the file is untouched"
        );
        for sidecar in ["-wal", "-shm", "-journal"] {
            assert!(!dir.path().join(format!("{name}{sidecar}")).exists());
        }
    }
}

#[test]
fn a_newer_schema_version_is_refused_by_number() {
    let dir = tempfile::tempdir().unwrap();
    // 4 and 5 are read (tests/schema5.rs); 6 is the first newer one.
    let path = dir.path().join("v6.dendro");
    stamped_sqlite(&path, APPLICATION_ID as i32, 6);
    assert_eq!(sniff(&path).unwrap(), FileKind::Archive { version: 6 });
    let err = Archive::open(&path).unwrap_err();
    assert!(matches!(err, Error::UnsupportedSchema { version: 6, .. }));
    assert!(err.to_string().contains("version 6"), "{err}");
    assert!(err.to_string().contains("4 and 5"), "{err}");
}

#[test]
fn a_stamped_file_without_a_catalog_is_refused_naming_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bare.dendro");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA application_id = {}; PRAGMA user_version = 4; CREATE TABLE unrelated(x);",
        APPLICATION_ID as i32
    ))
    .unwrap();
    drop(conn);
    let err = Archive::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotAnArchive {
                cause: NotArchive::NoCatalog,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("no catalog"));
}

#[test]
fn a_second_write_handle_is_refused_as_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("held.dendro");
    let first = ArchiveMut::create(&path).unwrap();
    let err = ArchiveMut::open(&path)
        .err()
        .expect("second handle refused");
    assert!(matches!(err, Error::InUse { .. }), "{err}");
    drop(first);
    ArchiveMut::open(&path).unwrap();
}

#[test]
fn creating_over_an_existing_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taken");
    std::fs::write(&path, b"precious").unwrap();
    assert!(ArchiveMut::create(&path).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
}

#[test]
fn creating_in_a_missing_or_non_directory_folder_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-folder").join("run.dendro");
    let Err(err) = ArchiveMut::create(&missing) else {
        panic!("created in a missing folder")
    };
    let text = err.to_string();
    assert!(
        matches!(&err, dendro::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
        "{err:?}"
    );
    assert!(
        text.contains("no-such-folder") && text.contains("run.dendro"),
        "{text}"
    );
    assert!(!text.contains("read-only"), "{text}");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let Err(err) = ArchiveMut::create(file.join("run.dendro")) else {
        panic!("created under a file")
    };
    assert!(err.to_string().ends_with("not a directory"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

/// A read-only view of a folder: a read-only bind mount when running as
/// root (permissions do not bind root), otherwise permission bits.
struct ReadOnlyDir {
    path: std::path::PathBuf,
    mounted: bool,
}

impl ReadOnlyDir {
    fn new(source: &Path, at: &Path) -> Option<ReadOnlyDir> {
        std::fs::create_dir_all(at).unwrap();
        let run = |args: &[&str]| {
            std::process::Command::new("mount")
                .args(args)
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        };
        let (s, a) = (source.to_str().unwrap(), at.to_str().unwrap());
        if run(&["--bind", s, a]) {
            if run(&["-o", "remount,ro,bind", a]) {
                return Some(ReadOnlyDir {
                    path: at.into(),
                    mounted: true,
                });
            }
            run(&["-u", a]);
        }
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .ok()?
            .stdout
            == b"0\n";
        if root {
            common::skip(
                "read_only_media_opens_immutable_and_refuses_to_write_or_read_short",
                "read-only media cannot be simulated here: running as root, and mount --bind \
                 is not permitted",
            );
            return None;
        }
        use std::os::unix::fs::PermissionsExt;
        for entry in std::fs::read_dir(source).unwrap() {
            let p = entry.unwrap().path();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        }
        std::fs::set_permissions(source, std::fs::Permissions::from_mode(0o555)).unwrap();
        Some(ReadOnlyDir {
            path: source.into(),
            mounted: false,
        })
    }
}

impl Drop for ReadOnlyDir {
    fn drop(&mut self) {
        if self.mounted {
            let _ = std::process::Command::new("umount")
                .arg(&self.path)
                .status();
        } else {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o755));
        }
    }
}

#[test]
fn read_only_media_opens_immutable_and_refuses_to_write_or_read_short() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let path = src.join("ro.dendro");
    common::sample_archive(&path);
    let Some(ro) = ReadOnlyDir::new(&src, &dir.path().join("mnt")) else {
        return;
    };
    let ro_path = ro.path.join("ro.dendro");
    let archive = Archive::open(&ro_path).expect("read-only media opens immutable");
    let d = dendro::read::describe(&archive).unwrap();
    assert_eq!(d.sources[0].streams.len(), 3);
    assert!(archive.verify().unwrap().sound);
    drop(archive);
    let err = ArchiveMut::open(&ro_path)
        .err()
        .expect("no write handle on read-only media");
    assert!(
        matches!(
            err,
            Error::ReadOnly {
                cause: dendro::ReadOnly::Media,
                ..
            }
        ),
        "{err}"
    );
    drop(ro);

    // With a -wal sidecar holding commits, an immutable open would read short.
    let wal = src.join("ro.dendro-wal");
    std::fs::write(&wal, vec![1u8; 4096]).unwrap();
    let Some(ro) = ReadOnlyDir::new(&src, &dir.path().join("mnt")) else {
        return;
    };
    let err = Archive::open(ro.path.join("ro.dendro")).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ReadOnly {
                cause: dendro::ReadOnly::SidecarOnReadOnlyMedia,
                ..
            }
        ),
        "{err}"
    );
}

/// Opens, describes, verifies and decodes everything; errors are fine,
/// panics are not (the caller catches them).
fn exercise(path: &Path) {
    let Ok(archive) = Archive::open(path) else {
        return;
    };
    let _ = archive.verify();
    if let Ok(d) = dendro::read::describe(&archive) {
        for source in &d.sources {
            for stream in &source.streams {
                for seg in &stream.segments {
                    if let Ok(bytes) =
                        dendro::read::segment_bytes(&archive, source.id, &stream.name, seg.seq)
                    {
                        let _ = dendro::segment::decode_segment(bytes, None);
                    }
                }
                let _ = dendro::read::stream_range(
                    &archive,
                    source.id,
                    &stream.name,
                    i64::MIN,
                    i64::MAX,
                    Some(&common::FixtureEncoder::default()),
                );
            }
        }
    }
}

#[test]
fn damaged_and_truncated_files_give_errors_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine.dendro");
    common::sample_archive(&pristine);
    let bytes = std::fs::read(&pristine).unwrap();
    let pages = bytes.len() / 4096;
    assert!(pages >= 8, "the sample spans several pages ({pages})");
    let mut damaged_reports = 0;
    for page in 0..pages {
        for (kind, damage) in [("garbage", 0u8), ("bitflip", 1u8)] {
            let mut copy = bytes.clone();
            let range = page * 4096..(page + 1) * 4096;
            if damage == 0 {
                for (i, b) in copy[range].iter_mut().enumerate() {
                    *b = (i as u8).wrapping_mul(151).wrapping_add(page as u8);
                }
            } else {
                copy[page * 4096 + 2048 + page % 7] ^= 0x10;
            }
            let path = dir.path().join(format!("{kind}-{page}.dendro"));
            std::fs::write(&path, &copy).unwrap();
            let outcome = std::panic::catch_unwind(|| exercise(&path));
            assert!(outcome.is_ok(), "{kind} on page {page} panicked");
            if let Ok(a) = Archive::open(&path) {
                if a.verify().map(|r| !r.sound).unwrap_or(true) {
                    damaged_reports += 1;
                }
            }
        }
    }
    for cut in [100, 4096, bytes.len() / 2, bytes.len() - 4096] {
        let path = dir.path().join(format!("cut-{cut}.dendro"));
        std::fs::write(&path, &bytes[..cut]).unwrap();
        assert!(
            std::panic::catch_unwind(|| exercise(&path)).is_ok(),
            "cut at {cut} panicked"
        );
    }
    assert!(damaged_reports > 0, "verify noticed at least some damage");
}

#[test]
fn verify_reports_every_problem_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.dendro");
    let id = common::sample_archive(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = OFF;
         UPDATE segments SET first_ts = last_ts + 1 WHERE stream = 'sealed' AND seq = 0;
         UPDATE segments SET rows = 0 WHERE stream = 'sealed' AND seq = 1;
         UPDATE segments SET bytes = x'00112233445566778899aabbccddeeff' WHERE stream = 'mixed';
         INSERT INTO wal VALUES (99, 'ghost', 1, 0, x'00');
         INSERT INTO wal VALUES ({id}, 'sealed', 5, 0, x'00');"
    ))
    .unwrap();
    drop(conn);
    let report = Archive::open(&path).unwrap().verify().unwrap();
    assert!(!report.sound);
    use dendro::verify::ProblemKind::*;
    let kinds: Vec<_> = report.problems.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        vec![DanglingReference, Segment, Segment, Segment, UnreachableWal],
        "{:#?}",
        report.problems
    );
}

#[test]
fn vacuum_into_copies_commits_still_in_the_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.dendro");
    common::sample_archive(&path);
    // A writer that keeps its connection open: its commits sit in -wal.
    let writer = rusqlite::Connection::open(&path).unwrap();
    writer
        .execute_batch("PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    let extra = common::rows_at(&[1000, 1001]);
    for row in &extra {
        writer
            .execute(
                "INSERT INTO wal VALUES (1, 'live', ?1, ?2, ?3)",
                rusqlite::params![row.ts, row.wall_offset, row.row],
            )
            .unwrap();
    }
    let plain = dir.path().join("plain.dendro");
    std::fs::copy(&path, &plain).unwrap();
    let exact = dir.path().join("exact.dendro");
    Archive::open(&path).unwrap().vacuum_into(&exact).unwrap();
    let live_rows = |p: &Path| {
        let a = Archive::open(p).unwrap();
        dendro::read::live_wal_span(&a, 1, "live")
            .unwrap()
            .map_or(0, |s| s.rows)
    };
    assert_eq!(live_rows(&exact), 4, "the exact copy has every commit");
    assert_eq!(
        live_rows(&plain),
        2,
        "a plain copy misses the sidecar's commits"
    );
    assert_eq!(sniff(&exact).unwrap(), FileKind::Archive { version: 4 });
    assert!(Archive::open(&exact).unwrap().verify().unwrap().sound);
    drop(writer);
}

#[test]
fn verify_reports_labels_and_metadata_that_are_not_string_maps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("maps.dendro");
    common::sample_archive(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "INSERT INTO sources(labels, metadata, clock_anchor_wall_ns) VALUES ('{\"n\": 1}', '[]', 0);
         INSERT INTO sources(labels, metadata, clock_anchor_wall_ns) VALUES ('nope', '{}', 0);",
    )
    .unwrap();
    drop(conn);
    let report = Archive::open(&path).unwrap().verify().unwrap();
    let catalog: Vec<_> = report
        .problems
        .iter()
        .filter(|p| p.kind == dendro::verify::ProblemKind::Catalog)
        .map(|p| p.message.clone())
        .collect();
    assert_eq!(catalog.len(), 3, "{catalog:#?}");
    assert!(catalog[0].contains("\"n\" is not a string"));
}

#[test]
fn verify_leaves_caller_rows_alone() {
    // The caller's store is the caller's: the format keeps verify out of it,
    // so even a row naming no source is no problem of the archive's.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    common::sample_archive(&path);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "PRAGMA foreign_keys = OFF; INSERT INTO caller_rows VALUES (99, 'ghost', 1, x'00')",
        )
        .unwrap();
    let report = Archive::open(&path).unwrap().verify().unwrap();
    assert!(report.sound, "{:?}", report.problems);
}

#[test]
fn verify_counts_covered_rows_as_information_not_as_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    common::sample_archive(&path);
    // The sample's stream `mixed` keeps one row its segment covers, as a
    // kill between a seal and its prune leaves it; add a thousand more.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "WITH RECURSIVE n(value) AS (SELECT 11 UNION ALL SELECT value + 1 FROM n WHERE value < 29)
         INSERT INTO wal SELECT 1, 'sealed', value, 0, x'00' FROM n WHERE value <> 20;
         INSERT INTO segments SELECT 1, 'bulk', 0, 1, 0, 1000, bytes, NULL FROM segments LIMIT 1;
         WITH RECURSIVE n(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM n WHERE value < 1000)
         INSERT INTO wal SELECT 1, 'bulk', value, 0, x'00' FROM n;",
    )
    .unwrap();
    drop(conn);
    let report = Archive::open(&path).unwrap().verify().unwrap();
    assert!(report.sound, "{:?}", report.problems);
    assert_eq!(report.covered_wal_rows, 1 + 18 + 1000);
    let note = report.note().unwrap();
    assert!(note.starts_with("1019 WAL row(s) are covered"), "{note}");
}

#[test]
fn verify_answers_from_one_snapshot_while_a_writer_seals_and_evicts() {
    // Retention deletes segments between verify's questions; read in one
    // snapshot, a sound file never looks unsound.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    let writer = dendro::Writer::create(&path, common::FixtureEncoder::default()).unwrap();
    let source = writer
        .add_source(dendro::Labels::new(), dendro::Labels::new())
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let verifier = {
        let path = path.clone();
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut runs = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || runs < 20 {
                let report = Archive::open(&path).unwrap().verify().unwrap();
                assert!(report.sound, "run {runs}: {:?}", report.problems);
                runs += 1;
            }
            runs
        })
    };
    for ts in 0..600i64 {
        let rows = ["a", "b"]
            .iter()
            .map(|s| (s.to_string(), common::rows_at(&[ts]).remove(0)))
            .collect();
        source.wal(rows).unwrap();
        if ts % 5 == 4 {
            source.seal(["a", "b"]).unwrap();
        }
        if ts % 20 == 19 {
            source.evict_before(ts - 10).unwrap();
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let runs = verifier.join().expect("every verify was sound");
    assert!(runs >= 20);
    drop(source);
    writer.join().unwrap();
}

#[test]
fn a_sidecar_beside_a_foreign_file_does_not_get_it_read_as_an_archive() {
    // The fallback that reads the stamp through the log (for a header a
    // power cut garbled) must not open the door to any file with a -wal.
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, b"not a database at all, just words").unwrap();
    std::fs::write(dir.path().join("notes.txt-wal"), vec![7u8; 4096]).unwrap();
    let err = Archive::open(&text).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotAnArchive {
                cause: NotArchive::NotSqlite,
                ..
            }
        ),
        "{err}"
    );
    let foreign = dir.path().join("other.sqlite");
    stamped_sqlite(&foreign, 0x1234_5678, 4);
    std::fs::write(dir.path().join("other.sqlite-wal"), vec![7u8; 4096]).unwrap();
    assert!(matches!(
        Archive::open(&foreign).unwrap_err(),
        Error::NotAnArchive {
            cause: NotArchive::ForeignApplication(0x1234_5678),
            ..
        }
    ));
    assert!(ArchiveMut::open(&foreign).is_err());
}
