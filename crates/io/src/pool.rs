//! Fixed pool of aligned buffers shared by I/O threads and compute workers.
//!
//! # Contract
//! 1. Every buffer is [`ALIGN`]-aligned and `buf_size` bytes (a multiple of [`ALIGN`]), fit for
//!    `O_DIRECT`.
//! 2. A buffer has one owner at a time: the pool, one in-flight read, or one [`PoolBuf`].
//!    Ownership moves by address (a `PoolBuf` is an index and a pointer), never by copy.
//! 3. `acquire` waits while the pool is empty and returns `None` once the pool is closed
//!    (a cancelled run); it never allocates. Memory is allocated once, in [`BufPool::new`], and
//!    freed when the last `PoolBuf` and the pool itself are gone.
//! 4. Buffers start zeroed, so reading any byte of one is defined even before a read fills it.
//!
//! 5. A kernel may *hold* a buffer past its block ([`HeldBytes`], issue 12 item 4: bytes put
//!    to another process straight from the buffer). A hold is granted only while at most half
//!    the buffers are held (the rest keep reads and compute overlapping), or once every read
//!    of the run is claimed ([`BufPool::drain`],
//!    which also closes the pool so that no thread waits for a buffer that may never come
//!    back). Held bytes are immutable: a held buffer is shared (`Arc`), and writing needs the
//!    unique `&mut PoolBuf`. The pool's memory, and the budget reserved for it, live until the
//!    last held buffer is dropped.
//!
//! # Threads and costs
//! `BufPool` is `Send + Sync`. `acquire`/`release` are one lock of [`Queue`] each; a hold is one
//! atomic update.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::memory::Reservation;
use crate::queue::Queue;
use crate::sys::AnonRegion;

/// Alignment of every buffer and of every O_DIRECT offset and length.
pub(crate) const ALIGN: usize = 4096;

/// See the module contract.
#[derive(Debug)]
pub(crate) struct BufPool {
    /// Owns the memory (unmapped when the pool drops, after every `PoolBuf` came home).
    _region: AnonRegion,
    base: *mut u8,
    buf_size: usize,
    count: usize,
    free: Queue<usize>,
    /// Buffers held past their block (rule 5).
    held: AtomicUsize,
    /// Every read of the run is claimed (rule 5).
    drained: AtomicBool,
    /// The budget held for the memory, released with it (rule 5).
    _reservation: Option<Reservation>,
}

// SAFETY: the pool owns the allocation behind `base`; the bytes of buffer `i` are touched only by
// the unique owner of index `i` (contract rule 2, enforced by `free` handing each index out once),
// so sharing the pool between threads shares no bytes.
unsafe impl Send for BufPool {}
// SAFETY: as for `Send`; every `&self` method goes through the `Queue`'s mutex.
unsafe impl Sync for BufPool {}

impl BufPool {
    /// Allocates `count` buffers of `buf_size` bytes. `buf_size` must be a non-zero multiple of
    /// [`ALIGN`] and `count` non-zero.
    #[cfg(test)]
    pub(crate) fn new(buf_size: usize, count: usize) -> std::io::Result<Arc<BufPool>> {
        BufPool::reserved(buf_size, count, None)
    }

    /// [`BufPool::new`], keeping `reservation` until the memory is freed (rule 5).
    pub(crate) fn reserved(
        buf_size: usize,
        count: usize,
        reservation: Option<Reservation>,
    ) -> std::io::Result<Arc<BufPool>> {
        assert!(buf_size > 0 && buf_size.is_multiple_of(ALIGN) && count > 0);
        let total = buf_size
            .checked_mul(count)
            .ok_or_else(|| std::io::Error::other("buffer pool size overflows"))?;
        let region = AnonRegion::new(total)?;
        let base = region.base();
        let free = Queue::new();
        (0..count).for_each(|i| free.push(i));
        Ok(Arc::new(BufPool {
            _region: region,
            base,
            buf_size,
            count,
            free,
            held: AtomicUsize::new(0),
            drained: AtomicBool::new(false),
            _reservation: reservation,
        }))
    }

