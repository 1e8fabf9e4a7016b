//! One TCP connection below the frames (feature `write`, native): TLS when
//! it is configured, the subscriber's hello (`WIRE.md` §6.2), and the
//! deadlines on both ends. Every wait a peer can cause is bounded here:
//! a TLS handshake and the hello by their own limits, a part sent to a
//! subscriber by the write timeout, a read from a publisher by the idle
//! timeout.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::{ClientConnection, ServerConnection, StreamOwned};

use super::snapshot::{Hello, HELLO_BYTES};
use super::tls::ClientTls;
use crate::error::{Error, Result, WireProblem};
use crate::format::wire::MAGIC;

/// How often a loop that waits checks its `stop` flag.
pub(super) const STOP_POLL: Duration = Duration::from_millis(100);

/// The first byte of a TLS handshake record (a ClientHello).
const TLS_HANDSHAKE: u8 = 0x16;
/// The first byte of a TLS alert record.
const TLS_ALERT: u8 = 0x15;
/// A fatal `unexpected_message` alert as a TLS 1.2 record: what a TLS
/// publisher answers a plaintext client with, so that it can say why.
const PLAINTEXT_ALERT: [u8; 7] = [TLS_ALERT, 3, 3, 0, 2, 2, 10];

/// A byte stream in both directions.
pub(super) trait Io: Read + Write + Send {}
impl<T: Read + Write + Send> Io for T {}

/// Where a publisher's bytes go.
pub(super) trait Sink {
    /// Sends all of `bytes` (and flushes); returns how many.
    fn send(&mut self, bytes: &[u8]) -> Result<u64>;
}

/// A subscriber's connection as its publisher sees it, every send bound
/// by a deadline.
pub(super) struct Peer {
    io: Box<dyn Io>,
    /// The socket under `io`, for its timeouts.
    sock: TcpStream,
    pub(super) name: String,
    timeout: Duration,
}

impl Peer {
    /// Sets up an accepted connection: TLS when `tls` is given (its
    /// handshake bound by `handshake`), plaintext otherwise. A client that
    /// speaks plaintext to TLS is answered with an alert and refused, one
    /// that sends nothing within `handshake` is refused too.
    pub(super) fn accept(
        conn: TcpStream,
        name: String,
        tls: Option<&Arc<rustls::ServerConfig>>,
        handshake: Duration,
        timeout: Duration,
    ) -> Result<Peer> {
        let sock = conn
            .try_clone()
            .map_err(|e| Error::io(&name, "cannot set up the connection", e))?;
        let Some(config) = tls else {
            return Ok(Peer {
                io: Box::new(conn),
                sock,
                name,
                timeout,
            });
        };
        let deadline = Instant::now() + handshake;
        sock.set_read_timeout(Some(handshake))
            .map_err(|e| Error::io(&name, "cannot set a read timeout", e))?;
        let mut first = [0u8; 1];
        match sock.peek(&mut first) {
            Ok(0) => {
                return Err(refused(
                    &name,
                    "it closed the connection before a TLS handshake",
                ))
            }
            Ok(_) if first[0] != TLS_HANDSHAKE => {
                let _ = (&sock).write_all(&PLAINTEXT_ALERT);
                linger_out(&sock);
                return Err(refused(
                    &name,
                    "it speaks plaintext to a TLS publisher (its first bytes are not a TLS \
                     handshake); a subscriber needs --tls-ca or --tls-pin here",
                ));
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(refused(
                    &name,
                    &format!(
                        "it sent no TLS handshake within {handshake:?} (a plaintext subscriber \
                         that waits for the publisher to speak first?)"
                    ),
                ))
            }
            Err(e) => return Err(Error::io(&name, "cannot read the TLS handshake", e)),
        }
        let mut server = ServerConnection::new(Arc::clone(config))
            .map_err(|e| refused(&name, &format!("cannot start TLS: {e}")))?;
        let mut raw = conn;
        while server.is_handshaking() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(refused(
                    &name,
                    &format!("its TLS handshake took longer than {handshake:?}"),
                ));
            }
            let _ = raw.set_read_timeout(Some(left));
            let _ = raw.set_write_timeout(Some(left));
            if let Err(e) = server.complete_io(&mut raw) {
                // The alert that says why goes out before the close.
                let _ = server.complete_io(&mut raw);
                return Err(refused(&name, &format!("TLS handshake failed: {e}")));
            }
        }
        Ok(Peer {
            io: Box::new(StreamOwned::new(server, raw)),
            sock,
            name,
            timeout,
        })
    }

    /// Waits up to `wait` for the subscriber's hello. `None` when nothing
    /// came (the original's subscriber, or one of ours before the hello,
    /// sends nothing: it gets frames). Anything other than a hello is
    /// refused, a TLS ClientHello to a plaintext publisher by name.
    pub(super) fn hello(&mut self, wait: Duration) -> Result<Option<Hello>> {
        let deadline = Instant::now() + wait;
        let mut buf = [0u8; HELLO_BYTES];
        let mut got = 0;
        while got < HELLO_BYTES {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            self.sock
                .set_read_timeout(Some(left))
                .map_err(|e| Error::io(&self.name, "cannot set a read timeout", e))?;
            match self.io.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(Error::io(&self.name, "cannot read the hello", e)),
            }
            if got > 0 && buf[0] == TLS_HANDSHAKE {
                linger_out(&self.sock);
                return Err(refused(
                    &self.name,
                    "it speaks TLS to a plaintext publisher (start the publisher with \
                     --tls-cert and --tls-key, or connect without TLS)",
                ));
            }
        }
        let _ = self.sock.set_read_timeout(None);
        match got {
            0 => Ok(None),
            HELLO_BYTES => Hello::decode(&buf)
                .map(Some)
                .map_err(|why| refused(&self.name, &why)),
            n => Err(refused(
                &self.name,
                &format!("it sent {n} bytes and stopped, not a {HELLO_BYTES}-byte hello"),
            )),
        }
    }
}

