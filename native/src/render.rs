//! `dump-segments` record lines, written byte for byte as the Python renderers write them, for
//! v2 batches that are not control batches and for v0/v1 message sets:
//! - `--format jsonl`: `json.dumps(obj, separators=(",", ":"), ensure_ascii=False)` of the
//!   record object built in `klogtool/log/read/dumper.py`;
//! - text (`--deep-iteration`): `klogtool/output.py`'s `_record_text`, control characters
//!   escaped as `render_text` escapes them;
//! - `--format kafka`: kafka-dump-log's `| offset: ...` lines (`KafkaRenderer._record` in
//!   `klogtool/commands/dump_segments.py`), with the breaks in offset order it reports.
//!
//! `utf8` of invalid UTF-8 is written as Python's decoders write it: `bytes.decode("utf-8",
//! "backslashreplace")` (text, jsonl) and `"replace"` (kafka's StringDecoder, U+FFFD), an
//! invalid sequence ending where CPython's decoder ends it (the Unicode "maximal subpart", as
//! Rust's `Utf8Chunks` ends it). A payload a parser would render (`json`) makes the whole
//! batch go back to the Python renderer.
#![forbid(unsafe_code)]

use std::sync::LazyLock;

use base64::Engine as _;

use crate::batch::{self, Record, Sink};
use crate::control;
use crate::handback::{note, Reason};
use crate::legacy;

/// How keys, values and header values are shown (`--key-decoder`, `--value-decoder`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    Base64,
    Hex,
    Utf8,
    Omit,
}

impl Payload {
    pub fn parse(name: &str) -> Option<Payload> {
        match name {
            "base64" => Some(Payload::Base64),
            "hex" => Some(Payload::Hex),
            "utf8" => Some(Payload::Utf8),
            "none" => Some(Payload::Omit),
            _ => None,
        }
    }
}

pub struct JsonLines {
    pub out: Vec<u8>,
    pub records: usize,
    position: i64,
    print_data: bool,
    key: Payload,
    value: Payload,
    /// Why this renderer cannot write the batch exactly: it goes back to Python.
    refused: Option<Reason>,
    /// Control records are shown decoded (a control batch, `--decoder` other than `none`).
    control: bool,
}

impl JsonLines {
    pub fn new(position: i64, print_data: bool, key: Payload, value: Payload) -> Self {
        JsonLines {
            out: Vec::new(),
            records: 0,
            position,
            print_data,
            key,
            value,
            refused: None,
            control: false,
        }
    }

    fn int(&mut self, v: impl itoa::Integer) {
        push_int(&mut self.out, v);
    }

    fn payload(&mut self, how: Payload, data: Option<&[u8]>) {
        let Some(data) = data else {
            self.out.extend_from_slice(b"null");
            return;
        };
        match how {
            Payload::Omit => self.out.extend_from_slice(b"null"),
            Payload::Base64 => {
                self.out.push(b'"');
                base64_into(&mut self.out, data);
                self.out.push(b'"');
            }
            Payload::Hex => {
                self.out.push(b'"');
                hex_into(&mut self.out, data);
                self.out.push(b'"');
            }
            Payload::Utf8 => {
                self.out.push(b'"');
                for chunk in data.utf8_chunks() {
                    string_body(&mut self.out, chunk.valid());
                    // backslashreplace's `\xNN`, its backslash escaped by json
                    for &b in chunk.invalid() {
                        self.out.extend_from_slice(b"\\\\x");
                        hex_into(&mut self.out, &[b]);
                    }
                }
                self.out.push(b'"');
            }
        }
    }
}

/// `\xNN` (lowercase) of every byte, as Python's `backslashreplace` writes undecodable bytes.
fn backslashed(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        out.extend_from_slice(b"\\x");
        hex_into(out, &[b]);
    }
}

/// A JSON string as Python's json module writes it with `ensure_ascii=False`.
pub fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    string_body(out, s);
    out.push(b'"');
}

/// What `string` writes between the quotes.
fn string_body(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

fn size(v: Option<&[u8]>) -> i64 {
    v.map_or(-1, |b| b.len() as i64)
}

impl Sink for JsonLines {
    fn record(&mut self, r: &Record<'_>) {
        self.records += 1;
        self.out
            .extend_from_slice(b"{\"type\":\"record\",\"offset\":");
        self.int(r.offset);
        self.out.extend_from_slice(b",\"position\":");
        self.int(self.position);
        self.out.extend_from_slice(b",\"timestamp\":");
        self.int(r.timestamp);
        self.out.extend_from_slice(b",\"key_size\":");
        self.int(size(r.key));
        self.out.extend_from_slice(b",\"value_size\":");
        self.int(size(r.value));
        self.out.extend_from_slice(b",\"sequence\":");
        self.int(r.sequence);
        self.out.extend_from_slice(b",\"headers\":[");
        for (i, (k, v)) in r.headers.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.out.extend_from_slice(b"{\"key\":");
            string(&mut self.out, k);
            if self.print_data {
                self.out.extend_from_slice(b",\"value\":");
                self.payload(self.value, *v);
            }
            self.out.push(b'}');
        }
        self.out.push(b']');
        if let Some((crc, valid)) = r.crc {
            self.out.extend_from_slice(b",\"crc\":");
            self.int(crc);
            self.out.extend_from_slice(b",\"crc_valid\":");
            self.out
                .extend_from_slice(if valid { b"true" } else { b"false" });
        }
        if self.control {
            // `"control":{"type":..,"type_id":..,<fields>}` and no payloads
            let Some(c) = self.decoded(r) else { return };
            self.out.extend_from_slice(b",\"control\":{\"type\":\"");
            self.out.extend_from_slice(c.name.as_bytes());
            self.out.extend_from_slice(b"\",\"type_id\":");
            self.int(c.type_id);
            if !c.fields.is_empty() {
                self.out.push(b',');
                self.out.extend_from_slice(c.fields.as_bytes());
            }
            self.out.extend_from_slice(b"}}\n");
            return;
        }
        if self.print_data {
            self.out.extend_from_slice(b",\"key\":");
            self.payload(self.key, r.key);
            self.out.extend_from_slice(b",\"value\":");
            self.payload(self.value, r.value);
        }
        self.out.extend_from_slice(b"}\n");
    }
}

