//! [`Ctx`], the handle an SPMD function receives, and [`exec`]/[`exec_with`], which start a
//! section on a backend.
//!
//! # Contract
//! 1. `Ctx` has one method per LPF primitive (see the crate docs' table); each means the same
//!    on every backend (the crate's contract, rules 1–5).
//! 2. A `Ctx` holds the context of the backend its section was started on and forwards every
//!    call to it with one `match` (no virtual call per `put`); SPMD functions do not name the
//!    backend, so they run unchanged on each.
//!
//! # Threads and costs
//! A `Ctx` is used by the thread that runs its process only (it is neither `Send` nor `Sync`).
//! The forwarding methods are `#[inline]`: a `put` costs what the backend's `put` costs.

use crate::backend::Backend;
use crate::threads::{self, Process};
use crate::{Args, Error, ExecConfig, Machine, MemSlot, Pid};

/// The backends compiled in: the context of one process of each.
#[derive(Debug)]
enum Engine {
    Threads(Process),
    #[cfg(feature = "mpi")]
    Mpi(crate::mpi::MpiProcess),
}

/// Forwards a call to the backend of `$engine` (rule 2): `on!(&mut self.engine, b => b.sync())`.
macro_rules! on {
    ($engine:expr, $b:ident => $call:expr) => {
        match $engine {
            Engine::Threads($b) => $call,
            #[cfg(feature = "mpi")]
            Engine::Mpi($b) => $call,
        }
    };
}

/// The context of one BSP process (LPF's `lpf_t` inside an SPMD section).
///
/// Passed as `&mut Ctx` to the SPMD function; used by that thread only: `Ctx` is neither `Send`
/// nor `Sync`, because its waits park the thread that runs the process (LPF: one thread per
/// context).
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// sluice_bsp::exec(1, |ctx, _, _, _| needs_send(ctx), sluice_bsp::Args::none()).unwrap();
/// ```
#[derive(Debug)]
pub struct Ctx {
    engine: Engine,
}

impl Ctx {
    /// A context of the threads backend.
    pub(crate) fn from_threads(process: Process) -> Ctx {
        Ctx { engine: Engine::Threads(process) }
    }

    /// The threads backend's context back, once the SPMD function returned. Only the threads
    /// backend creates contexts of its kind, and only it calls this.
    pub(crate) fn into_threads(self) -> Process {
        match self.engine {
            Engine::Threads(process) => process,
            #[cfg(feature = "mpi")]
            Engine::Mpi(_) => unreachable!("only the threads backend makes threads contexts"),
        }
    }

    /// A context of the MPI backend.
    #[cfg(feature = "mpi")]
    pub(crate) fn from_mpi(process: crate::mpi::MpiProcess) -> Ctx {
        Ctx { engine: Engine::Mpi(process) }
    }

    /// The MPI backend's context back, once the SPMD function returned (only it calls this).
    #[cfg(feature = "mpi")]
    pub(crate) fn into_mpi(self) -> crate::mpi::MpiProcess {
        match self.engine {
            Engine::Mpi(process) => process,
            Engine::Threads(_) => unreachable!("only the MPI backend makes MPI contexts"),
        }
    }

    /// This process's id `s`, in `0..nprocs()`.
    #[inline]
    pub fn pid(&self) -> Pid {
        on!(&self.engine, b => b.pid())
    }

    /// Number of processes `p` of this section.
    #[inline]
    pub fn nprocs(&self) -> Pid {
        on!(&self.engine, b => b.nprocs())
    }

    /// Number of completed syncs of this context.
    pub fn syncs(&self) -> u64 {
        on!(&self.engine, b => b.syncs())
    }

    /// Returns true if and only if this context is in the failure state.
    pub fn is_poisoned(&self) -> bool {
        on!(&self.engine, b => b.is_poisoned())
    }

    /// Returns true if and only if this section runs the `Checked` backend.
    pub fn is_checked(&self) -> bool {
        on!(&self.engine, b => b.is_checked())
    }

    /// Message queue capacity in force (changes at syncs).
    pub fn msg_capacity(&self) -> usize {
        on!(&self.engine, b => b.msg_capacity())
    }

    /// Memory register capacity in force (changes at syncs).
    pub fn register_capacity(&self) -> usize {
        on!(&self.engine, b => b.register_capacity())
    }

