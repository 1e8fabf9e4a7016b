//! `dendro serve`: the built viewer and the given archives over HTTP on
//! 127.0.0.1, with byte ranges so a browser can fetch a large file in parts,
//! and a strong `ETag` on every answer, so a viewer reading an archive in
//! place by ranges notices when the file was replaced between two reads.
//! An archive a writer is appending to is served from consistent images
//! (`super::snapshot`), so a viewer can follow it: `If-None-Match` answers
//! `304` until something is committed, `If-Match` keeps a reader's ranges
//! on one image.
//!
//! It faces whatever else runs on the machine, browsers' pages included:
//! requests must name this server (`Host`, `Origin`), and every connection
//! is bounded in what it can make the server hold and wait for
//! ([`net::Limits`]).

mod answer;
mod dir;
mod envelope;
mod net;
mod ranges;

pub use dir::{archives_in, Skipped, MAX_ENTRIES};

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::snapshot;

/// What is served: the viewer's folder, and archives under
/// `/archives/NAME` (`/archives/K/NAME` for the K-th archive given when an
/// earlier one has the same name), listed with the files a folder held
/// that are not archives at `/archives.json` (what `?list=` shows). The first archive is also the
/// embedding examples' sample (`/examples/sample.dendro`, what they open
/// unless given `?src=`), so `dendro serve FILE` shows FILE in every
/// example.
pub struct Site {
    pub root: PathBuf,
    /// The root with its links resolved: what a file served must be under.
    canonical_root: PathBuf,
    archives: Vec<Offered>,
    /// Files of the folders given that are not offered, and why.
    skipped: Vec<Skipped>,
    /// Images of the archives being written, by path.
    live: Mutex<HashMap<PathBuf, snapshot::Live>>,
    /// The port served on, which `Host` and `Origin` must name.
    port: u16,
    /// The accelerator's bounds and the envelopes being computed.
    envelopes: Envelopes,
}

/// What [`envelope`] requests may cost, and the permits of those running.
struct Envelopes {
    limits: envelope::Limits,
    running: Arc<tokio::sync::Semaphore>,
    /// A test hook's hold on each computation, in milliseconds.
    hold_ms: u64,
}

/// An archive and the (decoded) URL path it is offered at.
struct Offered {
    path: PathBuf,
    url: String,
}

/// What a URL path names.
#[derive(Debug, PartialEq, Eq)]
pub enum Target {
    Archive(PathBuf),
    File(PathBuf),
    /// The offered archives and the skipped files, as JSON.
    Listing,
}

/// Where the listing of what is offered is served.
pub const LISTING: &str = "/archives.json";

impl Site {
    pub fn new(root: PathBuf, archives: Vec<PathBuf>) -> Site {
        let mut offered: Vec<Offered> = Vec::new();
        for (k, path) in archives.into_iter().enumerate() {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let mut url = format!("/archives/{name}");
            if offered.iter().any(|o| o.url == url) {
                url = format!("/archives/{}/{name}", k + 1);
            }
            offered.push(Offered { path, url });
        }
        Site {
            canonical_root: root.canonicalize().unwrap_or_else(|_| root.clone()),
            root,
            archives: offered,
            skipped: Vec::new(),
            live: Mutex::new(HashMap::new()),
            port: 0,
            envelopes: {
                let (limits, hold_ms) = envelope::Limits::from_env();
                Envelopes {
                    running: Arc::new(tokio::sync::Semaphore::new(limits.concurrent)),
                    limits,
                    hold_ms,
                }
            },
        }
    }

    /// The site, also listing these files as skipped.
    pub fn skipping(mut self, skipped: Vec<Skipped>) -> Site {
        self.skipped = skipped;
        self
    }

    /// `/archives.json`: `{"archives": [{"name", "url", "bytes"}], "skipped":
    /// [{"name", "reason"}]}`, each `url` escaped for `fetch` as it is.
    pub fn listing(&self) -> String {
        let archives: Vec<serde_json::Value> = self
            .archives
            .iter()
            .map(|o| {
                let name = o.path.file_name().unwrap_or_default().to_string_lossy();
                let bytes = std::fs::metadata(&o.path).map_or(0, |m| m.len());
                serde_json::json!({ "name": name, "url": escaped(&o.url), "bytes": bytes })
            })
            .collect();
        let skipped: Vec<serde_json::Value> = self
            .skipped
            .iter()
            .map(|s| serde_json::json!({ "name": s.name, "reason": s.reason }))
            .collect();
        serde_json::json!({ "archives": archives, "skipped": skipped }).to_string()
    }

