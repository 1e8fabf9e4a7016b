//! `dendro serve` facing slow, many and hostile clients (issue 29): the
//! built binary on 127.0.0.1 with a free port, spoken to over raw TCP so
//! each test controls exactly what a client sends and when it reads.
#![cfg(all(feature = "cli", not(target_arch = "wasm32")))]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A generous bound on any one answer: the machine is shared and loaded.
const PATIENCE: Duration = Duration::from_secs(30);

/// A running `dendro serve`, stopped when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    /// The viewer's folder it said it serves.
    root: String,
    /// The `?url=` values of the `open` lines it printed, in order.
    urls: Vec<String>,
    /// Every line it printed up to the last of those.
    said: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_with(exe: &Path, cwd: &Path, args: &[&str], archives: usize) -> Result<Server, String> {
    let mut child = Command::new(exe)
        .arg("serve")
        .args(["--port", "0"])
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut addr = None;
    let mut root = String::new();
    let mut urls = Vec::new();
    let mut said = Vec::new();
    while addr.is_none() || urls.len() < archives {
        let Some(Ok(line)) = lines.next() else {
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            let _ = child.wait();
            return Err(err);
        };
        said.push(line.clone());
        if let Some((head, rest)) = line.split_once(" on http://127.0.0.1:") {
            root = head.trim_start_matches("dendro: serving ").to_string();
            let port: u16 = rest.trim_end_matches('/').parse().unwrap();
            addr = Some(SocketAddr::from(([127, 0, 0, 1], port)));
        } else if let Some(url) = line.split("/?url=").nth(1) {
            urls.push(query_value(url));
        }
    }
    // The rest of its output is not read; it goes nowhere.
    std::thread::spawn(move || for _ in lines {});
    Ok(Server {
        child,
        addr: addr.unwrap(),
        root,
        urls,
        said,
    })
}

fn serve(root: &Path, archives: &[&Path]) -> Server {
    let mut args = vec!["--root", root.to_str().unwrap()];
    args.extend(archives.iter().map(|a| a.to_str().unwrap()));
    serve_with(
        Path::new(env!("CARGO_BIN_EXE_dendro")),
        root,
        &args,
        archives.len(),
    )
    .unwrap()
}

/// A query value as a browser's `URLSearchParams` reads it.
fn query_value(raw: &str) -> String {
    let raw = raw.split('&').next().unwrap().replace('+', " ");
    String::from_utf8(percent_decode(&raw)).unwrap()
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// A path as a browser's `fetch` sends it: what is not allowed raw in a
/// URL path is percent-encoded.
fn as_fetched(path: &str) -> String {
    let mut out = String::new();
    for &b in path.as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@%".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A web root with a viewer page and a large plain file.
fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), INDEX).unwrap();
    dir
}

const INDEX: &[u8] = b"<!doctype html><title>viewer</title>";

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.set_write_timeout(Some(PATIENCE)).unwrap();
    s
}

/// Sends `head` (request line and headers, without the blank line) and
/// reads one answer; the body by its `Content-Length`, none for `HEAD`.
fn exchange(addr: SocketAddr, head: &str) -> std::io::Result<Reply> {
    let mut s = connect(addr);
    s.write_all(format!("{head}\r\nConnection: close\r\n\r\n").as_bytes())?;
    read_reply(&mut s, head.starts_with("HEAD "))
}

fn read_reply(s: &mut TcpStream, head_only: bool) -> std::io::Result<Reply> {
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line: {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let mut reply = Reply {
        status,
        headers,
        body: Vec::new(),
    };
    let len: usize = reply
        .header("Content-Length")
        .map_or(0, |v| v.parse().unwrap());
    if !head_only && status != 304 {
        reply.body.resize(len, 0);
        r.read_exact(&mut reply.body)?;
    }
    Ok(reply)
}

fn get(server: &Server, path: &str, extra: &str) -> Reply {
    let host = server.addr;
    exchange(
        server.addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {host}{extra}"),
    )
    .unwrap()
}

fn fixture(dir: &Path, name: &str, as_name: &str) -> PathBuf {
    let dest = dir.join(as_name);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::copy(common::fixtures_dir().join(name), &dest).unwrap();
    let mut perms = std::fs::metadata(&dest).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&dest, perms).unwrap();
    dest
}

