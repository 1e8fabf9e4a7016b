//! TLS on the TCP transport: a pinned or CA-signed publisher replicates
//! as plain TCP does; every mismatch (plaintext against TLS either way, a
//! wrong, expired or misnamed certificate, a client certificate not on the
//! list) is refused with the peer and the cause, and no replica appears.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use dendro::replicate::tls::{self, ClientTls, SelfSigned, Trust, DAY};
use dendro::replicate::transport::{
    replicate_tcp, serve_tcp_with, PublishOptions, Replica, SubscribeOptions,
};
use dendro::ClockOffset;

use crate::round_trip::assert_replica;
use crate::snapshot::origin;
use crate::support::fixture_encoder;

/// A self-signed pair for 127.0.0.1 written to `dir` as NAME.crt and
/// NAME.key, valid from `from` days to `to` days from now.
fn pair(dir: &Path, name: &str, from: i64, to: i64) -> (PathBuf, PathBuf, SelfSigned) {
    let now = SystemTime::now();
    let at = |days: i64| match days < 0 {
        true => now - DAY * days.unsigned_abs() as u32,
        false => now + DAY * days as u32,
    };
    let made =
        tls::self_signed(&["127.0.0.1".into(), "localhost".into()], at(from), at(to)).unwrap();
    let (cert, key) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&cert, &made.cert_pem).unwrap();
    std::fs::write(&key, &made.key_pem).unwrap();
    (cert, key, made)
}

/// A finished origin in `dir`.
fn finished_origin(dir: &Path) -> PathBuf {
    let path = dir.join("o.dendro");
    let (writer, source, ts) = origin(&path, 2);
    source.finalize(ClockOffset { ts, offset_ns: 2 }).unwrap();
    writer.join().unwrap();
    path
}

/// Serves `archive` with `tls` on a thread; its address, its log and its stop.
fn serve(
    archive: &Path,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> (SocketAddr, Arc<Mutex<Vec<String>>>, &'static AtomicBool) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let lines = Arc::clone(&log);
    let options = PublishOptions {
        interval: Duration::from_millis(10),
        tls,
        handshake_timeout: Duration::from_secs(2),
        log: Arc::new(move |line: &str| lines.lock().unwrap().push(line.to_string())),
        ..PublishOptions::default()
    };
    let stop: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let archive = archive.to_path_buf();
    std::thread::spawn(move || serve_tcp_with(&archive, listener, &options, stop));
    (addr, log, stop)
}

/// Follows `addr` into a new replica in `dir` until its origin is
/// finalized there, or until the first error; the replica, the snapshot
/// count and the errors.
fn follow(dir: &Path, addr: SocketAddr, tls: Option<ClientTls>) -> (PathBuf, u64, Vec<String>) {
    let out = dir.join("r.dendro");
    let mut replica = Replica::new(&out, fixture_encoder());
    let stop = AtomicBool::new(false);
    let mut errors = Vec::new();
    let options = SubscribeOptions {
        tls,
        idle_timeout: Duration::from_secs(5),
        ..SubscribeOptions::default()
    };
    replicate_tcp(
        &mut replica,
        addr,
        &options,
        &stop,
        |applied, _| {
            if applied.finalized > 0 {
                stop.store(true, Ordering::Relaxed);
            }
        },
        |e| {
            errors.push(e.to_string());
            stop.store(true, Ordering::Relaxed);
        },
    )
    .unwrap();
    let snapshots = replica.snapshots();
    if errors.is_empty() {
        replica.finish().unwrap();
    }
    (out, snapshots, errors)
}

/// The publisher's log once it has a line containing `what` (it logs from
/// the peer's thread, a moment after the subscriber saw the refusal).
fn logged(log: &Mutex<Vec<String>>, what: &str) -> String {
    for _ in 0..100 {
        if let Some(line) = log.lock().unwrap().iter().find(|l| l.contains(what)) {
            return line.clone();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no log line with {what:?}: {:?}", log.lock().unwrap());
}

fn pin(made: &SelfSigned) -> Trust {
    Trust::Pin(tls::parse_fingerprint(&made.fingerprint).unwrap())
}

#[test]
fn a_pinned_publisher_replicates_over_tls_from_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let archive = finished_origin(dir.path());
    let (cert, key, made) = pair(dir.path(), "server", -1, 30);
    let (addr, _log, stop) = serve(
        &archive,
        Some(tls::server_config(&cert, &key, None).unwrap()),
    );
    let client = tls::client_config(&pin(&made), "127.0.0.1", None).unwrap();
    let (out, snapshots, errors) = follow(dir.path(), addr, Some(client));
    stop.store(true, Ordering::Relaxed);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(snapshots, 1);
    assert_replica(&archive, &out);
}

#[test]
fn a_ca_signed_publisher_is_trusted_for_its_name_only() {
    let dir = tempfile::tempdir().unwrap();
    let archive = finished_origin(dir.path());
    let (cert, key, _) = pair(dir.path(), "server", -1, 30);
    let (addr, _log, stop) = serve(
        &archive,
        Some(tls::server_config(&cert, &key, None).unwrap()),
    );
    let ca = Trust::Ca(cert.clone());
    let client = tls::client_config(&ca, "127.0.0.1", None).unwrap();
    let (out, _, errors) = follow(dir.path(), addr, Some(client));
    assert!(errors.is_empty(), "{errors:?}");
    assert_replica(&archive, &out);
    std::fs::remove_file(&out).unwrap();
    let misnamed = tls::client_config(&ca, "replica.example", None).unwrap();
    let (out, _, errors) = follow(dir.path(), addr, Some(misnamed));
    stop.store(true, Ordering::Relaxed);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains(&addr.to_string()), "{}", errors[0]);
    assert!(errors[0].contains("not valid for name"), "{}", errors[0]);
    assert!(!out.exists());
}

#[test]
fn a_plaintext_subscriber_to_a_tls_publisher_is_refused_both_ends_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let archive = finished_origin(dir.path());
    let (cert, key, _) = pair(dir.path(), "server", -1, 30);
    let (addr, log, stop) = serve(
        &archive,
        Some(tls::server_config(&cert, &key, None).unwrap()),
    );
    let (out, _, errors) = follow(dir.path(), addr, None);
    stop.store(true, Ordering::Relaxed);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains(&addr.to_string()), "{}", errors[0]);
    assert!(errors[0].contains("speaks TLS"), "{}", errors[0]);
    assert!(!out.exists());
    let line = logged(&log, "refused");
    assert!(line.contains("plaintext to a TLS publisher"), "{line}");
}