/// What lines are rendered from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// A whole v2 batch.
    V2(&'a [u8]),
    /// A v0/v1 message set: a wrapper's decompressed inner set, or a plain message.
    Legacy(&'a [u8], legacy::Wrapper),
}

/// The JSON lines of every record of `source`, appended to `out`, and their number; or `None`
/// (`out` as it was): the Python renderer writes this batch (control batches, anything the
/// decoder hands back, payloads only Python renders exactly).
#[allow(clippy::too_many_arguments)]
pub fn jsonl(
    source: Source<'_>,
    max_batch_bytes: usize,
    out: &mut Vec<u8>,
    controls: Controls,
    position: i64,
    print_data: bool,
    key: Payload,
    value: Payload,
) -> Option<usize> {
    let lines = render(source, max_batch_bytes, out, controls, |_| {
        JsonLines::new(position, print_data, key, value)
    })?;
    Some(lines.records)
}

/// A sink that writes lines, and may refuse a batch only Python renders exactly.
trait Lines: Sink {
    fn out(&mut self) -> &mut Vec<u8>;
    fn refused(&self) -> Option<Reason>;
    /// Show the records decoded as control records.
    fn decode_control(&mut self);
}

macro_rules! lines {
    ($($t:ty),*) => {$(
        impl Lines for $t {
            fn out(&mut self) -> &mut Vec<u8> {
                &mut self.out
            }
            fn refused(&self) -> Option<Reason> {
                self.refused
            }
            fn decode_control(&mut self) {
                self.control = true;
            }
        }

        impl $t {
            /// The control record `r`, or `None` (the batch goes back to Python).
            fn decoded(&mut self, r: &Record<'_>) -> Option<control::Control> {
                let c = control::decode(r.key, r.value);
                if c.is_none() {
                    self.refused = Some(Reason::ControlBatch);
                }
                c
            }
        }
    )*};
}
lines!(JsonLines, TextLines, KafkaLines);

/// How the records of control batches are shown (`--decoder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Controls {
    /// Not here: control batches are handed back to the Python renderer.
    Python,
    /// Decoded (`--decoder auto` on a topic without an internal decoder).
    Decoded,
    /// As any record, their raw key and value (`--decoder none`).
    Raw,
}

