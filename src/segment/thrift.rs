//! Just enough of Thrift's compact protocol to read the numbers in a
//! Parquet footer and in page headers before the parquet crate trusts them.
//!
//! Every read is bounded by the input: a length or count is refused when
//! the bytes left cannot hold it, and nesting is capped, so walking a
//! hostile footer costs at most one pass over its bytes and a small,
//! fixed stack.

/// The wire types of the compact protocol, as the low nibble of a field
/// header or a list header carries them.
pub(crate) mod wire {
    /// End of a struct's fields.
    pub const STOP: u8 = 0;
    /// A boolean field whose value is true (the value rides in the type).
    pub const TRUE: u8 = 1;
    /// A boolean field whose value is false.
    pub const FALSE: u8 = 2;
    /// One signed byte.
    pub const BYTE: u8 = 3;
    /// A zigzag varint that fits 16 bits.
    pub const I16: u8 = 4;
    /// A zigzag varint that fits 32 bits.
    pub const I32: u8 = 5;
    /// A zigzag varint that fits 64 bits.
    pub const I64: u8 = 6;
    /// Eight little-endian bytes.
    pub const DOUBLE: u8 = 7;
    /// A varint length, then that many bytes.
    pub const BINARY: u8 = 8;
    /// A list header, then its elements.
    pub const LIST: u8 = 9;
    /// Encoded as a list.
    pub const SET: u8 = 10;
    /// A varint size, a key/value type byte, then the pairs.
    pub const MAP: u8 = 11;
    /// Fields until [`STOP`].
    pub const STRUCT: u8 = 12;
    /// Sixteen bytes.
    pub const UUID: u8 = 13;
}

/// Structs nested deeper than this are refused. Parquet's own structs nest
/// at most about six deep; the margin is for fields this reader skips.
pub const MAX_NESTING: usize = 32;

/// What a field holds, by its definition.
///
/// The parquet crate reads a field it knows as the type its definition
/// gives, whatever wire type the field header carries: an `i32` sent as a
/// string is read as a varint, and the crate goes on reading from inside
/// the string. A walk that passed over that field by its wire type would
/// read a different struct from the crate's, and the crate would act on
/// numbers nobody checked. So [`Compact::walk`] passes over a known field
/// by its definition, and refuses one whose wire type differs.
pub enum Shape {
    /// A boolean: its value in the field header.
    Bool,
    /// One signed byte.
    Byte,
    /// A 16-bit integer.
    I16,
    /// A 32-bit integer (or an enum).
    I32,
    /// A 64-bit integer.
    I64,
    /// Eight bytes.
    Double,
    /// A length and that many bytes (strings too).
    Binary,
    /// A struct (or a union), named for errors, with its known fields.
    Struct(&'static str, Fields),
    /// A list of one shape.
    List(&'static Shape),
}

/// A struct's known fields: id and shape.
pub type Fields = &'static [(i16, Shape)];

impl Shape {
    /// Whether a field header's wire type fits this shape.
    fn admits(&self, kind: u8) -> bool {
        match self {
            Shape::Bool => kind == wire::TRUE || kind == wire::FALSE,
            Shape::Byte => kind == wire::BYTE,
            Shape::I16 => kind == wire::I16,
            Shape::I32 => kind == wire::I32,
            Shape::I64 => kind == wire::I64,
            Shape::Double => kind == wire::DOUBLE,
            Shape::Binary => kind == wire::BINARY,
            Shape::Struct(..) => kind == wire::STRUCT,
            Shape::List(_) => kind == wire::LIST || kind == wire::SET,
        }
    }
}

/// A cursor over compact-protocol bytes.
pub struct Compact<'a> {
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

/// What a failed read says: where, and why.
pub type Result<T> = std::result::Result<T, String>;

impl<'a> Compact<'a> {
    /// A cursor at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Compact {
            bytes,
            at: 0,
            depth: 0,
        }
    }

