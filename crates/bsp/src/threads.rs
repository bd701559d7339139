//! Threads backend: one OS thread per BSP process, shared memory, LPF semantics.
//!
//! # Contract
//! 1. `put`/`get` only queue a request (O(1), no shared writes except the origin's own row of
//!    pair queues); nothing moves before `sync`. A queued put reads its source and a queued get
//!    writes its destination only during the next `sync`.
//! 2. `sync` = barrier B1 (dissemination) → data phase → pairwise completion. In the data phase
//!    every byte written into process `d`'s memory is written by `d` itself: `d` executes the puts
//!    queued *to* it and the gets it queued, in (origin pid, issue order). Concurrent writes to one
//!    place therefore resolve as a serial order of whole messages (arbitrary-order CRCW, each
//!    block from one writer), and no two threads write one cache line.
//! 3. A process leaves `sync` only after every process whose requests touch its memory, or whose
//!    memory its requests touch, finished its data phase. Processes with no traffic leave right
//!    after B1, so an empty sync costs one barrier.
//! 4. Capacities: under the `Checked` backend a put/get needs room for its origin end (and its
//!    target end when the target is the caller) in the queue capacity in force, else
//!    `QueueFull` with no effect, and every process also checks, at the sync, origin + target
//!    ends of its messages against its capacity (`QueueOverflow`, fatal). The fast path
//!    accepts an excess of either end (LPF leaves it undefined and its Release engine accepts
//!    it; the pair queues grow on demand). Resizes apply at
//!    the end of the next sync; the last call wins.
//! 5. Failure: a fatal error poisons the context and sets the group's `fail_epoch` to the first
//!    barrier this process will not enter; every peer waiting in (or later entering) that
//!    barrier fails with `PeerFailed`. A process that returns from its SPMD function does the
//!    same. No wait that can outlive a failure is unbounded (threads/README.md).
//!
//! # Threads and costs
//! A context is used by its own thread only. Per-process shared state is `CachePadded`. A sync
//! of an h-relation costs one barrier (⌈log₂ p⌉ cache-line transfers), an O(p) scan of
//! pair-queue headers, and h bytes of copying at the destination.
//!
//! # Modules
//! - `group`: what the processes of a section share (registers, flags, failure state), and the
//!   meeting point of a collective `hook`/`rehook`.
//! - `queues`: the pair queues of requests; the only code that touches them unsynchronised.
//! - `process`: one process's context and the primitives between syncs (registration, put, get,
//!   resizes, nested exec, rehook); implements [`Backend`](crate::backend::Backend).
//! - `sync`: `sync` (barrier, data phase, completion, recycling), as README.md tells it.
//! - `checked`: the `Checked` backend's checks, run inside `sync`.
//! - `wait`: spin-then-park waits and the dissemination barrier.
//! - This file: the entry points (`exec`'s threads, `hook`, `Init`, `pthread_initialize`) and
//!   the life of one process (start gate, exit rendezvous).

pub(crate) mod checked;
mod group;
mod process;
mod queues;
mod sync;
#[cfg(loom)]
pub mod wait;
#[cfg(not(loom))]
mod wait;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

pub(crate) use process::Process;

use crate::{Args, Ctx, Error, ExecConfig, Pid};
use group::{GATE_ABORT, GATE_GO, GATE_WAIT, Group, HookPoint};

/// A bootstrap handle for [`hook`] (LPF's `lpf_init_t`): one per participating thread.
#[derive(Debug)]
pub struct Init {
    point: Arc<HookPoint>,
    pid: Pid,
    calls: u64,
}

impl Init {
    /// Creates the handles for a group of `nprocs` existing threads; hand handle `s` to the
    /// thread that is to be process `s`.
    pub fn group(nprocs: Pid) -> Vec<Init> {
        Init::group_with(nprocs, &ExecConfig::default())
    }

