//! `stats`' per-record aggregation (`klogtool/log/read/stats.py`, the record loop of `_batch`
//! and the sketches it feeds), kept in Rust for a whole partition so that no record becomes a
//! Python object: key, value, header and header-count sizes in log2 buckets, the time span,
//! buckets and order, the key set (exact, then a HyperLogLog) and the heaviest keys
//! (space-saving), with the Python engine's arithmetic and tie-breaking, so that the finished
//! aggregates are equal to what the Python loop computes, number for number.
//!
//! A whole v2 batch is decoded by `batch::decode`; its records are held aside until the batch
//! decoded to its end and only then counted, so a batch the kernel refuses (`None`: the Python
//! engine reads it and hands its records in through [`State::record`]) leaves nothing behind.
//! Batch-level counts (volume, codecs, producers, the what-if sample) stay in Python.
#![forbid(unsafe_code)]

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use blake2b_simd::many::{hash_many, HashManyJob};
use blake2b_simd::{Hash, Params};

use crate::batch::{self, Record, Sink};

/// Log2 size buckets: sizes up to 2**40 bytes (`SIZE_BUCKETS`).
pub const SIZE_BUCKETS: usize = 41;
/// The most time buckets kept before their width doubles (`TIME_BUCKETS`).
pub const TIME_BUCKETS: usize = 512;
/// HyperLogLog registers: 2**14 (`HLL_P`).
pub const HLL_P: u32 = 14;
/// The bytes of a heavy key kept as its label.
pub const LABEL_BYTES: usize = 64;
/// The most records of a batch held aside until it decoded to its end (about 80 bytes each,
/// as `records_v2` reads at most 65,536); a larger batch is walked twice.
pub const MAX_HELD: usize = 1 << 16;

/// BLAKE2b with an 8-byte digest (`hashlib.blake2b(key, digest_size=8)`).
fn params() -> Params {
    let mut p = Params::new();
    p.hash_length(8);
    p
}

fn read_hash(digest: &Hash) -> u64 {
    let mut out = [0u8; 8];
    out.copy_from_slice(digest.as_bytes());
    u64::from_be_bytes(out)
}

/// `key_hash`: BLAKE2b with an 8-byte digest, read big-endian.
pub fn key_hash(key: &[u8]) -> u64 {
    read_hash(&params().hash(key))
}

/// [`key_hash`] of many keys: four at a time where the CPU has AVX2 (a key of up to 128 bytes
/// is one compression, ~200 ns alone: the most of what a record cost).
pub fn key_hashes<'k>(keys: impl IntoIterator<Item = &'k [u8]>, out: &mut Vec<u64>) {
    let p = params();
    let mut jobs: Vec<HashManyJob<'k>> =
        keys.into_iter().map(|k| HashManyJob::new(&p, k)).collect();
    hash_many(jobs.iter_mut());
    out.extend(jobs.iter().map(|j| read_hash(&j.to_hash())));
}

/// The longest key [`KeyCache`] keeps.
const CACHED_KEY: usize = 32;
/// Slots of [`KeyCache`] (a power of two; 768 KiB). Against 4,096: the same on 3 M keys, a
/// few percent less a record on 1,000.
pub const CACHE_SLOTS: usize = 1 << 14;

/// A key and its [`key_hash`], as [`KeyCache`] keeps them.
#[derive(Clone, Copy)]
struct Slot {
    /// The key's length plus one (0: empty).
    len: u8,
    key: [u8; CACHED_KEY],
    hash: u64,
}

/// Recent keys' hashes, direct-mapped by a cheap hash (xxh3) of the key: keys repeat (that is
/// what compaction is for), and one BLAKE2b costs what a record's other aggregates do.
#[derive(Default)]
pub struct KeyCache {
    /// Empty until a key is kept (a partition of few records pays nothing for it).
    slots: Vec<Slot>,
}

/// An empty slot.
const EMPTY: Slot = Slot {
    len: 0,
    key: [0; CACHED_KEY],
    hash: 0,
};

impl KeyCache {
    fn slot(key: &[u8]) -> usize {
        xxhash_rust::xxh3::xxh3_64(key) as usize & (CACHE_SLOTS - 1)
    }

