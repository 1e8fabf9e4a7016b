//! A realistic demo archive, written through the real writer: a few hosts
//! recording cpu, memory, network and disk once a second for an hour, most
//! of it sealed into five-minute segments, a live tail, producer metadata
//! and events (an agent restart, a resumed writer session). With `live`,
//! it keeps appending once a second until told to stop, so a reader can be
//! watched following it. With `hostile`, labels, metadata, events and a
//! stream name carry markup, script, control and bidi characters and a
//! megabyte-long string, for testing that a viewer shows them inertly.
//!
//! [`write_demo`] writes its rows with the self-describing encoder
//! ([`crate::typed`]): each stream's schema, with counters and gauges told
//! apart, is in the source's metadata, so any reader decodes the live tail.
//!
//! [`DemoEncoder`] is an older, fixed encoding the writer's tests use: a
//! version byte, a `u16` column count, then that many little-endian 8-byte
//! values whose names and types follow from the stream name and count.
//!
//! It stands above the writer and the rewrites (feature `demo`), a producer
//! like any other: it uses the writer only through its public handles.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use crate::catalog::{ClockOffset, Labels, WalRow};
use crate::error::{Error, Result};
use crate::format::keys;
use crate::segment::{segment_of_rows, Segment, SegmentEncoder};
use crate::typed::{self, Column, ColumnType, TypedEncoder, Value};

mod hostile;
mod latency;
use crate::write::{
    wall_clock_ns, Event, NewSource, SealPolicy, SourceWriter, TickRows, Writer, WriterOptions,
};
use hostile::{hostile_labels, hostile_metadata, HOSTILE, HOSTILE_STREAM};
pub use latency::{latency_bounds, stalled, LATENCY_STREAM};
use latency::{latency_schema, LATENCY_BUCKETS};

/// The version [`DemoEncoder`] reports, stored as each source's `encoder`.
pub const DEMO_ENCODER_VERSION: &str = "dendro-demo-v1";

/// The demo's row encoding, usable by any reader of a demo archive.
#[derive(Debug, Clone, Copy, Default)]
pub struct DemoEncoder;

/// Whether a column holds `f64` values (ratios, rates, averages) rather
/// than `i64` ones (counters and byte gauges).
fn is_float(name: &str) -> bool {
    name.starts_with("load")
        || name.ends_with("_mhz")
        || name.ends_with("_ratio")
        || name.ends_with("_depth")
        || name.ends_with("_celsius")
}

