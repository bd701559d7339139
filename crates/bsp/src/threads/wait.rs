//! Spin-then-park waiting, and the dissemination barrier built on it.
//!
//! # Contract
//! 1. `wait(me, cond, abort)` returns `true` once `cond()` holds and `false` once `abort()` holds
//!    (checked in that order). It spins `SPIN_ROUNDS` times, yields `YIELD_ROUNDS` times, then
//!    parks; a thread that makes `cond` or `abort` true must call [`Waker::signal`] (or
//!    `wake_all`) afterwards, which unparks the waiter if it sleeps. No wake-up is lost.
//! 2. `barrier(group, me, e)` returns `true` once every process of the group has entered barrier
//!    `e` (a dissemination barrier, Hensgen, Finkel and Manber 1988: ⌈log₂ p⌉ rounds, one flag
//!    per round per process), and `false` as soon as `fail_epoch <= e`, i.e. some process will
//!    never enter barrier `e` (threads/README.md).
//! 3. The barrier also returns the OR of a bit each process brings (a dissemination all-reduce:
//!    OR is idempotent, so the overlapping coverage of the rounds is harmless). The result may be
//!    a false `true` (when a flag was already overwritten by the next barrier), never a false
//!    `false`.
//!
//! # Memory ordering
//! Round flags are stored with `Release` and loaded with `Acquire`; since every process's round
//! `k` depends on chains of round `< k` signals from all others, every write a process made
//! before entering barrier `e` happens-before every read another makes after leaving it. The
//! sleep handshake is Dekker's: the waiter stores `sleeping = true` then (SeqCst fence) re-reads
//! the condition; the signaller stores the condition then (SeqCst fence) reads `sleeping`. At
//! least one of them sees the other's store, so a parked waiter is always unparked.

// Under `--cfg loom` this file is built on loom's atomics, fences and parking, and made public
// for the model `tests/loom_barrier.rs` (lib.rs re-exports it), which so checks this very code.
#![cfg_attr(not(loom), allow(unreachable_pub))]

use std::sync::OnceLock;

#[cfg(loom)]
use loom::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicU64, Ordering, fence},
    thread::{Thread, current, park, yield_now},
};
#[cfg(not(loom))]
use std::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicU64, Ordering, fence},
    thread::{Thread, current, park, yield_now},
};

use crossbeam_utils::CachePadded;

/// Busy-wait iterations before yielding (~3 µs at ~25 ns per `pause`): longer spins burn the
/// time slice a descheduled partner needs (threads/README.md, "Waiting"). One under loom: every
/// round is a state to explore, and the park path is the one to check.
const SPIN_ROUNDS: u32 = if cfg!(loom) { 1 } else { 1 << 7 };
/// `yield_now` calls before parking (each lets a partner on this core run).
const YIELD_ROUNDS: u32 = if cfg!(loom) { 1 } else { 64 };

/// The atomic of the group's `fail_epoch`, which [`barrier`] reads: loom's under `cfg(loom)`.
pub type Epoch = AtomicU64;

/// The parking side of one process.
#[derive(Debug, Default)]
pub struct Waker {
    /// True while the owner may be parked (or about to park).
    sleeping: AtomicBool,
    /// The owner's thread, set before it first waits.
    thread: OnceLock<Thread>,
}

impl Waker {
    /// Records the calling thread as the owner (first call wins).
    pub fn bind_current(&self) {
        let _ = self.thread.set(current());
    }