/// Render every record of `source` into the sink `make` builds from the name of its
/// timestamp type, its lines appended to `out` (the sink returned holds none); or `None`, `out`
/// as it was: control records are rendered decoded, by Python, as is anything the decoder or
/// the sink hands back.
fn render<L: Lines>(
    source: Source<'_>,
    max_batch_bytes: usize,
    out: &mut Vec<u8>,
    controls: Controls,
    make: impl FnOnce(&'static str) -> L,
) -> Option<L> {
    let start = out.len();
    out.reserve(estimate(&source));
    let (mut lines, decoded) = match source {
        Source::V2(batch_bytes) => {
            let header = batch::parse_header(batch_bytes)?;
            let is_control = header.attributes & 0x20 != 0;
            if is_control && controls == Controls::Python {
                note(Reason::ControlBatch);
                return None;
            }
            let mut lines = make(if header.log_append_time() {
                "LogAppendTime"
            } else {
                "CreateTime"
            });
            if is_control && controls == Controls::Decoded {
                lines.decode_control();
            }
            *lines.out() = std::mem::take(out);
            let decoded = batch::decode(batch_bytes, max_batch_bytes, &mut lines).is_some();
            (lines, decoded)
        }
        Source::Legacy(raw, wrapper) => {
            let mut lines = make(match (wrapper.magic, wrapper.fixed_timestamp) {
                (0, _) => "NoTimestampType",
                (_, Some(_)) => "LogAppendTime",
                _ => "CreateTime",
            });
            *lines.out() = std::mem::take(out);
            let decoded = legacy::decode(raw, &wrapper, &mut lines).is_some();
            (lines, decoded)
        }
    };
    *out = std::mem::take(lines.out());
    let refused = lines.refused().filter(|_| decoded);
    if let Some(reason) = refused {
        note(reason);
    }
    if !decoded || refused.is_some() {
        out.truncate(start);
        return None;
    }
    Some(lines)
}

/// About how many bytes the lines of `source` take (a first guess: the buffer still grows as
/// needed).
pub fn estimate(source: &Source<'_>) -> usize {
    match *source {
        Source::V2(batch_bytes) => {
            let records = batch::parse_header(batch_bytes).map_or(0, |h| h.records_count);
            reserve(batch_bytes.len(), records)
        }
        // messages are 26 bytes and more
        Source::Legacy(raw, _) => reserve(raw.len(), i32::try_from(raw.len() / 64).unwrap_or(0)),
    }
}

/// Text lines (`dump-segments --deep-iteration`, text format).
pub struct TextLines {
    pub out: Vec<u8>,
    pub records: usize,
    print_data: bool,
    key: Payload,
    value: Payload,
    refused: Option<Reason>,
    control: bool,
}

/// Append `s` with C0 controls but tab, and DEL, shown as `\xNN`, and C1 controls (U+0080 to
/// U+009F, a CSI among them) as `\u00NN` (`render_text`'s escapes).
fn escaped(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let c1 = b == 0xc2 && matches!(bytes.get(i + 1), Some(0x80..=0x9f));
        if (b < 0x20 && b != b'\t') || b == 0x7f || c1 {
            out.extend_from_slice(&bytes[start..i]);
            if c1 {
                out.extend_from_slice(format!("\\u{:04x}", bytes[i + 1]).as_bytes());
                i += 1;
            } else {
                out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
            }
            start = i + 1;
        }
        i += 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// The largest epoch millisecond Python's `datetime.fromtimestamp` shows (9999-12-31).
const MAX_DATETIME_MS: i64 = 253_402_300_799_999;

/// `1700000002000 (2023-11-14T22:13:22.000Z)`, as `klogtool.log.writing.format_ts` writes it
/// with milliseconds; a negative or out-of-range timestamp as the bare number.
pub fn timestamp(out: &mut Vec<u8>, ms: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(ms).as_bytes());
    if !(0..=MAX_DATETIME_MS).contains(&ms) {
        return;
    }
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // days since 1970-01-01 to a civil date (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let two = |out: &mut Vec<u8>, v: i64, sep: u8| {
        out.push(b'0' + (v / 10) as u8);
        out.push(b'0' + (v % 10) as u8);
        out.push(sep);
    };
    out.extend_from_slice(b" (");
    out.extend_from_slice(itoa::Buffer::new().format(year).as_bytes()); // 1970..=9999
    out.push(b'-');
    two(out, month, b'-');
    two(out, day, b'T');
    two(out, rem / 3600, b':');
    two(out, rem % 3600 / 60, b':');
    two(out, rem % 60, b'.');
    let frac = ms % 1000;
    out.push(b'0' + (frac / 100) as u8);
    two(out, frac % 100, b'Z');
    out.push(b')');
}

/// Append `data` as standard base64 with padding: its leading whole 24-byte blocks by the
/// `base64` crate's SIMD engine, which takes only inputs of 128 bytes or more; the rest (all of
/// a shorter payload: most keys and values) two output characters per lookup in `PAIRS`. The
/// crate's scalar encoder, a lookup per character, was 16% of a `--print-data` dump's CPU
/// samples on ~100-byte values (perf).
fn base64_into(out: &mut Vec<u8>, data: &[u8]) {
    let start = out.len();
    out.resize(start + data.len().div_ceil(3) * 4, 0);
    // the SIMD engine's loop reads 32 bytes to encode 24: it stops 8 bytes before the end
    let bulk = if data.len() >= 128 {
        (data.len() - 8) / 24 * 24
    } else {
        0
    };
    let (head, tail) = data.split_at(bulk);
    let (out_head, out_tail) = out[start..].split_at_mut(bulk / 3 * 4);
    if !head.is_empty() {
        let n = standard_base64().encode_slice(head, out_head).unwrap_or(0);
        debug_assert_eq!(n, out_head.len());
    }
    base64_pairs(tail, out_tail);
}

const BASE64_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The two base64 characters of every 12-bit value.
static PAIRS: [[u8; 2]; 4096] = {
    let mut t = [[0u8; 2]; 4096];
    let mut i = 0;
    while i < 4096 {
        t[i] = [BASE64_ALPHABET[i >> 6], BASE64_ALPHABET[i & 63]];
        i += 1;
    }
    t
};

/// `data` as padded base64 into `out`, exactly `data.len().div_ceil(3) * 4` bytes.
fn base64_pairs(data: &[u8], out: &mut [u8]) {
    let groups = data.chunks_exact(3);
    let rest = groups.remainder();
    let mut quads = out.chunks_exact_mut(4);
    for (g, q) in groups.zip(&mut quads) {
        let n = usize::from(g[0]) << 16 | usize::from(g[1]) << 8 | usize::from(g[2]);
        q[..2].copy_from_slice(&PAIRS[n >> 12]);
        q[2..].copy_from_slice(&PAIRS[n & 0xfff]);
    }
    // (an `out` longer than the encoding keeps its extra bytes: nothing here indexes past)
    if let (Some(q), Some(&b0)) = (quads.next(), rest.first()) {
        let b1 = rest.get(1).copied().unwrap_or(0);
        let n = usize::from(b0) << 16 | usize::from(b1) << 8;
        q[..2].copy_from_slice(&PAIRS[n >> 12]);
        q[2] = if rest.len() == 2 {
            PAIRS[n & 0xfff][0]
        } else {
            b'='
        };
        q[3] = b'=';
    }
}

