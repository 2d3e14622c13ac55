//! Records in Arrow's columnar layout: validity bitmaps, 32-bit offsets and data buffers that
//! Python wraps with `pyarrow.Array.from_buffers` without copying them again.
#![forbid(unsafe_code)]

use std::sync::{Arc, Mutex};

use crate::batch::{self, Record, Sink};
use crate::legacy;

/// Data buffers of one column that Python has finished with, for the next rows: fresh memory
/// costs a page fault every 4 KiB, which for 1 KB values costs about what decoding them does.
/// Shared with the buffers handed to Python, which give their memory back when dropped.
#[derive(Clone)]
pub struct Spares {
    kept: Arc<Mutex<Vec<Vec<u8>>>>,
    /// How many are kept at most, and how large each may be.
    keep: usize,
    largest: usize,
}

impl Default for Spares {
    /// A column's: the consumer holds a chunk or two while the next is built.
    fn default() -> Self {
        Spares::new(2, usize::MAX)
    }
}

/// The spares of the four payload columns, one set for the whole process: every builder
/// (a new one per export split or Spark task) takes the buffers that Python gave back to the
/// ones before it. Per builder they went away with it, and each new builder's first chunks
/// were fresh memory again: with glibc's malloc, ~16 MB buffers freed in another order than
/// they were made go back to the kernel, so 4-16k minor page faults and up to 3x the time a
/// pass (`bench/bench_alloc.py`). At most two buffers a column stay, as before.
pub fn shared_spares() -> [Spares; 4] {
    static SHARED: std::sync::OnceLock<[Spares; 4]> = std::sync::OnceLock::new();
    SHARED.get_or_init(Default::default).clone()
}

impl Spares {
    pub fn new(keep: usize, largest: usize) -> Self {
        Spares {
            kept: Arc::default(),
            keep,
            largest,
        }
    }

    pub fn give(&self, mut buffer: Vec<u8>) {
        if buffer.capacity() > self.largest {
            return;
        }
        buffer.clear();
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() < self.keep {
                kept.push(buffer);
            }
        }
    }

    /// An empty buffer with room for `n` bytes: a spare that has it, else a new one.
    pub fn get(&self, n: usize) -> Vec<u8> {
        if let Ok(mut kept) = self.kept.lock() {
            if let Some(i) = kept.iter().position(|b| b.capacity() >= n) {
                return kept.swap_remove(i);
            }
        }
        Vec::with_capacity(n)
    }
}

/// An Arrow validity bitmap (bit set = value present) and its null count.
#[derive(Default)]
pub struct Bitmap {
    pub bytes: Vec<u8>,
    pub nulls: usize,
    len: usize,
}

impl Bitmap {
    fn push(&mut self, valid: bool) {
        if self.len.is_multiple_of(8) {
            self.bytes.push(0);
        }
        if valid {
            self.bytes[self.len / 8] |= 1 << (self.len % 8);
        } else {
            self.nulls += 1;
        }
        self.len += 1;
    }

    fn truncate(&mut self, len: usize, nulls: usize) {
        self.len = len;
        self.nulls = nulls;
        self.bytes.truncate(len.div_ceil(8));
        if !len.is_multiple_of(8) {
            if let Some(last) = self.bytes.last_mut() {
                *last &= (1u8 << (len % 8)) - 1;
            }
        }
    }
}

/// A nullable binary (or UTF-8 string) column.
#[derive(Default)]
pub struct Binary {
    pub validity: Bitmap,
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
}

impl Binary {
    fn new() -> Self {
        Binary {
            offsets: vec![0],
            ..Default::default()
        }
    }

    /// Empty, its data in a spare buffer when there is one (a new builder's first chunk then
    /// grows in memory already touched).
    fn from_spares(spares: &Spares) -> Self {
        Binary {
            data: spares.get(0),
            ..Binary::new()
        }
    }

    fn push(&mut self, v: Option<&[u8]>) {
        self.validity.push(v.is_some());
        if let Some(bytes) = v {
            self.data.extend_from_slice(bytes);
        }
        // Checked by `Columns::fits` before a batch is added: the data stays under 2 GiB.
        self.offsets.push(self.data.len() as i32);
    }

    fn mark(&self) -> (usize, usize, usize) {
        (self.len(), self.data.len(), self.validity.nulls)
    }

