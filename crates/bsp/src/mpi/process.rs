//! The context of one process of the MPI backend: its register, queued requests, capacities,
//! failure state, and the primitives between syncs. The sync is in `sync.rs`.
//!
//! # Threads and costs
//! A `MpiProcess` is used by its own thread only. `put` and `get` are O(1): bounds checks
//! against the caller's own register, then one push onto the request list for the peer.

use super::raw::Comm;
use crate::backend::Backend;
use crate::memreg::Register;
use crate::{Args, Ctx, Error, MemSlot, Pid};

/// A queued put: source address here, destination (slot, offset) at the target.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PutReq {
    pub(crate) src: *mut u8,
    pub(crate) dst_slot: u64,
    pub(crate) dst_offset: u64,
    pub(crate) len: u64,
}

/// A queued get: destination address here, source (slot, offset) at the peer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GetReq {
    pub(crate) dst: *mut u8,
    pub(crate) src_slot: u64,
    pub(crate) src_offset: u64,
    pub(crate) len: u64,
}

/// The MPI backend's context of one process (what [`Ctx`] holds for this backend).
#[derive(Debug)]
pub(crate) struct MpiProcess {
    /// The section's private communicator (rank = pid).
    pub(crate) comm: Comm,
    pub(crate) pid: usize,
    pub(crate) p: usize,
    /// The runtime's total processors (`probe`'s `p`): the ranks of the root exec or hook.
    pub(crate) total: Pid,
    pub(crate) checked: bool,
    pub(crate) reg: Register,
    /// Completed syncs.
    pub(crate) epoch: u64,
    pub(crate) msg_capacity: usize,
    pub(crate) pending_msg_capacity: Option<usize>,
    pub(crate) pending_reg_capacity: Option<usize>,
    /// Queue-capacity units used this superstep.
    pub(crate) used: usize,
    pub(crate) poisoned: bool,
    /// Every process knows the section failed (a header round showed a non-OK status).
    pub(crate) dead: bool,
    /// This process's own (primary) fatal error and the sync number it fails.
    pub(crate) failure: Option<(u64, Error)>,
    /// Running hash of this superstep's global (de)registrations.
    pub(crate) reg_hash: u64,
    pub(crate) puts: Vec<Vec<PutReq>>,
    pub(crate) gets: Vec<Vec<GetReq>>,
    /// Some request was queued this superstep.
    pub(crate) dirty: bool,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl MpiProcess {
    pub(crate) fn new(comm: Comm, pid: usize, p: usize, total: Pid, checked: bool) -> MpiProcess {
        MpiProcess {
            comm,
            pid,
            p,
            total,
            checked,
            reg: Register::default(),
            epoch: 0,
            msg_capacity: 0,
            pending_msg_capacity: None,
            pending_reg_capacity: None,
            used: 0,
            poisoned: false,
            dead: false,
            failure: None,
            reg_hash: 0,
            puts: vec![Vec::new(); p],
            gets: vec![Vec::new(); p],
            dirty: false,
            _not_send: std::marker::PhantomData,
        }
    }

    /// Poisons the context with a primary error (this process's own failure) and returns it.
    pub(crate) fn fatal(&mut self, err: Error) -> Error {
        if !self.poisoned {
            self.poisoned = true;
            self.failure = Some((self.epoch + 1, err.clone()));
        }
        err
    }

    fn check_live(&self) -> Result<(), Error> {
        if self.poisoned { Err(Error::Poisoned) } else { Ok(()) }
    }

    fn note_global(&mut self, op: u64, raw: usize) {
        let mut h = self.reg_hash ^ op.wrapping_mul(0x100_0000_01b3);
        h = (h ^ raw as u64).wrapping_mul(0x100_0000_01b3);
        self.reg_hash = h.rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15;
    }

    /// Checks shared by put and get; returns the capacity units the request uses.
    fn admit(
        &mut self,
        peer: Pid,
        remote: MemSlot,
        off: usize,
        len: usize,
    ) -> Result<usize, Error> {
        self.check_live()?;
        if peer as usize >= self.p {
            return Err(self.fatal(Error::BadPid { pid: peer, p: self.p as Pid }));
        }
        let units = if peer as usize == self.pid { 2 } else { 1 };
        // Past the capacity: accepted (the request vectors grow), refused under `Checked`.
        if self.used + units > self.msg_capacity && self.checked {
            return Err(Error::QueueFull { capacity: self.msg_capacity });
        }
        if !remote.is_global() {
            let why = "a put destination or get source must be a global slot";
            return Err(self.fatal(Error::BadSlot { pid: peer, slot: remote.as_raw(), why }));
        }
        if off.checked_add(len).is_none() {
            let e = Error::OutOfBounds {
                pid: peer,
                slot: remote.as_raw(),
                offset: off,
                len,
                slot_len: 0,
            };
            return Err(self.fatal(e));
        }
        Ok(units)
    }
}

impl Backend for MpiProcess {
    fn pid(&self) -> Pid {
        self.pid as Pid
    }

    fn nprocs(&self) -> Pid {
        self.p as Pid
    }

    fn free_p(&self) -> Pid {
        1
    }

    fn total_p(&self) -> Pid {
        self.total
    }

