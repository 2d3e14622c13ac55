//! Why the native engine handed a batch back to the Python engine, counted per reason.
//!
//! A kernel that answers `None` leaves the batch to the Python engine. So that a slow path
//! cannot hide, the code that refuses a batch for a specific reason (an lz4 block checksum that
//! does not hold, a control batch, output past the bound, ...) notes it with [`note`] just
//! before it returns `None`, on a path that ends in a hand-back (never on one that may still
//! succeed); anything not noted is `malformed`. The binding runs every kernel through
//! [`kernel`], which, when the kernel answers `None`, counts one hand-back for the reason noted
//! and takes the note. The path that succeeds touches neither a thread-local nor a counter
//! (the counters are process-wide atomics, touched only on a
//! hand-back). One batch asked of several kernels in a row (dump-segments' renderer, then the
//! records of the batch it refused, as the python renderer reads them) counts once: a
//! hand-back of the same bytes (address and length) as one of the last `RECENT` hand-backs,
//! by another kernel, is not counted again, and uses that one up. They are the process's, not
//! a thread's: dump-segments' renderer refuses a batch in a worker thread and the records are
//! then asked for in the main one. (The same kernel refusing the same address and length again
//! is another batch: a fresh buffer where the last one was freed.)
#![forbid(unsafe_code)]

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Why a batch was handed back. The names are what `KLOGTOOL_ENGINE_STATS=1` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Reason {
    /// Anything the reference must judge: a bad length, varint, record count, checksum,
    /// codec stream... (the Python engine reports the error).
    Malformed = 0,
    /// Decompressed output (or a batch) past `--max-batch-bytes`.
    SizeLimit,
    /// A control batch (dump-segments renders its records decoded, in Python).
    ControlBatch,
    /// A payload decoder or rendering the native renderer does not have (`json`): every batch
    /// of the run.
    RenderDecoder,
    /// An lz4 block checksum that does not hold.
    Lz4BlockChecksum,
    /// A gzip header CRC that does not hold, or reserved header flags.
    GzipHeaderFields,
    /// A second or later gzip member the reference must judge.
    GzipMultiMember,
    /// A concatenated xerial header cut short or of a version below 1.
    SnappyConcatenated,
}

const REASONS: usize = 8;

/// The printed names, in `Reason` order.
pub const NAMES: [&str; REASONS] = [
    "malformed",
    "size-limit",
    "control-batch",
    "render-decoder",
    "lz4-block-checksum",
    "gzip-header-fields",
    "gzip-multi-member",
    "snappy-concatenated-xerial",
];

static COUNTS: [AtomicU64; REASONS] = [const { AtomicU64::new(0) }; REASONS];

thread_local! {
    static NOTED: Cell<Reason> = const { Cell::new(Reason::Malformed) };
}

/// How many recent hand-backs a refusal of the same bytes by another kernel is matched
/// against: more than the batches dump-segments' rendering threads run ahead refuse.
const RECENT: usize = 256;

/// (address, length, kernel) of the last hand-backs not yet matched, oldest first.
static LAST: Mutex<VecDeque<(usize, usize, Kernel)>> = Mutex::new(VecDeque::new());

/// The kernels, told apart so that a batch one refused and another is then asked for counts
/// once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    None,
    Check,
    Records,
    LegacyDecompress,
    LegacyScan,
    LegacyRecords,
    Reencode,
    Render,
    Columns,
    LegacyColumns,
    MapKeys,
    Retain,
    Find,
}

/// The batch being read is refused for `reason` (call it just before answering `None`).
#[inline]
pub fn note(reason: Reason) {
    NOTED.with(|n| n.set(reason));
}

/// `f()`, a kernel reading `data`; when it answers `None`, one hand-back is counted for the
/// reason noted meanwhile (`malformed` if none was).
#[inline]
pub fn kernel<T>(who: Kernel, data: &[u8], f: impl FnOnce() -> Option<T>) -> Option<T> {
    let out = f();
    if out.is_none() {
        count(who, data);
    }
    out
}

/// Count a hand-back of `data` by `who` for the reason noted (once for the same bytes that
/// another kernel refused just before).
pub fn count(who: Kernel, data: &[u8]) {
    count_at(who, (data.as_ptr() as usize, data.len()));
}

