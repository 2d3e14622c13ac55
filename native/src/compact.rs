//! The log cleaner's offset map and retention decision (`klogtool/log/rewrite/cleaner.py`,
//! after Kafka's `Cleaner.buildOffsetMap` and `shouldRetainRecord`), for well-formed v2 batches.
//!
//! Keys are MD5 digests, as the broker's `SkimpyOffsetMap` stores them. A batch the decoder
//! hands back changes nothing here: the Python cleaner reads it and updates the same map.
#![forbid(unsafe_code)]

use std::collections::HashMap;

use md5::{Digest, Md5};

use crate::batch::{self, Record, Sink};

pub type Key = [u8; 16];

pub fn digest(key: &[u8]) -> Key {
    Md5::digest(key).into()
}

/// Key digest -> the last offset seen for it.
#[derive(Default)]
pub struct OffsetMap {
    pub map: HashMap<Key, i64>,
}

/// What adding a batch did: whether the map filled up (and the records from the one that did
/// not fit were left out), and the offset of the last record put in the map.
pub struct Added {
    pub full: bool,
    pub latest: Option<i64>,
}

struct Keys {
    first_dirty: i64,
    keys: Vec<(Key, i64)>,
}

impl Sink for Keys {
    fn record(&mut self, r: &Record<'_>) {
        if let Some(k) = r.key {
            if r.offset >= self.first_dirty {
                self.keys.push((digest(k), r.offset));
            }
        }
    }
}

impl OffsetMap {
    /// Put the keyed records of a whole v2 batch from `first_dirty` on, until the map holds
    /// `capacity` keys; `None` (the map unchanged): the Python cleaner reads this batch.
    pub fn add(
        &mut self,
        batch_bytes: &[u8],
        max_batch_bytes: usize,
        first_dirty: i64,
        capacity: usize,
    ) -> Option<Added> {
        let mut keys = Keys {
            first_dirty,
            keys: Vec::new(),
        };
        batch::decode(batch_bytes, max_batch_bytes, &mut keys)?;
        let mut latest = None;
        for (k, offset) in keys.keys {
            // the broker's check comes first, whether or not the key is new
            if self.map.len() >= capacity {
                return Some(Added { full: true, latest });
            }
            self.map.insert(k, offset);
            latest = Some(offset);
        }
        Some(Added {
            full: false,
            latest,
        })
    }
}

/// Which records of a batch the cleaner keeps (one byte each) and why the others go.
#[derive(Default)]
pub struct Retained {
    pub keep: Vec<u8>,
    pub keyless: usize,
    pub superseded: usize,
    pub tombstones_expired: usize,
    pub tombstones_kept: usize,
}

struct Decide<'m> {
    map: &'m OffsetMap,
    latest_offset: i64,
    /// Whether this batch's tombstones stay (no delete horizon yet, or not reached).
    keep_tombstones: bool,
    done: Retained,
}

impl Sink for Decide<'_> {
    fn record(&mut self, r: &Record<'_>) {
        let d = &mut self.done;
        let keep = if r.offset > self.latest_offset {
            true
        } else if let Some(k) = r.key {
            let found = self.map.map.get(&digest(k)).copied().unwrap_or(-1);
            if r.offset < found {
                d.superseded += 1;
                false
            } else if r.value.is_some() || self.keep_tombstones {
                true
            } else {
                d.tombstones_expired += 1;
                false
            }
        } else {
            d.keyless += 1;
            false
        };
        if keep && r.value.is_none() {
            d.tombstones_kept += 1;
        }
        d.keep.push(u8::from(keep));
    }
}

impl OffsetMap {
    /// The retention decision for every record of a whole v2 data batch (not a control
    /// batch, not aborted data); `None`: the Python cleaner decides.
    pub fn retain(
        &self,
        batch_bytes: &[u8],
        max_batch_bytes: usize,
        latest_offset: i64,
        keep_tombstones: bool,
    ) -> Option<Retained> {
        let mut decide = Decide {
            map: self,
            latest_offset,
            keep_tombstones,
            done: Retained::default(),
        };
        batch::decode(batch_bytes, max_batch_bytes, &mut decide)?;
        Some(decide.done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_md5() {
        assert_eq!(
            digest(b""),
            [
                0xd4, 0x1d, 0x8c, 0xd9, 0x8f, 0x00, 0xb2, 0x04, 0xe9, 0x80, 0x09, 0x98, 0xec, 0xf8,
                0x42, 0x7e
            ]
        );
    }

    #[test]
    fn a_malformed_batch_changes_nothing() {
        let mut m = OffsetMap::default();
        assert!(m.add(&[0u8; 10], 1 << 20, 0, 10).is_none());
        assert!(m.map.is_empty());
        assert!(m.retain(&[0u8; 10], 1 << 20, 0, true).is_none());
    }
}
