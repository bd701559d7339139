//! The memory register of one process: slot ids, registered regions, capacity.
//!
//! # Contract
//! 1. A [`MemSlot`] names one registration. Global and local slots live in separate index spaces
//!    (the low bit of the id says which), so processes that interleave local registrations
//!    differently still agree on every global slot id, as long as the global (de)registrations
//!    are collective and in the same order (LPF's rule).
//! 2. Freed indices are reused last-freed-first; with collective global deregistration in the
//!    same order, global ids stay identical on all processes.
//! 3. `used() <= capacity` is checked at registration (mitigable [`Error::RegisterFull`]); the
//!    capacity itself changes only at a sync (applied by the owner of the register).
//! 4. `resolve(slot, offset, len)` returns a pointer only when `offset + len` fits in the slot,
//!    else [`Error::OutOfBounds`]; a slot never registered, deregistered, or of the wrong kind is
//!    [`Error::BadSlot`].
//!
//! # Threads and costs
//! A `Register` is owned by one process; peers read it (never write) during a sync, when the
//! owner is itself inside the sync (see `threads/README.md`). Every operation is O(1).

use crate::{Error, Pid};

/// A registered memory slot id (LPF's `lpf_memslot_t`).
///
/// The id is a plain number (`as_raw`/`from_raw` round-trip it for a C ABI). Global slots have
/// even ids, local slots odd ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemSlot(usize);

impl MemSlot {
    /// LPF's `LPF_INVALID_MEMSLOT` (`SIZE_MAX`); never returned by a registration.
    pub const INVALID: MemSlot = MemSlot(usize::MAX);

    /// The raw id.
    pub fn as_raw(self) -> usize {
        self.0
    }

    /// The slot with raw id `raw` (no validation: an unknown id is rejected when used).
    pub fn from_raw(raw: usize) -> MemSlot {
        MemSlot(raw)
    }

    /// Returns true if and only if this id names a global slot.
    pub fn is_global(self) -> bool {
        self.0 != usize::MAX && self.0 & 1 == 0
    }

    fn global(index: usize) -> MemSlot {
        MemSlot(index << 1)
    }

    fn local(index: usize) -> MemSlot {
        MemSlot((index << 1) | 1)
    }

    fn index(self) -> usize {
        self.0 >> 1
    }
}

/// One registered area. When `owned`, the bytes were allocated by [`Register::alloc_zeroed`]
/// and are freed when the region drops.
#[derive(Debug)]
pub(crate) struct Region {
    pub(crate) ptr: *mut u8,
    pub(crate) len: usize,
    owned: bool,
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.owned {
            let slice = std::ptr::slice_from_raw_parts_mut(self.ptr, self.len);
            // SAFETY: an owned region's `ptr`/`len` came from `Box::into_raw` of a boxed slice
            // in `alloc_zeroed`, and only this drop frees it (regions are never cloned).
            drop(unsafe { Box::from_raw(slice) });
        }
    }
}

/// Slot tables of one process.
#[derive(Debug, Default)]
pub(crate) struct Register {
    global: Vec<Option<Region>>,
    local: Vec<Option<Region>>,
    free_global: Vec<usize>,
    free_local: Vec<usize>,
    used: usize,
    capacity: usize,
}

// SAFETY: the raw pointers in a `Register` point at memory that the registering caller promised
// (contract of `Ctx::register_global`) to keep valid and to share with the BSP layer; the register
// itself is only read by other threads while its owner waits inside a sync (threads/README.md).
unsafe impl Send for Register {}
// SAFETY: as for `Send`; shared reads never write through the pointers except in the sync's
// data phase, whose exclusivity is argued in threads/README.md.
unsafe impl Sync for Register {}

impl Register {
    /// Number of live registrations.
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// Capacity in force.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Sets the capacity (called by the owner at a sync, or when shrinking).
    pub(crate) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    /// Tries to reserve table space for `n` registrations of each kind; `false` if the
    /// allocation is impossible. Never shrinks.
    pub(crate) fn try_reserve(&mut self, n: usize) -> bool {
        let g = n.saturating_sub(self.global.len());
        let l = n.saturating_sub(self.local.len());
        self.global.try_reserve(g).is_ok()
            && self.local.try_reserve(l).is_ok()
            && self.free_global.try_reserve(g).is_ok()
            && self.free_local.try_reserve(l).is_ok()
    }