    /// The page's address for each archive (`/?url=...`), escaped so that a
    /// browser's `URLSearchParams` then `fetch` request exactly the path
    /// it is served at, whatever its name holds.
    pub fn open_urls(&self) -> Vec<String> {
        self.archives
            .iter()
            .map(|o| format!("/?url={}", escaped(&escaped(&o.url))))
            .collect()
    }

    /// Whether `host` (a `Host` header, an `Origin` without its scheme)
    /// names this server: a loopback name and the port served on.
    fn is_own_host(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let port = self.port.to_string();
        ["127.0.0.1", "localhost", "[::1]"].iter().any(|name| {
            host.strip_prefix(name).is_some_and(|rest| {
                rest.strip_prefix(':') == Some(port.as_str())
                    || (rest.is_empty() && self.port == 80)
            })
        })
    }

    /// The archive or file a decoded URL path names: only plain names below
    /// the root (no `..`, no absolute paths, nothing a link leads out of),
    /// or an offered archive.
    fn resolve(&self, path: &str) -> Option<Target> {
        if path == LISTING {
            return Some(Target::Listing);
        }
        if let Some(o) = self.archives.iter().find(|o| o.url == path) {
            return Some(Target::Archive(o.path.clone()));
        }
        if path == EXAMPLES_SAMPLE {
            if let Some(first) = self.archives.first() {
                return Some(Target::Archive(first.path.clone()));
            }
        }
        let relative = path.trim_start_matches('/');
        let relative = if relative.is_empty() {
            "index.html"
        } else {
            relative
        };
        let candidate = Path::new(relative);
        if !candidate
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
        {
            return None;
        }
        let mut full = self.root.join(candidate);
        if full.is_dir() {
            full = full.join("index.html");
        }
        let real = dir::inside(&self.canonical_root, &full)?;
        real.is_file().then_some(Target::File(full))
    }
}

/// `text` with everything but unreserved characters and `/` as `%XX`.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The archive the embedding examples open by default (www/examples/).
pub const EXAMPLES_SAMPLE: &str = "/examples/sample.dendro";

/// A strong validator for the file as it is now: its length, modification
/// time (nanoseconds) and, on Unix, its inode, so a rewrite in place or a
/// replacement by rename both change it. Unchanged files keep theirs.
pub fn etag(meta: &std::fs::Metadata) -> String {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0u64;
    format!("\"{:x}-{modified:x}-{inode:x}\"", meta.len())
}

/// The viewer's folder: `given` (`--root`) if any; else the one installed
/// beside the binary (`BIN/../share/dendro/www`, as `cargo install` and a
/// package lay out `bin/` and `share/`); else, in a debug build only, the
/// checkout's `www/dist` (a release binary never looks in the folder it
/// was built in). The error names every folder looked in.
pub fn viewer_root(given: Option<PathBuf>) -> Result<PathBuf, String> {
    let has_viewer = |dir: &Path| dir.join("index.html").is_file();
    if let Some(root) = given {
        return if has_viewer(&root) {
            Ok(root)
        } else {
            Err(format!(
                "{}: no built viewer here (no index.html); `npm run build:www` writes one to www/dist",
                root.display()
            ))
        };
    }
    let mut looked = Vec::new();
    let exe = std::env::current_exe().ok();
    if let Some(prefix) = exe.as_deref().and_then(Path::parent).and_then(Path::parent) {
        looked.push(prefix.join("share/dendro/www"));
    }
    #[cfg(debug_assertions)]
    looked.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("www/dist"));
    if let Some(found) = looked.iter().find(|d| has_viewer(d)) {
        return Ok(found.clone());
    }
    let places: Vec<String> = looked.iter().map(|d| d.display().to_string()).collect();
    Err(format!(
        "no built viewer found (looked in {}); give its folder with --root DIR \
         (`npm run build:www` writes one to www/dist), or install it as share/dendro/www beside bin/dendro",
        places.join(", ")
    ))
}