/// The columns of a demo stream with `n` values, after `ts`.
pub fn demo_columns(stream: &str, n: usize) -> Vec<(String, DataType)> {
    let per_unit = |prefix: &str, fields: &[&str]| -> Vec<String> {
        (0..n)
            .map(|i| format!("{prefix}{}_{}", i / fields.len(), fields[i % fields.len()]))
            .collect()
    };
    let names: Vec<String> = match stream {
        "cpu" => {
            let mut names: Vec<String> = ["load1", "load5", "load15"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            let rest = n.saturating_sub(3);
            let fields = ["user_ns", "system_ns", "idle_ns", "freq_mhz"];
            names.extend(
                (0..rest).map(|i| format!("core{}_{}", i / fields.len(), fields[i % fields.len()])),
            );
            names.truncate(n);
            names
        }
        "memory" => [
            "total_bytes",
            "used_bytes",
            "cached_bytes",
            "free_bytes",
            "swap_used_bytes",
            "page_faults",
            "utilization_ratio",
        ]
        .iter()
        .cycle()
        .take(n)
        .enumerate()
        .map(|(i, s)| {
            if i < 7 {
                s.to_string()
            } else {
                format!("{s}_{}", i / 7)
            }
        })
        .collect(),
        "network" => per_unit(
            "eth",
            &["rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "drops"],
        ),
        "disk" => per_unit(
            "nvme",
            &[
                "read_bytes",
                "write_bytes",
                "reads",
                "writes",
                "io_time_ns",
                "queue_depth",
            ],
        ),
        _ => (0..n).map(|i| format!("value{i}")).collect(),
    };
    names
        .into_iter()
        .map(|name| {
            let kind = if is_float(&name) {
                DataType::Float64
            } else {
                DataType::Int64
            };
            (name, kind)
        })
        .collect()
}

/// A demo stream's typed schema: [`demo_columns`] with each column's kind
/// (cumulative counters are read as rates) and unit.
pub fn demo_schema(stream: &str, n: usize) -> typed::Schema {
    let known = ["cpu", "memory", "network", "disk"].contains(&stream);
    let columns = demo_columns(stream, n)
        .into_iter()
        .map(|(name, ty)| {
            let float = ty == DataType::Float64;
            let gauge = float || !known || (stream == "memory" && name.contains("_bytes"));
            let unit = [
                ("_ns", "ns"),
                ("_bytes", "bytes"),
                ("_mhz", "MHz"),
                ("_celsius", "°C"),
            ]
            .iter()
            .find(|(suffix, _)| name.ends_with(suffix))
            .map(|(_, unit)| *unit);
            let column = Column::new(
                name,
                if float {
                    ColumnType::F64
                } else {
                    ColumnType::I64
                },
            );
            let column = if gauge {
                column.gauge()
            } else {
                column.counter()
            };
            match unit {
                Some(unit) => column.unit(unit),
                None => column,
            }
        })
        .collect();
    typed::Schema::new(columns)
}

/// The demo's typed rows: each stream's schema, registered with the
/// encoder the writer seals with.
struct TypedRows {
    encoder: Arc<TypedEncoder>,
    schemas: BTreeMap<(String, usize), (u64, typed::Schema)>,
}

impl TypedRows {
    fn new() -> TypedRows {
        TypedRows {
            encoder: Arc::new(TypedEncoder::new()),
            schemas: BTreeMap::new(),
        }
    }

    /// Declares `stream` with `n` values: registers its schema and lists it
    /// in `metadata`, where readers will find it.
    fn declare(&mut self, file: &str, metadata: &mut Labels, stream: &str, n: usize) -> Result<()> {
        let schema = demo_schema(stream, n);
        let id = self.declare_schema(file, metadata, stream, &schema)?;
        self.schemas.insert((stream.to_string(), n), (id, schema));
        Ok(())
    }

    /// Registers `schema` for `stream` and lists it in `metadata`; its id.
    fn declare_schema(
        &self,
        file: &str,
        metadata: &mut Labels,
        stream: &str,
        schema: &typed::Schema,
    ) -> Result<u64> {
        let invalid = |message: String| Error::Invalid {
            file: file.to_string(),
            message,
        };
        let id = self.encoder.register(schema).map_err(invalid)?;
        let listed = typed::with_schema(metadata, stream, schema).map_err(invalid)?;
        metadata.insert(typed::SCHEMAS_KEY.to_string(), listed);
        Ok(id)
    }

    fn row(&self, file: &str, stream: &str, values: &[DemoValue]) -> Result<Vec<u8>> {
        let (id, schema) = self
            .schemas
            .get(&(stream.to_string(), values.len()))
            .ok_or_else(|| Error::Invalid {
                file: file.to_string(),
                message: format!(
                    "stream {stream:?} of {} values was not declared",
                    values.len()
                ),
            })?;
        let values: Vec<Value> = values
            .iter()
            .map(|v| match *v {
                DemoValue::Int(i) => Value::I64(i),
                DemoValue::Float(f) => Value::F64(f),
            })
            .collect();
        typed::encode_row(*id, schema, &values).map_err(|message| Error::Invalid {
            file: file.to_string(),
            message,
        })
    }
}

/// One value of a demo row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DemoValue {
    /// A counter or an integer gauge.
    Int(i64),
    /// A ratio or average.
    Float(f64),
}

/// Encodes one demo row.
pub fn demo_row(values: &[DemoValue]) -> Vec<u8> {
    let mut row = Vec::with_capacity(3 + values.len() * 8);
    row.push(1);
    row.extend_from_slice(&(values.len() as u16).to_le_bytes());
    for v in values {
        match v {
            DemoValue::Int(i) => row.extend_from_slice(&i.to_le_bytes()),
            DemoValue::Float(f) => row.extend_from_slice(&f.to_bits().to_le_bytes()),
        }
    }
    row
}

/// The raw 8-byte values of a demo row.
fn parse_row(row: &[u8]) -> std::result::Result<Vec<[u8; 8]>, String> {
    if row.len() < 3 || row[0] != 1 {
        return Err("not a demo row (version byte)".into());
    }
    let n = u16::from_le_bytes([row[1], row[2]]) as usize;
    if row.len() != 3 + n * 8 {
        return Err(format!(
            "a demo row of {n} values must be {} bytes, not {}",
            3 + n * 8,
            row.len()
        ));
    }
    Ok(row[3..]
        .chunks_exact(8)
        .map(|c| c.try_into().expect("8 bytes"))
        .collect())
}

impl SegmentEncoder for DemoEncoder {
    fn encode(
        &self,
        stream: &str,
        rows: &[WalRow],
    ) -> std::result::Result<Option<Segment>, String> {
        if rows.is_empty() {
            return Ok(None);
        }
        let parsed = rows
            .iter()
            .map(|r| parse_row(&r.row))
            .collect::<std::result::Result<Vec<_>, String>>()?;
        let width = parsed.iter().map(Vec::len).max().unwrap_or(0);
        let columns = demo_columns(stream, width);
        let mut fields = vec![Field::new("ts", DataType::Int64, false)];
        let mut arrays: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.ts),
        ))];
        for (c, (name, kind)) in columns.iter().enumerate() {
            let raw = parsed.iter().map(|values| values.get(c).copied());
            let array: ArrayRef = match kind {
                DataType::Float64 => Arc::new(
                    raw.map(|v| v.map(f64::from_le_bytes))
                        .collect::<Float64Array>(),
                ),
                _ => Arc::new(
                    raw.map(|v| v.map(i64::from_le_bytes))
                        .collect::<Int64Array>(),
                ),
            };
            fields.push(Field::new(name, kind.clone(), true));
            arrays.push(array);
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
            .map_err(|e| e.to_string())?;
        segment_of_rows(rows, &batch).map(Some)
    }

    fn version(&self) -> Option<String> {
        Some(DEMO_ENCODER_VERSION.to_string())
    }
}

