//! The context of one process of the threads backend: its register, capacities, failure state,
//! and the primitives between syncs (registration, `put`, `get`, resizes, nested `exec`,
//! `rehook`). The sync itself is in `sync.rs`.
//!
//! # Threads and costs
//! A `Process` is used by its own thread only (through `&mut Ctx`). `put` and `get` are O(1):
//! bounds checks against the caller's own register, then one push onto the caller's own row of
//! pair queues (rule 1 of `threads`).

use std::sync::Arc;

use super::group::Group;
use super::queues::PairQueue;
use crate::backend::Backend;
use crate::memreg::Register;
use crate::{Args, Ctx, Error, MemSlot, Pid};

/// The threads backend's context of one process (what [`Ctx`] holds for this backend).
#[derive(Debug)]
pub(crate) struct Process {
    pub(crate) group: Arc<Group>,
    pub(crate) pid: usize,
    /// Completed syncs.
    pub(crate) epoch: u64,
    pub(crate) msg_capacity: usize,
    pub(crate) pending_msg_capacity: Option<usize>,
    pub(crate) pending_reg_capacity: Option<usize>,
    /// Queue-capacity units used this superstep (origin ends, plus target ends of self messages).
    pub(crate) used: usize,
    pub(crate) poisoned: bool,
    rehooks: u64,
    /// Checked backend: running hash of this superstep's global (de)registrations.
    pub(crate) reg_hash: u64,
    pub(crate) partners: Vec<usize>,
    /// Whether this process's queue row of each parity may hold requests.
    pub(crate) dirty: [bool; 2],
    /// Pins the context to its thread (see [`Ctx`]'s docs).
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Process {
    pub(crate) fn new(group: Arc<Group>, pid: usize) -> Process {
        Process {
            group,
            pid,
            epoch: 0,
            msg_capacity: 0,
            pending_msg_capacity: None,
            pending_reg_capacity: None,
            used: 0,
            poisoned: false,
            rehooks: 0,
            reg_hash: 0,
            partners: Vec::new(),
            dirty: [false; 2],
            _not_send: std::marker::PhantomData,
        }
    }

    /// Parity of the current superstep (the one the next sync ends).
    pub(crate) fn parity(&self) -> usize {
        ((self.epoch + 1) & 1) as usize
    }

    pub(crate) fn reg_mut(&mut self) -> &mut Register {
        // SAFETY: the owner mutates its register only outside syncs (we hold `&mut self`, so
        // no sync of this process runs), and peers read it only inside syncs in which this
        // process takes part (threads/README.md, "Registers").
        unsafe { &mut *self.group.register(self.pid) }
    }

    pub(crate) fn reg(&self) -> &Register {
        // SAFETY: as in `reg_mut`; only the owner mutates, and not concurrently with `&self`.
        unsafe { &*self.group.register(self.pid) }
    }

    /// The caller's own queue to `target` for the current superstep.
    #[inline(always)]
    fn outgoing(&mut self, target: usize) -> &mut PairQueue {
        let par = self.parity();
        self.dirty[par] = true;
        // SAFETY: row `self.pid` of the queues is written only by this process, outside syncs
        // (`&mut self`); readers of this parity read it only in the next sync (README, "Queues").
        unsafe { self.group.queues.outgoing(self.pid, target, par) }
    }

    /// Poisons the context with `err` (rule 5 of `threads`) and returns it.
    pub(crate) fn fatal(&mut self, err: Error) -> Error {
        if !self.poisoned {
            self.poisoned = true;
            self.group.poison(&err, self.epoch + 1);
        }
        err
    }

    pub(crate) fn check_live(&self) -> Result<(), Error> {
        if self.poisoned { Err(Error::Poisoned) } else { Ok(()) }
    }

    fn note_global(&mut self, op: u64, raw: usize) {
        // FNV-1a style mixing; only equality across processes matters.
        let mut h = self.reg_hash ^ op.wrapping_mul(0x100_0000_01b3);
        h = (h ^ raw as u64).wrapping_mul(0x100_0000_01b3);
        self.reg_hash = h.rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15;
    }
}

impl Backend for Process {
    fn pid(&self) -> Pid {
        self.pid as Pid
    }