    fn rollback(&mut self, (len, data, nulls): (usize, usize, usize)) {
        self.validity.truncate(len, nulls);
        self.offsets.truncate(len + 1);
        self.data.truncate(data);
    }

    pub fn len(&self) -> usize {
        self.validity.len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The record columns of many batches, appended batch by batch.
pub struct Columns {
    pub offsets: Vec<i64>,
    pub timestamps: Vec<i64>,
    pub sequences: Vec<i32>,
    pub batch_index: Vec<i32>,
    pub keys: Binary,
    pub values: Binary,
    /// `headers` is a list column, null for a record without headers.
    pub header_validity: Bitmap,
    pub header_offsets: Vec<i32>,
    pub header_keys: Binary,
    pub header_values: Binary,
    /// For the data of keys, values, header keys and header values.
    pub spares: [Spares; 4],
    batch: i32,
    max_batch_bytes: usize,
    /// A v0/v1 record of the batch being added failed its CRC (the reference reports it).
    bad_crc: bool,
    /// The window of the batch's records appended (`skip..stop`), so that a batch of millions
    /// of tiny records becomes rows a window at a time; `seen` counts the batch's records.
    skip: usize,
    stop: usize,
    seen: usize,
}

impl Columns {
    /// The columns so far, leaving this builder empty with room for as many again (so that
    /// the buffers move to Python whole, and the next rows need no regrowing).
    pub fn take(&mut self) -> Columns {
        let mut fresh = Columns::new(self.max_batch_bytes);
        fresh.batch = self.batch;
        fresh.spares = self.spares.clone();
        let n = self.len();
        for v in [&mut fresh.offsets, &mut fresh.timestamps] {
            v.reserve(n);
        }
        for v in [&mut fresh.sequences, &mut fresh.batch_index] {
            v.reserve(n);
        }
        for ((b, old), spares) in [
            (&mut fresh.keys, &self.keys),
            (&mut fresh.values, &self.values),
            (&mut fresh.header_keys, &self.header_keys),
            (&mut fresh.header_values, &self.header_values),
        ]
        .into_iter()
        .zip(&self.spares)
        {
            b.offsets.reserve(old.offsets.len());
            if b.data.capacity() < old.data.len() {
                spares.give(std::mem::take(&mut b.data));
                b.data = spares.get(old.data.len());
            }
        }
        std::mem::replace(self, fresh)
    }

    pub fn new(max_batch_bytes: usize) -> Self {
        let spares = shared_spares();
        Columns {
            offsets: Vec::new(),
            timestamps: Vec::new(),
            sequences: Vec::new(),
            batch_index: Vec::new(),
            keys: Binary::from_spares(&spares[0]),
            values: Binary::from_spares(&spares[1]),
            header_validity: Bitmap::default(),
            header_offsets: vec![0],
            header_keys: Binary::from_spares(&spares[2]),
            header_values: Binary::from_spares(&spares[3]),
            spares,
            batch: 0,
            max_batch_bytes,
            bad_crc: false,
            skip: 0,
            stop: usize::MAX,
            seen: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Bytes held in the payload buffers (what the caller's flush threshold counts).
    pub fn payload_bytes(&self) -> usize {
        self.keys.data.len()
            + self.values.data.len()
            + self.header_keys.data.len()
            + self.header_values.data.len()
    }

    /// Append the records `window.0 .. window.0 + window.1` of one batch as batch number
    /// `index` (the whole batch is decoded and checked each time): (rows appended, records in
    /// the batch); `None` (and nothing appended) when the reference must read it.
    pub fn add(
        &mut self,
        batch_bytes: &[u8],
        index: i32,
        window: (usize, usize),
    ) -> Option<(usize, usize)> {
        let most = batch_bytes.len().max(self.max_batch_bytes);
        let max_batch_bytes = self.max_batch_bytes;
        self.add_from(index, most, window, |c| {
            batch::decode(batch_bytes, max_batch_bytes, c).map(|_| ())
        })
    }

    /// As [`Columns::add`], for a v0/v1 wrapper's decompressed inner set; also `None` when a
    /// record's CRC fails.
    pub fn add_legacy(
        &mut self,
        raw: &[u8],
        wrapper: &legacy::Wrapper,
        index: i32,
        window: (usize, usize),
    ) -> Option<(usize, usize)> {
        self.add_from(index, raw.len(), window, |c| {
            c.bad_crc = false;
            legacy::decode(raw, wrapper, c)?;
            (!c.bad_crc).then_some(())
        })
    }

    /// Append what `decode` adds in `window`, at most `most` payload bytes, or roll it all
    /// back.
    fn add_from(
        &mut self,
        index: i32,
        most: usize,
        (skip, limit): (usize, usize),
        decode: impl FnOnce(&mut Self) -> Option<()>,
    ) -> Option<(usize, usize)> {
        // Offsets are 32-bit: a batch could at most add its decompressed size.
        let room = (i32::MAX as usize).checked_sub(self.payload_bytes())?;
        if most > room {
            return None;
        }
        let before = self.len();
        let marks = (
            self.keys.mark(),
            self.values.mark(),
            self.header_keys.mark(),
            self.header_values.mark(),
            self.header_validity.nulls,
        );
        self.batch = index;
        self.skip = skip;
        self.stop = skip.saturating_add(limit);
        self.seen = 0;
        if decode(self).is_some() {
            return Some((self.len() - before, self.seen));
        }
        self.offsets.truncate(before);
        self.timestamps.truncate(before);
        self.sequences.truncate(before);
        self.batch_index.truncate(before);
        self.keys.rollback(marks.0);
        self.values.rollback(marks.1);
        self.header_keys.rollback(marks.2);
        self.header_values.rollback(marks.3);
        self.header_validity.truncate(before, marks.4);
        self.header_offsets.truncate(before + 1);
        None
    }
}

impl Sink for Columns {
    fn record(&mut self, r: &Record<'_>) {
        self.bad_crc |= matches!(r.crc, Some((_, false)));
        let i = self.seen;
        self.seen += 1;
        if i < self.skip || i >= self.stop {
            return;
        }
        self.offsets.push(r.offset);
        self.timestamps.push(r.timestamp);
        self.sequences.push(r.sequence);
        self.batch_index.push(self.batch);
        self.keys.push(r.key);
        self.values.push(r.value);
        self.header_validity.push(!r.headers.is_empty());
        for (k, v) in r.headers {
            self.header_keys.push(Some(k.as_bytes()));
            self.header_values.push(*v);
        }
        self.header_offsets.push(self.header_keys.len() as i32);
    }
}

/// Counts records and checks what `verify --deep` checks of them: offsets inside the batch's
/// range and strictly increasing; and their largest timestamp (-1 at least, as in the
/// reference).
pub struct Check {
    pub count: usize,
    pub ok: bool,
    pub max_timestamp: i64,
    prev: Option<i64>,
    lo: i64,
    hi: i64,
}

impl Check {
    pub fn new(lo: i64, hi: i64) -> Self {
        Check {
            count: 0,
            ok: true,
            max_timestamp: -1,
            prev: None,
            lo,
            hi,
        }
    }
}

impl Sink for Check {
    #[inline]
    fn record(&mut self, r: &Record<'_>) {
        self.count += 1;
        if self.prev.is_some_and(|p| r.offset <= p) || r.offset < self.lo || r.offset > self.hi {
            self.ok = false;
        }
        self.prev = Some(r.offset);
        self.max_timestamp = self.max_timestamp.max(r.timestamp);
    }
}

/// `(records, offsets in order, largest timestamp)` of a well-formed batch, or `None`.
pub fn check(batch_bytes: &[u8], max_batch_bytes: usize) -> Option<(usize, bool, i64)> {
    let header = batch::parse_header(batch_bytes)?;
    let mut check = Check::new(header.base_offset, header.last_offset()?);
    batch::decode(batch_bytes, max_batch_bytes, &mut check)?;
    Some((check.count, check.ok, check.max_timestamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_builder_reuses_what_python_gave_back_to_an_earlier_one() {
        let first = Columns::new(1 << 20);
        let given = Vec::with_capacity(1 << 20);
        let at = given.as_ptr();
        first.spares[1].give(given); // Python dropped a values buffer of the first builder
        drop(first);
        let second = Columns::new(1 << 20);
        assert_eq!(second.values.data.as_ptr(), at); // its values grow in that memory
        assert!(second.values.data.capacity() >= 1 << 20);
    }
}
