//! Kafka's compressed payloads for message format 2, decompressed under a size bound.
//!
//! Every function here returns `None` for anything the Python reference
//! (`klogtool/formats/codecs.py`) would not decode to exactly the same bytes: corrupt or
//! truncated data, output beyond the bound, and the few cases where the reference's answer
//! depends on its inflater (gzip's reserved header flags). The framings producers write are
//! read here as the reference reads them: gzip members with optional header fields and
//! several members, concatenated xerial snappy streams, lz4 frames with a content size
//! (skipped, not checked) and block checksums (checked). The caller hands a refused batch to
//! the Python engine, which reports the precise error (`handback` counts why).
//! The codec libraries are the ones the Python engine uses underneath (libzstd, liblz4,
//! the `snap` crate behind cramjam; libdeflate and a zlib port for gzip), so both accept the
//! same streams.
#![forbid(unsafe_code)]

use crate::handback::{note, Reason};

pub const NONE: u8 = 0;
pub const GZIP: u8 = 1;
pub const SNAPPY: u8 = 2;
pub const LZ4: u8 = 3;
pub const ZSTD: u8 = 4;

/// Decompress a v2 batch's records area; `None` when the reference must take over.
pub fn decompress(codec: u8, data: &[u8], limit: usize) -> Option<Vec<u8>> {
    match codec {
        GZIP => gzip(data, limit),
        SNAPPY => snappy(data, limit),
        LZ4 => lz4_frame(data, limit, true),
        ZSTD => zstd(data, limit),
        _ => None,
    }
}

/// Decompress a v0/v1 wrapper message's value (`magic` 0 or 1); `None` when the reference must
/// take over. The codecs read as for v2 but for two things the reference
/// (`codecs.decompress(codec, value, magic=magic, limit=limit)`) does differently: an lz4
/// frame's header checksum is not checked for magic 0 (KAFKA-3160: v0 writers hashed the magic
/// bytes too, and the reference accepts whatever byte is there), and zstd is not a v0/v1 codec
/// (the reference refuses it: handed back, it says so).
pub fn decompress_legacy(codec: u8, magic: u8, data: &[u8], limit: usize) -> Option<Vec<u8>> {
    match (codec, magic) {
        (GZIP, 0 | 1) => gzip(data, limit),
        (SNAPPY, 0 | 1) => snappy(data, limit),
        (LZ4, 0 | 1) => lz4_frame(data, limit, magic != 0),
        _ => None,
    }
}

// -- gzip --------------------------------------------------------------------------------------

const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];
const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const GZIP_RESERVED_FLAGS: u8 = 0xe0;

/// gzip members, read as the reference reads them (zlib's or ISA-L's inflater, member after
/// member, like Java's GZIPInputStream): each member's header (its optional fields skipped,
/// its header CRC checked), deflate stream, CRC-32 and ISIZE; another member is read while at
/// least 10 bytes that start with a gzip magic follow, and anything else after a member is
/// ignored.
fn gzip(data: &[u8], limit: usize) -> Option<Vec<u8>> {
    if data.len() < 18 {
        return None;
    }
    let header = gzip_header(data)?;
    // The trailer's ISIZE (the last 4 bytes of a single member) sizes the output at once; it
    // is only a hint, bounded like everything else.
    let hint = u32::from_le_bytes(data[data.len() - 4..].try_into().ok()?) as usize;
    whole_member(data, header, hint, limit).or_else(|| members(data, header, hint, limit))
}

/// The length of the gzip member header at the start of `data` (10 bytes and its optional
/// fields), or `None`: not a header, cut short, or one the reference must judge.
fn gzip_header(data: &[u8]) -> Option<usize> {
    if data.len() < 10 || data[..3] != GZIP_MAGIC {
        return None;
    }
    let flags = data[3];
    if flags & GZIP_RESERVED_FLAGS != 0 {
        // zlib refuses reserved flags, ISA-L ignores them: the reference's inflater decides
        note(Reason::GzipHeaderFields);
        return None;
    }
    let mut pos = 10;
    if flags & FEXTRA != 0 {
        let xlen = u16::from_le_bytes(data.get(pos..pos + 2)?.try_into().ok()?);
        pos += 2 + usize::from(xlen);
    }
    for field in [FNAME, FCOMMENT] {
        if flags & field != 0 {
            pos += memchr::memchr(0, data.get(pos..)?)? + 1; // zero-terminated
        }
    }
    if flags & FHCRC != 0 {
        let stored = u16::from_le_bytes(data.get(pos..pos + 2)?.try_into().ok()?);
        let mut hasher = flate2::Crc::new();
        hasher.update(&data[..pos]);
        if hasher.sum() & 0xffff != u32::from(stored) {
            note(Reason::GzipHeaderFields);
            return None;
        }
        pos += 2;
    }
    (pos <= data.len()).then_some(pos)
}

