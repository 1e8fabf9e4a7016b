//! How a subscriber waits on its publisher and when it tries again: its
//! options, the back-off between connections, and what counts as progress.
//! Shared by the frame loop ([`super::transport`]) and the loop that starts
//! a replica from a snapshot ([`super::replica`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::link::STOP_POLL;
use super::subscriber::Applied;
use super::tls::ClientTls;

/// How a subscriber waits on its publisher; [`Default`] is what
/// `dendro subscribe` uses unless told otherwise.
#[derive(Debug, Clone)]
pub struct SubscribeOptions {
    /// A connection that brings no byte for this long is taken for dead
    /// and dropped. The handshake does not say the publisher's interval,
    /// so the default allows for slow ones: thirty of `dendro publish`'s
    /// default one-second intervals.
    pub idle_timeout: Duration,
    /// How long one attempt to connect may take.
    pub connect_timeout: Duration,
    /// The first wait before reconnecting, and the one a connection that
    /// made progress starts the count from again.
    pub backoff_first: Duration,
    /// The longest wait between reconnects.
    pub backoff_cap: Duration,
    /// TLS: whom to trust and what to present ([`super::tls::client_config`]);
    /// `None` is plain TCP.
    pub tls: Option<ClientTls>,
}

impl Default for SubscribeOptions {
    fn default() -> Self {
        SubscribeOptions {
            idle_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            backoff_first: Duration::from_millis(100),
            backoff_cap: Duration::from_secs(10),
            tls: None,
        }
    }
}

/// Capped, jittered exponential back-off between reconnects.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    cap: Duration,
    seed: u64,
}

impl Backoff {
    /// Starts at `first`, doubles up to `cap`.
    pub fn new(first: Duration, cap: Duration) -> Backoff {
        Backoff {
            next: first,
            cap,
            seed: crate::write::wall_clock_ns() as u64 | 1,
        }
    }

    /// The next wait: between half and all of the current step, so many
    /// subscribers of one publisher do not reconnect in lockstep.
    pub fn next_wait(&mut self) -> Duration {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let step = self.next;
        self.next = (self.next * 2).min(self.cap);
        let half = step / 2;
        half + half.mul_f64((self.seed % 1000) as f64 / 1000.0)
    }

    /// A connection made progress: start from the first step again.
    pub fn reset(&mut self, first: Duration) {
        self.next = first;
    }
}

/// Sleeps for `wait`, or less once `stop` is set.
pub(super) fn pause(wait: Duration, stop: &AtomicBool) {
    let until = Instant::now() + wait;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(left.min(STOP_POLL));
    }
}

/// What a connection brought that the replica did not hold: what the
/// back-off counts as progress. Handshakes, held segments and rows, and
/// clock observations (counted even when the table already had them)
/// come with every catch-up and say nothing.
pub(super) fn new_content(applied: &Applied) -> u64 {
    applied.segments + applied.rows + applied.index_entries
}
