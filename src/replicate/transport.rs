//! Transports (feature `write`): the format leaves them to the caller, and
//! these are the ones the CLI offers. A byte sink or source of any kind (a
//! file, a pipe, a socket) carries a stream; a catch-up written to one
//! ends with a digest of its bytes (`WIRE.md` §4.6), which a file's
//! subscriber checks before it applies anything; TCP adds listening,
//! connecting and reconnecting with capped, jittered back-off.
//!
//! Nothing here authenticates or encrypts: put the stream behind a tunnel
//! (SSH, WireGuard, a TLS proxy) to cross a network you do not control.
//!
//! What one peer can cost the other is bounded (`WIRE.md` §6.1):
//! - A publisher reads a part of an interval in one short snapshot, lets
//!   it go, and only then sends it ([`Publisher::poll_into`]): a peer that
//!   stops reading never holds a read transaction open, which would keep
//!   the origin's `-wal` from being checkpointed. A part is about
//!   [`PublishOptions::batch_bytes`], so that is (with one segment) the
//!   memory a peer costs.
//! - A subscriber that cannot take a part within
//!   [`PublishOptions::write_timeout`] is dropped, with a line in the log
//!   naming it. [`serve_tcp`] serves at most
//!   [`PublishOptions::max_peers`] at once and outlives `accept` errors.
//! - A subscriber takes a publisher that sent nothing for
//!   [`SubscribeOptions::idle_timeout`] for dead (a live one sends a
//!   `Rows` frame every interval) and reconnects; its back-off starts over
//!   only after a connection that brought something new.

use std::io::{BufReader, BufWriter, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::codec::preamble;
use super::link::{Peer, Sink, STOP_POLL};
use super::publisher::Publisher;
use super::retry::pause;
use super::snapshot::take_image;
use super::stream::{FrameReader, StreamDigest, Verification};
use super::subscriber::{Applied, Subscriber};
use crate::container::Archive;
use crate::error::{Error, Result};

pub use super::replica::{replicate_tcp, Replica};
pub use super::retry::{Backoff, SubscribeOptions};

/// What a publisher allows each subscriber; [`Default`] is what
/// `dendro publish` uses unless told otherwise.
#[derive(Clone)]
pub struct PublishOptions {
    /// Between two polls of the archive: the heartbeat, since every
    /// interval sends one `Rows` frame per source even when it is empty.
    pub interval: Duration,
    /// About how many bytes of frames one snapshot reads before it is let
    /// go and they are sent (a segment is never split, so one part can
    /// exceed it by a segment). A catch-up goes out as many such parts.
    pub batch_bytes: usize,
    /// How long a subscriber may take to accept one part. One that takes
    /// longer is dropped: it reconnects and catches up (`WIRE.md` rule 8).
    pub write_timeout: Duration,
    /// Subscribers served at once by [`serve_tcp_with`]; a connection
    /// beyond them is closed at once, with a line in the log.
    pub max_peers: usize,
    /// The pause after a failed `accept` (out of descriptors, say) before
    /// the next one.
    pub accept_pause: Duration,
    /// Where lines about peers go (dropped, refused, failed): standard
    /// error unless replaced.
    pub log: Arc<dyn Fn(&str) + Send + Sync>,
    /// How long a new connection has to say what it wants (`WIRE.md`
    /// §6.2). Our subscriber says it at once; one that says nothing (the
    /// original's) gets the frame catch-up once this has passed.
    pub hello_wait: Duration,
    /// Where snapshot images are made (one archive's size each, unlinked
    /// once made); `None` offers no snapshot, every subscriber gets frames.
    pub snapshot_dir: Option<PathBuf>,
    /// Images made at once; a subscriber that asks for one beyond them
    /// gets frames.
    pub max_snapshots: usize,
    /// TLS: the publisher's certificate, key and client list
    /// ([`super::tls::server_config`]); `None` is plain TCP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// How long a TLS handshake may take.
    pub handshake_timeout: Duration,
}

impl std::fmt::Debug for PublishOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublishOptions")
            .field("interval", &self.interval)
            .field("batch_bytes", &self.batch_bytes)
            .field("write_timeout", &self.write_timeout)
            .field("max_peers", &self.max_peers)
            .field("accept_pause", &self.accept_pause)
            .field("hello_wait", &self.hello_wait)
            .field("snapshot_dir", &self.snapshot_dir)
            .field("max_snapshots", &self.max_snapshots)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for PublishOptions {
    fn default() -> Self {
        PublishOptions {
            interval: Duration::from_secs(1),
            batch_bytes: 4 << 20,
            // Generous: a peer blocked on a send pins nothing at the origin
            // now, it only holds its part in memory.
            write_timeout: Duration::from_secs(30),
            max_peers: 32,
            accept_pause: Duration::from_millis(250),
            log: Arc::new(|line: &str| eprintln!("{line}")),
            hello_wait: Duration::from_millis(250),
            snapshot_dir: Some(std::env::temp_dir()),
            max_snapshots: 2,
            tls: None,
            handshake_timeout: Duration::from_secs(10),
        }
    }
}

/// Writes the preamble and one whole interval of a fresh publisher (the
/// catch-up: every source, segment, clock observation, index entry and
/// live row) to `out`, between a digest announcement and the digest of
/// every byte before it (`WIRE.md` §4.6), which older readers skip.
/// Returns the bytes written.
///
/// The catch-up is read in parts of [`PublishOptions::batch_bytes`], each
/// snapshot let go before its part is written: a slow pipe or disk holds
/// back the writer no more than a slow subscriber does.
pub fn write_catch_up(archive: &Path, out: impl Write, name: &str) -> Result<u64> {
    let mut publisher = Publisher::new(Archive::open(archive)?);
    let mut sink = Plain {
        out: BufWriter::new(out),
        name,
        digest: Some(StreamDigest::default()),
    };
    let budget = PublishOptions::default().batch_bytes;
    let mut bytes = sink.send(&preamble())?;
    bytes += sink.send(&StreamDigest::announce_frame())?;
    let mut part = Vec::new();
    loop {
        part.clear();
        let whole = publisher.poll_into(budget, &mut part)?;
        bytes += sink.send(&part)?;
        if whole {
            break;
        }
    }
    let trailer = sink.digest.take().expect("set above").trailer_frame();
    bytes += sink.send(&trailer)?;
    sink.flush()?;
    Ok(bytes)
}

/// Publishes `archive` live on `out`: the preamble and catch-up, then one
/// poll every `interval` until `stop` is set or the far end goes away
/// (which is an `Err`, as the caller may want to know).
pub fn publish_live(
    archive: &Path,
    out: impl Write,
    name: &str,
    interval: Duration,
    stop: &AtomicBool,
) -> Result<u64> {
    let options = PublishOptions {
        interval,
        ..PublishOptions::default()
    };
    let mut publisher = Publisher::new(Archive::open(archive)?);
    let mut sink = Plain {
        out: BufWriter::new(out),
        name,
        digest: None,
    };
    publish(&mut publisher, &mut sink, &options, stop)
}

/// A plain byte sink (a file, a pipe): no deadline can be put on it.
struct Plain<'a, W: Write> {
    out: BufWriter<W>,
    name: &'a str,
    /// The digest of what was sent, for a stream file's trailer.
    digest: Option<StreamDigest>,
}