/// libdeflate inflates a member whose size is known in one call, about twice as fast as a
/// streaming inflater. It checks the member's CRC-32 and ISIZE (and skips the header's
/// optional fields, which `gzip_header` has checked) but does not say where the member ended,
/// so it answers only when the member fills `data` (its size is the hint) and no second
/// member can follow: bytes that look like an ISIZE of this size followed by a gzip header
/// send the batch to the streaming inflater, which sees members one by one.
fn whole_member(data: &[u8], header: usize, hint: usize, limit: usize) -> Option<Vec<u8>> {
    if hint > limit {
        return None;
    }
    let mut out = vec![0u8; hint];
    let n = libdeflater::Decompressor::new()
        .gzip_decompress(data, &mut out)
        .ok()?;
    let mut next_member = [0u8; 7];
    next_member[..4].copy_from_slice(&(hint as u32).to_le_bytes());
    next_member[4..].copy_from_slice(&GZIP_MAGIC);
    if n != hint || memchr::memmem::find(&data[header..], &next_member).is_some() {
        return None;
    }
    Some(out)
}

/// Every member, inflated by a streaming zlib port, the output grown as it comes.
fn members(data: &[u8], header: usize, hint: usize, limit: usize) -> Option<Vec<u8>> {
    let guess = if hint > 0 { hint } else { data.len() * 4 };
    let mut out: Vec<u8> = Vec::with_capacity(guess.min(limit.saturating_add(1)));
    let mut body = header;
    let mut read = 0;
    loop {
        let Some(end) = member(data, body, &mut out, limit) else {
            if read > 0 && crate::handback::noted() == Reason::Malformed {
                note(Reason::GzipMultiMember); // a later member the reference must judge
            }
            return None;
        };
        read += 1;
        let rest = &data[end..];
        // GZIPInputStream reads another member when one can start; other bytes end the data
        if rest.len() < 10 || rest[..3] != GZIP_MAGIC {
            return Some(out);
        }
        let Some(next) = gzip_header(rest) else {
            if crate::handback::noted() == Reason::Malformed {
                note(Reason::GzipMultiMember);
            }
            return None;
        };
        body = end + next;
    }
}

/// Inflate the member whose deflate stream starts at `data[body]` onto `out`, check its
/// trailer, and say where the member ends.
fn member(data: &[u8], body: usize, out: &mut Vec<u8>, limit: usize) -> Option<usize> {
    let mut inflater = flate2::Decompress::new(false);
    let begin = out.len();
    let stream = &data[body..];
    loop {
        if out.len() == out.capacity() {
            if out.len() > limit {
                note(Reason::SizeLimit);
                return None;
            }
            out.reserve((out.len().max(4096)).min(limit + 1 - out.len()));
        }
        let consumed = inflater.total_in() as usize;
        let status = inflater
            .decompress_vec(&stream[consumed..], out, flate2::FlushDecompress::None)
            .ok()?;
        if out.len() > limit {
            note(Reason::SizeLimit);
            return None;
        }
        match status {
            flate2::Status::StreamEnd => break,
            flate2::Status::Ok => {}
            flate2::Status::BufError => {
                if out.len() < out.capacity() {
                    return None; // no progress with room left: the stream is cut short
                }
            }
        }
    }
    let end = body + inflater.total_in() as usize;
    let trailer = data.get(end..end + 8)?;
    let crc = u32::from_le_bytes(trailer[..4].try_into().ok()?);
    let isize = u32::from_le_bytes(trailer[4..].try_into().ok()?);
    let mut hasher = flate2::Crc::new();
    hasher.update(&out[begin..]);
    if hasher.sum() != crc || isize != (out.len() - begin) as u32 {
        return None;
    }
    Some(end + 8)
}

// -- snappy (xerial framing or one raw block) --------------------------------------------------

const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_MAX_CHUNK: usize = 512 * 1024 * 1024;