#[test]
fn a_client_that_never_reads_does_not_delay_another() {
    let root = root();
    // Larger than what the kernel buffers for one connection.
    let big: Vec<u8> = (0..64u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.path().join("big.bin"), &big).unwrap();
    let server = serve(root.path(), &[]);
    let mut stuck = connect(server.addr);
    write!(
        stuck,
        "GET /big.bin HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.addr
    )
    .unwrap();
    // Give the server time to fill that connection's buffers.
    std::thread::sleep(Duration::from_millis(500));
    let reply = exchange(
        server.addr,
        &format!("GET /index.html HTTP/1.1\r\nHost: {}", server.addr),
    )
    .expect("answered while another client does not read");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, INDEX);
    drop(stuck);
}

#[test]
fn a_client_sending_its_headers_a_byte_at_a_time_is_dropped() {
    let root = root();
    let server = serve(root.path(), &[]);
    let mut s = connect(server.addr);
    s.set_read_timeout(Some(Duration::from_millis(250)))
        .unwrap();
    write!(s, "GET / HTTP/1.1\r\nHost: {}\r\nX-Slow: ", server.addr).unwrap();
    let start = Instant::now();
    let limit = Duration::from_secs(120);
    let dropped = loop {
        assert!(
            start.elapsed() < limit,
            "still connected after sending headers for {limit:?}"
        );
        if s.write_all(b"a").is_err() {
            break true;
        }
        let mut buf = [0u8; 256];
        match s.read(&mut buf) {
            // Closed, or answered (408/431) and closed.
            Ok(_) => break true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break true,
        }
    };
    assert!(dropped);
    eprintln!("dropped after {:?}", start.elapsed());
}

#[test]
fn requests_naming_another_host_or_origin_are_refused() {
    let root = root();
    let server = serve(root.path(), &[]);
    let port = server.addr.port();
    // What DNS rebinding looks like: our address, a name of theirs.
    for host in [
        format!("attacker.example:{port}"),
        "attacker.example".to_string(),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
    ] {
        let reply = exchange(
            server.addr,
            &format!("GET /index.html HTTP/1.1\r\nHost: {host}"),
        )
        .unwrap();
        assert!(
            [403, 421].contains(&reply.status),
            "Host {host}: {}",
            reply.status
        );
        assert_ne!(reply.body, INDEX);
    }
    let foreign = get(
        &server,
        "/index.html",
        "\r\nOrigin: http://attacker.example",
    );
    assert_eq!(foreign.status, 403);
    assert_ne!(foreign.body, INDEX);
    // The addresses it is served on, and a same-origin request.
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
    ] {
        let reply = exchange(
            server.addr,
            &format!("GET /index.html HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}"),
        )
        .unwrap();
        assert_eq!(reply.status, 200, "Host {host}");
        assert_eq!(reply.body, INDEX);
    }
}

#[test]
fn a_malformed_range_part_is_ignored_not_refused() {
    let root = root();
    let server = serve(root.path(), &[]);
    for range in ["bytes=0-1,x-2", "bytes=5-1", "bytes=0-1,7", "items=0-1"] {
        let reply = get(&server, "/index.html", &format!("\r\nRange: {range}"));
        assert_eq!(reply.status, 200, "{range}");
        assert_eq!(reply.body, INDEX, "{range}");
    }
    // Well-formed but past the end: that one is unsatisfiable.
    let reply = get(&server, "/index.html", "\r\nRange: bytes=9999-");
    assert_eq!(reply.status, 416);
}