impl<W: Write> Plain<'_, W> {
    fn flush(&mut self) -> Result<()> {
        self.out
            .flush()
            .map_err(|e| Error::io(self.name, "cannot flush the stream", e))
    }
}

impl<W: Write> Sink for Plain<'_, W> {
    fn send(&mut self, bytes: &[u8]) -> Result<u64> {
        self.out
            .write_all(bytes)
            .map_err(|e| Error::io(self.name, "cannot send frames", e))?;
        if let Some(digest) = &mut self.digest {
            digest.update(bytes);
        }
        self.flush()?;
        Ok(bytes.len() as u64)
    }
}

/// The live loop: parts of an interval back to back until one ends the
/// interval, then a pause of `interval`. The snapshot behind a part is
/// gone before the part is sent (see [`Publisher::poll_into`]).
fn publish(
    publisher: &mut Publisher,
    sink: &mut impl Sink,
    options: &PublishOptions,
    stop: &AtomicBool,
) -> Result<u64> {
    let bytes = sink.send(&preamble())?;
    Ok(bytes + publish_frames(publisher, sink, options, stop)?)
}

/// [`publish`] after the preamble.
fn publish_frames(
    publisher: &mut Publisher,
    sink: &mut impl Sink,
    options: &PublishOptions,
    stop: &AtomicBool,
) -> Result<u64> {
    let mut bytes = 0;
    let mut part = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        part.clear();
        let whole = publisher.poll_into(options.batch_bytes, &mut part)?;
        bytes += sink.send(&part)?;
        if part.capacity() > 2 * options.batch_bytes {
            // A catch-up's large segment is not kept for a heartbeat's sake.
            part = Vec::new();
        }
        if whole {
            pause(options.interval, stop);
        }
    }
    Ok(bytes)
}

