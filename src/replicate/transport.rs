//! Transports (feature `write`): the format leaves them to the caller, and
//! these are the ones the CLI offers. A byte sink or source of any kind (a
//! file, a pipe, a socket) carries a stream; a catch-up written to one
//! ends with a digest of its bytes (`WIRE.md` §4.6), which a file's
//! subscriber checks before it applies anything; TCP adds listening,
//! connecting and reconnecting with capped, jittered back-off.
//!
//! Nothing here authenticates or encrypts: put the stream behind a tunnel
//! (SSH, WireGuard, a TLS proxy) to cross a network you do not control.

use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::codec::{preamble, FrameReader, StreamDigest, Verification};
use super::publisher::Publisher;
use super::subscriber::{Applied, Subscriber};
use crate::container::Archive;
use crate::error::{Error, Result};

/// Writes the preamble and one poll of a fresh publisher (the catch-up:
/// every source, segment, clock observation, index entry and live row) to
/// `out`, between a digest announcement and the digest of every byte
/// before it (`WIRE.md` §4.6), which older readers skip. Returns the bytes
/// written.
pub fn write_catch_up(archive: &Path, out: impl Write, name: &str) -> Result<u64> {
    let mut publisher = Publisher::new(Archive::open(archive)?);
    let mut out = Counted::new(BufWriter::new(out));
    out.digest = Some(StreamDigest::default());
    send(&mut out, &preamble(), name)?;
    send(&mut out, &StreamDigest::announce_frame(), name)?;
    send_poll(&mut publisher, &mut out, name)?;
    let trailer = out.digest.take().expect("set above").trailer_frame();
    send(&mut out, &trailer, name)?;
    out.inner
        .flush()
        .map_err(|e| Error::io(name, "cannot flush the stream", e))?;
    Ok(out.bytes)
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
    let mut publisher = Publisher::new(Archive::open(archive)?);
    let mut out = Counted::new(BufWriter::new(out));
    send(&mut out, &preamble(), name)?;
    while !stop.load(Ordering::Relaxed) {
        send_poll(&mut publisher, &mut out, name)?;
        out.inner
            .flush()
            .map_err(|e| Error::io(name, "cannot send frames", e))?;
        std::thread::sleep(interval);
    }
    Ok(out.bytes)
}

/// One poll, each frame written as soon as the publisher builds it: the
/// subscriber applies the first segments of a catch-up while the later
/// ones are still being read, and only one is in memory at a time.
fn send_poll(publisher: &mut Publisher, out: &mut Counted<impl Write>, name: &str) -> Result<()> {
    let mut buf = Vec::new();
    publisher.poll_each(|frame| {
        buf.clear();
        frame.encode_into(&mut buf);
        send(out, &buf, name)
    })
}

fn send(out: &mut Counted<impl Write>, bytes: &[u8], name: &str) -> Result<()> {
    out.inner
        .write_all(bytes)
        .map_err(|e| Error::io(name, "cannot send frames", e))?;
    out.bytes += bytes.len() as u64;
    if let Some(digest) = &mut out.digest {
        digest.update(bytes);
    }
    Ok(())
}

struct Counted<W> {
    inner: W,
    bytes: u64,
    /// The digest of what was sent, for a stream file's trailer.
    digest: Option<StreamDigest>,
}

impl<W> Counted<W> {
    fn new(inner: W) -> Counted<W> {
        Counted {
            inner,
            bytes: 0,
            digest: None,
        }
    }
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
/// on its own thread with its own publisher, until `stop` is set.
pub fn serve_tcp(
    archive: &Path,
    listener: TcpListener,
    interval: Duration,
    stop: &'static AtomicBool,
) -> Result<()> {
    let name = listener
        .local_addr()
        .map_or_else(|_| "tcp".to_string(), |a| a.to_string());
    for conn in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let conn = conn.map_err(|e| Error::io(&name, "cannot accept a subscriber", e))?;
        let peer = conn
            .peer_addr()
            .map_or_else(|_| name.clone(), |a| a.to_string());
        let archive = archive.to_path_buf();
        std::thread::Builder::new()
            .name("dendro-publish".into())
            .spawn(move || {
                let _ = conn.set_nodelay(true);
                if let Err(e) = publish_live(&archive, conn, &peer, interval, stop) {
                    eprintln!("{e}");
                }
            })
            .map_err(|e| Error::io(&name, "cannot spawn a publisher thread", e))?;
    }
    Ok(())
}

/// Capped, jittered exponential back-off between reconnects.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    cap: Duration,
    seed: u64,
}

impl Backoff {
    /// Starts at `first`, doubles up to `cap`.
    pub fn new(first: Duration, cap: Duration) -> Backoff {
        Backoff {
            next: first,
            cap,
            seed: crate::write::wall_clock_ns() as u64 | 1,
        }
    }

    /// The next wait: between half and all of the current step, so many
    /// subscribers of one publisher do not reconnect in lockstep.
    pub fn next_wait(&mut self) -> Duration {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let step = self.next;
        self.next = (self.next * 2).min(self.cap);
        let half = step / 2;
        half + half.mul_f64((self.seed % 1000) as f64 / 1000.0)
    }

    /// A connection worked: start from the first step again.
    pub fn reset(&mut self, first: Duration) {
        self.next = first;
    }
}

/// Subscribes to a publisher at `addr`, reconnecting with back-off when
/// the connection fails or ends, until `stop` is set. Each connection is a
/// fresh handshake and full state (rule 8); what is already held is
/// recognised and not applied twice.
pub fn subscribe_tcp(
    subscriber: &mut Subscriber,
    addr: SocketAddr,
    stop: &AtomicBool,
    mut progress: impl FnMut(&Applied, u64),
    mut on_error: impl FnMut(&Error),
) -> Result<()> {
    let first = Duration::from_millis(100);
    let mut backoff = Backoff::new(first, Duration::from_secs(10));
    let name = addr.to_string();
    while !stop.load(Ordering::Relaxed) {
        match TcpStream::connect(addr) {
            Ok(conn) => {
                backoff.reset(first);
                match apply_stream(subscriber, conn, &name, &mut progress) {
                    Ok(()) => {}
                    // The connection broke or carried garbage: try again.
                    Err(e @ (Error::Wire { .. } | Error::Io { .. })) => on_error(&e),
                    // The replica refused what it was sent: retrying repeats it.
                    Err(e) => return Err(e),
                }
            }
            Err(e) => on_error(&Error::io(&name, "cannot connect", e)),
        }
        if !stop.load(Ordering::Relaxed) {
            std::thread::sleep(backoff.next_wait());
        }
    }
    Ok(())
}
