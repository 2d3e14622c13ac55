//! Message format v2 records re-encoded, byte for byte as the Python encoder
//! (`klogtool/formats/v2.py`, `encode_record`) writes them: the records area of a batch that
//! `convert-format` or `compact` rewrites (with a new codec, fewer records, or a new base
//! timestamp). Compression, the batch header and its CRC stay in Python, so the two engines
//! share them.
//!
//! The records come from `batch::decode`, so anything unusual (which the Python decoder
//! reports, or reads with an error handler) returns `None` and the batch is re-encoded in
//! Python.
#![forbid(unsafe_code)]

use crate::batch::{self, Record, Sink};

/// An unsigned varint (LEB128), as `encode_uvarint`.
fn uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7F) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A zig-zag int varint; `None` outside the int range (where `encode_varint` raises).
fn varint(out: &mut Vec<u8>, v: i64) -> Option<()> {
    let v = i32::try_from(v).ok()?;
    uvarint(out, u64::from(((v << 1) ^ (v >> 31)) as u32));
    Some(())
}

/// A zig-zag long varint.
fn varlong(out: &mut Vec<u8>, v: i64) {
    uvarint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// A length-prefixed byte field; null is length -1.
fn bytes_field(out: &mut Vec<u8>, v: Option<&[u8]>) -> Option<()> {
    match v {
        None => varint(out, -1),
        Some(b) => {
            varint(out, i64::try_from(b.len()).ok()?)?;
            out.extend_from_slice(b);
            Some(())
        }
    }
}

/// The re-encoded records area of one batch.
pub struct Reencoded {
    pub area: Vec<u8>,
    pub count: usize,
    /// The largest record timestamp (`None` without records).
    pub max_timestamp: Option<i64>,
    /// The base timestamp the deltas are relative to (`None` without records and without a
    /// given one).
    pub base_timestamp: Option<i64>,
}

struct Reencoder<'k> {
    done: Reencoded,
    base_offset: i64,
    keep: Option<&'k [u8]>,
    seen: usize,
    failed: bool,
    body: Vec<u8>,
}

impl Reencoder<'_> {
    fn encode(&mut self, r: &Record<'_>) -> Option<()> {
        let base_ts = *self.done.base_timestamp.get_or_insert(r.timestamp);
        let b = &mut self.body;
        b.clear();
        b.push(r.attributes);
        varlong(b, r.timestamp.checked_sub(base_ts)?);
        varint(b, r.offset.checked_sub(self.base_offset)?)?;
        bytes_field(b, r.key)?;
        bytes_field(b, r.value)?;
        varint(b, i64::try_from(r.headers.len()).ok()?)?;
        for (k, v) in r.headers {
            bytes_field(b, Some(k.as_bytes()))?;
            bytes_field(b, *v)?;
        }
        varint(&mut self.done.area, i64::try_from(b.len()).ok()?)?;
        self.done.area.extend_from_slice(b);
        self.done.count += 1;
        let ts = self
            .done
            .max_timestamp
            .map_or(r.timestamp, |m| m.max(r.timestamp));
        self.done.max_timestamp = Some(ts);
        Some(())
    }
}

impl Sink for Reencoder<'_> {
    fn record(&mut self, r: &Record<'_>) {
        let i = self.seen;
        self.seen += 1;
        if self.failed {
            return;
        }
        match self.keep.map(|k| k.get(i)) {
            Some(None) => self.failed = true, // more records than the mask says
            Some(Some(0)) => {}
            _ => self.failed = self.encode(r).is_none(),
        }
    }
}