    /// Live registrations of this process (local and global).
    pub fn registered(&self) -> usize {
        on!(&self.engine, b => b.registered())
    }

    /// Processors available to a nested [`Ctx::exec`] from this process (LPF's `free_p`, ≥ 1).
    pub fn free_p(&self) -> Pid {
        on!(&self.engine, b => b.free_p())
    }

    /// LPF's `lpf_probe`: `p`, `free_p`, and the cost functions g and ℓ.
    pub fn probe(&self) -> Machine {
        on!(&self.engine, b => b.probe())
    }

    /// LPF's `lpf_register_global`: registers `len` bytes at `ptr` as a global slot. Collective:
    /// all processes register in the same superstep and order. Usable by puts and gets of this
    /// superstep already (they are resolved at the sync).
    ///
    /// Errors: [`Error::RegisterFull`] (mitigable) when the register capacity is used up.
    ///
    /// # Safety
    /// Until the slot is deregistered or the SPMD function returns: `ptr` must be valid for
    /// reads and writes of `len` bytes (any pointer when `len == 0`); no other code may access
    /// bytes that a message of the current superstep reads (other code may read them) or
    /// writes, from the call that queues it until the sync that ends it returns; and while a
    /// reference from [`Ctx::slot`]/[`Ctx::slot_mut`] lives, the memory must not be accessed
    /// through other pointers (the usual aliasing rules).
    pub unsafe fn register_global(&mut self, ptr: *mut u8, len: usize) -> Result<MemSlot, Error> {
        // SAFETY: this function's contract is the backend's.
        on!(&mut self.engine, b => unsafe { b.register_global(ptr, len) })
    }

    /// LPF's `lpf_register_local`: like [`Ctx::register_global`], but not collective and only a
    /// put source or get destination of this process.
    ///
    /// # Safety
    /// As for [`Ctx::register_global`].
    pub unsafe fn register_local(&mut self, ptr: *mut u8, len: usize) -> Result<MemSlot, Error> {
        // SAFETY: this function's contract is the backend's.
        on!(&mut self.engine, b => unsafe { b.register_local(ptr, len) })
    }

    /// Safe registration of `len` zeroed bytes owned by the context (freed at deregistration),
    /// as a global slot; collective like [`Ctx::register_global`]. Read and write it with
    /// [`Ctx::slot`] and [`Ctx::slot_mut`] between syncs.
    ///
    /// Errors: `RegisterFull` or `OutOfMemory` (both mitigable).
    pub fn alloc_global(&mut self, len: usize) -> Result<MemSlot, Error> {
        on!(&mut self.engine, b => b.alloc(true, len))
    }

    /// Like [`Ctx::alloc_global`], registered as a local slot.
    pub fn alloc_local(&mut self, len: usize) -> Result<MemSlot, Error> {
        on!(&mut self.engine, b => b.alloc(false, len))
    }

    /// LPF's `lpf_deregister`: effective at once; collective for global slots. The slot must
    /// not be used by a message of the current superstep.
    pub fn deregister(&mut self, slot: MemSlot) -> Result<(), Error> {
        on!(&mut self.engine, b => b.deregister(slot))
    }

    /// The bytes of a registered slot of this process, for use between syncs.
    #[inline]
    pub fn slot(&self, slot: MemSlot) -> Result<&[u8], Error> {
        on!(&self.engine, b => b.slot(slot))
    }

    /// Mutable bytes of a registered slot of this process, for use between syncs.
    #[inline]
    pub fn slot_mut(&mut self, slot: MemSlot) -> Result<&mut [u8], Error> {
        on!(&mut self.engine, b => b.slot_mut(slot))
    }

    /// LPF's `lpf_put`: queues a copy of `len` bytes from `src[src_offset..]` (a local or global
    /// slot of this process) to `dst[dst_offset..]` (a global slot) on process `dst_pid`.
    /// Complete when the next [`Ctx::sync`] returns.
    ///
    /// A message past the queue capacity in force is accepted (the queues grow; LPF leaves it
    /// undefined and its Release engine accepts it) except on the `Checked` backend, which
    /// refuses it with `QueueFull`.
    ///
    /// Errors: `QueueFull` (`Checked` only; mitigable, no effect); `BadPid`, `BadSlot`,
    /// `OutOfBounds` (fatal; destination bounds are checked at the sync, by the destination).
    #[inline]
    pub fn put(
        &mut self,
        src: MemSlot,
        src_offset: usize,
        dst_pid: Pid,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), Error> {
        on!(&mut self.engine, b => b.put(src, src_offset, dst_pid, dst, dst_offset, len))
    }

