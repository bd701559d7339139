//! The one communication step of a distributed iteration: puts of the values other ranks need,
//! then one `sync`.
//!
//! # Contract
//! 1. One global slot per run, registered once ([`Exchange::new`], one sync of its own), large
//!    enough for the layouts below; every later superstep is exactly one sync.
//! 2. [`Exchange::owned`]: rank `r` puts its owned vertex range of `values` (and its
//!    partitions' entries of `partials`: `k` per partition, partition-major) to every other
//!    rank at the same offsets; after the sync every rank holds every value. Bytes:
//!    `(p − 1) · owned · size` sent.
//! 3. [`Exchange::halo`] (a run made [`Exchange::with_halo`]): rank `q` sends rank `r` one
//!    message: the values of `r`'s halo in `q` ([`Halo`]) in list order, then `q`'s
//!    partitions' `partials` (as in rule 2), into `r`'s receive area (senders in rank order);
//!    after the sync every rank holds the values its stripe reads as sources and every
//!    partial. Bytes: `size · Σ_r |send[r]|` plus `(p − 1) · 8 · k · owned partitions` sent.
//! 4. [`Exchange::changed`]: rank `r` puts `[count u64][(id u32, value)…]` into its own region
//!    (sized for all its owned vertices) on every other rank; after the sync each rank applies
//!    the others' pairs. Only changed values travel. Every rank always sends its count, so a
//!    region never holds a stale list.
//! 5. Every superstep is recorded in the run's [`CostLog`] (bytes sent and received by this
//!    rank, seconds of local work before the puts, seconds of puts plus sync), its start in
//!    seconds since the exit of the sync that registers the slot: an instant common to all
//!    ranks, so the start times of all ranks are on one shared clock.

use std::ops::Range;
use std::time::Instant;

use sluice_bsp::collectives::Elem;
use sluice_bsp::cost::CostLog;
use sluice_bsp::{Ctx, MemSlot, Pid};

use super::halo::Halo;
use super::{Cost, DistGraph};
use crate::Error;

/// Partitions rank `r` owns.
fn ranges_parts_len(parts: &crate::partition::Parts, r: usize) -> usize {
    let [lo, hi] = parts.ranges[r];
    (hi - lo) as usize
}

/// A run's exchange slot and its cost log.
#[derive(Debug)]
pub(crate) struct Exchange {
    slot: MemSlot,
    me: usize,
    rank: u32,
    ranges: Vec<Range<u32>>,
    parts: Vec<Range<usize>>,
    /// Start of each rank's region for [`Exchange::changed`] (bytes), plus the end.
    regions: Vec<usize>,
    value_offset: usize,
    /// The halo and the byte offset of the receive area (its send area follows it).
    halo: Option<(Halo, usize)>,
    log: CostLog,
    t0: Instant,
    work_start: Instant,
}

impl Exchange {
    /// Registers the slot for values of `value_bytes` bytes (rule 1); collective.
    pub(crate) fn new(
        ctx: &mut Ctx,
        dg: &DistGraph,
        value_bytes: usize,
    ) -> Result<Exchange, Error> {
        Exchange::with_halo(ctx, dg, value_bytes, 1, None)
    }

    /// As [`Exchange::new`], with room for `k` partials per partition and, given a halo, for
    /// [`Exchange::halo`] (rule 3); collective.
    pub(crate) fn with_halo(
        ctx: &mut Ctx,
        dg: &DistGraph,
        value_bytes: usize,
        k: usize,
        halo: Option<Halo>,
    ) -> Result<Exchange, Error> {
        let rank = ctx.pid();
        let bsp = |source| Error::Bsp { rank, source };
        let p = ctx.nprocs() as usize;
        let ranges: Vec<Range<u32>> = (0..p).map(|r| dg.parts.vertices(r)).collect();
        let parts = dg.parts.ranges.iter().map(|x| x[0] as usize..x[1] as usize).collect();
        let n = dg.parts.num_vertices as usize;
        let mut regions = vec![0];
        for r in &ranges {
            regions.push(regions[regions.len() - 1] + 8 + r.len() * (4 + value_bytes));
        }
        let value_offset = n * value_bytes;
        let owned_len = value_offset + dg.parts.partitions as usize * 8 * k;
        let base = owned_len.max(regions[p]);
        // The halo's areas: values plus k partials per partition in each message (rule 3).
        let areas = |h: &Halo| {
            let pb = |r: usize| ranges_parts_len(&dg.parts, r) * k * 8;
            let others: usize = (0..p).filter(|&q| q != rank as usize).map(pb).sum();
            (h.received() + h.sent()) * value_bytes + others + (p - 1) * pb(rank as usize)
        };
        let len = base + halo.as_ref().map_or(0, areas);
        ctx.resize_memory_register(ctx.registered() + 1).map_err(bsp)?;
        ctx.resize_message_queue(4 * p + 4).map_err(bsp)?;
        ctx.sync().map_err(bsp)?;
        // Every rank leaves this sync together (up to its skew, microseconds on one host): the
        // zero of the run's shared clock, so the ranks' trace tracks line up (rule 5).
        let now = Instant::now();
        let slot = ctx.alloc_global(len).map_err(bsp)?;
        Ok(Exchange {
            slot,
            me: rank as usize,
            rank,
            ranges,
            parts,
            regions,
            value_offset,
            halo: halo.map(|h| (h, base)),
            log: CostLog::new(),
            t0: now,
            work_start: now,
        })
    }

