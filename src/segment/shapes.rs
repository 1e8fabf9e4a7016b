//! The Parquet Thrift structures the parquet crate parses in a footer and
//! in page headers, with the type it reads each known field as: what the
//! walks of [`super::footer`] and [`super::pages`] hand to
//! [`Compact::walk`](super::thrift::Compact::walk), so that they pass over
//! a field they do not read as the crate reads it (see
//! [`Shape`](super::thrift::Shape) for why).
//!
//! The field numbers and types are those of the Parquet format's Thrift
//! definitions as the parquet crate in use reads them, geospatial and
//! encryption structures included: honest files match them too.

use super::thrift::{Fields, Shape};

const fn empty(name: &'static str) -> Shape {
    Shape::Struct(name, &[])
}

const STRINGS: Shape = Shape::List(&Shape::Binary);

const TIME_UNIT: Shape = Shape::Struct(
    "a time unit",
    &[
        (1, empty("MILLIS")),
        (2, empty("MICROS")),
        (3, empty("NANOS")),
    ],
);

const LOGICAL_TYPE: Fields = &[
    (1, empty("a string type")),
    (2, empty("a map type")),
    (3, empty("a list type")),
    (4, empty("an enum type")),
    (
        5,
        Shape::Struct("a decimal type", &[(1, Shape::I32), (2, Shape::I32)]),
    ),
    (6, empty("a date type")),
    (
        7,
        Shape::Struct("a time type", &[(1, Shape::Bool), (2, TIME_UNIT)]),
    ),
    (
        8,
        Shape::Struct("a timestamp type", &[(1, Shape::Bool), (2, TIME_UNIT)]),
    ),
    (
        10,
        Shape::Struct("an integer type", &[(1, Shape::Byte), (2, Shape::Bool)]),
    ),
    (11, empty("the unknown type")),
    (12, empty("a JSON type")),
    (13, empty("a BSON type")),
    (14, empty("a UUID type")),
    (15, empty("a float16 type")),
    (16, Shape::Struct("a variant type", &[(1, Shape::Byte)])),
    (17, Shape::Struct("a geometry type", &[(1, Shape::Binary)])),
    (
        18,
        Shape::Struct("a geography type", &[(1, Shape::Binary), (2, Shape::I32)]),
    ),
    (19, empty("a file type")),
];

/// A schema element: type, type length, repetition, name, children,
/// converted type, scale, precision, field id, logical type.
pub const SCHEMA_ELEMENT: Fields = &[
    (1, Shape::I32),
    (2, Shape::I32),
    (3, Shape::I32),
    (4, Shape::Binary),
    (5, Shape::I32),
    (6, Shape::I32),
    (7, Shape::I32),
    (8, Shape::I32),
    (9, Shape::I32),
    (10, Shape::Struct("a logical type", LOGICAL_TYPE)),
];

const KEY_VALUE: Shape = Shape::Struct(
    "a key/value pair",
    &[(1, Shape::Binary), (2, Shape::Binary)],
);

/// Column and page statistics share one definition.
const STATISTICS: Shape = Shape::Struct(
    "statistics",
    &[
        (1, Shape::Binary),
        (2, Shape::Binary),
        (3, Shape::I64),
        (4, Shape::I64),
        (5, Shape::Binary),
        (6, Shape::Binary),
        (7, Shape::Bool),
        (8, Shape::Bool),
        (9, Shape::I64),
    ],
);

const BOUNDING_BOX: Shape = Shape::Struct(
    "a bounding box",
    &[
        (1, Shape::Double),
        (2, Shape::Double),
        (3, Shape::Double),
        (4, Shape::Double),
        (5, Shape::Double),
        (6, Shape::Double),
        (7, Shape::Double),
        (8, Shape::Double),
    ],
);

