//! SQLite's encodings of numbers in a page (file format §1.5, §2.1):
//! big-endian integers, variable-length integers and a record value's
//! serial type. Every reader of raw pages here parses through these, so
//! a slice too short is a `None` once, not a panic in each caller.

pub(super) fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

pub(super) fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// SQLite's variable-length integer (1 to 9 bytes, big-endian) at the
/// start of `b`, and its length.
pub(crate) fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for i in 0..8 {
        let byte = *b.get(i)?;
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte < 0x80 {
            return Some((value, i + 1));
        }
    }
    Some(((value << 8) | u64::from(*b.get(8)?), 9))
}

/// Bytes a record value of serial type `t` takes (format §2.1); `None` for
/// the reserved types.
pub(super) fn serial_bytes(t: u64) -> Option<u64> {
    Some(match t {
        0 | 8 | 9 => 0,
        1..=4 => t,
        5 => 6,
        6 | 7 => 8,
        10 | 11 => return None,
        t => (t - 12) / 2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_of_every_length_parse() {
        assert_eq!(varint(&[0x05]), Some((5, 1)));
        assert_eq!(varint(&[0x81, 0x00]), Some((128, 2)));
        let nine = [0xff; 9];
        assert_eq!(varint(&nine), Some((u64::MAX, 9)));
        assert_eq!(varint(&[0x81]), None, "cut short");
    }
}
