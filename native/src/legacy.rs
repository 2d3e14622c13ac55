//! Message formats v0 and v1: the inner message set of a compressed wrapper, decoded the way
//! the Python reference (`klogtool/formats/legacy.py`, `_plain_walk`) decodes it.
//!
//! The Python engine decompresses the wrapper (its codecs, its limits and errors) and works out
//! the offset shift of v1 relative offsets; this module walks the decompressed set. Only the
//! plain case is read: every inner message of the wrapper's magic, uncompressed, its lengths
//! consistent. Anything else returns `None` and the Python engine's careful walk reads the set
//! or says what is wrong, so the engines cannot disagree on errors. A plain (uncompressed)
//! message is read the same way, as a set of one at its own offset (shift 0).
#![forbid(unsafe_code)]

use crate::batch::{Record, Sink};

const LOG_OVERHEAD: usize = 12;
/// The CRC-32 of an inner message covers its bytes from the magic byte on.
const CRC_START: usize = 16;
const COMPRESSION_MASK: u8 = 0x07;

/// How the records of one wrapper's inner set are made.
#[derive(Debug, Clone, Copy)]
pub struct Wrapper {
    /// The wrapper's magic (0 or 1), which every inner message must have.
    pub magic: u8,
    /// Added to each inner offset (v1 offsets are relative to the wrapper's).
    pub shift: i64,
    /// The wrapper's timestamp, for a v1 wrapper with LogAppendTime.
    pub fixed_timestamp: Option<i64>,
}

/// The fields of one inner message, borrowed from the set.
struct Message<'a> {
    offset: i64,
    crc: u32,
    attributes: u8,
    timestamp: i64,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
    /// The bytes the CRC covers.
    covered: &'a [u8],
    end: usize,
}