/// A column chunk's metadata.
pub const COLUMN_META_DATA: Fields = &[
    (1, Shape::I32),
    (2, Shape::List(&Shape::I32)),
    (3, STRINGS),
    (4, Shape::I32),
    (5, Shape::I64),
    (6, Shape::I64),
    (7, Shape::I64),
    (8, Shape::List(&KEY_VALUE)),
    (9, Shape::I64),
    (10, Shape::I64),
    (11, Shape::I64),
    (12, STATISTICS),
    (
        13,
        Shape::List(&Shape::Struct(
            "page encoding statistics",
            &[(1, Shape::I32), (2, Shape::I32), (3, Shape::I32)],
        )),
    ),
    (14, Shape::I64),
    (15, Shape::I32),
    (
        16,
        Shape::Struct(
            "size statistics",
            &[
                (1, Shape::I64),
                (2, Shape::List(&Shape::I64)),
                (3, Shape::List(&Shape::I64)),
            ],
        ),
    ),
    (
        17,
        Shape::Struct(
            "geospatial statistics",
            &[(1, BOUNDING_BOX), (2, Shape::List(&Shape::I32))],
        ),
    ),
];

/// A column chunk: file path and offset, metadata, index offsets and
/// lengths, encryption.
pub const COLUMN_CHUNK: Fields = &[
    (1, Shape::Binary),
    (2, Shape::I64),
    (3, Shape::Struct("a column's metadata", COLUMN_META_DATA)),
    (4, Shape::I64),
    (5, Shape::I32),
    (6, Shape::I64),
    (7, Shape::I32),
    (
        8,
        Shape::Struct(
            "a column's encryption",
            &[
                (1, empty("encryption with the footer key")),
                (
                    2,
                    Shape::Struct("a column key", &[(1, STRINGS), (2, Shape::Binary)]),
                ),
            ],
        ),
    ),
    (9, Shape::Binary),
];

/// A row group: columns, byte size, rows, sorting columns, file offset,
/// compressed size, ordinal.
pub const ROW_GROUP: Fields = &[
    (
        1,
        Shape::List(&Shape::Struct("a column chunk", COLUMN_CHUNK)),
    ),
    (2, Shape::I64),
    (3, Shape::I64),
    (
        4,
        Shape::List(&Shape::Struct(
            "a sorting column",
            &[(1, Shape::I32), (2, Shape::Bool), (3, Shape::Bool)],
        )),
    ),
    (5, Shape::I64),
    (6, Shape::I64),
    (7, Shape::I16),
];

/// AES-GCM and AES-GCM-CTR: an AAD prefix, the file's unique AAD, and
/// whether the reader must supply the prefix.
const AES: Fields = &[(1, Shape::Binary), (2, Shape::Binary), (3, Shape::Bool)];

/// A Parquet footer.
pub const FILE_META_DATA: Fields = &[
    (1, Shape::I32),
    (
        2,
        Shape::List(&Shape::Struct("a schema element", SCHEMA_ELEMENT)),
    ),
    (3, Shape::I64),
    (4, Shape::List(&Shape::Struct("a row group", ROW_GROUP))),
    (5, Shape::List(&KEY_VALUE)),
    (6, Shape::Binary),
    (
        7,
        Shape::List(&Shape::Struct(
            "a column order",
            &[
                (1, empty("the type-defined order")),
                (2, empty("the IEEE 754 total order")),
                (3, empty("the INT96 timestamp order")),
            ],
        )),
    ),
    (
        8,
        Shape::Struct(
            "the encryption algorithm",
            &[
                (1, Shape::Struct("AES-GCM", AES)),
                (2, Shape::Struct("AES-GCM-CTR", AES)),
            ],
        ),
    ),
    (9, Shape::Binary),
];

/// A v1 data page's header: values, encoding, the two level encodings,
/// statistics.
pub const DATA_PAGE_HEADER: Fields = &[
    (1, Shape::I32),
    (2, Shape::I32),
    (3, Shape::I32),
    (4, Shape::I32),
    (5, STATISTICS),
];