    /// Registers `len` bytes at `ptr` (or owned memory); rule 3 is checked here.
    pub(crate) fn insert(
        &mut self,
        global: bool,
        ptr: *mut u8,
        len: usize,
        owned: bool,
    ) -> Result<MemSlot, Error> {
        if self.used >= self.capacity {
            if owned {
                drop(Region { ptr, len, owned });
            }
            return Err(Error::RegisterFull { capacity: self.capacity });
        }
        let region = Some(Region { ptr, len, owned });
        let (table, free) = if global {
            (&mut self.global, &mut self.free_global)
        } else {
            (&mut self.local, &mut self.free_local)
        };
        let index = match free.pop() {
            Some(i) => {
                table[i] = region;
                i
            }
            None => {
                table.push(region);
                table.len() - 1
            }
        };
        self.used += 1;
        Ok(if global { MemSlot::global(index) } else { MemSlot::local(index) })
    }

    /// Removes a registration (rule 2), dropping owned memory.
    pub(crate) fn remove(&mut self, pid: Pid, slot: MemSlot) -> Result<(), Error> {
        self.region(pid, slot)?;
        let (table, free) = if slot.is_global() {
            (&mut self.global, &mut self.free_global)
        } else {
            (&mut self.local, &mut self.free_local)
        };
        table[slot.index()] = None;
        free.push(slot.index());
        self.used -= 1;
        Ok(())
    }

    /// The region of a live slot.
    pub(crate) fn region(&self, pid: Pid, slot: MemSlot) -> Result<&Region, Error> {
        if slot == MemSlot::INVALID {
            return Err(Error::BadSlot { pid, slot: slot.0, why: "LPF_INVALID_MEMSLOT" });
        }
        let table = if slot.is_global() { &self.global } else { &self.local };
        table.get(slot.index()).and_then(Option::as_ref).ok_or(Error::BadSlot {
            pid,
            slot: slot.0,
            why: "never registered or deregistered",
        })
    }

    /// Rule 4: pointer to `len` bytes at `offset` in `slot`.
    pub(crate) fn resolve(
        &self,
        pid: Pid,
        slot: MemSlot,
        offset: usize,
        len: usize,
    ) -> Result<*mut u8, Error> {
        let region = self.region(pid, slot)?;
        match offset.checked_add(len) {
            Some(end) if end <= region.len => Ok(region.ptr.wrapping_add(offset)),
            _ => Err(Error::OutOfBounds { pid, slot: slot.0, offset, len, slot_len: region.len }),
        }
    }

    /// Like `resolve` for the global slot with index `index` (as carried in a request).
    pub(crate) fn resolve_global(
        &self,
        pid: Pid,
        raw: usize,
        offset: usize,
        len: usize,
    ) -> Result<*mut u8, Error> {
        self.resolve(pid, MemSlot(raw), offset, len)
    }

    /// Allocates `len` zeroed bytes for an owned registration (pass the pointer to `insert` with
    /// `owned = true`, which takes over freeing it); `None` if the allocation fails.
    pub(crate) fn alloc_zeroed(len: usize) -> Option<*mut u8> {
        let mut v: Vec<u8> = Vec::new();
        v.try_reserve_exact(len).ok()?;
        v.resize(len, 0);
        Some(Box::into_raw(v.into_boxed_slice()).cast::<u8>())
    }
}

/// `Register::resolve_global` with the last slot's region cached: consecutive requests for one
/// slot (the common case in a data phase) skip the table lookup.
#[derive(Debug)]
pub(crate) struct Resolver<'a> {
    reg: &'a Register,
    pid: Pid,
    cached: Option<(usize, *mut u8, usize)>,
}

