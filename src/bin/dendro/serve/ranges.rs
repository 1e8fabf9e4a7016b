//! The `Range` header (RFC 9110 §14): parsed against the length served,
//! overlapping ranges joined, so that what one request can ask for is at
//! most the file once, plus a bounded number of part headers.

/// The separator of a multipart answer's parts: fixed, since every part's
/// length is stated in its `Content-Range` and readers go by that.
pub const BOUNDARY: &str = "dendro-byteranges-3f1c9a";

/// The most parts one answer may have (after joining overlaps); a request
/// for more is refused (416) as the RFC allows. The viewer asks for at
/// most 160 at once.
pub const MAX_RANGES: usize = 2048;

#[derive(Debug, PartialEq, Eq)]
pub enum Ranges {
    /// No `Range` header, or one that does not parse: the whole answer.
    Ignored,
    /// Well-formed, but nothing in it can be served (or too many parts).
    Unsatisfiable,
    /// Inclusive byte ranges in ascending order, none overlapping.
    Satisfiable(Vec<(u64, u64)>),
}

/// Parses `bytes=a-b,c-d,...` (each part `a-b`, `a-` or `-n`; empty list
/// elements skipped) against `len`. A header that is malformed anywhere,
/// or in another unit, is ignored, as RFC 9110 says, rather than refused;
/// parts that start past the end are dropped; overlapping parts are
/// joined.
pub fn parse_ranges(value: &str, len: u64) -> Ranges {
    let value = value.trim();
    let Some(specs) = value
        .get(..6)
        .filter(|unit| unit.eq_ignore_ascii_case("bytes="))
        .map(|_| &value[6..])
    else {
        return Ranges::Ignored;
    };
    let mut out = Vec::new();
    let mut any = false;
    for spec in specs.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        any = true;
        let Some(range) = parse_one(spec, len) else {
            return Ranges::Ignored;
        };
        out.extend(range);
    }
    if !any {
        return Ranges::Ignored;
    }
    let out = joined(out);
    if out.is_empty() || out.len() > MAX_RANGES {
        return Ranges::Unsatisfiable;
    }
    Ranges::Satisfiable(out)
}

/// One part: `None` when malformed, `Some(None)` when well-formed but
/// unsatisfiable against `len`.
#[allow(clippy::option_option)]
fn parse_one(spec: &str, len: u64) -> Option<Option<(u64, u64)>> {
    let (start, end) = spec.split_once('-')?;
    let number = |s: &str| -> Option<u64> {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let range = match (start.trim(), end.trim()) {
        ("", suffix) => {
            let n = number(suffix)?;
            (n > 0 && len > 0).then(|| (len - n.min(len), len - 1))
        }
        (s, "") => {
            let s = number(s)?;
            (s < len).then(|| (s, len - 1))
        }
        (s, e) => {
            let (s, e) = (number(s)?, number(e)?);
            if s > e {
                return None;
            }
            (s < len).then(|| (s, e.min(len - 1)))
        }
    };
    Some(range)
}

/// Ranges sorted, with those that overlap joined into one.
fn joined(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match out.last_mut() {
            Some((_, last)) if start <= *last => *last = (*last).max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(r: &[(u64, u64)]) -> Ranges {
        Ranges::Satisfiable(r.to_vec())
    }

    #[test]
    fn single_ranges_are_parsed_against_the_length() {
        assert_eq!(parse_ranges("bytes=0-99", 1000), some(&[(0, 99)]));
        assert_eq!(parse_ranges("bytes=900-", 1000), some(&[(900, 999)]));
        assert_eq!(parse_ranges("bytes=-100", 1000), some(&[(900, 999)]));
        assert_eq!(parse_ranges("bytes=-5000", 1000), some(&[(0, 999)]));
        assert_eq!(parse_ranges("bytes=990-2000", 1000), some(&[(990, 999)]));
        assert_eq!(parse_ranges("Bytes=0-0", 1000), some(&[(0, 0)]));
        assert_eq!(parse_ranges("bytes=1000-", 1000), Ranges::Unsatisfiable);
        assert_eq!(parse_ranges("bytes=-0", 1000), Ranges::Unsatisfiable);
        assert_eq!(parse_ranges("bytes=0-", 0), Ranges::Unsatisfiable);
    }

    #[test]
    fn a_malformed_header_is_ignored_whole() {
        for bad in [
            "bytes=5-1",
            "bytes=0-1,x-2",
            "bytes=0-1,5",
            "bytes=+1-2",
            "bytes=1-2-3",
            "bytes=99999999999999999999-",
            "bytes=",
            "bytes=,",
            "items=0-1",
            "",
        ] {
            assert_eq!(parse_ranges(bad, 1000), Ranges::Ignored, "{bad}");
        }
    }

    #[test]
    fn several_ranges_are_sorted_and_overlaps_joined() {
        assert_eq!(
            parse_ranges("bytes=0-1, 5-6,-2", 1000),
            some(&[(0, 1), (5, 6), (998, 999)])
        );
        // Empty list elements are skipped; unsatisfiable parts dropped.
        assert_eq!(parse_ranges("bytes=0-1,,2000-", 1000), some(&[(0, 1)]));
        assert_eq!(parse_ranges("bytes=0-1,", 1000), some(&[(0, 1)]));
        // Adjacent ranges stay apart (a reader looks parts up by offset).
        assert_eq!(
            parse_ranges("bytes=10-19,0-9", 1000),
            some(&[(0, 9), (10, 19)])
        );
        assert_eq!(
            parse_ranges("bytes=10-19,15-29,0-12", 1000),
            some(&[(0, 29)])
        );
        let many = vec!["0-"; 5000].join(",");
        assert_eq!(
            parse_ranges(&format!("bytes={many}"), 1000),
            some(&[(0, 999)])
        );
        let apart: Vec<String> = (0..MAX_RANGES as u64 + 1)
            .map(|i| format!("{}-{}", 2 * i, 2 * i))
            .collect();
        assert_eq!(
            parse_ranges(&format!("bytes={}", apart.join(",")), 1 << 20),
            Ranges::Unsatisfiable
        );
    }
}
