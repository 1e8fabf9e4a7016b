//! The dataset directory itself: its lock, its manifest (the one record
//! of what is committed, with every source's cursor), the recovery a
//! killed export leaves for the next one, and the commit.
//!
//! The commit, in order: the run's files are written under `_staging/`
//! (a name Spark, Hive and Trino skip, and a glob over `stream=*` never
//! reaches), made durable, renamed into their partitions, and then
//! `_manifest.json` is replaced by rename: that rename is the commit, and
//! the cursors are in it, so they are written last. `_manifest.parquet`
//! (the same list as a table) follows, and `_staging/` goes last. A run
//! that dies anywhere before the commit leaves `_staging/` behind, which
//! tells the next run to delete every data file the manifest does not
//! list (rows the old cursors will export again) and to write
//! `_manifest.parquet` again from `_manifest.json`.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::catalog::Labels;
use crate::error::{Error, Result};

/// The `format` value of `_manifest.json`.
pub const DATASET_FORMAT: &str = "dendro-dataset/1";
/// The committed list of files, with the cursors.
pub(super) const MANIFEST_JSON: &str = "_manifest.json";
/// The same files as a table, for engines.
pub(super) const MANIFEST_PARQUET: &str = "_manifest.parquet";
/// Where a run writes before its commit.
pub(super) const STAGING: &str = "_staging";
/// Held (`flock`) by the export writing the dataset.
pub(super) const LOCK: &str = "_lock";
/// What the one-file-per-segment export (`dendro-export/1`) writes.
const OLD_CATALOG: &str = "catalog.json";

/// `_manifest.json`: every committed file and every cursor.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// [`DATASET_FORMAT`].
    pub format: String,
    /// Commits so far; file names carry the one that wrote them.
    pub generation: u64,
    /// The label the files are partitioned by, fixed by the first run.
    pub partition_by: Option<String>,
    /// Per source and stream, the newest row exported.
    pub cursors: Vec<Cursor>,
    /// Every file engines may read.
    pub files: Vec<ManifestFile>,
    /// The stream schemas the files have, by id: `[name, type]` pairs.
    pub schemas: BTreeMap<String, Vec<[String; 2]>>,
}

/// Where one source's stream stands: rows up to `last_ts` are exported.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Cursor {
    /// The source's uuid, in lower case.
    pub source_uuid: String,
    /// The stream.
    pub stream: String,
    /// The newest exported row's `ts`.
    pub last_ts: i64,
    /// Rows exported for it so far.
    pub rows: u64,
}

/// One data file of the dataset.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ManifestFile {
    /// Relative to the dataset, `/`-separated.
    pub path: String,
    /// The stream (unescaped).
    pub stream: String,
    /// `YYYY-MM-DD` (UTC) of every row's `ts`.
    pub date: String,
    /// The partition label's value, when the dataset has one (`None`:
    /// the sources lacked the label).
    pub partition: Option<String>,
    /// Key into [`Manifest::schemas`]: files of one stream with another
    /// schema have another id.
    pub schema_id: String,
    /// The commit that wrote it.
    pub generation: u64,
    /// Rows in the file.
    pub rows: u64,
    /// Its size.
    pub bytes: u64,
    /// Smallest `ts`, ns since the epoch.
    pub ts_min: i64,
    /// Largest `ts`.
    pub ts_max: i64,
    /// Label columns left out of the file because their key names a
    /// column the stream or the layout already has (the labels are here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels_not_in_file: Vec<String>,
    /// The sources whose rows it holds, one row group run each.
    pub sources: Vec<FileSource>,
}

/// One source's rows in a file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileSource {
    /// Its uuid, lower case.
    pub source_uuid: String,
    /// Its labels.
    pub labels: Labels,
    /// Its rows in the file.
    pub rows: u64,
    /// Their smallest `ts`.
    pub ts_min: i64,
    /// Their largest `ts`.
    pub ts_max: i64,
}

/// The held lock of a dataset: released when dropped (and by the kernel
/// when the process dies, so a killed export never blocks the next).
pub(super) struct Lock {
    _file: File,
}

/// Takes the dataset's lock, or says who holds it.
pub(super) fn lock(root: &Path) -> Result<Lock> {
    let path = root.join(LOCK);
    let name = path.display().to_string();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&name, "cannot open the dataset's lock file", e))?;
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid descriptor, open for the whole call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::WouldBlock {
                return Err(Error::Invalid {
                    file: root.display().to_string(),
                    message: "another export is writing this dataset (it holds _lock); \
                              wait for it to finish"
                        .into(),
                });
            }
            return Err(Error::io(&name, "cannot lock the dataset", err));
        }
    }
    Ok(Lock { _file: file })
}

/// What the directory holds before a run.
pub(super) enum Found {
    /// Nothing yet (or only a lock and a dead run's staging).
    Empty,
    /// A dataset, as committed.
    Dataset(Manifest),
}

