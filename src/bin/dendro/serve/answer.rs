//! One request's answer: who may ask (Host, Origin), what may be asked
//! (GET and HEAD), which file, and which bytes of it (Range, ETag).

use std::fs::File;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::envelope;
use super::ranges::{parse_ranges, Ranges, BOUNDARY};
use super::snapshot::{is_live, Image, UNIT};
use super::{etag, Site, Target};

/// The page's security policy, sent as a header as well as in its markup.
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
                   worker-src 'self' blob:; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; \
                   base-uri 'none'; frame-ancestors 'self'";

/// What an answer's body is read from.
enum Source {
    File(File),
    Image(Arc<Image>),
}

/// One piece of an answer's body: fixed text, or bytes `start..end` of the source.
enum Piece {
    Text(Bytes),
    Span(u64, u64),
}

/// An answer's body, read from its file or image a chunk at a time as the
/// client takes it: whatever the ranges asked, the server holds one chunk
/// per connection, not the answer.
pub struct Reply {
    pieces: std::collections::VecDeque<Piece>,
    source: Option<Source>,
    left: u64,
}

/// The most bytes read from a file for one write to the client.
const CHUNK: u64 = 64 << 10;

impl Reply {
    fn empty() -> Reply {
        Reply {
            pieces: Default::default(),
            source: None,
            left: 0,
        }
    }

    fn text(text: impl Into<Bytes>) -> Reply {
        let mut reply = Reply::empty();
        reply.push_text(text.into());
        reply
    }

    fn of(source: Source) -> Reply {
        Reply {
            source: Some(source),
            ..Reply::empty()
        }
    }

    fn push_text(&mut self, text: Bytes) {
        self.left += text.len() as u64;
        self.pieces.push_back(Piece::Text(text));
    }

    /// Bytes `start..=end` of the source.
    fn push_span(&mut self, start: u64, end: u64) {
        self.left += end - start + 1;
        self.pieces.push_back(Piece::Span(start, end + 1));
    }

    fn read(&mut self, at: u64, count: u64) -> io::Result<Bytes> {
        match self.source.as_mut() {
            Some(Source::Image(image)) => {
                let (a, b) = (at as usize, (at + count) as usize);
                if b > image.len() {
                    return Err(io::Error::other("the image is shorter than its ranges"));
                }
                Ok(Bytes::from(image.read_range(a, b)))
            }
            Some(Source::File(file)) => {
                let mut buf = vec![0u8; count as usize];
                read_at(file, &mut buf, at)?;
                Ok(Bytes::from(buf))
            }
            None => Err(io::Error::other("a span without a source")),
        }
    }
}

#[cfg(unix)]
fn read_at(file: &mut File, buf: &mut [u8], at: u64) -> io::Result<()> {
    // A file cut short while it is sent fails here (its length was promised).
    std::os::unix::fs::FileExt::read_exact_at(file, buf, at)
}

#[cfg(not(unix))]
fn read_at(file: &mut File, buf: &mut [u8], at: u64) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(buf)
}

impl Body for Reply {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        let data = match this.pieces.pop_front() {
            None => return Poll::Ready(None),
            Some(Piece::Text(text)) => Ok(text),
            Some(Piece::Span(start, end)) => {
                let count = (end - start).min(CHUNK);
                if start + count < end {
                    this.pieces.push_front(Piece::Span(start + count, end));
                }
                this.read(start, count)
            }
        };
        Poll::Ready(Some(data.map(|d| {
            this.left -= d.len() as u64;
            Frame::data(d)
        })))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

/// The request's parts an answer depends on, owned, so that an answer
/// taken off the connection's thread (a live archive's image) can carry it.
struct Asked {
    head: bool,
    path: String,
    /// The URL's query, when it has one.
    query: Option<String>,
    headers: HeaderMap,
}

impl Asked {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

fn status_text(status: StatusCode, text: &str) -> Response<Reply> {
    let body = format!("{text}\n");
    let length = body.len().to_string();
    let mut response = Response::new(Reply::text(body));
    *response.status_mut() = status;
    set(&mut response, "Content-Type", "text/plain; charset=utf-8");
    set(&mut response, "X-Content-Type-Options", "nosniff");
    set(&mut response, "Content-Length", &length);
    response
}

fn set(response: &mut Response<Reply>, name: &'static str, value: &str) {
    // Every value set is built here from ASCII; a file name never goes into one.
    if let Ok(v) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, v);
    }
}