/// Closes our side after a last word so that the peer reads it: what it
/// sent is read first (a socket closed with unread bytes is reset, and a
/// reset can discard what the peer has not read yet), within a moment.
fn linger_out(sock: &TcpStream) {
    let _ = sock.shutdown(std::net::Shutdown::Write);
    let _ = sock.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 4096];
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        match (&*sock).read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

/// A subscriber refused, with the cause in words.
fn refused(name: &str, why: &str) -> Error {
    Error::Replication {
        file: name.to_string(),
        message: format!("subscriber refused: {why}"),
    }
}

impl Sink for Peer {
    /// The whole of `bytes` must go within the timeout, not each write
    /// call: a peer that reads a trickle is as stuck as one that reads
    /// nothing, only slower.
    fn send(&mut self, bytes: &[u8]) -> Result<u64> {
        let deadline = Instant::now() + self.timeout;
        let mut sent = 0;
        let mut flushed = false;
        while sent < bytes.len() || !flushed {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::io(
                    &self.name,
                    &format!(
                        "subscriber dropped: it took {sent} of a {}-byte part in {:?}; one \
                         that cannot keep up is let go (it may reconnect and catch up)",
                        bytes.len(),
                        self.timeout
                    ),
                    ErrorKind::TimedOut.into(),
                ));
            }
            self.sock
                .set_write_timeout(Some(left))
                .map_err(|e| Error::io(&self.name, "cannot set a write timeout", e))?;
            let step = if sent < bytes.len() {
                self.io.write(&bytes[sent..])
            } else {
                // TLS holds records back until flushed; a socket does not.
                self.io.flush().map(|()| {
                    flushed = true;
                    0
                })
            };
            match step {
                Ok(0) if sent < bytes.len() => {
                    return Err(Error::io(
                        &self.name,
                        "cannot send frames",
                        ErrorKind::WriteZero.into(),
                    ))
                }
                Ok(n) => sent += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::Interrupted | ErrorKind::WouldBlock | ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(Error::io(&self.name, "cannot send frames", e)),
            }
        }
        Ok(bytes.len() as u64)
    }
}

/// A publisher's socket as a subscriber reads it: a read fails once
/// nothing has arrived for `idle` (the publisher's heartbeat stopped: a
/// half-open connection, a hung or hostile peer), or once `stop` is set.
/// Writes (the hello, TLS's own records) are bound by `idle` too. The
/// first bytes read are kept, to tell what a failed handshake met.
pub(super) struct Watched<'a> {
    conn: TcpStream,
    idle: Duration,
    stop: &'a AtomicBool,
    last: Instant,
    first: Vec<u8>,
}

