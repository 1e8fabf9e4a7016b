//! The archive's writer handle: starts the writer thread and hands out one
//! [`SourceWriter`] per source.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use log::warn;

use super::append::TickRows;
use super::channel::{request, Msg, Shared};
use super::checkpoint::CheckpointReport;
use super::options::WriterOptions;
use super::seal::Sealer;
use super::session::{Opened, SourceRef};
use super::source::wall_clock_ns;
use super::source::{SourceClock, SourceWriter};
use super::thread::WriterThread;
use crate::catalog::{Labels, NewSource};
use crate::container::{create_file, open_streaming, place, staging};
use crate::error::{Error, Result};
use crate::segment::SegmentEncoder;

/// The streaming writer of one archive. It owns the archive's only writing
/// connection, on a thread of its own (`dendro-writer`), with a second
/// (`dendro-encoder`) for the caller's encoder.
///
/// Several sources can be written at once; their handles share one
/// single-slot channel. [`Writer::join`] (or dropping the writer) waits for
/// seals in flight and stops the thread; after that the handles' calls fail.
pub struct Writer {
    tx: Option<SyncSender<Msg>>,
    thread: Option<JoinHandle<Result<()>>>,
    shared: Arc<Shared>,
    path: PathBuf,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("path", &self.path)
            .field("running", &self.thread.is_some())
            .finish()
    }
}

/// How the writing connection journals its transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Journal {
    /// Every archive's: WAL, each commit durable when it returns.
    Wal,
    /// A staging file's (`container::staging::apply_bulk_load`).
    Staging,
}

impl Writer {
    /// Creates a new archive at `path` (which must not exist, or be empty)
    /// and starts writing it. The main file alone is a valid archive from
    /// the moment this returns.
    pub fn create(
        path: impl AsRef<Path>,
        encoder: impl SegmentEncoder + 'static,
    ) -> Result<Writer> {
        Writer::create_with(path, Arc::new(encoder), WriterOptions::default())
    }

    /// Opens an existing archive to append to it. Nothing changes until a
    /// source is added or resumed. Refused as [`Error::InUse`] while an
    /// [`crate::ArchiveMut`] holds the file.
    pub fn open(path: impl AsRef<Path>, encoder: impl SegmentEncoder + 'static) -> Result<Writer> {
        Writer::open_with(path, Arc::new(encoder), WriterOptions::default())
    }

    /// [`Writer::create`] with a shared encoder and explicit options.
    pub fn create_with(
        path: impl AsRef<Path>,
        encoder: Arc<dyn SegmentEncoder>,
        options: WriterOptions,
    ) -> Result<Writer> {
        Writer::create_in(path.as_ref(), encoder, options, Journal::Wal)
    }

    /// [`Writer::create_with`] for a staging file that nothing reads until
    /// it is finished and moved into place (`container::staging`): no
    /// `-wal`, no fsync per transaction. Its durability is the caller's,
    /// who makes it durable whole before giving it its name.
    pub(crate) fn create_staging(
        path: &Path,
        encoder: Arc<dyn SegmentEncoder>,
        options: WriterOptions,
    ) -> Result<Writer> {
        Writer::create_in(path, encoder, options, Journal::Staging)
    }

    fn create_in(
        path: &Path,
        encoder: Arc<dyn SegmentEncoder>,
        options: WriterOptions,
        journal: Journal,
    ) -> Result<Writer> {
        create_file(path, options.schema)?;
        Writer::start(path, encoder, options, journal).inspect_err(|_| {
            // A file this call made and could not start writing is of no use
            // to anyone, and leaving it would make the retry fail as "exists".
            // The start's error is the one worth reporting.
            let _ = place::remove_with_sidecars(path, &path.display().to_string());
        })
    }

    /// [`Writer::open`] with a shared encoder and explicit options.
    pub fn open_with(
        path: impl AsRef<Path>,
        encoder: Arc<dyn SegmentEncoder>,
        options: WriterOptions,
    ) -> Result<Writer> {
        Writer::start(path.as_ref(), encoder, options, Journal::Wal)
    }