impl<'a> Resolver<'a> {
    pub(crate) fn new(reg: &'a Register, pid: Pid) -> Resolver<'a> {
        Resolver { reg, pid, cached: None }
    }

    /// Same result as `reg.resolve_global(pid, raw, offset, len)` (rule 4).
    #[inline]
    pub(crate) fn resolve(
        &mut self,
        raw: usize,
        offset: usize,
        len: usize,
    ) -> Result<*mut u8, Error> {
        let (ptr, slot_len) = match self.cached {
            Some((r, ptr, l)) if r == raw => (ptr, l),
            _ => {
                let region = self.reg.region(self.pid, MemSlot(raw))?;
                self.cached = Some((raw, region.ptr, region.len));
                (region.ptr, region.len)
            }
        };
        match offset.checked_add(len) {
            Some(end) if end <= slot_len => Ok(ptr.wrapping_add(offset)),
            _ => Err(Error::OutOfBounds { pid: self.pid, slot: raw, offset, len, slot_len }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_ids_do_not_depend_on_local_registrations() {
        let mut a = Register::default();
        let mut b = Register::default();
        a.set_capacity(10);
        b.set_capacity(10);
        let mut x = [0u8; 4];
        let px = x.as_mut_ptr();
        a.insert(false, px, 4, false).unwrap();
        a.insert(false, px, 4, false).unwrap();
        let ga = a.insert(true, px, 4, false).unwrap();
        let gb = b.insert(true, px, 4, false).unwrap();
        assert_eq!(ga, gb);
        assert!(ga.is_global());
    }

    #[test]
    fn register_capacity_is_checked() {
        let mut a = Register::default();
        a.set_capacity(1);
        a.insert(true, std::ptr::null_mut(), 0, false).unwrap();
        assert!(matches!(
            a.insert(true, std::ptr::null_mut(), 0, false),
            Err(Error::RegisterFull { capacity: 1 })
        ));
    }

    #[test]
    fn resolve_checks_bounds() {
        let mut a = Register::default();
        a.set_capacity(1);
        let mut x = [0u8; 8];
        let s = a.insert(false, x.as_mut_ptr(), 8, false).unwrap();
        assert!(a.resolve(0, s, 4, 4).is_ok());
        assert!(matches!(a.resolve(0, s, 5, 4), Err(Error::OutOfBounds { .. })));
        assert!(matches!(a.resolve(0, s, usize::MAX, 2), Err(Error::OutOfBounds { .. })));
        a.remove(0, s).unwrap();
        assert!(matches!(a.resolve(0, s, 0, 0), Err(Error::BadSlot { .. })));
    }

    #[test]
    fn resolver_agrees_with_resolve() {
        let mut a = Register::default();
        a.set_capacity(3);
        let mut x = [0u8; 8];
        let mut y = [0u8; 16];
        let sx = a.insert(true, x.as_mut_ptr(), 8, false).unwrap();
        let sy = a.insert(true, y.as_mut_ptr(), 16, false).unwrap();
        let mut r = Resolver::new(&a, 0);
        for (slot, off, len) in [(sx, 0, 8), (sx, 4, 8), (sy, 8, 8), (sy, 9, 8), (sx, 8, 0)]
            .into_iter()
            .chain([(MemSlot::INVALID, 0, 0), (MemSlot::from_raw(40), 0, 0), (sy, 0, 16)])
        {
            let want = a.resolve_global(0, slot.as_raw(), off, len);
            assert_eq!(r.resolve(slot.as_raw(), off, len), want);
        }
    }

    #[test]
    fn freed_ids_are_reused_in_order() {
        let mut a = Register::default();
        a.set_capacity(4);
        let s0 = a.insert(true, std::ptr::null_mut(), 0, false).unwrap();
        let s1 = a.insert(true, std::ptr::null_mut(), 0, false).unwrap();
        a.remove(0, s0).unwrap();
        a.remove(0, s1).unwrap();
        assert_eq!(a.insert(true, std::ptr::null_mut(), 0, false).unwrap(), s1);
        assert_eq!(a.insert(true, std::ptr::null_mut(), 0, false).unwrap(), s0);
    }
}