    fn bsp(&self) -> impl Fn(sluice_bsp::Error) -> Error + use<> {
        let rank = self.rank;
        move |source| Error::Bsp { rank, source }
    }

    /// Marks the start of a superstep's local work.
    pub(crate) fn begin(&mut self) {
        self.work_start = Instant::now();
    }

    fn record(&mut self, sent: u64, received: u64, min_msg: u64, comm_start: Instant) {
        let start = self.work_start.duration_since(self.t0).as_secs_f64();
        let work = comm_start.duration_since(self.work_start).as_secs_f64();
        let comm = comm_start.elapsed().as_secs_f64();
        self.log.record(sent, received, min_msg, start, work, comm);
    }

    /// Rule 2: every rank's owned `values` (and owned partitions' `partials`) everywhere.
    pub(crate) fn owned<T: Elem>(
        &mut self,
        ctx: &mut Ctx,
        values: &mut [T],
        partials: &mut [f64],
    ) -> Result<(), Error> {
        let comm_start = Instant::now();
        let bsp = self.bsp();
        let (w, me, voff) = (T::SIZE, self.me, self.value_offset);
        let own = self.ranges[me].start as usize..self.ranges[me].end as usize;
        let k = partials.len() / self.parts.last().map_or(1, |x| x.end.max(1));
        let parts = self.parts[me].start * k..self.parts[me].end * k;
        let use_partials = !partials.is_empty();
        {
            let buf = ctx.slot_mut(self.slot).map_err(&bsp)?;
            for (v, c) in values[own.clone()].iter().zip(buf[own.start * w..].chunks_exact_mut(w)) {
                v.put_bytes(c);
            }
            if use_partials {
                for (x, c) in partials[parts.clone()]
                    .iter()
                    .zip(buf[voff + parts.start * 8..].chunks_exact_mut(8))
                {
                    c.copy_from_slice(&x.to_ne_bytes());
                }
            }
        }
        let (mut sent, mut msg) = (0u64, u64::MAX);
        for d in (0..self.ranges.len()).filter(|&d| d != me) {
            let mut put = |off: usize, len: usize| -> Result<(), Error> {
                if len > 0 {
                    ctx.put(self.slot, off, d as Pid, self.slot, off, len).map_err(&bsp)?;
                    (sent, msg) = (sent + len as u64, msg.min(len as u64));
                }
                Ok(())
            };
            put(own.start * w, own.len() * w)?;
            if use_partials {
                put(voff + parts.start * 8, parts.len() * 8)?;
            }
        }
        ctx.sync().map_err(&bsp)?;
        let mut received = 0u64;
        {
            let buf = ctx.slot(self.slot).map_err(&bsp)?;
            for r in (0..self.ranges.len()).filter(|&r| r != me) {
                let vs = self.ranges[r].start as usize..self.ranges[r].end as usize;
                for (v, c) in values[vs.clone()].iter_mut().zip(buf[vs.start * w..].chunks_exact(w))
                {
                    *v = T::from_bytes(c);
                }
                let ps = self.parts[r].start * k..self.parts[r].end * k;
                if use_partials {
                    for (x, c) in partials[ps.clone()]
                        .iter_mut()
                        .zip(buf[voff + ps.start * 8..].chunks_exact(8))
                    {
                        *x = f64::from_bytes(c);
                    }
                }
                received += (vs.len() * w + if use_partials { ps.len() * 8 } else { 0 }) as u64;
            }
        }
        self.record(sent, received, if msg == u64::MAX { 0 } else { msg }, comm_start);
        Ok(())
    }

