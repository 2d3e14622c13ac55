//! Walks over v2 batch headers alone: the CRC-32C of batches ahead of the Python scanner, so
//! that a background thread can compute a large segment's CRCs while the scanner checks each
//! batch (`klogtool/formats/crc.py`, `CrcPrefetch`); and the cuts of a large segment into
//! parts for worker processes (`klogtool/log/read/chunks.py`, `cut_part`).
#![forbid(unsafe_code)]

use std::convert::Infallible;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::batch::{HEADER_SIZE, LOG_OVERHEAD};
use crate::legacy::{be_i32, be_i64};

/// The CRC starts at the attributes and runs to the end of the batch.
const CRC_START: usize = 21;

/// `(batch position, CRC-32C of the batch)` for the v2 batches from `start` until the walk
/// reaches `limit`, and the position where it stopped. It stops early, before anything that
/// is not a whole v2 entry of at least a header's size: the scanner judges those itself.
pub fn crc_ahead(buf: &[u8], start: usize, limit: usize) -> (Vec<(usize, u32)>, usize) {
    let mut out = Vec::new();
    let mut pos = start;
    while pos < limit {
        let Some(head) = pos.checked_add(17).and_then(|end| buf.get(pos..end)) else {
            break;
        };
        let size = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
        let Ok(size) = usize::try_from(size) else {
            break;
        };
        let end = match pos.checked_add(LOG_OVERHEAD + size) {
            Some(end) if end <= buf.len() => end,
            _ => break,
        };
        if head[16] != 2 || end - pos < HEADER_SIZE {
            break;
        }
        out.push((pos, crc32c::crc32c(&buf[pos + CRC_START..end])));
        pos = end;
    }
    (out, pos)
}

/// The smallest length field of a v2 batch (`klogtool/formats/v2.py`'s `MIN_LENGTH`).
const MIN_LENGTH: i32 = (HEADER_SIZE - LOG_OVERHEAD) as i32;
/// Bytes of a v2 batch up to and including its last offset delta.
const CUT_HEADER: usize = 27;

/// The walk of `cut_part`, which it must match exactly: from `start`, a batch boundary (`last`:
/// the last offset of the batch before it), over v2 batch headers until a batch that starts
/// `chunk_bytes` or more past `start` (`cut` true: the part ends there) or until anything else
/// (a v0/v1 entry, a length that cannot be, a negative last offset delta, a torn tail: `cut`
/// false, the rest is the last part). Returns `(pos, last, cut)` where the walk stopped. (`offset + delta` can pass
/// 64 bits in a hostile segment, as Python's integers do: hence `i128`.)
pub fn chunk_cut(buf: &[u8], start: usize, chunk_bytes: usize, last: Option<i128>) -> Cut {
    let read = |at: usize, head: &mut [u8; CUT_HEADER]| -> Result<bool, Infallible> {
        match at.checked_add(CUT_HEADER).and_then(|end| buf.get(at..end)) {
            Some(bytes) => {
                head.copy_from_slice(bytes);
                Ok(true)
            }
            None => Ok(false),
        }
    };
    match cut(buf.len(), read, start, chunk_bytes, last) {
        Ok(found) => found,
        Err(never) => match never {},
    }
}

/// `chunk_cut` over the first `len` bytes of a file, each header read with `pread`: the
/// parent of `dump-segments --jobs` cuts the first part this way without mapping pages it
/// never reads (the workers cut the parts after it in their own mappings).
pub fn chunk_cut_file(
    file: &File,
    len: usize,
    start: usize,
    chunk_bytes: usize,
    last: Option<i128>,
) -> io::Result<Cut> {
    let read = |at: usize, head: &mut [u8; CUT_HEADER]| match file.read_exact_at(head, at as u64) {
        Ok(()) => Ok(true),
        // the file is shorter than it was: the walk ends there, the last part's walk says how
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    };
    cut(len, read, start, chunk_bytes, last)
}

/// `(pos, last, cut)`: where a step of the walk stopped, see `chunk_cut`.
pub type Cut = (usize, Option<i128>, bool);