#[test]
fn overlapping_ranges_are_coalesced() {
    let root = root();
    let data: Vec<u8> = (0..1u32 << 20).map(|i| (i % 253) as u8).collect();
    std::fs::write(root.path().join("data.bin"), &data).unwrap();
    let server = serve(root.path(), &[]);
    // Sixty times the whole file: answered once.
    let whole = vec!["0-"; 60].join(",");
    let reply = get(&server, "/data.bin", &format!("\r\nRange: bytes={whole}"));
    assert_eq!(reply.status, 206);
    assert!(
        reply.body.len() <= data.len() + 4096,
        "{} bytes answered for a file of {}",
        reply.body.len(),
        data.len()
    );
    // Two overlapping ranges and one apart: two parts.
    let reply = get(&server, "/data.bin", "\r\nRange: bytes=10-19,15-29,100-109");
    assert_eq!(reply.status, 206);
    let text = String::from_utf8_lossy(&reply.body).into_owned();
    let ranges: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Content-Range: bytes "))
        .collect();
    let len = data.len();
    assert_eq!(
        ranges,
        [format!("10-29/{len}"), format!("100-109/{len}")],
        "{text}"
    );
    // The layout readers parse: each part's headers, its bytes, the close.
    let boundary = reply
        .header("Content-Type")
        .and_then(|t| t.strip_prefix("multipart/byteranges; boundary="))
        .unwrap()
        .to_string();
    let mut expected = Vec::new();
    for (a, b) in [(10usize, 29usize), (100, 109)] {
        expected.extend_from_slice(
            format!("\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes {a}-{b}/{len}\r\n\r\n")
                .as_bytes(),
        );
        expected.extend_from_slice(&data[a..=b]);
    }
    expected.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    assert_eq!(reply.body, expected);
}

#[test]
fn an_archive_named_with_a_space_is_served_at_the_url_given_for_it() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let archive = fixture(dir.path(), "b_multi_source.dendro", "two words.dendro");
    let server = serve(root.path(), &[&archive]);
    let url = &server.urls[0];
    let reply = get(&server, &as_fetched(url), "");
    assert_eq!(reply.status, 200, "{url}");
    assert_eq!(reply.body, std::fs::read(&archive).unwrap());
}

#[test]
fn two_archives_with_the_same_base_name_are_both_reachable() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let a = fixture(dir.path(), "a_single_sealed.dendro", "one/same.dendro");
    let b = fixture(dir.path(), "b_multi_source.dendro", "two/same.dendro");
    let server = serve(root.path(), &[&a, &b]);
    assert_ne!(server.urls[0], server.urls[1]);
    for (url, file) in server.urls.iter().zip([&a, &b]) {
        let reply = get(&server, &as_fetched(url), "");
        assert_eq!(reply.status, 200, "{url}");
        assert_eq!(reply.body, std::fs::read(file).unwrap(), "{url}");
    }
}

#[test]
fn head_has_no_body_and_other_methods_are_refused() {
    let root = root();
    let server = serve(root.path(), &[]);
    let host = server.addr;
    let head = exchange(
        server.addr,
        &format!("HEAD /index.html HTTP/1.1\r\nHost: {host}"),
    )
    .unwrap();
    assert_eq!(head.status, 200);
    assert_eq!(
        head.header("Content-Length"),
        Some(INDEX.len().to_string().as_str())
    );
    for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let reply = exchange(
            server.addr,
            &format!("{method} /index.html HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0"),
        )
        .unwrap();
        assert_eq!(reply.status, 405, "{method}");
        assert_ne!(reply.body, INDEX);
    }
}

#[test]
fn oversized_headers_are_refused_not_buffered() {
    let root = root();
    let server = serve(root.path(), &[]);
    let mut s = connect(server.addr);
    let _ = write!(s, "GET /index.html HTTP/1.1\r\nHost: {}\r\n", server.addr);
    let filler = format!("X-Filler: {}\r\n", "a".repeat(1000));
    // Two MiB of headers; the server may stop reading (and close) early.
    for _ in 0..2048 {
        if s.write_all(filler.as_bytes()).is_err() {
            break;
        }
    }
    let _ = s.write_all(b"\r\n");
    match read_reply(&mut s, false) {
        Ok(reply) => assert!(
            reply.status == 431 || reply.status == 400,
            "{}",
            reply.status
        ),
        Err(e) => assert_ne!(e.kind(), std::io::ErrorKind::WouldBlock, "no answer"),
    }
}