    /// Rule 3: the values other ranks read as sources (and the owned partitions' `partials`)
    /// to those ranks only. Panics if the run was made without a halo.
    pub(crate) fn halo<T: Elem>(
        &mut self,
        ctx: &mut Ctx,
        values: &mut [T],
        partials: &mut [f64],
    ) -> Result<(), Error> {
        let comm_start = Instant::now();
        let bsp = self.bsp();
        let (w, me, p) = (T::SIZE, self.me, self.ranges.len());
        let (h, base) = self.halo.as_ref().expect("Exchange::halo needs Exchange::with_halo");
        let base = *base;
        let k = partials.len() / self.parts.last().map_or(1, |x| x.end.max(1));
        // Bytes of rank q's partials, and of the messages before sender q's on rank r.
        let pbytes = |q: usize| self.parts[q].len() * k * 8;
        let before = |r: usize, q: usize| (0..q).filter(|&x| x != r).map(pbytes).sum::<usize>();
        let out = base + h.received() * w + before(me, p);
        let parts = self.parts[me].start * k..self.parts[me].end * k;
        let mut lens = vec![0; p];
        {
            let buf = ctx.slot_mut(self.slot).map_err(&bsp)?;
            let mut at = out;
            for d in (0..p).filter(|&d| d != me) {
                for (&v, c) in h.send[d].iter().zip(buf[at..].chunks_exact_mut(w)) {
                    values[v as usize].put_bytes(c);
                }
                let c = at + h.send[d].len() * w;
                for (x, c) in partials[parts.clone()].iter().zip(buf[c..].chunks_exact_mut(8)) {
                    c.copy_from_slice(&x.to_ne_bytes());
                }
                lens[d] = h.send[d].len() * w + pbytes(me);
                at += lens[d];
            }
        }
        let (mut sent, mut msg, mut at) = (0u64, u64::MAX, out);
        for d in (0..p).filter(|&d| d != me && lens[d] > 0) {
            let dst = base + h.remote_at[d] * w + before(d, me);
            ctx.put(self.slot, at, d as Pid, self.slot, dst, lens[d]).map_err(&bsp)?;
            (sent, msg, at) = (sent + lens[d] as u64, msg.min(lens[d] as u64), at + lens[d]);
        }
        ctx.sync().map_err(&bsp)?;
        let mut received = 0u64;
        {
            let buf = ctx.slot(self.slot).map_err(&bsp)?;
            for q in (0..p).filter(|&q| q != me) {
                let from = &buf[base + h.recv_at[q] * w + before(me, q)..];
                for (&v, c) in h.need[q].iter().zip(from.chunks_exact(w)) {
                    values[v as usize] = T::from_bytes(c);
                }
                let ps = self.parts[q].start * k..self.parts[q].end * k;
                let from = &from[h.need[q].len() * w..];
                for (x, c) in partials[ps.clone()].iter_mut().zip(from.chunks_exact(8)) {
                    *x = f64::from_bytes(c);
                }
                received += (h.need[q].len() * w + ps.len() * 8) as u64;
            }
        }
        self.record(sent, received, if msg == u64::MAX { 0 } else { msg }, comm_start);
        Ok(())
    }

    /// Rule 4: sends this rank's `(vertex, value)` changes to every other rank and calls
    /// `apply` for each change another rank sent; returns the changes of all ranks together.
    pub(crate) fn changed<T: Elem>(
        &mut self,
        ctx: &mut Ctx,
        mine: &[(u32, T)],
        mut apply: impl FnMut(u32, T),
    ) -> Result<u64, Error> {
        let comm_start = Instant::now();
        let bsp = self.bsp();
        let (w, me) = (T::SIZE + 4, self.me);
        let off = self.regions[me];
        let len = 8 + mine.len() * w;
        assert!(off + len <= self.regions[me + 1], "more changes than owned vertices");
        {
            let buf = ctx.slot_mut(self.slot).map_err(&bsp)?;
            buf[off..off + 8].copy_from_slice(&(mine.len() as u64).to_ne_bytes());
            for (&(v, x), c) in mine.iter().zip(buf[off + 8..].chunks_exact_mut(w)) {
                c[..4].copy_from_slice(&v.to_ne_bytes());
                x.put_bytes(&mut c[4..]);
            }
        }
        let peers = self.ranges.len() - 1;
        for d in (0..self.ranges.len()).filter(|&d| d != me) {
            ctx.put(self.slot, off, d as Pid, self.slot, off, len).map_err(&bsp)?;
        }
        ctx.sync().map_err(&bsp)?;
        let (mut total, mut received) = (mine.len() as u64, 0u64);
        let buf = ctx.slot(self.slot).map_err(&bsp)?;
        for r in (0..self.ranges.len()).filter(|&r| r != me) {
            let off = self.regions[r];
            let k = u64::from_bytes(&buf[off..off + 8]) as usize;
            let end = off + 8 + k * w;
            if end > self.regions[r + 1] {
                return Err(Error::Config(format!(
                    "rank {}: rank {r} sent {k} changes, more than it owns",
                    self.rank
                )));
            }
            for c in buf[off + 8..end].chunks_exact(w) {
                apply(u32::from_bytes(&c[..4]), T::from_bytes(&c[4..]));
            }
            total += k as u64;
            received += 8 + (k * w) as u64;
        }
        self.record((peers * len) as u64, received, 8, comm_start);
        Ok(total)
    }

    /// Releases the slot and returns the run's costs (collective).
    pub(crate) fn finish(self, ctx: &mut Ctx) -> Result<Cost, Error> {
        let bsp = self.bsp();
        ctx.deregister(self.slot).map_err(&bsp)?;
        let table = self.log.summarize(ctx).map_err(&bsp)?;
        Ok(Cost { table, local: self.log.local(), setup_s: 0.0 })
    }
}
