//! The pair queues: the requests each process queued for each other process, and the only code
//! that touches them without a lock.
//!
//! # Contract
//! 1. Queue `Q[o→t][parity]` holds the puts and gets that process `o` issued for process `t` in
//!    the supersteps of that parity (superstep `e`, ended by sync number `e`, has parity
//!    `e & 1`), each in issue order.
//! 2. Only `o` writes its row (`Queues::outgoing`): between syncs, and at the end of a sync to
//!    clear the next superstep's parity. During sync `e` the queues of parity `e & 1` are read
//!    by everyone (`Queues::frozen`) and written by no one.
//!    Both accessors are `unsafe`: the sync protocol (threads/README.md, "Queues") is what makes
//!    the two phases disjoint.
//! 3. A message longer than [`CHUNK`] bytes is queued as consecutive chunks, in order; executing
//!    the chunks in order has the effect of the whole message.
//!
//! # Costs
//! A request is 24 bytes; pushing is amortised O(1) (the queues grow on demand and keep their
//! memory across supersteps). Each queue sits in its own cache line.

use std::cell::UnsafeCell;

use crossbeam_utils::CachePadded;

/// A queued put: source resolved at the origin, destination resolved at the target. 24 bytes:
/// in a large all-to-all of small messages the queues' memory traffic is most of the cost, so
/// the slot id and length are 32-bit (longer messages are queued as several chunks, in order).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PutReq {
    pub(crate) src: *const u8,
    pub(crate) dst_offset: usize,
    pub(crate) dst_slot: u32,
    pub(crate) len: u32,
}

/// A queued get: destination resolved at the origin, source resolved at the sync (24 bytes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GetReq {
    pub(crate) dst: *mut u8,
    pub(crate) src_offset: usize,
    pub(crate) src_slot: u32,
    pub(crate) len: u32,
}

const _: () = assert!(std::mem::size_of::<PutReq>() == 24 && std::mem::size_of::<GetReq>() == 24);

/// Largest chunk one request carries; longer messages become consecutive chunks (tiny in unit
/// tests, so that the chunking is exercised). The `Checked` backend's target-end count counts
/// each chunk.
pub(crate) const CHUNK: usize = if cfg!(test) { 16 } else { 1 << 31 };

/// Requests from one origin to one target for one superstep parity.
#[derive(Debug, Default)]
pub(crate) struct PairQueue {
    pub(crate) puts: Vec<PutReq>,
    pub(crate) gets: Vec<GetReq>,
}

impl PairQueue {
    /// Number of requests (chunks) queued.
    pub(crate) fn len(&self) -> usize {
        self.puts.len() + self.gets.len()
    }

    /// Queues a put of `len` bytes from `src` to `dst_offset` in the target's global slot
    /// `dst_slot`, as chunks of at most [`CHUNK`] bytes (rule 3). The caller checked that
    /// `dst_offset + len` does not overflow.
    #[inline]
    pub(crate) fn push_put(
        &mut self,
        src: *const u8,
        dst_slot: u32,
        dst_offset: usize,
        len: usize,
    ) {
        if len <= CHUNK {
            self.puts.push(PutReq { src, dst_offset, dst_slot, len: len as u32 });
        } else {
            let end = dst_offset + len;
            let mut at = 0;
            while at < len {
                let n = (len - at).min(CHUNK);
                let src = src.wrapping_add(at);
                self.puts.push(PutReq { src, dst_offset: end - len + at, dst_slot, len: n as u32 });
                at += n;
            }
        }
    }

    /// Queues a get of `len` bytes from `src_offset` in the target's global slot `src_slot` to
    /// `dst`, as chunks (rule 3). The caller checked that `src_offset + len` does not overflow.
    #[inline]
    pub(crate) fn push_get(&mut self, dst: *mut u8, src_slot: u32, src_offset: usize, len: usize) {
        if len <= CHUNK {
            self.gets.push(GetReq { dst, src_offset, src_slot, len: len as u32 });
        } else {
            let end = src_offset + len;
            let mut at = 0;
            while at < len {
                let n = (len - at).min(CHUNK);
                let dst = dst.wrapping_add(at);
                self.gets.push(GetReq { dst, src_offset: end - len + at, src_slot, len: n as u32 });
                at += n;
            }
        }
    }

    /// Empties the queue, keeping its memory.
    pub(crate) fn clear(&mut self) {
        self.puts.clear();
        self.gets.clear();
    }
}