/// Serves until the process is stopped. Binds loopback only.
pub fn serve(mut site: Site, port: u16) -> Result<(), String> {
    let cannot = |e: std::io::Error| format!("cannot listen on 127.0.0.1:{port}: {e}");
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).map_err(cannot)?;
    listener.set_nonblocking(true).map_err(cannot)?;
    net::small_send_buffers(&listener);
    let bound = listener.local_addr().map_err(cannot)?.port();
    site.port = bound;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        // Live archives' images are taken on these, a few at a time.
        .max_blocking_threads(4)
        .build()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    println!(
        "dendro: serving {} on http://127.0.0.1:{bound}/",
        site.root.display()
    );
    for url in site.open_urls() {
        println!("dendro: open http://127.0.0.1:{bound}{url}");
    }
    if site.archives.len() > 1 || !site.skipped.is_empty() {
        println!("dendro: every archive listed at http://127.0.0.1:{bound}/?list={LISTING}");
    }
    if let Some(first) = site.archives.first() {
        println!(
            "dendro: embedding examples on {} at http://127.0.0.1:{bound}/examples/",
            first.path.display()
        );
    }
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(cannot)?;
        net::run(listener, Arc::new(site), net::Limits::default()).await;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_etag_is_strong_stable_and_changes_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.dendro");
        std::fs::write(&path, b"one").unwrap();
        let first = etag(&std::fs::metadata(&path).unwrap());
        assert!(first.starts_with('"') && first.ends_with('"'), "{first}");
        assert_eq!(first, etag(&std::fs::metadata(&path).unwrap()));
        // Same length, new content, replaced by rename: a new file.
        let other = dir.path().join("b.dendro");
        std::fs::write(&other, b"two").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_ne!(first, etag(&std::fs::metadata(&path).unwrap()));
        // Appended to in place.
        let before = etag(&std::fs::metadata(&path).unwrap());
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"!"))
            .unwrap();
        assert_ne!(before, etag(&std::fs::metadata(&path).unwrap()));
    }

    /// A root with `index.html`, `app.js` and `sub/index.html`.
    fn www() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        for f in ["index.html", "app.js", "sub/index.html"] {
            std::fs::write(dir.path().join(f), f).unwrap();
        }
        dir
    }

    /// The site of the files `www` wrote, offering these archives.
    fn offering(dir: &tempfile::TempDir, archives: &[&str]) -> Site {
        let archives = archives.iter().map(PathBuf::from).collect();
        Site::new(dir.path().to_path_buf(), archives)
    }

    #[test]
    fn only_files_below_the_root_or_offered_archives_resolve() {
        let dir = www();
        let root = dir.path().to_path_buf();
        let site = Site::new(root.clone(), vec![PathBuf::from("/data/demo.dendro")]);
        let file = |p: &str| Some(Target::File(root.join(p)));
        assert_eq!(site.resolve("/"), file("index.html"));
        assert_eq!(site.resolve("/app.js"), file("app.js"));
        assert_eq!(site.resolve("/sub"), file("sub/index.html"));
        assert_eq!(site.resolve("/../etc/passwd"), None);
        assert_eq!(site.resolve("/a/../../etc/passwd"), None);
        assert_eq!(site.resolve("/missing.js"), None);
        assert_eq!(
            site.resolve("/archives/demo.dendro"),
            Some(Target::Archive(PathBuf::from("/data/demo.dendro")))
        );
        assert_eq!(site.resolve("/archives/other.dendro"), None);
        #[cfg(unix)]
        {
            // A link below the root that leads out of it.
            let outside = tempfile::tempdir().unwrap();
            std::fs::write(outside.path().join("secret"), "x").unwrap();
            std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
            assert_eq!(site.resolve("/out/secret"), None);
        }
    }

    #[test]
    fn the_examples_sample_is_the_first_archive_offered() {
        let dir = www();
        let site = offering(&dir, &["/data/demo.dendro", "/data/b.dendro"]);
        assert_eq!(
            site.resolve("/examples/sample.dendro"),
            Some(Target::Archive(PathBuf::from("/data/demo.dendro")))
        );
        // With no archive offered it is a plain file below the root (404 when absent).
        let bare = offering(&dir, &[]);
        assert_eq!(bare.resolve("/examples/sample.dendro"), None);
    }

    #[test]
    fn archives_with_one_name_get_distinct_urls_escaped_for_the_page() {
        let dir = www();
        let site = offering(&dir, &["/a/x y.dendro", "/b/x y.dendro", "/c/100%&.dendro"]);
        assert_eq!(
            site.open_urls(),
            [
                "/?url=/archives/x%2520y.dendro",
                "/?url=/archives/2/x%2520y.dendro",
                "/?url=/archives/100%2525%2526.dendro",
            ]
        );
        assert_eq!(
            site.resolve("/archives/2/x y.dendro"),
            Some(Target::Archive(PathBuf::from("/b/x y.dendro")))
        );
    }

    #[test]
    fn only_the_served_address_is_its_own_host() {
        let mut site = Site::new(PathBuf::from("/srv"), vec![]);
        site.port = 8123;
        for ok in [
            "127.0.0.1:8123",
            "localhost:8123",
            "LocalHost:8123",
            "[::1]:8123",
        ] {
            assert!(site.is_own_host(ok), "{ok}");
        }
        for bad in [
            "127.0.0.1",
            "127.0.0.1:81234",
            "127.0.0.1:8124",
            "evil.example:8123",
            "localhost.evil.example:8123",
            "127.0.0.1.nip.io:8123",
            "",
        ] {
            assert!(!site.is_own_host(bad), "{bad}");
        }
        site.port = 80;
        assert!(site.is_own_host("localhost"));
    }
}
