//! The self-describing encoder, `dendro-typed/1`: rows are typed values
//! whose schema the archive records, so any reader (the CLI, a program
//! linking this crate, the browser) materializes a live tail without the
//! writer's code, and sealed segments are ordinary Parquet with the same
//! columns. For writers with no encoder of their own; `dendro demo` uses it.
//!
//! Where the schema lives: in the source's metadata, under
//! [`SCHEMAS_KEY`], as JSON mapping each stream to the list of schemas its
//! rows have used, each with a 64-bit id. A row names its schema by id, so a
//! stream can change schema (a column added) without ambiguity, and one
//! encoder can hold every source's schemas at once (ids are chosen so that
//! equal schemas get equal ids and different ones, in practice, different
//! ids: [`Schema::id`]). `FORMAT.md` (section "The self-describing encoder")
//! describes the layout for implementers; this module is its reference.
//!
//! A row, little-endian:
//!
//! | bytes | what |
//! | --- | --- |
//! | 1 | the layout version, `1` |
//! | 8 | the schema id, `u64` |
//! | ⌈n/8⌉ | null bitmap over the schema's `n` columns, bit `i % 8` of byte `i / 8` set when column `i` is null |
//! | … | each non-null value in column order: `i64`, `u64`, `f64` as 8 bytes; `bool` as one byte `0` or `1`; `utf8` as a `u32` length then that many bytes of UTF-8; `histogram` as one LEB128 varint per bucket |
//!
//! A segment has `ts` (`Int64`, not null) then the union of the columns of
//! the schemas its rows used, by name, in order of first appearance, each
//! nullable, with the column's `kind` (`counter` or `gauge`) and `unit` as
//! Arrow field metadata (`dendro.kind`, `dendro.unit`). A column that two
//! schemas of one stream give different types is refused: a column means
//! one thing for the life of a stream (format §8).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use arrow_array::{
    ArrayRef, BooleanArray, FixedSizeListArray, Float64Array, Int64Array, RecordBatch, StringArray,
    UInt64Array,
};
use arrow_schema::{DataType, Field};
use serde::{Deserialize, Serialize};

use crate::catalog::{Labels, WalRow};
use crate::format::keys;
use crate::segment::{segment_of_rows, Segment, SegmentEncoder};

/// What [`TypedEncoder`] reports as its version, and the source's
/// `encoder` metadata key says: the encoder's name and layout version.
pub const ENCODER: &str = "dendro-typed/1";

/// The source metadata key holding the schemas, as JSON:
/// `{"<stream>": [{"id": "<16 hex digits>", "columns": [...]}, ...]}`.
pub const SCHEMAS_KEY: &str = "dendro_typed_schemas";

/// The row layout this build writes and reads.
const LAYOUT: u8 = 1;

/// Arrow field metadata keys a column's kind and unit travel under.
pub const KIND_METADATA: &str = "dendro.kind";
/// See [`KIND_METADATA`].
pub const UNIT_METADATA: &str = "dendro.unit";

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// A signed 64-bit integer.
    I64,
    /// An unsigned 64-bit integer (counters usually are).
    U64,
    /// A 64-bit float.
    F64,
    /// True or false.
    Bool,
    /// UTF-8 text.
    Utf8,
    /// Counts per bucket, the buckets fixed by the column's `bounds`
    /// ([`histogram`]). Arrow: a fixed-size list of `UInt64`, one entry
    /// per bucket.
    Histogram,
}

impl ColumnType {
    fn arrow(self) -> DataType {
        match self {
            ColumnType::I64 => DataType::Int64,
            ColumnType::U64 => DataType::UInt64,
            ColumnType::F64 => DataType::Float64,
            ColumnType::Bool => DataType::Boolean,
            ColumnType::Utf8 => DataType::Utf8,
            ColumnType::Histogram => unreachable!("a histogram's type needs its bucket count"),
        }
    }
}

/// A histogram column's Arrow type: a fixed-size list of `buckets`
/// non-null `UInt64` counts.
pub fn histogram_type(buckets: usize) -> DataType {
    DataType::FixedSizeList(
        Arc::new(Field::new("item", DataType::UInt64, false)),
        i32::try_from(buckets).expect("bucket counts are bounded"),
    )
}