/// What to write.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Hosts, one source each (at least one).
    pub hosts: usize,
    /// Recorded history before now.
    pub duration: Duration,
    /// The tick interval.
    pub interval: Duration,
    /// Width: each host has `4 * scale` cores, `2 * scale` interfaces and
    /// `2 * scale` disks. Bigger scale, wider rows, bigger archive.
    pub scale: usize,
    /// Segment length: streams seal on wall-clock multiples of this.
    pub seal_every: Duration,
    /// Fill labels, metadata, events and one stream name with hostile text.
    pub hostile: bool,
    /// After the history, keep appending once a second until this is set.
    pub live: Option<Arc<AtomicBool>>,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            hosts: 3,
            duration: Duration::from_secs(3600),
            interval: Duration::from_secs(1),
            scale: 1,
            seal_every: Duration::from_secs(300),
            hostile: false,
            live: None,
        }
    }
}

/// Measured archive bytes per host-hour: a fixed part, and what each unit
/// of [`DemoOptions::scale`] adds (scale 1 came to 4.4 MB for three hosts,
/// scale 4 to 13 MB); used to size a demo by bytes.
const BYTES_PER_HOST_HOUR: f64 = 0.48e6;
const BYTES_PER_SCALE_HOST_HOUR: f64 = 0.97e6;

impl DemoOptions {
    /// Three hosts, an hour, as wide as it takes to come to about `bytes`
    /// (a benchmark asks for 10 MB or 100 MB).
    pub fn sized(bytes: u64) -> DemoOptions {
        let options = DemoOptions::default();
        let per_host = bytes as f64 / options.hosts as f64;
        let scale = ((per_host - BYTES_PER_HOST_HOUR) / BYTES_PER_SCALE_HOST_HOUR).round();
        DemoOptions {
            scale: scale.max(1.0) as usize,
            ..options
        }
    }
}

/// What a demo run wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoReport {
    /// Sources written.
    pub sources: usize,
    /// Ticks appended (each a row per stream per host).
    pub ticks: u64,
    /// Rows appended.
    pub rows: u64,
    /// The archive's size when done.
    pub file_bytes: u64,
}

/// A small deterministic generator, so every demo looks alike.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One host's running counters.
struct Host {
    name: String,
    cores: usize,
    interfaces: usize,
    disks: usize,
    noise: Noise,
    counters: Vec<i64>,
    memory_used: f64,
    /// A multiplier on all activity: this host's share of the load.
    weight: f64,
    /// Running totals of the request and disk latency histograms.
    latency: [Vec<u64>; 2],
}

