//! io_uring reads into pool buffers, with the unsafety of "the kernel writes later" fenced by
//! ownership.
//!
//! # Contract
//! 1. A [`ReadOp`] owns everything the kernel touches for one read (the file and the pool
//!    buffer) from [`Ring::push`] until [`Ring::reap`] hands it back with its result.
//! 2. At most `entries` reads are in flight; `push` hands the op back (`Err(op)`) when full.
//! 3. `Drop for Ring` waits for every read in flight to complete before the ops (and so the
//!    buffers) are freed. If the kernel refuses to wait, the ops are leaked, never freed early.
//!
//! # Threads and costs
//! A `Ring` belongs to one I/O thread (`Send`, not shared). `push` writes one SQE;
//! `submit_and_wait` is one `io_uring_enter` for the whole batch.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use io_uring::{IoUring, opcode, types};

use crate::pool::PoolBuf;

/// One read and everything it owns (rule 1).
#[derive(Debug)]
pub(crate) struct ReadOp {
    /// The file read from; kept open while the read is in flight.
    pub(crate) file: Arc<File>,
    /// Where the bytes go.
    pub(crate) buf: PoolBuf,
    /// File offset of `buf[0]`.
    pub(crate) offset: u64,
    /// Bytes already read into `buf[..done]` (a short read is resubmitted for the rest).
    pub(crate) done: usize,
    /// Bytes asked for in all: `buf[..len]` at `offset`.
    pub(crate) len: usize,
    /// The caller's tag (the chunk index).
    pub(crate) tag: usize,
    /// The caller's timestamp of the first submission (ns since the run started).
    pub(crate) submitted_ns: u64,
}

/// An io_uring instance and the reads in flight on it.
pub(crate) struct Ring {
    ring: IoUring,
    /// Slot `i` holds the op whose SQE carries `user_data == i`.
    slots: Vec<Option<ReadOp>>,
    free_slots: Vec<usize>,
    /// SQEs pushed but not yet submitted.
    unsubmitted: usize,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").field("inflight", &self.inflight()).finish()
    }
}

impl Ring {
    /// A ring for up to `entries` reads in flight.
    pub(crate) fn new(entries: u32) -> std::io::Result<Ring> {
        let entries = entries.max(1);
        let ring = IoUring::new(entries.next_power_of_two())?;
        let n = entries as usize;
        Ok(Ring {
            ring,
            slots: (0..n).map(|_| None).collect(),
            free_slots: (0..n).rev().collect(),
            unsubmitted: 0,
        })
    }

    /// Reads in flight (pushed and not reaped).
    pub(crate) fn inflight(&self) -> usize {
        self.slots.len() - self.free_slots.len()
    }

    /// Room for another read (rule 2).
    pub(crate) fn has_room(&self) -> bool {
        !self.free_slots.is_empty()
    }

    /// Queues a read of `op.buf[op.done..op.len]` at `op.offset + op.done`; it starts at the next
    /// `submit_and_wait`. Returns the slot (a small integer below `entries`, stable while the
    /// read is in flight) or hands the op back when the ring is full.
    pub(crate) fn push(&mut self, mut op: ReadOp) -> Result<usize, ReadOp> {
        assert!(op.done < op.len && op.len <= op.buf.len());
        let Some(slot) = self.free_slots.pop() else { return Err(op) };
        let Ok(len) = u32::try_from(op.len - op.done) else {
            self.free_slots.push(slot);
            return Err(op);
        };
        // SAFETY: done < len <= buf.len(), so the pointer stays inside the buffer.
        let ptr = unsafe { op.buf.as_mut_ptr().add(op.done) };
        let sqe = opcode::Read::new(types::Fd(op.file.as_raw_fd()), ptr, len)
            .offset(op.offset + op.done as u64)
            .build()
            .user_data(slot as u64);
        self.slots[slot] = Some(op);
        // SAFETY: the kernel reads the fd and writes `len` bytes at `ptr` until the completion
        // tagged `slot` is reaped. (1) The fd stays open: `slots[slot]` holds an `Arc<File>`.
        // (2) The bytes stay valid: `slots[slot]` holds the `PoolBuf`, whose memory never moves
        // (it is one block of the pool's single allocation). (3) Both stay in `slots[slot]` until
        // `reap` sees that completion, and `Drop` waits for all completions (rule 3).
        let pushed = unsafe { self.ring.submission().push(&sqe) };
        if pushed.is_err() {
            // The SQ is sized for every slot, so this does not happen; hand the op back anyway.
            self.free_slots.push(slot);
            return Err(self.slots[slot].take().expect("slot just filled"));
        }
        self.unsubmitted += 1;
        Ok(slot)
    }