/// The answer to `request`. The request's body is never read: a request
/// carrying one gets its answer and the connection is closed.
pub async fn answer(site: Arc<Site>, request: Request<Incoming>) -> Response<Reply> {
    let asked = match check(&site, &request) {
        Ok(asked) => asked,
        Err(refusal) => return refusal,
    };
    drop(request);
    let head = asked.head;
    let mut response = match site.resolve(&asked.path) {
        None => status_text(StatusCode::NOT_FOUND, "not found"),
        Some(Target::Archive(path)) if is_live(&path) => {
            // Taking an image reads the whole database: off this thread,
            // so the other connections keep being served meanwhile.
            let site = Arc::clone(&site);
            tokio::task::spawn_blocking(move || answer_live(&site, &path, &asked))
                .await
                .unwrap_or_else(|_| {
                    status_text(StatusCode::INTERNAL_SERVER_ERROR, "the answer failed")
                })
        }
        Some(Target::Archive(path)) if asked.query.as_deref().is_some_and(envelope::asks) => {
            answer_envelope(&site, path, &asked).await
        }
        Some(Target::Archive(path)) => {
            let mut response = answer_file(&path, &asked);
            set(
                &mut response,
                envelope::HEADER,
                &envelope::VERSION.to_string(),
            );
            response
        }
        Some(Target::File(path)) => answer_file(&path, &asked),
        Some(Target::Listing) => answer_listing(&site),
    };
    if head {
        // The headers, Content-Length included, as a GET would have them.
        *response.body_mut() = Reply::empty();
    }
    response
}

/// An envelope of an offered archive ([`envelope`]), computed off this
/// thread while the other connections are served; refused in words when
/// the query cannot be read, the window costs too much, enough others are
/// being computed, or the file is not the one `If-Match` names.
async fn answer_envelope(
    site: &Arc<Site>,
    path: std::path::PathBuf,
    asked: &Asked,
) -> Response<Reply> {
    let refuse = |status: u16, text: &str| {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut r = status_text(status, text);
        set(&mut r, envelope::HEADER, &envelope::VERSION.to_string());
        r
    };
    if is_live(&path) {
        return refuse(
            409,
            "this archive is being written: its envelopes are read by range from its images",
        );
    }
    let query = match envelope::parse(asked.query.as_deref().unwrap_or(""), &site.envelopes.limits)
    {
        Ok(q) => q,
        Err(why) => return refuse(400, &why),
    };
    if let Some(wanted) = asked.header("if-match") {
        let now = std::fs::metadata(&path)
            .map(|m| etag(&m))
            .unwrap_or_default();
        if wanted.trim() != now {
            return refuse(412, "the archive changed since the page opened it");
        }
    }
    let Ok(permit) = Arc::clone(&site.envelopes.running).try_acquire_owned() else {
        let mut r = refuse(
            503,
            &format!(
                "the server is computing {} envelopes already; read this window by range or ask again",
                site.envelopes.limits.concurrent
            ),
        );
        set(&mut r, "Retry-After", "1");
        return r;
    };
    let (limits, hold) = (site.envelopes.limits, site.envelopes.hold_ms);
    let computed = tokio::task::spawn_blocking(move || {
        if hold > 0 {
            std::thread::sleep(std::time::Duration::from_millis(hold));
        }
        let answer = envelope::compute(&path, &query, &limits);
        drop(permit);
        answer
    })
    .await;
    let envelope = match computed {
        Ok(Ok(envelope)) => envelope,
        Ok(Err(refusal)) => return refuse(refusal.status, &refusal.text),
        Err(_) => return refuse(500, "the envelope's computation failed"),
    };
    let body = envelope::encode(&envelope);
    let length = body.len().to_string();
    let mut response = Response::new(Reply::text(body));
    set(&mut response, "Content-Type", envelope::MEDIA_TYPE);
    set(&mut response, "X-Content-Type-Options", "nosniff");
    set(&mut response, "Cache-Control", "no-store");
    set(&mut response, "Content-Length", &length);
    set(
        &mut response,
        envelope::HEADER,
        &envelope::VERSION.to_string(),
    );
    response
}

