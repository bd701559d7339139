//! What the processes of one section share: registers, barrier flags, completion counters, pair
//! queues, and the failure state; and the meeting point of a collective `hook`/`rehook`.
//!
//! # Contract
//! 1. A register is written by its owner outside a sync and read by peers only inside a sync in
//!    which the owner takes part (threads/README.md, "Registers"); `register` hands out the raw
//!    pointer and its callers argue each access.
//! 2. `poison` is the only way a section fails: it records the first error, lowers `fail_epoch`
//!    and wakes every waiter, so no wait outlives a failure.
//! 3. `HookPoint::join(n)` returns the same group to the `p` processes that make call number `n`.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_utils::CachePadded;

use super::queues::Queues;
use super::wait::{BarrierFlags, Epoch, Waker};
use crate::memreg::Register;
use crate::{Error, Pid};

/// State of one process that its peers may touch.
#[derive(Debug)]
pub(crate) struct Proc {
    /// Last sync whose data phase this process finished. Release-stored by the owner after its
    /// copies; Acquire-loaded by partners before they leave the sync (rule 3 of `threads`).
    pub(crate) done: CachePadded<AtomicU64>,
    /// Checked backend: hash of this superstep's global (de)registrations, by parity.
    pub(crate) reg_hash: [AtomicU64; 2],
    /// Written by the owner outside syncs; read by peers inside syncs only.
    register: CachePadded<UnsafeCell<Register>>,
}

/// Start gate of an exec: threads wait for `GO` (run) or `ABORT` (spawn failed, leave quietly).
pub(crate) const GATE_WAIT: u8 = 0;
pub(crate) const GATE_GO: u8 = 1;
pub(crate) const GATE_ABORT: u8 = 2;

/// Everything the processes of one SPMD section share.
pub(crate) struct Group {
    pub(crate) p: usize,
    pub(crate) checked: bool,
    /// `free_p` of each process (its share of the processors given to the section).
    pub(crate) shares: Vec<Pid>,
    /// The runtime's total number of processors (LPF's `p` of `lpf_probe`, the same in every
    /// section and nested section).
    pub(crate) total: Pid,
    pub(crate) flags_view: Box<[CachePadded<BarrierFlags>]>,
    pub(crate) wakers_view: Box<[CachePadded<Waker>]>,
    pub(crate) procs: Box<[Proc]>,
    /// Origin writes between syncs; readers read only inside syncs (queues.rs).
    pub(crate) queues: Queues,
    /// The first barrier epoch that some process will never enter (u64::MAX: none yet).
    pub(crate) fail_epoch: CachePadded<Epoch>,
    /// True once any process of the group hit a fatal error.
    poisoned: AtomicBool,
    first_error: Mutex<Option<Error>>,
    pub(crate) exited: CachePadded<AtomicUsize>,
    pub(crate) gate: AtomicU8,
    pub(crate) rehook: HookPoint,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("p", &self.p).field("checked", &self.checked).finish()
    }
}

// SAFETY: the `UnsafeCell`s of the registers are accessed by the protocol of
// threads/README.md: a register is written only by its owner outside a sync, and read by
// others only inside a sync, between barrier B1 (which orders the owner's writes before the
// reads) and the pairwise completion (which keeps the owner inside the sync until the reads are
// over). The pair queues are `Sync` on their own (queues.rs).
unsafe impl Sync for Group {}
// SAFETY: as for `Sync`; nothing in a group is tied to the thread that created it.
unsafe impl Send for Group {}

impl Group {
    pub(crate) fn new(p: usize, checked: bool, shares: Vec<Pid>, total: Pid) -> Group {
        Group {
            p,
            checked,
            shares,
            total,
            flags_view: (0..p).map(|_| CachePadded::new(BarrierFlags::new(p))).collect(),
            wakers_view: (0..p).map(|_| CachePadded::new(Waker::default())).collect(),
            procs: (0..p)
                .map(|_| Proc {
                    done: CachePadded::new(AtomicU64::new(0)),
                    reg_hash: [AtomicU64::new(0), AtomicU64::new(0)],
                    register: CachePadded::new(UnsafeCell::new(Register::default())),
                })
                .collect(),
            queues: Queues::new(p),
            fail_epoch: CachePadded::new(Epoch::new(u64::MAX)),
            poisoned: AtomicBool::new(false),
            first_error: Mutex::new(None),
            exited: CachePadded::new(AtomicUsize::new(0)),
            gate: AtomicU8::new(GATE_WAIT),
            rehook: HookPoint::new(p, checked, total),
        }
    }

    pub(crate) fn waker(&self, pid: usize) -> &Waker {
        &self.wakers_view[pid]
    }

    /// The register of `pid` (rule 1: callers argue each access).
    pub(crate) fn register(&self, pid: usize) -> *mut Register {
        self.procs[pid].register.get()
    }

    /// Registration hashes of all processes for parity `par` (Checked backend).
    pub(crate) fn reg_hashes(&self, par: usize) -> Vec<u64> {
        self.procs.iter().map(|pr| pr.reg_hash[par].load(Ordering::Relaxed)).collect()
    }

    pub(crate) fn wake_all(&self) {
        for w in self.wakers_view.iter() {
            w.kick();
        }
    }

    /// Rule 2 (rule 5 of `threads`): records `err`, marks the group failed from barrier `epoch`
    /// on, wakes everyone.
    pub(crate) fn poison(&self, err: &Error, epoch: u64) {
        self.poisoned.store(true, Ordering::SeqCst);
        if let Ok(mut first) = self.first_error.lock() {
            first.get_or_insert_with(|| err.clone());
        }
        self.fail_epoch.fetch_min(epoch, Ordering::SeqCst);
        self.wake_all();
    }

    /// The section's result once every process left: `Ok` unless some process failed.
    pub(crate) fn result(&self) -> Result<(), Error> {
        if !self.poisoned.load(Ordering::SeqCst) {
            return Ok(());
        }
        let first = self.first_error.lock().ok().and_then(|f| f.clone());
        Err(first.unwrap_or(Error::PeerFailed))
    }
}

/// Where the processes of a collective `hook`/`rehook` find the group they join.
#[derive(Debug)]
pub(crate) struct HookPoint {
    pub(crate) p: usize,
    checked: bool,
    /// The runtime's total processors for the groups made here (see [`Group::total`]).
    total: Pid,
    /// `(generation, group, processes that joined)`.
    pending: Mutex<Vec<(u64, Arc<Group>, usize)>>,
}

impl HookPoint {
    pub(crate) fn new(p: usize, checked: bool, total: Pid) -> HookPoint {
        HookPoint { p, checked, total, pending: Mutex::new(Vec::new()) }
    }

    /// Returns the group of call number `generation`, creating it on first arrival (rule 3).
    pub(crate) fn join(&self, generation: u64) -> Arc<Group> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let i = match pending.iter().position(|(g, _, _)| *g == generation) {
            Some(i) => i,
            None => {
                let group = Arc::new(Group::new(self.p, self.checked, vec![1; self.p], self.total));
                pending.push((generation, group, 0));
                pending.len() - 1
            }
        };
        pending[i].2 += 1;
        let group = pending[i].1.clone();
        if pending[i].2 == self.p {
            pending.swap_remove(i);
        }
        group
    }
}
