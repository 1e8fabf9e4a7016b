//! `dendro publish` and `dendro subscribe`: replication from the command
//! line, over TCP, a file or a pipe (`WIRE.md`). Parsing and presentation
//! only; the transports live in `dendro::replicate::transport`.

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use dendro::replicate::tls::{self, Trust};
use dendro::replicate::transport::{
    apply_stream, check_address, check_file, publish_live, replicate_tcp, serve_tcp_with,
    write_catch_up, PublishOptions, Replica, SubscribeOptions,
};
use dendro::replicate::{Applied, Subscriber, VerbatimOnly, Verification};
use dendro::Error;

use crate::Failure;

/// Where `dendro publish` sends the stream.
#[derive(Args)]
#[group(required = true, multiple = false)]
struct PublishTo {
    /// Serve subscribers that connect to this address, live.
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<SocketAddr>,
    /// Write the catch-up stream to this file (which must not exist), for
    /// shipping by any means.
    #[arg(long, value_name = "PATH")]
    to: Option<PathBuf>,
    /// Write the stream to standard output (the catch-up; live with --follow).
    #[arg(long)]
    stdout: bool,
}

/// `dendro publish`'s arguments.
#[derive(Args)]
pub struct PublishArgs {
    /// The archive to publish (it may be being written).
    file: PathBuf,
    #[command(flatten)]
    to: PublishTo,
    /// With --stdout, keep publishing live after the catch-up.
    #[arg(long, requires = "stdout")]
    follow: bool,
    /// Milliseconds between live intervals (one Rows frame per source each).
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
    /// With --listen: milliseconds a subscriber may take to accept one
    /// part of the stream (a few MB at most) before it is dropped.
    #[arg(long, default_value_t = 30_000, value_name = "MS")]
    write_timeout_ms: u64,
    /// With --listen: the most subscribers served at once; one more is
    /// closed at once (and retries with back-off).
    #[arg(long, default_value_t = 32, value_name = "N")]
    max_subscribers: usize,
    /// Allow an address that is not loopback without TLS (the stream is
    /// then neither authenticated nor encrypted). With TLS any address is
    /// allowed.
    #[arg(long)]
    allow_remote: bool,
    /// With --listen: serve over TLS with this certificate chain (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Let in only subscribers that present one of the certificates in
    /// this PEM file (each trusted as its own anchor).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_clients: Option<PathBuf>,
    /// With --listen: where snapshot images of the archive are made for new
    /// replicas (each the archive's size, removed once sent). Default: the
    /// system's temporary directory.
    #[arg(long, value_name = "DIR")]
    snapshot_dir: Option<PathBuf>,
    /// With --listen: never send a snapshot; new replicas get frames.
    #[arg(long, conflicts_with = "snapshot_dir")]
    no_snapshots: bool,
}

/// Where `dendro subscribe` reads the stream from.
#[derive(Args)]
#[group(required = true, multiple = false)]
struct SubscribeFrom {
    /// Connect to a publisher, reconnecting with back-off until interrupted.
    #[arg(long, value_name = "ADDR:PORT")]
    connect: Option<SocketAddr>,
    /// Apply a stream written by `dendro publish --to`.
    #[arg(long, value_name = "PATH")]
    from: Option<PathBuf>,
    /// Apply the stream on standard input.
    #[arg(long)]
    stdin: bool,
}

