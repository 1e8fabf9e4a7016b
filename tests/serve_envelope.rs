//! `dendro serve` as an accelerator (issue 33): the envelope it answers
//! over HTTP against the library's, the header that offers it, and
//! requests that would cost too much refused in words while the server
//! goes on answering everything else.
#![cfg(all(feature = "cli", not(target_arch = "wasm32")))]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use dendro::read::envelope::{ColumnEnvelope, Envelope};
use dendro::read::range::VIEWER_SEGMENT_BUDGET;
use dendro::read::range::{decode_for_range, read_range_bounded, RangeRequest};

/// The built binary serving `archive`, killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(dir: &Path, archive: &Path, env: &[(&str, &str)]) -> Served {
    std::fs::write(dir.join("index.html"), "<!doctype html><title>v</title>").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dendro"))
        .args(["serve", "--port", "0", "--root"])
        .arg(dir)
        .arg(archive)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(Ok(line)) = out.next() {
        if let Some(port) = line.split("on http://127.0.0.1:").nth(1) {
            let port: u16 = port.trim_end_matches('/').parse().unwrap();
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            // What it says next goes nowhere, but must be read: a closed
            // pipe would stop it.
            std::thread::spawn(move || for _ in out {});
            return Served { child, addr };
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("dendro serve said no address");
}

/// Status, headers (lowercased names) and body of one GET.
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn fetch(addr: SocketAddr, target: &str, extra: &str) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let req = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\n{extra}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&all[..split]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Answer {
        status,
        head,
        body: all[split + 4..].to_vec(),
    }
}

/// The answer's body read back (the layout `serve/envelope.rs` writes).
fn decoded(body: &[u8]) -> Envelope {
    let line = body.iter().position(|&b| b == b'\n').unwrap() + 1;
    let head: serde_json::Value = serde_json::from_slice(&body[..line]).unwrap();
    let n = head["points"].as_u64().unwrap() as usize;
    let word = |i: usize| <[u8; 8]>::try_from(&body[line + 8 * i..line + 8 * i + 8]).unwrap();
    let ts = (0..n).map(|i| i64::from_le_bytes(word(i))).collect();
    let columns = head["columns"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let at = n + 2 * n * k;
            ColumnEnvelope {
                name: name.as_str().unwrap().to_string(),
                min: (0..n).map(|i| f64::from_le_bytes(word(at + i))).collect(),
                max: (0..n)
                    .map(|i| f64::from_le_bytes(word(at + n + i)))
                    .collect(),
            }
        })
        .collect();
    assert_eq!(
        body.len(),
        line + 8 * n * (1 + 2 * head["columns"].as_array().unwrap().len())
    );
    let count = |k: &str| head[k].as_u64().unwrap();
    Envelope {
        rows_in_window: count("rows_in_window"),
        live_rows_in_window: count("live_rows_in_window"),
        segments_read: count("segments_read") as usize,
        segments_from_stats: count("segments_from_stats") as usize,
        segments_left_out: count("segments_left_out") as usize,
        rows_left_out: count("rows_left_out"),
        reduced: head["reduced"].as_bool().unwrap(),
        ts,
        columns,
    }
}

/// NaN-aware equality of two envelopes (a gap is NaN on both sides).
fn same(a: &Envelope, b: &Envelope) -> bool {
    let bits = |v: &[f64]| {
        v.iter()
            .map(|x| if x.is_nan() { u64::MAX } else { x.to_bits() })
            .collect::<Vec<_>>()
    };
    let cols = |e: &Envelope| {
        e.columns
            .iter()
            .map(|c| (c.name.clone(), bits(&c.min), bits(&c.max)))
            .collect::<Vec<_>>()
    };
    let counts = |e: &Envelope| {
        (
            e.rows_in_window,
            e.live_rows_in_window,
            e.segments_read,
            e.segments_from_stats,
            e.segments_left_out,
            e.rows_left_out,
            e.reduced,
        )
    };
    a.ts == b.ts && cols(a) == cols(b) && counts(a) == counts(b)
}