/// All pair queues of a section: `p × p × 2`, index `(origin * p + target) * 2 + parity`.
#[derive(Debug)]
pub(crate) struct Queues {
    p: usize,
    cells: Box<[CachePadded<UnsafeCell<PairQueue>>]>,
}

// SAFETY: the `UnsafeCell`s are accessed only through `outgoing` and `frozen`, whose contracts
// (rule 2) keep every queue either written by its origin alone or read by everyone, never both
// at once. The raw pointers inside requests point at registered memory, valid per the
// registration contract (`Ctx::register_global`); they are dereferenced only in the data phase.
unsafe impl Sync for Queues {}
// SAFETY: as for `Sync`; nothing in the queues is tied to the thread that created them.
unsafe impl Send for Queues {}

impl Queues {
    /// Empty queues for `p` processes.
    pub(crate) fn new(p: usize) -> Queues {
        let mk_queue = || CachePadded::new(UnsafeCell::new(PairQueue::default()));
        Queues { p, cells: (0..p * p * 2).map(|_| mk_queue()).collect() }
    }

    #[inline]
    fn cell(&self, origin: usize, target: usize, parity: usize) -> *mut PairQueue {
        self.cells[(origin * self.p + target) * 2 + parity].get()
    }

    /// The queue `Q[origin→target][parity]`, for its origin to write.
    ///
    /// # Safety
    /// The caller is process `origin`, holds no other reference to this queue, and no one reads
    /// the queues of `parity` now (threads/README.md, "Queues"): either the caller is between
    /// syncs and `parity` is its current superstep's, or it is at the end of sync `e` (past
    /// B1(e)) and `parity` is superstep `e + 1`'s, last read in sync `e − 1`, whose readers all
    /// finished before they entered B1(e).
    #[inline]
    #[allow(clippy::mut_from_ref)] // exclusive by the caller's promise (# Safety)
    pub(crate) unsafe fn outgoing(
        &self,
        origin: usize,
        target: usize,
        parity: usize,
    ) -> &mut PairQueue {
        // SAFETY: by this function's contract only `origin` touches row `origin` of this parity
        // now, and it holds no other reference to the queue.
        unsafe { &mut *self.cell(origin, target, parity) }
    }

    /// Read access to the queues of `parity`, during a sync.
    ///
    /// # Safety
    /// The caller is inside sync number `e` with `parity == e & 1`, has passed barrier B1(e),
    /// and drops the view and every reference it handed out before it enters B1(e + 1). Then
    /// every origin's writes of this parity happened before B1(e), and no origin writes this
    /// parity again before B1(e + 1) (threads/README.md, "Queues").
    pub(crate) unsafe fn frozen(&self, parity: usize) -> Frozen<'_> {
        Frozen { queues: self, parity }
    }
}

/// The queues of one parity while a sync reads them (see [`Queues::frozen`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frozen<'a> {
    queues: &'a Queues,
    parity: usize,
}

impl<'a> Frozen<'a> {
    /// The queue `Q[origin→target]` of the frozen parity.
    #[inline]
    pub(crate) fn queue(&self, origin: usize, target: usize) -> &'a PairQueue {
        // SAFETY: a `Frozen` exists only between B1(e) and B1(e + 1) of its parity (contract of
        // `Queues::frozen`), when no one writes these queues.
        unsafe { &*self.queues.cell(origin, target, self.parity) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rule 3: the chunks of a long message are consecutive, in order, at most `CHUNK` bytes
    /// each, and cover exactly the message.
    #[test]
    fn long_messages_become_consecutive_chunks() {
        let mut bytes = [0u8; 100];
        for len in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK, 3 * CHUNK + 5] {
            let mut q = PairQueue::default();
            q.push_put(bytes.as_ptr(), 7, 1000, len);
            q.push_get(bytes.as_mut_ptr(), 9, 2000, len);
            assert_eq!(q.len(), 2 * len.div_ceil(CHUNK).max(1), "len {len}");
            let (mut at, base) = (0, bytes.as_ptr() as usize);
            for r in &q.puts {
                assert!(r.len as usize <= CHUNK && r.dst_slot == 7);
                assert_eq!((r.src as usize - base, r.dst_offset), (at, 1000 + at));
                at += r.len as usize;
            }
            assert_eq!(at, len);
            at = 0;
            for r in &q.gets {
                assert!(r.len as usize <= CHUNK && r.src_slot == 9);
                assert_eq!((r.dst as usize - base, r.src_offset), (at, 2000 + at));
                at += r.len as usize;
            }
            assert_eq!(at, len);
            q.clear();
            assert_eq!(q.len(), 0);
        }
    }
}