/// `dendro subscribe`'s arguments.
#[derive(Args)]
pub struct SubscribeArgs {
    /// The replica: created if it does not exist, brought up to date if it
    /// does. A new replica's catch-up is written to OUT.catch-up-staging
    /// and appears at OUT only once it is whole; a run killed before that
    /// leaves the staging file, which the next run discards.
    out: PathBuf,
    #[command(flatten)]
    from: SubscribeFrom,
    /// With --connect: milliseconds without a byte from the publisher
    /// after which the connection is taken for dead and made again. A
    /// live publisher sends a frame every interval (--interval-ms), so
    /// keep this several of its intervals long.
    #[arg(long, default_value_t = 30_000, value_name = "MS")]
    idle_timeout_ms: u64,
    /// Print progress as JSON lines.
    #[arg(long)]
    json: bool,
    /// Allow an address that is not loopback without TLS.
    #[arg(long)]
    allow_remote: bool,
    /// With --connect: TLS, trusting publishers whose certificate this CA
    /// file (PEM) signed for the --tls-name.
    #[arg(long, value_name = "PEM", conflicts_with = "tls_pin")]
    tls_ca: Option<PathBuf>,
    /// With --connect: TLS, trusting only the publisher certificate with
    /// this SHA-256 fingerprint (hex, colons allowed), while it is valid.
    #[arg(long, value_name = "SHA256")]
    tls_pin: Option<String>,
    /// The name the publisher's certificate must carry (with --tls-ca).
    /// Default: the address connected to.
    #[arg(long, value_name = "NAME")]
    tls_name: Option<String>,
    /// A certificate (PEM) to present to a publisher that asks for one.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

/// `dendro tls`'s arguments.
#[derive(Args)]
pub struct TlsArgs {
    #[command(subcommand)]
    command: TlsCommand,
}

#[derive(Subcommand)]
enum TlsCommand {
    /// Make a self-signed certificate and key (PEM) for a first try; prints
    /// the certificate's SHA-256 fingerprint for --tls-pin.
    Selfsigned {
        /// Where the certificate goes (must not exist).
        #[arg(long, value_name = "PEM")]
        cert: PathBuf,
        /// Where the key goes (must not exist; made readable by its owner only).
        #[arg(long, value_name = "PEM")]
        key: PathBuf,
        /// A DNS name or IP address the certificate is for (repeatable).
        /// Default: localhost, 127.0.0.1 and ::1.
        #[arg(long = "name", value_name = "NAME")]
        names: Vec<String>,
        /// Days the certificate is valid from today.
        #[arg(long, default_value_t = 365)]
        days: u32,
    },
}

/// Set by the first SIGINT or SIGTERM while publishing or subscribing
/// live: the loops end at their next check (a tenth of a second at most)
/// and a subscriber finishes its replica cleanly. A second signal ends the
/// process at once, as without the handler.
static STOP: AtomicBool = AtomicBool::new(false);

#[cfg(target_os = "linux")]
extern "C" fn on_stop_signal(_: libc::c_int) {
    // An atomic store is all a signal handler may safely do here.
    STOP.store(true, Ordering::SeqCst);
}

/// Lets the first SIGINT or SIGTERM set [`STOP`] (then the default action
/// is back). Only for the live modes, which check it; a blocking read of
/// standard input would not.
fn stop_on_signals() {
    #[cfg(target_os = "linux")]
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a handler that only stores an
        // atomic, installed once per signal before any thread waits on it.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

fn stopped() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// `dendro publish`.
pub fn run_publish(args: PublishArgs) -> Result<(), Failure> {
    let interval = Duration::from_millis(args.interval_ms.max(1));
    if let Some(addr) = args.to.listen {
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => {
                Some(tls::server_config(cert, key, args.tls_clients.as_deref())?)
            }
            _ => None,
        };
        // TLS authenticates the publisher (and, with a client list, the
        // subscribers) and encrypts: any address is then fine.
        check_address(addr, args.allow_remote || tls.is_some())?;
        let listener =
            TcpListener::bind(addr).map_err(|e| io_error(&addr.to_string(), "cannot listen", e))?;
        let bound = listener.local_addr().map_or(addr, |a| a);
        let defaults = PublishOptions::default();
        let options = PublishOptions {
            interval,
            write_timeout: Duration::from_millis(args.write_timeout_ms.max(1)),
            max_peers: args.max_subscribers.max(1),
            snapshot_dir: match args.no_snapshots {
                true => None,
                false => args.snapshot_dir.clone().or(defaults.snapshot_dir.clone()),
            },
            tls: tls.clone(),
            ..defaults
        };
        stop_on_signals();
        let over = if tls.is_some() { " (TLS)" } else { "" };
        eprintln!("publishing {} on {bound}{over}", args.file.display());
        serve_tcp_with(&args.file, listener, &options, &STOP)?;
        if stopped() {
            eprintln!("stopped publishing {}", args.file.display());
        }
    } else if let Some(path) = args.to.to {
        let name = path.display().to_string();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io_error(&name, "cannot create the stream file", e))?;
        // A file cut short by a refusal would be refused by every reader
        // (it announces a digest it lacks): none is better than that one.
        let bytes = write_catch_up(&args.file, file, &name).inspect_err(|_| {
            let _ = std::fs::remove_file(&path);
        })?;
        eprintln!("wrote {bytes} bytes to {name}");
    } else if args.follow {
        stop_on_signals();
        publish_live(
            &args.file,
            std::io::stdout().lock(),
            "stdout",
            interval,
            &STOP,
        )?;
    } else {
        write_catch_up(&args.file, std::io::stdout().lock(), "stdout")?;
    }
    Ok(())
}

