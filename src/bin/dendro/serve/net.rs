//! The connections: one thread runs every connection as a task (hyper's
//! HTTP/1.1 on tokio), so a client that stops reading or sends its
//! request a byte at a time holds a few buffers, never the server. What a
//! peer can make the server hold or wait for is bounded here: the number
//! of connections, the size and the time allowed for a request's headers,
//! and how long a connection may go without moving a byte.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};

use super::answer;
use super::Site;

/// What one client may cost the server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once; further ones wait in the listen queue.
    /// Each may hold a file open as well as its socket: the default stays
    /// under the 1024 descriptors a process is commonly allowed.
    pub connections: usize,
    /// Time from the start of a request (or of waiting for the next one on
    /// a kept-alive connection) to the end of its headers.
    pub headers: Duration,
    /// A connection that moves no byte either way for this long is closed:
    /// a reader that stopped reading, an idle keep-alive.
    pub stall: Duration,
    /// The most bytes of request line and headers.
    pub header_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connections: 384,
            headers: Duration::from_secs(10),
            stall: Duration::from_secs(30),
            header_bytes: 32 << 10,
        }
    }
}

/// Accepts and serves connections on `listener` until the process stops.
pub async fn run(listener: TcpListener, site: Arc<Site>, limits: Limits) {
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.connections));
    loop {
        // The semaphore is never closed.
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors, or the peer gave up before the
                // accept: try again shortly rather than spin or stop.
                eprintln!("dendro: serve: cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // See DESIGN.md on Nagle: a range's small body waited for the
        // client's delayed acknowledgement of the headers.
        let _ = stream.set_nodelay(true);
        let site = Arc::clone(&site);
        tokio::spawn(async move {
            let io = TokioIo::new(Stalling::new(stream, limits.stall));
            let service = hyper::service::service_fn(move |request| {
                let site = Arc::clone(&site);
                async move { Ok::<_, std::convert::Infallible>(answer::answer(site, request).await) }
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.headers)
                .max_header_size(limits.header_bytes)
                .max_buf_size(limits.header_bytes.max(8192) * 2)
                .serve_connection(io, service)
                .await;
            drop(slot);
        });
    }
}

/// The kernel's send buffer of each connection `listener` accepts (Linux
/// hands the option down to them).
const SEND_BUFFER: libc::c_int = 64 << 10;

/// Fixes the send buffer of the connections `listener` accepts: left to
/// itself Linux grows it to 4 MiB, and filling that for each of a few
/// hundred clients that then read slowly kept the server copying for
/// seconds before it took a new connection. 64 KiB (Linux doubles it) still moves a large
/// file over loopback at memory speed.
#[cfg(target_os = "linux")]
pub fn small_send_buffers(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket descriptor, and an option value of the size given.
    let _ = unsafe {
        libc::setsockopt(
            listener.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&SEND_BUFFER as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

#[cfg(not(target_os = "linux"))]
pub fn small_send_buffers(_: &std::net::TcpListener) {}

/// A TCP stream that fails a read or write once the connection has moved
/// no byte in either direction for `stall` while one of them waits.
struct Stalling {
    stream: TcpStream,
    stall: Duration,
    last: Instant,
    timer: Pin<Box<Sleep>>,
}

impl Stalling {
    fn new(stream: TcpStream, stall: Duration) -> Stalling {
        let now = Instant::now();
        Stalling {
            stream,
            stall,
            last: now,
            timer: Box::pin(tokio::time::sleep_until(now + stall)),
        }
    }

    /// After a read or write: progress resets the clock; waiting arms it.
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Ready(r) => {
                self.last = Instant::now();
                Poll::Ready(r)
            }
            Poll::Pending => {
                let deadline = self.last + self.stall;
                if self.timer.deadline() != deadline {
                    self.timer.as_mut().reset(deadline);
                }
                match self.timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client moved no data for too long",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl AsyncRead for Stalling {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        this.watch(cx, polled)
    }
}

impl AsyncWrite for Stalling {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.watch(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_flush(cx);
        this.watch(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_shutdown(cx);
        this.watch(cx, polled)
    }
}
