//! Snapshot catch-up (feature `write`, native; `WIRE.md` §6.2): a new
//! replica starts from an image of its origin's file instead of from
//! frames, so it costs about a copy of the file rather than a rewrite of
//! every page through SQLite.
//!
//! The publisher takes the image with SQLite's backup API in one step,
//! which reads every page inside one read transaction: the image is the
//! archive as of one commit. It lands in a temporary file beside nothing
//! the publisher serves (its `snapshot_dir`), is read once to learn which
//! marks it embodies ([`Publisher::embodied`]) and once for its digest,
//! then unlinked and sent from the open handle; the read transaction ended
//! before the first byte went to the peer.
//!
//! The subscriber writes the image to the replica's staging name
//! (`container::staging`), checks its size, its digest and that it opens
//! as an archive with the sources the announcement named, and only then
//! makes it durable and links it to the replica's path, which must still
//! be free. A kill at any moment leaves nothing there or a whole archive.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use twox_hash::XxHash3_128;

use super::codec::Cursor;
use super::publisher::Publisher;
use super::stream::{FrameReader, KIND_SNAPSHOT};
use crate::container::{staging, Archive, SCHEMA_VERSION};
use crate::error::{Error, Result, SqlContext, WireProblem};

/// What our subscriber writes first on a TCP connection (before it reads
/// anything), so our publisher knows what it wants. The original's
/// subscriber writes nothing; our publisher then gives it frames.
pub const HELLO_MAGIC: [u8; 12] = *b"dendro-hello";
/// The hello's own version, independent of the stream's.
pub const HELLO_VERSION: u16 = 1;
/// The hello's length: magic, version, flags.
pub const HELLO_BYTES: usize = 15;
/// The hello's flag for "start me from a snapshot".
const WANT_SNAPSHOT: u8 = 1;
/// The announcement's digest algorithm: XXH3-128 with seed 0.
pub const DIGEST_XXH3_128: u8 = 1;
/// The announcement's layout version.
const ANNOUNCEMENT_VERSION: u8 = 1;
/// Pieces in which an image is hashed and sent.
pub const IMAGE_PIECE_BYTES: usize = 1 << 20;

/// What a subscriber asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// The replica does not exist yet: an image of the origin is welcome.
    pub want_snapshot: bool,
}

impl Hello {
    /// The hello's bytes.
    pub fn encode(self) -> [u8; HELLO_BYTES] {
        let mut out = [0u8; HELLO_BYTES];
        out[..12].copy_from_slice(&HELLO_MAGIC);
        out[12..14].copy_from_slice(&HELLO_VERSION.to_le_bytes());
        out[14] = if self.want_snapshot { WANT_SNAPSHOT } else { 0 };
        out
    }

    /// Reads a hello; the error says in words what the bytes were instead.
    /// Flags this build does not know are ignored (a later subscriber may
    /// ask for more, and gets what this publisher offers).
    pub fn decode(bytes: &[u8; HELLO_BYTES]) -> std::result::Result<Hello, String> {
        if bytes[..12] != HELLO_MAGIC {
            return Err(format!(
                "its first bytes {:?} are not a subscriber's hello",
                String::from_utf8_lossy(&bytes[..12])
            ));
        }
        let version = u16::from_le_bytes([bytes[12], bytes[13]]);
        if version != HELLO_VERSION {
            return Err(format!(
                "hello version {version} is not spoken here (this build speaks {HELLO_VERSION})"
            ));
        }
        Ok(Hello {
            want_snapshot: bytes[14] & WANT_SNAPSHOT != 0,
        })
    }
}

/// What precedes an image on the wire: its size, its digest and the
/// identity of the archive it is (the sorted uuids of its sources).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    /// The image's bytes.
    pub size: u64,
    /// XXH3-128 of the image's bytes.
    pub digest: u128,
    /// The uuids of the image's sources, sorted.
    pub identity: Vec<String>,
}

impl Announcement {
    /// The announcement as a whole frame (length, kind, payload).
    pub fn frame(&self) -> Vec<u8> {
        let mut payload = vec![KIND_SNAPSHOT, ANNOUNCEMENT_VERSION];
        payload.extend_from_slice(&self.size.to_le_bytes());
        payload.push(DIGEST_XXH3_128);
        payload.extend_from_slice(&self.digest.to_le_bytes());
        payload.extend_from_slice(&(self.identity.len() as u32).to_le_bytes());
        for uuid in &self.identity {
            payload.extend_from_slice(&(uuid.len() as u32).to_le_bytes());
            payload.extend_from_slice(uuid.as_bytes());
        }
        let mut out = (payload.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&payload);
        out
    }

