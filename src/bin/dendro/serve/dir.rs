//! `dendro serve DIR`: every archive in a folder, found by content.
//!
//! Each file directly in the folder is sniffed (its first 100 bytes, as an
//! open checks them first) and then opened; what is not an archive this
//! build reads is skipped with the reason, for the console and for the
//! page's listing (`/archives.json`). Only files whose real path is inside
//! the folder are offered: a link that leads out of it is skipped, with
//! the same check the viewer's own files pass (`inside`).

use std::path::{Path, PathBuf};

use dendro::container::Archive;

/// Entries of one folder looked at, at most: a folder of a million files
/// is listed in part, and the rest counted, rather than sniffed for minutes.
pub const MAX_ENTRIES: usize = 10_000;

/// A file in the folder that is not offered, and why, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file's name in the folder (lossy UTF-8).
    pub name: String,
    pub reason: String,
}

/// What a folder offers.
#[derive(Debug, Default)]
pub struct Found {
    /// Archives, sorted by name.
    pub archives: Vec<PathBuf>,
    /// Files skipped, sorted by name.
    pub skipped: Vec<Skipped>,
    /// Entries past MAX_ENTRIES, not looked at.
    pub not_looked_at: usize,
}

/// `candidate`'s real path when it is inside `canonical_root` (links
/// resolved), else None.
pub fn inside(canonical_root: &Path, candidate: &Path) -> Option<PathBuf> {
    let real = candidate.canonicalize().ok()?;
    real.starts_with(canonical_root).then_some(real)
}

/// The archives directly in `dir` (sorted by name) and the files skipped.
pub fn archives_in(dir: &Path) -> Result<Found, String> {
    let cannot = |e: std::io::Error| format!("{}: cannot list the folder: {e}", dir.display());
    let root = dir.canonicalize().map_err(cannot)?;
    let mut entries: Vec<PathBuf> = Vec::new();
    let mut found = Found::default();
    for entry in std::fs::read_dir(dir).map_err(cannot)? {
        let entry = entry.map_err(cannot)?;
        if entries.len() >= MAX_ENTRIES {
            found.not_looked_at += 1;
            continue;
        }
        entries.push(entry.path());
    }
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        match offered(&root, &path) {
            Ok(()) => found.archives.push(path),
            Err(reason) => {
                // The listing goes to a page: it names the file, not where
                // the server keeps it.
                let reason = [&path, &root.join(&name)]
                    .iter()
                    .fold(reason, |r, p| r.replace(&p.display().to_string(), &name));
                found.skipped.push(Skipped { name, reason });
            }
        }
    }
    Ok(found)
}

/// Whether the file at `path` is an archive to offer: inside the folder, a
/// file, stamped as an archive this build reads, and one that opens.
fn offered(root: &Path, path: &Path) -> Result<(), String> {
    let Some(real) = inside(root, path) else {
        return Err("a link that leads out of the folder".to_string());
    };
    if !real.is_file() {
        return Err(if real.is_dir() {
            "a folder (only the files directly in the given folder are served)".to_string()
        } else {
            "not a regular file".to_string()
        });
    }
    let kind = dendro::container::sniff(&real).map_err(|e| e.to_string())?;
    if !kind.is_readable() {
        return Err(kind.to_string());
    }
    Archive::open(&real).map(drop).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_archives_inside_the_folder_are_offered_and_the_rest_named() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("notes.txt"), "hello").unwrap();
        std::fs::write(d.join("empty.dendro"), "").unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        let found = archives_in(d).unwrap();
        assert!(found.archives.is_empty());
        let names: Vec<&str> = found.skipped.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["empty.dendro", "notes.txt", "sub"]);
        assert_eq!(
            found.skipped[0].reason,
            "not a dendro archive: the file is empty"
        );
        assert_eq!(
            found.skipped[1].reason,
            "not a dendro archive: not a SQLite database"
        );
        assert!(found.skipped[2].reason.starts_with("a folder"));
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(outside.path().join("x"), "x").unwrap();
            std::os::unix::fs::symlink(outside.path().join("x"), d.join("link")).unwrap();
            let found = archives_in(d).unwrap();
            let link = found.skipped.iter().find(|s| s.name == "link").unwrap();
            assert_eq!(link.reason, "a link that leads out of the folder");
        }
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_it() {
        let err = archives_in(Path::new("/no/such/folder")).unwrap_err();
        assert!(
            err.starts_with("/no/such/folder: cannot list the folder"),
            "{err}"
        );
    }
}
