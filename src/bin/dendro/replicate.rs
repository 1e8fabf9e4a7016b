//! `dendro publish` and `dendro subscribe`: replication from the command
//! line, over TCP, a file or a pipe (`WIRE.md`). Parsing and presentation
//! only; the transports live in `dendro::replicate::transport`.

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use dendro::replicate::transport::{
    apply_stream, check_address, check_file, publish_live, serve_tcp_with, subscribe_tcp_with,
    write_catch_up, PublishOptions, SubscribeOptions,
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
    /// Allow an address that is not loopback (the stream is neither
    /// authenticated nor encrypted).
    #[arg(long)]
    allow_remote: bool,
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
    /// Allow an address that is not loopback.
    #[arg(long)]
    allow_remote: bool,
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
        check_address(addr, args.allow_remote)?;
        let listener =
            TcpListener::bind(addr).map_err(|e| io_error(&addr.to_string(), "cannot listen", e))?;
        let bound = listener.local_addr().map_or(addr, |a| a);
        let options = PublishOptions {
            interval,
            write_timeout: Duration::from_millis(args.write_timeout_ms.max(1)),
            max_peers: args.max_subscribers.max(1),
            ..PublishOptions::default()
        };
        stop_on_signals();
        eprintln!("publishing {} on {bound}", args.file.display());
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
    let mut subscriber = Subscriber::open(&args.out, Arc::new(VerbatimOnly))?;
    let mut shown = Progress::new(args.json);
    let mut progress = |applied: &Applied, bytes: u64| shown.maybe(applied, bytes);
    if let Some(addr) = args.from.connect {
        check_address(addr, args.allow_remote)?;
        let options = SubscribeOptions {
            idle_timeout: Duration::from_millis(args.idle_timeout_ms.max(1)),
            ..SubscribeOptions::default()
        };
        stop_on_signals();
        subscribe_tcp_with(&mut subscriber, addr, &options, &STOP, &mut progress, |e| {
            // A peer's words and names pass through the message.
            eprintln!("{}; reconnecting", crate::terminal::safe(&e.to_string()))
        })?;
    } else if let Some(path) = &args.from.from {
        let name = path.display().to_string();
        let file =
            std::fs::File::open(path).map_err(|e| io_error(&name, "cannot open the stream", e))?;
        apply_stream(&mut subscriber, file, &name, &mut progress)?;
    } else {
        apply_stream(
            &mut subscriber,
            std::io::stdin().lock(),
            "stdin",
            &mut progress,
        )?;
    }
    let bytes = shown.bytes;
    let applied = subscriber.finish()?;
    shown.show(&applied, bytes);
    Ok(())
}

/// What a person watching a replica wants to see, at most once a second.
struct Progress {
    json: bool,
    last: Option<Instant>,
    bytes: u64,
}

impl Progress {
    fn new(json: bool) -> Progress {
        Progress {
            json,
            last: None,
            bytes: 0,
        }
    }

    fn maybe(&mut self, applied: &Applied, bytes: u64) {
        self.bytes = bytes;
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
        let mut out = std::io::stdout().lock();
        if self.json {
            let mut line = serde_json::to_value(applied).expect("counts serialize");
            line["bytes"] = bytes.into();
            line["lag_ns"] = lag_ns.into();
            let _ = writeln!(out, "{line}");
        } else {
            let lag = lag_ns.map_or("-".to_string(), |ns| format!("{:.3} s", ns as f64 / 1e9));
            let _ = writeln!(
                out,
                "frames {}  bytes {}  segments {} (held {}, {} replaced)  rows {} (held {}, \
                 skipped {})  index {}  sources restated {}  gaps {}  lag {lag}",
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
