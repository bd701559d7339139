//! The claim gate of `pipeline.rs` rule 3 and the run's stop flag: which read a thread claims
//! next, how far ahead of the sink it may be, and the wake-ups when the sink moves on or the run
//! stops. Built on `std::sync`, or on loom's types under `cfg(loom)`, so that the loom model
//! (`tests/loom_gate.rs`) checks this very code, orderings included.
//!
//! # Contract
//! 1. Every read `0..total` is claimed at most once, in index order; none is claimed after
//!    [`Gate::cancel`] is seen.
//! 2. A read `j` is claimed only while `j < emitted + window` (`emitted`: the reads whose
//!    partials the sink has all handed over, [`Gate::emitted`]).
//! 3. A claimer waiting at the gate wakes when the sink moves it or the run stops: no lost
//!    wake-up.
//!
//! # Memory ordering
//! `emitted` is read and written under `lock`, and so is every increment of `next_read`: the
//! mutex orders them, so a claimer's check of rule 2 and its increment act on the same index
//! (`next_read` itself is Relaxed: it orders nothing else; the bytes of a read travel with its
//! buffer through a queue, whose mutex orders them). The stop flag is stored with Release after
//! the failure is recorded and loaded with Acquire: a thread that sees it sees the failure. The
//! stop flag is a hint to stop early; correctness never depends on seeing it at once, but a
//! waiter must not sleep through it, so [`Gate::wake`] takes the lock before notifying.

// Public only under `cfg(loom)`, re-exported for the model (`lib.rs`).
#![cfg_attr(not(loom), allow(unreachable_pub))]

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(loom)]
use loom::sync::{Condvar, Mutex};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::{Condvar, Mutex};

/// The claim gate and stop flag of one run (see the module doc).
#[derive(Debug)]
pub struct Gate {
    /// Reads whose partials are all handed to the sink.
    emitted: Mutex<usize>,
    moved: Condvar,
    next_read: AtomicUsize,
    cancelled: AtomicBool,
    total: usize,
    window: usize,
}

impl Gate {
    /// A gate over reads `0..total`, at most `window` ahead of the sink.
    pub fn new(total: usize, window: usize) -> Gate {
        Gate {
            emitted: Mutex::new(0),
            moved: Condvar::new(),
            next_read: AtomicUsize::new(0),
            cancelled: AtomicBool::new(false),
            total,
            window,
        }
    }

    /// Returns true if and only if the run has stopped.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Stops the run (after its failure is recorded); call [`Gate::wake`] next.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    /// Wakes every claimer waiting at the gate. Taking the lock first means a claimer between
    /// its check of the stop flag and its wait cannot miss this wake-up.
    pub fn wake(&self) {
        drop(self.emitted.lock().unwrap_or_else(|p| p.into_inner()));
        self.moved.notify_all();
    }

    /// The sink has handed over every partial of reads `0..reads`: opens the gate further.
    pub fn emitted(&self, reads: usize) {
        let mut emitted = self.emitted.lock().unwrap_or_else(|p| p.into_inner());
        *emitted = reads;
        drop(emitted);
        self.moved.notify_all();
    }

    /// The next read, waiting at the gate if `wait` (rule 2). `Err(())` when the gate is shut
    /// and `wait` is false; `Ok(None)` when no read is left or the run is stopped.
    pub fn claim(&self, wait: bool) -> Result<Option<usize>, ()> {
        let mut emitted = self.emitted.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.is_cancelled() {
                return Ok(None);
            }
            let next = self.next_read.load(Ordering::Relaxed);
            if next >= self.total {
                return Ok(None);
            }
            if next < *emitted + self.window {
                break;
            }
            if !wait {
                return Err(());
            }
            emitted = self.moved.wait(emitted).unwrap_or_else(|p| p.into_inner());
        }
        // Under the lock: the index taken is the one just checked against the window.
        let j = self.next_read.fetch_add(1, Ordering::Relaxed);
        drop(emitted);
        Ok((j < self.total).then_some(j))
    }

    /// Claims read `prev + 1` if it is the next unclaimed read, `fits(prev + 1)` and the gate
    /// is open for it (rule 2); never waits.
    pub fn claim_following(&self, prev: usize, fits: impl FnOnce(usize) -> bool) -> Option<usize> {
        let j = prev + 1;
        if j >= self.total || self.is_cancelled() || !fits(j) {
            return None;
        }
        let emitted = self.emitted.lock().unwrap_or_else(|p| p.into_inner());
        if j >= *emitted + self.window {
            return None;
        }
        let taken = self.next_read.compare_exchange(j, j + 1, Ordering::Relaxed, Ordering::Relaxed);
        drop(emitted);
        taken.ok()
    }
}