/// Who may ask and how: refuses requests meant for another host (DNS
/// rebinding: a page elsewhere whose name now points here), from a page
/// of another origin, with methods other than GET and HEAD, or with a
/// path that cannot be decoded.
fn check(site: &Site, request: &Request<Incoming>) -> Result<Asked, Response<Reply>> {
    let hosts = request
        .headers()
        .get_all("host")
        .iter()
        .map(|h| h.to_str().unwrap_or("\u{0}"));
    let named: Vec<&str> = hosts
        .chain(request.uri().authority().map(|a| a.as_str()))
        .collect();
    if named.is_empty() {
        return Err(status_text(StatusCode::BAD_REQUEST, "no Host header"));
    }
    if !named.iter().all(|h| site.is_own_host(h)) {
        return Err(status_text(
            StatusCode::MISDIRECTED_REQUEST,
            &format!(
                "this server answers only as 127.0.0.1:{0}, localhost:{0} or [::1]:{0}",
                site.port
            ),
        ));
    }
    for origin in request.headers().get_all("origin") {
        let own = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|h| site.is_own_host(h));
        if !own {
            return Err(status_text(
                StatusCode::FORBIDDEN,
                "requests from pages of other origins are refused",
            ));
        }
    }
    let head = match *request.method() {
        Method::GET => false,
        Method::HEAD => true,
        _ => {
            let mut refusal = status_text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
            set(&mut refusal, "Allow", "GET, HEAD");
            return Err(refusal);
        }
    };
    let Some(path) = percent_decoded(request.uri().path()) else {
        return Err(status_text(
            StatusCode::BAD_REQUEST,
            "a path that cannot be decoded",
        ));
    };
    Ok(Asked {
        head,
        path,
        query: request.uri().query().map(str::to_string),
        headers: request.headers().clone(),
    })
}

