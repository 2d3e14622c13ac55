//! Message format v2 record batches: the 61-byte header and the records, decoded the way the
//! Python reference (`klogtool/formats/v2.py`) decodes them.
//!
//! Only the well-formed case is decoded here. Anything else (a bad length, a varint that is too
//! long, a record that does not end where its length says, a size past the bound, a header key
//! that is not UTF-8, an offset past the 64-bit range) returns `None` before any record reaches
//! the sink's `finish`: the caller then re-reads the batch with the Python engine, which raises
//! the exact error, message and byte position. So the engines cannot disagree on errors.
#![forbid(unsafe_code)]

use crate::codecs;

pub const LOG_OVERHEAD: usize = 12;
pub const HEADER_SIZE: usize = 61;
const MIN_RECORD_SIZE: usize = 7;
const TIMESTAMP_TYPE_MASK: i16 = 0x08;
const COMPRESSION_MASK: i16 = 0x07;

/// The fields of a v2 batch header that record decoding needs.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    pub base_offset: i64,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl Header {
    pub fn compression(&self) -> u8 {
        (self.attributes & COMPRESSION_MASK) as u8
    }
    pub fn log_append_time(&self) -> bool {
        self.attributes & TIMESTAMP_TYPE_MASK != 0
    }
    pub fn last_offset(&self) -> Option<i64> {
        self.base_offset
            .checked_add(i64::from(self.last_offset_delta))
    }
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}
fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(b[at..at + 2].try_into().unwrap_or([0; 2]))
}

/// The header of a whole batch (`batch` holds exactly the batch, length prefix included).
pub fn parse_header(batch: &[u8]) -> Option<Header> {
    if batch.len() < HEADER_SIZE || batch[16] != 2 {
        return None;
    }
    let length = be_i32(batch, 8);
    if usize::try_from(length).ok()?.checked_add(LOG_OVERHEAD)? != batch.len() {
        return None;
    }
    Some(Header {
        base_offset: be_i64(batch, 0),
        attributes: be_i16(batch, 21),
        last_offset_delta: be_i32(batch, 23),
        base_timestamp: be_i64(batch, 27),
        max_timestamp: be_i64(batch, 35),
        base_sequence: be_i32(batch, 53),
        records_count: be_i32(batch, 57),
    })
}

/// One decoded record; slices borrow the records area.
pub struct Record<'a> {
    pub offset: i64,
    pub timestamp: i64,
    pub attributes: u8,
    pub sequence: i32,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// `(key, value)` pairs; keys are valid UTF-8.
    pub headers: &'a [(&'a str, Option<&'a [u8]>)],
    /// A v0/v1 message's stored CRC-32 and whether it holds; `None` for v2 records.
    pub crc: Option<(u32, bool)>,
}

