//! Reading a new image: one SQLite read transaction on the archive, page
//! by page through `sqlite_dbpage` where this SQLite has the table (so
//! at most one chunk of new bytes is buffered), else SQLite's own whole
//! copy (`sqlite3_serialize`) cut into chunks. Either way the image is
//! exactly one committed state, whatever the writer or a checkpoint does
//! meanwhile.

use rusqlite::Connection;

use super::image::{Chunker, Image, Taken, CHUNK};

/// The database as one read transaction sees it (main file and WAL
/// frames), in chunks shared with `previous` where they are the same.
pub(super) fn take(
    conn: &mut Connection,
    previous: Option<&Image>,
    no_dbpage: &mut bool,
) -> Result<Taken, String> {
    let sql = |e: rusqlite::Error| e.to_string();
    conn.execute_batch("BEGIN").map_err(sql)?;
    let out = (|| {
        // The transaction's snapshot starts with its first read; every
        // read below is of that one state.
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
            r.get::<_, i64>(0)
        })
        .map_err(sql)?;
        let pragma = |name: &str| {
            conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
                .map_err(sql)
        };
        let (page_size, pages) = (pragma("page_size")?, pragma("page_count")?);
        let (page_size, pages) = match (usize::try_from(page_size), usize::try_from(pages)) {
            (Ok(s), Ok(p)) if (512..=CHUNK).contains(&s) && s.is_power_of_two() => (s, p),
            _ => return Err(format!("SQLite reports {pages} pages of {page_size} bytes")),
        };
        let mut chunks = Chunker::new(previous, page_size.saturating_mul(pages));
        if !*no_dbpage {
            match conn.prepare("SELECT pgno, data FROM sqlite_dbpage('main')") {
                Ok(mut pages_of) => {
                    let mut rows = pages_of.query([]).map_err(sql)?;
                    let mut due = 1i64;
                    while let Some(row) = rows.next().map_err(sql)? {
                        let pgno: i64 = row.get(0).map_err(sql)?;
                        let data = row.get_ref(1).and_then(|v| Ok(v.as_blob()?)).map_err(sql)?;
                        if pgno != due || data.len() != page_size {
                            return Err(format!(
                                "SQLite gave page {pgno} of {} bytes where page {due} of {page_size} was due",
                                data.len()
                            ));
                        }
                        chunks.push(data);
                        due += 1;
                    }
                    return chunks.finish();
                }
                Err(e) if e.to_string().contains("no such table") => *no_dbpage = true,
                Err(e) => return Err(sql(e)),
            }
        }
        // Without `sqlite_dbpage`, SQLite's own copy, cut into chunks.
        let whole = conn.serialize(rusqlite::MAIN_DB).map_err(sql)?;
        for piece in whole.chunks(CHUNK) {
            chunks.push(piece);
        }
        chunks.finish()
    })();
    let _ = conn.execute_batch("COMMIT");
    out
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use rusqlite::OpenFlags;

    use super::super::tests::{commit, filled, live_db};
    use super::super::{Limits, Live};
    use super::*;

    #[test]
    fn every_image_is_the_database_as_of_one_commit() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = filled(dir.path(), 0..300);
        let mut reference =
            Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let mut live = Live::with_limits(&path, Limits::default(), None);
        let t0 = Instant::now();
        for k in 0..25u64 {
            match k % 5 {
                // Grows the file.
                0 => {
                    for n in 0..40 {
                        commit(&writer, 10_000 + k as i64 * 100 + n);
                    }
                }
                // Shrinks what is used (freed pages stay in the file).
                1 => {
                    writer
                        .execute("DELETE FROM t WHERE n % 7 = ?1", [k as i64 % 7])
                        .unwrap();
                }
                // A checkpoint moves frames into the main file.
                2 => {
                    commit(&writer, k as i64);
                    writer
                        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                        .unwrap();
                }
                // A rewrite that shrinks the file itself.
                3 => writer.execute_batch("VACUUM").unwrap(),
                _ => commit(&writer, k as i64),
            }
            let image = live.current_at(t0 + Duration::from_secs(k)).unwrap();
            let expected = reference.serialize(rusqlite::MAIN_DB).unwrap().to_vec();
            assert_eq!(image.len(), expected.len(), "image {k}: its length");
            let got = image.read_range(0, image.len());
            assert!(
                got == expected,
                "image {k} differs from the database it names"
            );
            // A range read inside it, across a chunk's end.
            if expected.len() > CHUNK + 10 {
                let (a, b) = (CHUNK - 10, CHUNK + 10);
                assert_eq!(image.read_range(a, b), &expected[a..b]);
            }
        }
    }

    /// An image opened as a database of its own: whether SQLite finds it
    /// sound, and the rows and the counter its writer kept equal.
    fn opened(image: &Image) -> (String, i64, i64, i64) {
        let mut bytes = image.read_range(0, image.len());
        // The header says WAL; an in-memory copy is read as a plain file.
        bytes[18] = 1;
        bytes[19] = 1;
        let mut db = Connection::open_in_memory().unwrap();
        db.deserialize_read_exact(rusqlite::MAIN_DB, &bytes[..], bytes.len(), true)
            .unwrap();
        let ok: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        let (rows, max): (i64, i64) = db
            .query_row("SELECT count(*), coalesce(max(n), 0) FROM t", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        let counter: i64 = db
            .query_row("SELECT n FROM c WHERE k = 1", [], |r| r.get(0))
            .unwrap();
        (ok, rows, max, counter)
    }

    #[test]
    fn images_taken_while_a_writer_commits_are_each_one_committed_state() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = live_db(dir.path());
        writer
            .execute_batch(
                "CREATE TABLE c(k INTEGER PRIMARY KEY, n INTEGER); INSERT INTO c VALUES (1, 0);",
            )
            .unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writing = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                // Each commit adds row n and sets the counter to n; a
                // checkpoint now and then moves frames under the reader.
                let mut n = 0i64;
                while !stop.load(Ordering::Relaxed) && n < 20_000 {
                    n += 1;
                    writer
                        .execute_batch(&format!(
                            "BEGIN; INSERT INTO t(n, b) VALUES ({n}, randomblob(3000));
                             UPDATE c SET n = {n} WHERE k = 1; COMMIT;"
                        ))
                        .unwrap();
                    if n % 64 == 0 {
                        writer
                            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                            .unwrap();
                    }
                }
                n
            })
        };
        let mut live = Live::with_limits(&path, Limits::default(), None);
        let t0 = Instant::now();
        let mut seen = Vec::new();
        for k in 0..20u64 {
            let image = live.current_at(t0 + Duration::from_secs(k)).unwrap();
            let (ok, rows, max, counter) = opened(&image);
            assert_eq!(ok, "ok", "image {k}");
            assert_eq!(
                (rows, max),
                (counter, counter),
                "image {k} mixes two commits"
            );
            seen.push(counter);
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        let written = writing.join().unwrap();
        // The images were taken while the writer was writing.
        assert!(
            seen.windows(2).any(|w| w[0] < w[1]),
            "{seen:?} of {written}"
        );
    }

    #[test]
    fn images_are_read_page_by_page_where_sqlite_can() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = filled(dir.path(), 0..100);
        let mut live = Live::with_limits(&path, Limits::default(), None);
        let t0 = Instant::now();
        live.current_at(t0).unwrap();
        // This build's SQLite has `sqlite_dbpage` (.cargo/config.toml):
        // no whole copy of the database is asked for.
        assert!(!live.no_dbpage, "images are taken through a whole copy");
        // The copy, when SQLite lacks the table, gives the same bytes.
        let mut copied = Live::with_limits(&path, Limits::default(), None);
        copied.no_dbpage = true;
        for k in 1..=3u64 {
            commit(&writer, 1000 + k as i64);
            let a = live.current_at(t0 + Duration::from_secs(k)).unwrap();
            let b = copied.current_at(t0 + Duration::from_secs(k)).unwrap();
            assert!(
                a.read_range(0, a.len()) == b.read_range(0, b.len()),
                "image {k}"
            );
        }
        let (a, b) = (live.newest.unwrap(), copied.newest.unwrap());
        assert_eq!(a.len(), b.len());
    }
}
