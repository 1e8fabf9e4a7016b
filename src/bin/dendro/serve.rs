//! `dendro serve`: the built viewer and the given archives over HTTP on
//! 127.0.0.1, with byte ranges so a browser can fetch a large file in parts,
//! and a strong `ETag` on every answer, so a viewer reading an archive in
//! place by ranges notices when the file was replaced between two reads.
//! An archive a writer is appending to is served from consistent images
//! (`super::snapshot`), so a viewer can follow it: `If-None-Match` answers
//! `304` until something is committed, `If-Match` keeps a reader's ranges
//! on one image.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use std::cell::RefCell;
use std::collections::HashMap;

use tiny_http::{Header, Request, Response, Server, StatusCode};

use super::snapshot::{is_live, Image, Live, UNIT};

/// The page's security policy, sent as a header as well as in its markup.
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
                   worker-src 'self' blob:; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; \
                   base-uri 'none'; frame-ancestors 'self'";

/// What is served: the viewer's folder, and archives under `/archives/NAME`.
/// The first archive is also the embedding examples' sample
/// (`/examples/sample.dendro`, what they open unless given `?src=`), so
/// `dendro serve FILE` shows FILE in every example.
pub struct Site {
    pub root: PathBuf,
    pub archives: Vec<PathBuf>,
    /// Images of the archives being written, by path.
    live: RefCell<HashMap<PathBuf, Live>>,
}

impl Site {
    pub fn new(root: PathBuf, archives: Vec<PathBuf>) -> Site {
        Site {
            root,
            archives,
            live: RefCell::new(HashMap::new()),
        }
    }

    fn is_archive(&self, path: &Path) -> bool {
        self.archives.iter().any(|a| a == path)
    }

    /// The URL path an archive is offered under.
    pub fn archive_url(path: &Path) -> String {
        format!(
            "/archives/{}",
            path.file_name().unwrap_or_default().to_string_lossy()
        )
    }

    fn resolve(&self, url_path: &str) -> Option<PathBuf> {
        let path = url_path.split(['?', '#']).next().unwrap_or("/");
        if let Some(name) = path.strip_prefix("/archives/") {
            return self
                .archives
                .iter()
                .find(|a| a.file_name().is_some_and(|f| f.to_string_lossy() == name))
                .cloned();
        }
        if path == EXAMPLES_SAMPLE {
            if let Some(first) = self.archives.first() {
                return Some(first.clone());
            }
        }
        let relative = path.trim_start_matches('/');
        let relative = if relative.is_empty() {
            "index.html"
        } else {
            relative
        };
        let candidate = Path::new(relative);
        // Only plain names below the root: no `..`, no absolute paths.
        if !candidate
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
        {
            return None;
        }
        let full = self.root.join(candidate);
        if full.is_dir() {
            Some(full.join("index.html"))
        } else {
            Some(full)
        }
    }
}

/// The archive the embedding examples open by default (www/examples/).
pub const EXAMPLES_SAMPLE: &str = "/examples/sample.dendro";

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        _ => "application/octet-stream",
    }
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("ASCII header")
}

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

