//! The interface every backend implements: LPF's primitives on the context of one process.
//!
//! A backend (threads; MPI with the cargo feature `mpi`) supplies one type per process
//! context that implements [`Backend`]. The public [`Ctx`] holds one of them and forwards each
//! call with one `match` over the backends compiled in (no virtual call per `put`), so an SPMD
//! function written
//! against [`Ctx`] runs unchanged on every backend; the backend is chosen when the section
//! starts ([`exec_with`](crate::exec_with), [`hook`](crate::hook)).
//!
//! # Contract
//! Every implementation keeps the crate's contract (rules 1–5 of the crate docs) and its error
//! kinds: a mitigable error leaves no effect; a fatal one poisons the context, and every peer's
//! next `sync` fails. The methods mean what the [`Ctx`] method of the same name documents.
//!
//! # Adding a backend
//! Implement [`Backend`] for the new context type, add a variant to `ctx::Engine` (the compiler
//! then lists every `match` to extend), and choose it in [`exec_with`](crate::exec_with) and at
//! hook time. The MPI backend (`mpi.rs`) was added this way.
//!
//! `Checked` is still a flag of the threads backend: `threads/checked.rs` runs inside the
//! threads sync, after barrier B1, where it can read every pair queue of the superstep and so
//! reject a bad pattern before any byte moves, while the peers' current sync still completes
//! and their next one fails. A `Checked<B: Backend>` wrapper must get the same view on any `B`:
//! keep the superstep's requests itself (forwarding nothing to `B` before the checks pass);
//! at `sync`, put per-target descriptor counts and the registration hash to every peer, sync
//! `B`, get the descriptors (slot, offset, len, kind) of the messages touching this process,
//! sync `B`, run the checks of `threads/checked.rs` on them; then forward the requests and
//! sync `B`. On a violation it forwards nothing and poisons `B` (a `poison` method this trait
//! would gain), so the peers' pending or next sync fails, as rule 4 of the crate requires. That
//! costs two extra supersteps per sync, two more register slots and `2p` more queue entries on
//! `B` (reserved with one `B` sync when the context starts).

use crate::{Args, Ctx, Error, Machine, MemSlot, Pid};

/// LPF's primitives on the context of one process (see the module docs).
pub(crate) trait Backend {
    /// This process's id `s`, in `0..nprocs()`.
    fn pid(&self) -> Pid;
    /// Number of processes `p` of this section.
    fn nprocs(&self) -> Pid;
    /// Processors available to a nested exec from this process (LPF's `free_p`, ≥ 1).
    fn free_p(&self) -> Pid;
    /// The runtime's total number of processors (LPF's `p` of `lpf_probe`: the same at the
    /// root, in a section and in a nested section).
    fn total_p(&self) -> Pid;
    /// Number of completed syncs.
    fn syncs(&self) -> u64;
    /// Returns true if and only if this context is in the failure state.
    fn is_poisoned(&self) -> bool;
    /// Returns true if and only if this section runs the `Checked` backend.
    fn is_checked(&self) -> bool;
    /// Message queue capacity in force.
    fn msg_capacity(&self) -> usize;
    /// Memory register capacity in force.
    fn register_capacity(&self) -> usize;
    /// Live registrations (local and global).
    fn registered(&self) -> usize;

    /// LPF's `lpf_probe`.
    fn probe(&self) -> Machine {
        Machine::new(self.total_p(), self.free_p())
    }

    /// LPF's `lpf_register_global`.
    ///
    /// # Safety
    /// As for [`Ctx::register_global`].
    unsafe fn register_global(&mut self, ptr: *mut u8, len: usize) -> Result<MemSlot, Error>;

    /// LPF's `lpf_register_local`.
    ///
    /// # Safety
    /// As for [`Ctx::register_global`].
    unsafe fn register_local(&mut self, ptr: *mut u8, len: usize) -> Result<MemSlot, Error>;

    /// Registers `len` zeroed bytes owned by the context, global or local.
    fn alloc(&mut self, global: bool, len: usize) -> Result<MemSlot, Error>;

    /// LPF's `lpf_deregister`.
    fn deregister(&mut self, slot: MemSlot) -> Result<(), Error>;

    /// The bytes of a registered slot of this process, between syncs.
    fn slot(&self, slot: MemSlot) -> Result<&[u8], Error>;

    /// The mutable bytes of a registered slot of this process, between syncs.
    fn slot_mut(&mut self, slot: MemSlot) -> Result<&mut [u8], Error>;

    /// LPF's `lpf_put`.
    fn put(
        &mut self,
        src: MemSlot,
        src_offset: usize,
        dst_pid: Pid,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), Error>;

    /// LPF's `lpf_get`.
    fn get(
        &mut self,
        src_pid: Pid,
        src: MemSlot,
        src_offset: usize,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), Error>;

    /// LPF's `lpf_sync`.
    fn sync(&mut self) -> Result<(), Error>;

    /// LPF's `lpf_resize_memory_register`.
    fn resize_memory_register(&mut self, max_regs: usize) -> Result<(), Error>;

    /// LPF's `lpf_resize_message_queue`.
    fn resize_message_queue(&mut self, max_msgs: usize) -> Result<(), Error>;

    /// LPF's `lpf_exec` inside a section.
    fn exec<F>(&mut self, p: Pid, spmd: &F, args: Args<'_>) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync;

    /// LPF's `lpf_rehook`.
    fn rehook<F>(&mut self, spmd: &F, args: Args<'_>) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync;
}

/// The allocation check of `resize_message_queue`, shared by the backends: growing a queue of
/// `R` requests from `current` to `max_msgs` entries must be possible now, or the call fails as
/// mitigable `OutOfMemory` and has no effect (LPF); the new capacity itself takes effect at the
/// next sync.
pub(crate) fn check_queue_growth<R>(current: usize, max_msgs: usize) -> Result<(), Error> {
    if max_msgs > current {
        let mut probe: Vec<R> = Vec::new();
        if probe.try_reserve_exact(max_msgs).is_err() {
            return Err(Error::OutOfMemory { what: "message queue", requested: max_msgs });
        }
    }
    Ok(())
}
