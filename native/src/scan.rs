//! The CRC-32C of v2 batches ahead of the Python scanner: a walk over batch headers alone,
//! so that a background thread can compute a large segment's CRCs while the scanner checks
//! each batch (`klogtool/formats/crc.py`, `CrcPrefetch`).
#![forbid(unsafe_code)]

use crate::batch::{HEADER_SIZE, LOG_OVERHEAD};

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
}