fn snappy(data: &[u8], limit: usize) -> Option<Vec<u8>> {
    if data.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    if data.len() < 16 || data[..8] != XERIAL_MAGIC {
        snappy_block(data, limit, &mut out)?;
        return Some(out);
    }
    let mut pos = 16;
    while data.len() - pos >= 4 {
        let size = i32::from_be_bytes(data[pos..pos + 4].try_into().ok()?);
        pos += 4;
        if data[pos - 4..pos] == XERIAL_MAGIC[..4] {
            // Another stream's header (snappy-java reads concatenated streams): 12 more bytes,
            // the rest of the magic and a version of at least 1; not a header: the end.
            let Some(header) = data.get(pos..pos + 12) else {
                note(Reason::SnappyConcatenated);
                return None;
            };
            if header[..4] != XERIAL_MAGIC[4..] {
                break;
            }
            if i32::from_be_bytes(header[4..8].try_into().ok()?) < 1 {
                note(Reason::SnappyConcatenated);
                return None;
            }
            pos += 12;
            continue;
        }
        let size = usize::try_from(size).ok()?;
        if size > XERIAL_MAX_CHUNK || data.len() - pos < size {
            return None;
        }
        snappy_block(&data[pos..pos + size], limit, &mut out)?;
        pos += size;
    }
    Some(out)
}

fn snappy_block(block: &[u8], limit: usize, out: &mut Vec<u8>) -> Option<()> {
    let declared = snap::raw::decompress_len(block).ok()?;
    if declared > limit - out.len() {
        note(Reason::SizeLimit);
        return None;
    }
    let start = out.len();
    out.resize(start + declared, 0);
    let n = snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .ok()?;
    (n == declared).then_some(())
}

// -- lz4 (the LZ4 frame format, independent blocks) --------------------------------------------

const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];
const LZ4_UNCOMPRESSED: u32 = 0x8000_0000;

/// An lz4 frame; `check_hc`: whether the frame descriptor's header checksum must hold (all but
/// magic 0's frames).
fn lz4_frame(data: &[u8], limit: usize, check_hc: bool) -> Option<Vec<u8>> {
    if data.len() < 7 || data[..4] != LZ4_MAGIC {
        return None;
    }
    let flg = data[4];
    let bd = data[5];
    // Version 01, independent blocks, no dictionary id (the reference's "reserved bits"); block
    // checksums, a content size and a content checksum may be there.
    if flg & 0xe3 != 0x60 || bd & 0x8f != 0 {
        return None;
    }
    let size_code = (bd >> 4) & 0x07;
    if size_code < 4 {
        return None;
    }
    let max_block = 1usize << (8 + 2 * size_code);
    // The content size (kafka-python's producer writes one) is read and not checked: Kafka's
    // KafkaLZ4BlockInputStream skips it, and so does the reference. It is in the header
    // checksum.
    let descriptor_end = if flg & 0x08 != 0 { 14 } else { 6 };
    let &hc = data.get(descriptor_end)?;
    if check_hc
        && hc != ((xxhash_rust::xxh32::xxh32(&data[4..descriptor_end], 0) >> 8) & 0xff) as u8
    {
        return None;
    }
    let block_checksum = flg & 0x10 != 0;
    let content_checksum = flg & 0x04 != 0;
    let mut pos = descriptor_end + 1;
    let mut out: Vec<u8> = Vec::new();
    loop {
        let word = u32::from_le_bytes(data.get(pos..pos + 4)?.try_into().ok()?);
        pos += 4;
        let size = (word & !LZ4_UNCOMPRESSED) as usize;
        if size == 0 {
            if content_checksum && data.len() - pos < 4 {
                return None;
            }
            return Some(out);
        }
        if size > max_block || data.len() - pos < size {
            return None;
        }
        let block = &data[pos..pos + size];
        pos += size;
        if block_checksum {
            // xxh32 of the block as stored, checked as the reference (and Kafka) check it
            if le_u32(data, pos)? != xxhash_rust::xxh32::xxh32(block, 0) {
                note(Reason::Lz4BlockChecksum);
                return None;
            }
            pos += 4;
        }
        let budget = limit - out.len();
        if word & LZ4_UNCOMPRESSED != 0 {
            if size > budget {
                note(Reason::SizeLimit);
                return None;
            }
            out.extend_from_slice(block);
            continue;
        }
        // The reference decodes into min(max block, budget) bytes of room: so does this, as
        // liblz4's end-of-buffer rules depend on the room given.
        let cap = max_block.min(budget);
        let start = out.len();
        out.resize(start + cap, 0);
        let n = i32::try_from(cap)
            .ok()
            .filter(|&c| c > 0)
            .and_then(|c| lz4::block::decompress_to_buffer(block, Some(c), &mut out[start..]).ok());
        let Some(n) = n else {
            lz4_refused(block, max_block, budget);
            return None;
        };
        out.truncate(start + n);
    }
}

