//! The catch-up of a new replica is staged beside it and moved into place
//! whole at the first `Rows` frame: the replica's path holds nothing before
//! and an archive like any other after, and what an earlier run staged is
//! discarded.

use std::path::{Path, PathBuf};

use dendro::container::{APPLICATION_ID, SCHEMA_VERSION, STAGING_SUFFIX};
use dendro::replicate::{codec::preamble, Frame, Subscriber};
use dendro::{Archive, ArchiveMut};

use crate::common::{copy_fixture, fixtures};
use crate::round_trip::assert_replica;
use crate::support::{apply_stream, catch_up_stream, decode_all, fixture_encoder};

fn staging(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_os_string();
    name.push(STAGING_SUFFIX);
    PathBuf::from(name)
}

fn fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let (path, _) = fixtures()
        .into_iter()
        .find(|(p, _)| p.ends_with(name))
        .unwrap();
    copy_fixture(&path)
}

/// The header fields and settings every archive is created with.
fn geometry(path: &Path) -> (Vec<u8>, String, i64) {
    let bytes = std::fs::read(path).unwrap();
    let mut fields = bytes[16..20].to_vec(); // page size, WAL read and write versions
    fields.extend_from_slice(&bytes[52..72]); // root, encoding, user_version, vacuum, application_id
    let conn = rusqlite::Connection::open(path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    let vacuum: i64 = conn
        .query_row("PRAGMA auto_vacuum", [], |r| r.get(0))
        .unwrap();
    (fields, mode, vacuum)
}

#[test]
fn a_new_replica_appears_whole_at_the_first_rows_frame_as_an_archive_like_any_other() {
    let (dir, origin) = fixture("g_caller_index.dendro");
    let out = dir.path().join("replica.dendro");
    let frames = decode_all(&catch_up_stream(&origin));
    assert!(frames.iter().any(|f| matches!(f, Frame::Segment { .. })));
    let mut subscriber = Subscriber::open(&out, fixture_encoder()).unwrap();
    let mut promoted = false;
    for frame in frames {
        let rows = matches!(frame, Frame::Rows { .. });
        if !promoted {
            assert!(subscriber.staging());
            assert!(!out.exists(), "the replica's path is empty while staging");
            assert!(staging(&out).exists());
        }
        subscriber.apply(frame).unwrap();
        if rows {
            promoted = true;
            assert!(!subscriber.staging());
            assert!(out.exists());
            assert!(!staging(&out).exists(), "the staging file was moved");
        }
    }
    assert!(promoted);
    subscriber.finish().unwrap();
    assert_replica(&origin, &out);
    assert!(Archive::open(&out).unwrap().verify().unwrap().sound);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(STAGING_SUFFIX))
        .collect();
    assert!(names.is_empty(), "left behind: {names:?}");
    // The same geometry, stamps and journal mode as a created archive.
    let created = dir.path().join("created.dendro");
    drop(ArchiveMut::create(&created).unwrap());
    let (fields, mode, vacuum) = geometry(&out);
    assert_eq!((fields.clone(), mode.clone(), vacuum), geometry(&created));
    assert_eq!(&fields[..4], &[0x10, 0x00, 2, 2]);
    assert_eq!(
        u32::from_be_bytes(fields[20..24].try_into().unwrap()),
        APPLICATION_ID
    );
    assert_eq!(
        u32::from_be_bytes(fields[12..16].try_into().unwrap()),
        SCHEMA_VERSION
    );
    assert_eq!((mode.as_str(), vacuum), ("wal", 2));
}

