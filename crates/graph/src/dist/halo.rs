//! The halo of a rank: the vertices of other ranks whose values its stripe reads as edge
//! sources, and the vertices of its own that other ranks read (`notes/issue12.md`, item 3).
//!
//! # Contract
//! 1. [`Halo::build`] is collective. Each rank makes one unordered pass over its part's
//!    forward edges ([`Graph::for_each_edge`] with [`Direction::Out`], the grid PageRank and
//!    SpMV stream; every block checksummed), marks the sources, and keeps those owned by other
//!    ranks: `need[q]`, sorted, the vertices of rank `q` it reads. Two supersteps of its own
//!    then tell every rank `q` what it must send: `send[r]`, the sorted list rank `r` needs.
//! 2. The halo is computed at open time, not stored at `partition` time: the pass reads only
//!    the part's own blocks through the engine (whatever their encoding), and it costs about
//!    one local iteration (measured: see `bench/distributed/README.md`), once per run.
//! 3. After `build`, for every pair `(r, q)`: `r.need[q] == q.send[r]`, and the values rank
//!    `q` sends rank `r` per superstep are `8 · |r.need[q]|` bytes for `f64` values.
//! 4. Rank `r`'s receive area holds the senders' lists in rank order: rank `q`'s values start
//!    at element `recv_at[q]` of it, and on rank `d` this rank's values start at
//!    `remote_at[d]` of `d`'s area. Lists are sorted, so the index map of a sender's values is
//!    its list itself.
//! 5. Memory comes from the graph's budget: the source marks (|V| bits) while the pass runs,
//!    then the lists (4 bytes an entry) and the exchange's receive and send areas (8 bytes an
//!    entry, [`Halo::AREA_BYTES`]), held as long as the halo.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use sluice_bsp::collectives::{Elem, allgather};
use sluice_bsp::{Ctx, Pid};
use sluice_io::Reservation;

use super::DistGraph;
use crate::{Direction, Error};

/// One rank's halo (rule 1).
#[derive(Debug)]
pub(crate) struct Halo {
    /// `need[q]`: the sorted vertices of rank `q` this rank reads (empty for itself).
    pub(crate) need: Vec<Vec<u32>>,
    /// `send[r]`: the sorted vertices of this rank that rank `r` reads (empty for itself).
    pub(crate) send: Vec<Vec<u32>>,
    /// Start of rank `q`'s values in this rank's receive area, in elements (rule 4).
    pub(crate) recv_at: Vec<usize>,
    /// Start of this rank's values in rank `d`'s receive area, in elements (rule 4).
    pub(crate) remote_at: Vec<usize>,
    /// The budget's share for the lists and the exchange areas (rule 5).
    _memory: Vec<Reservation>,
}

impl Halo {
    /// Bytes per list entry reserved for the exchange areas (an `f64` value).
    pub(crate) const AREA_BYTES: u64 = 8;

    /// Elements this rank receives per exchange.
    pub(crate) fn received(&self) -> usize {
        self.need.iter().map(Vec::len).sum()
    }

    /// Elements this rank sends per exchange.
    pub(crate) fn sent(&self) -> usize {
        self.send.iter().map(Vec::len).sum()
    }