    fn start(
        path: &Path,
        encoder: Arc<dyn SegmentEncoder>,
        options: WriterOptions,
        journal: Journal,
    ) -> Result<Writer> {
        let file = path.display().to_string();
        let (conn, lock) = open_streaming(path)?;
        if journal == Journal::Staging {
            staging::apply_bulk_load(&conn, &file)?;
        }
        conn.busy_timeout(options.busy_timeout)
            .map_err(|e| Error::sqlite(&file, "cannot set the busy timeout", e))?;
        conn.set_prepared_statement_cache_capacity(64);
        // Savepoints (a tick that carries a finished seal, or several
        // sources) journal the pages they touch; in memory, that costs a
        // copy instead of a temporary file's writes.
        conn.execute_batch("PRAGMA temp_store = MEMORY")
            .map_err(|e| Error::sqlite(&file, "cannot configure the write connection", e))?;
        let (tx, rx) = sync_channel(1);
        let shared = Arc::new(Shared::new(file.clone()));
        // A finished seal knocks on the writer's channel so an idle writer
        // commits it promptly. The knock never blocks: if the slot is
        // taken, the writer is about to wake anyway and will look.
        let knock = tx.clone();
        let sealer = Sealer::start(&file, Arc::clone(&encoder), move || {
            let _ = knock.try_send(Msg::Wake);
        })?;
        let state = WriterThread::new(
            conn,
            file.clone(),
            encoder,
            options,
            sealer,
            Arc::clone(&shared),
        )?;
        let thread = std::thread::Builder::new()
            .name("dendro-writer".into())
            .spawn(move || {
                // The writers' lock lives exactly as long as the thread
                // that owns the connection.
                let _lock = lock;
                state.run(rx)
            })
            .map_err(|e| Error::io(&file, "cannot spawn the writer thread `dendro-writer`", e))?;
        Ok(Writer {
            tx: Some(tx),
            thread: Some(thread),
            shared,
            path: path.to_path_buf(),
        })
    }