/// What a numeric column measures: a counter only ever grows (a fall is a
/// reset), and is read as a rate; a gauge is read as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A cumulative count: plotted as a per-second rate.
    Counter,
    /// A level: plotted as is.
    Gauge,
    /// Histograms only: each row counts its own interval.
    Delta,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Delta => "delta",
        }
    }
}

/// One column of a schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// Its name (not `ts`, which every segment has).
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: ColumnType,
    /// Counter or gauge, when it is a measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Kind>,
    /// Its unit, free text (`ns`, `bytes`, `%`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Histograms only: the ascending bucket edges ([`histogram`]).
    /// Absent from every other column's listing, so schemas without
    /// histograms serialize, and hash to ids, as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Vec<f64>>,
}

// Edges are checked finite ([`histogram::check_bounds`]) before a schema
// is used, so equality on them is an equivalence.
impl Eq for Column {}
impl std::hash::Hash for Column {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.ty.hash(state);
        self.kind.hash(state);
        self.unit.hash(state);
        if let Some(bounds) = &self.bounds {
            bounds.iter().for_each(|b| b.to_bits().hash(state));
        }
    }
}

impl Column {
    /// A column of `ty` named `name`.
    pub fn new(name: impl Into<String>, ty: ColumnType) -> Column {
        Column {
            name: name.into(),
            ty,
            kind: None,
            unit: None,
            bounds: None,
        }
    }

    /// A histogram column with these bucket edges (bucket `i` holds values
    /// in `[bounds[i], bounds[i + 1])`), whose rows hold running totals
    /// ([`histogram::Cumulation::Counter`]) or their own interval's counts.
    pub fn histogram(
        name: impl Into<String>,
        bounds: Vec<f64>,
        cumulation: histogram::Cumulation,
    ) -> Column {
        Column {
            name: name.into(),
            ty: ColumnType::Histogram,
            kind: Some(match cumulation {
                histogram::Cumulation::Counter => Kind::Counter,
                histogram::Cumulation::Delta => Kind::Delta,
            }),
            unit: None,
            bounds: Some(bounds),
        }
    }

    /// How many counts a row of this column holds: its bucket count for a
    /// histogram, 1 otherwise.
    pub fn buckets(&self) -> usize {
        self.bounds
            .as_ref()
            .map_or(1, |b| b.len().saturating_sub(1))
    }

    /// Whether this column is read as `other` is: same type and, for a
    /// histogram, the same edges and cumulation.
    fn same_type(&self, other: &Column) -> bool {
        self.ty == other.ty
            && (self.ty != ColumnType::Histogram
                || (self.bounds == other.bounds && self.kind == other.kind))
    }

    fn arrow_type(&self) -> DataType {
        match self.ty {
            ColumnType::Histogram => histogram_type(self.buckets()),
            ty => ty.arrow(),
        }
    }

    /// This column, marked as a counter.
    pub fn counter(mut self) -> Column {
        self.kind = Some(Kind::Counter);
        self
    }

    /// This column, marked as a gauge.
    pub fn gauge(mut self) -> Column {
        self.kind = Some(Kind::Gauge);
        self
    }

    /// This column, with a unit.
    pub fn unit(mut self, unit: impl Into<String>) -> Column {
        self.unit = Some(unit.into());
        self
    }

    fn field(&self) -> Field {
        let mut metadata = std::collections::HashMap::new();
        if let Some(kind) = self.kind {
            metadata.insert(KIND_METADATA.to_string(), kind.name().to_string());
        }
        if let Some(unit) = &self.unit {
            metadata.insert(UNIT_METADATA.to_string(), unit.clone());
        }
        if let Some(bounds) = &self.bounds {
            metadata.insert(
                histogram::BOUNDS_METADATA.to_string(),
                serde_json::to_string(bounds).expect("finite edges serialize"),
            );
        }
        Field::new(&self.name, self.arrow_type(), true).with_metadata(metadata)
    }
}

/// The columns of a stream's rows, in row order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Schema {
    /// The columns.
    pub columns: Vec<Column>,
}

impl Schema {
    /// A schema of these columns.
    pub fn new(columns: Vec<Column>) -> Schema {
        Schema { columns }
    }