/// A demo archive of one host with 60 one-minute segments per stream and a live tail.
fn demo(dir: &Path) -> PathBuf {
    let path = dir.join("demo.dendro");
    let made = Command::new(env!("CARGO_BIN_EXE_dendro"))
        .args(["demo", "--hosts", "1", "--seal-every", "60"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    path
}

fn span(archive: &dendro::Archive) -> (i64, i64) {
    let all = archive.read_snapshot(|s| s.segments(1, "cpu")).unwrap();
    (
        all[0].first_ts,
        all.last().unwrap().last_ts + 60_000_000_000,
    )
}

#[test]
fn the_accelerators_envelope_is_the_librarys_for_the_same_window() {
    let dir = tempfile::tempdir().unwrap();
    let path = demo(dir.path());
    let served = start(dir.path(), &path, &[]);
    let archive = dendro::Archive::open(&path).unwrap();
    let (from, to) = span(&archive);
    let third = (to - from) / 3;
    let cpu = ["load1".to_string(), "user".to_string()];
    /// A window: from, to, points, columns, counters read as rates.
    type Window<'a> = (i64, i64, usize, Option<&'a [String]>, Option<&'a [String]>);
    let windows: [Window<'_>; 5] = [
        (from, to, 800, Some(&cpu), None),
        (from, to, 37, None, None),
        (from + third, to - third, 120, Some(&cpu[..1]), None),
        // Narrow enough that every row is kept.
        (
            from + third,
            from + third + 90_000_000_000,
            800,
            Some(&cpu[..1]),
            None,
        ),
        (from, to, 200, None, Some(&cpu[1..])),
    ];
    for (from, to, points, columns, rates) in windows {
        let request = RangeRequest {
            source_id: 1,
            stream: "cpu",
            from,
            to,
            columns,
            max_points: Some(points),
            rates,
        };
        let stats = |r: &dendro::SegmentRecord| {
            Ok(dendro::read::stats::segment_stats(&archive, r)?.map(Arc::new))
        };
        let budget = Some(VIEWER_SEGMENT_BUDGET);
        let want = read_range_bounded(&archive, &request, budget, stats, |r, c| {
            decode_for_range(&archive, r, c)
        })
        .unwrap();
        let mut query = format!("/archives/demo.dendro?envelope=1&source=1&stream=cpu&from={from}&to={to}&points={points}");
        for c in columns.unwrap_or_default() {
            query.push_str(&format!("&col={c}"));
        }
        if columns.is_some_and(|c| c.is_empty()) {
            query.push_str("&cols=");
        }
        for r in rates.unwrap_or_default() {
            query.push_str(&format!("&rate={r}"));
        }
        let got = fetch(served.addr, &query, "");
        assert_eq!(got.status, 200, "{query}: {}", got.text());
        assert_eq!(
            got.header("content-type").as_deref(),
            Some("application/vnd.dendro.envelope")
        );
        let got = decoded(&got.body);
        assert!(
            want.ts.len() > 1 && want.rows_in_window > 0,
            "{query}: an empty window tests nothing"
        );
        assert!(same(&got, &want), "{query}:\n{got:?}\n{want:?}");
    }
}

#[test]
fn archives_offer_the_accelerator_and_a_changed_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = demo(dir.path());
    let served = start(dir.path(), &path, &[]);
    let archive = fetch(
        served.addr,
        "/archives/demo.dendro",
        "Range: bytes=0-99\r\n",
    );
    assert_eq!(archive.status, 206);
    assert_eq!(archive.header("dendro-envelope").as_deref(), Some("1"));
    let page = fetch(served.addr, "/index.html", "");
    assert_eq!(
        page.header("dendro-envelope"),
        None,
        "only archives offer it"
    );
    let etag = archive.header("etag").unwrap();
    let q = "/archives/demo.dendro?envelope=1&source=1&stream=cpu&from=0&to=9223372036854775807&points=10";
    let fresh = fetch(served.addr, q, &format!("If-Match: {etag}\r\n"));
    assert_eq!(fresh.status, 200, "{}", fresh.text());
    let stale = fetch(served.addr, q, "If-Match: \"0-0-0\"\r\n");
    assert_eq!(stale.status, 412);
    assert!(
        stale.text().contains("changed since the page opened it"),
        "{}",
        stale.text()
    );
}

#[test]
fn hostile_requests_are_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let path = demo(dir.path());
    let served = start(dir.path(), &path, &[]);
    let base = "/archives/demo.dendro?envelope=1&source=1&stream=cpu";
    let full = "from=-9223372036854775808&to=9223372036854775807";
    for (query, status, words) in [
        (
            format!("{base}&{full}&points=100000"),
            400,
            "points must be between 1 and 4096",
        ),
        (
            format!("{base}&from=x&to=1&points=9"),
            400,
            "from must be a whole number",
        ),
        (
            format!("{base}&from=5&to=1&points=9"),
            400,
            "before it starts",
        ),
        (
            format!("{base}&from=1&to=5&points=9&%3Cscript%3E=1"),
            400,
            "unknown parameter",
        ),
        (
            "/archives/demo.dendro?envelope=7".to_string(),
            400,
            "envelope=1 only",
        ),
    ] {
        let got = fetch(served.addr, &query, "");
        assert_eq!(got.status, status, "{query}: {}", got.text());
        assert!(got.text().contains(words), "{query}: {}", got.text());
        assert_eq!(
            got.header("content-type").as_deref(),
            Some("text/plain; charset=utf-8")
        );
    }
}