    /// Like [`Init::group`], with the backend options of `config` (`max_p` is ignored).
    pub fn group_with(nprocs: Pid, config: &ExecConfig) -> Vec<Init> {
        let point = Arc::new(HookPoint::new(nprocs.max(1) as usize, config.checked, nprocs.max(1)));
        (0..nprocs.max(1)).map(|pid| Init { point: point.clone(), pid, calls: 0 }).collect()
    }

    /// This thread's process id.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Number of processes in the group.
    pub fn nprocs(&self) -> Pid {
        self.point.p as Pid
    }
}

/// Groups being assembled by [`pthread_initialize`]: `(nprocs, point, joined pids)`.
type PendingInit = (Pid, Arc<HookPoint>, Vec<bool>);
static PENDING_INITS: Mutex<Vec<PendingInit>> = Mutex::new(Vec::new());

/// LPF's `lpf_pthread_initialize(pid, nprocs, &init)`: called by `nprocs` existing threads, each
/// with a distinct `pid`, to obtain the handles of one group without sharing anything first.
///
/// Threads calling with the same `nprocs` join the same group until it has `nprocs` members
/// (so two groups of the same size must not be initialised at the same time). Fails with
/// [`Error::BadInit`] when `pid >= nprocs` or a pid is given twice.
pub fn pthread_initialize(pid: Pid, nprocs: Pid) -> Result<Init, Error> {
    if pid >= nprocs {
        return Err(Error::BadInit(format!("pid {pid} is not below nprocs {nprocs}")));
    }
    let mut pending = PENDING_INITS.lock().unwrap_or_else(|e| e.into_inner());
    let i = match pending.iter().position(|(n, _, _)| *n == nprocs) {
        Some(i) => i,
        None => {
            let checked = ExecConfig::default().checked;
            let point = Arc::new(HookPoint::new(nprocs as usize, checked, nprocs));
            pending.push((nprocs, point, vec![false; nprocs as usize]));
            pending.len() - 1
        }
    };
    let joined = &mut pending[i].2;
    if joined[pid as usize] {
        return Err(Error::BadInit(format!("pid {pid} initialised twice for one group")));
    }
    joined[pid as usize] = true;
    let point = pending[i].1.clone();
    if pending[i].2.iter().all(|&j| j) {
        pending.swap_remove(i);
    }
    Ok(Init { point, pid, calls: 0 })
}

/// LPF's `lpf_hook`: runs `spmd` on the calling thread as process `init.pid()` of the group of
/// `init`. Collective: every thread of the group must call it (each with its own `args`). Returns
/// when every process of the section returned; `Err` (fatal) if any failed. An `Init` may be
/// used for any number of successive hooks.
pub fn hook<F>(init: &mut Init, spmd: F, args: Args<'_>) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    let group = init.point.join(init.calls);
    init.calls += 1;
    run_process(&group, init.pid as usize, &spmd, args)
}

/// Splits `free` processors over `n` processes: the first `free % n` get one more.
fn shares(free: Pid, n: Pid) -> Vec<Pid> {
    (0..n).map(|s| (free / n + Pid::from(s < free % n)).max(1)).collect()
}