/// The walk of `chunk_cut` over `len` bytes whose headers `read` gives (false: there were no
/// such bytes after all, and the walk ends there).
fn cut<E>(
    len: usize,
    mut read: impl FnMut(usize, &mut [u8; CUT_HEADER]) -> Result<bool, E>,
    start: usize,
    chunk_bytes: usize,
    mut last: Option<i128>,
) -> Result<Cut, E> {
    let mut head = [0u8; CUT_HEADER];
    let mut pos = start;
    loop {
        if pos.checked_add(CUT_HEADER).is_none_or(|end| end > len) || !read(pos, &mut head)? {
            return Ok((pos, last, false));
        }
        let (Some(offset), Some(size), Some(delta)) =
            (be_i64(&head, 0), be_i32(&head, 8), be_i32(&head, 23))
        else {
            return Ok((pos, last, false));
        };
        let end = usize::try_from(size)
            .ok()
            .filter(|_| size >= MIN_LENGTH)
            .and_then(|size| pos.checked_add(LOG_OVERHEAD)?.checked_add(size))
            .filter(|&end| end <= len);
        let Some(end) = end.filter(|_| head[16] == 2 && delta >= 0) else {
            return Ok((pos, last, false));
        };
        if pos.saturating_sub(start) >= chunk_bytes {
            return Ok((pos, last, true));
        }
        last = Some(i128::from(offset) + i128::from(delta));
        pos = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(magic: u8, body: usize) -> Vec<u8> {
        let mut e = vec![0u8; LOG_OVERHEAD + body];
        e[8..12].copy_from_slice(&(body as i32).to_be_bytes());
        e[16] = magic;
        for (i, b) in e.iter_mut().enumerate().skip(17) {
            *b = i as u8;
        }
        e
    }

    #[test]
    fn walks_v2_entries_and_stops_before_anything_else() {
        let a = entry(2, 60);
        let b = entry(2, 100);
        let mut buf = [a.clone(), b.clone(), entry(1, 60), entry(2, 60)].concat();
        let (crcs, stop) = crc_ahead(&buf, 0, buf.len());
        assert_eq!(
            crcs,
            vec![
                (0, crc32c::crc32c(&a[CRC_START..])),
                (a.len(), crc32c::crc32c(&b[CRC_START..]))
            ]
        );
        assert_eq!(stop, a.len() + b.len()); // the magic-1 entry
                                             // a limit inside a batch still finishes that batch; a torn tail stops the walk
        assert_eq!(crc_ahead(&buf, 0, 1).1, a.len());
        buf.truncate(a.len() + 30);
        assert_eq!(crc_ahead(&buf, 0, buf.len()), (crcs[..1].to_vec(), a.len()));
        // sizes that are negative, too small or past the end
        for size in [-1i32, 10, i32::MAX] {
            let mut bad = a.clone();
            bad[8..12].copy_from_slice(&size.to_be_bytes());
            assert_eq!(crc_ahead(&bad, 0, bad.len()), (vec![], 0));
        }
        // a start past the end
        assert_eq!(
            crc_ahead(&a, usize::MAX - 3, usize::MAX),
            (vec![], usize::MAX - 3)
        );
    }

    fn batch(offset: i64, body: usize, delta: i32) -> Vec<u8> {
        let mut e = entry(2, body);
        e[..8].copy_from_slice(&offset.to_be_bytes());
        e[23..27].copy_from_slice(&delta.to_be_bytes());
        e
    }

    #[test]
    fn chunk_cut_cuts_at_batch_boundaries_and_stops_at_anything_else() {
        let (a, b, c) = (batch(0, 60, 4), batch(5, 60, 1), batch(i64::MAX, 60, 7));
        let buf = [a.clone(), b.clone(), c.clone()].concat();
        // a part of at least one batch's bytes: cut before b, then before c
        assert_eq!(chunk_cut(&buf, 0, 1, None), (a.len(), Some(4), true));
        assert_eq!(
            chunk_cut(&buf, a.len(), 1, Some(4)),
            (a.len() + b.len(), Some(6), true)
        );
        // no cut: the walk ends at the end, the last offset past 64 bits
        let (end, last, cut) = chunk_cut(&buf, 0, usize::MAX, None);
        assert_eq!((end, cut), (buf.len(), false));
        assert_eq!(last, Some(i128::from(i64::MAX) + 7));
        // a v1 entry, a negative delta, a short length, a torn tail: it stops before them
        let mut short = batch(9, 60, 0);
        short[8..12].copy_from_slice(&(MIN_LENGTH - 1).to_be_bytes());
        for bad in [
            entry(1, 60),
            batch(9, 60, -1),
            short,
            batch(9, 60, 0)[..40].to_vec(),
        ] {
            let buf = [a.clone(), bad].concat();
            assert_eq!(
                chunk_cut(&buf, 0, usize::MAX, None),
                (a.len(), Some(4), false)
            );
        }
        // a start past the end
        assert_eq!(
            chunk_cut(&a, usize::MAX - 3, 1, None),
            (usize::MAX - 3, None, false)
        );
    }

    #[test]
    fn chunk_cut_file_reads_the_same_cuts_and_ends_where_a_shorter_file_ends() {
        let buf = [batch(0, 60, 4), batch(5, 60, 1), batch(9, 60, 0)].concat();
        let path = std::env::temp_dir().join(format!("klogtool-scan-{}.log", std::process::id()));
        std::fs::write(&path, &buf[..buf.len() - 50]).unwrap();
        let file = File::open(&path).unwrap();
        let step = |start, last| chunk_cut_file(&file, buf.len(), start, 1, last);
        let (a, b) = (batch(0, 60, 4).len(), batch(5, 60, 1).len());
        assert_eq!(step(0, None).unwrap(), chunk_cut(&buf, 0, 1, None));
        // the third header lies past the file's end (it was cut short after it was mapped):
        // the walk ends before it where the mapping's walk cuts
        assert_eq!(chunk_cut(&buf, a, 1, Some(4)), (a + b, Some(6), true));
        assert_eq!(step(a, Some(4)).unwrap(), (a + b, Some(6), false));
        std::fs::remove_file(&path).unwrap();
    }
}