/// Applies one stream from `input` to `subscriber` until its clean end,
/// calling `progress` after every frame with the running counts and the
/// stream's bytes so far. A stream cut inside a frame is an `Err`; the
/// frames before it are applied. A stream that carries a digest is
/// checked as it goes, so a corrupt one is an `Err` only at its end, after
/// its frames were applied: a file is checked whole first by
/// [`apply_file`].
pub fn apply_stream(
    subscriber: &mut Subscriber,
    input: impl Read,
    name: &str,
    progress: impl FnMut(&Applied, u64),
) -> Result<()> {
    apply_verified(subscriber, input, name, progress).map(|_| ())
}

/// [`apply_stream`], saying whether the stream's digest was checked.
pub fn apply_verified(
    subscriber: &mut Subscriber,
    input: impl Read,
    name: &str,
    mut progress: impl FnMut(&Applied, u64),
) -> Result<Verification> {
    let mut reader = FrameReader::new(BufReader::new(input), name)?;
    subscriber.new_connection();
    while let Some(frame) = reader.next_frame()? {
        subscriber.apply(frame)?;
        progress(subscriber.applied(), reader.bytes_read());
    }
    Ok(reader.verification())
}

/// Reads the stream file at `path` through once, checking its framing
/// and, when it carries one, its digest (`WIRE.md` §4.6), without decoding
/// or applying a frame. A damaged file is an `Err` naming the file, the
/// offset and the cause. A file without a digest (one the original, or
/// this crate before digests, wrote) passes as
/// [`Verification::Unverified`]: only its framing could be checked.
pub fn check_file(path: &Path) -> Result<Verification> {
    let name = path.display().to_string();
    let file =
        std::fs::File::open(path).map_err(|e| Error::io(&name, "cannot open the stream", e))?;
    FrameReader::new(BufReader::new(file), &name)?.check_to_end()
}

/// Applies the stream file at `path` once [`check_file`] has passed it
/// whole: a damaged file is refused before a single frame of it reaches
/// the replica.
pub fn apply_file(
    subscriber: &mut Subscriber,
    path: &Path,
    progress: impl FnMut(&Applied, u64),
) -> Result<Verification> {
    let name = path.display().to_string();
    let checked = check_file(path)?;
    let file =
        std::fs::File::open(path).map_err(|e| Error::io(&name, "cannot open the stream", e))?;
    let applied = apply_verified(subscriber, file, &name, progress)?;
    if applied != checked {
        return Err(Error::Replication {
            file: name,
            message: "the stream file changed while it was being applied".into(),
        });
    }
    Ok(applied)
}

/// Refuses an address that is not loopback unless the caller asked for
/// one: a replication stream carries no credentials.
pub fn check_address(addr: SocketAddr, allow_remote: bool) -> Result<()> {
    if addr.ip().is_loopback() || allow_remote {
        return Ok(());
    }
    Err(Error::Invalid {
        file: addr.to_string(),
        message: "not a loopback address; the stream is neither authenticated nor encrypted, \
                  so another address is used only when asked for explicitly (--allow-remote)"
            .into(),
    })
}

/// Serves `archive` to every subscriber that connects to `listener`, each
/// on its own thread with its own publisher, until `stop` is set; with
/// [`PublishOptions::default`] but for `interval`.
pub fn serve_tcp(
    archive: &Path,
    listener: TcpListener,
    interval: Duration,
    stop: &'static AtomicBool,
) -> Result<()> {
    let options = PublishOptions {
        interval,
        ..PublishOptions::default()
    };
    serve_tcp_with(archive, listener, &options, stop)
}