/// The records of a whole v2 batch (the ones whose `keep` byte is not 0, all without a mask)
/// re-encoded with offset deltas from `base_offset` and timestamp deltas from `base_timestamp`
/// (the first kept record's timestamp when `None`); `None`: re-encode it in Python.
pub fn reencode(
    batch_bytes: &[u8],
    max_batch_bytes: usize,
    keep: Option<&[u8]>,
    base_offset: i64,
    base_timestamp: Option<i64>,
) -> Option<Reencoded> {
    let mut enc = Reencoder {
        done: Reencoded {
            area: Vec::with_capacity(batch_bytes.len()),
            count: 0,
            max_timestamp: None,
            base_timestamp,
        },
        base_offset,
        keep,
        seen: 0,
        failed: false,
        body: Vec::new(),
    };
    batch::decode(batch_bytes, max_batch_bytes, &mut enc)?;
    if enc.failed || keep.is_some_and(|k| k.len() != enc.seen) {
        return None;
    }
    Some(enc.done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(f: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
        let mut out = Vec::new();
        f(&mut out);
        out
    }

    #[test]
    fn varints_are_zig_zag_leb128() {
        assert_eq!(bytes(|o| varint(o, -1).unwrap()), [0x01]);
        assert_eq!(bytes(|o| varint(o, 150).unwrap()), [0xac, 0x02]);
        assert_eq!(
            bytes(|o| varint(o, i64::from(i32::MIN)).unwrap()),
            [0xff, 0xff, 0xff, 0xff, 0x0f]
        );
        assert!(varint(&mut Vec::new(), 1 << 31).is_none());
        assert_eq!(bytes(|o| varlong(o, -2)), [0x03]);
        assert_eq!(bytes(|o| varlong(o, i64::MIN)).len(), 10);
    }

    /// A batch of `records` (already encoded, with the given count), uncompressed.
    fn batch(records: &[u8], count: i32, base_timestamp: i64) -> Vec<u8> {
        let mut b = vec![0u8; 61];
        let length = (49 + records.len()) as i32;
        b[8..12].copy_from_slice(&length.to_be_bytes());
        b[16] = 2;
        b[23..27].copy_from_slice(&(count - 1).to_be_bytes());
        b[27..35].copy_from_slice(&base_timestamp.to_be_bytes());
        b[53..57].copy_from_slice(&(-1i32).to_be_bytes());
        b[57..61].copy_from_slice(&count.to_be_bytes());
        b.extend_from_slice(records);
        b
    }

    fn record(offset_delta: i64, ts_delta: i64, key: Option<&[u8]>) -> Vec<u8> {
        let mut body = vec![0u8];
        varlong(&mut body, ts_delta);
        varint(&mut body, offset_delta).unwrap();
        bytes_field(&mut body, key).unwrap();
        bytes_field(&mut body, Some(b"v")).unwrap();
        varint(&mut body, 0).unwrap();
        let mut out = Vec::new();
        varint(&mut out, body.len() as i64).unwrap();
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn a_batch_re_encodes_to_its_own_records() {
        let records = [record(0, 0, Some(b"a")), record(1, 5, None)].concat();
        let b = batch(&records, 2, 1000);
        let got = reencode(&b, 1 << 20, None, 0, Some(1000)).unwrap();
        assert_eq!(got.area, records);
        assert_eq!((got.count, got.max_timestamp), (2, Some(1005)));
    }

    #[test]
    fn a_mask_keeps_records_and_rebases_timestamps() {
        let records = [record(0, 0, Some(b"a")), record(1, 5, None)].concat();
        let b = batch(&records, 2, 1000);
        let got = reencode(&b, 1 << 20, Some(&[0, 1]), 0, None).unwrap();
        assert_eq!(got.area, record(1, 0, None));
        assert_eq!(got.base_timestamp, Some(1005));
        assert!(reencode(&b, 1 << 20, Some(&[1]), 0, None).is_none());
        assert!(reencode(&b, 1 << 20, Some(&[1, 1, 1]), 0, None).is_none());
        // an offset delta past the int range: the Python encoder raises, so hand it back
        assert!(reencode(&b, 1 << 20, None, -(1 << 40), None).is_none());
    }
}