    /// `key`'s hash if it is kept.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<u64> {
        if key.len() > CACHED_KEY {
            return None;
        }
        let s = self.slots.get(Self::slot(key))?;
        (usize::from(s.len) == key.len() + 1 && s.key.get(..key.len()) == Some(key))
            .then_some(s.hash)
    }

    /// Keep `key`'s hash (a short key only), in place of the slot's key.
    #[inline]
    pub fn put(&mut self, key: &[u8], hash: u64) {
        if self.slots.is_empty() {
            self.slots = vec![EMPTY; CACHE_SLOTS];
        }
        let (Some(s), Ok(len)) = (self.slots.get_mut(Self::slot(key)), u8::try_from(key.len()))
        else {
            return;
        };
        if let Some(to) = s.key.get_mut(..key.len()) {
            to.copy_from_slice(key);
            s.len = len + 1;
            s.hash = hash;
        }
    }
}

fn bit_length(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// Key hashes are uniform already: a map keyed by them needs no further hashing.
#[derive(Default)]
pub struct HashOfHash(u64);

impl Hasher for HashOfHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

pub type HashMapOfHashes<V> = HashMap<u64, V, BuildHasherDefault<HashOfHash>>;

/// Time bucket numbers are consecutive integers: a multiply spreads them (SipHash, the
/// default, cost a record ~15 ns).
#[derive(Default)]
pub struct BucketHash(u64);

impl Hasher for BucketHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_i64(&mut self, v: i64) {
        self.0 = (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

pub type BucketCounts = HashMap<i64, u64, BuildHasherDefault<BucketHash>>;

/// `SizeHistogram`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes {
    pub buckets: [u64; SIZE_BUCKETS],
    pub count: u64,
    pub nulls: u64,
    pub total: u64,
    pub min: Option<u64>,
    pub max: Option<u64>,
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes {
            buckets: [0; SIZE_BUCKETS],
            count: 0,
            nulls: 0,
            total: 0,
            min: None,
            max: None,
        }
    }
}

impl Sizes {
    #[inline]
    pub fn add(&mut self, n: u64) {
        let b = (bit_length(n) as usize).min(SIZE_BUCKETS - 1);
        self.buckets[b] += 1;
        self.count += 1;
        self.total = self.total.saturating_add(n);
        if self.min.is_none_or(|m| n < m) {
            self.min = Some(n);
        }
        if self.max.is_none_or(|m| n > m) {
            self.max = Some(n);
        }
    }
}

/// `TimeBuckets`: records per bucket of `width` ms, the width doubled as needed.
#[derive(Debug, Clone)]
pub struct Times {
    pub width: i64,
    pub counts: BucketCounts,
}

impl Default for Times {
    fn default() -> Self {
        Times {
            width: 1000,
            counts: BucketCounts::default(),
        }
    }
}

impl Times {
    #[inline]
    pub fn add(&mut self, ts: i64) {
        *self.counts.entry(ts.div_euclid(self.width)).or_insert(0) += 1;
        if self.counts.len() > TIME_BUCKETS {
            self.widen();
        }
    }

    fn widen(&mut self) {
        loop {
            let span = match (self.counts.keys().min(), self.counts.keys().max()) {
                (Some(lo), Some(hi)) => hi.saturating_sub(*lo),
                _ => 0,
            };
            if self.counts.len() <= TIME_BUCKETS && span <= 64 * TIME_BUCKETS as i64 {
                return;
            }
            self.width = self.width.saturating_mul(2);
            let mut widened =
                BucketCounts::with_capacity_and_hasher(self.counts.len(), Default::default());
            for (i, n) in self.counts.drain() {
                *widened.entry(i.div_euclid(2)).or_insert(0) += n;
            }
            self.counts = widened;
        }
    }
}

/// `HyperLogLog` over 64-bit hashes, 2**`HLL_P` registers. Only the registers: Python's
/// `HyperLogLog.estimate` reads them under both engines, so the estimate is one float.
#[derive(Debug, Clone)]
pub struct Hll {
    pub registers: Vec<u8>,
}

impl Default for Hll {
    fn default() -> Self {
        Hll {
            registers: vec![0; 1 << HLL_P],
        }
    }
}

impl Hll {
    #[inline]
    pub fn add(&mut self, h: u64) {
        let q = 64 - HLL_P;
        let i = (h >> q) as usize;
        let rank = (q - bit_length(h & ((1u64 << q) - 1)) + 1) as u8;
        if let Some(r) = self.registers.get_mut(i) {
            if rank > *r {
                *r = rank;
            }
        }
    }
}

/// A counted heavy item: `(count, error, label)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    pub count: u64,
    pub error: u64,
    pub label: Vec<u8>,
}