/// A URL path with its `%XX` escapes decoded; `None` when the result is not
/// UTF-8 or holds a NUL. A `%` not followed by two hex digits stands for
/// itself, as browsers send it.
pub fn percent_decoded(path: &str) -> Option<String> {
    let b = path.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' {
            let digits = (
                b.get(i + 1).and_then(|&c| hex(c)),
                b.get(i + 2).and_then(|&c| hex(c)),
            );
            if let (Some(h), Some(l)) = digits {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    let text = String::from_utf8(out).ok()?;
    (!text.contains('\0')).then_some(text)
}

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

/// What is offered, as JSON; never cached (archives come and go with a restart).
fn answer_listing(site: &Site) -> Response<Reply> {
    let body = site.listing();
    let length = body.len().to_string();
    let mut response = Response::new(Reply::text(body));
    set(&mut response, "Content-Type", "application/json");
    set(&mut response, "X-Content-Type-Options", "nosniff");
    set(&mut response, "Cache-Control", "no-store");
    set(&mut response, "Content-Length", &length);
    response
}

fn answer_file(path: &Path, asked: &Asked) -> Response<Reply> {
    let opened = File::open(path).and_then(|f| f.metadata().map(|m| (f, m)));
    let Ok((file, meta)) = opened else {
        return status_text(StatusCode::INTERNAL_SERVER_ERROR, "cannot read");
    };
    let tag = etag(&meta);
    if asked.header("if-match").is_some_and(|m| m.trim() != tag) {
        let mut r = status_text(StatusCode::PRECONDITION_FAILED, "changed");
        set(&mut r, "ETag", &tag);
        return r;
    }
    if asked
        .header("if-none-match")
        .is_some_and(|m| m.trim() == tag)
    {
        return not_modified(&tag);
    }
    let headers = [("Content-Security-Policy", CSP), ("ETag", tag.as_str())];
    ranged(
        asked,
        Source::File(file),
        meta.len(),
        &tag,
        &headers,
        content_type(path),
    )
}

fn not_modified(tag: &str) -> Response<Reply> {
    let mut r = Response::new(Reply::empty());
    *r.status_mut() = StatusCode::NOT_MODIFIED;
    set(&mut r, "ETag", tag);
    r
}

/// An archive being written, answered from its images.
fn answer_live(site: &Site, path: &Path, asked: &Asked) -> Response<Reply> {
    let mut live = site.live.lock().unwrap_or_else(|e| e.into_inner());
    let state = live
        .entry(path.to_path_buf())
        .or_insert_with(|| super::snapshot::Live::new(path));
    let image: Arc<Image> = match asked.header("if-match") {
        Some(tag) => match state.read(tag.trim()) {
            Some(image) => image,
            // That state is no longer held: the reader starts again on a newer one.
            None => return status_text(StatusCode::PRECONDITION_FAILED, "that image is gone"),
        },
        None => match state.current() {
            Ok(image) => image,
            Err(e) => return status_text(StatusCode::SERVICE_UNAVAILABLE, &e),
        },
    };
    let seen = asked.header("if-none-match").map(|t| t.trim().to_string());
    if seen.as_deref() == Some(image.etag.as_str()) {
        return not_modified(&image.etag);
    }
    // What changed since the image the follower has, held or not.
    let changed = seen.as_deref().and_then(|old| {
        let list = state.changes_between(old, &image.etag)?;
        Some(format!("{old} {UNIT} {list}"))
    });
    drop(live);
    let mut headers = vec![
        ("ETag", image.etag.as_str()),
        ("Access-Control-Expose-Headers", "ETag, Dendro-Changed"),
    ];
    if let Some(c) = &changed {
        headers.push(("Dendro-Changed", c.as_str()));
    }
    let len = image.len() as u64;
    ranged(
        asked,
        Source::Image(Arc::clone(&image)),
        len,
        &image.etag,
        &headers,
        "application/octet-stream",
    )
}

/// Answers with `len` bytes of `source` as the `Range` header asks: the
/// whole without one (or with one that cannot be parsed, or that an
/// `If-Range` validator says is for another version), one range as a
/// 206, several as one `multipart/byteranges` 206 (a lazy reader's
/// catalog prefetch asks for its scattered pages this way), and a 416
/// when none can be satisfied or there are too many.
fn ranged(
    asked: &Asked,
    source: Source,
    len: u64,
    tag: &str,
    headers: &[(&'static str, &str)],
    content_type: &str,
) -> Response<Reply> {
    let range = asked
        .header("range")
        .filter(|_| asked.header("if-range").is_none_or(|v| v.trim() == tag));
    let ranges = range.map_or(Ranges::Ignored, |r| parse_ranges(r, len));
    let mut reply = Reply::of(source);
    let (status, content_type, content_range) = match ranges {
        Ranges::Ignored => {
            if len > 0 {
                reply.push_span(0, len - 1);
            }
            (StatusCode::OK, content_type.to_string(), None)
        }
        Ranges::Unsatisfiable => {
            let mut r = status_text(StatusCode::RANGE_NOT_SATISFIABLE, "range not satisfiable");
            set(&mut r, "Content-Range", &format!("bytes */{len}"));
            return r;
        }
        Ranges::Satisfiable(ranges) if ranges.len() == 1 => {
            let (start, end) = ranges[0];
            reply.push_span(start, end);
            let cr = format!("bytes {start}-{end}/{len}");
            (
                StatusCode::PARTIAL_CONTENT,
                content_type.to_string(),
                Some(cr),
            )
        }
        Ranges::Satisfiable(ranges) => {
            for (start, end) in ranges {
                reply.push_text(Bytes::from(format!(
                    "\r\n--{BOUNDARY}\r\nContent-Type: {content_type}\r\nContent-Range: bytes {start}-{end}/{len}\r\n\r\n"
                )));
                reply.push_span(start, end);
            }
            reply.push_text(Bytes::from(format!("\r\n--{BOUNDARY}--\r\n")));
            let ct = format!("multipart/byteranges; boundary={BOUNDARY}");
            (StatusCode::PARTIAL_CONTENT, ct, None)
        }
    };
    let length = reply.left.to_string();
    let mut response = Response::new(reply);
    *response.status_mut() = status;
    set(&mut response, "Accept-Ranges", "bytes");
    set(&mut response, "X-Content-Type-Options", "nosniff");
    set(&mut response, "Cache-Control", "no-cache");
    for (name, value) in headers {
        set(&mut response, name, value);
    }
    set(&mut response, "Content-Type", &content_type);
    set(&mut response, "Content-Length", &length);
    if let Some(cr) = content_range {
        set(&mut response, "Content-Range", &cr);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_decoded_and_nul_refused() {
        assert_eq!(percent_decoded("/a%20b").as_deref(), Some("/a b"));
        assert_eq!(percent_decoded("/a%2Fb").as_deref(), Some("/a/b"));
        assert_eq!(percent_decoded("/100%").as_deref(), Some("/100%"));
        assert_eq!(percent_decoded("/1%.x").as_deref(), Some("/1%.x"));
        assert_eq!(percent_decoded("/a%2").as_deref(), Some("/a%2"));
        assert_eq!(percent_decoded("/a%00b"), None);
        assert_eq!(percent_decoded("/%ff"), None);
        assert_eq!(percent_decoded("/%C3%A9").as_deref(), Some("/é"));
    }
}