/// `count` of the bytes at `(address, length)`, for a kernel that no longer holds them.
pub fn count_at(who: Kernel, (addr, len): (usize, usize)) {
    // the note is taken, so the next kernel starts from `malformed`
    let reason = NOTED.with(|n| n.replace(Reason::Malformed));
    if let Ok(mut last) = LAST.lock() {
        if let Some(i) = last.iter().rposition(|&(a, l, _)| (a, l) == (addr, len)) {
            let by = last.remove(i).map(|(.., k)| k);
            if by != Some(who) {
                return; // the batch another kernel refused just before
            }
        }
        if last.len() == RECENT {
            last.pop_front();
        }
        last.push_back((addr, len, who));
    }
    COUNTS[reason as usize].fetch_add(1, Ordering::Relaxed);
}

/// Forget the hand-backs of bytes from `base` to `base + len` (a mapping released: the next
/// one at that address holds other batches, which must be counted).
pub fn forget(base: usize, len: usize) {
    if let Ok(mut last) = LAST.lock() {
        last.retain(|&(addr, ..)| !(addr >= base && addr - base < len));
    }
}

/// `(name, count)` of every reason, in `Reason` order.
pub fn counts() -> Vec<(&'static str, u64)> {
    NAMES
        .iter()
        .zip(COUNTS.iter())
        .map(|(name, c)| (*name, c.load(Ordering::Relaxed)))
        .collect()
}

/// The reason noted on this thread and not yet counted (for tests).
pub fn noted() -> Reason {
    NOTED.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_noted_reason_once_per_batch() {
        let before = counts()[Reason::Lz4BlockChecksum as usize].1;
        // (a static: no other test's freed buffer at its address in the recent hand-backs)
        static DATA: [u8; 10] = [1; 10];
        let data = &DATA[..];
        let refuse = || -> Option<()> {
            note(Reason::Lz4BlockChecksum);
            None
        };
        assert!(kernel(Kernel::Render, data, refuse).is_none());
        // the same bytes asked of another kernel: not counted again
        assert!(kernel(Kernel::Records, data, refuse).is_none());
        assert_eq!(counts()[Reason::Lz4BlockChecksum as usize].1, before + 1);
        // the same kernel again: another batch where the last one was
        assert!(kernel(Kernel::Records, data, refuse).is_none());
        assert_eq!(counts()[Reason::Lz4BlockChecksum as usize].1, before + 2);
        // A hand-back takes its note: the next kernel starts from `malformed`.
        assert_eq!(noted(), Reason::Malformed);
        assert_eq!(kernel(Kernel::Check, data, || Some(1)), Some(1));
        assert_eq!(noted(), Reason::Malformed);
    }

    #[test]
    fn a_batch_refused_in_another_thread_counts_once() {
        let before = counts()[Reason::GzipMultiMember as usize].1;
        static BATCHES: [[u8; 10]; 2] = [[2; 10], [3; 10]];
        let (a, b) = (&BATCHES[0][..], &BATCHES[1][..]);
        let refuse = || -> Option<()> {
            note(Reason::GzipMultiMember);
            None
        };
        // a rendering thread refuses two batches; the main thread then asks for their records
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(kernel(Kernel::Render, a, refuse).is_none());
                assert!(kernel(Kernel::Render, b, refuse).is_none());
            });
        });
        assert!(kernel(Kernel::Records, a, refuse).is_none());
        assert!(kernel(Kernel::Records, b, refuse).is_none());
        assert_eq!(counts()[Reason::GzipMultiMember as usize].1, before + 2);
    }

    #[test]
    fn a_released_mapping_s_hand_backs_are_forgotten() {
        let before = counts()[Reason::SnappyConcatenated as usize].1;
        static MAPPED: [u8; 64] = [4; 64];
        let batch = &MAPPED[16..32];
        let refuse = || -> Option<()> {
            note(Reason::SnappyConcatenated);
            None
        };
        assert!(kernel(Kernel::Render, batch, refuse).is_none());
        // the mapping is released; another at the same address holds another batch there
        forget(MAPPED.as_ptr() as usize, MAPPED.len());
        assert!(kernel(Kernel::Records, batch, refuse).is_none());
        assert_eq!(counts()[Reason::SnappyConcatenated as usize].1, before + 2);
    }
}