/// `TopCounter`: space-saving in `k` counters. Python finds the lightest item through a lazy
/// min-heap of `(count when pushed, item)`: the entry on top is evicted if its count is still
/// the item's, else pushed again at the item's count. Whatever the heap's layout, that evicts
/// the item of the smallest `(count, item)` pair, and so does this with the entries [`Filed`]
/// by count (a heap's sift, ~10 dependent levels, was most of an eviction).
#[derive(Debug, Clone)]
pub struct Top {
    pub k: usize,
    pub counts: HashMapOfHashes<Counted>,
    pub floor: u64,
    filed: Filed,
}

/// The counter's entries `(count when filed, item)`, one per counted item: those of the lowest
/// count sorted, largest item first (the lightest entry is the last), those of the next count
/// as they came (where an eviction's newcomer goes), the others by count.
#[derive(Debug, Clone, Default)]
struct Filed {
    low: u64,
    run: Vec<u64>,
    next: Vec<u64>,
    far: BTreeMap<u64, Vec<u64>>,
}

impl Filed {
    fn file(&mut self, count: u64, item: u64) {
        if count == self.low + 1 {
            self.next.push(item);
        } else if count == self.low {
            let at = self.run.partition_point(|&x| x > item);
            self.run.insert(at, item);
        } else {
            if count < self.low {
                // below the lowest (only after a settle, rebuilt anyway): all by count again
                self.spill();
            }
            self.far.entry(count).or_default().push(item);
        }
    }

    /// The run and the next count's entries back among the others.
    fn spill(&mut self) {
        if !self.run.is_empty() {
            self.far.entry(self.low).or_default().append(&mut self.run);
        }
        if !self.next.is_empty() {
            self.far
                .entry(self.low + 1)
                .or_default()
                .append(&mut self.next);
        }
    }

    /// The lightest entry, taken out.
    fn lightest(&mut self) -> Option<(u64, u64)> {
        loop {
            if let Some(item) = self.run.pop() {
                return Some((self.low, item));
            }
            let next = self.low + 1;
            let far_low = self.far.first_key_value().map(|(c, _)| *c);
            if !self.next.is_empty() && far_low.is_none_or(|c| c >= next) {
                std::mem::swap(&mut self.run, &mut self.next);
                if far_low == Some(next) {
                    if let Some(mut more) = self.far.remove(&next) {
                        self.run.append(&mut more);
                    }
                }
                self.low = next;
            } else {
                self.spill();
                let (count, items) = self.far.pop_first()?;
                self.low = count;
                self.run = items;
            }
            self.run.sort_unstable_by(|a, b| b.cmp(a));
        }
    }
}

impl Top {
    pub fn new(k: usize) -> Self {
        Top {
            k,
            counts: HashMapOfHashes::default(),
            floor: 0,
            filed: Filed::default(),
        }
    }

    pub fn add(&mut self, h: u64, label: &[u8]) {
        if let Some(c) = self.counts.get_mut(&h) {
            c.count += 1;
            return;
        }
        let base;
        let mut kept = Vec::new();
        if self.counts.len() < self.k {
            base = self.floor;
        } else {
            loop {
                let Some((b, low)) = self.filed.lightest() else {
                    return; // k == 0: nothing is counted (the caller does not ask for that)
                };
                let current = self.counts.get(&low).map_or(b, |c| c.count);
                if current == b {
                    // its label's buffer is the newcomer's: no allocation per eviction
                    kept = self.counts.remove(&low).map_or(kept, |c| c.label);
                    base = b;
                    break;
                }
                self.filed.file(current, low);
            }
            if base > self.floor {
                self.floor = base;
            }
        }
        self.filed.file(base + 1, h);
        kept.clear();
        kept.extend_from_slice(&label[..label.len().min(LABEL_BYTES)]);
        self.counts.insert(
            h,
            Counted {
                count: base + 1,
                error: base,
                label: kept,
            },
        );
    }