#[test]
fn paths_leaving_the_root_are_refused() {
    let root = root();
    let inner = root.path().join("inner");
    std::fs::create_dir(&inner).unwrap();
    std::fs::write(inner.join("index.html"), b"inner").unwrap();
    std::fs::write(inner.join("secret.txt"), b"below").unwrap();
    let server = serve(&inner, &[]);
    for path in [
        "/../index.html",
        "/..%2findex.html",
        "/%2e%2e/index.html",
        "/secret.txt%00.html",
        "//etc/passwd",
    ] {
        let reply = get(&server, path, "");
        assert!(
            reply.status == 404 || reply.status == 400,
            "{path}: {}",
            reply.status
        );
        assert_ne!(reply.body, INDEX, "{path}");
    }
    let reply = get(&server, "/secret%2Etxt?x=%2F", "");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, b"below");
}

/// The test hook that retires images (`DENDRO_SERVE_TEST_RETIRE`) is
/// compiled in with feature `test-hooks` only: its name is not in the
/// binary a user builds.
#[test]
fn the_retire_hook_is_read_by_test_hook_builds_only() {
    let exe = std::fs::read(env!("CARGO_BIN_EXE_dendro")).unwrap();
    let needle = b"DENDRO_SERVE_TEST_RETIRE";
    let present = exe.windows(needle.len()).any(|w| w == needle);
    assert_eq!(present, cfg!(feature = "test-hooks"));
}

/// The binary and the viewer laid out as an install puts them: `bin/dendro`
/// and `share/dendro/www/`, in a folder of their own.
fn installed(with_viewer: bool) -> (tempfile::TempDir, PathBuf) {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir_in(base).unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let exe = bin.join("dendro");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_dendro"), &exe).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_dendro"), &exe).unwrap();
    }
    if with_viewer {
        let www = dir.path().join("share/dendro/www");
        std::fs::create_dir_all(&www).unwrap();
        std::fs::write(www.join("index.html"), b"installed viewer").unwrap();
    }
    (dir, exe)
}

#[test]
fn without_root_the_viewer_installed_beside_the_binary_is_served() {
    let (dir, exe) = installed(true);
    let elsewhere = tempfile::tempdir().unwrap();
    let server = serve_with(&exe, elsewhere.path(), &[], 0).unwrap();
    let reply = get(&server, "/", "");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, b"installed viewer");
    drop(dir);
}

#[test]
fn without_root_and_no_viewer_the_error_says_where_it_looked() {
    let (dir, exe) = installed(false);
    let elsewhere = tempfile::tempdir().unwrap();
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("www/dist/index.html");
    match serve_with(&exe, elsewhere.path(), &[], 0) {
        Err(message) => {
            let share = dir.path().join("share/dendro/www");
            assert!(message.contains(&share.display().to_string()), "{message}");
            assert!(message.contains("--root"), "{message}");
        }
        // A debug build falls back to the checkout's viewer, when built.
        Ok(server) if cfg!(debug_assertions) && checkout.is_file() => {
            assert_eq!(Path::new(&server.root), checkout.parent().unwrap());
        }
        Ok(_) => panic!("served without a viewer"),
    }
}