#[test]
fn a_replica_that_exists_is_brought_up_to_date_in_place() {
    let (dir, origin) = fixture("g_caller_index.dendro");
    let out = dir.path().join("replica.dendro");
    let stream = catch_up_stream(&origin);
    apply_stream(&stream, &out);
    let subscriber = Subscriber::open(&out, fixture_encoder()).unwrap();
    assert!(!subscriber.staging());
    assert!(!staging(&out).exists());
    drop(subscriber);
    // An empty file made for the replica is written in place too.
    let empty = dir.path().join("empty.dendro");
    std::fs::File::create(&empty).unwrap();
    let subscriber = Subscriber::open(&empty, fixture_encoder()).unwrap();
    assert!(!subscriber.staging());
    subscriber.finish().unwrap();
    apply_stream(&stream, &empty);
    assert_replica(&origin, &empty);
}

#[test]
fn what_an_earlier_run_staged_is_discarded_and_the_catch_up_starts_over() {
    let (dir, origin) = fixture("g_caller_index.dendro");
    let out = dir.path().join("replica.dendro");
    let stream = catch_up_stream(&origin);
    // A run killed mid-catch-up: half of its frames in the staging file.
    let frames = decode_all(&stream);
    let mut subscriber = Subscriber::open(&out, fixture_encoder()).unwrap();
    let before_rows = frames
        .iter()
        .position(|f| matches!(f, Frame::Rows { .. }))
        .unwrap();
    for frame in frames.into_iter().take(before_rows / 2 + 1) {
        subscriber.apply(frame).unwrap();
    }
    assert!(subscriber.staging());
    // The staging file stays (as a kill leaves it) once its writer stops.
    drop(subscriber);
    assert!(staging(&out).exists() && !out.exists());
    // Garbage a crash could leave beside it goes too.
    let mut journal = staging(&out).into_os_string();
    journal.push("-journal");
    std::fs::write(&journal, b"torn").unwrap();
    let applied = apply_stream(&stream, &out);
    assert_eq!(applied.segments_held, 0, "started over: {applied:?}");
    assert!(!staging(&out).exists());
    assert!(!Path::new(&journal).exists());
    assert_replica(&origin, &out);
}

#[test]
fn a_staging_file_another_subscriber_holds_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("replica.dendro");
    let first = Subscriber::open(&out, fixture_encoder()).unwrap();
    assert!(first.staging());
    let err = Subscriber::open(&out, fixture_encoder()).unwrap_err();
    assert!(matches!(err, dendro::Error::InUse { .. }), "{err}");
    assert!(staging(&out).exists());
    first.finish().unwrap();
    assert!(out.exists() && !staging(&out).exists());
}

#[test]
fn an_empty_stream_leaves_an_empty_archive() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("replica.dendro");
    apply_stream(&preamble(), &out);
    let archive = Archive::open(&out).unwrap();
    assert!(dendro::read::describe(&archive).unwrap().sources.is_empty());
    assert!(!staging(&out).exists());
}

#[test]
fn a_source_without_a_uuid_is_one_source_across_the_move_into_place() {
    // Its handle is opened again on the moved file, by the uuid the
    // replica minted for it; without one it would be inserted twice.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("replica.dendro");
    let mut subscriber = Subscriber::open(&out, fixture_encoder()).unwrap();
    subscriber
        .apply(Frame::Handshake {
            source: 0,
            row: dendro::catalog::NewSource {
                uuid: None,
                labels: [("host".into(), "old".into())].into(),
                metadata: Default::default(),
                clock_anchor_wall_ns: 1,
                complete: false,
            },
        })
        .unwrap();
    assert!(subscriber.staging());
    subscriber
        .apply(Frame::Rows {
            source: 0,
            seq: 0,
            index_state: (0, 0),
            rows: vec![dendro::replicate::WireRow {
                stream: "a".into(),
                ts: 5,
                wall_offset: 0,
                row: crate::common::fixture_row(5, "a"),
            }],
        })
        .unwrap();
    assert!(!subscriber.staging());
    let applied = subscriber.finish().unwrap();
    assert_eq!(applied.rows, 1);
    let archive = Archive::open(&out).unwrap();
    let sources = dendro::read::describe(&archive).unwrap().sources;
    assert_eq!(sources.len(), 1, "{sources:?}");
    assert_eq!(sources[0].streams.len(), 1);
}