    /// `TopCounter.settle`: the counted items' true counts (`exact`) and a bound `floor` on
    /// every other item.
    pub fn settle(&mut self, exact: impl Fn(u64) -> u64, floor: u64) {
        for (h, c) in self.counts.iter_mut() {
            let truth = exact(*h);
            c.count = truth.max(floor);
            c.error = c.count - truth;
        }
        self.floor = floor;
        self.filed = Filed::default();
        for (h, c) in &self.counts {
            self.filed.file(c.count, *h);
        }
    }
}

/// What a record brings to the aggregates, its key kept (hashed once the batch decoded).
#[derive(Debug, Clone, Copy)]
struct Pending {
    timestamp: i64,
    /// `(where the key starts in `Held::keys`, its length)`
    key: Option<(usize, usize)>,
    value: Option<u64>,
    header_count: u64,
    header_bytes: u64,
}

/// One batch's records, held until the batch decoded to its end (buffers reused from batch
/// to batch).
#[derive(Default)]
struct Held {
    records: Vec<Pending>,
    keys: Vec<u8>,
    hashes: Vec<u64>,
    /// The keys the cache did not have: `(index in hashes, key start, key length)`.
    missed: Vec<(usize, usize, usize)>,
    fresh: Vec<u64>,
}

impl Held {
    fn clear(&mut self) {
        self.records.clear();
        self.keys.clear();
        self.hashes.clear();
    }

    fn key(&self, at: usize, len: usize) -> &[u8] {
        self.keys.get(at..at + len).unwrap_or(&[])
    }
}

impl Sink for Held {
    #[inline]
    fn record(&mut self, r: &Record<'_>) {
        let key = r.key.map(|k| {
            let at = self.keys.len();
            self.keys.extend_from_slice(k);
            (at, k.len())
        });
        let (header_count, header_bytes) = header_sizes(r);
        self.records.push(Pending {
            timestamp: r.timestamp,
            key,
            value: r.value.map(|v| v.len() as u64),
            header_count,
            header_bytes,
        });
    }
}

/// Decodes and keeps nothing: the first walk of a large batch.
struct Checked;

impl Sink for Checked {
    #[inline]
    fn record(&mut self, _r: &Record<'_>) {}
}

/// Counts each record as it decodes: the second walk of a large batch.
struct Direct<'s> {
    state: &'s mut State,
    aborted: bool,
    expired: bool,
}

impl Sink for Direct<'_> {
    #[inline]
    fn record(&mut self, r: &Record<'_>) {
        let key = r.key.map(|k| {
            let h = if self.aborted { 0 } else { key_hash(k) };
            (h, k.len() as u64, k)
        });
        let (count, bytes) = header_sizes(r);
        let value = r.value.map(|v| v.len() as u64);
        let (aborted, expired) = (self.aborted, self.expired);
        self.state
            .add(r.timestamp, key, value, count, bytes, aborted, expired);
    }
}

/// A record's header count and header bytes: names in characters (Python's `len` of a
/// str), values in bytes.
fn header_sizes(r: &Record<'_>) -> (u64, u64) {
    let mut bytes = 0u64;
    for (name, value) in r.headers {
        let chars = if name.is_ascii() {
            name.len()
        } else {
            name.chars().count()
        };
        bytes = bytes
            .saturating_add(chars as u64)
            .saturating_add(value.map_or(0, |v| v.len() as u64));
    }
    (r.headers.len() as u64, bytes)
}

/// The per-record aggregates of one partition (`PartitionStats`' fields of the same names).
pub struct State {
    pub now: i64,
    pub exact_keys: usize,
    pub key_sizes: Sizes,
    pub value_sizes: Sizes,
    pub header_sizes: Sizes,
    pub header_counts: Sizes,
    pub tombstones: u64,
    pub no_timestamp: u64,
    pub out_of_order: u64,
    pub future: u64,
    pub first_timestamp: Option<i64>,
    pub max_ts: i64,
    prev_ts: i64,
    pub times: Times,
    pub aborted: u64,
    pub keyless: u64,
    pub keyed: u64,
    /// The exact phase: key hash -> count * 2 + (its latest record is an expired tombstone).
    pub keys: Option<HashMapOfHashes<u64>>,
    pub hll: Option<Hll>,
    pub expired_after: u64,
    pub top: Top,
    pub distinct_exact: bool,
    pub top_exact: bool,
    /// The last compressed batch counted: its records area, decompressed (the what-if's
    /// sample).
    inflated: Vec<u8>,
    held: Held,
    cache: KeyCache,
}

