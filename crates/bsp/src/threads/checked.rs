//! The `Checked` backend: LPF's debug-layer checks, run inside every sync of a section started
//! with [`ExecConfig::checked`](crate::ExecConfig) (or `SLUICE_BSP_CHECKED=1`).
//!
//! # Contract
//! 1. `checked_rejects_read_write_overlap`: if, in one superstep, a byte of a process's memory is
//!    both read by a message (a put source, or a get source on a remote process) and written by
//!    another message (a put destination, or a get destination), the sync fails with
//!    [`Error::Checked`] on that process (fatal: peers fail at their next sync) and no data of
//!    that process moves.
//! 2. `checked_rejects_mismatched_global_registration`: the sequence of global registrations and
//!    deregistrations since the last sync must be the same on every process (LPF: collective,
//!    same superstep, same order); otherwise every process's sync fails with `Checked`.
//! 3. Overlapping *writes* are legal (arbitrary-order CRCW) and are not reported.
//!
//! # Costs
//! O(m log m) per process and sync for m messages touching its memory, plus O(p).

use super::group::Group;
use super::queues::Frozen;
use crate::memreg::Register;
use crate::{Error, Pid};

/// A byte interval `[start, end)` of the address space.
type Span = (usize, usize);

/// Runs rules 1 and 2 for process `me` of `group`, whose register is `reg`; called inside the
/// sync of parity `par` after barrier B1, with that parity's queues frozen.
pub(crate) fn check_sync(
    group: &Group,
    queues: &Frozen<'_>,
    me: usize,
    par: usize,
    reg: &Register,
) -> Result<(), Error> {
    let pid = me as Pid;
    let hashes = group.reg_hashes(par);
    if hashes.iter().any(|&h| h != hashes[0]) {
        let what = "global registrations or deregistrations since the last sync differ between \
                    processes (they must be collective, in the same order)";
        return Err(Error::Checked { pid, what: what.to_string() });
    }
    let mut reads: Vec<Span> = Vec::new();
    let mut writes: Vec<Span> = Vec::new();
    for j in 0..group.p {
        let incoming = queues.queue(j, me);
        for r in &incoming.puts {
            let len = r.len as usize;
            if let Ok(dst) = reg.resolve_global(pid, r.dst_slot as usize, r.dst_offset, len) {
                push_span(&mut writes, dst as usize, len);
            }
        }
        for r in &incoming.gets {
            let len = r.len as usize;
            if let Ok(src) = reg.resolve_global(pid, r.src_slot as usize, r.src_offset, len) {
                push_span(&mut reads, src as usize, len);
            }
        }
        let outgoing = queues.queue(me, j);
        for r in &outgoing.puts {
            push_span(&mut reads, r.src as usize, r.len as usize);
        }
        for r in &outgoing.gets {
            push_span(&mut writes, r.dst as usize, r.len as usize);
        }
    }
    match first_overlap(&mut reads, &mut writes) {
        None => Ok(()),
        Some((r, w)) => Err(Error::Checked {
            pid,
            what: format!(
                "bytes {:#x}..{:#x} are read by one message and bytes {:#x}..{:#x} written by \
                 another in the same superstep",
                r.0, r.1, w.0, w.1
            ),
        }),
    }
}

fn push_span(v: &mut Vec<Span>, start: usize, len: usize) {
    if len > 0 {
        v.push((start, start.saturating_add(len)));
    }
}

/// Returns a read span and a write span that intersect, if any.
pub(crate) fn first_overlap(reads: &mut [Span], writes: &mut [Span]) -> Option<(Span, Span)> {
    if reads.is_empty() || writes.is_empty() {
        return None;
    }
    writes.sort_unstable();
    // Prefix maximum of ends: any write starting before `x` that reaches past `x` intersects.
    let mut reach = Vec::with_capacity(writes.len());
    let mut best = 0usize;
    for (i, w) in writes.iter().enumerate() {
        if w.1 > reach.last().map_or(0, |&(e, _)| e) {
            best = i;
        }
        reach.push((w.1.max(reach.last().map_or(0, |&(e, _)| e)), best));
    }
    for &r in reads.iter() {
        // Writes starting before r.1.
        let n = writes.partition_point(|w| w.0 < r.1);
        if n > 0 {
            let (end, who) = reach[n - 1];
            if end > r.0 {
                return Some((r, writes[who]));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(reads: &[Span], writes: &[Span]) -> bool {
        reads.iter().any(|r| writes.iter().any(|w| r.0 < w.1 && w.0 < r.1))
    }

    #[test]
    fn first_overlap_agrees_with_brute_force() {
        let mut seed = 12345u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 100) as usize
        };
        for _ in 0..2000 {
            let nr = next() % 5;
            let nw = next() % 5;
            let mut reads: Vec<Span> = (0..nr)
                .map(|_| {
                    let a = next();
                    (a, a + 1 + next() % 10)
                })
                .collect();
            let mut writes: Vec<Span> = (0..nw)
                .map(|_| {
                    let a = next();
                    (a, a + 1 + next() % 10)
                })
                .collect();
            let expect = brute(&reads, &writes);
            let got = first_overlap(&mut reads, &mut writes);
            assert_eq!(got.is_some(), expect, "{reads:?} {writes:?}");
            if let Some((r, w)) = got {
                assert!(r.0 < w.1 && w.0 < r.1);
            }
        }
    }
}
