//! A file that shrinks while it is mapped (another process truncates a segment klogtool reads)
//! makes the next read of a page past its new end raise SIGBUS, which kills the process with
//! no word. This module turns that into klogtool's one line and exit status 3: the format
//! layer registers each mapped file (`watch`), and the handler names the file and the byte
//! position of the fault, then exits at once (nothing can resume the faulting read).
//!
//! Signal handlers may only use async-signal-safe calls, so the registry is a fixed table of
//! atomics (no lock, no allocation) and the handler formats the line on its stack. The
//! `unsafe` here is the POSIX interface itself: installing the handler, reading `si_addr`,
//! `write` and `_exit`.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

const SLOTS: usize = 64;
const PATH_BYTES: usize = 1024;
const FREE: usize = 0;
const CLAIMED: usize = usize::MAX;

struct Slot {
    /// The mapping's first address; FREE, or CLAIMED while it is being filled in.
    base: AtomicUsize,
    len: AtomicUsize,
    path_len: AtomicUsize,
    path: [AtomicU8; PATH_BYTES],
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    base: AtomicUsize::new(FREE),
    len: AtomicUsize::new(0),
    path_len: AtomicUsize::new(0),
    path: [const { AtomicU8::new(0) }; PATH_BYTES],
};

static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];

/// Remember that `len` bytes from `base` are the mapping of `path`: a slot number for
/// [`unwatch`], or None when the table is full (a fault there is then reported without a name).
pub fn watch(base: usize, len: usize, path: &[u8]) -> Option<usize> {
    if base == FREE || base == CLAIMED || len == 0 {
        return None;
    }
    for (i, slot) in TABLE.iter().enumerate() {
        if slot
            .base
            .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            let shown = &path[..path.len().min(PATH_BYTES)];
            for (cell, &b) in slot.path.iter().zip(shown) {
                cell.store(b, Ordering::Relaxed);
            }
            slot.path_len.store(shown.len(), Ordering::Relaxed);
            slot.len.store(len, Ordering::Relaxed);
            slot.base.store(base, Ordering::Release);
            return Some(i);
        }
    }
    None
}

/// Forget a mapping [`watch`] remembered.
/// Forget `slot`: the `(base, len)` it held, if any.
pub fn unwatch(slot: usize) -> Option<(usize, usize)> {
    let s = TABLE.get(slot)?;
    let base = s.base.swap(FREE, Ordering::AcqRel);
    (base != FREE && base != CLAIMED).then(|| (base, s.len.load(Ordering::Relaxed)))
}

/// The slot whose mapping holds `addr`, and the byte position of `addr` in it.
fn find(addr: usize) -> Option<(&'static Slot, usize)> {
    TABLE.iter().find_map(|slot| {
        let base = slot.base.load(Ordering::Acquire);
        let len = slot.len.load(Ordering::Relaxed);
        (base != FREE && base != CLAIMED && addr >= base && addr - base < len)
            .then(|| (slot, addr - base))
    })
}

/// A line buffer on the stack: the handler may not allocate.
struct Line {
    buf: [u8; PATH_BYTES + 256],
    len: usize,
}

impl Line {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.len < self.buf.len() {
                self.buf[self.len] = b;
                self.len += 1;
            }
        }
    }
}

/// The line the handler writes for a fault at `addr` (the table's path and position when the
/// address is in a watched mapping), and the exit status.
fn message(addr: usize) -> (Line, i32) {
    let mut line = Line {
        buf: [0; PATH_BYTES + 256],
        len: 0,
    };
    match find(addr) {
        Some((slot, pos)) => {
            line.push(b"klogtool: error: ");
            let n = slot.path_len.load(Ordering::Relaxed).min(PATH_BYTES);
            for cell in &slot.path[..n] {
                line.push(&[cell.load(Ordering::Relaxed)]);
            }
            line.push(b":");
            line.push(itoa::Buffer::new().format(pos).as_bytes());
            line.push(
                b": the file shrank while klogtool read it (another process truncated or \
                  replaced it); run the command again (file-shrank)\n",
            );
            (line, 3)
        }
        None => {
            line.push(b"klogtool: internal error: SIGBUS at an address no file of klogtool's ");
            line.push(b"maps (please report it)\n");
            (line, 70)
        }
    }
}

#[cfg(unix)]
extern "C" fn on_sigbus(_signal: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler; si_addr is the
    // faulting address for SIGBUS.
    let addr = unsafe { (*info).si_addr() } as usize;
    let (line, status) = message(addr);
    // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffer outlives the call.
    unsafe {
        libc::write(2, line.buf.as_ptr().cast(), line.len);
        libc::_exit(status);
    }
}

/// Install the SIGBUS handler (again at each call: another handler, such as Python's
/// faulthandler, may have replaced it since). False where it cannot be.
pub fn install() -> bool {
    #[cfg(unix)]
    {
        // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value, completed
        // below; sigaction(2) is given valid pointers.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) == 0
        }
    }
    #[cfg(not(unix))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(addr: usize) -> (String, i32) {
        let (line, status) = message(addr);
        (
            String::from_utf8_lossy(&line.buf[..line.len]).into_owned(),
            status,
        )
    }

    #[test]
    fn a_fault_in_a_watched_mapping_names_the_file_and_position() {
        let slot = watch(0x10_000, 4096, b"t-0/00000000000000000000.log").unwrap();
        assert_eq!(
            text(0x10_000 + 1234),
            (
                "klogtool: error: t-0/00000000000000000000.log:1234: the file shrank while \
                 klogtool read it (another process truncated or replaced it); run the command \
                 again (file-shrank)\n"
                    .to_string(),
                3
            )
        );
        unwatch(slot);
        assert_eq!(text(0x10_000 + 1234).1, 70);
        assert_eq!(text(0x10_000 + 4096).1, 70);
    }

    #[test]
    fn a_long_path_is_cut_not_overflowed() {
        let slot = watch(0x90_000, 10, &[b'a'; 5000]).unwrap();
        let (line, status) = text(0x90_000);
        assert_eq!(status, 3);
        assert!(line.ends_with("(file-shrank)\n"));
        unwatch(slot);
    }
}