/// `dendro subscribe`.
pub fn run_subscribe(args: SubscribeArgs) -> Result<(), Failure> {
    // A stream file is checked whole before the replica is opened, so a
    // damaged one leaves nothing behind.
    if let Some(path) = &args.from.from {
        if check_file(path)? == Verification::Unverified {
            eprintln!(
                "{}: the stream carries no digest (an older publisher wrote it): only its \
                 framing was checked",
                path.display()
            );
        }
    }
    let mut shown = Progress::new(args.json);
    let mut progress = |applied: &Applied, bytes: u64| shown.maybe(applied, bytes);
    let applied = if let Some(addr) = args.from.connect {
        let tls = subscriber_tls(&args, addr)?;
        check_address(addr, args.allow_remote || tls.is_some())?;
        let options = SubscribeOptions {
            idle_timeout: Duration::from_millis(args.idle_timeout_ms.max(1)),
            tls,
            ..SubscribeOptions::default()
        };
        stop_on_signals();
        let mut replica = Replica::new(&args.out, Arc::new(VerbatimOnly));
        replicate_tcp(&mut replica, addr, &options, &STOP, &mut progress, |e| {
            // A peer's words and names pass through the message.
            eprintln!("{}; reconnecting", crate::terminal::safe(&e.to_string()))
        })?;
        if replica.snapshots() > 0 {
            eprintln!(
                "{}: started from {} snapshot(s) of the publisher's archive",
                args.out.display(),
                replica.snapshots()
            );
        }
        replica.finish()?
    } else {
        let mut subscriber = Subscriber::open(&args.out, Arc::new(VerbatimOnly))?;
        if let Some(path) = &args.from.from {
            let name = path.display().to_string();
            let file = std::fs::File::open(path)
                .map_err(|e| io_error(&name, "cannot open the stream", e))?;
            apply_stream(&mut subscriber, file, &name, &mut progress)?;
        } else {
            apply_stream(
                &mut subscriber,
                std::io::stdin().lock(),
                "stdin",
                &mut progress,
            )?;
        }
        subscriber.finish()?
    };
    shown.show(&applied, shown.bytes);
    Ok(())
}

/// The subscriber's TLS settings from its flags; `None` without
/// --tls-ca or --tls-pin.
fn subscriber_tls(
    args: &SubscribeArgs,
    addr: SocketAddr,
) -> Result<Option<tls::ClientTls>, Failure> {
    let trust = match (&args.tls_ca, &args.tls_pin) {
        (Some(ca), _) => Trust::Ca(ca.clone()),
        (None, Some(pin)) => Trust::Pin(tls::parse_fingerprint(pin)?),
        (None, None) => {
            if args.tls_cert.is_some() {
                return Err(Error::Invalid {
                    file: "--tls-cert".into(),
                    message: "a client certificate needs TLS: give --tls-ca or --tls-pin".into(),
                }
                .into());
            }
            return Ok(None);
        }
    };
    let name = args
        .tls_name
        .clone()
        .unwrap_or_else(|| addr.ip().to_string());
    let identity = args.tls_cert.as_deref().zip(args.tls_key.as_deref());
    Ok(Some(tls::client_config(&trust, &name, identity)?))
}