/// An archive a writer holds open in WAL mode is answered from images, with
/// the follow protocol's headers as before the server changed: `304` while
/// nothing is committed, the changed units after a commit, `If-Match`
/// ranges on one image, `412` for an image not held.
#[test]
fn a_live_archive_is_followed_with_its_headers() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let archive = fixture(dir.path(), "b_multi_source.dendro", "live.dendro");
    let server = serve(root.path(), &[&archive]);
    let writer = rusqlite::Connection::open(&archive).unwrap();
    writer
        .execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE scratch(n INTEGER PRIMARY KEY, b BLOB);
             INSERT INTO scratch(b) VALUES (randomblob(5000));",
        )
        .unwrap();
    let url = as_fetched(&server.urls[0]);
    let first = get(&server, &url, "");
    assert_eq!(first.status, 200);
    let tag = first.header("ETag").unwrap().to_string();
    assert!(tag.starts_with("\"snap-"), "{tag}");
    let same = get(&server, &url, &format!("\r\nIf-None-Match: {tag}"));
    assert_eq!(same.status, 304);
    assert!(same.body.is_empty());

    writer
        .execute("INSERT INTO scratch(b) VALUES (randomblob(5000))", [])
        .unwrap();
    // Past the burst in which probes share one image.
    std::thread::sleep(Duration::from_millis(200));
    let next = get(&server, &url, &format!("\r\nIf-None-Match: {tag}"));
    assert_eq!(next.status, 200);
    let new_tag = next.header("ETag").unwrap().to_string();
    assert_ne!(new_tag, tag);
    let changed = next.header("Dendro-Changed").expect("changes listed");
    assert!(changed.starts_with(&format!("{tag} 4096 ")), "{changed}");
    assert!(next
        .header("Access-Control-Expose-Headers")
        .is_some_and(|h| h.contains("Dendro-Changed")));

    let part = get(
        &server,
        &url,
        &format!("\r\nIf-Match: {new_tag}\r\nRange: bytes=0-15"),
    );
    assert_eq!(part.status, 206);
    assert_eq!(part.body, next.body[..16]);
    let gone = get(
        &server,
        &url,
        "\r\nIf-Match: \"snap-0-0\"\r\nRange: bytes=0-15",
    );
    assert_eq!(gone.status, 412);
}

/// Many open connections do not each cost the server a thread.
#[cfg(target_os = "linux")]
#[test]
fn many_connections_do_not_each_take_a_thread() {
    let root = root();
    let server = serve(root.path(), &[]);
    let threads = || {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .unwrap()
            .trim()
            .parse::<usize>()
            .unwrap()
    };
    let mut open = Vec::new();
    for _ in 0..100 {
        let mut s = connect(server.addr);
        // A request started and never finished.
        write!(s, "GET / HTTP/1.1\r\nHost: {}\r\n", server.addr).unwrap();
        open.push(s);
    }
    // Whatever it starts for them, it has started by the time it answers.
    let reply = get(&server, "/index.html", "");
    assert_eq!(reply.status, 200);
    let count = threads();
    assert!(count < 20, "{count} threads for 100 connections");
    drop(open);
}

/// A request announcing a body of a gigabyte is answered without the
/// server reading (or holding) that body.
#[test]
fn a_request_body_is_not_read() {
    let root = root();
    let server = serve(root.path(), &[]);
    let mut s = connect(server.addr);
    write!(
        s,
        "GET /index.html HTTP/1.1\r\nHost: {}\r\nContent-Length: 1000000000\r\n\r\nsome",
        server.addr
    )
    .unwrap();
    let reply = read_reply(&mut s, false).unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, INDEX);
}

/// A client that stops reading its answer is dropped once nothing has
/// moved for the server's stall limit (30 s), rather than held forever.
#[test]
fn a_client_that_stops_reading_is_dropped() {
    let root = root();
    let big: Vec<u8> = (0..64u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.path().join("big.bin"), &big).unwrap();
    let server = serve(root.path(), &[]);
    let mut s = connect(server.addr);
    write!(s, "GET /big.bin HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr).unwrap();
    std::thread::sleep(Duration::from_secs(45));
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n,
            // Closed with data unread: a reset.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("neither closed nor answered in full: {e}"),
        }
    }
    assert!(
        got < big.len(),
        "{got} bytes: the whole answer was kept for it"
    );
}

/// `dendro serve DIR`, once it printed the `open` lines of `archives` archives.
fn serve_dir(root: &Path, dir: &Path, archives: usize) -> Server {
    let args = ["--root", root.to_str().unwrap(), dir.to_str().unwrap()];
    serve_with(
        Path::new(env!("CARGO_BIN_EXE_dendro")),
        root,
        &args,
        archives,
    )
    .unwrap()
}

/// One list of the listing (`/archives.json`): "archives" or "skipped".
fn listing_entries(body: &[u8], list: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    v[list].as_array().unwrap().clone()
}