/// Parses a single `bytes=a-b`, `bytes=a-` or `bytes=-n` range against `len`.
#[cfg(test)]
pub fn parse_range(value: &str, len: u64) -> Option<(u64, u64)> {
    match parse_ranges(value, len)?.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// The most ranges one request may ask for, and the most bytes they may
/// add up to, before the server refuses it (416) rather than buffer it.
const MAX_RANGES: usize = 2048;
const MAX_MULTIPART_BYTES: u64 = 64 << 20;

/// Parses `bytes=a-b,c-d,...` (each part `a-b`, `a-` or `-n`) against
/// `len`; `None` when any part is malformed or none can be satisfied.
/// Unsatisfiable parts are dropped, as RFC 9110 allows.
pub fn parse_ranges(value: &str, len: u64) -> Option<Vec<(u64, u64)>> {
    let specs = value.trim().strip_prefix("bytes=")?;
    if len == 0 {
        return None;
    }
    let mut out = Vec::new();
    for spec in specs.split(',') {
        let (start, end) = spec.split_once('-')?;
        let (start, end) = match (start.trim(), end.trim()) {
            ("", suffix) => {
                let n: u64 = suffix.parse().ok()?;
                (len.saturating_sub(n), len - 1)
            }
            (s, "") => (s.parse().ok()?, len - 1),
            (s, e) => {
                let (s, e): (u64, u64) = (s.parse().ok()?, e.parse().ok()?);
                if s > e {
                    return None;
                }
                (s, e.min(len - 1))
            }
        };
        if start < len && start <= end {
            out.push((start, end));
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The separator of a multipart answer's parts: fixed, since every part's
/// length is stated in its `Content-Range` and readers go by that.
const BOUNDARY: &str = "dendro-byteranges-3f1c9a";

/// A `multipart/byteranges` body for `ranges` of `file` (RFC 9110
/// §14.6), or `None` when a read fails.
fn multipart(
    file: &mut (impl Read + Seek),
    ranges: &[(u64, u64)],
    len: u64,
    part_type: &str,
) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    for &(start, end) in ranges {
        body.extend_from_slice(
            format!(
                "\r\n--{BOUNDARY}\r\nContent-Type: {part_type}\r\nContent-Range: bytes {start}-{end}/{len}\r\n\r\n"
            )
            .as_bytes(),
        );
        file.seek(SeekFrom::Start(start)).ok()?;
        let at = body.len();
        body.resize(at + (end - start + 1) as usize, 0);
        file.read_exact(&mut body[at..]).ok()?;
    }
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    Some(body)
}

/// A request header's value, if present.
fn header_of(request: &Request, name: &'static str) -> Option<String> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str().to_string())
}

fn respond(site: &Site, request: Request) {
    let url = request.url().to_string();
    let Some(path) = site.resolve(&url).filter(|p| p.is_file()) else {
        let _ = request.respond(Response::from_string("not found").with_status_code(404));
        return;
    };
    if site.is_archive(&path) && is_live(&path) {
        respond_live(site, &path, request);
        return;
    }
    let Ok(file) = File::open(&path) else {
        let _ = request.respond(Response::from_string("cannot read").with_status_code(500));
        return;
    };
    let Ok(meta) = file.metadata() else {
        let _ = request.respond(Response::from_string("cannot read").with_status_code(500));
        return;
    };
    let len = meta.len();
    let tag = etag(&meta);
    if header_of(&request, "If-Match").is_some_and(|m| m.trim() != tag) {
        let _ = request.respond(Response::empty(412).with_header(header("ETag", &tag)));
        return;
    }
    if header_of(&request, "If-None-Match").is_some_and(|m| m.trim() == tag) {
        let _ = request.respond(Response::empty(304).with_header(header("ETag", &tag)));
        return;
    }
    let headers = vec![
        header("Accept-Ranges", "bytes"),
        header("Content-Security-Policy", CSP),
        header("X-Content-Type-Options", "nosniff"),
        header("Cache-Control", "no-cache"),
        header("ETag", &tag),
    ];
    respond_with_ranges(request, file, len, headers, content_type(&path));
}

/// An archive being written, answered from its images.
fn respond_live(site: &Site, path: &Path, request: Request) {
    let mut live = site.live.borrow_mut();
    let state = live
        .entry(path.to_path_buf())
        .or_insert_with(|| Live::new(path));
    let wanted = header_of(&request, "If-Match");
    let image: std::sync::Arc<Image> = match &wanted {
        Some(tag) => match state.read(tag.trim()) {
            Some(image) => image,
            None => {
                // That state is no longer held: the reader starts again on a newer one.
                let _ = request.respond(Response::empty(412));
                return;
            }
        },
        None => match state.current() {
            Ok(image) => image,
            Err(e) => {
                let _ = request.respond(Response::from_string(e).with_status_code(503));
                return;
            }
        },
    };
    let seen = header_of(&request, "If-None-Match").map(|t| t.trim().to_string());
    if seen.as_deref() == Some(image.etag.as_str()) {
        let _ = request.respond(Response::empty(304).with_header(header("ETag", &image.etag)));
        return;
    }
    // What changed since the image the follower has, held or not.
    let changed = seen.as_deref().and_then(|old| {
        let list = state.changes_between(old, &image.etag)?;
        Some(format!("{old} {UNIT} {list}"))
    });
    drop(live);
    let mut headers = vec![
        header("Accept-Ranges", "bytes"),
        header("X-Content-Type-Options", "nosniff"),
        header("Cache-Control", "no-cache"),
        header("ETag", &image.etag),
        header("Access-Control-Expose-Headers", "ETag, Dendro-Changed"),
    ];
    if let Some(c) = changed {
        headers.push(header("Dendro-Changed", &c));
    }
    respond_with_ranges(
        request,
        image.reader(),
        image.len() as u64,
        headers,
        "application/octet-stream",
    );
}

/// Answers `request` with `body` (`len` bytes of `content_type`) as its
/// `Range` header asks: the whole body without one, one range as a 206, a
/// few as one `multipart/byteranges` 206 (a lazy reader's catalog prefetch
/// asks for its scattered pages this way), and a 416 for anything that
/// cannot be satisfied or would be too large to buffer. Files and a live
/// archive's images are answered by this one function.
fn respond_with_ranges(
    request: Request,
    mut body: impl Read + Seek,
    len: u64,
    mut headers: Vec<Header>,
    content_type: &str,
) {
    let typed = |mut headers: Vec<Header>, value: &str| {
        headers.push(header("Content-Type", value));
        headers
    };
    let result = match header_of(&request, "Range").map(|r| parse_ranges(&r, len)) {
        None => request.respond(Response::new(
            StatusCode(200),
            typed(headers, content_type),
            body,
            Some(len as usize),
            None,
        )),
        Some(Some(ranges)) if ranges.len() == 1 => {
            let (start, end) = ranges[0];
            if body.seek(SeekFrom::Start(start)).is_err() {
                let _ = request.respond(Response::from_string("cannot read").with_status_code(500));
                return;
            }
            let count = end - start + 1;
            headers.push(header(
                "Content-Range",
                &format!("bytes {start}-{end}/{len}"),
            ));
            request.respond(Response::new(
                StatusCode(206),
                typed(headers, content_type),
                body.take(count),
                Some(count as usize),
                None,
            ))
        }
        Some(Some(ranges))
            if ranges.len() <= MAX_RANGES
                && ranges.iter().map(|(s, e)| e - s + 1).sum::<u64>() <= MAX_MULTIPART_BYTES =>
        {
            let Some(parts) = multipart(&mut body, &ranges, len, content_type) else {
                let _ = request.respond(Response::from_string("cannot read").with_status_code(500));
                return;
            };
            let count = parts.len();
            request.respond(Response::new(
                StatusCode(206),
                typed(
                    headers,
                    &format!("multipart/byteranges; boundary={BOUNDARY}"),
                ),
                std::io::Cursor::new(parts),
                Some(count),
                None,
            ))
        }
        Some(_) => {
            let mut response = Response::empty(416);
            response.add_header(header("Content-Range", &format!("bytes */{len}")));
            request.respond(response)
        }
    };
    let _ = result;
}

/// Turns Nagle's algorithm off for the connections `listener` accepts
/// (Linux hands the option down to them). The server writes an answer's
/// headers and its body separately; with Nagle on, a body smaller than a
/// segment waited for the reader's delayed acknowledgement of the headers,
/// about 40 ms a range, and an in-place reader makes its ranged reads one
/// after another.
#[cfg(target_os = "linux")]
fn no_delay(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor, and an option value of the size given.
    let _ = unsafe {
        libc::setsockopt(
            listener.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

#[cfg(not(target_os = "linux"))]
fn no_delay(_: &std::net::TcpListener) {}

/// Serves until the process is stopped. Binds loopback only.
pub fn serve(site: Site, port: u16) -> Result<(), String> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    no_delay(&listener);
    let server = Server::from_listener(listener, None)
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    let bound = server
        .server_addr()
        .to_ip()
        .map(|a| a.port())
        .unwrap_or(port);
    println!(
        "dendro: serving {} on http://127.0.0.1:{bound}/",
        site.root.display()
    );
    for archive in &site.archives {
        println!(
            "dendro: open http://127.0.0.1:{bound}/?url={}",
            Site::archive_url(archive)
        );
    }
    if let Some(first) = site.archives.first() {
        println!(
            "dendro: embedding examples on {} at http://127.0.0.1:{bound}/examples/",
            first.file_name().unwrap_or_default().to_string_lossy()
        );
    }
    for request in server.incoming_requests() {
        respond(&site, request);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn accepted_connections_send_without_delay() {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        no_delay(&listener);
        let _client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        assert!(
            accepted.nodelay().unwrap(),
            "Nagle's algorithm is off for what the server accepts"
        );
    }

    #[test]
    fn ranges_are_parsed_against_the_length() {
        assert_eq!(parse_range("bytes=0-99", 1000), Some((0, 99)));
        assert_eq!(parse_range("bytes=900-", 1000), Some((900, 999)));
        assert_eq!(parse_range("bytes=-100", 1000), Some((900, 999)));
        assert_eq!(parse_range("bytes=990-2000", 1000), Some((990, 999)));
        assert_eq!(parse_range("bytes=1000-", 1000), None);
        assert_eq!(parse_range("bytes=5-1", 1000), None);
        assert_eq!(parse_range("bytes=0-1,5-6", 1000), None);
        assert_eq!(parse_range("items=0-1", 1000), None);
    }

    #[test]
    fn several_ranges_are_parsed_and_answered_as_multipart() {
        assert_eq!(
            parse_ranges("bytes=0-1, 5-6,-2", 1000),
            Some(vec![(0, 1), (5, 6), (998, 999)])
        );
        // Unsatisfiable parts are dropped; a malformed one spoils the lot.
        assert_eq!(parse_ranges("bytes=0-1,2000-", 1000), Some(vec![(0, 1)]));
        assert_eq!(parse_ranges("bytes=2000-", 1000), None);
        assert_eq!(parse_ranges("bytes=0-1,x-2", 1000), None);
        assert_eq!(parse_ranges("bytes=0-1,", 1000), None);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.dendro");
        std::fs::write(&path, b"0123456789").unwrap();
        let mut file = File::open(&path).unwrap();
        let body = multipart(&mut file, &[(1, 2), (7, 9)], 10, "application/octet-stream").unwrap();
        let text = String::from_utf8(body).unwrap();
        let part = |range: &str, data: &str| {
            format!("\r\n--{BOUNDARY}\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes {range}/10\r\n\r\n{data}")
        };
        assert_eq!(
            text,
            format!(
                "{}{}\r\n--{BOUNDARY}--\r\n",
                part("1-2", "12"),
                part("7-9", "789")
            )
        );
    }

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

    #[test]
    fn only_files_below_the_root_or_offered_archives_resolve() {
        let site = Site::new(
            PathBuf::from("/srv/www"),
            vec![PathBuf::from("/data/demo.dendro")],
        );
        assert_eq!(
            site.resolve("/"),
            Some(PathBuf::from("/srv/www/index.html"))
        );
        assert_eq!(
            site.resolve("/app.js?x=1"),
            Some(PathBuf::from("/srv/www/app.js"))
        );
        assert_eq!(site.resolve("/../etc/passwd"), None);
        assert_eq!(site.resolve("/a/../../etc/passwd"), None);
        assert_eq!(
            site.resolve("/archives/demo.dendro"),
            Some(PathBuf::from("/data/demo.dendro"))
        );
        assert_eq!(site.resolve("/archives/other.dendro"), None);
    }

    #[test]
    fn the_examples_sample_is_the_first_archive_offered() {
        let site = Site::new(
            PathBuf::from("/srv/www"),
            vec![
                PathBuf::from("/data/demo.dendro"),
                PathBuf::from("/data/b.dendro"),
            ],
        );
        assert_eq!(
            site.resolve("/examples/sample.dendro?x"),
            Some(PathBuf::from("/data/demo.dendro"))
        );
        // With no archive offered it is a plain file below the root (404 when absent).
        let bare = Site::new(PathBuf::from("/srv/www"), vec![]);
        assert_eq!(
            bare.resolve("/examples/sample.dendro"),
            Some(PathBuf::from("/srv/www/examples/sample.dendro"))
        );
    }
}