/// Receives a batch's records, in order.
pub trait Sink {
    fn record(&mut self, r: &Record<'_>);

    /// A record's key and value, as soon as the walk has found them: before it reads the
    /// record's headers, which follow the value (and `record`, which may not follow: the rest
    /// of the record may be malformed).
    #[inline(always)]
    fn payload(&mut self, _key: Option<&[u8]>, _value: Option<&[u8]>) {}
}

/// Decode every record of `batch` into `sink`; `None` when the reference must read it.
/// On `None` the sink may already hold the records before the bad one: a sink that keeps
/// state across batches rolls them back (see `columns::Columns::add`).
pub fn decode<S: Sink>(batch: &[u8], max_batch_bytes: usize, sink: &mut S) -> Option<Header> {
    decode_inflated(batch, max_batch_bytes, sink).map(|(header, _)| header)
}

/// [`decode`], handing over the decompressed records area too (`None`: the batch was not
/// compressed), for a caller that keeps it.
#[inline]
pub fn decode_inflated<S: Sink>(
    batch: &[u8],
    max_batch_bytes: usize,
    sink: &mut S,
) -> Option<(Header, Option<Vec<u8>>)> {
    let (header, count, inflated) = unpack(batch, max_batch_bytes)?;
    walk(area(batch, &inflated), count, &header, sink)?;
    Some((header, inflated))
}

/// The records of a batch [`decode_inflated`] decoded, walked again into `sink`.
pub fn walk_again<S: Sink>(
    batch: &[u8],
    inflated: &Option<Vec<u8>>,
    header: &Header,
    sink: &mut S,
) -> Option<()> {
    let count = usize::try_from(header.records_count).ok()?;
    if batch.len() < HEADER_SIZE {
        return None;
    }
    walk(area(batch, inflated), count, header, sink)
}

/// `batch`'s header, its record count, checked against the size of the records area, and the
/// area decompressed when the batch is compressed (see [`area`]); `None` when the reference
/// must read it.
#[inline]
fn unpack(batch: &[u8], max_batch_bytes: usize) -> Option<(Header, usize, Option<Vec<u8>>)> {
    let header = parse_header(batch)?;
    let count = usize::try_from(header.records_count).ok()?;
    let inflated = match header.compression() {
        codecs::NONE => None,
        codec => Some(codecs::decompress(
            codec,
            &batch[HEADER_SIZE..],
            max_batch_bytes,
        )?),
    };
    if count.checked_mul(MIN_RECORD_SIZE)? > area(batch, &inflated).len() {
        return None;
    }
    Some((header, count, inflated))
}

/// The records area of `batch`: `inflated` when it was decompressed, else the batch's own.
#[inline]
fn area<'a>(batch: &'a [u8], inflated: &'a Option<Vec<u8>>) -> &'a [u8] {
    inflated.as_deref().unwrap_or(&batch[HEADER_SIZE..])
}

/// A zig-zag varint of at most `max_bytes` bytes (5: int, 10: long), Java's surplus-bit rule.
#[inline(always)]
fn varint(buf: &[u8], pos: &mut usize, max_bytes: usize) -> Option<i64> {
    let first = *buf.get(*pos)?;
    if first < 0x80 {
        *pos += 1;
        let v = u64::from(first);
        return Some(((v >> 1) as i64) ^ -((v & 1) as i64));
    }
    let mut value: u64 = 0;
    let mut shift = 0u32;
    let start = *pos;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if shift < 64 {
            value |= u64::from(b & 0x7f) << shift;
        }
        if b < 0x80 {
            break;
        }
        shift += 7;
        if *pos - start >= max_bytes {
            return None;
        }
    }
    if max_bytes == 5 {
        value &= 0xffff_ffff;
    }
    Some(((value >> 1) as i64) ^ -((value & 1) as i64))
}

fn sequence_at(base: i32, delta: i64) -> i32 {
    if base < 0 {
        return -1;
    }
    let seq = i64::from(base) + delta;
    let wrapped = if seq > i64::from(i32::MAX) {
        seq - i64::from(i32::MAX) - 1
    } else {
        seq
    };
    // A delta beyond the int range cannot come out of a 5-byte varint.
    wrapped as i32
}

#[inline(always)]
fn length_field<'a>(buf: &'a [u8], pos: &mut usize, end: usize) -> Option<Option<&'a [u8]>> {
    let len = varint(buf, pos, 5)?;
    if len == -1 {
        return Some(None);
    }
    let len = usize::try_from(len).ok()?;
    let stop = pos.checked_add(len)?;
    if stop > end {
        return None;
    }
    let bytes = &buf[*pos..stop];
    *pos = stop;
    Some(Some(bytes))
}

/// One record's fields but its headers (left in the caller's vector).
struct Fields<'a> {
    offset: i64,
    timestamp: i64,
    attributes: u8,
    sequence: i32,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
}

/// The record at `*pos` of a batch's records area (its headers into `headers`), moving `pos`
/// past it; `None` if it is malformed.
#[inline(always)]
fn read_record<'a, S: Sink>(
    area: &'a [u8],
    pos: &mut usize,
    h: &Header,
    fixed_ts: Option<i64>,
    headers: &mut Vec<(&'a str, Option<&'a [u8]>)>,
    sink: &mut S,
) -> Option<Fields<'a>> {
    let length = usize::try_from(varint(area, pos, 5)?).ok()?;
    let end = pos.checked_add(length)?;
    if end > area.len() || length == 0 {
        return None;
    }
    let attributes = area[*pos];
    *pos += 1;
    let ts_delta = varint(area, pos, 10)?;
    let off_delta = varint(area, pos, 5)?;
    let key = length_field(area, pos, end)?;
    let value = length_field(area, pos, end)?;
    sink.payload(key, value);
    let hcount = varint(area, pos, 5)?;
    headers.clear();
    if hcount != 0 {
        let hcount = usize::try_from(hcount).ok()?;
        if hcount.checked_mul(2)? > end.checked_sub(*pos)? {
            return None;
        }
        for _ in 0..hcount {
            let hkey = length_field(area, pos, end)??;
            let hkey = std::str::from_utf8(hkey).ok()?;
            let hval = length_field(area, pos, end)?;
            headers.push((hkey, hval));
        }
    }
    if *pos != end {
        return None;
    }
    Some(Fields {
        offset: h.base_offset.checked_add(off_delta)?,
        timestamp: match fixed_ts {
            Some(ts) => ts,
            None => h.base_timestamp.checked_add(ts_delta)?,
        },
        attributes,
        sequence: sequence_at(h.base_sequence, off_delta),
        key,
        value,
    })
}

