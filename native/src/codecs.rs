//! Kafka's compressed payloads for message format 2, decompressed under a size bound.
//!
//! Every function here returns `None` for anything the Python reference
//! (`klogtool/formats/codecs.py`) would not decode to exactly the same bytes: corrupt or
//! truncated data, output beyond the bound, and the rare framings this fast path leaves to
//! the reference (concatenated gzip members or xerial streams, lz4 block checksums). The
//! caller then hands the batch to the Python engine, which reports the precise error.
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
        LZ4 => lz4_frame(data, limit),
        ZSTD => zstd(data, limit),
        _ => None,
    }
}

// -- gzip --------------------------------------------------------------------------------------

const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];

/// One gzip member with a plain 10-byte header (what Java's GZIPOutputStream and zlib write).
fn gzip(data: &[u8], limit: usize) -> Option<Vec<u8>> {
    if data.len() < 18 || data[..3] != GZIP_MAGIC {
        return None;
    }
    if data[3] != 0 {
        note(Reason::GzipHeaderFields);
        return None; // header flags (name, comment, extra, header CRC): the reference's job
    }
    // The trailer's ISIZE (the last 4 bytes of a single member) sizes the output at once; it
    // is only a hint, bounded like everything else.
    let hint = u32::from_le_bytes(data[data.len() - 4..].try_into().ok()?) as usize;
    whole_member(data, hint, limit).or_else(|| streamed_member(data, hint, limit))
}

/// libdeflate inflates a member whose size is known in one call, about twice as fast as a
/// streaming inflater. It checks the member's CRC-32 and ISIZE but does not say where the
/// member ended, so it answers only when the member fills `data` (its size is the hint) and
/// no second member can follow: bytes that look like an ISIZE of this size followed by a
/// gzip header send the batch to the streaming inflater, which sees members one by one.
fn whole_member(data: &[u8], hint: usize, limit: usize) -> Option<Vec<u8>> {
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
    if n != hint || memchr::memmem::find(&data[10..], &next_member).is_some() {
        return None;
    }
    Some(out)
}

/// The member inflated by a streaming zlib port, the output grown as it comes.
fn streamed_member(data: &[u8], hint: usize, limit: usize) -> Option<Vec<u8>> {
    let mut inflater = flate2::Decompress::new(false);
    let guess = if hint > 0 { hint } else { data.len() * 4 };
    let mut out: Vec<u8> = Vec::with_capacity(guess.min(limit.saturating_add(1)));
    let body = &data[10..];
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
            .decompress_vec(&body[consumed..], &mut out, flate2::FlushDecompress::None)
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
    let end = 10 + inflater.total_in() as usize;
    let trailer = data.get(end..end + 8)?;
    let crc = u32::from_le_bytes(trailer[..4].try_into().ok()?);
    let isize = u32::from_le_bytes(trailer[4..].try_into().ok()?);
    let mut hasher = flate2::Crc::new();
    hasher.update(&out);
    if hasher.sum() != crc || isize != out.len() as u32 {
        return None;
    }
    let rest = &data[end + 8..];
    if rest.len() >= 10 && rest[..3] == GZIP_MAGIC {
        note(Reason::GzipMultiMember);
        return None; // another member follows
    }
    Some(out)
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
            note(Reason::SnappyConcatenated);
            return None; // a concatenated stream
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

fn lz4_frame(data: &[u8], limit: usize) -> Option<Vec<u8>> {
    if data.len() < 7 || data[..4] != LZ4_MAGIC {
        return None;
    }
    let flg = data[4];
    let bd = data[5];
    // version 01, independent blocks, no block checksum, no content size, no dictionary
    if flg & 0xe3 == 0x60 && bd & 0x8f == 0 {
        if flg & 0x08 != 0 {
            note(Reason::Lz4ContentSize);
            return None;
        }
        if flg & 0x10 != 0 {
            note(Reason::Lz4BlockChecksum);
            return None;
        }
    }
    if flg & 0xfb != 0x60 || bd & 0x8f != 0 {
        return None;
    }
    let size_code = (bd >> 4) & 0x07;
    if size_code < 4 {
        return None;
    }
    let max_block = 1usize << (8 + 2 * size_code);
    if data[6] != ((xxhash_rust::xxh32::xxh32(&data[4..6], 0) >> 8) & 0xff) as u8 {
        return None;
    }
    let content_checksum = flg & 0x04 != 0;
    let mut pos = 7;
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
        assert_eq!(whole_member(&gz, hint, 1 << 20).unwrap(), text);
        // Over the bound.
        assert!(whole_member(&gz, hint, hint - 1).is_none());
        // Two identical members: the last ISIZE is right for the first one alone, which
        // libdeflate would return; the streaming inflater sees the second and hands back.
        let twice = [gz.clone(), gz.clone()].concat();
        assert!(whole_member(&twice, hint, 1 << 20).is_none());
        assert!(gzip(&twice, 1 << 20).is_none());
        // Bytes after the member that are not one: the member, as the reference reads it.
        let tail = [gz.clone(), b"trailing".to_vec()].concat();
        assert!(whole_member(&tail, u32::from_le_bytes(*b"ling") as usize, 1 << 20).is_none());
        assert_eq!(gzip(&tail, 1 << 20).unwrap(), text);
        // A corrupt stream is left to the streaming inflater, which refuses it too.
        let mut bad = gz.clone();
        bad[20] ^= 0xff;
        assert!(whole_member(&bad, hint, 1 << 20).is_none());
        assert!(gzip(&bad, 1 << 20).is_none());
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
        assert_eq!(lz4_frame(&frame, 1 << 20).unwrap(), data);
        assert!(lz4_frame(&frame, data.len() - 1).is_none());
        frame[6] ^= 1; // header checksum
        assert!(lz4_frame(&frame, 1 << 20).is_none());
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