/// The big-endian int at `at`, None past the end (the header walks' checked reads).
pub(crate) fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}
pub(crate) fn be_i64(b: &[u8], at: usize) -> Option<i64> {
    Some(i64::from_be_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// A length field (-1: null) and the bytes it announces, which must end by `end`.
fn field(raw: &[u8], pos: usize, end: usize) -> Option<(Option<&[u8]>, usize)> {
    let n = be_i32(raw, pos)?;
    let start = pos + 4;
    if n == -1 {
        return Some((None, start));
    }
    let stop = start.checked_add(usize::try_from(n).ok()?)?;
    if stop > end {
        return None;
    }
    Some((Some(raw.get(start..stop)?), stop))
}

/// The message starting at `pos`, or `None` if it is not plain.
fn message(raw: &[u8], pos: usize, magic: u8) -> Option<Message<'_>> {
    let offset = be_i64(raw, pos)?;
    let size = usize::try_from(be_i32(raw, pos + 8)?).ok()?;
    let end = pos.checked_add(LOG_OVERHEAD)?.checked_add(size)?;
    let crc = u32::from_be_bytes(raw.get(pos + 12..pos + 16)?.try_into().ok()?);
    let (&found, &attributes) = (raw.get(pos + 16)?, raw.get(pos + 17)?);
    if found != magic || attributes & COMPRESSION_MASK != 0 || end > raw.len() {
        return None;
    }
    let (timestamp, at) = match magic {
        0 => (-1, pos + 18),
        _ => (be_i64(raw, pos + 18)?, pos + 26),
    };
    let (key, at) = field(raw, at, end)?;
    let (value, at) = field(raw, at, end)?;
    (at == end).then_some(Message {
        offset,
        crc,
        attributes,
        timestamp,
        key,
        value,
        covered: raw.get(pos + CRC_START..end)?,
        end,
    })
}

/// `(count, first offset, last offset)` of an inner message set, or `None` if it is not
/// plain. The count is 0 for an empty set (an error the Python engine raises).
pub fn scan(raw: &[u8], magic: u8) -> Option<(usize, i64, i64)> {
    if magic > 1 {
        return None;
    }
    let (mut pos, mut count, mut first, mut last) = (0, 0, 0, 0);
    while pos < raw.len() {
        let m = message(raw, pos, magic)?;
        if count == 0 {
            first = m.offset;
        }
        last = m.offset;
        count += 1;
        pos = m.end;
    }
    Some((count, first, last))
}

/// Decode every inner record of the set into `sink`, each with its CRC and whether it holds,
/// or `None` (the Python engine reads it; see `batch::decode` on what the sink then holds).
pub fn decode<S: Sink>(raw: &[u8], w: &Wrapper, sink: &mut S) -> Option<()> {
    if w.magic > 1 {
        return None;
    }
    let mut pos = 0;
    while pos < raw.len() {
        let m = message(raw, pos, w.magic)?;
        sink.record(&Record {
            offset: m.offset.checked_add(w.shift)?,
            timestamp: w.fixed_timestamp.unwrap_or(m.timestamp),
            attributes: m.attributes,
            sequence: -1,
            key: m.key,
            value: m.value,
            headers: &[],
            crc: Some((m.crc, crc32fast::hash(m.covered) == m.crc)),
        });
        pos = m.end;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One inner message as `legacy.encode_message` lays it out.
    fn message_bytes(offset: i64, magic: u8, ts: i64, key: Option<&[u8]>, value: &[u8]) -> Vec<u8> {
        let mut body = vec![magic, 0];
        if magic == 1 {
            body.extend_from_slice(&ts.to_be_bytes());
        }
        match key {
            Some(k) => {
                body.extend_from_slice(&(k.len() as i32).to_be_bytes());
                body.extend_from_slice(k);
            }
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
        }
        body.extend_from_slice(&(value.len() as i32).to_be_bytes());
        body.extend_from_slice(value);
        let mut out = offset.to_be_bytes().to_vec();
        out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// (offset, timestamp, key, value, CRC holds)
    type Row = (i64, i64, Option<Vec<u8>>, Vec<u8>, bool);
    struct Kept(Vec<Row>);
    impl Sink for Kept {
        fn record(&mut self, r: &Record<'_>) {
            let valid = r.crc.unwrap().1;
            let key = r.key.map(<[u8]>::to_vec);
            self.0
                .push((r.offset, r.timestamp, key, r.value.unwrap().to_vec(), valid));
        }
    }

    #[test]
    fn plain_sets_decode_with_shift_timestamps_and_crcs() {
        let mut raw = message_bytes(0, 1, 10, Some(b"k"), b"v0");
        raw.extend(message_bytes(1, 1, 11, None, b"v1"));
        assert_eq!(scan(&raw, 1), Some((2, 0, 1)));
        assert_eq!(scan(&raw, 0), None); // the wrapper's magic differs
        let w = Wrapper {
            magic: 1,
            shift: 100,
            fixed_timestamp: None,
        };
        let mut kept = Kept(Vec::new());
        decode(&raw, &w, &mut kept).unwrap();
        assert_eq!(
            kept.0,
            vec![
                (100, 10, Some(b"k".to_vec()), b"v0".to_vec(), true),
                (101, 11, None, b"v1".to_vec(), true),
            ]
        );
        raw[20] ^= 1; // a byte of the first message's timestamp: its CRC no longer holds
        let fixed = Wrapper {
            fixed_timestamp: Some(7),
            ..w
        };
        let mut kept = Kept(Vec::new());
        decode(&raw, &fixed, &mut kept).unwrap();
        assert_eq!((kept.0[0].1, kept.0[0].4, kept.0[1].4), (7, false, true));
    }

    #[test]
    fn anything_unusual_is_handed_back() {
        let raw = message_bytes(0, 0, -1, None, b"value");
        assert_eq!(scan(&raw, 0), Some((1, 0, 0)));
        assert_eq!(scan(&[], 0), Some((0, 0, 0)));
        for cut in 1..raw.len() {
            assert_eq!(scan(&raw[..cut], 0), None, "cut at {cut}");
        }
        let mut compressed = raw.clone();
        compressed[17] = 1; // an inner message must not be compressed
        assert_eq!(scan(&compressed, 0), None);
        let mut long = raw.clone();
        long[25] += 1; // the value length runs past the message
        assert_eq!(scan(&long, 0), None);
        let mut extra = raw.clone();
        extra[11] += 1; // the size says one byte more than the fields take
        extra.push(0);
        assert_eq!(scan(&extra, 0), None);
        let w = Wrapper {
            magic: 0,
            shift: i64::MAX,
            fixed_timestamp: None,
        };
        let mut raw2 = raw.clone();
        raw2[7] = 1; // offset 1 + shift overflows
        assert!(decode(&raw2, &w, &mut Kept(Vec::new())).is_none());
    }
}