/// The finished key counts of the exact phase (`PartitionStats.finish`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExactKeys {
    pub distinct: u64,
    pub tombstones_expired: u64,
}

impl State {
    pub fn new(now: i64, exact_keys: usize, heavy_counters: usize) -> Self {
        State {
            now,
            exact_keys,
            key_sizes: Sizes::default(),
            value_sizes: Sizes::default(),
            header_sizes: Sizes::default(),
            header_counts: Sizes::default(),
            tombstones: 0,
            no_timestamp: 0,
            out_of_order: 0,
            future: 0,
            first_timestamp: None,
            max_ts: -1,
            prev_ts: -1,
            times: Times::default(),
            aborted: 0,
            keyless: 0,
            keyed: 0,
            keys: Some(HashMapOfHashes::default()),
            hll: None,
            expired_after: 0,
            top: Top::new(heavy_counters),
            distinct_exact: true,
            top_exact: true,
            inflated: Vec::new(),
            held: Held::default(),
            cache: KeyCache::default(),
        }
    }

    /// Count a whole v2 batch's records (not a control batch: the caller counts those):
    /// `(records, uncompressed records area bytes)`, or `None`: nothing was counted, the
    /// Python engine reads the batch. A compressed batch's records area stays for [`area`].
    ///
    /// Up to [`MAX_HELD`] records are held aside until the batch decoded to its end; a larger
    /// batch is walked twice instead (checked, then counted), so memory stays bounded.
    ///
    /// [`area`]: State::area
    pub fn batch(
        &mut self,
        data: &[u8],
        max_batch_bytes: usize,
        aborted: bool,
        expired: bool,
    ) -> Option<(usize, usize)> {
        let header = batch::parse_header(data)?;
        let count = usize::try_from(header.records_count).ok()?;
        self.inflated.clear();
        let inflated = if count <= MAX_HELD {
            let mut held = std::mem::take(&mut self.held);
            held.clear();
            let decoded = batch::decode_inflated(data, max_batch_bytes, &mut held);
            if decoded.is_some() {
                self.add_held(&mut held, aborted, expired);
            }
            self.held = held;
            decoded?.1
        } else {
            let (header, inflated) = batch::decode_inflated(data, max_batch_bytes, &mut Checked)?;
            // The same bytes again: they decode as they just did (a segment rewritten under
            // the read is the one way they could not, and no reading of it is right then).
            let mut direct = Direct {
                state: self,
                aborted,
                expired,
            };
            batch::walk_again(data, &inflated, &header, &mut direct)?;
            inflated
        };
        let area_len = inflated
            .as_ref()
            .map_or(data.len().saturating_sub(batch::HEADER_SIZE), Vec::len);
        if let Some(area) = inflated {
            self.inflated = area;
        }
        Some((count, area_len))
    }

    /// Count a decoded batch's held records, their keys hashed together (not an aborted
    /// transaction's: they are not keys).
    fn add_held(&mut self, held: &mut Held, aborted: bool, expired: bool) {
        let mut hashes = std::mem::take(&mut held.hashes);
        if !aborted {
            // the cache's keys first; the others hashed together, then kept
            let mut missed = std::mem::take(&mut held.missed);
            missed.clear();
            for (at, len) in held.records.iter().filter_map(|p| p.key) {
                let h = self.cache.get(held.key(at, len));
                if h.is_none() {
                    missed.push((hashes.len(), at, len));
                }
                hashes.push(h.unwrap_or(0));
            }
            let mut fresh = std::mem::take(&mut held.fresh);
            fresh.clear();
            key_hashes(
                missed.iter().map(|&(_, at, len)| held.key(at, len)),
                &mut fresh,
            );
            for (&(i, at, len), &h) in missed.iter().zip(&fresh) {
                if let Some(slot) = hashes.get_mut(i) {
                    *slot = h;
                }
                self.cache.put(held.key(at, len), h);
            }
            held.missed = missed;
            held.fresh = fresh;
        }
        let mut next = hashes.iter();
        for p in &held.records {
            let key = p.key.map(|(at, len)| {
                let h = next.next().copied().unwrap_or(0);
                let k = held.key(at, len);
                (h, len as u64, k.get(..LABEL_BYTES).unwrap_or(k))
            });
            let (ts, v, hc, hb) = (p.timestamp, p.value, p.header_count, p.header_bytes);
            self.add(ts, key, v, hc, hb, aborted, expired);
        }
        held.hashes = hashes;
    }