impl<'a> Watched<'a> {
    pub(super) fn new(
        conn: TcpStream,
        name: &str,
        idle: Duration,
        stop: &'a AtomicBool,
    ) -> Result<Self> {
        // Short socket timeouts, so `stop` is seen; `idle` is counted here.
        let tick = idle.min(STOP_POLL).max(Duration::from_millis(1));
        conn.set_read_timeout(Some(tick))
            .map_err(|e| Error::io(name, "cannot set a read timeout", e))?;
        conn.set_write_timeout(Some(idle.max(Duration::from_millis(1))))
            .map_err(|e| Error::io(name, "cannot set a write timeout", e))?;
        Ok(Watched {
            conn,
            idle,
            stop,
            last: Instant::now(),
            first: Vec::new(),
        })
    }
}

impl Read for Watched<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            // Checked before every read too: a publisher that keeps sending
            // never lets a read time out.
            if self.stop.load(Ordering::Relaxed) {
                return Err(std::io::Error::other("stopped on request"));
            }
            match self.conn.read(buf) {
                Ok(n) => {
                    self.last = Instant::now();
                    if self.first.len() < MAGIC.len() {
                        let keep = n.min(MAGIC.len() - self.first.len());
                        self.first.extend_from_slice(&buf[..keep]);
                    }
                    return Ok(n);
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if self.last.elapsed() >= self.idle {
                        return Err(std::io::Error::new(
                            ErrorKind::TimedOut,
                            format!(
                                "nothing arrived for {:?}; a live publisher sends a frame every \
                                 interval, so the connection is taken for dead",
                                self.idle
                            ),
                        ));
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Write for Watched<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.conn.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.conn.flush()
    }
}

/// A subscriber's connection to its publisher: the hello sent, TLS set up
/// when asked for.
pub(super) enum Link<'a> {
    /// Plain TCP.
    Plain(Watched<'a>),
    /// TLS over TCP.
    Tls(Box<StreamOwned<ClientConnection, Watched<'a>>>),
}

impl<'a> Link<'a> {
    /// Sets the connection up and sends `hello`; with TLS the handshake
    /// happens here, and a failure says what the publisher answered with.
    pub(super) fn connect(
        conn: Watched<'a>,
        name: &str,
        tls: Option<&ClientTls>,
        hello: Hello,
    ) -> Result<Link<'a>> {
        let mut link = match tls {
            None => Link::Plain(conn),
            Some(tls) => {
                let client =
                    ClientConnection::new(Arc::clone(&tls.config), tls.server_name.clone())
                        .map_err(|e| {
                            Error::io(name, "cannot start TLS", std::io::Error::other(e))
                        })?;
                Link::Tls(Box::new(StreamOwned::new(client, conn)))
            }
        };
        let sent = link.write_all(&hello.encode()).and_then(|()| link.flush());
        if let Err(e) = sent {
            return Err(match &link {
                Link::Tls(stream) if stream.sock.first.starts_with(&MAGIC) => Error::Wire {
                    file: name.to_string(),
                    offset: 0,
                    problem: WireProblem::BadValue(
                        "the publisher speaks plaintext, not TLS (it was started without \
                         --tls-cert); connect without --tls-ca/--tls-pin, or ask for TLS there"
                            .into(),
                    ),
                },
                Link::Tls(_) => Error::io(name, "TLS handshake failed", e),
                Link::Plain(_) => Error::io(name, "cannot send the hello", e),
            });
        }
        Ok(link)
    }
}

impl Read for Link<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Link::Plain(conn) => conn.read(buf),
            Link::Tls(stream) => stream.read(buf),
        }
    }
}

impl Write for Link<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Link::Plain(conn) => conn.write(buf),
            Link::Tls(stream) => stream.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Link::Plain(conn) => conn.flush(),
            Link::Tls(stream) => stream.flush(),
        }
    }
}

/// What a plaintext subscriber makes of a TLS publisher's answer: its
/// preamble check fails on a TLS record, which is named as such.
pub(super) fn explain_tls_answer(error: Error, name: &str) -> Error {
    match &error {
        Error::Wire {
            problem: WireProblem::WrongMagic(seen),
            ..
        } if matches!(seen.first(), Some(&TLS_ALERT | &TLS_HANDSHAKE)) => Error::Wire {
            file: name.to_string(),
            offset: 0,
            problem: WireProblem::BadValue(
                "the publisher speaks TLS and this subscriber does not: connect with --tls-ca \
                 FILE or --tls-pin SHA256"
                    .into(),
            ),
        },
        _ => error,
    }
}