/// The base64 crate's SIMD engine where it has one for the CPU (AVX2, NEON; detected once,
/// the scalar engine otherwise).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn standard_base64() -> &'static impl base64::Engine {
    static SIMD: LazyLock<base64::engine::Simd> =
        LazyLock::new(|| base64::engine::Simd::standard(base64::engine::general_purpose::PAD));
    &*SIMD
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn standard_base64() -> &'static impl base64::Engine {
    &base64::engine::general_purpose::STANDARD
}

/// Append `data` as lowercase hex.
fn hex_into(out: &mut Vec<u8>, data: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in data {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0x0f)]);
    }
}

impl TextLines {
    pub fn new(print_data: bool, key: Payload, value: Payload) -> Self {
        TextLines {
            out: Vec::new(),
            records: 0,
            print_data,
            key,
            value,
            refused: None,
            control: false,
        }
    }

    /// A payload as `_scalar(decode_bytes(...))` shows it; false where it would be `None`.
    fn payload(&mut self, how: Payload, data: Option<&[u8]>) -> bool {
        let Some(data) = data else {
            return false;
        };
        match how {
            Payload::Omit => return false,
            Payload::Base64 => base64_into(&mut self.out, data),
            Payload::Hex => hex_into(&mut self.out, data),
            Payload::Utf8 => {
                for chunk in data.utf8_chunks() {
                    escaped(&mut self.out, chunk.valid());
                    backslashed(&mut self.out, chunk.invalid());
                }
            }
        }
        true
    }

    fn size(&mut self, v: Option<&[u8]>) {
        match v {
            Some(b) => {
                self.out
                    .extend_from_slice(itoa::Buffer::new().format(b.len()).as_bytes());
                self.out.extend_from_slice(b" B");
            }
            None => self.out.extend_from_slice(b"null"),
        }
    }
}

impl Sink for TextLines {
    fn record(&mut self, r: &Record<'_>) {
        self.records += 1;
        self.out.extend_from_slice(b"  offset ");
        self.out
            .extend_from_slice(itoa::Buffer::new().format(r.offset).as_bytes());
        self.out.extend_from_slice(b"  ts ");
        timestamp(&mut self.out, r.timestamp);
        if r.sequence >= 0 {
            self.out.extend_from_slice(b"  seq ");
            self.out
                .extend_from_slice(itoa::Buffer::new().format(r.sequence).as_bytes());
        }
        self.out.extend_from_slice(b"  key ");
        self.size(r.key);
        self.out.extend_from_slice(b", value ");
        self.size(r.value);
        if let Some((_, false)) = r.crc {
            self.out.extend_from_slice(b"  CRC INVALID");
        }
        if self.control {
            // `control COMMIT {"version":0,...}` before the headers, and no payloads
            let Some(c) = self.decoded(r) else { return };
            self.out.extend_from_slice(b"  control ");
            self.out.extend_from_slice(c.name.as_bytes());
            if !c.fields.is_empty() {
                self.out.extend_from_slice(b" {");
                self.out.extend_from_slice(c.fields.as_bytes());
                self.out.push(b'}');
            }
        }
        if !r.headers.is_empty() {
            self.out.extend_from_slice(b"  headers [");
            for (i, (k, v)) in r.headers.iter().enumerate() {
                if i > 0 {
                    self.out.extend_from_slice(b", ");
                }
                escaped(&mut self.out, k);
                if self.print_data {
                    let mark = self.out.len();
                    self.out.push(b'=');
                    if !self.payload(self.value, *v) {
                        self.out.truncate(mark);
                    }
                }
            }
            self.out.push(b']');
        }
        if self.print_data && !self.control {
            self.out.extend_from_slice(b"  key: ");
            if !self.payload(self.key, r.key) {
                self.out.extend_from_slice(b"null");
            }
            self.out.extend_from_slice(b"  value: ");
            if !self.payload(self.value, r.value) {
                self.out.extend_from_slice(b"null");
            }
        }
        self.out.push(b'\n');
    }
}

/// kafka-dump-log's record lines.
pub struct KafkaLines {
    pub out: Vec<u8>,
    pub records: usize,
    /// Offsets of the first and last record, and each `(previous, next)` pair of records
    /// whose offsets are not consecutive.
    pub first: Option<i64>,
    pub last: Option<i64>,
    pub breaks: Vec<(i64, i64)>,
    ts_type: &'static str,
    print_data: bool,
    key: Payload,
    value: Payload,
    refused: Option<Reason>,
    control: bool,
}

impl KafkaLines {
    fn payload(&mut self, label: &[u8], how: Payload, data: Option<&[u8]>) {
        let Some(data) = data else {
            return;
        };
        match how {
            Payload::Omit => {}
            Payload::Base64 => {
                self.out.extend_from_slice(label);
                base64_into(&mut self.out, data);
            }
            Payload::Hex => {
                self.out.extend_from_slice(label);
                hex_into(&mut self.out, data);
            }
            Payload::Utf8 => {
                // StringDecoder: each invalid sequence becomes one U+FFFD (Python's "replace")
                self.out.extend_from_slice(label);
                for chunk in data.utf8_chunks() {
                    self.out.extend_from_slice(chunk.valid().as_bytes());
                    if !chunk.invalid().is_empty() {
                        self.out.extend_from_slice("\u{fffd}".as_bytes());
                    }
                }
            }
        }
    }
}