    fn nprocs(&self) -> Pid {
        self.group.p as Pid
    }

    fn free_p(&self) -> Pid {
        self.group.shares[self.pid]
    }

    fn total_p(&self) -> Pid {
        self.group.total
    }

    fn syncs(&self) -> u64 {
        self.epoch
    }

    fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    fn is_checked(&self) -> bool {
        self.group.checked
    }

    fn msg_capacity(&self) -> usize {
        self.msg_capacity
    }

    fn register_capacity(&self) -> usize {
        self.reg().capacity()
    }

    fn registered(&self) -> usize {
        self.reg().used()
    }

    unsafe fn register_global(&mut self, ptr: *mut u8, len: usize) -> Result<MemSlot, Error> {
        self.check_live()?;
        let slot = self.reg_mut().insert(true, ptr, len, false)?;
        self.note_global(1, slot.as_raw());
        Ok(slot)
    }

    unsafe fn register_local(&mut self, ptr: *mut u8, len: usize) -> Result<MemSlot, Error> {
        self.check_live()?;
        self.reg_mut().insert(false, ptr, len, false)
    }

    fn alloc(&mut self, global: bool, len: usize) -> Result<MemSlot, Error> {
        self.check_live()?;
        let reg = self.reg_mut();
        if reg.used() >= reg.capacity() {
            return Err(Error::RegisterFull { capacity: reg.capacity() });
        }
        let ptr = Register::alloc_zeroed(len)
            .ok_or(Error::OutOfMemory { what: "slot memory", requested: len })?;
        let slot = reg.insert(global, ptr, len, true)?;
        if global {
            self.note_global(1, slot.as_raw());
        }
        Ok(slot)
    }