    /// The last counted batch's decompressed records area (empty when it was not compressed).
    pub fn area(&self) -> &[u8] {
        &self.inflated
    }

    /// One record (`_batch`'s loop body): its timestamp, key (hash, length, label), value
    /// length, header count and header bytes.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn add(
        &mut self,
        ts: i64,
        key: Option<(u64, u64, &[u8])>,
        value: Option<u64>,
        header_count: u64,
        header_bytes: u64,
        aborted: bool,
        expired: bool,
    ) {
        match value {
            None => {
                self.value_sizes.nulls += 1;
                self.tombstones += 1;
            }
            Some(v) => self.value_sizes.add(v),
        }
        self.header_counts.add(header_count);
        self.header_sizes.add(header_bytes);
        if ts < 0 {
            self.no_timestamp += 1;
        } else {
            if ts < self.prev_ts {
                self.out_of_order += 1;
            }
            self.prev_ts = ts;
            if ts > self.max_ts {
                self.max_ts = ts;
            }
            if self.first_timestamp.is_none_or(|f| ts < f) {
                self.first_timestamp = Some(ts);
            }
            if ts > self.now {
                self.future += 1;
            }
            self.times.add(ts);
        }
        if aborted {
            self.aborted += 1;
            match key {
                Some((_, len, _)) => self.key_sizes.add(len),
                None => self.key_sizes.nulls += 1,
            }
            return;
        }
        let Some((h, len, label)) = key else {
            self.key_sizes.nulls += 1;
            self.keyless += 1;
            return;
        };
        self.key_sizes.add(len);
        self.keyed += 1;
        let bit = u64::from(value.is_none() && expired);
        if let Some(keys) = self.keys.as_mut() {
            let room = keys.len() < self.exact_keys;
            match keys.entry(h) {
                Entry::Occupied(mut e) => {
                    let c = e.get_mut();
                    *c = (((*c >> 1) + 1) << 1) | bit;
                }
                Entry::Vacant(e) if room => {
                    e.insert(2 | bit);
                }
                Entry::Vacant(_) => {
                    self.switch_to_hll();
                    self.top.add(h, label);
                    self.hll_add(h, bit);
                    return;
                }
            }
            self.top.add(h, label);
            return;
        }
        self.top.add(h, label);
        self.hll_add(h, bit);
    }

    /// A key past the exact phase.
    #[inline]
    fn hll_add(&mut self, h: u64, bit: u64) {
        if let Some(hll) = self.hll.as_mut() {
            hll.add(h);
        }
        self.expired_after += bit;
    }

    /// `_to_hll`: past the exact bound the key set goes into a HyperLogLog.
    fn switch_to_hll(&mut self) {
        let Some(keys) = self.keys.take() else {
            return;
        };
        let mut hll = Hll::default();
        let mut expired = 0;
        for (&h, &v) in &keys {
            hll.add(h);
            expired += v & 1;
        }
        settle_top(&mut self.top, &keys);
        self.hll = Some(hll);
        self.expired_after = expired;
        self.distinct_exact = false;
        self.top_exact = false;
    }

    /// `PartitionStats.finish`'s exact phase: the distinct keys and expired tombstones, the
    /// heaviest keys settled; `None` past the exact phase (the HyperLogLog is estimated by the
    /// caller, with Python's float arithmetic).
    pub fn finish(&mut self) -> Option<ExactKeys> {
        let keys = self.keys.take()?;
        settle_top(&mut self.top, &keys);
        Some(ExactKeys {
            distinct: keys.len() as u64,
            tombstones_expired: keys.values().map(|v| v & 1).sum(),
        })
    }
}