impl Sink for KafkaLines {
    fn record(&mut self, r: &Record<'_>) {
        self.records += 1;
        // -1 means "no record yet" to the Python renderer, even after a record at offset -1
        if let Some(last) = self.last.filter(|&last| last != -1) {
            if Some(r.offset) != last.checked_add(1) {
                self.breaks.push((last, r.offset));
            }
        }
        self.first.get_or_insert(r.offset);
        self.last = Some(r.offset);
        let mut num = itoa::Buffer::new();
        self.out.extend_from_slice(b"| offset: ");
        self.out.extend_from_slice(num.format(r.offset).as_bytes());
        self.out.push(b' ');
        self.out.extend_from_slice(self.ts_type.as_bytes());
        self.out.extend_from_slice(b": ");
        self.out
            .extend_from_slice(num.format(r.timestamp).as_bytes());
        self.out.extend_from_slice(b" keySize: ");
        self.out
            .extend_from_slice(num.format(r.key.map_or(-1, |k| k.len() as i64)).as_bytes());
        self.out.extend_from_slice(b" valueSize: ");
        self.out.extend_from_slice(
            num.format(r.value.map_or(-1, |v| v.len() as i64))
                .as_bytes(),
        );
        match r.crc {
            None => {
                self.out.extend_from_slice(b" sequence: ");
                self.out
                    .extend_from_slice(num.format(r.sequence).as_bytes());
                self.out.extend_from_slice(b" headerKeys: [");
                for (i, (k, _)) in r.headers.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.out.extend_from_slice(k.as_bytes());
                }
                self.out.push(b']');
            }
            // v0/v1, with kafka-dump-log's stray brace
            Some((crc, valid)) => {
                self.out.extend_from_slice(if valid {
                    b" isValid: true"
                } else {
                    b" isValid: false"
                });
                self.out.extend_from_slice(b" crc: ");
                self.out.extend_from_slice(num.format(crc).as_bytes());
                self.out.push(b'}');
            }
        }
        if self.control {
            let Some(c) = self.decoded(r) else { return };
            match c.name {
                "ABORT" | "COMMIT" => {
                    self.out.extend_from_slice(b" endTxnMarker: ");
                    self.out.extend_from_slice(c.name.as_bytes());
                    self.out.extend_from_slice(b" coordinatorEpoch: ");
                    // the fields end with the epoch: `..."coordinatorEpoch":<epoch>`
                    let epoch = c.fields.rsplit(':').next().unwrap_or_default();
                    self.out.extend_from_slice(epoch.as_bytes());
                }
                "SNAPSHOT_HEADER" | "SNAPSHOT_FOOTER" | "KRAFT_VERSION" | "KRAFT_VOTERS" => {
                    self.out.extend_from_slice(match c.name {
                        "SNAPSHOT_HEADER" => b" SnapshotHeader {",
                        "SNAPSHOT_FOOTER" => b" SnapshotFooter {",
                        "KRAFT_VERSION" => b" KRaftVersion {",
                        _ => b" KRaftVoters {",
                    });
                    self.out.extend_from_slice(c.fields.as_bytes());
                    self.out.push(b'}');
                }
                _ => {
                    self.out.extend_from_slice(b" controlType: ");
                    self.out.extend_from_slice(c.name.as_bytes());
                    self.out.push(b'(');
                    self.out.extend_from_slice(num.format(c.type_id).as_bytes());
                    self.out.push(b')');
                }
            }
        } else if self.print_data {
            self.payload(b" key: ", self.key, r.key);
            self.payload(b" payload: ", self.value, r.value);
        }
        self.out.push(b'\n');
    }
}

/// kafka-dump-log's lines of every record of `source`, appended to `out`, or `None` (see
/// `jsonl`).
pub fn kafka(
    source: Source<'_>,
    max_batch_bytes: usize,
    out: &mut Vec<u8>,
    controls: Controls,
    print_data: bool,
    key: Payload,
    value: Payload,
) -> Option<KafkaLines> {
    render(source, max_batch_bytes, out, controls, |ts_type| {
        KafkaLines {
            out: Vec::new(),
            records: 0,
            first: None,
            last: None,
            breaks: Vec::new(),
            ts_type,
            print_data,
            key,
            value,
            refused: None,
            control: false,
        }
    })
}

/// A v2 batch header's fields, as `klogtool/formats/v2.py`'s `DefaultBatch` reads them.
struct BatchHead {
    base_offset: i64,
    size: usize,
    partition_leader_epoch: i32,
    crc: u32,
    attributes: i16,
    last_offset_delta: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    count: i32,
}