/// Gives a place back when a peer's thread ends, however it ends.
struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// [`serve_tcp`] with every limit chosen: at most `max_peers` at once (a
/// connection past them is closed at once), each part sent within
/// `write_timeout` or the peer dropped, and an `accept` that fails (out
/// of descriptors, say) logged and tried again after `accept_pause`
/// rather than ending the publisher. Returns once `stop` is set (within
/// a tenth of a second); peers still being served notice it at their next
/// interval. An error only if the listener cannot be polled at all.
pub fn serve_tcp_with(
    archive: &Path,
    listener: TcpListener,
    options: &PublishOptions,
    stop: &'static AtomicBool,
) -> Result<()> {
    let name = listener
        .local_addr()
        .map_or_else(|_| "tcp".to_string(), |a| a.to_string());
    // Non-blocking, so that `stop` is seen between connections too.
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io(&name, "cannot poll the listener", e))?;
    let serving = Arc::new(AtomicUsize::new(0));
    let imaging = Arc::new(AtomicUsize::new(0));
    if let Some(dir) = &options.snapshot_dir {
        super::snapshot::discard_stale_images(dir);
    }
    let log = &options.log;
    while !stop.load(Ordering::Relaxed) {
        let (conn, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(STOP_POLL.min(Duration::from_millis(20)));
                continue;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // Out of descriptors or memory, a connection reset before it
            // was taken: the listener itself is fine, so try again soon.
            Err(e) => {
                log(&format!(
                    "{name}: cannot accept a subscriber ({e}); trying again in {:?}",
                    options.accept_pause
                ));
                pause(options.accept_pause, stop);
                continue;
            }
        };
        let peer = peer.to_string();
        if serving.fetch_add(1, Ordering::SeqCst) >= options.max_peers {
            serving.fetch_sub(1, Ordering::SeqCst);
            log(&format!(
                "{peer}: subscriber refused: {name} already serves {} (the most it serves at once)",
                options.max_peers
            ));
            drop(conn);
            continue;
        }
        let place = Place(Arc::clone(&serving));
        let archive = archive.to_path_buf();
        let (options, peer_name) = (options.clone(), peer.clone());
        let imaging = Arc::clone(&imaging);
        let spawned = std::thread::Builder::new()
            .name("dendro-publish".into())
            .spawn(move || {
                let _place = place;
                if let Err(e) = serve_peer(&archive, conn, peer_name, &options, stop, &imaging) {
                    (options.log)(&e.to_string());
                }
            });
        if let Err(e) = spawned {
            log(&format!(
                "{peer}: subscriber refused: cannot start a thread ({e})"
            ));
        }
    }
    Ok(())
}

/// One subscriber's connection, to its end.
fn serve_peer(
    archive: &Path,
    conn: TcpStream,
    name: String,
    options: &PublishOptions,
    stop: &AtomicBool,
    imaging: &AtomicUsize,
) -> Result<u64> {
    conn.set_nonblocking(false)
        .map_err(|e| Error::io(&name, "cannot set up the connection", e))?;
    let _ = conn.set_nodelay(true);
    // Best effort: without it a vanished peer is only noticed when its
    // socket buffer fills, which heartbeats take hours to do.
    let _ = unacked_limit(&conn, options.write_timeout);
    let mut peer = Peer::accept(
        conn,
        name,
        options.tls.as_ref(),
        options.handshake_timeout,
        options.write_timeout,
    )?;
    let mut bytes = peer.send(&preamble())?;
    let hello = peer.hello(options.hello_wait)?;
    let mut publisher = None;
    if hello.is_some_and(|h| h.want_snapshot) {
        if let Some((image, sent)) = send_image(archive, &mut peer, options, imaging)? {
            publisher = Some(image);
            bytes += sent;
        }
    }
    let mut publisher = match publisher {
        Some(p) => p,
        None => Publisher::new(Archive::open(archive)?),
    };
    Ok(bytes + publish_frames(&mut publisher, &mut peer, options, stop)?)
}

/// Takes an image of `archive` and sends it, announced, to `peer`
/// (`WIRE.md` §6.2); returns the publisher that carries on after it and
/// the bytes sent. `None` (and nothing sent) when no image can be made
/// now: snapshots are off, as many as allowed are being made, or the
/// archive is not one an image can start a replica from. The peer then
/// gets frames.
fn send_image(
    archive: &Path,
    peer: &mut Peer,
    options: &PublishOptions,
    imaging: &AtomicUsize,
) -> Result<Option<(Publisher, u64)>> {
    let Some(dir) = &options.snapshot_dir else {
        return Ok(None);
    };
    if imaging.fetch_add(1, Ordering::SeqCst) >= options.max_snapshots {
        imaging.fetch_sub(1, Ordering::SeqCst);
        (options.log)(&format!(
            "{}: asked for a snapshot while {} are being made; it gets frames",
            peer.name, options.max_snapshots
        ));
        return Ok(None);
    }
    let taken = take_image(archive, dir);
    imaging.fetch_sub(1, Ordering::SeqCst);
    let Some(mut image) = taken? else {
        return Ok(None);
    };
    let mut bytes = peer.send(&image.announcement.frame())?;
    let mut budget = Vec::with_capacity(options.batch_bytes.min(64 << 20));
    image.send(|piece| {
        // Pieces are gathered up to a part, each part bound by the write
        // timeout like any other.
        budget.extend_from_slice(piece);
        if budget.len() >= options.batch_bytes {
            bytes += peer.send(&budget)?;
            budget.clear();
        }
        Ok(())
    })?;
    bytes += peer.send(&budget)?;
    Ok(Some((image.publisher, bytes)))
}

