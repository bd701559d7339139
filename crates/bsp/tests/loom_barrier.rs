//! loom models of the threads backend's dissemination barrier and its spin-then-park waits
//! (`src/threads/wait.rs`, the very code `sync` runs, built on loom's atomics, fences and
//! parking under `--cfg loom`). Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p sluice-bsp --release --test loom_barrier`
//! (scripts/soundness loom). In every interleaving loom explores: a barrier returns only once
//! every process entered it, and what each wrote before is visible after (the Release/Acquire
//! chain); the OR of the processes' bits is never a false `false`; no waiter sleeps through its
//! signal (loom reports a deadlock otherwise); a process that will never arrive makes the others
//! return `None`, and none of them hangs.

#![cfg(loom)]

use std::sync::atomic::AtomicUsize as StdCounter;

use crossbeam_utils::CachePadded;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use sluice_bsp::wait::{BarrierFlags, Epoch, Waker, barrier};

/// The barrier's share of a process group (`threads/group.rs`).
struct Group {
    flags: Vec<CachePadded<BarrierFlags>>,
    wakers: Vec<CachePadded<Waker>>,
    fail_epoch: CachePadded<Epoch>,
    /// What each process wrote before barrier 1 (Relaxed: only the barrier orders it).
    data: Vec<AtomicUsize>,
}

impl Group {
    fn new(p: usize) -> Arc<Group> {
        Arc::new(Group {
            flags: (0..p).map(|_| CachePadded::new(BarrierFlags::new(p))).collect(),
            wakers: (0..p).map(|_| CachePadded::new(Waker::default())).collect(),
            fail_epoch: CachePadded::new(Epoch::new(u64::MAX)),
            data: (0..p).map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    fn barrier(&self, me: usize, e: u64, any: bool) -> Option<bool> {
        barrier(&self.flags, &self.wakers, &self.fail_epoch, me, e, any)
    }

    /// A process leaving before barrier `e` (`threads.rs`, the end of a process): the group is
    /// failed from `e` on, and everyone is woken.
    fn leave(&self, e: u64) {
        self.fail_epoch.fetch_min(e, Ordering::SeqCst);
        for w in &self.wakers {
            w.kick();
        }
    }
}

/// Runs `model` under loom with at most `bound` preemptions, returning the executions explored.
fn explore(bound: usize, model: impl Fn() + Sync + Send + 'static) -> usize {
    static EXECUTIONS: StdCounter = StdCounter::new(0);
    EXECUTIONS.store(0, std::sync::atomic::Ordering::SeqCst);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    builder.check(move || {
        EXECUTIONS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        model();
    });
    EXECUTIONS.load(std::sync::atomic::Ordering::SeqCst)
}

/// `p` processes through two barriers: process 0 brings `true` to the first, nobody to the
/// second.
fn two_barriers(p: usize) {
    let g = Group::new(p);
    let procs: Vec<_> = (0..p)
        .map(|me| {
            let g = g.clone();
            thread::spawn(move || {
                g.wakers[me].bind_current();
                g.data[me].store(me + 1, Ordering::Relaxed);
                assert_eq!(g.barrier(me, 1, me == 0), Some(true), "barrier 1's OR, process {me}");
                for (j, d) in g.data.iter().enumerate() {
                    assert_eq!(d.load(Ordering::Relaxed), j + 1, "process {me} reads {j}'s write");
                }
                assert_eq!(g.barrier(me, 2, false), Some(false), "barrier 2's OR, process {me}");
            })
        })
        .collect();
    for t in procs {
        t.join().unwrap();
    }
}

#[test]
fn two_processes_pass_two_barriers() {
    let n = explore(3, || two_barriers(2));
    println!("loom barrier model (p = 2, two barriers, preemption bound 3): {n} executions");
}

#[test]
fn three_processes_pass_two_barriers() {
    let n = explore(1, || two_barriers(3));
    println!("loom barrier model (p = 3, two barriers, preemption bound 1): {n} executions");
}

#[test]
fn a_process_that_leaves_releases_the_others() {
    let n = explore(3, || {
        let p = 3;
        let g = Group::new(p);
        let procs: Vec<_> = (0..p - 1)
            .map(|me| {
                let g = g.clone();
                thread::spawn(move || {
                    g.wakers[me].bind_current();
                    assert_eq!(g.barrier(me, 1, false), None, "process {me} passed a barrier");
                })
            })
            .collect();
        g.wakers[p - 1].bind_current();
        g.leave(1);
        for t in procs {
            t.join().unwrap();
        }
    });
    println!("loom barrier model (p = 3, one process leaves, preemption bound 3): {n} executions");
}