    /// Submits every queued read and waits until at least `want` completions are ready.
    pub(crate) fn submit_and_wait(&mut self, want: usize) -> std::io::Result<()> {
        let want = want.min(self.inflight());
        loop {
            match self.ring.submit_and_wait(want) {
                Ok(_) => {
                    self.unsubmitted = 0;
                    return Ok(());
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && want == 0 => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Hands back every completed op with the kernel's result (bytes read, or `-errno`) and its
    /// slot (rule 1).
    pub(crate) fn reap(&mut self, out: &mut Vec<(ReadOp, i32, usize)>) {
        for cqe in self.ring.completion() {
            let slot = cqe.user_data() as usize;
            if let Some(op) = self.slots.get_mut(slot).and_then(Option::take) {
                self.free_slots.push(slot);
                out.push((op, cqe.result(), slot));
            }
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // Rule 3: the kernel may still write into buffers of reads in flight.
        let mut done = Vec::new();
        while self.inflight() > 0 {
            if self.submit_and_wait(1).is_err() {
                // Cannot wait: leak what is in flight rather than free memory the kernel may
                // still write to.
                for op in self.slots.drain(..).flatten() {
                    std::mem::forget(op);
                }
                return;
            }
            self.reap(&mut done);
            done.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::BufPool;
    use std::io::Write;

    #[test]
    fn push_owns_buffer_until_reap_and_full_ring_hands_op_back() {
        let mut ring = match Ring::new(2) {
            Ok(r) => r,
            Err(e) => {
                println!("skipping: io_uring unavailable: {e}");
                return;
            }
        };
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        let data: Vec<u8> = (0..3 * 4096u32).map(|i| (i % 251) as u8).collect();
        tmp.write_all(&data).unwrap();
        let file = Arc::new(File::open(tmp.path()).unwrap());
        let pool = BufPool::new(4096, 3).unwrap();
        for i in 0..2u64 {
            let op = ReadOp {
                file: file.clone(),
                buf: pool.acquire().unwrap(),
                offset: i * 4096,
                done: 0,
                len: 4096,
                tag: i as usize,
                submitted_ns: 0,
            };
            ring.push(op).unwrap();
        }
        let extra = ReadOp {
            file: file.clone(),
            buf: pool.acquire().unwrap(),
            offset: 0,
            done: 0,
            len: 4096,
            tag: 9,
            submitted_ns: 0,
        };
        assert!(ring.push(extra).is_err(), "rule 2: a full ring hands the op back");
        let mut out = Vec::new();
        while out.len() < 2 {
            ring.submit_and_wait(1).unwrap();
            ring.reap(&mut out);
        }
        for (op, res, _) in &out {
            assert_eq!(*res, 4096);
            let at = op.tag * 4096;
            assert_eq!(&op.buf.bytes()[..4096], &data[at..at + 4096]);
        }
        assert_eq!(ring.inflight(), 0);
    }

    #[test]
    fn drop_waits_for_reads_in_flight() {
        let Ok(mut ring) = Ring::new(4) else {
            println!("skipping: io_uring unavailable");
            return;
        };
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        tmp.write_all(&vec![1u8; 16 << 10]).unwrap();
        let file = Arc::new(File::open(tmp.path()).unwrap());
        let pool = BufPool::new(16 << 10, 4).unwrap();
        for _ in 0..4 {
            let op = ReadOp {
                file: file.clone(),
                buf: pool.acquire().unwrap(),
                offset: 0,
                done: 0,
                len: 16 << 10,
                tag: 0,
                submitted_ns: 0,
            };
            ring.push(op).unwrap();
        }
        ring.submit_and_wait(0).unwrap();
        drop(ring);
        // Every buffer came home, so every read completed before its buffer was freed.
        assert_eq!((0..4).filter_map(|_| pool.try_acquire()).count(), 4);
    }
}