    /// Reads an announcement's payload (after the kind byte). Every field
    /// must be there and nothing else; the identity must be sorted, without
    /// repeats.
    pub fn decode(payload: &[u8]) -> std::result::Result<Announcement, WireProblem> {
        let mut r = Cursor::new(payload);
        let version = r.u8()?;
        if version != ANNOUNCEMENT_VERSION {
            return Err(WireProblem::BadValue(format!(
                "snapshot announcement version {version} is not one this build reads"
            )));
        }
        let size = r.u64()?;
        let algorithm = r.u8()?;
        if algorithm != DIGEST_XXH3_128 {
            return Err(WireProblem::BadValue(format!(
                "snapshot digest algorithm {algorithm} is not one this build checks"
            )));
        }
        let digest = (r.u64()? as u128) | ((r.u64()? as u128) << 64);
        let count = r.u32()?;
        let mut identity: Vec<String> = Vec::new();
        for _ in 0..count {
            let uuid = r.str("a snapshot's source uuid")?;
            if identity.last().is_some_and(|last| *last >= uuid) {
                return Err(WireProblem::BadValue(
                    "a snapshot's source uuids are not sorted and distinct".into(),
                ));
            }
            identity.push(uuid);
        }
        if r.left() > 0 {
            return Err(WireProblem::TrailingBytes(r.left()));
        }
        Ok(Announcement {
            size,
            digest,
            identity,
        })
    }
}

/// The identity of an archive: its sources' uuids, sorted; `None` when a
/// source has none (such a source is found again only by a uuid derived
/// from its handshake, which the image does not carry, so it is caught up
/// by frames).
pub fn identity(archive: &Archive) -> Result<Option<Vec<String>>> {
    let records = archive.read_snapshot(|snap| snap.sources())?;
    let mut uuids = Vec::with_capacity(records.len());
    for record in records {
        match record.source.uuid {
            Some(uuid) => uuids.push(uuid),
            None => return Ok(None),
        }
    }
    uuids.sort();
    Ok(Some(uuids))
}

/// An image ready to send: an unlinked file, what announces it, and the
/// publisher that carries on after it on the live archive.
#[derive(Debug)]
pub struct Image {
    file: File,
    /// Its size, digest and identity.
    pub announcement: Announcement,
    /// Marks as of the image, publishing from the live archive.
    pub publisher: Publisher,
}

impl Image {
    /// Hands the image's bytes to `send` in pieces of
    /// [`IMAGE_PIECE_BYTES`], from the start.
    pub fn send(&mut self, mut send: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| Error::io("snapshot image", "cannot rewind", e))?;
        let mut piece = vec![0u8; IMAGE_PIECE_BYTES];
        let mut left = self.announcement.size;
        while left > 0 {
            let want = left.min(piece.len() as u64) as usize;
            self.file
                .read_exact(&mut piece[..want])
                .map_err(|e| Error::io("snapshot image", "cannot read", e))?;
            send(&piece[..want])?;
            left -= want as u64;
        }
        Ok(())
    }
}

/// Removes a temporary file and its sidecars when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        remove_with_sidecars(&self.0);
    }
}

fn remove_with_sidecars(path: &Path) {
    let _ = std::fs::remove_file(path);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_os_string();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

static IMAGES: AtomicU64 = AtomicU64::new(0);

/// Takes an image of the archive at `origin` into a temporary file in
/// `dir`. `None` when the archive cannot be published this way: a schema
/// other than the one this build writes (a replica is written by this
/// build), or a source without a uuid (see [`identity`]). The file is
/// unlinked before this returns; a kill before that leaves a
/// `.dendro-snapshot-*` file in `dir`.
pub fn take_image(origin: &Path, dir: &Path) -> Result<Option<Image>> {
    let source = Archive::open(origin)?;
    let version = source.read_snapshot(|snap| snap.schema_version())?;
    if version != SCHEMA_VERSION || identity(&source)?.is_none() {
        return Ok(None);
    }
    let path = dir.join(format!(
        ".dendro-snapshot-{}-{}",
        std::process::id(),
        IMAGES.fetch_add(1, Ordering::Relaxed)
    ));
    let name = path.display().to_string();
    remove_with_sidecars(&path);
    let scratch = Scratch(path.clone());
    {
        let mut dest = rusqlite::Connection::open(&path).ctx(&name, "cannot create")?;
        // Nothing reads the copy while it is made, and a failure discards it.
        let _: String = dest
            .query_row("PRAGMA journal_mode = OFF", [], |r| r.get(0))
            .ctx(&name, "cannot configure")?;
        dest.execute_batch("PRAGMA synchronous = OFF;")
            .ctx(&name, "cannot configure")?;
        let backup = rusqlite::backup::Backup::new(&source.conn, &mut dest).ctx(
            origin.display().to_string().as_str(),
            "cannot start a snapshot",
        )?;
        // One step of every page: one read transaction, one commit's state.
        match backup.step(-1).ctx(&name, "cannot copy the archive")? {
            rusqlite::backup::StepResult::Done => {}
            other => {
                return Err(Error::Replication {
                    file: origin.display().to_string(),
                    message: format!("the snapshot did not complete in one step ({other:?})"),
                })
            }
        }
    }
    let image = Archive::open(&path)?;
    let Some(identity) = identity(&image)? else {
        return Ok(None);
    };
    let mut publisher = Publisher::embodied(image)?;
    publisher.rebase(source);
    let mut file = File::open(&path).map_err(|e| Error::io(&name, "cannot open", e))?;
    drop(scratch);
    let (digest, size) = digest_of(&mut file, &name)?;
    Ok(Some(Image {
        file,
        announcement: Announcement {
            size,
            digest,
            identity,
        },
        publisher,
    }))
}

/// The digest an image is announced with, and its size, of what `file`
/// holds from where it is read.
fn digest_of(file: &mut File, name: &str) -> Result<(u128, u64)> {
    let mut hasher = XxHash3_128::new();
    let mut piece = vec![0u8; IMAGE_PIECE_BYTES];
    let mut size = 0u64;
    loop {
        let n = match file.read(&mut piece) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(name, "cannot read", e)),
        };
        hasher.write(&piece[..n]);
        size += n as u64;
    }
    Ok((hasher.finish_128(), size))
}

