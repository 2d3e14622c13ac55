//! `find`'s record-level filters (`klogtool/log/record_filter.py`, `RecordFilter.matches`)
//! decided per record on a whole v2 batch, so that only the matching records become Python
//! objects.
//!
//! The conditions are the ones that compare bytes and integers: the exact key, header names
//! (and values), the offset and time ranges and the record size (key + value + header names'
//! UTF-8 bytes + header values). Regular expressions stay in Python (`re` and Rust's regex
//! differ): the caller does not ask this kernel when one is given. The batch is decoded by
//! `batch::decode`, so anything it cannot read is `None` and the Python engine reads the
//! batch, as for every other kernel.
#![forbid(unsafe_code)]

use crate::batch::{self, Header, Record, Sink};

/// All given conditions must hold; ranges are inclusive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spec {
    pub key: Option<Vec<u8>>,
    /// `(name as UTF-8, value or None = any value)`: each must be present.
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    pub offsets: Option<(i64, i64)>,
    pub from_time: Option<i64>,
    pub to_time: Option<i64>,
    pub min_size: Option<u64>,
    pub max_size: Option<u64>,
}

/// `record_filter.record_size`: key, value, header names (UTF-8 bytes) and header values.
pub fn record_size(r: &Record<'_>) -> u64 {
    let len = |v: Option<&[u8]>| v.map_or(0, |b| b.len() as u64);
    let mut size = len(r.key).saturating_add(len(r.value));
    for (k, v) in r.headers {
        size = size.saturating_add(k.len() as u64).saturating_add(len(*v));
    }
    size
}

impl Spec {
    /// `RecordFilter.matches` for the conditions this spec holds.
    #[inline]
    pub fn matches(&self, r: &Record<'_>) -> bool {
        if let Some((lo, hi)) = self.offsets {
            if r.offset < lo || r.offset > hi {
                return false;
            }
        }
        if self.from_time.is_some_and(|t| r.timestamp < t) {
            return false;
        }
        if self.to_time.is_some_and(|t| r.timestamp > t) {
            return false;
        }
        if let Some(key) = &self.key {
            if r.key != Some(key.as_slice()) {
                return false;
            }
        }
        if self.min_size.is_some() || self.max_size.is_some() {
            let size = record_size(r);
            if self.min_size.is_some_and(|m| size < m) || self.max_size.is_some_and(|m| size > m) {
                return false;
            }
        }
        self.headers.iter().all(|(name, value)| {
            r.headers.iter().any(|(k, v)| {
                k.as_bytes() == name.as_slice()
                    && match value {
                        None => true,
                        Some(want) => *v == Some(want.as_slice()),
                    }
            })
        })
    }
}

/// Passes the records `spec` keeps on to `inner`, with their index in the batch.
pub trait MatchSink {
    fn matched(&mut self, index: usize, r: &Record<'_>);
}

struct Matching<'s, M> {
    spec: &'s Spec,
    index: usize,
    inner: &'s mut M,
}

impl<M: MatchSink> Sink for Matching<'_, M> {
    #[inline]
    fn record(&mut self, r: &Record<'_>) {
        if self.spec.matches(r) {
            self.inner.matched(self.index, r);
        }
        self.index += 1;
    }
}