    /// The archive being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sender(&self) -> Result<&SyncSender<Msg>> {
        self.tx.as_ref().ok_or_else(|| self.shared.stopped())
    }

    fn handle(&self, opened: Opened, clock: SourceClock) -> Result<SourceWriter> {
        Ok(SourceWriter::new(
            self.sender()?.clone(),
            Arc::clone(&self.shared),
            opened,
            clock,
        ))
    }

    /// Adds a source anchored at the wall clock now. Its metadata gains
    /// `writer_sessions` and, if the encoder reports one, `encoder`.
    pub fn add_source(&self, labels: Labels, metadata: Labels) -> Result<SourceWriter> {
        let clock = SourceClock::new(wall_clock_ns());
        self.add(
            NewSource {
                uuid: None,
                labels,
                metadata,
                complete: false,
                clock_anchor_wall_ns: clock.anchor(),
            },
            clock,
        )
    }

    /// Adds a source exactly as described: its uuid (a copy of a source
    /// from elsewhere keeps its identity; `None` mints one) and its anchor.
    /// A uuid the archive already holds is refused: resume that source.
    pub fn add_source_with_uuid(&self, source: NewSource) -> Result<SourceWriter> {
        let clock = SourceClock::new(source.clock_anchor_wall_ns);
        self.add(source, clock)
    }

    /// Opens a replica of a source written elsewhere, for replication: the
    /// first time it is inserted with the origin's uuid, labels, metadata
    /// and anchor (this session recorded in `writer_sessions`); when the
    /// archive already holds the uuid it is reopened, its metadata brought
    /// up to date, with none of a resume's rules, since its rows carry the
    /// origin's timeline. Its segments are adopted as the origin built them
    /// ([`SourceWriter::adopt_segment`]), and may cover its unsealed tail.
    /// Refused if the origin's `encoder` differs from this writer's.
    pub fn mirror_source(&self, source: NewSource) -> Result<SourceWriter> {
        let clock = SourceClock::new(source.clock_anchor_wall_ns);
        let opened = request(self.sender()?, &self.shared, |reply| Msg::Mirror {
            source,
            reply,
        })?;
        self.handle(opened, clock)
    }

    fn add(&self, source: NewSource, clock: SourceClock) -> Result<SourceWriter> {
        let opened = request(self.sender()?, &self.shared, |reply| Msg::AddSource {
            source,
            reply,
        })?;
        self.handle(opened, clock)
    }

    /// Continues a source of a reopened archive as a new writer session
    /// anchored at the wall clock now (format §7). See
    /// [`Writer::resume_source_at`].
    pub fn resume_source(&self, source: impl Into<SourceRef>) -> Result<SourceWriter> {
        let clock = SourceClock::new(wall_clock_ns());
        self.resume(source.into(), clock)
    }

    /// Continues a source as a new session anchored at `anchor`. The anchor
    /// must be later than the source's newest row, and so must every row the
    /// session appends ([`Error::TimelineBackwards`] otherwise). Segment seqs
    /// continue from `MAX(seq) + 1`; `complete` is cleared until this
    /// session finalizes; `writer_sessions` and `events` record the resume.
    pub fn resume_source_at(
        &self,
        source: impl Into<SourceRef>,
        anchor: i64,
    ) -> Result<SourceWriter> {
        self.resume(source.into(), SourceClock::new(anchor))
    }

    fn resume(&self, source: SourceRef, clock: SourceClock) -> Result<SourceWriter> {
        let anchor = clock.anchor();
        let opened = request(self.sender()?, &self.shared, |reply| Msg::Resume {
            source,
            anchor,
            reply,
        })?;
        self.handle(opened, clock)
    }

    /// Appends one tick for several sources in one transaction (one fsync
    /// however many sources). Each source's outcome is reported separately:
    /// one source's duplicate or refused row costs only its own part.
    pub fn wal_tick(&self, ticks: Vec<(&SourceWriter, TickRows)>) -> Result<Vec<Result<()>>> {
        let ticks: Vec<(i64, TickRows)> =
            ticks.into_iter().map(|(w, rows)| (w.id(), rows)).collect();
        request(self.sender()?, &self.shared, |reply| Msg::Wal {
            ticks,
            reply,
        })
    }

    /// Waits until everything sent so far, seals included, is committed.
    pub fn sync(&self) -> Result<()> {
        request(self.sender()?, &self.shared, |reply| Msg::Sync { reply })
    }

    /// Puts a document (schema 5): appends a revision of `(kind, name)`
    /// with `schema` and the JSON `body`, superseding the current one, in
    /// its own durable transaction; answers its id. Refused on a schema-4
    /// archive (which is never migrated in place: copy it into a schema-5
    /// one), for a kind starting `dendro.`, and for a body that is not JSON.
    pub fn put_document(&self, kind: &str, name: &str, schema: &str, body: &str) -> Result<i64> {
        request(self.sender()?, &self.shared, |reply| Msg::Document {
            kind: kind.to_string(),
            name: name.to_string(),
            content: Some((schema.to_string(), body.to_string())),
            reply,
        })
    }

    /// Deletes a document (schema 5): appends a revision with no schema
    /// and no body. Refused as [`Writer::put_document`] is, and when the
    /// document has no current revision.
    pub fn delete_document(&self, kind: &str, name: &str) -> Result<i64> {
        request(self.sender()?, &self.shared, |reply| Msg::Document {
            kind: kind.to_string(),
            name: name.to_string(),
            content: None,
            reply,
        })
    }

    /// Checkpoints now (passively), on the writer thread.
    pub fn checkpoint(&self) -> Result<CheckpointReport> {
        request(self.sender()?, &self.shared, |reply| Msg::Checkpoint {
            reply,
        })
    }

    /// The archive's size in bytes (pages times page size).
    pub fn archive_bytes(&self) -> Result<u64> {
        request(self.sender()?, &self.shared, |reply| Msg::ArchiveBytes {
            reply,
        })
    }

    /// Stops the writer: seals in flight land, covered rows are pruned, and
    /// the thread ends. Returns how it ended, such as the encoder failure
    /// (naming the stream) that stopped it early.
    pub fn join(mut self) -> Result<()> {
        self.stop()
    }

    fn stop(&mut self) -> Result<()> {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Msg::Shutdown);
        }
        match self.thread.take() {
            Some(thread) => thread.join().unwrap_or_else(|_| {
                Err(Error::WriterStopped {
                    file: self.shared.file().to_string(),
                    message: "the writer thread panicked".into(),
                })
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            warn!("{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::TrySendError;
    use std::sync::{Condvar, Mutex};

    use super::*;
    use crate::catalog::WalRow;
    use crate::segment::Segment;

    /// An encoder that waits at a gate until the test opens it, having
    /// said that it arrived.
    #[derive(Default)]
    struct Gated {
        state: Mutex<(bool, bool)>,
        changed: Condvar,
    }

    impl Gated {
        fn wait_for(&self, done: impl Fn(&(bool, bool)) -> bool) {
            let mut state = self.state.lock().unwrap();
            while !done(&state) {
                state = self.changed.wait(state).unwrap();
            }
        }

        fn set(&self, change: impl FnOnce(&mut (bool, bool))) {
            change(&mut self.state.lock().unwrap());
            self.changed.notify_all();
        }
    }

    struct GatedEncoder(Arc<Gated>);

    impl SegmentEncoder for GatedEncoder {
        fn encode(&self, _: &str, rows: &[WalRow]) -> std::result::Result<Option<Segment>, String> {
            self.0.set(|s| s.0 = true);
            self.0.wait_for(|s| s.1);
            Ok(Some(Segment {
                bytes: b"PAR1\0\0\0\0\0\0\0\0PAR1".to_vec(),
                rows: rows.len() as i64,
                first_ts: rows[0].ts,
                last_ts: rows[rows.len() - 1].ts,
                caller_index: None,
            }))
        }
    }

    #[test]
    fn a_stalled_writer_holds_one_message_and_takes_no_more_until_it_moves() {
        // The single slot is the backpressure: callers wait on a slow disk
        // or encoder instead of growing a queue that a kill would lose.
        let dir = tempfile::tempdir().unwrap();
        let gate = Arc::new(Gated::default());
        let writer = Writer::create_with(
            dir.path().join("a.dendro"),
            Arc::new(GatedEncoder(Arc::clone(&gate))),
            WriterOptions::default(),
        )
        .unwrap();
        let source = writer.add_source(Labels::new(), Labels::new()).unwrap();
        let row = |ts| WalRow {
            ts,
            wall_offset: 0,
            row: vec![],
        };
        source.wal(vec![("a".into(), row(1))]).unwrap();
        source.seal(["a"]).unwrap();
        gate.wait_for(|s| s.0);
        let tx = writer.sender().unwrap().clone();
        // A sync makes the writer wait for the gated seal.
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        tx.send(Msg::Sync { reply }).unwrap();
        // Once the writer has taken the sync, the slot takes one message...
        loop {
            match tx.try_send(Msg::Wake) {
                Ok(()) => break,
                Err(TrySendError::Full(_)) => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
        // ...and no other, for as long as the seal is stalled.
        for _ in 0..1000 {
            assert!(matches!(tx.try_send(Msg::Wake), Err(TrySendError::Full(_))));
        }
        assert!(answer.try_recv().is_err(), "the sync waits for the seal");
        gate.set(|s| s.1 = true);
        answer.recv().unwrap().unwrap();
        drop(tx);
        drop(source);
        writer.join().unwrap();
    }
}