#[test]
fn a_tls_subscriber_to_a_plaintext_publisher_is_refused_both_ends_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let archive = finished_origin(dir.path());
    let (_, _, made) = pair(dir.path(), "server", -1, 30);
    let (addr, log, stop) = serve(&archive, None);
    let client = tls::client_config(&pin(&made), "127.0.0.1", None).unwrap();
    let (out, _, errors) = follow(dir.path(), addr, Some(client));
    stop.store(true, Ordering::Relaxed);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains(&addr.to_string()), "{}", errors[0]);
    assert!(
        errors[0].contains("speaks plaintext, not TLS"),
        "{}",
        errors[0]
    );
    assert!(!out.exists());
    let line = logged(&log, "refused");
    assert!(
        line.contains("speaks TLS to a plaintext publisher"),
        "{line}"
    );
}

#[test]
fn a_certificate_that_is_not_the_pinned_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let archive = finished_origin(dir.path());
    let (cert, key, _) = pair(dir.path(), "server", -1, 30);
    let (_, _, other) = pair(dir.path(), "other", -1, 30);
    let (addr, _log, stop) = serve(
        &archive,
        Some(tls::server_config(&cert, &key, None).unwrap()),
    );
    let client = tls::client_config(&pin(&other), "127.0.0.1", None).unwrap();
    let (out, _, errors) = follow(dir.path(), addr, Some(client));
    stop.store(true, Ordering::Relaxed);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains(&addr.to_string()), "{}", errors[0]);
    assert!(errors[0].contains("is not the pinned one"), "{}", errors[0]);
    assert!(!out.exists());
}

#[test]
fn an_expired_certificate_is_refused_even_when_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let archive = finished_origin(dir.path());
    let (cert, key, made) = pair(dir.path(), "server", -30, -2);
    let (addr, _log, stop) = serve(
        &archive,
        Some(tls::server_config(&cert, &key, None).unwrap()),
    );
    for trust in [pin(&made), Trust::Ca(cert.clone())] {
        let client = tls::client_config(&trust, "127.0.0.1", None).unwrap();
        let (out, _, errors) = follow(dir.path(), addr, Some(client));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains(&addr.to_string()), "{}", errors[0]);
        assert!(
            errors[0].to_lowercase().contains("expired"),
            "{}",
            errors[0]
        );
        assert!(!out.exists());
    }
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn only_subscribers_with_a_listed_certificate_are_let_in() {
    let dir = tempfile::tempdir().unwrap();
    let archive = finished_origin(dir.path());
    let (cert, key, made) = pair(dir.path(), "server", -1, 30);
    let (known_cert, known_key, _) = pair(dir.path(), "known", -1, 30);
    let (stranger_cert, stranger_key, _) = pair(dir.path(), "stranger", -1, 30);
    let config = tls::server_config(&cert, &key, Some(&known_cert)).unwrap();
    let (addr, log, stop) = serve(&archive, Some(config));
    // Not on the list: refused, the publisher saying why.
    let stranger = tls::client_config(
        &pin(&made),
        "127.0.0.1",
        Some((&stranger_cert, &stranger_key)),
    )
    .unwrap();
    let (out, _, errors) = follow(dir.path(), addr, Some(stranger));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains(&addr.to_string()), "{}", errors[0]);
    assert!(!out.exists());
    let line = logged(&log, "TLS handshake failed");
    assert!(line.contains("refused"), "{line}");
    // No certificate at all: refused too.
    let anonymous = tls::client_config(&pin(&made), "127.0.0.1", None).unwrap();
    let (out, _, errors) = follow(dir.path(), addr, Some(anonymous));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(!out.exists());
    // On the list: let in.
    let known =
        tls::client_config(&pin(&made), "127.0.0.1", Some((&known_cert, &known_key))).unwrap();
    let (out, _, errors) = follow(dir.path(), addr, Some(known));
    stop.store(true, Ordering::Relaxed);
    assert!(errors.is_empty(), "{errors:?}");
    assert_replica(&archive, &out);
}

#[test]
fn a_fingerprint_is_read_with_or_without_colons_and_refused_otherwise() {
    let hex = "ab".repeat(32);
    let colons = vec!["AB"; 32].join(":");
    assert_eq!(tls::parse_fingerprint(&hex).unwrap(), [0xab; 32]);
    assert_eq!(tls::parse_fingerprint(&colons).unwrap(), [0xab; 32]);
    assert!(tls::parse_fingerprint("abc").is_err());
    assert!(tls::parse_fingerprint(&"zz".repeat(32)).is_err());
}
