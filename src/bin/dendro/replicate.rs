//! `dendro publish` and `dendro subscribe`: replication from the command
//! line, over TCP, a file or a pipe (`WIRE.md`). Parsing and presentation
//! only; the transports live in `dendro::replicate::transport`.

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use dendro::replicate::transport::{
    apply_stream, check_address, publish_live, serve_tcp, subscribe_tcp, write_catch_up,
};
use dendro::replicate::{Applied, Subscriber, VerbatimOnly};
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
    /// Print progress as JSON lines.
    #[arg(long)]
    json: bool,
    /// Allow an address that is not loopback.
    #[arg(long)]
    allow_remote: bool,
}

static STOP: AtomicBool = AtomicBool::new(false);

/// `dendro publish`.
pub fn run_publish(args: PublishArgs) -> Result<(), Failure> {
    let interval = Duration::from_millis(args.interval_ms.max(1));
    if let Some(addr) = args.to.listen {
        check_address(addr, args.allow_remote)?;
        let listener =
            TcpListener::bind(addr).map_err(|e| io_error(&addr.to_string(), "cannot listen", e))?;
        let bound = listener.local_addr().map_or(addr, |a| a);
        eprintln!("publishing {} on {bound}", args.file.display());
        serve_tcp(&args.file, listener, interval, &STOP)?;
    } else if let Some(path) = args.to.to {
        let name = path.display().to_string();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io_error(&name, "cannot create the stream file", e))?;
        let bytes = write_catch_up(&args.file, file, &name)?;
        eprintln!("wrote {bytes} bytes to {name}");
    } else if args.follow {
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
    let mut subscriber = Subscriber::open(&args.out, Arc::new(VerbatimOnly))?;
    let mut shown = Progress::new(args.json);
    let mut progress = |applied: &Applied, bytes: u64| shown.maybe(applied, bytes);
    if let Some(addr) = args.from.connect {
        check_address(addr, args.allow_remote)?;
        subscribe_tcp(&mut subscriber, addr, &STOP, &mut progress, |e| {
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
                "frames {}  bytes {}  segments {} (held {})  rows {} (held {}, skipped {})  \
                 index {}  gaps {}  lag {lag}",
                applied.frames,
                bytes,
                applied.segments,
                applied.segments_held,
                applied.rows,
                applied.rows_held,
                applied.rows_skipped,
                applied.index_entries,
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