/// Decode every record of `batch` (the whole v2 batch) and hand the matching ones to `sink`;
/// the batch's header (its record count among them), or `None`: the Python engine reads it.
/// On `None` the sink may already hold matches from before the bad record: drop them.
pub fn find<M: MatchSink>(
    batch: &[u8],
    max_batch_bytes: usize,
    spec: &Spec,
    sink: &mut M,
) -> Option<Header> {
    let mut matching = Matching {
        spec,
        index: 0,
        inner: sink,
    };
    batch::decode(batch, max_batch_bytes, &mut matching)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An uncompressed batch of records with these keys (offset deltas 0.., value "v").
    fn batch_of(keys: &[Vec<u8>]) -> Vec<u8> {
        let zz = |v: usize| (2 * v) as u8; // a small zig-zag varint: one byte
        let mut records = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let mut body = vec![0u8, 0, zz(i), zz(key.len())];
            body.extend_from_slice(key);
            body.extend_from_slice(&[zz(1), b'v', 0]);
            records.push(zz(body.len()));
            records.extend_from_slice(&body);
        }
        let count = keys.len() as i32;
        let mut b = vec![0u8; 61];
        b[8..12].copy_from_slice(&((49 + records.len()) as i32).to_be_bytes());
        b[16] = 2;
        b[23..27].copy_from_slice(&(count - 1).to_be_bytes());
        b[53..57].copy_from_slice(&(-1i32).to_be_bytes());
        b[57..61].copy_from_slice(&count.to_be_bytes());
        b.extend_from_slice(&records);
        b
    }

    struct Indexes(Vec<usize>);
    impl MatchSink for Indexes {
        fn matched(&mut self, index: usize, _r: &Record<'_>) {
            self.0.push(index);
        }
    }

    fn record<'a>(
        offset: i64,
        key: Option<&'a [u8]>,
        headers: &'a [(&'a str, Option<&'a [u8]>)],
    ) -> Record<'a> {
        Record {
            offset,
            timestamp: 1000 + offset,
            attributes: 0,
            sequence: -1,
            key,
            value: Some(b"value"),
            headers,
            crc: None,
        }
    }

    #[test]
    fn conditions_follow_record_filter() {
        let hs: [(&str, Option<&[u8]>); 2] = [("tr\u{e9}", Some(b"x")), ("n", None)];
        let r = record(5, Some(b"k"), &hs);
        assert!(Spec::default().matches(&r));
        let key = |k: &[u8]| Spec {
            key: Some(k.to_vec()),
            ..Spec::default()
        };
        assert!(key(b"k").matches(&r));
        assert!(!key(b"kk").matches(&r));
        assert!(!key(b"k").matches(&record(5, None, &hs)));
        let header = |n: &str, v: Option<&[u8]>| Spec {
            headers: vec![(n.as_bytes().to_vec(), v.map(<[u8]>::to_vec))],
            ..Spec::default()
        };
        assert!(header("tr\u{e9}", None).matches(&r));
        assert!(header("tr\u{e9}", Some(b"x")).matches(&r));
        assert!(!header("tr\u{e9}", Some(b"y")).matches(&r));
        assert!(header("n", None).matches(&r));
        assert!(!header("n", Some(b"")).matches(&r));
        assert!(!header("m", None).matches(&r));
        // size: 1 (key) + 5 (value) + 4 ("tré" in UTF-8) + 1 + 1 = 12
        assert_eq!(record_size(&r), 12);
        let sizes = |lo: Option<u64>, hi: Option<u64>| Spec {
            min_size: lo,
            max_size: hi,
            ..Spec::default()
        };
        assert!(sizes(Some(12), Some(12)).matches(&r));
        assert!(!sizes(Some(13), None).matches(&r));
        assert!(!sizes(None, Some(11)).matches(&r));
        let range = Spec {
            offsets: Some((5, 5)),
            from_time: Some(1005),
            to_time: Some(1005),
            ..Spec::default()
        };
        assert!(range.matches(&r));
        assert!(!range.matches(&record(6, Some(b"k"), &hs)));
    }

    #[test]
    fn finds_in_a_whole_batch_and_refuses_a_cut_one() {
        let keys: Vec<Vec<u8>> = (0..10)
            .map(|i| format!("k{}", i % 3).into_bytes())
            .collect();
        let batch = batch_of(&keys);
        let spec = Spec {
            key: Some(b"k1".to_vec()),
            ..Spec::default()
        };
        let mut found = Indexes(Vec::new());
        let h = find(&batch, 1 << 20, &spec, &mut found).expect("well-formed");
        assert_eq!(h.records_count, 10);
        assert_eq!(found.0, vec![1, 4, 7]);
        let mut cut = Indexes(Vec::new());
        assert!(find(&batch[..batch.len() - 1], 1 << 20, &spec, &mut cut).is_none());
    }
}