impl<'a> Fields<'a> {
    fn with<'h>(self, headers: &'h [(&'a str, Option<&'a [u8]>)]) -> Record<'h>
    where
        'a: 'h,
    {
        Record {
            offset: self.offset,
            timestamp: self.timestamp,
            attributes: self.attributes,
            sequence: self.sequence,
            key: self.key,
            value: self.value,
            headers,
            crc: None,
        }
    }
}

// Inlining hints: without them a change elsewhere in the crate (the codecs growing) moved
// LLVM's choices and check_v2 lost 4 ns a record (1,018 -> 1,400 ns a 100-record batch).
#[inline]
fn walk<S: Sink>(area: &[u8], count: usize, h: &Header, sink: &mut S) -> Option<()> {
    let mut pos = 0usize;
    let mut headers: Vec<(&str, Option<&[u8]>)> = Vec::new();
    let fixed_ts = h.log_append_time().then_some(h.max_timestamp);
    for _ in 0..count {
        let fields = read_record(area, &mut pos, h, fixed_ts, &mut headers, sink)?;
        sink.record(&fields.with(&headers));
    }
    (pos == area.len()).then_some(())
}

/// The records of a batch, one at a time: `records_v2`'s iterator, which makes each Python
/// record as Python asks for it.
pub struct Cursor {
    header: Header,
    fixed_ts: Option<i64>,
    pos: usize,
    count: usize,
    left: usize,
    /// Where a record (or the end) was found malformed: `(position in the area, records
    /// read before it)`.
    stopped: Option<(usize, usize)>,
}

/// What `Cursor::next` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// A record, given to the sink.
    Record,
    /// The end of a well-formed batch.
    End,
    /// A malformed record, or bytes after the last: the python engine reads on from
    /// `Cursor::stopped` (and says what is wrong there).
    Malformed,
}

impl Cursor {
    /// A cursor over a batch whose header, decompression and record count (against the area)
    /// were checked, with the decompressed records area when the batch is compressed (`None`:
    /// the area is `batch[HEADER_SIZE..]`). The records are checked as they are read: the
    /// python engine yields a batch's records up to a malformed one too, so the two engines
    /// agree if the python engine takes over there.
    pub fn new(batch: &[u8], max_batch_bytes: usize) -> Option<(Self, Option<Vec<u8>>)> {
        let (header, count, inflated) = unpack(batch, max_batch_bytes)?;
        let cursor = Cursor {
            header,
            fixed_ts: header.log_append_time().then_some(header.max_timestamp),
            pos: 0,
            count,
            left: count,
            stopped: None,
        };
        Some((cursor, inflated))
    }

    /// Records not read yet.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Where the python engine takes over, once `next` found the batch malformed.
    pub fn stopped(&self) -> Option<(usize, usize)> {
        self.stopped
    }