    /// The schema's id: FNV-1a (64-bit) over its canonical JSON (this
    /// struct serialized by `serde_json`, compact). Readers never compute
    /// it (the metadata carries it); a writer may choose ids any way that
    /// gives different schemas different ids.
    pub fn id(&self) -> u64 {
        let text = serde_json::to_string(self).expect("a schema serializes");
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in text.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        hash
    }

    /// Refuses a column name used twice, or the reserved `ts`.
    fn check(&self) -> Result<(), String> {
        let mut seen = std::collections::HashSet::new();
        for c in &self.columns {
            if c.name == "ts" {
                return Err("a column may not be named \"ts\": every segment has that one".into());
            }
            if !seen.insert(c.name.as_str()) {
                return Err(format!("the column {:?} appears twice", c.name));
            }
            match (c.ty, &c.bounds, c.kind) {
                (ColumnType::Histogram, Some(bounds), Some(Kind::Counter | Kind::Delta)) => {
                    histogram::check_bounds(bounds)
                        .map_err(|e| format!("histogram column {:?}: {e}", c.name))?
                }
                (ColumnType::Histogram, None, _) => {
                    return Err(format!("histogram column {:?} has no bucket edges", c.name))
                }
                (ColumnType::Histogram, _, _) => {
                    return Err(format!(
                        "histogram column {:?} must be of kind counter or delta",
                        c.name
                    ))
                }
                (_, Some(_), _) => {
                    return Err(format!(
                        "column {:?} has bucket edges but is not a histogram",
                        c.name
                    ))
                }
                (_, None, Some(Kind::Delta)) => {
                    return Err(format!(
                        "column {:?}: only a histogram may be of kind delta",
                        c.name
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A value of a row, in the order of its schema's columns.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// No value.
    Null,
    /// For an `i64` column.
    I64(i64),
    /// For a `u64` column.
    U64(u64),
    /// For an `f64` column.
    F64(f64),
    /// For a `bool` column.
    Bool(bool),
    /// For a `utf8` column.
    Str(String),
    /// For a `histogram` column: one count per bucket.
    Histogram(Vec<u64>),
}

/// A schema as the metadata lists it: with its id, in hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Listed {
    id: String,
    columns: Vec<Column>,
}

/// Encodes one row of `schema` (whose id is `id`) holding `values`, one per
/// column, each of the column's type or [`Value::Null`].
pub fn encode_row(id: u64, schema: &Schema, values: &[Value]) -> Result<Vec<u8>, String> {
    if values.len() != schema.columns.len() {
        return Err(format!(
            "{} values for a schema of {} columns",
            values.len(),
            schema.columns.len()
        ));
    }
    let n = values.len();
    let mut row = Vec::with_capacity(9 + n.div_ceil(8) + n * 8);
    row.push(LAYOUT);
    row.extend_from_slice(&id.to_le_bytes());
    let nulls_at = row.len();
    row.resize(nulls_at + n.div_ceil(8), 0);
    for (i, (value, column)) in values.iter().zip(&schema.columns).enumerate() {
        match (value, column.ty) {
            (Value::Null, _) => row[nulls_at + i / 8] |= 1 << (i % 8),
            (Value::I64(v), ColumnType::I64) => row.extend_from_slice(&v.to_le_bytes()),
            (Value::U64(v), ColumnType::U64) => row.extend_from_slice(&v.to_le_bytes()),
            (Value::F64(v), ColumnType::F64) => row.extend_from_slice(&v.to_le_bytes()),
            (Value::Bool(v), ColumnType::Bool) => row.push(u8::from(*v)),
            (Value::Histogram(counts), ColumnType::Histogram) => {
                if counts.len() != column.buckets() {
                    return Err(format!(
                        "histogram column {:?} has {} buckets, but the row holds {} counts",
                        column.name,
                        column.buckets(),
                        counts.len()
                    ));
                }
                counts
                    .iter()
                    .for_each(|&c| histogram::push_varint(&mut row, c));
            }
            (Value::Str(v), ColumnType::Utf8) => {
                let len = u32::try_from(v.len())
                    .map_err(|_| format!("the value of {:?} is over 4 GiB", column.name))?;
                row.extend_from_slice(&len.to_le_bytes());
                row.extend_from_slice(v.as_bytes());
            }
            (value, ty) => {
                return Err(format!(
                    "column {:?} is {ty:?}, but its value is {value:?}",
                    column.name
                ))
            }
        }
    }
    Ok(row)
}

/// Encodes the rows of one stream in time order, as [`encode_row`] does,
/// and also refuses a row whose cumulative histogram went backwards
/// without a reset ([`histogram::step`]): the check needs the stream's
/// previous row, which [`encode_row`] alone does not see. A refused row
/// leaves the previous one in place, so the next row is checked against
/// what was written.
#[derive(Debug, Clone)]
pub struct RowEncoder {
    id: u64,
    schema: Schema,
    /// Per column: the last histogram written, for cumulative ones.
    last: Vec<Option<Vec<u64>>>,
}

impl RowEncoder {
    /// An encoder of rows of `schema`, registered under `id`.
    pub fn new(id: u64, schema: Schema) -> Result<RowEncoder, String> {
        schema.check()?;
        let last = vec![None; schema.columns.len()];
        Ok(RowEncoder { id, schema, last })
    }

    /// The row of `values`, or why it is refused.
    pub fn encode(&mut self, values: &[Value]) -> Result<Vec<u8>, String> {
        let row = encode_row(self.id, &self.schema, values)?;
        let mut kept = Vec::new();
        for (i, (column, value)) in self.schema.columns.iter().zip(values).enumerate() {
            if let (Some(Kind::Counter), Value::Histogram(counts)) = (column.kind, value) {
                if let Some(previous) = &self.last[i] {
                    histogram::step(previous, counts)
                        .map_err(|e| format!("histogram column {:?}: {e}", column.name))?;
                }
                kept.push((i, counts.clone()));
            }
        }
        for (i, counts) in kept {
            self.last[i] = Some(counts);
        }
        Ok(row)
    }
}

/// The schemas a source's metadata lists, by id, and which stream uses
/// each. An absent key is no schema; a value that cannot be read is an
/// error in words.
pub fn schemas_of(metadata: &Labels) -> Result<HashMap<u64, (String, Arc<Schema>)>, String> {
    let Some(text) = metadata.get(SCHEMAS_KEY) else {
        return Ok(HashMap::new());
    };
    let listed: BTreeMap<String, Vec<Listed>> = serde_json::from_str(text)
        .map_err(|e| format!("metadata key {SCHEMAS_KEY} is not a map of schema lists: {e}"))?;
    let mut out = HashMap::new();
    for (stream, schemas) in listed {
        for s in schemas {
            let id = u64::from_str_radix(&s.id, 16)
                .map_err(|_| format!("schema id {:?} of stream {stream:?} is not hex", s.id))?;
            let schema = Schema { columns: s.columns };
            schema.check()?;
            out.insert(id, (stream.clone(), Arc::new(schema)));
        }
    }
    Ok(out)
}

/// `metadata`'s [`SCHEMAS_KEY`] with `schema` listed for `stream` (once).
pub fn with_schema(metadata: &Labels, stream: &str, schema: &Schema) -> Result<String, String> {
    schema.check()?;
    let mut listed: BTreeMap<String, Vec<Listed>> = match metadata.get(SCHEMAS_KEY) {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| format!("metadata key {SCHEMAS_KEY} is not a map of schema lists: {e}"))?,
        None => BTreeMap::new(),
    };
    let id = format!("{:016x}", schema.id());
    let list = listed.entry(stream.to_string()).or_default();
    for earlier in list.iter() {
        for c in &schema.columns {
            if let Some(e) = earlier
                .columns
                .iter()
                .find(|e| e.name == c.name && !e.same_type(c))
            {
                return Err(format!(
                    "column {:?} of stream {stream:?} was {:?}{} and would become {:?}{}; a \
                     column means one thing for the life of a stream",
                    c.name,
                    e.ty,
                    edges(e),
                    c.ty,
                    edges(c)
                ));
            }
        }
    }
    if !list.iter().any(|l| l.id == id) {
        list.push(Listed {
            id,
            columns: schema.columns.clone(),
        });
    }
    Ok(serde_json::to_string(&listed).expect("schemas serialize"))
}

/// The columns `stream`'s rows have, as its segments and decoded tail show
/// them (`ts`, then the union of its listed schemas' columns), from the
/// source's metadata alone: for a stream with nothing sealed yet. `None`
/// when the metadata lists no schema for it.
pub fn stream_schema(
    metadata: &Labels,
    stream: &str,
) -> Result<Option<arrow_schema::Schema>, String> {
    let mut listed: Vec<(u64, Arc<Schema>)> = schemas_of(metadata)?
        .into_iter()
        .filter(|(_, (s, _))| s == stream)
        .map(|(id, (_, schema))| (id, schema))
        .collect();
    if listed.is_empty() {
        return Ok(None);
    }
    // The metadata lists them oldest first; the map lost that order, and
    // ids do not keep it, so order by the position in the listing.
    let order = listing_order(metadata, stream)?;
    listed.sort_by_key(|(id, _)| order.iter().position(|o| o == id));
    let mut columns: Vec<&Column> = Vec::new();
    for (_, schema) in &listed {
        for c in &schema.columns {
            if !columns.iter().any(|e| e.name == c.name) {
                columns.push(c);
            }
        }
    }
    let mut fields = vec![Field::new("ts", DataType::Int64, false)];
    fields.extend(columns.into_iter().map(Column::field));
    Ok(Some(arrow_schema::Schema::new(fields)))
}

/// The ids `stream`'s schemas are listed under, in listing order.
fn listing_order(metadata: &Labels, stream: &str) -> Result<Vec<u64>, String> {
    let Some(text) = metadata.get(SCHEMAS_KEY) else {
        return Ok(Vec::new());
    };
    let listed: BTreeMap<String, Vec<Listed>> =
        serde_json::from_str(text).map_err(|e| format!("metadata key {SCHEMAS_KEY}: {e}"))?;
    Ok(listed
        .get(stream)
        .map(|l| {
            l.iter()
                .filter_map(|s| u64::from_str_radix(&s.id, 16).ok())
                .collect()
        })
        .unwrap_or_default())
}

/// The encoder a reader needs to decode a source's live tail, when the
/// source's `encoder` key names this one; `None` for any other encoder,
/// whose rows only the writer's own code can read.
pub fn reader_for(metadata: &Labels) -> Option<Result<TypedEncoder, String>> {
    (metadata.get(keys::ENCODER).map(String::as_str) == Some(ENCODER))
        .then(|| TypedEncoder::from_metadata([metadata]))
}

/// The `dendro-typed/1` encoder. It knows the schemas registered with it;
/// a reader builds one from an archive's metadata
/// ([`TypedEncoder::from_metadata`]), a writer registers each schema as it
/// declares it ([`TypedEncoder::register`]).
#[derive(Debug, Default)]
pub struct TypedEncoder {
    schemas: RwLock<HashMap<u64, Arc<Schema>>>,
}

impl TypedEncoder {
    /// An encoder knowing no schema yet.
    pub fn new() -> TypedEncoder {
        TypedEncoder::default()
    }

    /// An encoder knowing the schemas every one of `metadata` lists (one
    /// map per source).
    pub fn from_metadata<'a>(
        metadata: impl IntoIterator<Item = &'a Labels>,
    ) -> Result<TypedEncoder, String> {
        let encoder = TypedEncoder::new();
        for m in metadata {
            for (id, (_, schema)) in schemas_of(m)? {
                encoder.insert(id, schema);
            }
        }
        Ok(encoder)
    }

    /// Makes `schema` known under its id, which the returned value is.
    pub fn register(&self, schema: &Schema) -> Result<u64, String> {
        schema.check()?;
        let id = schema.id();
        self.insert(id, Arc::new(schema.clone()));
        Ok(id)
    }

    fn insert(&self, id: u64, schema: Arc<Schema>) {
        self.schemas
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, schema);
    }

    fn schema(&self, id: u64) -> Option<Arc<Schema>> {
        self.schemas
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .cloned()
    }

    /// Decodes `rows` into one record batch: `ts`, then the union of the
    /// columns of the schemas they use.
    ///
    /// Columns are placed once per schema, not once per row: a row of a
    /// wide schema (hundreds of columns) looked every column up by name
    /// among the union, and again to fetch its value, which made 51 rows
    /// of 548 columns take 26 ms natively.
    pub fn decode_rows(&self, rows: &[WalRow]) -> Result<RecordBatch, String> {
        let mut columns: Vec<Column> = Vec::new();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        // Per schema met (kept alive here, so its address names it): where
        // each of its columns sits in `columns`.
        let mut schemas: Vec<(Arc<Schema>, Vec<usize>)> = Vec::new();
        let mut slot_of: HashMap<*const Schema, usize> = HashMap::new();
        let mut parsed: Vec<(i64, usize, Vec<Value>)> = Vec::with_capacity(rows.len());
        for row in rows {
            let (schema, values) = self.parse(row)?;
            let slot = match slot_of.get(&Arc::as_ptr(&schema)) {
                Some(&slot) => slot,
                None => {
                    let mut places = Vec::with_capacity(schema.columns.len());
                    for c in &schema.columns {
                        let at = match by_name.get(&c.name) {
                            Some(&at) if !columns[at].same_type(c) => {
                                return Err(format!(
                                    "column {:?} is {:?}{} in one schema and {:?}{} in another",
                                    c.name,
                                    columns[at].ty,
                                    edges(&columns[at]),
                                    c.ty,
                                    edges(c)
                                ))
                            }
                            Some(&at) => at,
                            None => {
                                by_name.insert(c.name.clone(), columns.len());
                                columns.push(c.clone());
                                columns.len() - 1
                            }
                        };
                        places.push(at);
                    }
                    slot_of.insert(Arc::as_ptr(&schema), schemas.len());
                    schemas.push((schema, places));
                    schemas.len() - 1
                }
            };
            parsed.push((row.ts, slot, values));
        }
        // Per schema, per column of the union: which of its values holds
        // it (the first of that name, should a schema repeat one).
        let values_at: Vec<Vec<Option<usize>>> = schemas
            .iter()
            .map(|(_, places)| {
                let mut at = vec![None; columns.len()];
                for (i, &column) in places.iter().enumerate() {
                    at[column].get_or_insert(i);
                }
                at
            })
            .collect();
        let mut fields = vec![Field::new("ts", DataType::Int64, false)];
        fields.extend(columns.iter().map(Column::field));
        let mut arrays: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
            parsed.iter().map(|(ts, _, _)| *ts),
        ))];
        for (j, column) in columns.iter().enumerate() {
            let each = parsed.iter_mut().map(|(_, slot, values)| {
                values_at[*slot][j].map_or(Value::Null, |i| {
                    std::mem::replace(&mut values[i], Value::Null)
                })
            });
            arrays.push(column_array(column, each));
        }
        RecordBatch::try_new(Arc::new(arrow_schema::Schema::new(fields)), arrays)
            .map_err(|e| e.to_string())
    }

    /// A row's schema and values, checked against its length.
    fn parse(&self, row: &WalRow) -> Result<(Arc<Schema>, Vec<Value>), String> {
        let bytes = &row.row;
        let at_ts = || format!("the row at {}", row.ts);
        if bytes.first() != Some(&LAYOUT) {
            return Err(format!(
                "{} is not a {ENCODER} row (layout byte {:?})",
                at_ts(),
                bytes.first()
            ));
        }
        let id = bytes
            .get(1..9)
            .map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes")))
            .ok_or_else(|| format!("{} ends before its schema id", at_ts()))?;
        let schema = self.schema(id).ok_or_else(|| {
            format!(
                "{} names schema {id:016x}, which the archive does not list",
                at_ts()
            )
        })?;
        let n = schema.columns.len();
        let nulls = bytes
            .get(9..9 + n.div_ceil(8))
            .ok_or_else(|| format!("{} ends inside its null bitmap", at_ts()))?;
        let mut at = 9 + n.div_ceil(8);
        let mut take = |len: usize| -> Result<&[u8], String> {
            let part = bytes
                .get(at..at.checked_add(len).ok_or("a length overflows")?)
                .ok_or_else(|| format!("{} ends inside a value", at_ts()))?;
            at += len;
            Ok(part)
        };
        let mut values = Vec::with_capacity(n);
        for (i, column) in schema.columns.iter().enumerate() {
            if nulls[i / 8] & (1 << (i % 8)) != 0 {
                values.push(Value::Null);
                continue;
            }
            let eight = |b: &[u8]| -> [u8; 8] { b.try_into().expect("eight bytes") };
            values.push(match column.ty {
                ColumnType::I64 => Value::I64(i64::from_le_bytes(eight(take(8)?))),
                ColumnType::U64 => Value::U64(u64::from_le_bytes(eight(take(8)?))),
                ColumnType::F64 => Value::F64(f64::from_le_bytes(eight(take(8)?))),
                ColumnType::Bool => match take(1)?[0] {
                    0 => Value::Bool(false),
                    1 => Value::Bool(true),
                    b => return Err(format!("{}: a bool is {b}", at_ts())),
                },
                ColumnType::Histogram => {
                    let mut counts = Vec::with_capacity(column.buckets());
                    for _ in 0..column.buckets() {
                        let count = histogram::read_varint(|| Ok(take(1)?[0])).map_err(|e| {
                            format!("{}: histogram column {:?}: {e}", at_ts(), column.name)
                        })?;
                        counts.push(count);
                    }
                    Value::Histogram(counts)
                }
                ColumnType::Utf8 => {
                    let len = u32::from_le_bytes(take(4)?.try_into().expect("four bytes"));
                    let text = take(len as usize)?;
                    Value::Str(
                        std::str::from_utf8(text)
                            .map_err(|_| {
                                format!("{}: column {:?} is not UTF-8", at_ts(), column.name)
                            })?
                            .to_string(),
                    )
                }
            });
        }
        if at != bytes.len() {
            return Err(format!(
                "{} has {} bytes past its last value",
                at_ts(),
                bytes.len() - at
            ));
        }
        Ok((schema, values))
    }
}