    /// A free buffer, waiting for one if needed; `None` once the pool is closed (rule 3).
    pub(crate) fn acquire(self: &Arc<Self>) -> Option<PoolBuf> {
        self.free.pop().map(|index| self.buf(index))
    }

    /// A free buffer if one is there now.
    pub(crate) fn try_acquire(self: &Arc<Self>) -> Option<PoolBuf> {
        self.free.try_pop().map(|index| self.buf(index))
    }

    /// Wakes every `acquire` and makes it return `None` from now on when the pool is empty.
    pub(crate) fn close(&self) {
        self.free.close();
    }

    /// Says that every read of the run is claimed: holds may take the last buffers, and the
    /// pool closes (rule 5).
    pub(crate) fn drain(&self) {
        // Release: a worker that sees the flag (Acquire in `hold`) sees the claims before it.
        self.drained.store(true, Ordering::Release);
        self.close();
    }

    /// Counts one more held buffer if rule 5 allows it.
    fn try_hold(&self) -> bool {
        let drained = self.drained.load(Ordering::Acquire);
        // Relaxed: the counter orders nothing but itself; fetch_update makes check and add one
        // atomic step, so two workers cannot both take the last allowed hold.
        self.held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {
                (2 * (h + 1) <= self.count || drained).then_some(h + 1)
            })
            .is_ok()
    }

    fn buf(self: &Arc<Self>, index: usize) -> PoolBuf {
        debug_assert!(index < self.count);
        // SAFETY: index < count, so the offset stays inside the one allocation of
        // `count * buf_size` bytes.
        let ptr = unsafe { self.base.add(index * self.buf_size) };
        PoolBuf { pool: self.clone(), index, ptr }
    }
}

/// The owner of one pool buffer (contract rule 2). Dropping it gives the buffer back.
#[derive(Debug)]
pub(crate) struct PoolBuf {
    pool: Arc<BufPool>,
    index: usize,
    ptr: *mut u8,
}

// SAFETY: a `PoolBuf` is the unique owner of its bytes (rule 2), like a `Box<[u8]>`.
unsafe impl Send for PoolBuf {}
// SAFETY: `&PoolBuf` only gives out `&[u8]`; mutation needs `&mut PoolBuf`.
unsafe impl Sync for PoolBuf {}

impl PoolBuf {
    /// The whole buffer.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` points at `buf_size` initialised bytes (rule 4) owned by `self` alone
        // (rule 2) for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.pool.buf_size) }
    }

    /// The whole buffer, writable.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.pool.buf_size) }
    }

    /// The start of the buffer, for a read the kernel completes later. Valid while `self` lives.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    /// Bytes in the buffer.
    pub(crate) fn len(&self) -> usize {
        self.pool.buf_size
    }
}

impl Drop for PoolBuf {
    fn drop(&mut self) {
        self.pool.free.push(self.index);
    }
}

/// Bytes of a pool buffer that a kernel holds past its block (rule 5): they stay valid and
/// unchanged until this is dropped, which gives the buffer back.
#[derive(Debug)]
pub struct HeldBytes {
    buf: Arc<PoolBuf>,
    start: usize,
    len: usize,
}

impl HeldBytes {
    /// Holds `buf[start..start + len]` if rule 5 allows it.
    pub(crate) fn hold(buf: &Arc<PoolBuf>, start: usize, len: usize) -> Option<HeldBytes> {
        assert!(start + len <= buf.len());
        buf.pool.try_hold().then(|| HeldBytes { buf: buf.clone(), start, len })
    }