#[test]
fn a_folder_is_served_archive_by_archive_and_its_other_files_named() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = fixture(d, "a_single_sealed.dendro", "host a.dendro");
    let b = fixture(d, "b_multi_source.dendro", "b.data"); // an archive by content, whatever its name
    fixture(d, "i_truncated_half.dendro", "cut.dendro");
    fixture(d, "i_foreign_app.sqlite", "other.sqlite");
    std::fs::write(d.join("notes.txt"), "not an archive").unwrap();
    std::fs::write(d.join("evil\u{1b}[31m<b>.txt"), "words").unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    fixture(d, "h_negative_ts.dendro", "sub/deeper.dendro");
    let outside = tempfile::tempdir().unwrap();
    let far = fixture(outside.path(), "h_negative_ts.dendro", "far.dendro");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&far, d.join("link.dendro")).unwrap();

    let server = serve_dir(root.path(), d, 2);
    // Sorted by name: "b.data" before "host a.dendro".
    // As the page reads them: escaped once more, for its fetch.
    assert_eq!(
        server.urls,
        ["/archives/b.data", "/archives/host%20a.dendro"]
    );
    let said = server.said.join("\n");
    assert!(said.contains(": 2 archive(s), "), "{said}");
    for line in [
        "dendro: skipped notes.txt: not a dendro archive: not a SQLite database",
        "dendro: skipped sub: a folder (only the files directly in the given folder are served)",
        // Escaped on the console: no terminal control sequence gets through.
        "dendro: skipped evil\\u{1b}[31m<b>.txt: not a dendro archive: not a SQLite database",
    ] {
        assert!(said.contains(line), "{line} not in\n{said}");
    }
    // A truncated archive passes the sniff and fails to open: named by its
    // file name alone, not by where the server keeps it.
    let cut = said
        .lines()
        .find(|l| l.starts_with("dendro: skipped cut.dendro: "))
        .unwrap();
    assert!(cut.contains("cut.dendro: the archive is corrupt"), "{cut}");
    assert!(!cut.contains(d.to_str().unwrap()), "{cut}");
    assert!(
        said.contains("dendro: skipped other.sqlite: not a dendro archive"),
        "{said}"
    );
    #[cfg(unix)]
    assert!(
        said.contains("dendro: skipped link.dendro: a link that leads out of the folder"),
        "{said}"
    );

    // The listing the page shows (?list=/archives.json).
    let reply = get(&server, "/archives.json", "");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("Content-Type"), Some("application/json"));
    let archives = listing_entries(&reply.body, "archives");
    let names: Vec<&str> = archives
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b.data", "host a.dendro"]);
    for (entry, file) in archives.iter().zip([&b, &a]) {
        let url = entry["url"].as_str().unwrap();
        assert_eq!(
            entry["bytes"].as_u64().unwrap(),
            std::fs::metadata(file).unwrap().len()
        );
        let reply = get(&server, url, "");
        assert_eq!(reply.status, 200, "{url}");
        assert_eq!(reply.body, std::fs::read(file).unwrap(), "{url}");
    }
    let skipped = listing_entries(&reply.body, "skipped");
    let skipped: Vec<(String, String)> = skipped
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().into(),
                s["reason"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        skipped.contains(&(
            "notes.txt".into(),
            "not a dendro archive: not a SQLite database".into()
        )),
        "{skipped:?}"
    );
    assert!(
        skipped.iter().any(|(n, _)| n == "evil\u{1b}[31m<b>.txt"),
        "{skipped:?}"
    );
    // Nothing in the folder but its archives is reachable, and nothing outside it.
    for path in [
        "/archives/notes.txt",
        "/archives/cut.dendro",
        "/archives/sub/deeper.dendro",
        "/archives/link.dendro",
        "/archives/far.dendro",
    ] {
        assert_eq!(get(&server, &as_fetched(path), "").status, 404, "{path}");
    }
}

#[test]
fn a_folder_of_no_archives_is_served_with_its_files_named() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x").unwrap();
    let server = serve_dir(root.path(), dir.path(), 0);
    assert!(server.urls.is_empty());
    let reply = get(&server, "/archives.json", "");
    assert_eq!(reply.status, 200);
    assert!(listing_entries(&reply.body, "archives").is_empty());
    assert_eq!(listing_entries(&reply.body, "skipped").len(), 1);
}
