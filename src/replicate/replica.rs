//! The subscriber's end of a TCP connection (feature `write`, native):
//! the reconnecting loop of [`super::transport::subscribe_tcp_with`] and
//! [`replicate_tcp`], and the [`Replica`] that asks for a snapshot when
//! it does not exist yet (`WIRE.md` §6.2).

use std::io::{BufReader, ErrorKind, Read};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::link::{explain_tls_answer, Link, Watched};
use super::retry::{new_content, pause, Backoff, SubscribeOptions};
use super::snapshot::{receive_image, Announcement, Hello};
use super::stream::{FrameReader, Item, KIND_SNAPSHOT};
use super::subscriber::{Applied, Subscriber};
use crate::error::{Error, Result};
use crate::segment::SegmentEncoder;

/// A replica kept up to date over TCP, opened once the first connection
/// says how it starts. When nothing is at its path, the subscriber asks
/// for a snapshot (`WIRE.md` §6.2): a publisher that offers one sends an
/// image of its archive, which lands whole at the path before any frame
/// is applied; one that does not (the original's, a busy one) sends
/// frames, staged as [`Subscriber::open`] describes. A replica that exists
/// is never replaced by an image: it may hold what its origin no longer
/// has (segments its retention removed, sources another origin sent),
/// and frames bring it up to date at the cost of what it lacks.
pub struct Replica {
    path: PathBuf,
    encoder: Arc<dyn SegmentEncoder>,
    subscriber: Option<Subscriber>,
    snapshots: u64,
    /// The image received and not yet counted by a subscriber.
    image_bytes: Option<u64>,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("path", &self.path)
            .field("open", &self.subscriber.is_some())
            .field("snapshots", &self.snapshots)
            .finish()
    }
}

impl Replica {
    /// The replica at `path`; nothing is opened or created yet.
    pub fn new(path: impl AsRef<Path>, encoder: Arc<dyn SegmentEncoder>) -> Replica {
        Replica {
            path: path.as_ref().to_path_buf(),
            encoder,
            subscriber: None,
            snapshots: 0,
            image_bytes: None,
        }
    }

    /// What has been applied so far (by frames; an image is not counted
    /// here but in [`Replica::snapshots`]).
    pub fn applied(&self) -> Applied {
        self.subscriber
            .as_ref()
            .map(|s| s.applied().clone())
            .unwrap_or_default()
    }

    /// Images received and moved into place.
    pub fn snapshots(&self) -> u64 {
        self.snapshots
    }

    /// The subscriber, opened on first use.
    pub fn subscriber(&mut self) -> Result<&mut Subscriber> {
        if self.subscriber.is_none() {
            let mut opened = Subscriber::open(&self.path, Arc::clone(&self.encoder))?;
            if let Some(bytes) = self.image_bytes.take() {
                opened.started_from_image(bytes);
            }
            self.subscriber = Some(opened);
        }
        Ok(self.subscriber.as_mut().expect("opened above"))
    }

    /// Finishes the subscriber ([`Subscriber::finish`]), opening it first
    /// if no connection ever did (the replica is then created empty).
    pub fn finish(mut self) -> Result<Applied> {
        self.subscriber()?;
        self.subscriber.take().expect("opened above").finish()
    }
}

/// What a connection's frames are applied to.
pub(super) trait Target {
    /// Whether to ask for a snapshot.
    fn wants_snapshot(&self) -> bool;
    /// The subscriber frames go to.
    fn open(&mut self) -> Result<&mut Subscriber>;
    /// Receives an image into place.
    fn install<R: Read>(
        &mut self,
        reader: &mut FrameReader<R>,
        announced: &Announcement,
        name: &str,
    ) -> Result<()>;
    /// What counts as progress for the back-off.
    fn progress(&self) -> u64;
}

impl Target for Subscriber {
    fn wants_snapshot(&self) -> bool {
        false
    }
    fn open(&mut self) -> Result<&mut Subscriber> {
        Ok(self)
    }
    fn install<R: Read>(
        &mut self,
        _: &mut FrameReader<R>,
        _: &Announcement,
        name: &str,
    ) -> Result<()> {
        Err(unasked(name, &self.applied().frames.to_string()))
    }
    fn progress(&self) -> u64 {
        new_content(self.applied())
    }
}

