//! `sync` on the MPI backend, message-based like LPF's `mpimsg` engine (see `../mpi.rs`):
//!
//! 1. **Header round**: one `MPI_Alltoall` of a record per pair: the sender's status (running,
//!    failed, left its SPMD function), how many puts it sends to and gets it asks of the
//!    receiver, and its registration hash. A non-running status anywhere fails every process's
//!    sync (they all see the same statuses); no traffic anywhere ends an empty sync here.
//! 2. **Descriptors**: each origin sends the (slot, offset, length) of its puts and gets to
//!    the pair's other end, point to point, only between pairs with requests.
//! 3. **Payloads**, per direction of each pair: the puts' bytes, then the served gets' bytes,
//!    then (when the receiver asked for gets) a 3-word trailer reporting a bad get. Both ends
//!    list the blocks in that order; small blocks travel packed in one message, large ones
//!    (≥ 64 KiB) as messages of their own straight from and into registered memory (raw.rs).
//!    Destinations that overlap another incoming message land in a staging buffer and are
//!    copied afterwards in (origin, issue) order: concurrent writes resolve as a serial order
//!    of whole messages.
//!
//! A bad remote slot or bound is found at the end that resolves it (put: the target; get:
//! the server, which sends zeros and reports it in the trailer so the requester fails this
//! sync); the transfers still complete, so peers finish this sync and fail the next one.

use super::process::MpiProcess;
use super::raw::{self, Transfers};
use crate::threads::checked::first_overlap;
use crate::{Error, MemSlot, Pid};

/// Header record words per pair: status, puts, gets, registration hash.
const HDR: usize = 4;
pub(crate) const RUNNING: u64 = 0;
pub(crate) const FAILED: u64 = 1;
pub(crate) const EXITED: u64 = 2;
const TAG_META: i32 = 0x5b1;
const TAG_DATA: i32 = 0x5b2;

/// A destination that overlapped another one: copied from staging after the transfers.
struct Staged {
    dst: *mut u8,
    at: usize,
    len: usize,
}

impl MpiProcess {
    /// Step 1 with `status`; returns the received records (HDR words per peer).
    pub(crate) fn header_round(&mut self, status: u64) -> Vec<u64> {
        let p = self.p;
        let mut send = vec![0u64; HDR * p];
        for j in 0..p {
            let rec = &mut send[HDR * j..][..HDR];
            rec[0] = status;
            rec[1] = self.puts[j].len() as u64;
            rec[2] = self.gets[j].len() as u64;
            rec[3] = self.reg_hash;
        }
        let mut recv = vec![0u64; HDR * p];
        raw::alltoall_u64(self.comm, &send, &mut recv, HDR);
        recv
    }

    pub(crate) fn run_sync(&mut self) -> Result<(), Error> {
        if self.dead {
            return Err(if self.poisoned { Error::Poisoned } else { Error::PeerFailed });
        }
        let status = if self.poisoned { FAILED } else { RUNNING };
        let hdr = self.header_round(status);
        let p = self.p;
        if (0..p).any(|j| hdr[HDR * j] != RUNNING) {
            self.dead = true;
            self.clear();
            if self.poisoned {
                return Err(Error::Poisoned);
            }
            self.poisoned = true;
            return Err(Error::PeerFailed);
        }
        let mut result = Ok(());
        if self.checked && (0..p).any(|j| hdr[HDR * j + 3] != hdr[3]) {
            let what = "global registrations or deregistrations since the last sync differ \
                        between processes (they must be collective, in the same order)";
            result = Err(Error::Checked { pid: self.pid as Pid, what: what.to_string() });
        } else if self.dirty || (0..p).any(|j| hdr[HDR * j + 1] + hdr[HDR * j + 2] > 0) {
            result = self.exchange(&hdr);
        }
        self.clear();
        self.epoch += 1;
        if let Some(n) = self.pending_msg_capacity.take() {
            self.msg_capacity = n;
        }
        if let Some(n) = self.pending_reg_capacity.take() {
            self.reg.set_capacity(n);
        }
        result.map_err(|e| self.fatal(e))
    }

    fn clear(&mut self) {
        for q in &mut self.puts {
            q.clear();
        }
        for q in &mut self.gets {
            q.clear();
        }
        self.used = 0;
        self.dirty = false;
        self.reg_hash = 0;
    }

