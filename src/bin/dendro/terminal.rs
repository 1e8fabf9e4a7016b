//! Text from a file, made safe to print on a terminal.
//!
//! Labels, uuids, stream names, SQLite's messages about a file's indexes:
//! any of them can hold an escape sequence that retitles the window, moves
//! the cursor or rewrites what is already on the screen, a carriage return
//! that overprints a line, or a bidirectional control that reorders what is
//! shown. Everything the command line prints that came from a file goes
//! through here, so it shows those characters as `\u{..}` escapes instead.

use std::borrow::Cow;
use std::io::{self, Write};

/// Whether a character changes how a terminal shows text rather than being
/// shown: controls (C0, DEL, C1), the line and paragraph separators, and the
/// bidirectional marks, embeddings, overrides and isolates.
fn affects_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every character that affects a terminal escaped.
pub fn safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(affects_terminal) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if affects_terminal(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer for a terminal: passes text through, except that characters
/// that affect a terminal (other than line feeds and tabs, which a table or
/// a CSV needs) become escapes, and bytes that are not UTF-8 become `\x..`.
/// Used only when standard output is a terminal; piped, output is exact.
pub struct TerminalWriter<W: Write> {
    inner: W,
    /// The start of a UTF-8 sequence that the next write completes.
    pending: Vec<u8>,
}

impl<W: Write> TerminalWriter<W> {
    pub fn new(inner: W) -> Self {
        TerminalWriter {
            inner,
            pending: Vec::new(),
        }
    }

    fn put(&mut self, text: &str) -> io::Result<()> {
        let mut start = 0;
        for (at, c) in text.char_indices() {
            if affects_terminal(c) && c != '\n' && c != '\t' {
                self.inner.write_all(&text.as_bytes()[start..at])?;
                write!(self.inner, "{}", c.escape_unicode())?;
                start = at + c.len_utf8();
            }
        }
        self.inner.write_all(&text.as_bytes()[start..])
    }
}

impl<W: Write> Write for TerminalWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(buf);
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    self.put(text)?;
                    rest = &[];
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    self.put(std::str::from_utf8(good).expect("valid up to here"))?;
                    match e.error_len() {
                        Some(n) => {
                            for b in &bad[..n] {
                                write!(self.inner, "\\x{b:02x}")?;
                            }
                            rest = &bad[n..];
                        }
                        // A sequence cut by the end of this write.
                        None => {
                            self.pending = bad.to_vec();
                            rest = &[];
                        }
                    }
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        for b in std::mem::take(&mut self.pending) {
            write!(self.inner, "\\x{b:02x}")?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_escapes_sequences_returns_and_bidi_and_keeps_the_rest() {
        assert_eq!(safe("web-01 ü ✓"), "web-01 ü ✓");
        assert_eq!(
            safe("a\x1b]0;owned\x07b\rc\u{202e}d\u{9b}"),
            "a\\u{1b}]0;owned\\u{7}b\\u{d}c\\u{202e}d\\u{9b}"
        );
    }

    #[test]
    fn the_writer_escapes_across_writes_and_keeps_lines() {
        let mut w = TerminalWriter::new(Vec::new());
        let text = "x,\u{202e}y\n\x1b[2Jz\u{9b}\n".as_bytes();
        // One byte at a time: every multi-byte character is cut.
        for b in text {
            w.write_all(std::slice::from_ref(b)).unwrap();
        }
        w.write_all(b"\xff").unwrap();
        w.flush().unwrap();
        assert_eq!(
            String::from_utf8(w.inner).unwrap(),
            "x,\\u{202e}y\n\\u{1b}[2Jz\\u{9b}\n\\xff"
        );
    }
}