/// Bounds how long bytes sent to a peer may stay unacknowledged before the
/// kernel gives up on the connection (`TCP_USER_TIMEOUT`): a peer that
/// vanished without a reset (a host powered off, a cable pulled) is then
/// dropped after `limit` although every heartbeat still fits its socket
/// buffer, rather than after the kernel's own retries of about 15 minutes.
#[cfg(target_os = "linux")]
fn unacked_limit(conn: &TcpStream, limit: Duration) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let ms = libc::c_uint::try_from(limit.as_millis()).unwrap_or(libc::c_uint::MAX);
    // SAFETY: the descriptor is the live socket `conn` owns, and the value
    // is a `c_uint` of the size passed, as TCP_USER_TIMEOUT takes.
    let done = unsafe {
        libc::setsockopt(
            conn.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_USER_TIMEOUT,
            (&ms as *const libc::c_uint).cast(),
            std::mem::size_of::<libc::c_uint>() as libc::socklen_t,
        )
    };
    match done {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(not(target_os = "linux"))]
fn unacked_limit(_: &TcpStream, _: Duration) -> std::io::Result<()> {
    Ok(())
}

/// Subscribes to a publisher at `addr`, reconnecting with back-off when
/// the connection fails or ends, until `stop` is set; with
/// [`SubscribeOptions::default`].
pub fn subscribe_tcp(
    subscriber: &mut Subscriber,
    addr: SocketAddr,
    stop: &AtomicBool,
    progress: impl FnMut(&Applied, u64),
    on_error: impl FnMut(&Error),
) -> Result<()> {
    let options = SubscribeOptions::default();
    subscribe_tcp_with(subscriber, addr, &options, stop, progress, on_error)
}

/// [`subscribe_tcp`] with its waits chosen. Each connection is a fresh
/// handshake and full state (rule 8); what is already held is recognised
/// and not applied twice. A connection is dropped when nothing arrives on
/// it for `idle_timeout`; after a connection ends, the wait before the
/// next grows (doubling up to `backoff_cap`) unless the connection
/// brought something new, so a publisher whose stream keeps failing at
/// the same place, or that keeps closing, is not hammered with catch-ups.
/// Returns `Ok` once `stop` is set (within a tenth of a second, also in
/// the middle of a stream), an `Err` if the replica refused what it was
/// sent (retrying would repeat it). The subscriber is open already, so it
/// never asks for a snapshot: see [`replicate_tcp`].
pub fn subscribe_tcp_with(
    subscriber: &mut Subscriber,
    addr: SocketAddr,
    options: &SubscribeOptions,
    stop: &AtomicBool,
    progress: impl FnMut(&Applied, u64),
    on_error: impl FnMut(&Error),
) -> Result<()> {
    super::replica::follow_tcp(subscriber, addr, options, stop, progress, on_error)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn unacked_limit_of(conn: &TcpStream) -> u32 {
        let mut ms: libc::c_uint = 0;
        let mut len = std::mem::size_of::<libc::c_uint>() as libc::socklen_t;
        // SAFETY: a live socket, and a `c_uint` with its size.
        let done = unsafe {
            libc::getsockopt(
                conn.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_USER_TIMEOUT,
                (&mut ms as *mut libc::c_uint).cast(),
                &mut len,
            )
        };
        assert_eq!(done, 0, "{}", std::io::Error::last_os_error());
        ms
    }

    #[test]
    fn a_peer_gets_as_long_to_acknowledge_what_was_sent_as_to_take_it() {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("a.dendro");
        let writer = crate::Writer::create(&archive, crate::replicate::VerbatimOnly).unwrap();
        writer.join().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (conn, _) = listener.accept().unwrap();
        let watched = conn.try_clone().unwrap();
        assert_eq!(
            unacked_limit_of(&watched),
            0,
            "the kernel's default to start with"
        );
        let options = PublishOptions {
            write_timeout: Duration::from_millis(7_500),
            interval: Duration::from_millis(10),
            ..PublishOptions::default()
        };
        let stop: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let served = std::thread::spawn(move || {
            let imaging = AtomicUsize::new(0);
            serve_peer(&archive, conn, "peer".into(), &options, stop, &imaging)
        });
        // The preamble arrives once the connection is set up.
        let mut head = [0u8; 4];
        (&client).read_exact(&mut head).unwrap();
        assert_eq!(unacked_limit_of(&watched), 7_500);
        stop.store(true, Ordering::Relaxed);
        served.join().unwrap().unwrap();
    }
}