/// Reads the committed manifest of `root`, refusing a directory that is
/// not a dataset in words: the older one-file-per-segment export, another
/// format, or anything else with entries.
pub(super) fn inspect(root: &Path) -> Result<Found> {
    let name = root.display().to_string();
    let refuse = |message: String| Error::Invalid {
        file: name.clone(),
        message,
    };
    let manifest = root.join(MANIFEST_JSON);
    if manifest.exists() {
        let text = std::fs::read(&manifest)
            .map_err(|e| Error::io(&name, "cannot read _manifest.json", e))?;
        let found: Manifest = serde_json::from_slice(&text)
            .map_err(|e| refuse(format!("_manifest.json is not a dataset manifest: {e}")))?;
        if found.format != DATASET_FORMAT {
            return Err(refuse(format!(
                "_manifest.json is {:?}, which this dendro does not write ({DATASET_FORMAT})",
                found.format
            )));
        }
        return Ok(Found::Dataset(found));
    }
    if root.join(OLD_CATALOG).exists() {
        return Err(refuse(
            "written by the older export (dendro-export/1: one file per segment under \
             source=<uuid>/, catalog.json, no cursors), which cannot be added to; \
             export into a new directory (the old one stays readable as it is)"
                .into(),
        ));
    }
    let entries =
        std::fs::read_dir(root).map_err(|e| Error::io(&name, "cannot list the directory", e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(&name, "cannot list the directory", e))?;
        let file_name = entry.file_name();
        if file_name != LOCK && file_name != STAGING {
            return Err(refuse(format!(
                "not a dendro dataset (no _manifest.json) and not empty ({:?} is in it): \
                 its files would mix with the export's",
                file_name
            )));
        }
    }
    Ok(Found::Empty)
}

/// Undoes what a killed run left: every data file the manifest does not
/// list, and the staging directory. Returns how many files it removed, or
/// `None` when no run was interrupted (no `_staging/`).
pub(super) fn recover(root: &Path, manifest: &Manifest) -> Result<Option<usize>> {
    let staging = root.join(STAGING);
    if !staging.exists() {
        return Ok(None);
    }
    let name = root.display().to_string();
    let listed: std::collections::HashSet<&str> =
        manifest.files.iter().map(|f| f.path.as_str()).collect();
    let mut removed = 0;
    let mut stack: Vec<(PathBuf, String)> = Vec::new();
    let top = std::fs::read_dir(root).map_err(|e| Error::io(&name, "cannot list", e))?;
    for entry in top {
        let entry = entry.map_err(|e| Error::io(&name, "cannot list", e))?;
        let text = entry.file_name().to_string_lossy().into_owned();
        if text.starts_with("stream=") && entry.path().is_dir() {
            stack.push((entry.path(), text));
        }
    }
    let mut dirs = Vec::new();
    while let Some((dir, relative)) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::io(&name, "cannot list", e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&name, "cannot list", e))?;
            let text = format!("{relative}/{}", entry.file_name().to_string_lossy());
            let kind = entry
                .file_type()
                .map_err(|e| Error::io(&name, "cannot list", e))?;
            if kind.is_dir() {
                stack.push((entry.path(), text));
            } else if !listed.contains(text.as_str()) {
                std::fs::remove_file(entry.path())
                    .map_err(|e| Error::io(&name, &format!("cannot remove {text}"), e))?;
                removed += 1;
            }
        }
        dirs.push(dir);
    }
    // Directories the dead run made and nothing else uses (deepest first;
    // one still holding files stays).
    for dir in dirs.iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
    std::fs::remove_dir_all(&staging).map_err(|e| Error::io(&name, "cannot remove _staging", e))?;
    Ok(Some(removed))
}

/// Writes `bytes` to `root/name` by a temporary name, synced, then renamed
/// over the old one and the directory synced: readers see the old or the
/// new file whole.
pub(super) fn replace_file(root: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let file = root.display().to_string();
    let temporary = root.join(format!("{name}.tmp"));
    let mut out = File::create(&temporary)
        .map_err(|e| Error::io(&file, &format!("cannot create {name}.tmp"), e))?;
    out.write_all(bytes)
        .and_then(|()| out.sync_all())
        .map_err(|e| Error::io(&file, &format!("cannot write {name}.tmp"), e))?;
    std::fs::rename(&temporary, root.join(name))
        .map_err(|e| Error::io(&file, &format!("cannot rename {name}.tmp"), e))?;
    File::open(root)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(&file, "cannot sync the dataset directory", e))
}

/// The manifest as pretty JSON.
pub(super) fn manifest_json(manifest: &Manifest, root: &Path) -> Result<Vec<u8>> {
    serde_json::to_vec_pretty(manifest).map_err(|e| Error::Invalid {
        file: root.display().to_string(),
        message: format!("cannot write the manifest: {e}"),
    })
}