/// A histogram's edges as an error message shows them (nothing for other
/// columns).
fn edges(c: &Column) -> String {
    match &c.bounds {
        Some(b) => format!(" with {} bucket edges {b:?}", b.len()),
        None => String::new(),
    }
}

fn column_array(column: &Column, values: impl Iterator<Item = Value>) -> ArrayRef {
    let ty = column.ty;
    // Each value of the column's own type is kept; any other is a null.
    macro_rules! column {
        ($array:ty, $variant:path) => {
            Arc::new(<$array>::from_iter(values.map(|v| match v {
                $variant(x) => Some(x),
                _ => None,
            })))
        };
    }
    match ty {
        ColumnType::I64 => column!(Int64Array, Value::I64),
        ColumnType::U64 => column!(UInt64Array, Value::U64),
        ColumnType::F64 => column!(Float64Array, Value::F64),
        ColumnType::Bool => column!(BooleanArray, Value::Bool),
        ColumnType::Utf8 => column!(StringArray, Value::Str),
        ColumnType::Histogram => {
            let k = column.buckets();
            let mut counts: Vec<u64> = Vec::new();
            let mut valid: Vec<bool> = Vec::new();
            for v in values {
                match v {
                    Value::Histogram(c) if c.len() == k => {
                        counts.extend_from_slice(&c);
                        valid.push(true);
                    }
                    _ => {
                        counts.extend(std::iter::repeat_n(0, k));
                        valid.push(false);
                    }
                }
            }
            let item = Arc::new(Field::new("item", DataType::UInt64, false));
            Arc::new(FixedSizeListArray::new(
                item,
                i32::try_from(k).expect("bucket counts are bounded"),
                Arc::new(UInt64Array::from(counts)),
                Some(valid.into()),
            ))
        }
    }
}

impl SegmentEncoder for TypedEncoder {
    fn encode(
        &self,
        _stream: &str,
        rows: &[WalRow],
    ) -> std::result::Result<Option<Segment>, String> {
        if rows.is_empty() {
            return Ok(None);
        }
        segment_of_rows(rows, &self.decode_rows(rows)?).map(Some)
    }

    fn version(&self) -> Option<String> {
        Some(ENCODER.to_string())
    }
}

pub mod histogram;
#[cfg(test)]
mod tests;