impl Target for Replica {
    fn wants_snapshot(&self) -> bool {
        self.subscriber.is_none()
            && std::fs::metadata(&self.path).is_err_and(|e| e.kind() == ErrorKind::NotFound)
    }
    fn open(&mut self) -> Result<&mut Subscriber> {
        self.subscriber()
    }
    fn install<R: Read>(
        &mut self,
        reader: &mut FrameReader<R>,
        announced: &Announcement,
        name: &str,
    ) -> Result<()> {
        receive_image(reader, announced, &self.path, name)?;
        self.snapshots += 1;
        self.image_bytes = Some(announced.size);
        Ok(())
    }
    fn progress(&self) -> u64 {
        self.snapshots
            + self
                .subscriber
                .as_ref()
                .map_or(0, |s| new_content(s.applied()))
    }
}

fn unasked(name: &str, _: &str) -> Error {
    Error::Replication {
        file: name.to_string(),
        message: "the publisher sent a snapshot this subscriber did not ask for (it asks only \
                  when nothing is at the replica's path); the replica is kept as it is"
            .into(),
    }
}

/// Keeps `replica` up to date from the publisher at `addr`, as
/// [`subscribe_tcp_with`] does, starting a new replica from a snapshot
/// when the publisher offers one (see [`Replica`]).
pub fn replicate_tcp(
    replica: &mut Replica,
    addr: SocketAddr,
    options: &SubscribeOptions,
    stop: &AtomicBool,
    progress: impl FnMut(&Applied, u64),
    on_error: impl FnMut(&Error),
) -> Result<()> {
    follow_tcp(replica, addr, options, stop, progress, on_error)
}

/// The reconnecting loop, for either kind of target.
pub(super) fn follow_tcp<T: Target>(
    target: &mut T,
    addr: SocketAddr,
    options: &SubscribeOptions,
    stop: &AtomicBool,
    mut progress: impl FnMut(&Applied, u64),
    mut on_error: impl FnMut(&Error),
) -> Result<()> {
    let mut backoff = Backoff::new(options.backoff_first, options.backoff_cap);
    let name = addr.to_string();
    while !stop.load(Ordering::Relaxed) {
        match TcpStream::connect_timeout(&addr, options.connect_timeout) {
            Ok(conn) => {
                let before = target.progress();
                let want_snapshot = target.wants_snapshot();
                let hello = Hello { want_snapshot };
                let outcome = Watched::new(conn, &name, options.idle_timeout, stop)
                    .and_then(|watched| Link::connect(watched, &name, options.tls.as_ref(), hello))
                    .and_then(|link| follow(target, link, &name, want_snapshot, &mut progress));
                if target.progress() > before {
                    backoff.reset(options.backoff_first);
                }
                match outcome {
                    Ok(()) => {}
                    Err(Error::Wire { .. } | Error::Io { .. }) if stop.load(Ordering::Relaxed) => {
                        break
                    }
                    // The connection broke, went quiet or carried garbage:
                    // try again.
                    Err(e @ (Error::Wire { .. } | Error::Io { .. })) => on_error(&e),
                    // The replica refused what it was sent: retrying repeats it.
                    Err(e) => return Err(e),
                }
            }
            Err(e) => on_error(&Error::io(&name, "cannot connect", e)),
        }
        pause(backoff.next_wait(), stop);
    }
    Ok(())
}

/// One connection's stream applied to `target`: an image first when one
/// was asked for and is announced, then frames.
fn follow<T: Target>(
    target: &mut T,
    input: impl Read,
    name: &str,
    want_snapshot: bool,
    progress: &mut impl FnMut(&Applied, u64),
) -> Result<()> {
    let mut reader = FrameReader::new(BufReader::with_capacity(1 << 16, input), name)
        .map_err(|e| explain_tls_answer(e, name))?;
    let (mut first, mut opened) = (true, false);
    loop {
        let offset = reader.bytes_read();
        let Some(item) = reader.next_item()? else {
            return Ok(());
        };
        match item {
            Item::Other {
                kind: KIND_SNAPSHOT,
                payload,
            } => {
                if !(first && want_snapshot) {
                    return Err(unasked(name, ""));
                }
                let announced = Announcement::decode(&payload).map_err(|problem| Error::Wire {
                    file: name.to_string(),
                    offset,
                    problem,
                })?;
                target.install(&mut reader, &announced, name)?;
            }
            // Skipped by its length, like any kind this build does not know.
            Item::Other { .. } => {}
            Item::Frame(frame) => {
                let subscriber = target.open()?;
                if !opened {
                    subscriber.new_connection();
                    opened = true;
                }
                subscriber.apply(frame)?;
                progress(subscriber.applied(), reader.bytes_read());
            }
        }
        first = false;
    }
}