/// LPF's `lpf_exec` on this backend: runs `spmd` on `min(p, free)` new processes (the calling
/// thread is process 0) and waits for them (see [`crate::exec`]). `total` is the runtime's total
/// number of processors, what `probe` reports as `p` inside the section.
pub(crate) fn run_exec<F>(
    free: Pid,
    total: Pid,
    checked: bool,
    p: Pid,
    spmd: &F,
    args: Args<'_>,
) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    let n = p.min(free).max(1);
    let group = Arc::new(Group::new(n as usize, checked, shares(free, n), total));
    let symbols = args.symbols;
    std::thread::scope(|scope| {
        let mut spawned = Vec::with_capacity(n as usize - 1);
        let mut failed = false;
        for s in 1..n as usize {
            let group = &group;
            let builder =
                std::thread::Builder::new().name(format!("sluice-bsp-{s}")).stack_size(8 << 20);
            let started = builder.spawn_scoped(scope, move || {
                let me = group.waker(s);
                me.bind_current();
                wait::wait(me, || group.gate.load(Ordering::Acquire) != GATE_WAIT, || false);
                if group.gate.load(Ordering::Acquire) == GATE_GO {
                    let _ = run_process(group, s, spmd, Args::for_peer(symbols));
                }
            });
            match started {
                Ok(h) => spawned.push(h),
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        // Release: the gate publishes the group; pairs with the Acquire loads above.
        let verdict = if failed { GATE_ABORT } else { GATE_GO };
        group.gate.store(verdict, Ordering::Release);
        group.wake_all();
        if failed {
            return Err(Error::OutOfMemory { what: "threads", requested: n as usize });
        }
        run_process(&group, 0, spmd, args)
    })
}

/// Runs one process of `group` on the calling thread, then the exit protocol (rule 5).
pub(crate) fn run_process<F>(
    group: &Arc<Group>,
    pid: usize,
    spmd: &F,
    args: Args<'_>,
) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    let me = group.waker(pid);
    me.bind_current();
    let mut ctx = Ctx::from_threads(Process::new(group.clone(), pid));
    let p = group.p as Pid;
    let outcome = catch_unwind(AssertUnwindSafe(|| spmd(&mut ctx, pid as Pid, p, args)));
    let mut proc = ctx.into_threads();
    if let Err(payload) = outcome {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_string());
        let err = Error::Panicked { pid: pid as Pid, message };
        proc.poisoned = true;
        group.poison(&err, proc.epoch + 1);
    }
    // Leaving: barrier epoch+1 will never see this process (rule 5).
    group.fail_epoch.fetch_min(proc.epoch + 1, Ordering::SeqCst);
    group.wake_all();
    // Exit rendezvous: every process learns the section's result, and registered memory is
    // released only after no peer can touch it.
    let left = group.exited.fetch_add(1, Ordering::AcqRel) + 1;
    if left == group.p {
        group.wake_all();
    } else {
        wait::wait(me, || group.exited.load(Ordering::Acquire) == group.p, || false);
    }
    drop(proc);
    group.result()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages longer than `CHUNK` (16 bytes under test) arrive whole, for puts and gets.
    #[test]
    fn long_messages_are_chunked_transparently() {
        for checked in [false, true] {
            crate::exec_with(
                &ExecConfig::new(3, checked),
                3,
                |ctx, s, p, _| {
                    ctx.resize_memory_register(3).unwrap();
                    ctx.resize_message_queue(64).unwrap();
                    ctx.sync().unwrap();
                    let src = ctx.alloc_global(100).unwrap();
                    let put_dst = ctx.alloc_global(100).unwrap();
                    let get_dst = ctx.alloc_local(100).unwrap();
                    for (i, b) in ctx.slot_mut(src).unwrap().iter_mut().enumerate() {
                        *b = (i as u32 * 7 + s) as u8;
                    }
                    ctx.sync().unwrap();
                    ctx.put(src, 3, (s + 1) % p, put_dst, 0, 97).unwrap();
                    ctx.get((s + 2) % p, src, 1, get_dst, 2, 98).unwrap();
                    ctx.sync().unwrap();
                    let from = (s + p - 1) % p;
                    let want: Vec<u8> = (3..100).map(|i| (i * 7 + from) as u8).collect();
                    assert_eq!(&ctx.slot(put_dst).unwrap()[..97], &want[..]);
                    let from = (s + 2) % p;
                    let want: Vec<u8> = (1..99).map(|i| (i * 7 + from) as u8).collect();
                    assert_eq!(&ctx.slot(get_dst).unwrap()[2..], &want[..]);
                },
                Args::none(),
            )
            .unwrap();
        }
    }
}