impl BatchHead {
    /// The header of `batch`, a whole v2 batch (`batch::parse_header`'s checks).
    fn of(batch: &[u8]) -> Option<BatchHead> {
        let h = batch::parse_header(batch)?;
        Some(BatchHead {
            base_offset: h.base_offset,
            size: batch.len(),
            partition_leader_epoch: i32::from_be_bytes(be(batch, 12)?),
            crc: u32::from_be_bytes(be(batch, 17)?),
            attributes: h.attributes,
            last_offset_delta: h.last_offset_delta,
            base_timestamp: h.base_timestamp,
            max_timestamp: h.max_timestamp,
            producer_id: i64::from_be_bytes(be(batch, 43)?),
            producer_epoch: i16::from_be_bytes(be(batch, 51)?),
            base_sequence: h.base_sequence,
            count: h.records_count,
        })
    }

    /// Python's unbounded `base_offset + last_offset_delta`.
    fn last_offset(&self) -> i128 {
        i128::from(self.base_offset) + i128::from(self.last_offset_delta)
    }

    /// `v2.sequence_at(base_sequence, last_offset_delta)`: -1 without a sequence, wrapping
    /// past Int.MAX to 0.
    fn last_sequence(&self) -> i64 {
        if self.base_sequence < 0 {
            return -1;
        }
        let seq = i64::from(self.base_sequence) + i64::from(self.last_offset_delta);
        if seq > i64::from(i32::MAX) {
            seq - (1 << 31)
        } else {
            seq
        }
    }

    fn flag(&self, mask: i16) -> bool {
        self.attributes & mask != 0
    }

    fn timestamp_type(&self) -> &'static str {
        if self.flag(0x08) {
            "LogAppendTime"
        } else {
            "CreateTime"
        }
    }

    fn delete_horizon_ms(&self) -> Option<i64> {
        self.flag(0x40).then_some(self.base_timestamp)
    }

    /// `codecs.CODEC_NAMES`, `unknown(N)` for the ids 5-7.
    fn compression(&self, out: &mut Vec<u8>) {
        match self.attributes & 0x07 {
            0 => out.extend_from_slice(b"none"),
            1 => out.extend_from_slice(b"gzip"),
            2 => out.extend_from_slice(b"snappy"),
            3 => out.extend_from_slice(b"lz4"),
            4 => out.extend_from_slice(b"zstd"),
            n => {
                out.extend_from_slice(b"unknown(");
                push_int(out, n);
                out.push(b')');
            }
        }
    }
}

/// The `N` bytes of `b` at `at`.
fn be<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at + N)?.try_into().ok()
}