    /// LPF's `lpf_get`: queues a copy of `len` bytes from `src[src_offset..]` (a global slot)
    /// on process `src_pid` to `dst[dst_offset..]` (a slot of this process).
    ///
    /// Errors as for [`Ctx::put`].
    #[inline]
    pub fn get(
        &mut self,
        src_pid: Pid,
        src: MemSlot,
        src_offset: usize,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), Error> {
        on!(&mut self.engine, b => b.get(src_pid, src, src_offset, dst, dst_offset, len))
    }

    /// LPF's `lpf_resize_memory_register`: capacity for `max_regs` local plus global slots,
    /// effective after the next sync. The last call before a sync wins; shrinking always
    /// succeeds. Errors: `OutOfMemory` (mitigable, no effect).
    pub fn resize_memory_register(&mut self, max_regs: usize) -> Result<(), Error> {
        on!(&mut self.engine, b => b.resize_memory_register(max_regs))
    }

    /// LPF's `lpf_resize_message_queue`: room for `max_msgs` messages, each counted at its
    /// origin and at its target; effective after the next sync; last call wins; shrinking always
    /// succeeds. Errors: `OutOfMemory` (mitigable, no effect) when `max_msgs` requests could not
    /// be stored (the queues themselves grow on demand, in amortised O(1)).
    pub fn resize_message_queue(&mut self, max_msgs: usize) -> Result<(), Error> {
        on!(&mut self.engine, b => b.resize_message_queue(max_msgs))
    }

    /// LPF's `lpf_sync`: ends the superstep. Every queued put and get is complete when it
    /// returns `Ok`, and pending resizes are in force.
    ///
    /// Errors (all fatal): `Poisoned` if this context failed before; `PeerFailed` if a peer
    /// failed or left its SPMD function; `QueueOverflow`, `BadSlot`, `OutOfBounds` found while
    /// executing messages; `Checked` violations under the `Checked` backend.
    #[inline]
    pub fn sync(&mut self) -> Result<(), Error> {
        on!(&mut self.engine, b => b.sync())
    }

    /// LPF's `lpf_exec` inside a section: runs `spmd` on `min(p, free_p())` new processes (this
    /// thread becomes their process 0) and waits; this context is untouched.
    pub fn exec<F>(&mut self, p: Pid, spmd: F, args: Args<'_>) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
    {
        on!(&mut self.engine, b => b.exec(p, &spmd, args))
    }

    /// LPF's `lpf_rehook`: collective; runs `spmd` on the same processes with a new, empty
    /// context (no slots, no queue capacity), so a library cannot see or disturb the caller's
    /// registrations. Returns when all processes returned.
    pub fn rehook<F>(&mut self, spmd: F, args: Args<'_>) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
    {
        on!(&mut self.engine, b => b.rehook(&spmd, args))
    }
}

/// LPF's `lpf_exec` from the root: runs `spmd` on `min(p, max_p)` new processes (thread 0 is the
/// caller) and waits for them. Only process 0 sees `args.input`/`args.output`; all see
/// `args.symbols`. Output written by process 0 is in `args.output` even when the result is fatal.
///
/// Errors: `OutOfMemory` if threads could not be started (nothing ran); the first fatal error
/// of any process otherwise (a panic in `spmd` becomes [`Error::Panicked`]).
pub fn exec<F>(p: Pid, spmd: F, args: Args<'_>) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    exec_with(&ExecConfig::default(), p, spmd, args)
}

/// [`exec`] with explicit options (processor count of the root, `Checked` backend). The backend
/// is chosen here: MPI when compiled in and [`mpi::selected`](crate::mpi::selected), else threads.
pub fn exec_with<F>(config: &ExecConfig, p: Pid, spmd: F, args: Args<'_>) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    #[cfg(feature = "mpi")]
    if crate::mpi::selected() {
        return crate::mpi::run_exec(config, p, &spmd, args);
    }
    threads::run_exec(config.root_p(), config.root_p(), config.checked, p, &spmd, args)
}
