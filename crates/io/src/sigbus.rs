//! Recovery from `SIGBUS` on mapped reads (issue 17, defect 9): a file that shrinks while it is
//! mapped makes every read of a page past its new end raise `SIGBUS`, which killed the process
//! (exit 135, no message). This module fences the signal handler and its `unsafe`.
//!
//! # Contract
//! 1. [`register`] records a mapping's address range in a fixed table of [`SLOTS`] slots
//!    (lock-free: the handler reads it with atomic loads only) and installs the handler once
//!    per process. It returns `None` when the table is full: the caller must not map then.
//! 2. On `SIGBUS` at an address inside a registered range, the handler replaces the pages from
//!    the faulting one to the end of the range with private anonymous zero pages
//!    (`mmap(MAP_FIXED)`, a plain system call), records the lowest faulting offset, and returns:
//!    the faulting read resumes and sees zeros. Whoever reads a mapping checks
//!    [`Guard::fault`] after the read and turns a recorded fault into an error (the zeros are
//!    never a result).
//! 3. A `SIGBUS` outside every registered range restores the disposition that was there before
//!    the handler was installed and returns: the read faults again and gets that disposition
//!    (by default the process dies of `SIGBUS`, as before).
//! 4. A [`Guard`] unregisters its range when dropped; drop it before unmapping.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Mappings that can be registered at once (the pipeline maps one per input file of a run).
pub(crate) const SLOTS: usize = 64;

struct Slot {
    used: AtomicBool,
    /// First address of the range; 0 while the slot is free or being filled.
    start: AtomicUsize,
    end: AtomicUsize,
    /// Lowest faulting offset; [`NO_FAULT`] when none.
    fault: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)] // a template for the array, never used itself
const FREE: Slot = Slot {
    used: AtomicBool::new(false),
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    fault: AtomicU64::new(NO_FAULT),
};
const NO_FAULT: u64 = u64::MAX;
static TABLE: [Slot; SLOTS] = [FREE; SLOTS];

/// What [`install`] saw before: the page size and the previous `SIGBUS` action.
struct Installed {
    page: usize,
    previous: libc::sigaction,
}
// SAFETY: `libc::sigaction` is plain data (a function address, flags and a signal mask); it is
// written once, before it is shared, and only read afterwards.
unsafe impl Sync for Installed {}
// SAFETY: as for `Sync`: plain data, never written after it is shared.
unsafe impl Send for Installed {}

static INSTALLED: OnceLock<Option<Installed>> = OnceLock::new();

/// Installs the handler once; `None` if `sigaction` failed.
fn install() -> Option<&'static Installed> {
    INSTALLED
        .get_or_init(|| {
            // SAFETY: a zeroed `sigaction` is a valid value (no handler, empty mask) that we then
            // fill in; `sigaction(2)` reads `action` and writes `previous`, both owned here.
            unsafe {
                let page = libc::sysconf(libc::_SC_PAGESIZE).max(4096) as usize;
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler
                    as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                    as usize;
                action.sa_flags = libc::SA_SIGINFO;
                libc::sigemptyset(&mut action.sa_mask);
                let mut previous: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGBUS, &action, &mut previous) != 0 {
                    return None;
                }
                Some(Installed { page, previous })
            }
        })
        .as_ref()
}

/// The handler (rule 2 and 3). Only async-signal-safe work: atomic loads and stores, `mmap`
/// and `sigaction`.
extern "C" fn handler(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let Some(Some(inst)) = INSTALLED.get() else { return };
    // SAFETY: the kernel passes a valid `siginfo_t` to an SA_SIGINFO handler; for SIGBUS
    // `si_addr` is the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    for slot in &TABLE {
        let start = slot.start.load(Ordering::Acquire);
        let end = slot.end.load(Ordering::Acquire);
        if start == 0 || addr < start || addr >= end {
            continue;
        }
        let at = addr & !(inst.page - 1);
        // SAFETY: `[at, end)` lies inside a live mapping registered by its owner (rule 4: the
        // owner unregisters before unmapping). Replacing its pages with anonymous read-only
        // zero pages changes what the faulting read sees (zeros, flagged below), never memory
        // outside the mapping.
        let r = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                end - at,
                libc::PROT_READ,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if r != libc::MAP_FAILED {
            slot.fault.fetch_min((at - start) as u64, Ordering::AcqRel);
            return;
        }
    }
    // SAFETY: restores the action saved by `install` (rule 3); `sigaction` is async-signal-safe.
    unsafe { libc::sigaction(libc::SIGBUS, &inst.previous, std::ptr::null_mut()) };
}

/// A registered range (rule 4).
#[derive(Debug)]
pub(crate) struct Guard {
    slot: usize,
}

/// Registers `[start, start + len)` (rule 1).
pub(crate) fn register(start: usize, len: usize) -> Option<Guard> {
    install()?;
    for (i, slot) in TABLE.iter().enumerate() {
        if slot.used.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            slot.fault.store(NO_FAULT, Ordering::Release);
            slot.end.store(start + len, Ordering::Release);
            slot.start.store(start, Ordering::Release);
            return Some(Guard { slot: i });
        }
    }
    None
}

impl Guard {
    /// The lowest page offset (from the range's start) a read faulted at, if any did (rule 2).
    pub(crate) fn fault(&self) -> Option<u64> {
        Some(TABLE[self.slot].fault.load(Ordering::Acquire)).filter(|&f| f != NO_FAULT)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let slot = &TABLE[self.slot];
        slot.start.store(0, Ordering::Release);
        slot.end.store(0, Ordering::Release);
        slot.used.store(false, Ordering::Release);
    }
}