impl Host {
    fn new(index: usize, name: String, scale: usize) -> Host {
        Host {
            name,
            cores: 4 * scale,
            interfaces: 2 * scale,
            disks: 2 * scale,
            noise: Noise(
                0x9e37_79b9_7f4a_7c15 ^ (index as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9),
            ),
            counters: vec![0; 4096 * scale.max(1)],
            memory_used: 0.35 + 0.1 * index as f64,
            weight: 1.0 + 0.4 * index as f64,
            latency: [vec![0; LATENCY_BUCKETS], vec![0; LATENCY_BUCKETS]],
        }
    }

    /// Restarts the agent: every counter starts from zero again.
    fn restart(&mut self) {
        self.counters.iter_mut().for_each(|c| *c = 0);
        self.latency.iter_mut().flatten().for_each(|c| *c = 0);
    }

    /// The latency stream's row at tick `i` of `ticks` ([`latency`]).
    fn latency_sample(&mut self, i: u64, ticks: u64, busy: f64) -> Vec<Value> {
        let load = (busy * self.weight).min(1.0);
        let noise = &mut self.noise;
        latency::sample(&mut self.latency, || noise.unit(), load, stalled(i, ticks))
    }

    fn bump(&mut self, slot: usize, by: f64) -> i64 {
        let by = by.max(0.0) as i64;
        let at = slot % self.counters.len();
        let c = &mut self.counters[at];
        *c = c.saturating_add(by);
        *c
    }

    /// The four streams' values at tick `i`, with `busy` in `[0, 1]` the
    /// time-of-day load.
    fn sample(&mut self, i: u64, busy: f64) -> [(String, Vec<DemoValue>); 4] {
        let load = (busy * self.weight).min(1.0);
        let mut slot = 0usize;
        let mut cpu = Vec::with_capacity(3 + 4 * self.cores);
        let load1 = load * self.cores as f64 * (0.8 + 0.4 * self.noise.unit());
        cpu.push(DemoValue::Float(load1));
        cpu.push(DemoValue::Float(load1 * 0.95));
        cpu.push(DemoValue::Float(load1 * 0.9));
        for _ in 0..self.cores {
            let user = (load * (0.6 + 0.4 * self.noise.unit())).min(1.0);
            let system = ((1.0 - user) * 0.15 * self.noise.unit()).min(1.0 - user);
            let u = self.bump(slot, user * 1e9);
            let s = self.bump(slot + 1, system * 1e9);
            let idle = self.bump(slot + 2, (1.0 - user - system) * 1e9);
            slot += 3;
            cpu.push(DemoValue::Int(u));
            cpu.push(DemoValue::Int(s));
            cpu.push(DemoValue::Int(idle));
            let freq = if user > 0.5 { 3600.0 } else { 2200.0 } + 100.0 * self.noise.unit();
            cpu.push(DemoValue::Float(freq.round()));
        }
        let total: i64 = 64 << 30;
        self.memory_used =
            (self.memory_used + 0.002 * (self.noise.unit() - 0.5) + 0.0005 * (load - 0.5))
                .clamp(0.2, 0.9);
        let used = (total as f64 * self.memory_used) as i64;
        let cached = (total as f64 * 0.2) as i64 + (i as i64 % 3600) * 4096;
        let fault_rate = 50.0 + 500.0 * load * self.noise.unit();
        let faults = self.bump(slot, fault_rate);
        slot += 1;
        let memory = vec![
            DemoValue::Int(total),
            DemoValue::Int(used),
            DemoValue::Int(cached),
            DemoValue::Int(total - used - cached),
            DemoValue::Int(if self.memory_used > 0.8 { 1 << 30 } else { 0 }),
            DemoValue::Int(faults),
            DemoValue::Float((self.memory_used * 1e4).round() / 1e4),
        ];
        let mut network = Vec::with_capacity(5 * self.interfaces);
        for n in 0..self.interfaces {
            let share = 1.0 / (n + 1) as f64;
            let rx = 1.2e8 * load * share * (0.7 + 0.6 * self.noise.unit());
            let tx = rx * 0.4;
            let rx_bytes = self.bump(slot, rx);
            let tx_bytes = self.bump(slot + 1, tx);
            let rx_packets = self.bump(slot + 2, rx / 900.0);
            let tx_packets = self.bump(slot + 3, tx / 700.0);
            let dropped = if self.noise.unit() > 0.995 { 3.0 } else { 0.0 };
            let drops = self.bump(slot + 4, dropped);
            slot += 5;
            network.extend(
                [rx_bytes, tx_bytes, rx_packets, tx_packets, drops]
                    .into_iter()
                    .map(DemoValue::Int),
            );
        }
        let mut disk = Vec::with_capacity(6 * self.disks);
        for _ in 0..self.disks {
            let reads = 200.0 * load * self.noise.unit();
            let writes = 80.0 + 400.0 * load * self.noise.unit();
            let r_bytes = self.bump(slot, reads * 16384.0);
            let w_bytes = self.bump(slot + 1, writes * 65536.0);
            let r = self.bump(slot + 2, reads);
            let w = self.bump(slot + 3, writes);
            let io = self.bump(slot + 4, (reads + writes) * 90_000.0);
            slot += 5;
            disk.extend([r_bytes, w_bytes, r, w, io].into_iter().map(DemoValue::Int));
            disk.push(DemoValue::Float(
                ((reads + writes) / 120.0 * 100.0).round() / 100.0,
            ));
        }
        [
            ("cpu".to_string(), cpu),
            ("memory".to_string(), memory),
            ("network".to_string(), network),
            ("disk".to_string(), disk),
        ]
    }
}

