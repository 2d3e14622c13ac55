//! `find`'s record-level filters (`klogtool/log/record_filter.py`, `RecordFilter.matches`)
//! decided per record on a whole v2 batch, so that only the matching records become Python
//! objects.
//!
//! The conditions are the ones that compare bytes and integers: the exact key, header names
//! (and values), the offset and time ranges and the record size (key + value + header names'
//! UTF-8 bytes + header values), and the key and value regexes that
//! `klogtool/log/record_filter.py` (`native_regex`) could translate from Python's `re` into the
//! regex crate's syntax, searched in the raw bytes as `re.search` searches them; a regex it does
//! not translate is decided in Python (the caller does not ask this kernel). The batch is decoded by
//! `batch::decode`, so anything it cannot read is `None` and the Python engine reads the
//! batch, as for every other kernel.
#![forbid(unsafe_code)]

use regex::bytes::{Regex, RegexBuilder};

use crate::batch::{self, Header, Record, Sink};

/// A pattern `native_regex` translated (bytes only, `\xHH` escapes, ASCII classes), or `None`
/// when the crate refuses it (its size or nesting limits): the caller leaves it to Python.
pub fn compile(pattern: &str) -> Option<Regex> {
    // Unicode off: `.`/classes/`\b` are over bytes, and invalid UTF-8 is searched as it is
    RegexBuilder::new(pattern).unicode(false).build().ok()
}

/// All given conditions must hold; ranges are inclusive.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    pub key: Option<Vec<u8>>,
    /// `(name as UTF-8, value or None = any value)`: each must be present.
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    pub offsets: Option<(i64, i64)>,
    pub from_time: Option<i64>,
    pub to_time: Option<i64>,
    pub min_size: Option<u64>,
    pub max_size: Option<u64>,
    /// Searched in the key (a null key never matches), as `re.search`.
    pub key_regex: Option<Regex>,
    /// Searched in the value (a null value never matches).
    pub value_regex: Option<Regex>,
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
        let headers = self.headers.iter().all(|(name, value)| {
            r.headers.iter().any(|(k, v)| {
                k.as_bytes() == name.as_slice()
                    && match value {
                        None => true,
                        Some(want) => *v == Some(want.as_slice()),
                    }
            })
        });
        // the regexes last: the dearest conditions
        let searched = |re: &Option<Regex>, field: Option<&[u8]>| match re {
            None => true,
            Some(re) => field.is_some_and(|b| re.is_match(b)),
        };
        headers && searched(&self.key_regex, r.key) && searched(&self.value_regex, r.value)
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

    /// What `native_regex` writes (`klogtool/log/record_filter.py`) means in the crate what
    /// the `re` pattern means in Python (tests/formats/test_native_regex.py checks the whole
    /// translation against `re`; these pin the crate's side of it).
    #[test]
    fn translated_regexes_search_bytes_as_re_does() {
        let is = |pattern: &str, hay: &[u8]| compile(pattern).expect(pattern).is_match(hay);
        // re's `a$` (at the end or before a final newline)
        let end = r"(?-u)\x61(?:\n?\z)";
        assert!(is(end, b"xa") && is(end, b"xa\n"));
        assert!(!is(end, b"xa\n\n") && !is(end, b"a\nb"));
        // `.` as re's without DOTALL: any byte (invalid UTF-8 too) but a newline
        let dot = r"(?-u)[\x00-\x09\x0B-\xFF]";
        assert!(is(dot, b"\xff") && is(dot, b"\x00") && !is(dot, b"\n") && !is(dot, b""));
        // an ASCII word boundary: 0xE9 is no word byte (re's bytes \b)
        let boundary = r"(?-u)\b\x61";
        assert!(is(boundary, b"\xe9a") && !is(boundary, b"_a") && !is(r"(?-u)\b", b""));
        // re's empty set `[^\x00-\xff]`: compiles, matches nothing
        assert!(!is(r"(?-u)[^\x00-\xFF]", b"abc"));
        // \A is the haystack's start, \z its end (no line anchors)
        assert!(!is(r"(?-u)\A\x62", b"a\nb") && !is(r"(?-u)\x61\z", b"a\nb"));
        assert!(is(r"(?-u)(?:(?:\x61|)){0,}", b"") && is(r"(?-u)", b""));
        // case-sensitive, as re without IGNORECASE
        assert!(!is(r"(?-u)\x61", b"A"));
        // beyond the crate's limits: refused, not a panic
        assert!(compile(r"(?-u)(?:(?:\x61){1000}){1000}").is_none());
        assert!(compile(&format!("(?-u){}", "(?:".repeat(1000) + &")".repeat(1000))).is_none());
    }

    #[test]
    fn regexes_search_the_key_and_the_value() {
        let r = record(5, Some(b"k\xff1"), &[]);
        let spec = |key: Option<&str>, value: Option<&str>| Spec {
            key_regex: key.map(|p| compile(p).expect(p)),
            value_regex: value.map(|p| compile(p).expect(p)),
            ..Spec::default()
        };
        assert!(spec(Some(r"(?-u)\xFF[\x30-\x39]"), None).matches(&r));
        assert!(!spec(Some(r"(?-u)\x32"), None).matches(&r));
        assert!(spec(None, Some(r"(?-u)\x6C\x75")).matches(&r)); // "lu" in "value"
        assert!(!spec(Some(r"(?-u)\xFF"), Some(r"(?-u)\x78")).matches(&r));
        // a null key or value matches no regex, even one that matches everything
        assert!(!spec(Some(r"(?-u)"), None).matches(&record(5, None, &[])));
        let mut no_value = record(5, Some(b"k"), &[]);
        no_value.value = None;
        assert!(!spec(None, Some(r"(?-u)")).matches(&no_value));
        assert!(spec(Some(r"(?-u)"), None).matches(&no_value));
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