/// Why a compressed block did not decode into the `budget` left: too big, or corrupt (the
/// reference's question, asked the same way: with room for a whole block, at most 4 MiB).
fn lz4_refused(block: &[u8], max_block: usize, budget: usize) {
    if budget >= max_block {
        return; // it had a whole block's room: corrupt
    }
    let mut room = vec![0u8; max_block];
    let whole = i32::try_from(max_block)
        .ok()
        .and_then(|c| lz4::block::decompress_to_buffer(block, Some(c), &mut room).ok());
    if whole.is_some_and(|n| n > budget) {
        note(Reason::SizeLimit);
    }
}

// -- zstd --------------------------------------------------------------------------------------

const ZSTD_MAGIC: u32 = 0xFD2F_B528;
const ZSTD_SKIPPABLE_MASK: u32 = 0xFFFF_FFF0;
const ZSTD_SKIPPABLE_MAGIC: u32 = 0x184D_2A50;
const ZSTD_MAX_WINDOW: u64 = 1 << 27;
const ZSTD_BLOCK_MAX: u64 = 128 * 1024;

/// Checks the frame structure the way the reference's `_zstd_frames` does (it rejects what
/// libzstd's streaming reader would take as a quiet end of data), then decodes all frames in
/// one call into a buffer of the frames' output bound (at most `limit`).
fn zstd(data: &[u8], limit: usize) -> Option<Vec<u8>> {
    if data.is_empty() {
        return None;
    }
    let bound = zstd_frames_bound(data)?;
    // Past the limit the reference streams until it passes it: leave that case to it.
    if bound > limit as u64 {
        note(Reason::SizeLimit);
        return None;
    }
    let mut out = Vec::with_capacity(bound as usize);
    let mut dctx = zstd::bulk::Decompressor::new().ok()?;
    dctx.decompress_to_buffer(data, &mut out).ok()?;
    Some(out)
}

fn le_u32(data: &[u8], pos: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(pos..pos + 4)?.try_into().ok()?))
}