    /// Call after making a condition this waker's owner may wait on true.
    pub fn signal(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed)
            && let Some(t) = self.thread.get()
        {
            t.unpark();
        }
    }

    /// Unconditional unpark (for rare events: failures, exits).
    pub fn kick(&self) {
        fence(Ordering::SeqCst);
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

/// Rule 1.
pub fn wait(me: &Waker, cond: impl Fn() -> bool, abort: impl Fn() -> bool) -> bool {
    for _ in 0..SPIN_ROUNDS {
        if cond() {
            return true;
        }
        if abort() {
            return false;
        }
        spin_loop();
    }
    for _ in 0..YIELD_ROUNDS {
        if cond() {
            return true;
        }
        if abort() {
            return false;
        }
        yield_now();
    }
    loop {
        me.sleeping.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let outcome = if cond() {
            Some(true)
        } else if abort() {
            Some(false)
        } else {
            None
        };
        if let Some(done) = outcome {
            me.sleeping.store(false, Ordering::Relaxed);
            return done;
        }
        park();
        me.sleeping.store(false, Ordering::Relaxed);
    }
}

/// Per-process barrier flags: `flags[k]` is written by the process `2^k` places before.
#[derive(Debug)]
pub struct BarrierFlags {
    flags: Box<[CachePadded<AtomicU64>]>,
}

impl BarrierFlags {
    pub fn new(p: usize) -> BarrierFlags {
        let rounds = rounds(p);
        BarrierFlags { flags: (0..rounds).map(|_| CachePadded::new(AtomicU64::new(0))).collect() }
    }
}

/// ⌈log₂ p⌉.
pub fn rounds(p: usize) -> usize {
    let mut r = 0;
    while (1usize << r) < p {
        r += 1;
    }
    r
}

/// Rule 2. `flags[i]` and `wakers[i]` belong to process `i`. Also computes the OR of every
/// process's `any` (rule 3): `Some(or)` on success, `None` on failure.
pub fn barrier(
    flags: &[CachePadded<BarrierFlags>],
    wakers: &[CachePadded<Waker>],
    fail_epoch: &AtomicU64,
    me: usize,
    e: u64,
    any: bool,
) -> Option<bool> {
    let p = flags.len();
    let mut acc = u64::from(any);
    let mut dist = 1;
    let mut k = 0;
    while dist < p {
        let out = (me + dist) % p;
        // Release: publishes everything this process wrote before the barrier (its requests);
        // pairs with the Acquire load in the receiver's wait below.
        flags[out].flags[k].store((e << 1) | acc, Ordering::Release);
        wakers[out].signal();
        let flag = &flags[me].flags[k];
        let seen = std::cell::Cell::new(0u64);
        let arrived = wait(
            &wakers[me],
            || {
                seen.set(flag.load(Ordering::Acquire));
                seen.get() >> 1 >= e
            },
            || fail_epoch.load(Ordering::Acquire) <= e,
        );
        if !arrived {
            return None;
        }
        let v = seen.get();
        // A sender already in barrier e + 1 overwrote the bit of barrier e: assume it was set.
        acc |= if v >> 1 == e { v & 1 } else { 1 };
        dist *= 2;
        k += 1;
    }
    Some(acc != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn rounds_is_ceil_log2() {
        assert_eq!(rounds(1), 0);
        assert_eq!(rounds(2), 1);
        assert_eq!(rounds(3), 2);
        assert_eq!(rounds(16), 4);
        assert_eq!(rounds(17), 5);
    }

    /// Rule 2: no process leaves barrier e before all entered it, for p = 1..9 oversubscribed.
    #[test]
    fn barrier_separates_phases() {
        for p in 1..=9 {
            let flags: Vec<_> = (0..p).map(|_| CachePadded::new(BarrierFlags::new(p))).collect();
            let wakers: Vec<_> = (0..p).map(|_| CachePadded::new(Waker::default())).collect();
            let fail = AtomicU64::new(u64::MAX);
            let entered = AtomicUsize::new(0);
            std::thread::scope(|s| {
                for me in 0..p {
                    let (flags, wakers, fail, entered) = (&flags, &wakers, &fail, &entered);
                    s.spawn(move || {
                        wakers[me].bind_current();
                        for e in 1..=50u64 {
                            entered.fetch_add(1, Ordering::SeqCst);
                            let or = barrier(flags, wakers, fail, me, e, me == 0 && e % 2 == 0);
                            // Rule 3: a true OR is never lost; a false one may read as true.
                            assert!(or.is_some());
                            if e % 2 == 0 {
                                assert_eq!(or, Some(true));
                            }
                            assert!(entered.load(Ordering::SeqCst) >= e as usize * p);
                        }
                    });
                }
            });
        }
    }

    #[test]
    fn barrier_aborts_when_a_process_will_never_arrive() {
        let p = 4;
        let flags: Vec<_> = (0..p).map(|_| CachePadded::new(BarrierFlags::new(p))).collect();
        let wakers: Vec<_> = (0..p).map(|_| CachePadded::new(Waker::default())).collect();
        let fail = AtomicU64::new(u64::MAX);
        std::thread::scope(|s| {
            for me in 0..p - 1 {
                let (flags, wakers, fail) = (&flags, &wakers, &fail);
                s.spawn(move || {
                    wakers[me].bind_current();
                    assert_eq!(barrier(flags, wakers, fail, me, 1, false), None);
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            fail.store(1, Ordering::SeqCst);
            for w in &wakers {
                w.kick();
            }
        });
    }
}