    fn deregister(&mut self, slot: MemSlot) -> Result<(), Error> {
        self.check_live()?;
        let pid = self.pid as Pid;
        match self.reg_mut().remove(pid, slot) {
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
        let region = self.reg().region(self.pid as Pid, slot)?;
        if region.len == 0 {
            return Ok(&[]);
        }
        // SAFETY: the registration contract makes `ptr` valid for `len` bytes while the slot
        // lives (tied to `&self`); no sync (and so no data phase writing the slot) can run while
        // `&self` is borrowed, and peers only touch this memory inside syncs.
        Ok(unsafe { std::slice::from_raw_parts(region.ptr, region.len) })
    }

    fn slot_mut(&mut self, slot: MemSlot) -> Result<&mut [u8], Error> {
        let pid = self.pid as Pid;
        let region = self.reg_mut().region(pid, slot)?;
        if region.len == 0 {
            return Ok(&mut []);
        }
        let (ptr, len) = (region.ptr, region.len);
        // SAFETY: as in `slot`; `&mut self` also excludes any other reference made by `slot`
        // or `slot_mut`, and the registration contract excludes other aliases.
        Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
    }

    #[inline]
    fn put(
        &mut self,
        src: MemSlot,
        src_offset: usize,
        dst_pid: Pid,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), Error> {
        self.check_live()?;
        let d = dst_pid as usize;
        if d >= self.group.p {
            return Err(self.fatal(Error::BadPid { pid: dst_pid, p: self.nprocs() }));
        }
        let units = if d == self.pid { 2 } else { 1 };
        // Past the capacity: accepted (the pair queues grow), refused under `Checked` (rule 4).
        if self.used + units > self.msg_capacity && self.group.checked {
            return Err(Error::QueueFull { capacity: self.msg_capacity });
        }
        if !dst.is_global() {
            let why = "a put destination must be a global slot";
            return Err(self.fatal(Error::BadSlot { pid: dst_pid, slot: dst.as_raw(), why }));
        }
        let src_ptr = match self.reg().resolve(self.pid as Pid, src, src_offset, len) {
            Ok(ptr) => ptr,
            Err(e) => return Err(self.fatal(e)),
        };
        let Ok(dst_slot) = u32::try_from(dst.as_raw()) else {
            return Err(self.fatal(out_of_bounds(dst_pid, dst, dst_offset, len)));
        };
        if dst_offset.checked_add(len).is_none() {
            return Err(self.fatal(out_of_bounds(dst_pid, dst, dst_offset, len)));
        }
        self.outgoing(d).push_put(src_ptr, dst_slot, dst_offset, len);
        self.used += units;
        Ok(())
    }

    #[inline]
    fn get(
        &mut self,
        src_pid: Pid,
        src: MemSlot,
        src_offset: usize,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    ) -> Result<(), Error> {
        self.check_live()?;
        let s = src_pid as usize;
        if s >= self.group.p {
            return Err(self.fatal(Error::BadPid { pid: src_pid, p: self.nprocs() }));
        }
        let units = if s == self.pid { 2 } else { 1 };
        // Past the capacity: accepted (the pair queues grow), refused under `Checked` (rule 4).
        if self.used + units > self.msg_capacity && self.group.checked {
            return Err(Error::QueueFull { capacity: self.msg_capacity });
        }
        if !src.is_global() {
            let why = "a get source must be a global slot";
            return Err(self.fatal(Error::BadSlot { pid: src_pid, slot: src.as_raw(), why }));
        }
        let dst_ptr = match self.reg().resolve(self.pid as Pid, dst, dst_offset, len) {
            Ok(ptr) => ptr,
            Err(e) => return Err(self.fatal(e)),
        };
        let Ok(src_slot) = u32::try_from(src.as_raw()) else {
            return Err(self.fatal(out_of_bounds(src_pid, src, src_offset, len)));
        };
        if src_offset.checked_add(len).is_none() {
            return Err(self.fatal(out_of_bounds(src_pid, src, src_offset, len)));
        }
        self.outgoing(s).push_get(dst_ptr, src_slot, src_offset, len);
        self.used += units;
        Ok(())
    }

    fn sync(&mut self) -> Result<(), Error> {
        self.run_sync()
    }

    fn resize_memory_register(&mut self, max_regs: usize) -> Result<(), Error> {
        self.check_live()?;
        if !self.reg_mut().try_reserve(max_regs) {
            return Err(Error::OutOfMemory { what: "memory register", requested: max_regs });
        }
        self.pending_reg_capacity = Some(max_regs);
        Ok(())
    }

    fn resize_message_queue(&mut self, max_msgs: usize) -> Result<(), Error> {
        self.check_live()?;
        crate::backend::check_queue_growth::<super::queues::PutReq>(self.msg_capacity, max_msgs)?;
        self.pending_msg_capacity = Some(max_msgs);
        Ok(())
    }

    fn exec<F>(&mut self, p: Pid, spmd: &F, args: Args<'_>) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
    {
        self.check_live()?;
        super::run_exec(self.free_p(), self.group.total, self.group.checked, p, spmd, args)
    }

    fn rehook<F>(&mut self, spmd: &F, args: Args<'_>) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
    {
        self.check_live()?;
        let child = self.group.rehook.join(self.rehooks);
        self.rehooks += 1;
        super::run_process(&child, self.pid, spmd, args)
    }
}

/// The error of a request whose slot id does not fit a queued request (32 bits) or whose end
/// offset overflows: no slot can hold those bytes.
fn out_of_bounds(pid: Pid, slot: MemSlot, offset: usize, len: usize) -> Error {
    Error::OutOfBounds { pid, slot: slot.as_raw(), offset, len, slot_len: 0 }
}