    /// Rule 1; collective. A failed pass returns its error before any sync (the other ranks
    /// then fail in their next sync, naming this one).
    pub(crate) fn build(ctx: &mut Ctx, dg: &DistGraph) -> Result<Halo, Error> {
        let (g, me) = (dg.graph(), dg.rank());
        let p = ctx.nprocs() as usize;
        let rank = ctx.pid();
        let bsp = |source| Error::Bsp { rank, source };
        let named = |e: Error| Error::AtRank { rank: me, source: Box::new(e) };
        let words = g.num_vertices().div_ceil(64);
        let marked_memory = g.budget().reserve("the halo's source marks", words as u64 * 8);
        let _marked_memory = marked_memory.map_err(|e| named(e.into()))?;
        let marks: Vec<AtomicU64> = (0..words).map(|_| 0.into()).collect();
        g.for_each_edge(Direction::Out, |s, _| {
            // Most sources repeat: a load first keeps the cache line shared.
            let (w, bit) = (&marks[s as usize / 64], 1u64 << (s % 64));
            if w.load(Relaxed) & bit == 0 {
                w.fetch_or(bit, Relaxed);
            }
        })
        .map_err(named)?;
        let marked = |v: u32| marks[v as usize / 64].load(Relaxed) & (1 << (v % 64)) != 0;
        let count_marked = |q: usize| dg.parts().vertices(q).filter(|&v| marked(v)).count();
        let wanted: usize = (0..p).filter(|&q| q != me).map(count_marked).sum();
        let mut memory =
            vec![reserve(dg, "the halo's lists", wanted as u64 * (4 + Self::AREA_BYTES))?];
        let need: Vec<Vec<u32>> = (0..p)
            .map(|q| match q == me {
                true => Vec::new(),
                false => dg.parts().vertices(q).filter(|&v| marked(v)).collect(),
            })
            .collect();

        // counts[r * p + q] = |r.need[q]|, on every rank.
        let mine: Vec<u64> = need.iter().map(|l| l.len() as u64).collect();
        let mut counts = vec![0u64; p * p];
        allgather(ctx, &mine, &mut counts).map_err(bsp)?;
        let count = |r: usize, q: usize| counts[r * p + q] as usize;
        // This rank's receive area is in sender order; so is its list area below.
        let recv_at: Vec<usize> = (0..p).map(|q| (0..q).map(|x| count(me, x)).sum()).collect();
        let remote_at: Vec<usize> = (0..p).map(|d| (0..me).map(|x| count(d, x)).sum()).collect();
        // Lists: rank r puts need[q] at element Σ_{x<r} count(x, q) of q's list area.
        let from_at: Vec<usize> = (0..p).map(|r| (0..r).map(|x| count(x, me)).sum()).collect();
        let inbound: usize = (0..p).map(|r| count(r, me)).sum();
        memory.push(reserve(dg, "the halo's lists", inbound as u64 * (4 + Self::AREA_BYTES))?);
        let outbound: usize = mine.iter().sum::<u64>() as usize;
        ctx.resize_memory_register(ctx.registered() + 2).map_err(bsp)?;
        ctx.resize_message_queue(ctx.msg_capacity().max(2 * p + 2)).map_err(bsp)?;
        ctx.sync().map_err(bsp)?;
        let lists = ctx.alloc_global(inbound * 4).map_err(bsp)?;
        let out = ctx.alloc_local(outbound * 4).map_err(bsp)?;
        {
            let buf = ctx.slot_mut(out).map_err(bsp)?;
            for (v, c) in need.iter().flatten().zip(buf.chunks_exact_mut(4)) {
                c.copy_from_slice(&v.to_ne_bytes());
            }
        }
        let mut at = 0;
        for (q, l) in need.iter().enumerate().filter(|(_, l)| !l.is_empty()) {
            let at_q: usize = (0..me).map(|x| count(x, q)).sum();
            ctx.put(out, at * 4, q as Pid, lists, at_q * 4, l.len() * 4).map_err(bsp)?;
            at += l.len();
        }
        ctx.sync().map_err(bsp)?;
        let send: Vec<Vec<u32>> = {
            let buf = ctx.slot(lists).map_err(bsp)?;
            (0..p)
                .map(|r| {
                    let bytes = &buf[from_at[r] * 4..(from_at[r] + count(r, me)) * 4];
                    bytes.chunks_exact(4).map(u32::from_bytes).collect()
                })
                .collect()
        };
        let owned = dg.owned();
        if let Some(r) = (0..p).find(|&r| send[r].iter().any(|v| !owned.contains(v))) {
            return Err(Error::Config(format!(
                "rank {me}: rank {r} asked for values of vertices rank {me} does not own"
            )));
        }
        ctx.deregister(out).map_err(bsp)?;
        ctx.deregister(lists).map_err(bsp)?;
        Ok(Halo { need, send, recv_at, remote_at, _memory: memory })
    }
}

/// `bytes` of `dg`'s graph's budget for `what`, the refusal naming the rank.
fn reserve(dg: &DistGraph, what: &str, bytes: u64) -> Result<Reservation, Error> {
    let rank = dg.rank();
    dg.graph()
        .budget()
        .reserve(what, bytes)
        .map_err(|e| Error::AtRank { rank, source: Box::new(e.into()) })
}