/// The upper bound of the frames' output (raw and RLE blocks regenerate exactly their size,
/// a compressed block at most the block maximum), or `None` where the reference rejects them.
fn zstd_frames_bound(data: &[u8]) -> Option<u64> {
    let n = data.len();
    let mut pos = 0;
    let mut bound: u64 = 0;
    while pos < n {
        let magic = le_u32(data, pos)?;
        if magic & ZSTD_SKIPPABLE_MASK == ZSTD_SKIPPABLE_MAGIC {
            let skip = le_u32(data, pos + 4)?;
            pos += 8;
            if n - pos < skip as usize {
                return None;
            }
            pos += skip as usize;
            continue;
        }
        if magic != ZSTD_MAGIC {
            return None;
        }
        pos += 4;
        let &fhd = data.get(pos)?;
        pos += 1;
        if fhd & 0x08 != 0 {
            return None;
        }
        let single_segment = fhd & 0x20 != 0;
        let mut window: u64 = 0;
        if !single_segment {
            let &wd = data.get(pos)?;
            pos += 1;
            let base: u64 = 1 << (10 + (wd >> 3));
            window = base + (base >> 3) * u64::from(wd & 0x07);
        }
        pos += [0, 1, 2, 4][usize::from(fhd & 0x03)];
        let fcs_size = match [0, 2, 4, 8][usize::from(fhd >> 6)] {
            0 if single_segment => 1,
            s => s,
        };
        if pos > n || n - pos < fcs_size {
            return None;
        }
        if single_segment {
            let mut content = 0u64;
            for (i, b) in data[pos..pos + fcs_size].iter().enumerate() {
                content |= u64::from(*b) << (8 * i);
            }
            window = if fcs_size == 2 {
                content + 256
            } else {
                content
            };
        }
        pos += fcs_size;
        if window > ZSTD_MAX_WINDOW {
            return None;
        }
        let block_max: u64 = if window >= 1024 {
            window.min(ZSTD_BLOCK_MAX)
        } else {
            ZSTD_BLOCK_MAX
        };
        loop {
            if n - pos < 3 {
                return None;
            }
            let header = u32::from(data[pos])
                | u32::from(data[pos + 1]) << 8
                | u32::from(data[pos + 2]) << 16;
            pos += 3;
            let block_type = (header >> 1) & 0x03;
            if block_type == 3 {
                return None;
            }
            bound += if block_type == 2 {
                block_max
            } else {
                u64::from(header >> 3)
            };
            let size = if block_type == 1 {
                1
            } else {
                (header >> 3) as usize
            };
            if n - pos < size {
                return None;
            }
            pos += size;
            if header & 1 != 0 {
                break;
            }
        }
        if fhd & 0x04 != 0 {
            if n - pos < 4 {
                return None;
            }
            pos += 4;
        }
    }
    Some(bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_round_trip_and_bound() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&[7u8; 5000]).unwrap();
        let gz = enc.finish().unwrap();
        assert_eq!(gzip(&gz, 5000).unwrap(), vec![7u8; 5000]);
        assert!(gzip(&gz, 4999).is_none());
        assert!(gzip(&gz[..gz.len() - 1], 5000).is_none());
        let mut bad = gz.clone();
        let last = bad.len() - 5;
        bad[last] ^= 1; // the stored CRC
        assert!(gzip(&bad, 5000).is_none());
    }

    #[test]
    fn gzip_whole_member_answers_only_for_a_member_that_fills_the_data() {
        let member = |data: &[u8]| {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(data).unwrap();
            enc.finish().unwrap()
        };
        let text = b"kafka record ".repeat(300);
        let gz = member(&text);
        let hint = text.len();
        assert_eq!(whole_member(&gz, 10, hint, 1 << 20).unwrap(), text);
        // Over the bound.
        assert!(whole_member(&gz, 10, hint, hint - 1).is_none());
        // Two identical members: the last ISIZE is right for the first one alone, which
        // libdeflate would return; the streaming inflater reads both.
        let twice = [gz.clone(), gz.clone()].concat();
        assert!(whole_member(&twice, 10, hint, 1 << 20).is_none());
        assert_eq!(
            gzip(&twice, 1 << 20).unwrap(),
            [&text[..], &text[..]].concat()
        );
        // Bytes after the member that are not one: the member, as the reference reads it.
        let tail = [gz.clone(), b"trailing".to_vec()].concat();
        assert!(whole_member(&tail, 10, u32::from_le_bytes(*b"ling") as usize, 1 << 20).is_none());
        assert_eq!(gzip(&tail, 1 << 20).unwrap(), text);
        // A corrupt stream is left to the streaming inflater, which refuses it too.
        let mut bad = gz.clone();
        bad[20] ^= 0xff;
        assert!(whole_member(&bad, 10, hint, 1 << 20).is_none());
        assert!(gzip(&bad, 1 << 20).is_none());
    }

    /// A gzip member with the optional header fields given (`hcrc`: the header CRC to store,
    /// `Some(None)` for the right one).
    fn gz_member(
        data: &[u8],
        extra: Option<&[u8]>,
        name: Option<&[u8]>,
        comment: Option<&[u8]>,
        hcrc: Option<Option<u16>>,
    ) -> Vec<u8> {
        let mut flags = 0u8;
        for (on, bit) in [
            (extra.is_some(), FEXTRA),
            (name.is_some(), FNAME),
            (comment.is_some(), FCOMMENT),
            (hcrc.is_some(), FHCRC),
        ] {
            if on {
                flags |= bit;
            }
        }
        let mut out = vec![0x1f, 0x8b, 0x08, flags, 0, 0, 0, 0, 0, 0xff];
        if let Some(x) = extra {
            out.extend_from_slice(&(x.len() as u16).to_le_bytes());
            out.extend_from_slice(x);
        }
        for field in [name, comment].into_iter().flatten() {
            out.extend_from_slice(field);
            out.push(0);
        }
        if let Some(stored) = hcrc {
            let mut h = flate2::Crc::new();
            h.update(&out);
            let right = (h.sum() & 0xffff) as u16;
            out.extend_from_slice(&stored.unwrap_or(right).to_le_bytes());
        }
        let mut enc =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(data).unwrap();
        out.extend_from_slice(&enc.finish().unwrap());
        let mut h = flate2::Crc::new();
        h.update(data);
        out.extend_from_slice(&h.sum().to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out
    }

    #[test]
    fn gzip_header_fields_are_skipped_and_the_header_crc_checked() {
        let text = b"gzip header fields ".repeat(500);
        let every = gz_member(
            &text,
            Some(b"AB\x02\x00xy"),
            Some(b"name"),
            Some(b"comment"),
            Some(None),
        );
        assert_eq!(gzip(&every, 1 << 20).unwrap(), text);
        assert_eq!(gzip_header(&every), Some(10 + 2 + 6 + 5 + 8 + 2));
        for (extra, name, comment) in [
            (Some(&b""[..]), None, None),
            (None, Some(&b""[..]), None),
            (None, None, Some(&b"c"[..])),
        ] {
            let m = gz_member(&text, extra, name, comment, None);
            assert_eq!(gzip(&m, 1 << 20).unwrap(), text);
        }
        assert!(gzip(&every, text.len() - 1).is_none());
        // a header CRC that does not hold
        note(Reason::Malformed);
        let bad = gz_member(&text, None, Some(b"n"), None, Some(Some(1)));
        assert!(gzip(&bad, 1 << 20).is_none());
        assert_eq!(
            crate::handback::noted(),
            crate::handback::Reason::GzipHeaderFields
        );
        // reserved flags: zlib refuses them, ISA-L does not; the reference decides
        let mut reserved = gz_member(&text, None, None, None, None);
        reserved[3] = 0x20;
        assert!(gzip(&reserved, 1 << 20).is_none());
        // FTEXT is only a hint
        let mut ftext = gz_member(&text, None, None, None, None);
        ftext[3] = 0x01;
        assert_eq!(gzip(&ftext, 1 << 20).unwrap(), text);
        // a name without its terminating zero, an extra field longer than the data
        let mut unterminated = b"\x1f\x8b\x08\x08\0\0\0\0\0\xffname".to_vec();
        unterminated.extend_from_slice(&[b'x'; 20]);
        assert!(gzip(&unterminated, 1 << 20).is_none());
        let mut long_extra = gz_member(&text, Some(b"x"), None, None, None);
        long_extra[10] = 0xff;
        long_extra[11] = 0xff;
        assert!(gzip(&long_extra, 1 << 20).is_none());
    }

    #[test]
    fn gzip_members_are_read_one_after_another() {
        let text = b"member after member ".repeat(700);
        let (a, b) = text.split_at(5000);
        let two = [
            gz_member(a, None, Some(b"a"), None, Some(None)),
            gz_member(b, Some(b"x"), None, None, None),
        ]
        .concat();
        assert_eq!(gzip(&two, 1 << 20).unwrap(), text);
        assert!(gzip(&two, text.len() - 1).is_none());
        assert_eq!(crate::handback::noted(), crate::handback::Reason::SizeLimit);
        // an empty member, then bytes that do not start one (ignored, as GZIPInputStream does)
        let empty = gz_member(b"", None, None, None, None);
        let tail = [two.clone(), empty, b"\x1f\x8b\x08short".to_vec()].concat();
        assert_eq!(gzip(&tail, 1 << 20).unwrap(), text);
        // the second member cut short, or its CRC wrong
        note(Reason::Malformed);
        assert!(gzip(&two[..two.len() - 3], 1 << 20).is_none());
        assert_eq!(
            crate::handback::noted(),
            crate::handback::Reason::GzipMultiMember
        );
        let mut bad = two.clone();
        let at = bad.len() - 8;
        bad[at] ^= 1;
        assert!(gzip(&bad, 1 << 20).is_none());
        // ten bytes that start like a member but are not one: the reference says why
        let fake = [two.clone(), b"\x1f\x8b\x08\x00garbage".to_vec()].concat();
        assert!(gzip(&fake, 1 << 20).is_none());
    }

    #[test]
    fn snappy_raw_and_xerial() {
        let data = b"hello hello hello hello".repeat(50);
        let block = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(snappy(&block, 1 << 20).unwrap(), data);
        let mut xerial = XERIAL_MAGIC.to_vec();
        xerial.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
        xerial.extend_from_slice(&(block.len() as i32).to_be_bytes());
        xerial.extend_from_slice(&block);
        assert_eq!(snappy(&xerial, 1 << 20).unwrap(), data);
        assert!(snappy(&xerial, data.len() - 1).is_none());
        assert!(snappy(&xerial[..xerial.len() - 1], 1 << 20).is_none());
        // concatenated streams, a later header of any version from 1 on
        let mut twice = [xerial.clone(), xerial.clone()].concat();
        twice[xerial.len() + 11] = 9;
        assert_eq!(
            snappy(&twice, 1 << 20).unwrap(),
            [&data[..], &data[..]].concat()
        );
        assert!(snappy(&twice, 2 * data.len() - 1).is_none());
        // a header cut short, or of version 0: the reference's errors
        note(Reason::Malformed);
        assert!(snappy(&twice[..xerial.len() + 10], 1 << 20).is_none());
        assert_eq!(crate::handback::noted(), Reason::SnappyConcatenated);
        let mut old = twice.clone();
        old[xerial.len() + 11] = 0;
        assert!(snappy(&old, 1 << 20).is_none());
        // a magic's first four bytes and not the rest: the stream ends there
        let stop = [xerial.clone(), b"\x82SNAxxxxxxxxxxxx".to_vec()].concat();
        assert_eq!(snappy(&stop, 1 << 20).unwrap(), data);
    }

    #[test]
    fn lz4_frame_round_trip_and_bound() {
        let data = b"abcdefgh".repeat(10_000);
        let mut frame = vec![0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82];
        for chunk in data.chunks(65536) {
            let block = lz4::block::compress(chunk, None, false).unwrap();
            frame.extend_from_slice(&(block.len() as u32).to_le_bytes());
            frame.extend_from_slice(&block);
        }
        frame.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(lz4_frame(&frame, 1 << 20, true).unwrap(), data);
        assert!(lz4_frame(&frame, data.len() - 1, true).is_none());
        frame[6] ^= 1; // header checksum
        assert!(lz4_frame(&frame, 1 << 20, true).is_none());
        // v0 (KAFKA-3160): whatever the header checksum byte, as the reference reads it; v1
        // and v2 check it; zstd and unknown codecs are not v0/v1's
        assert_eq!(decompress_legacy(LZ4, 0, &frame, 1 << 20).unwrap(), data);
        assert!(decompress_legacy(LZ4, 1, &frame, 1 << 20).is_none());
        frame[6] ^= 1;
        assert_eq!(decompress_legacy(LZ4, 1, &frame, 1 << 20).unwrap(), data);
        let z = zstd::bulk::compress(&data, 3).unwrap();
        assert!(decompress_legacy(ZSTD, 1, &z, 1 << 20).is_none());
        assert!(decompress_legacy(ZSTD, 0, &z, 1 << 20).is_none());
        assert!(decompress_legacy(LZ4, 2, &frame, 1 << 20).is_none());
        assert!(decompress_legacy(7, 1, &frame, 1 << 20).is_none());
    }

    /// A frame as lz4.frame writes it with independent blocks: `content_size` and block
    /// checksums as asked, blocks of at most `block` bytes (stored when they do not shrink).
    fn lz4_frame_of(
        data: &[u8],
        content_size: Option<u64>,
        checksums: bool,
        block: usize,
    ) -> Vec<u8> {
        let mut flg = 0x60u8;
        if content_size.is_some() {
            flg |= 0x08;
        }
        if checksums {
            flg |= 0x10 | 0x04;
        }
        let bd = match block {
            65536 => 0x40,
            262144 => 0x50,
            _ => panic!("block size"),
        };
        let mut frame = vec![0x04, 0x22, 0x4d, 0x18, flg, bd];
        if let Some(size) = content_size {
            frame.extend_from_slice(&size.to_le_bytes());
        }
        frame.push(((xxhash_rust::xxh32::xxh32(&frame[4..], 0) >> 8) & 0xff) as u8);
        for chunk in data.chunks(block) {
            let packed = lz4::block::compress(chunk, None, false).unwrap();
            let (word, stored) = if packed.len() < chunk.len() {
                (packed.len() as u32, packed)
            } else {
                (chunk.len() as u32 | LZ4_UNCOMPRESSED, chunk.to_vec())
            };
            frame.extend_from_slice(&word.to_le_bytes());
            frame.extend_from_slice(&stored);
            if checksums {
                frame.extend_from_slice(&xxhash_rust::xxh32::xxh32(&stored, 0).to_le_bytes());
            }
        }
        frame.extend_from_slice(&[0, 0, 0, 0]);
        if checksums {
            frame.extend_from_slice(&xxhash_rust::xxh32::xxh32(data, 0).to_le_bytes());
        }
        frame
    }

    #[test]
    fn lz4_content_size_is_read_and_not_checked() {
        let data = b"kafka-python lz4 ".repeat(9000);
        let frame = lz4_frame_of(&data, Some(data.len() as u64), false, 65536);
        assert_eq!(frame[4], 0x68); // kafka-python's FLG
        assert_eq!(lz4_frame(&frame, 1 << 20, true).unwrap(), data);
        assert!(lz4_frame(&frame, data.len() - 1, true).is_none());
        // a wrong content size: Kafka and the reference skip it
        let wrong = lz4_frame_of(&data, Some(7), false, 65536);
        assert_eq!(lz4_frame(&wrong, 1 << 20, true).unwrap(), data);
        // the content size is in the header checksum
        let mut bad = frame.clone();
        bad[8] ^= 1;
        assert!(lz4_frame(&bad, 1 << 20, true).is_none());
        // cut inside the descriptor, or before the end mark
        assert!(lz4_frame(&frame[..14], 1 << 20, true).is_none());
        assert!(lz4_frame(&frame[..frame.len() - 1], 1 << 20, true).is_none());
    }

    #[test]
    fn lz4_block_checksums_are_checked() {
        let mut data = b"checked blocks ".repeat(30_000);
        data.extend((0..70_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
        for (size, block) in [(None, 65536), (Some(data.len() as u64), 262144)] {
            let frame = lz4_frame_of(&data, size, true, block);
            assert_eq!(lz4_frame(&frame, 1 << 22, true).unwrap(), data);
            // every block's checksum is checked, stored blocks' too
            let mut pos = if size.is_some() { 15 } else { 7 };
            loop {
                let word = u32::from_le_bytes(frame[pos..pos + 4].try_into().unwrap());
                let n = (word & !LZ4_UNCOMPRESSED) as usize;
                if n == 0 {
                    break;
                }
                let mut bad = frame.clone();
                bad[pos + 4 + n] ^= 0x80;
                note(Reason::Malformed);
                assert!(lz4_frame(&bad, 1 << 22, true).is_none());
                assert_eq!(
                    crate::handback::noted(),
                    crate::handback::Reason::Lz4BlockChecksum
                );
                pos += 4 + n + 4;
            }
            // the checksum of the last block cut off
            let end = frame.len() - 8;
            assert!(lz4_frame(&frame[..end - 2], 1 << 22, true).is_none());
            // the content checksum is read, not checked (as Kafka and the reference do)
            let mut unchecked = frame.clone();
            let last = unchecked.len() - 1;
            unchecked[last] ^= 1;
            assert_eq!(lz4_frame(&unchecked, 1 << 22, true).unwrap(), data);
            assert!(lz4_frame(&frame[..frame.len() - 1], 1 << 22, true).is_none());
        }
    }

    #[test]
    fn lz4_frames_the_reference_refuses_are_refused() {
        let data = b"abc".repeat(100);
        let frame = lz4_frame_of(&data, None, false, 65536);
        for (flg, why) in [
            (0x40, "linked blocks"),
            (0x61, "a dictionary id"),
            (0x62, "reserved"),
            (0xa0, "version"),
        ] {
            let mut f = frame.clone();
            f[4] = flg;
            f[6] = ((xxhash_rust::xxh32::xxh32(&f[4..6], 0) >> 8) & 0xff) as u8;
            assert!(lz4_frame(&f, 1 << 20, true).is_none(), "{why}");
        }
    }

    #[test]
    fn zstd_round_trip_bound_and_truncation() {
        let data = b"zstd zstd zstd".repeat(1000);
        let z = zstd::bulk::compress(&data, 3).unwrap();
        assert_eq!(zstd(&z, 1 << 20).unwrap(), data);
        assert!(zstd(&z, data.len() - 1).is_none());
        assert!(zstd(&z[..z.len() - 2], 1 << 20).is_none());
        assert!(zstd(b"not zstd", 1 << 20).is_none());
    }
}