    /// The next record of `area` (the area `new` was given) to `sink`.
    #[inline]
    pub fn next<S: Sink>(&mut self, area: &[u8], sink: &mut S) -> Step {
        if self.stopped.is_some() {
            return Step::End;
        }
        if self.left == 0 {
            if self.pos == area.len() {
                return Step::End;
            }
            self.stopped = Some((self.pos, self.count));
            return Step::Malformed;
        }
        let start = self.pos;
        let mut headers = Vec::new();
        let Some(fields) = read_record(
            area,
            &mut self.pos,
            &self.header,
            self.fixed_ts,
            &mut headers,
            sink,
        ) else {
            self.stopped = Some((start, self.count - self.left));
            return Step::Malformed;
        };
        self.left -= 1;
        sink.record(&fields.with(&headers));
        Step::Record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_follow_java() {
        let mut p = 0;
        assert_eq!(varint(&[0x01], &mut p, 5), Some(-1));
        p = 0;
        assert_eq!(varint(&[0xac, 0x02], &mut p, 5), Some(150));
        p = 0;
        // five bytes with surplus high bits: Java shifts them out of the int
        assert_eq!(
            varint(&[0xff, 0xff, 0xff, 0xff, 0x7f], &mut p, 5),
            Some(-2147483648)
        );
        p = 0;
        assert_eq!(
            varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], &mut p, 5),
            None
        );
    }

    /// An uncompressed batch of `n` records (offset deltas 0..n, value `v`, no headers).
    fn batch_of(n: u8) -> Vec<u8> {
        let mut b = vec![0u8; HEADER_SIZE];
        for d in 0..n {
            b.extend_from_slice(&[0x0e, 0, 0, d * 2, 0x01, 0x02, b'v', 0]);
        }
        let length = (b.len() - LOG_OVERHEAD) as i32;
        b[8..12].copy_from_slice(&length.to_be_bytes());
        b[16] = 2;
        b[53..57].copy_from_slice(&(-1i32).to_be_bytes());
        b[57..61].copy_from_slice(&i32::from(n).to_be_bytes());
        b
    }

    struct Offsets(Vec<i64>);

    impl Sink for Offsets {
        fn record(&mut self, r: &Record<'_>) {
            self.0.push(r.offset);
        }
    }

    /// The offsets a cursor gives, and what it ended with.
    fn read_all(batch: &[u8], area: &[u8]) -> (Vec<i64>, Step, Option<(usize, usize)>) {
        let (mut cursor, _) = Cursor::new(batch, 1 << 20).unwrap();
        let mut got = Offsets(Vec::new());
        let end = loop {
            match cursor.next(area, &mut got) {
                Step::Record => {}
                step => break step,
            }
        };
        // once ended, it stays ended
        assert_eq!(cursor.next(area, &mut got), Step::End);
        (got.0, end, cursor.stopped())
    }

    #[test]
    fn a_cursor_gives_what_decode_gives_and_stops_where_it_refuses() {
        let data = batch_of(3);
        let (cursor, inflated) = Cursor::new(&data, 1 << 20).unwrap();
        assert!(inflated.is_none() && cursor.left() == 3);
        let mut decoded = Offsets(Vec::new());
        decode(&data, 1 << 20, &mut decoded).unwrap();
        let got = read_all(&data, &data[HEADER_SIZE..]);
        assert_eq!(got, (decoded.0, Step::End, None));
        // the last record's length one short: two records, then a stop at the third (byte 16)
        let mut bad = batch_of(3);
        bad[HEADER_SIZE + 16] = 0x0c;
        assert!(decode(&bad, 1 << 20, &mut Offsets(Vec::new())).is_none());
        let got = read_all(&bad, &bad[HEADER_SIZE..]);
        assert_eq!(got, (vec![0, 1], Step::Malformed, Some((16, 2))));
        // bytes after the last record: all three, then a stop at the end
        let mut longer = data.clone();
        longer.push(0);
        let got = read_all(&data, &longer[HEADER_SIZE..]);
        assert_eq!(got, (vec![0, 1, 2], Step::Malformed, Some((24, 3))));
    }

    /// What a sink heard, in order: `payload`s and `record`s (offset), with their values.
    #[derive(Default)]
    struct Heard(Vec<(&'static str, i64, Option<Vec<u8>>)>);

    impl Sink for Heard {
        fn record(&mut self, r: &Record<'_>) {
            self.0
                .push(("record", r.offset, r.value.map(<[u8]>::to_vec)));
        }

        fn payload(&mut self, _key: Option<&[u8]>, value: Option<&[u8]>) {
            self.0.push(("payload", -1, value.map(<[u8]>::to_vec)));
        }
    }

    #[test]
    fn a_sink_hears_each_payload_before_its_record() {
        let v = Some(b"v".to_vec());
        let two = vec![
            ("payload", -1, v.clone()),
            ("record", 0, v.clone()),
            ("payload", -1, v.clone()),
            ("record", 1, v.clone()),
        ];
        let data = batch_of(2);
        let mut decoded = Heard::default();
        decode(&data, 1 << 20, &mut decoded).unwrap();
        assert_eq!(decoded.0, two);
        // a third record whose header count (after its value) runs past it: its payload was
        // heard, its record is not
        let mut bad = batch_of(3);
        bad[HEADER_SIZE + 23] = 0x02;
        let (mut cursor, _) = Cursor::new(&bad, 1 << 20).unwrap();
        let mut heard = Heard::default();
        while cursor.next(&bad[HEADER_SIZE..], &mut heard) == Step::Record {}
        assert_eq!(heard.0[..4], two[..]);
        assert_eq!(heard.0[4..], [("payload", -1, v)]);
        assert_eq!(cursor.stopped(), Some((16, 2)));
    }

    #[test]
    fn sequences_wrap_past_int_max() {
        assert_eq!(sequence_at(i32::MAX, 1), 0);
        assert_eq!(sequence_at(-1, 5), -1);
        assert_eq!(sequence_at(10, 5), 15);
    }
}