/// `_settle_top`: the counted keys' true counts, bounded below by the heaviest key without a
/// counter.
fn settle_top(top: &mut Top, keys: &HashMapOfHashes<u64>) {
    let floor = keys
        .iter()
        .filter(|(h, _)| !top.counts.contains_key(h))
        .map(|(_, v)| v >> 1)
        .max()
        .unwrap_or(0);
    top.settle(|h| keys.get(&h).map_or(0, |v| v >> 1), floor);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_hash_is_blake2b_64() {
        // hashlib.blake2b(b"key-00042", digest_size=8).digest().hex(), and of b""
        assert_eq!(key_hash(b"key-00042"), 0xedd5_0cc4_c75b_7d4f);
        assert_eq!(key_hash(b""), 0xe4a6_a057_7479_b2b4);
    }

    #[test]
    fn key_hashes_are_key_hash() {
        let keys: Vec<Vec<u8>> = (0..11).map(|i| vec![b'k'; i * 30]).collect();
        let mut out = vec![7];
        key_hashes(keys.iter().map(Vec::as_slice), &mut out);
        let one: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
        assert_eq!(out[1..], one[..]);
    }

    #[test]
    fn the_cache_keeps_short_keys() {
        let mut c = KeyCache::default();
        assert_eq!(c.get(b"a"), None);
        c.put(b"a", 1);
        c.put(b"", 2);
        c.put(&[b'x'; CACHED_KEY + 1], 3);
        assert_eq!(
            (c.get(b"a"), c.get(b""), c.get(b"b")),
            (Some(1), Some(2), None)
        );
        assert_eq!(c.get(&[b'x'; CACHED_KEY + 1]), None);
        assert_eq!(c.get(b"a\0"), None);
    }

    #[test]
    fn sizes_use_log2_buckets() {
        let mut s = Sizes::default();
        for n in [0, 1, 2, 3, 4, 1 << 50] {
            s.add(n);
        }
        assert_eq!(s.buckets[0], 1);
        assert_eq!(s.buckets[1], 1);
        assert_eq!(s.buckets[2], 2);
        assert_eq!(s.buckets[3], 1);
        assert_eq!(s.buckets[40], 1);
        assert_eq!((s.min, s.max, s.count), (Some(0), Some(1 << 50), 6));
    }

    #[test]
    fn times_widen_past_the_bound() {
        let mut t = Times::default();
        for i in 0..=TIME_BUCKETS as i64 {
            t.add(i * 1000);
        }
        assert_eq!(t.width, 2000);
        assert_eq!(t.counts.len(), TIME_BUCKETS / 2 + 1);
        assert_eq!(t.counts.values().sum::<u64>(), TIME_BUCKETS as u64 + 1);
    }

    #[test]
    fn top_evicts_the_lightest_smallest_hash_first() {
        let mut t = Top::new(2);
        t.add(5, b"a");
        t.add(5, b"a");
        t.add(9, b"b");
        t.add(7, b"c"); // evicts 9 (count 1): 7 starts at 2 with error 1
        assert!(!t.counts.contains_key(&9));
        assert_eq!(t.counts[&7].count, 2);
        assert_eq!(t.counts[&7].error, 1);
        assert_eq!(t.floor, 1);
        t.add(3, b"d"); // 5 and 7 both count 2: the smaller hash, 5, goes
        assert!(!t.counts.contains_key(&5));
        assert_eq!(t.counts[&3].count, 3);
    }

    /// Python's `TopCounter.add` and `settle`, its lazy heap as `heapq` keeps it.
    struct HeapReference {
        k: usize,
        counts: HashMap<u64, (u64, u64)>,
        heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u64)>>,
        floor: u64,
    }

    impl HeapReference {
        fn add(&mut self, h: u64) {
            use std::cmp::Reverse;
            if let Some(c) = self.counts.get_mut(&h) {
                c.0 += 1;
                return;
            }
            let mut base = self.floor;
            if self.counts.len() >= self.k {
                loop {
                    let Reverse((b, low)) = self.heap.pop().unwrap();
                    let current = self.counts[&low].0;
                    if current == b {
                        self.counts.remove(&low);
                        base = b;
                        break;
                    }
                    self.heap.push(Reverse((current, low)));
                }
                self.floor = self.floor.max(base);
            }
            self.heap.push(Reverse((base + 1, h)));
            self.counts.insert(h, (base + 1, base));
        }

        fn settle(&mut self, exact: impl Fn(u64) -> u64, floor: u64) {
            for (h, c) in self.counts.iter_mut() {
                let truth = exact(*h);
                *c = (truth.max(floor), truth.max(floor) - truth);
            }
            self.floor = floor;
            let entries = self
                .counts
                .iter()
                .map(|(h, c)| std::cmp::Reverse((c.0, *h)));
            self.heap = entries.collect();
        }

        fn state(&self) -> (Vec<(u64, u64, u64)>, u64) {
            let mut out: Vec<_> = self.counts.iter().map(|(h, c)| (*h, c.0, c.1)).collect();
            out.sort_unstable();
            (out, self.floor)
        }
    }

    fn state(t: &Top) -> (Vec<(u64, u64, u64)>, u64) {
        let mut got: Vec<_> = t
            .counts
            .iter()
            .map(|(h, c)| (*h, c.count, c.error))
            .collect();
        got.sort_unstable();
        (got, t.floor)
    }

    #[test]
    fn top_evicts_as_the_lazy_heap_does() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for (k, keys, n) in [(4, 10, 200), (16, 40, 3000), (64, 1000, 20000), (8, 8, 100)] {
            let mut t = Top::new(k);
            let mut r = HeapReference {
                k,
                counts: HashMap::new(),
                heap: std::collections::BinaryHeap::new(),
                floor: 0,
            };
            for i in 0..n {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // a few hot items, many cold ones
                let h = if i % 3 == 0 { seed % 3 } else { seed % keys };
                t.add(h, b"");
                r.add(h);
                if i == n / 2 {
                    // as at the switch to the estimate: counts raised to their truth, a floor
                    let (exact, floor) = (|h: u64| h % 7 + 1, 5);
                    t.settle(exact, floor);
                    r.settle(exact, floor);
                }
            }
            assert_eq!(state(&t), r.state(), "k={k} keys={keys}");
        }
    }

    fn varint(v: i64, out: &mut Vec<u8>) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        while z >= 0x80 {
            out.push((z as u8) | 0x80);
            z >>= 7;
        }
        out.push(z as u8);
    }

    /// An uncompressed v2 batch of `n` records, keys `k0`..`k9`, values "v", timestamps
    /// base + offset.
    fn batch_of(n: usize) -> Vec<u8> {
        let mut records = Vec::new();
        for i in 0..n {
            let key = format!("k{}", i % 10).into_bytes();
            let mut body = vec![0u8];
            varint(i as i64, &mut body); // timestamp delta
            varint(i as i64, &mut body); // offset delta
            varint(key.len() as i64, &mut body);
            body.extend_from_slice(&key);
            varint(1, &mut body);
            body.push(b'v');
            varint(0, &mut body); // no headers
            varint(body.len() as i64, &mut records);
            records.extend_from_slice(&body);
        }
        let mut b = vec![0u8; batch::HEADER_SIZE];
        b[8..12].copy_from_slice(&((49 + records.len()) as i32).to_be_bytes());
        b[16] = 2;
        b[23..27].copy_from_slice(&(n as i32 - 1).to_be_bytes());
        b[27..35].copy_from_slice(&1_000i64.to_be_bytes());
        b[53..57].copy_from_slice(&(-1i32).to_be_bytes());
        b[57..61].copy_from_slice(&(n as i32).to_be_bytes());
        b.extend_from_slice(&records);
        b
    }

    #[test]
    fn held_and_twice_walked_batches_count_alike() {
        for n in [MAX_HELD, MAX_HELD + 1] {
            let b = batch_of(n);
            let mut s = State::new(0, 100, 4);
            assert_eq!(s.batch(&b, 1 << 30, false, false), Some((n, b.len() - 61)));
            assert_eq!(
                (s.keyed, s.key_sizes.count, s.value_sizes.total),
                (n as u64, n as u64, n as u64)
            );
            assert_eq!(s.first_timestamp, Some(1_000));
            assert_eq!(s.max_ts, 1_000 + n as i64 - 1);
            assert_eq!(s.future, n as u64);
            let exact = s.finish().expect("exact");
            assert_eq!(exact.distinct, 10);
            let mut cut = State::new(0, 100, 4);
            let mut short = b.clone();
            short.truncate(b.len() - 1);
            let length = (short.len() - 12) as i32;
            short[8..12].copy_from_slice(&length.to_be_bytes());
            assert!(cut.batch(&short, 1 << 30, false, false).is_none());
            assert_eq!(cut.keyed, 0);
        }
    }

    #[test]
    fn a_refused_batch_counts_nothing() {
        let mut s = State::new(0, 10, 4);
        assert!(s.batch(&[0u8; 70], 1 << 20, false, false).is_none());
        assert_eq!(s.key_sizes.count + s.key_sizes.nulls, 0);
    }
}