    /// The held bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf.bytes()[self.start..self.start + self.len]
    }

    /// The first held byte, for registering the bytes with a communication layer that only
    /// reads them (they are never written while held: no `&mut PoolBuf` exists). Valid for
    /// `len()` bytes while `self` lives.
    pub fn as_ptr(&self) -> *const u8 {
        self.bytes().as_ptr()
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Returns true if and only if no byte is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        self.buf.pool.held.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_buffer_is_aligned_and_full_size() {
        let pool = BufPool::new(2 * ALIGN, 3).unwrap();
        let bufs: Vec<_> = (0..3).map(|_| pool.acquire().unwrap()).collect();
        for b in &bufs {
            assert_eq!(b.bytes().as_ptr() as usize % ALIGN, 0);
            assert_eq!(b.len(), 2 * ALIGN);
            assert!(b.bytes().iter().all(|&x| x == 0), "rule 4: buffers start zeroed");
        }
        let mut addrs: Vec<_> = bufs.iter().map(|b| b.bytes().as_ptr() as usize).collect();
        addrs.sort();
        addrs.dedup();
        assert_eq!(addrs.len(), 3, "rule 2: each buffer has one owner");
    }

    #[test]
    fn acquire_returns_none_once_closed_and_empty() {
        let pool = BufPool::new(ALIGN, 1).unwrap();
        let held = pool.acquire().unwrap();
        assert!(pool.try_acquire().is_none());
        pool.close();
        assert!(pool.acquire().is_none());
        drop(held);
        assert!(pool.acquire().is_some(), "a buffer returned after close is handed out");
    }

    #[test]
    fn holds_take_at_most_half_the_buffers_until_the_pool_is_drained() {
        let pool = BufPool::new(ALIGN, 5).unwrap();
        let _others = [pool.acquire().unwrap(), pool.acquire().unwrap()];
        let mut a = pool.acquire().unwrap();
        a.bytes_mut()[..4].copy_from_slice(b"abcd");
        let (a, b) = (Arc::new(a), Arc::new(pool.acquire().unwrap()));
        let ha = HeldBytes::hold(&a, 1, 2).expect("1 of 5 held");
        let hb = HeldBytes::hold(&b, 0, 1).expect("2 of 5 held");
        let c = Arc::new(pool.acquire().unwrap());
        assert!(HeldBytes::hold(&c, 0, 1).is_none(), "3 of 5 would be more than half");
        drop((a, b));
        assert_eq!(ha.bytes(), b"bc", "held bytes outlive the block's owner");
        assert!(pool.try_acquire().is_none(), "held buffers stay out of the pool");
        pool.drain();
        let hc = HeldBytes::hold(&c, 0, 1).expect("every read claimed: nothing waits");
        drop((c, hc, hb, _others));
        let back: Vec<_> = std::iter::from_fn(|| pool.try_acquire()).collect();
        assert_eq!(back.len(), 4, "all but the one still held");
        drop(ha);
        assert!(pool.acquire().is_some(), "a drained pool still hands out what comes back");
        assert_eq!(pool.held.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn the_reservation_lives_as_long_as_a_held_buffer() {
        let budget = crate::Budget::unlimited();
        let before = budget.available();
        let res = budget.reserve("pool", 2 * ALIGN as u64).unwrap();
        let pool = BufPool::reserved(ALIGN, 2, Some(res)).unwrap();
        pool.drain();
        let held = HeldBytes::hold(&Arc::new(pool.acquire().unwrap()), 0, 8).unwrap();
        drop(pool);
        assert_eq!(budget.available(), before - 2 * ALIGN as u64);
        drop(held);
        assert_eq!(budget.available(), before);
    }

    #[test]
    fn buffer_moves_between_threads_by_address() {
        let pool = BufPool::new(ALIGN, 2).unwrap();
        let mut b = pool.acquire().unwrap();
        b.bytes_mut()[0] = 42;
        let addr = b.bytes().as_ptr() as usize;
        let (got, addr2) =
            std::thread::spawn(move || (b.bytes()[0], b.bytes().as_ptr() as usize)).join().unwrap();
        assert_eq!((got, addr2), (42, addr));
        assert_eq!(pool.try_acquire().into_iter().count(), 1);
    }
}