/// A dictionary page's header: values, encoding, sortedness.
pub const DICTIONARY_PAGE_HEADER: Fields = &[(1, Shape::I32), (2, Shape::I32), (3, Shape::Bool)];

/// A v2 data page's header: values, nulls, rows, encoding, the two level
/// lengths, compression, statistics.
pub const DATA_PAGE_HEADER_V2: Fields = &[
    (1, Shape::I32),
    (2, Shape::I32),
    (3, Shape::I32),
    (4, Shape::I32),
    (5, Shape::I32),
    (6, Shape::I32),
    (7, Shape::Bool),
    (8, STATISTICS),
];

/// A page header: type, sizes, CRC, then the header its type calls for.
pub const PAGE_HEADER: Fields = &[
    (1, Shape::I32),
    (2, Shape::I32),
    (3, Shape::I32),
    (4, Shape::I32),
    (5, Shape::Struct("a data page header", DATA_PAGE_HEADER)),
    (6, empty("an index page header")),
    (
        7,
        Shape::Struct("a dictionary page header", DICTIONARY_PAGE_HEADER),
    ),
    (
        8,
        Shape::Struct("a v2 data page header", DATA_PAGE_HEADER_V2),
    ),
];

#[cfg(test)]
mod tests {
    use super::super::thrift::Compact;
    use super::*;

    /// Walks `bytes` as a struct of `fields`, reading no field itself.
    fn pass(bytes: &[u8], fields: Fields) -> Result<usize, String> {
        let mut c = Compact::new(bytes);
        c.walk("t", fields, |_, _, _| Ok(false))?;
        Ok(c.position())
    }

    #[test]
    fn a_known_field_of_another_wire_type_is_refused() {
        // A v2 data page header whose num_rows (field 3, an i32) arrives as
        // a boolean: the crate would read the next byte as its varint.
        let page = [
            0x15, 0x06, 0x15, 0x0a, 0x15, 0x0a, // type 3, sizes 5 and 5
            0x5c, // field 8: the v2 header
            0x15, 0x08, 0x15, 0x02, // values 4, nulls 1
            0x12, // field 3 as a boolean
            0x00, 0x00,
        ];
        let err = pass(&page, PAGE_HEADER).unwrap_err();
        assert!(
            err.contains("a v2 data page header: field 3 has wire type 2"),
            "{err}"
        );
        // The same header with num_rows an i32 passes, to its last byte.
        let fine = [
            0x15, 0x06, 0x15, 0x0a, 0x15, 0x0a, 0x5c, 0x15, 0x08, 0x15, 0x02, 0x15, 0x08, 0x00,
            0x00,
        ];
        assert_eq!(pass(&fine, PAGE_HEADER), Ok(fine.len()));
    }

    #[test]
    fn unknown_fields_are_skipped_and_known_lists_walked() {
        // Field 1 (version), field 40 (unknown: a binary, skipped), then
        // field 5 (key/value metadata): one pair whose value is an i32.
        let footer = [
            0x15, 0x02, // field 1: i32 1
            0x08, 0x50, 0x02, 0xaa, 0xbb, // field 40: two bytes
            0x09, 0x0a, 0x1c, // field 5: a list of one struct
            0x18, 0x01, b'k', // key "k"
            0x15, 0x02, // value as an i32: refused
            0x00, 0x00,
        ];
        let err = pass(&footer, FILE_META_DATA).unwrap_err();
        assert!(
            err.contains("a key/value pair: field 2 has wire type 5"),
            "{err}"
        );
        let fine = [
            0x15, 0x02, 0x08, 0x50, 0x02, 0xaa, 0xbb, 0x09, 0x0a, 0x1c, 0x18, 0x01, b'k', 0x18,
            0x01, b'v', 0x00, 0x00,
        ];
        assert_eq!(pass(&fine, FILE_META_DATA), Ok(fine.len()));
    }
}
