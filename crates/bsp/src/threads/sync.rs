//! `sync` of the threads backend: barrier B1, data phase, pairwise completion, recycling
//! (threads/README.md tells the protocol and argues the unsafe accesses).
//!
//! # Costs
//! One dissemination barrier (⌈log₂ p⌉ cache-line transfers on the critical path), an O(p)
//! scan of pair-queue headers, and h bytes of copying at the destination; an empty sync stops
//! after the barrier.

use std::sync::atomic::Ordering;

use super::checked;
use super::process::Process;
use super::queues::Frozen;
use super::wait;
use crate::memreg::Resolver;
use crate::{Error, Pid};

impl Process {
    /// LPF's `lpf_sync` on this process (see [`Ctx::sync`](crate::Ctx::sync)).
    pub(crate) fn run_sync(&mut self) -> Result<(), Error> {
        self.check_live()?;
        let group = self.group.clone();
        let g = &*group;
        let (me, p) = (self.pid, g.p);
        let e = self.epoch + 1;
        let par = (e & 1) as usize;
        if g.checked {
            // Relaxed: B1's Release/Acquire chain publishes it.
            g.procs[me].reg_hash[par].store(self.reg_hash, Ordering::Relaxed);
        }
        let flags = &g.flags_view;
        let any = self.used > 0 || g.checked;
        let Some(any) = wait::barrier(flags, &g.wakers_view, &g.fail_epoch, me, e, any) else {
            return Err(self.fatal(Error::PeerFailed));
        };
        if !any {
            // No process queued anything: nothing to copy, nobody to wait for (rule 3).
            self.finish_sync(e);
            return Ok(());
        }
        // Data phase (rule 2). Every queue of parity `par` is frozen until B1(e + 1).
        // SAFETY: this is sync `e`, `par == e & 1`, B1(e) has passed, and the view (and every
        // queue reference taken from it) is dropped before this function returns, so before
        // this process enters B1(e + 1).
        let queues = unsafe { g.queues.frozen(par) };
        let mut err: Option<Error> = None;
        let mut count = 0usize;
        self.partners.clear();
        for j in 0..p {
            let (out_len, in_len) = (queues.queue(me, j).len(), queues.queue(j, me).len());
            count += out_len + in_len;
            if j != me && (out_len > 0 || in_len > 0) {
                self.partners.push(j);
            }
        }
        if g.checked && count > self.msg_capacity {
            let capacity = self.msg_capacity;
            err = Some(Error::QueueOverflow { pid: me as Pid, count, capacity });
        }
        if err.is_none() && g.checked {
            err = checked::check_sync(g, &queues, me, par, self.reg()).err();
        }
        if err.is_none() {
            err = self.execute(&queues).err();
        }
        // Release: publishes this process's copies and ends its reads of peers' memory; pairs
        // with the Acquire in the partners' wait below.
        g.procs[me].done.store(e, Ordering::Release);
        for &j in &self.partners {
            g.waker(j).signal();
        }
        for &j in &self.partners {
            let done = &g.procs[j].done;
            wait::wait(g.waker(me), || done.load(Ordering::Acquire) >= e, || false);
        }
        self.finish_sync(e);
        match err {
            Some(e) => Err(self.fatal(e)),
            None => Ok(()),
        }
    }

    /// End of sync `e`: recycle the queues the next superstep writes, apply pending resizes.
    fn finish_sync(&mut self, e: u64) {
        let g = &*self.group;
        let next = ((e + 1) & 1) as usize;
        if self.dirty[next] {
            for j in 0..g.p {
                // SAFETY: this process owns row `pid`; parity `next` was last read in sync e - 1,
                // whose readers all finished before they entered B1(e).
                unsafe { g.queues.outgoing(self.pid, j, next) }.clear();
            }
            self.dirty[next] = false;
        }
        self.epoch = e;
        self.used = 0;
        self.reg_hash = 0;
        if let Some(c) = self.pending_msg_capacity.take() {
            self.msg_capacity = c;
        }
        if let Some(c) = self.pending_reg_capacity.take() {
            self.reg_mut().set_capacity(c);
        }
    }

    /// The copies of the data phase: puts queued to this process, then gets it queued.
    fn execute(&self, queues: &Frozen<'_>) -> Result<(), Error> {
        let g = &*self.group;
        let me = self.pid;
        let mut mine = Resolver::new(self.reg(), me as Pid);
        let mut first_err = None;
        for j in 0..g.p {
            let q = queues.queue(j, me);
            for r in &q.puts {
                let len = r.len as usize;
                match mine.resolve(r.dst_slot as usize, r.dst_offset, len) {
                    // SAFETY: `r.src` was bounds-checked at the origin against a registered
                    // slot whose memory stays valid until this sync returns (registration
                    // contract; the origin waits for our `done`); `dst` is in bounds of our
                    // own slot. Only this thread writes our memory now (rule 2); `copy` allows
                    // overlap (an illegal but possible self-overlap).
                    Ok(dst) => unsafe { copy_bytes(r.src, dst, len) },
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        for j in 0..g.p {
            let q = queues.queue(me, j);
            if q.gets.is_empty() {
                continue;
            }
            // SAFETY: process j is inside this sync until it sees our `done` (we are its
            // partner), so its register is not being mutated.
            let mut theirs = Resolver::new(unsafe { &*g.register(j) }, j as Pid);
            for r in &q.gets {
                let len = r.len as usize;
                match theirs.resolve(r.src_slot as usize, r.src_offset, len) {
                    // SAFETY: `src` is in bounds of j's registered slot, valid while j waits in
                    // this sync; `r.dst` was bounds-checked at the get against our own slot.
                    Ok(src) => unsafe { copy_bytes(src, r.dst, len) },
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// `ptr::copy` (memmove), with the common 1-, 2-, 4-, 8- and 16-byte cases inlined: a library
/// call per tiny message would dominate a large all-to-all of them.
///
/// # Safety
/// As for `std::ptr::copy::<u8>(src, dst, len)`.
#[inline(always)]
unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    // A put or get onto its own source (a process putting a slot's bytes to the same place in
    // its own slot) copies nothing: skipped, it does not write bytes that other processes may
    // be reading as the source of their puts in this same data phase. ThreadSanitizer found
    // that write racing a peer's read (`hook_turns_existing_threads_into_a_section`: every
    // process puts `buf[s]` to `buf[s]` everywhere, itself included).
    if std::ptr::eq(src, dst) {
        return;
    }
    match len {
        // SAFETY: the caller guarantees 1 readable byte at `src` and 1 writable at `dst`.
        1 => unsafe { dst.write(src.read()) },
        // SAFETY: as below, with 2 bytes.
        2 => unsafe { dst.cast::<u16>().write_unaligned(src.cast::<u16>().read_unaligned()) },
        // SAFETY: as below, with 4 bytes.
        4 => unsafe { dst.cast::<u32>().write_unaligned(src.cast::<u32>().read_unaligned()) },
        // SAFETY: the caller guarantees 8 readable bytes at `src` and 8 writable at `dst`;
        // unaligned accesses are allowed; reading fully before writing gives memmove semantics.
        8 => unsafe { dst.cast::<u64>().write_unaligned(src.cast::<u64>().read_unaligned()) },
        // SAFETY: as above, with 16 bytes.
        16 => unsafe { dst.cast::<u128>().write_unaligned(src.cast::<u128>().read_unaligned()) },
        // SAFETY: forwarded caller guarantee.
        _ => unsafe { std::ptr::copy(src, dst, len) },
    }
}