fn push_int(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn push_bool(out: &mut Vec<u8>, v: bool) {
    out.extend_from_slice(if v { b"true" } else { b"false" });
}

/// The `dump-segments` line of a whole v2 batch at `position` (its CRC held if `crc_valid`),
/// byte for byte as the Python renderers write `klogtool/log/objects.py`'s batch object:
/// `format` "jsonl" (`json.dumps`), "text" (`output._batch_text`) or "kafka"
/// (`KafkaRenderer._batch`), appended to `out`. False, nothing appended, if `batch` is not a
/// whole v2 batch.
pub fn batch_line(
    out: &mut Vec<u8>,
    format: &str,
    batch: &[u8],
    position: i64,
    crc_valid: bool,
) -> bool {
    let Some(h) = BatchHead::of(batch) else {
        return false;
    };
    match format {
        "jsonl" => batch_json(out, &h, position, crc_valid),
        "text" => batch_text(out, &h, position, crc_valid),
        "kafka" => batch_kafka(out, &h, position, crc_valid),
        _ => return false,
    }
    out.push(b'\n');
    true
}

fn batch_json(out: &mut Vec<u8>, h: &BatchHead, position: i64, crc_valid: bool) {
    out.extend_from_slice(b"{\"type\":\"batch\",\"position\":");
    push_int(out, position);
    out.extend_from_slice(b",\"base_offset\":");
    push_int(out, h.base_offset);
    out.extend_from_slice(b",\"last_offset\":");
    push_int(out, h.last_offset());
    out.extend_from_slice(b",\"count\":");
    push_int(out, h.count);
    out.extend_from_slice(b",\"magic\":2,\"compression\":\"");
    h.compression(out);
    out.extend_from_slice(b"\",\"crc\":");
    push_int(out, h.crc);
    out.extend_from_slice(b",\"crc_valid\":");
    push_bool(out, crc_valid);
    out.extend_from_slice(b",\"size\":");
    push_int(out, h.size);
    out.extend_from_slice(b",\"partition_leader_epoch\":");
    push_int(out, h.partition_leader_epoch);
    out.extend_from_slice(b",\"timestamp_type\":\"");
    out.extend_from_slice(h.timestamp_type().as_bytes());
    out.extend_from_slice(b"\",\"base_timestamp\":");
    push_int(out, h.base_timestamp);
    out.extend_from_slice(b",\"max_timestamp\":");
    push_int(out, h.max_timestamp);
    out.extend_from_slice(b",\"producer_id\":");
    push_int(out, h.producer_id);
    out.extend_from_slice(b",\"producer_epoch\":");
    push_int(out, h.producer_epoch);
    out.extend_from_slice(b",\"base_sequence\":");
    push_int(out, h.base_sequence);
    out.extend_from_slice(b",\"last_sequence\":");
    push_int(out, h.last_sequence());
    out.extend_from_slice(b",\"is_transactional\":");
    push_bool(out, h.flag(0x10));
    out.extend_from_slice(b",\"is_control\":");
    push_bool(out, h.flag(0x20));
    out.extend_from_slice(b",\"delete_horizon_ms\":");
    match h.delete_horizon_ms() {
        Some(ms) => push_int(out, ms),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

fn batch_text(out: &mut Vec<u8>, h: &BatchHead, position: i64, crc_valid: bool) {
    out.extend_from_slice(b"batch @");
    push_int(out, position);
    out.extend_from_slice(b" offsets ");
    push_int(out, h.base_offset);
    out.extend_from_slice(b"..");
    push_int(out, h.last_offset());
    out.extend_from_slice(b" (");
    push_int(out, h.count);
    out.extend_from_slice(if h.count == 1 {
        b" record)"
    } else {
        b" records)"
    });
    out.extend_from_slice(b"  magic 2 ");
    h.compression(out);
    out.push(b' ');
    push_int(out, h.size);
    out.extend_from_slice(b" bytes  ");
    out.extend_from_slice(h.timestamp_type().as_bytes());
    out.push(b' ');
    timestamp(out, h.max_timestamp);
    out.extend_from_slice(b"  crc ");
    push_int(out, h.crc);
    out.extend_from_slice(if crc_valid { b" ok" } else { b" INVALID" });
    if h.partition_leader_epoch >= 0 {
        out.extend_from_slice(b"  leader epoch ");
        push_int(out, h.partition_leader_epoch);
    }
    if h.producer_id >= 0 {
        out.extend_from_slice(b"  producer ");
        push_int(out, h.producer_id);
        out.extend_from_slice(b" epoch ");
        push_int(out, h.producer_epoch);
        out.extend_from_slice(b" seq ");
        push_int(out, h.base_sequence);
        out.extend_from_slice(b"..");
        push_int(out, h.last_sequence());
    }
    if h.flag(0x10) {
        out.extend_from_slice(b"  transactional");
    }
    if h.flag(0x20) {
        out.extend_from_slice(b"  control");
    }
    if let Some(ms) = h.delete_horizon_ms() {
        out.extend_from_slice(b"  delete horizon ");
        timestamp(out, ms);
    }
}

fn batch_kafka(out: &mut Vec<u8>, h: &BatchHead, position: i64, crc_valid: bool) {
    out.extend_from_slice(b"baseOffset: ");
    push_int(out, h.base_offset);
    out.extend_from_slice(b" lastOffset: ");
    push_int(out, h.last_offset());
    out.extend_from_slice(b" count: ");
    push_int(out, h.count);
    out.extend_from_slice(b" baseSequence: ");
    push_int(out, h.base_sequence);
    out.extend_from_slice(b" lastSequence: ");
    push_int(out, h.last_sequence());
    out.extend_from_slice(b" producerId: ");
    push_int(out, h.producer_id);
    out.extend_from_slice(b" producerEpoch: ");
    push_int(out, h.producer_epoch);
    out.extend_from_slice(b" partitionLeaderEpoch: ");
    push_int(out, h.partition_leader_epoch);
    out.extend_from_slice(b" isTransactional: ");
    push_bool(out, h.flag(0x10));
    out.extend_from_slice(b" isControl: ");
    push_bool(out, h.flag(0x20));
    out.extend_from_slice(b" deleteHorizonMs: ");
    match h.delete_horizon_ms().filter(|&ms| ms >= 0) {
        Some(ms) => {
            out.extend_from_slice(b"OptionalLong[");
            push_int(out, ms);
            out.push(b']');
        }
        None => out.extend_from_slice(b"OptionalLong.empty"),
    }
    out.extend_from_slice(b" position: ");
    push_int(out, position);
    out.push(b' ');
    out.extend_from_slice(h.timestamp_type().as_bytes());
    out.extend_from_slice(b": ");
    push_int(out, h.max_timestamp);
    out.extend_from_slice(b" size: ");
    push_int(out, h.size);
    out.extend_from_slice(b" magic: 2 compresscodec: ");
    h.compression(out);
    out.extend_from_slice(b" crc: ");
    push_int(out, h.crc);
    out.extend_from_slice(b" isvalid: ");
    push_bool(out, crc_valid);
}

/// About what lines take: the payloads (a third more as base64) and ~160 bytes of field names
/// and numbers a record (a first guess: the buffer still grows as needed).
fn reserve(bytes: usize, records: i32) -> usize {
    let records = usize::try_from(records).unwrap_or(0);
    (bytes * 3 / 2).saturating_add(records.min(1 << 20) * 160)
}

/// The text lines of every record of `source`, appended to `out`, and their number; or `None`
/// (see `jsonl`).
pub fn text(
    source: Source<'_>,
    max_batch_bytes: usize,
    out: &mut Vec<u8>,
    controls: Controls,
    print_data: bool,
    key: Payload,
    value: Payload,
) -> Option<usize> {
    let lines = render(source, max_batch_bytes, out, controls, |_| {
        TextLines::new(print_data, key, value)
    })?;
    Some(lines.records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::HEADER_SIZE;

    #[test]
    fn base64_is_the_scalar_engines_at_every_length() {
        // lengths across the SIMD engine's blocks and the pairs' tail, after other text; every
        // byte value in every position of a group
        let data: Vec<u8> = (0..1200u32).map(|i| (i * 7919 % 256) as u8).collect();
        for n in 0..data.len() {
            let mut out = b"x".to_vec();
            base64_into(&mut out, &data[..n]);
            let want = base64::engine::general_purpose::STANDARD.encode(&data[..n]);
            assert_eq!(&out[1..], want.as_bytes(), "{n} bytes");
        }
    }

    #[test]
    fn base64_pairs_leaves_what_follows_the_encoding_of_an_out_too_long() {
        for n in 0..7usize {
            let mut out = vec![b'#'; n.div_ceil(3) * 4 + 4];
            base64_pairs(&b"abcdef"[..n], &mut out);
            let want = base64::engine::general_purpose::STANDARD.encode(&b"abcdef"[..n]);
            assert_eq!(out[..want.len()], *want.as_bytes(), "{n} bytes");
            assert_eq!(out[want.len()..], *b"####", "{n} bytes");
        }
    }

    #[test]
    fn batch_lines_in_each_rendering() {
        // a LogAppendTime batch, transactional, with a delete horizon and a sequence that wraps
        let mut b = vec![0u8; HEADER_SIZE + 3];
        b[..8].copy_from_slice(&41i64.to_be_bytes());
        b[8..12].copy_from_slice(&(HEADER_SIZE as i32 + 3 - 12).to_be_bytes());
        b[12..16].copy_from_slice(&(-1i32).to_be_bytes());
        b[16] = 2;
        b[17..21].copy_from_slice(&4_000_000_000u32.to_be_bytes());
        b[21..23].copy_from_slice(&(0x08i16 | 0x10 | 0x40 | 5).to_be_bytes());
        b[23..27].copy_from_slice(&2i32.to_be_bytes());
        b[27..35].copy_from_slice(&1_700_000_000_000i64.to_be_bytes());
        b[35..43].copy_from_slice(&1_700_000_002_000i64.to_be_bytes());
        b[43..51].copy_from_slice(&7i64.to_be_bytes());
        b[51..53].copy_from_slice(&3i16.to_be_bytes());
        b[53..57].copy_from_slice(&(i32::MAX - 1).to_be_bytes());
        b[57..61].copy_from_slice(&1i32.to_be_bytes());
        let line = |format| {
            let mut out = b"before\n".to_vec();
            assert!(batch_line(&mut out, format, &b, 99, false));
            String::from_utf8(out.split_off(7)).unwrap()
        };
        let (jsonl, text, kafka) = (line("jsonl"), line("text"), line("kafka"));
        assert_eq!(
            jsonl,
            "{\"type\":\"batch\",\"position\":99,\"base_offset\":41,\"last_offset\":43,\
             \"count\":1,\"magic\":2,\"compression\":\"unknown(5)\",\"crc\":4000000000,\
             \"crc_valid\":false,\"size\":64,\"partition_leader_epoch\":-1,\
             \"timestamp_type\":\"LogAppendTime\",\"base_timestamp\":1700000000000,\
             \"max_timestamp\":1700000002000,\"producer_id\":7,\"producer_epoch\":3,\
             \"base_sequence\":2147483646,\"last_sequence\":0,\"is_transactional\":true,\
             \"is_control\":false,\"delete_horizon_ms\":1700000000000}\n"
        );
        assert_eq!(
            text,
            "batch @99 offsets 41..43 (1 record)  magic 2 unknown(5) 64 bytes  LogAppendTime \
             1700000002000 (2023-11-14T22:13:22.000Z)  crc 4000000000 INVALID  producer 7 \
             epoch 3 seq 2147483646..0  transactional  delete horizon 1700000000000 \
             (2023-11-14T22:13:20.000Z)\n"
        );
        assert_eq!(
            kafka,
            "baseOffset: 41 lastOffset: 43 count: 1 baseSequence: 2147483646 lastSequence: 0 \
             producerId: 7 producerEpoch: 3 partitionLeaderEpoch: -1 isTransactional: true \
             isControl: false deleteHorizonMs: OptionalLong[1700000000000] position: 99 \
             LogAppendTime: 1700000002000 size: 64 magic: 2 compresscodec: unknown(5) \
             crc: 4000000000 isvalid: false\n"
        );
        // not a whole v2 batch: none
        let mut out = Vec::new();
        assert!(!batch_line(&mut out, "jsonl", &b[..60], 0, true));
        b[16] = 1;
        assert!(!batch_line(&mut out, "jsonl", &b, 0, true) && out.is_empty());
    }

    #[test]
    fn timestamps_like_format_ts() {
        let show = |ms| {
            let mut out = Vec::new();
            timestamp(&mut out, ms);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            show(1_700_000_002_000),
            "1700000002000 (2023-11-14T22:13:22.000Z)"
        );
        assert_eq!(show(0), "0 (1970-01-01T00:00:00.000Z)");
        assert_eq!(
            show(951_782_400_123),
            "951782400123 (2000-02-29T00:00:00.123Z)"
        );
        assert_eq!(show(-1), "-1");
        assert_eq!(show(MAX_DATETIME_MS + 1), "253402300800000");
    }

    #[test]
    fn strings_escape_like_python_json() {
        let mut out = Vec::new();
        string(&mut out, "a\"b\\c\nd\u{1}é😀\u{7f}");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"b\\\\c\\nd\\u0001é😀\u{7f}\""
        );
    }
}