/// Time-of-day load: a slow wave with a burst around two thirds of the way.
fn busy_at(i: u64, ticks: u64) -> f64 {
    let x = i as f64 / ticks.max(1) as f64;
    let wave = 0.35 + 0.2 * (x * std::f64::consts::TAU).sin();
    let burst = if (0.62..0.7).contains(&x) { 0.35 } else { 0.0 };
    (wave + burst).clamp(0.05, 1.0)
}

/// Writes a demo archive at `path` (which must not exist).
pub fn write_demo(path: impl AsRef<Path>, options: DemoOptions) -> Result<DemoReport> {
    let path = path.as_ref();
    let file = path.display().to_string();
    if options.hosts == 0 || options.interval.is_zero() {
        return Err(Error::Invalid {
            file,
            message: "a demo needs at least one host and a non-zero interval".into(),
        });
    }
    let interval_ns = options.interval.as_nanos() as i64;
    let ticks = (options.duration.as_nanos() / options.interval.as_nanos()) as u64;
    let writer_options = WriterOptions {
        seal_policy: SealPolicy::never()
            .aligned(options.seal_every)
            .age(options.seal_every),
        ..WriterOptions::default()
    };
    let mut typed_rows = TypedRows::new();
    let writer = Writer::create_with(path, typed_rows.encoder.clone(), writer_options)?;
    let end = wall_clock_ns();
    let start = end - ticks as i64 * interval_ns;
    let names = ["web-01", "web-02", "db-01", "db-02", "cache-01", "batch-01"];
    let mut hosts: Vec<Host> = (0..options.hosts)
        .map(|h| {
            let name = names
                .get(h)
                .map_or_else(|| format!("host-{h:02}"), |n| n.to_string());
            Host::new(h, name, options.scale.max(1))
        })
        .collect();
    let mut sources = Vec::with_capacity(hosts.len());
    let mut latency_rows: Vec<typed::RowEncoder> = Vec::with_capacity(hosts.len());
    for (h, host) in hosts.iter().enumerate() {
        let anchor = start + (h as i64) * 1_234_567;
        let epoch = format!("{:016x}", Noise(anchor as u64 | 1).next());
        let mut labels: Labels = [
            ("host".to_string(), host.name.clone()),
            (
                "role".to_string(),
                host.name.split('-').next().unwrap_or("host").to_string(),
            ),
            (
                "region".to_string(),
                if h % 2 == 0 { "eu-west" } else { "us-east" }.to_string(),
            ),
        ]
        .into();
        let mut metadata: Labels = [
            (
                keys::PRODUCER_VERSION.to_string(),
                "demo-agent 2.4.1+build.7731 (g3f9a2c1)".to_string(),
            ),
            (keys::PRODUCER_EPOCH.to_string(), epoch.clone()),
            (
                keys::PRODUCER_EPOCHS.to_string(),
                serde_json::json!([{ "epoch": epoch, "from_ts": anchor }]).to_string(),
            ),
            ("kernel".to_string(), "6.8.0-49-generic".to_string()),
            ("cores".to_string(), host.cores.to_string()),
        ]
        .into();
        if options.hostile {
            labels.extend(hostile_labels(&host.name));
            metadata.extend(hostile_metadata());
            typed_rows.declare(&file, &mut metadata, HOSTILE_STREAM, 1)?;
        }
        // A fresh twin of the host says which streams, how wide.
        for (stream, values) in Host::new(h, host.name.clone(), options.scale.max(1)).sample(0, 0.5)
        {
            typed_rows.declare(&file, &mut metadata, &stream, values.len())?;
        }
        let schema = latency_schema();
        let id = typed_rows.declare_schema(&file, &mut metadata, LATENCY_STREAM, &schema)?;
        latency_rows.push(typed::RowEncoder::new(id, schema).map_err(|message| {
            Error::Invalid {
                file: file.clone(),
                message,
            }
        })?);
        let source = writer.add_source_with_uuid(NewSource {
            uuid: None,
            labels,
            metadata,
            complete: false,
            clock_anchor_wall_ns: anchor,
        })?;
        sources.push(source);
    }
    let restart_at = ticks * 2 / 3;
    let resume_at = ticks / 3;
    let mut rows = 0u64;
    let mut offsets: Vec<ClockOffset> = vec![
        ClockOffset {
            ts: 0,
            offset_ns: 0
        };
        hosts.len()
    ];
    let latency_row = |rows: &mut typed::RowEncoder, values: Vec<Value>| {
        rows.encode(&values).map_err(|message| Error::Invalid {
            file: file.clone(),
            message,
        })
    };
    let stall_at = (0..ticks).find(|&i| stalled(i, ticks));
    for i in 0..ticks {
        let busy = busy_at(i, ticks);
        if Some(i) == stall_at {
            let ts = start + i as i64 * interval_ns;
            sources[0].append_event(Event {
                description: "storage stall: disk I/O and requests slow for about a minute"
                    .to_string(),
                details: Some("the tail of the latency histograms (stream \"latency\")".into()),
                id: None,
                kind: None,
                timestamp: ts,
            })?;
        }
        if i == restart_at && hosts.len() > 1 {
            restart_agent(
                &sources[1],
                &mut hosts[1],
                start + i as i64 * interval_ns,
                &options,
            )?;
        }
        if i == resume_at && hosts.len() > 2 {
            // The writer of the third host stopped and a later session took
            // over after a thirty-second gap: a new writer session.
            let id = sources[2].id();
            let gap = 30 * 1_000_000_000;
            let anchor = start + i as i64 * interval_ns + gap;
            drop(sources.remove(2));
            sources.insert(2, writer.resume_source_at(id, anchor)?);
        }
        let mut tick: Vec<(&SourceWriter, TickRows)> = Vec::with_capacity(sources.len());
        for (h, (host, source)) in hosts.iter_mut().zip(&sources).enumerate() {
            if h == 2 && (resume_at..resume_at + 30).contains(&i) {
                continue;
            }
            let jitter = ((i * 7919 + h as u64 * 104_729) % 3000) as i64 * 1000;
            let ts = start + (h as i64) * 1_234_567 + i as i64 * interval_ns + jitter;
            let offset = 1_200 + (i as i64 * 3) % 5_000 + h as i64 * 50;
            offsets[h] = ClockOffset {
                ts,
                offset_ns: offset,
            };
            let mut part = TickRows::new();
            let latency = latency_row(&mut latency_rows[h], host.latency_sample(i, ticks, busy))?;
            part.push((
                LATENCY_STREAM.to_string(),
                WalRow {
                    ts,
                    wall_offset: offset,
                    row: latency,
                },
            ));
            for (stream, values) in host.sample(i, busy) {
                let row = typed_rows.row(&file, &stream, &values)?;
                part.push((
                    stream,
                    WalRow {
                        ts,
                        wall_offset: offset,
                        row,
                    },
                ));
            }
            if options.hostile && h == 0 {
                let row = typed_rows.row(&file, HOSTILE_STREAM, &[DemoValue::Int(i as i64)])?;
                part.push((
                    HOSTILE_STREAM.to_string(),
                    WalRow {
                        ts,
                        wall_offset: offset,
                        row,
                    },
                ));
            }
            rows += part.len() as u64;
            tick.push((source, part));
        }
        for outcome in writer.wal_tick(tick)? {
            outcome?;
        }
    }
    let mut live_ticks = 0u64;
    if let Some(stop) = &options.live {
        let base = Instant::now();
        let base_ts: Vec<i64> = offsets.iter().map(|o| o.ts).collect();
        let mut next = base + Duration::from_secs(1);
        'live: loop {
            while Instant::now() < next {
                if stop.load(Ordering::SeqCst) {
                    break 'live;
                }
                std::thread::sleep((next - Instant::now()).min(Duration::from_millis(50)));
            }
            next += Duration::from_secs(1);
            let elapsed = base.elapsed().as_nanos() as i64;
            let i = ticks + live_ticks;
            let busy = busy_at(i % ticks.max(1), ticks);
            let mut tick: Vec<(&SourceWriter, TickRows)> = Vec::with_capacity(sources.len());
            for (h, (host, source)) in hosts.iter_mut().zip(&sources).enumerate() {
                let ts = base_ts[h] + elapsed;
                let offset = wall_clock_ns() - ts;
                offsets[h] = ClockOffset {
                    ts,
                    offset_ns: offset,
                };
                let mut part = host
                    .sample(i, busy)
                    .into_iter()
                    .map(|(stream, values)| {
                        let row = typed_rows.row(&file, &stream, &values)?;
                        Ok((
                            stream,
                            WalRow {
                                ts,
                                wall_offset: offset,
                                row,
                            },
                        ))
                    })
                    .collect::<Result<TickRows>>()?;
                let latency = host.latency_sample(i % ticks.max(1), ticks, busy);
                part.push((
                    LATENCY_STREAM.to_string(),
                    WalRow {
                        ts,
                        wall_offset: offset,
                        row: latency_row(&mut latency_rows[h], latency)?,
                    },
                ));
                rows += part.len() as u64;
                tick.push((source, part));
            }
            for outcome in writer.wal_tick(tick)? {
                outcome?;
            }
            live_ticks += 1;
        }
    }
    let count = sources.len();
    for (source, last) in sources.into_iter().zip(offsets) {
        source.finalize(last)?;
    }
    writer.join()?;
    let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    Ok(DemoReport {
        sources: count,
        ticks: ticks + live_ticks,
        rows,
        file_bytes,
    })
}