/// The digest a snapshot of the file at `path` would be announced with.
pub fn file_digest(path: &Path) -> Result<u128> {
    let name = path.display().to_string();
    let mut file = File::open(path).map_err(|e| Error::io(&name, "cannot open", e))?;
    Ok(digest_of(&mut file, &name)?.0)
}

/// Removes images in `dir` that a publisher killed while making them left
/// behind (`.dendro-snapshot-PID-N` whose process is gone). Linux only;
/// elsewhere they stay until removed by hand.
pub fn discard_stale_images(dir: &Path) {
    #[cfg(target_os = "linux")]
    {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(rest) = name.strip_prefix(".dendro-snapshot-") else {
                continue;
            };
            let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
            let Some(pid) = pid else { continue };
            let alive = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
            if !alive {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = dir;
}

/// Receives the image `announced` says follows on `reader` into the
/// staging name of `out`, checks it, and moves it to `out`. `peer` names
/// the publisher in errors. On any failure nothing is left at `out` and the
/// staging file is removed: a stream cut short or a digest that does not
/// match is a [`Error::Wire`] (the next connection tries again); an image
/// that is not an archive with the announced sources is
/// [`Error::Replication`].
pub fn receive_image<R: Read>(
    reader: &mut FrameReader<R>,
    announced: &Announcement,
    out: &Path,
    peer: &str,
) -> Result<()> {
    let offset = reader.bytes_read();
    // The size is the peer's word: an image the disk cannot take is
    // refused before a byte of it is written, not when the disk is full.
    if let Some(free) = free_bytes(out) {
        if announced.size > free {
            return Err(Error::Replication {
                file: peer.to_string(),
                message: format!(
                    "the announced snapshot of {} bytes does not fit in the {free} bytes free \
                     beside {}; nothing was written",
                    announced.size,
                    out.display()
                ),
            });
        }
    }
    staging::discard_stale(out)?;
    let staged = staging::staging_path(out);
    let name = staged.display().to_string();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&staged)
        .map_err(|e| Error::io(&name, "cannot create the snapshot's staging file", e))?;
    let scratch = Scratch(staged.clone());
    // Another subscriber catching up into the same place finds it taken.
    file.try_lock()
        .map_err(|_| Error::InUse { file: name.clone() })?;
    let mut hasher = XxHash3_128::new();
    reader.read_raw(announced.size, |piece| {
        hasher.write(piece);
        file.write_all(piece)
            .map_err(|e| Error::io(&name, "cannot write the snapshot", e))
    })?;
    let digest = hasher.finish_128();
    if digest != announced.digest {
        return Err(Error::Wire {
            file: peer.to_string(),
            offset,
            problem: WireProblem::BadValue(format!(
                "the snapshot's {} bytes do not match the digest it was announced with \
                 (XXH3-128 {:032x}, announced {:032x}); nothing was written at {}",
                announced.size,
                digest,
                announced.digest,
                out.display()
            )),
        });
    }
    let held = Archive::open(&staged)
        .and_then(|image| identity(&image))
        .map_err(|e| Error::Replication {
            file: peer.to_string(),
            message: format!(
                "the snapshot is not an archive this build opens ({e}); nothing was written at {}",
                out.display()
            ),
        })?;
    if held.as_ref() != Some(&announced.identity) {
        return Err(Error::Replication {
            file: peer.to_string(),
            message: format!(
                "the snapshot is of another archive than announced: it holds sources {:?}, \
                 the announcement named {:?}; nothing was written at {}",
                held.unwrap_or_default(),
                announced.identity,
                out.display()
            ),
        });
    }
    // Made durable, linked to `out` only if nothing took the name, and the
    // directory made durable (`staging::promote`).
    staging::promote(&staged, out)?;
    drop(file);
    drop(scratch);
    Ok(())
}

/// The bytes free to an unprivileged writer on the file system that holds
/// `out`'s directory; `None` where that cannot be asked.
fn free_bytes(out: &Path) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let dir = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: a NUL-terminated path and a zeroed statvfs for the call
        // to fill.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut stat) } != 0 {
            return None;
        }
        Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = out;
        None
    }
}