/// `dendro tls`.
pub fn run_tls(args: TlsArgs) -> Result<(), Failure> {
    let TlsCommand::Selfsigned {
        cert,
        key,
        mut names,
        days,
    } = args.command;
    if names.is_empty() {
        names = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    }
    let now = std::time::SystemTime::now();
    let pair = tls::self_signed(&names, now - tls::DAY, now + tls::DAY * days.max(1))?;
    write_new(&key, pair.key_pem.as_bytes(), true)?;
    if let Err(e) = write_new(&cert, pair.cert_pem.as_bytes(), false) {
        let _ = std::fs::remove_file(&key);
        return Err(e);
    }
    eprintln!(
        "wrote {} and {} for {}, valid {days} days",
        cert.display(),
        key.display(),
        names.join(", ")
    );
    println!("sha256 {}", pair.fingerprint);
    Ok(())
}

/// Writes a file that must not exist yet; a key is readable by its owner
/// only.
fn write_new(path: &std::path::Path, bytes: &[u8], secret: bool) -> Result<(), Failure> {
    let name = path.display().to_string();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let _ = secret;
    let mut file = options
        .open(path)
        .map_err(|e| io_error(&name, "cannot create", e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error(&name, "cannot write", e))?;
    Ok(())
}

/// What a person watching a replica wants to see, at most once a second.
struct Progress {
    json: bool,
    last: Option<Instant>,
    bytes: u64,
    /// When the last frame was applied: how stale the link is.
    frame_at: Option<Instant>,
}

impl Progress {
    fn new(json: bool) -> Progress {
        Progress {
            json,
            last: None,
            bytes: 0,
            frame_at: None,
        }
    }

    fn maybe(&mut self, applied: &Applied, bytes: u64) {
        self.bytes = bytes;
        self.frame_at = Some(Instant::now());
        if self
            .last
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        self.last = Some(Instant::now());
        self.show(applied, bytes);
    }

    fn show(&self, applied: &Applied, bytes: u64) {
        // Lag: the newest applied row's age here, on this host's clock.
        let lag_ns = applied
            .newest_ts
            .map(|ts| dendro::write::wall_clock_ns().saturating_sub(ts));
        // Freshness of the link: how long since a frame arrived (a live
        // publisher sends one every interval).
        let quiet_ms = self.frame_at.map(|t| t.elapsed().as_millis() as u64);
        let mut out = std::io::stdout().lock();
        if self.json {
            let mut line = serde_json::to_value(applied).expect("counts serialize");
            line["bytes"] = bytes.into();
            line["lag_ns"] = lag_ns.into();
            line["quiet_ms"] = quiet_ms.into();
            let _ = writeln!(out, "{line}");
        } else {
            let lag = lag_ns.map_or("-".to_string(), |ns| format!("{:.3} s", ns as f64 / 1e9));
            let _ = writeln!(
                out,
                "frames {}  bytes {}  segments {} (held {}, {} replaced)  rows {} (held {}, \
                 skipped {})  index {}  sources restated {}  gaps {}  lag {lag}  quiet {}",
                applied.frames,
                bytes,
                applied.segments,
                applied.segments_held,
                applied.segments_replaced,
                applied.rows,
                applied.rows_held,
                applied.rows_skipped,
                applied.index_entries,
                applied.restated,
                applied.gaps,
                quiet_ms.map_or("-".to_string(), |ms| format!("{ms} ms")),
            );
        }
    }
}

fn io_error(file: &str, context: &str, source: std::io::Error) -> Error {
    Error::Io {
        file: file.to_string(),
        context: context.to_string(),
        source,
    }
}