/// Needs the server's test hook (smaller limits, an envelope held), so it
/// runs with `--features test-hooks` (scripts/test.sh does, once the
/// binary is built with it).
#[cfg(feature = "test-hooks")]
#[test]
fn a_costly_window_and_a_burst_are_refused_and_nothing_else_waits() {
    let dir = tempfile::tempdir().unwrap();
    let path = demo(dir.path());
    // Test-hook limits: two segments decoded at most, one envelope at a
    // time, each held two seconds so a burst meets one running.
    let hooks = [(
        "DENDRO_SERVE_TEST_ENVELOPE",
        "decoded=2,concurrent=1,hold_ms=2000",
    )];
    let served = start(dir.path(), &path, &hooks);
    let base = "/archives/demo.dendro?envelope=1&source=1&stream=cpu";
    let full = "from=-9223372036854775808&to=9223372036854775807";
    let costly = fetch(served.addr, &format!("{base}&{full}&points=800"), "");
    assert_eq!(costly.status, 413, "{}", costly.text());
    assert!(
        costly
            .text()
            .contains("the server decodes at most 2 segments"),
        "{}",
        costly.text()
    );
    // One envelope held; a burst behind it is refused at once, and the
    // archive's bytes are served while it runs.
    let addr = served.addr;
    let one = "from=-9223372036854775808&to=9223372036854775807&points=1";
    let held_query = format!("{base}&{one}");
    let held = std::thread::spawn(move || fetch(addr, &held_query, ""));
    // Time for it to be taken up; the hold is much longer.
    std::thread::sleep(Duration::from_millis(400));
    let mut refused = 0;
    for _ in 0..200 {
        let got = fetch(served.addr, &format!("{base}&{one}"), "");
        if got.status == 503 {
            assert!(
                got.text().contains("computing 1 envelopes already"),
                "{}",
                got.text()
            );
            assert_eq!(got.header("retry-after").as_deref(), Some("1"));
            refused += 1;
            if refused == 16 {
                break;
            }
        }
    }
    assert_eq!(refused, 16, "a burst behind a running envelope is refused");
    let bytes = fetch(
        served.addr,
        "/archives/demo.dendro",
        "Range: bytes=0-4095\r\n",
    );
    assert_eq!((bytes.status, bytes.body.len()), (206, 4096));
    assert!(
        !held.is_finished(),
        "the range was served while the envelope was computed"
    );
    let held = held.join().unwrap();
    assert_eq!(held.status, 200, "{}", held.text());
}