/// The agent on a host restarts: counters reset, a new producer epoch, an
/// event saying so.
fn restart_agent(
    source: &SourceWriter,
    host: &mut Host,
    ts: i64,
    options: &DemoOptions,
) -> Result<()> {
    host.restart();
    let epoch = format!("{:016x}", Noise(ts as u64 | 1).next());
    let first = format!("{:016x}", Noise(source.clock().anchor() as u64 | 1).next());
    let mut patch = BTreeMap::new();
    patch.insert(keys::PRODUCER_EPOCH.to_string(), Some(epoch.clone()));
    patch.insert(
        keys::PRODUCER_EPOCHS.to_string(),
        Some(
            serde_json::json!([
                { "epoch": first, "from_ts": source.clock().anchor() },
                { "epoch": epoch, "from_ts": ts },
            ])
            .to_string(),
        ),
    );
    source.update_metadata(patch)?;
    let description = if options.hostile {
        format!("agent restarted {}", HOSTILE[0])
    } else {
        "agent restarted; every counter starts from zero".to_string()
    };
    source.append_event(Event {
        description,
        details: Some(format!("{} upgraded demo-agent 2.4.0 to 2.4.1", host.name)),
        id: Some(format!("producer_epoch:{epoch}")),
        kind: Some(keys::EVENT_KIND_PRODUCER_EPOCH.to_string()),
        timestamp: ts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_rows_round_trip_through_the_encoder() {
        let row = demo_row(&[DemoValue::Float(1.5), DemoValue::Int(-3), DemoValue::Int(7)]);
        let rows = vec![WalRow {
            ts: 5,
            wall_offset: 0,
            row,
        }];
        let seg = DemoEncoder.encode("cpu", &rows).unwrap().unwrap();
        let batches = crate::segment::decode_segment(seg.bytes, None).unwrap();
        let schema = batches[0].schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["ts", "load1", "load5", "load15"]);
        assert_eq!(seg.rows, 1);
    }

    #[test]
    fn a_malformed_row_is_an_encoder_error() {
        let rows = vec![WalRow {
            ts: 5,
            wall_offset: 0,
            row: vec![9, 9],
        }];
        assert!(DemoEncoder.encode("cpu", &rows).is_err());
    }
}