    /// Steps 2 and 3 (module docs); returns the first error found at this process.
    fn exchange(&mut self, hdr: &[u64]) -> Result<(), Error> {
        let (p, me, comm) = (self.p, self.pid as Pid, self.comm);
        let n_in = |j: usize| (hdr[HDR * j + 1] as usize, hdr[HDR * j + 2] as usize);
        // Step 2: descriptors.
        let mut out_meta: Vec<Vec<u64>> = vec![Vec::new(); p];
        let mut in_meta: Vec<Vec<u64>> = vec![Vec::new(); p];
        let mut t = Transfers::default();
        for j in 0..p {
            let (np, ng) = n_in(j);
            in_meta[j] = vec![0u64; 3 * (np + ng)];
            let m = &mut out_meta[j];
            for r in &self.puts[j] {
                m.extend_from_slice(&[r.dst_slot, r.dst_offset, r.len]);
            }
            for r in &self.gets[j] {
                m.extend_from_slice(&[r.src_slot, r.src_offset, r.len]);
            }
        }
        for j in 0..p {
            let buf = in_meta[j].as_mut_ptr().cast::<u8>();
            // SAFETY: `in_meta[j]` and `out_meta[j]` are not touched until `wait`; the peer
            // posts the matching message of the length both ends derived from the header.
            unsafe {
                t.post(comm, false, j, TAG_META, &[(buf, 8 * in_meta[j].len())]);
                let buf = out_meta[j].as_mut_ptr().cast::<u8>();
                t.post(comm, true, j, TAG_META, &[(buf, 8 * out_meta[j].len())]);
            }
        }
        t.wait();
        // Step 3: plan both directions of every pair.
        let mut first_err: Option<Error> = None;
        let max_len = in_meta.iter().flat_map(|m| m.chunks(3).map(|c| c[2])).max().unwrap_or(0);
        let own_max = self.puts.iter().flatten().map(|r| r.len).max().unwrap_or(0);
        let max_len = if self.checked { max_len.max(own_max) } else { max_len };
        let mut zeros = vec![0u8; max_len as usize];
        let mut trailer_out = vec![[0u64; 3]; p];
        let mut trailer_in = vec![[0u64; 3]; p];
        let mut sends: Vec<Vec<(*mut u8, usize)>> = vec![Vec::new(); p];
        let mut recvs: Vec<Vec<(*mut u8, usize)>> = vec![Vec::new(); p];
        let mut reads: Vec<(usize, usize)> = Vec::new();
        for j in 0..p {
            let (np, ng) = n_in(j);
            for r in &self.puts[j] {
                sends[j].push((r.src, r.len as usize));
            }
            for (k, c) in in_meta[j][3 * np..].chunks(3).enumerate() {
                let (slot, off, len) = (c[0] as usize, c[1] as usize, c[2] as usize);
                match self.reg.resolve(me, MemSlot::from_raw(slot), off, len) {
                    Ok(src) => sends[j].push((src, len)),
                    Err(e) => {
                        sends[j].push((zeros.as_mut_ptr(), len));
                        if trailer_out[j][0] == 0 {
                            let slot_len = match e {
                                Error::OutOfBounds { slot_len, .. } => slot_len as u64,
                                _ => u64::MAX,
                            };
                            trailer_out[j] = [1, k as u64, slot_len];
                        }
                    }
                }
            }
            if ng > 0 {
                sends[j].push((trailer_out[j].as_mut_ptr().cast(), 24));
            }
            for c in in_meta[j][..3 * np].chunks(3) {
                let (slot, off, len) = (c[0] as usize, c[1] as usize, c[2] as usize);
                match self.reg.resolve(me, MemSlot::from_raw(slot), off, len) {
                    Ok(dst) => recvs[j].push((dst, len)),
                    Err(e) => {
                        recvs[j].push((std::ptr::null_mut(), len));
                        first_err.get_or_insert(e);
                    }
                }
            }
            for r in &self.gets[j] {
                recvs[j].push((r.dst, r.len as usize));
            }
            if !self.gets[j].is_empty() {
                recvs[j].push((trailer_in[j].as_mut_ptr().cast(), 24));
            }
            if self.checked {
                reads.extend(sends[j].iter().map(|&(a, l)| (a as usize, a as usize + l)));
            }
        }
        let ends: usize = (0..p).map(|j| n_in(j).0 + n_in(j).1).sum::<usize>() + self.used_ends();
        let mut violation = None;
        if self.checked {
            if ends > self.msg_capacity {
                let cap = self.msg_capacity;
                violation = Some(Error::QueueOverflow { pid: me, count: ends, capacity: cap });
            } else {
                let mut writes: Vec<(usize, usize)> = recvs
                    .iter()
                    .flatten()
                    .filter(|b| !b.0.is_null() && b.1 > 0)
                    .map(|&(a, l)| (a as usize, a as usize + l))
                    .collect();
                reads.retain(|r| r.1 > r.0);
                if let Some((r, w)) = first_overlap(&mut reads, &mut writes) {
                    let what = format!(
                        "bytes {:#x}..{:#x} are read by one message and bytes {:#x}..{:#x} \
                         written by another in the same superstep",
                        r.0, r.1, w.0, w.1
                    );
                    violation = Some(Error::Checked { pid: me, what });
                }
            }
        }
        if violation.is_some() {
            // No data of this process moves: send zeros, receive into a discard buffer.
            for (j, s) in sends.iter_mut().enumerate() {
                let data = self.puts[j].len() + n_in(j).1;
                for b in &mut s[..data] {
                    b.0 = zeros.as_mut_ptr();
                }
            }
            for b in recvs.iter_mut().flatten() {
                b.0 = std::ptr::null_mut();
            }
        }
        let (mut staging, staged) = stage(&mut recvs);
        for j in 0..p {
            // SAFETY: every block is a registered region of this process resolved above (valid
            // until this sync returns by the registration contract), `zeros`, `staging` or a
            // trailer, all alive until `wait`; `stage` made the receive blocks disjoint; the
            // peer lists the same lengths in the same order (module docs, step 3).
            unsafe {
                t.post(comm, false, j, TAG_DATA, &recvs[j]);
                t.post(comm, true, j, TAG_DATA, &sends[j]);
            }
        }
        t.wait();
        drop(zeros);
        if violation.is_none() {
            for s in &staged {
                // SAFETY: `s.dst` is a resolved destination in a registered region of this
                // process, `staging[s.at..][..s.len]` holds the received bytes; this thread is
                // the only writer of its memory during the sync.
                unsafe { std::ptr::copy(staging.as_mut_ptr().add(s.at), s.dst, s.len) };
            }
        }
        for (j, &[bad, k, slot_len]) in trailer_in.iter().enumerate() {
            if bad != 0 {
                let r = self.gets[j][k as usize];
                let (slot, offset, len) =
                    (r.src_slot as usize, r.src_offset as usize, r.len as usize);
                let pid = j as Pid;
                first_err.get_or_insert(if slot_len == u64::MAX {
                    Error::BadSlot { pid, slot, why: "never registered or deregistered" }
                } else {
                    Error::OutOfBounds { pid, slot, offset, len, slot_len: slot_len as usize }
                });
            }
        }
        match violation.or(first_err) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Capacity units of this process's own requests (self messages count at both ends, and
    /// their target end is counted again from the header, so count origin ends only).
    fn used_ends(&self) -> usize {
        (0..self.p).map(|j| self.puts[j].len() + self.gets[j].len()).sum()
    }
}

/// Redirects receive blocks that overlap another one (or whose destination failed to
/// resolve: null) into a staging buffer. Returns the buffer and the copies to make afterwards,
/// in (origin, issue) order.
fn stage(recvs: &mut [Vec<(*mut u8, usize)>]) -> (Vec<u8>, Vec<Staged>) {
    let mut spans: Vec<(usize, usize, usize, usize)> = Vec::new();
    for (j, blocks) in recvs.iter().enumerate() {
        for (k, &(a, l)) in blocks.iter().enumerate() {
            if !a.is_null() && l > 0 {
                spans.push((a as usize, a as usize + l, j, k));
            }
        }
    }
    let mut redirect: Vec<Vec<bool>> = recvs.iter().map(|b| vec![false; b.len()]).collect();
    let mut any = false;
    // Destinations in increasing address order without overlap (the usual case) need no sort.
    let disjoint = spans.windows(2).all(|w| w[0].1 <= w[1].0);
    if spans.len() > 1 && !disjoint {
        spans.sort_unstable();
        // A span overlaps an earlier one iff it starts before the furthest earlier end; the
        // span reaching that end overlaps it too. Every overlapping span is marked this way.
        let (mut reach, mut reach_at) = (0usize, 0usize);
        for i in 0..spans.len() {
            let (start, end, j, k) = spans[i];
            if i > 0 && start < reach {
                redirect[j][k] = true;
                redirect[spans[reach_at].2][spans[reach_at].3] = true;
                any = true;
            }
            if end > reach {
                (reach, reach_at) = (end, i);
            }
        }
    }
    let mut staged = Vec::new();
    let mut total = 0usize;
    for (j, blocks) in recvs.iter().enumerate() {
        for (k, &(a, l)) in blocks.iter().enumerate() {
            if a.is_null() || (any && redirect[j][k]) {
                if !a.is_null() {
                    staged.push(Staged { dst: a, at: total, len: l });
                }
                total += l;
            }
        }
    }
    let mut staging = vec![0u8; total];
    let mut at = 0usize;
    for (j, blocks) in recvs.iter_mut().enumerate() {
        for (k, b) in blocks.iter_mut().enumerate() {
            if b.0.is_null() || (any && redirect[j][k]) {
                b.0 = staging.as_mut_ptr().wrapping_add(at);
                at += b.1;
            }
        }
    }
    (staging, staged)
}