    fn syncs(&self) -> u64 {
        self.epoch
    }

    fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    fn is_checked(&self) -> bool {
        self.checked
    }

    fn msg_capacity(&self) -> usize {
        self.msg_capacity
    }

    fn register_capacity(&self) -> usize {
        self.reg.capacity()
    }

    fn registered(&self) -> usize {
        self.reg.used()
    }

    unsafe fn register_global(&mut self, ptr: *mut u8, len: usize) -> Result<MemSlot, Error> {
        self.check_live()?;
        let slot = self.reg.insert(true, ptr, len, false)?;
        self.note_global(1, slot.as_raw());
        Ok(slot)
    }

    unsafe fn register_local(&mut self, ptr: *mut u8, len: usize) -> Result<MemSlot, Error> {
        self.check_live()?;
        self.reg.insert(false, ptr, len, false)
    }

    fn alloc(&mut self, global: bool, len: usize) -> Result<MemSlot, Error> {
        self.check_live()?;
        if self.reg.used() >= self.reg.capacity() {
            return Err(Error::RegisterFull { capacity: self.reg.capacity() });
        }
        let ptr = Register::alloc_zeroed(len)
            .ok_or(Error::OutOfMemory { what: "slot memory", requested: len })?;
        let slot = self.reg.insert(global, ptr, len, true)?;
        if global {
            self.note_global(1, slot.as_raw());
        }
        Ok(slot)
    }

    fn deregister(&mut self, slot: MemSlot) -> Result<(), Error> {
        self.check_live()?;
        match self.reg.remove(self.pid as Pid, slot) {
            Ok(()) => {
                if slot.is_global() {
                    self.note_global(2, slot.as_raw());
                }
                Ok(())
            }
            Err(e) => Err(self.fatal(e)),
        }
    }

    fn slot(&self, slot: MemSlot) -> Result<&[u8], Error> {
        let region = self.reg.region(self.pid as Pid, slot)?;
        if region.len == 0 {
            return Ok(&[]);
        }
        // SAFETY: the registration contract makes `ptr` valid for `len` bytes while the slot
        // lives (tied to `&self`); transfers touch it only inside a sync, which needs `&mut`.
        Ok(unsafe { std::slice::from_raw_parts(region.ptr, region.len) })
    }

    fn slot_mut(&mut self, slot: MemSlot) -> Result<&mut [u8], Error> {
        let region = self.reg.region(self.pid as Pid, slot)?;
        if region.len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as in `slot`; `&mut self` excludes other references made by `slot`(`_mut`).
        Ok(unsafe { std::slice::from_raw_parts_mut(region.ptr, region.len) })
    }

    fn put(
        &mut self,
        src: MemSlot,
        src_offset: usize,
        dst_pid: Pid,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), Error> {
        let units = self.admit(dst_pid, dst, dst_offset, len)?;
        let src = match self.reg.resolve(self.pid as Pid, src, src_offset, len) {
            Ok(ptr) => ptr,
            Err(e) => return Err(self.fatal(e)),
        };
        let req = PutReq {
            src,
            dst_slot: dst.as_raw() as u64,
            dst_offset: dst_offset as u64,
            len: len as u64,
        };
        self.puts[dst_pid as usize].push(req);
        self.used += units;
        self.dirty = true;
        Ok(())
    }

    fn get(
        &mut self,
        src_pid: Pid,
        src: MemSlot,
        src_offset: usize,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), Error> {
        let units = self.admit(src_pid, src, src_offset, len)?;
        let dst = match self.reg.resolve(self.pid as Pid, dst, dst_offset, len) {
            Ok(ptr) => ptr,
            Err(e) => return Err(self.fatal(e)),
        };
        let req = GetReq {
            dst,
            src_slot: src.as_raw() as u64,
            src_offset: src_offset as u64,
            len: len as u64,
        };
        self.gets[src_pid as usize].push(req);
        self.used += units;
        self.dirty = true;
        Ok(())
    }

    fn sync(&mut self) -> Result<(), Error> {
        self.run_sync()
    }

    fn resize_memory_register(&mut self, max_regs: usize) -> Result<(), Error> {
        self.check_live()?;
        if !self.reg.try_reserve(max_regs) {
            return Err(Error::OutOfMemory { what: "memory register", requested: max_regs });
        }
        self.pending_reg_capacity = Some(max_regs);
        Ok(())
    }

    fn resize_message_queue(&mut self, max_msgs: usize) -> Result<(), Error> {
        self.check_live()?;
        crate::backend::check_queue_growth::<PutReq>(self.msg_capacity, max_msgs)?;
        self.pending_msg_capacity = Some(max_msgs);
        Ok(())
    }

    fn exec<F>(&mut self, p: Pid, spmd: &F, args: Args<'_>) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
    {
        // A nested exec runs on threads of this OS process (free_p = 1: one processor each).
        self.check_live()?;
        crate::threads::run_exec(self.free_p(), self.total, self.checked, p, spmd, args)
    }

    fn rehook<F>(&mut self, spmd: &F, args: Args<'_>) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
    {
        self.check_live()?;
        super::run_section(self.comm, true, self.total, self.checked, spmd, args)
    }
}