    /// How many bytes have been read.
    pub fn position(&self) -> usize {
        self.at
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn fail<T>(&self, why: impl std::fmt::Display) -> Result<T> {
        Err(format!("{why} (at byte {})", self.at))
    }

    fn byte(&mut self) -> Result<u8> {
        match self.bytes.get(self.at) {
            Some(&b) => {
                self.at += 1;
                Ok(b)
            }
            None => self.fail("ends early"),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return self.fail(format!("claims {n} bytes but {} remain", self.remaining()));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        self.fail("a varint runs past ten bytes")
    }

    fn zigzag(&mut self) -> Result<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// Reads a field header: `None` at the end of the struct, else the
    /// field's id and wire type. `last` is the previous field's id, which
    /// the short form is relative to.
    pub fn field(&mut self, last: &mut i16) -> Result<Option<(i16, u8)>> {
        let header = self.byte()?;
        let kind = header & 0x0f;
        if kind == wire::STOP {
            return Ok(None);
        }
        let delta = header >> 4;
        let id = if delta == 0 {
            i16::try_from(self.zigzag()?).or_else(|_| self.fail("a field id beyond 16 bits"))?
        } else {
            last.checked_add(i16::from(delta))
                .map_or_else(|| self.fail("a field id beyond 16 bits"), Ok)?
        };
        *last = id;
        Ok(Some((id, kind)))
    }

    fn expect(&self, kind: u8, want: u8, what: &str) -> Result<()> {
        if kind == want {
            Ok(())
        } else {
            self.fail(format!("{what} has wire type {kind}, not {want}"))
        }
    }

    /// Reads an i32 field (also how enums travel).
    pub fn i32(&mut self, kind: u8, what: &str) -> Result<i32> {
        self.expect(kind, wire::I32, what)?;
        let v = self.zigzag()?;
        i32::try_from(v).or_else(|_| self.fail(format!("{what} {v} does not fit 32 bits")))
    }

    /// Reads an i64 field.
    pub fn i64(&mut self, kind: u8, what: &str) -> Result<i64> {
        self.expect(kind, wire::I64, what)?;
        self.zigzag()
    }

    /// Reads a list header of a field of wire type `kind`, checking its
    /// elements' type: the element count, never more than the bytes left
    /// (every element takes at least one byte).
    pub fn list(&mut self, kind: u8, element: u8, what: &str) -> Result<usize> {
        if kind != wire::LIST && kind != wire::SET {
            return self.fail(format!("{what} has wire type {kind}, not a list"));
        }
        let (got, len) = self.list_header()?;
        if len > 0 && got != element {
            return self.fail(format!("{what} holds wire type {got}, not {element}"));
        }
        Ok(len)
    }

    /// Reads a list header: the elements' wire type and their count, never
    /// more than the bytes left.
    pub fn list_header(&mut self) -> Result<(u8, usize)> {
        let header = self.byte()?;
        let short = usize::from(header >> 4);
        let len = if short == 15 {
            let n = self.varint()?;
            usize::try_from(n).unwrap_or(usize::MAX)
        } else {
            short
        };
        if len > self.remaining() {
            return self.fail(format!(
                "a list claims {len} elements but only {} bytes remain",
                self.remaining()
            ));
        }
        Ok((header & 0x0f, len))
    }

    /// Walks a struct's fields, handing each to `field` (id, wire type);
    /// `field` answers `false` for the ones it does not read, which are
    /// passed over: by their definition in `known` where it has them (a
    /// wire type other than the definition's is refused, see [`Shape`]),
    /// else by their wire type. Counts toward [`MAX_NESTING`].
    pub fn walk(
        &mut self,
        what: &str,
        known: Fields,
        mut field: impl FnMut(&mut Self, i16, u8) -> Result<bool>,
    ) -> Result<()> {
        self.enter(what)?;
        let mut last = 0i16;
        while let Some((id, kind)) = self.field(&mut last)? {
            if !field(self, id, kind)? {
                self.pass(what, known, id, kind)?;
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// Walks a field of wire type `kind` that must be a struct.
    pub fn nested(
        &mut self,
        kind: u8,
        what: &str,
        known: Fields,
        field: impl FnMut(&mut Self, i16, u8) -> Result<bool>,
    ) -> Result<()> {
        self.expect(kind, wire::STRUCT, what)?;
        self.walk(what, known, field)
    }

    /// Reads past field `id` of wire type `kind` of a struct whose known
    /// fields are `known`.
    fn pass(&mut self, what: &str, known: Fields, id: i16, kind: u8) -> Result<()> {
        // Tables list fields in order, nearly always numbered from 1.
        let at = usize::try_from(id).map_or(usize::MAX, |id| id.wrapping_sub(1));
        let found = match known.get(at) {
            Some((known, shape)) if *known == id => Some(shape),
            _ => known
                .iter()
                .find(|(known, _)| *known == id)
                .map(|(_, shape)| shape),
        };
        let Some(shape) = found else {
            return self.skip(kind);
        };
        if !shape.admits(kind) {
            return self.fail(format!(
                "{what}: field {id} has wire type {kind}, which the parquet crate \
                 would read as another type"
            ));
        }
        match shape {
            Shape::Struct(name, fields) => self.walk(name, fields, |_, _, _| Ok(false)),
            Shape::List(element) => {
                let (got, len) = self.list_header()?;
                match element {
                    // The crate refuses elements of another wire type.
                    Shape::Struct(name, fields) if got == wire::STRUCT => {
                        for _ in 0..len {
                            self.walk(name, fields, |_, _, _| Ok(false))?;
                        }
                        Ok(())
                    }
                    _ => self.skip_list_elements(got, len),
                }
            }
            _ => self.skip(kind),
        }
    }

    fn enter(&mut self, what: &str) -> Result<()> {
        if self.depth >= MAX_NESTING {
            return self.fail(format!("{what} nests more than {MAX_NESTING} structs deep"));
        }
        self.depth += 1;
        Ok(())
    }

    /// Skips one value of wire type `kind`.
    pub fn skip(&mut self, kind: u8) -> Result<()> {
        match kind {
            wire::TRUE | wire::FALSE => Ok(()),
            wire::BYTE => self.byte().map(drop),
            wire::I16 | wire::I32 | wire::I64 => self.varint().map(drop),
            wire::DOUBLE => self.take(8).map(drop),
            wire::UUID => self.take(16).map(drop),
            wire::BINARY => {
                let n = self.varint()?;
                self.take(usize::try_from(n).unwrap_or(usize::MAX))
                    .map(drop)
            }
            wire::LIST | wire::SET => {
                let (element, len) = self.list_header()?;
                self.skip_list_elements(element, len)
            }
            wire::MAP => {
                let n = self.varint()?;
                let len = usize::try_from(n).unwrap_or(usize::MAX);
                if len == 0 {
                    return Ok(());
                }
                if len > self.remaining() {
                    return self.fail(format!("a map claims {len} entries"));
                }
                let types = self.byte()?;
                for _ in 0..len {
                    self.skip_element(types >> 4)?;
                    self.skip_element(types & 0x0f)?;
                }
                Ok(())
            }
            wire::STRUCT => self.walk("a skipped struct", &[], |_, _, _| Ok(false)),
            other => self.fail(format!("unknown wire type {other}")),
        }
    }

    /// Skips `len` list elements of wire type `element`.
    pub fn skip_list_elements(&mut self, element: u8, len: usize) -> Result<()> {
        self.enter("a skipped list")?;
        for _ in 0..len {
            self.skip_element(element)?;
        }
        self.depth -= 1;
        Ok(())
    }

    /// Inside a list or map a boolean takes a byte of its own, but the
    /// parquet crate skips such a boolean as if it took none (as it does a
    /// boolean field) and reads on from a different place than this walk:
    /// a header that passed here could then mean something else to the
    /// crate (one kilobyte kept it skipping phantom lists for a minute).
    /// No Parquet footer or page header has a boolean list or map, so one
    /// met while skipping is refused.
    fn skip_element(&mut self, element: u8) -> Result<()> {
        match element {
            wire::TRUE | wire::FALSE => self.fail(
                "a skipped list or map holds booleans, which the parquet crate misreads"
                    .to_string(),
            ),
            other => self.skip(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_lists_and_values_read_back() {
        // struct { 1: i32 = -3, 2: list<i64> [1, 2], 4: true, 20: i64 = 300 }
        let mut b = vec![0x15, 0x05]; // field 1 i32, zigzag(-3) = 5
        b.extend([0x19, 0x26, 0x02, 0x04]); // field 2 list of two i64: 1, 2
        b.push(0x21); // field 4 bool true
        b.extend([0x06, 0x28, 0xd8, 0x04]); // field 20 (full id), i64 300
        b.push(0x00);
        let mut c = Compact::new(&b);
        let mut seen = vec![];
        c.walk("test", &[], |c, id, kind| {
            match id {
                1 => seen.push(i64::from(c.i32(kind, "one")?)),
                2 => {
                    let n = c.list(kind, wire::I64, "two")?;
                    for _ in 0..n {
                        seen.push(c.zigzag()?);
                    }
                }
                4 => seen.push(i64::from(kind == wire::TRUE)),
                20 => seen.push(c.i64(kind, "twenty")?),
                _ => return Ok(false),
            }
            Ok(true)
        })
        .unwrap();
        assert_eq!(seen, [-3, 1, 2, 1, 300]);
        assert_eq!(c.position(), b.len());
    }

    #[test]
    fn a_list_longer_than_its_bytes_is_refused() {
        // A list of i32 claiming 2^31 elements, in a dozen bytes.
        let b = [0x19, 0xf5, 0x80, 0x80, 0x80, 0x80, 0x08, 0x00];
        let err = Compact::new(&b)
            .walk("t", &[], |_, _, _| Ok(false))
            .unwrap_err();
        assert!(err.contains("claims 2147483648 elements"), "{err}");
    }

    #[test]
    fn nesting_is_capped_without_recursing_deeper() {
        // Field 1 of type struct, nested 10,000 deep: refused at the cap.
        let mut b = vec![0x1c; 10_000];
        b.extend(vec![0u8; 10_001]);
        let err = Compact::new(&b)
            .walk("t", &[], |_, _, _| Ok(false))
            .unwrap_err();
        assert!(err.contains("nests more than"), "{err}");
        // Within the cap it walks.
        let mut ok = vec![0x1c; MAX_NESTING - 1];
        ok.extend(vec![0u8; MAX_NESTING]);
        Compact::new(&ok)
            .walk("t", &[], |_, _, _| Ok(false))
            .unwrap();
    }

    #[test]
    fn skipped_boolean_lists_and_maps_are_refused() {
        // Field 1: a list of three booleans (a byte each on the wire); the
        // parquet crate would take those three bytes for the next fields.
        let list = [0x19, 0x31, 0x01, 0x01, 0x01, 0x00];
        let err = Compact::new(&list)
            .walk("t", &[], |_, _, _| Ok(false))
            .unwrap_err();
        assert!(err.contains("holds booleans"), "{err}");
        // Field 1: a map of one i32 key to a boolean value.
        let map = [0x1b, 0x01, 0x52, 0x02, 0x01, 0x00];
        let err = Compact::new(&map)
            .walk("t", &[], |_, _, _| Ok(false))
            .unwrap_err();
        assert!(err.contains("holds booleans"), "{err}");
        // A list of i32 and a boolean field are skipped as before.
        let fine = [0x19, 0x25, 0x02, 0x04, 0x11, 0x00];
        Compact::new(&fine)
            .walk("t", &[], |_, _, _| Ok(false))
            .unwrap();
    }

    #[test]
    fn truncated_input_and_long_varints_are_errors() {
        assert!(Compact::new(&[0x15])
            .walk("t", &[], |_, _, _| Ok(false))
            .is_err());
        assert!(Compact::new(&[
            0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
        ])
        .walk("t", &[], |_, _, _| Ok(false))
        .is_err());
        let mut c = Compact::new(&[0x15, 0xfe, 0xff, 0xff, 0xff, 0x1f, 0x00]);
        let err = c
            .walk("t", &[], |c, _, kind| c.i32(kind, "big").map(|_| true))
            .unwrap_err();
        assert!(err.contains("does not fit 32 bits"), "{err}");
    }
}
