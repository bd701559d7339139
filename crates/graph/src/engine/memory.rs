//! The in-memory mode: blocks held in RAM after [`Graph::load_edges`]; each destination
//! partition is a rayon task that applies directly to its slice of the state.

use rayon::prelude::*;

use super::edge_loop::apply_block;
use super::{EdgeKernel, Graph, Pass, VertexId, VertexSet, block_error, decode};
use crate::Error;
use crate::store::{self, EDGE_BYTES};

impl Graph {
    /// Loads every block into memory (checking each block's CRC-32), within the budget; later
    /// passes run from memory (see "Modes").
    pub fn load_edges(&mut self) -> Result<(), Error> {
        let p = self.meta.partitions as usize;
        for gi in 0..self.grids.len() {
            let g = &self.grids[gi];
            let mut bytes = self.meta.num_edges * EDGE_BYTES;
            if g.weights.is_some() {
                bytes += self.meta.num_edges * 8;
            }
            self.reservations.push(self.budget.reserve("edges in memory", bytes)?);
            // A packed grid is decoded beside its stored bytes: both held while it loads.
            let stored = g.index.bytes.last().copied().unwrap_or(0);
            let _decoding = match g.index.packed {
                true => Some(self.budget.reserve("packed edges being decoded", stored * 2)?),
                false => None,
            };
            let mut data = self.read_held(&g.edges)?;
            let bad = (0..p * p).into_par_iter().find_first(|&b| {
                let (lo, hi) = (g.index.bytes[b], g.index.bytes[b + 1]);
                data.get(lo as usize..hi as usize)
                    .is_none_or(|d| crc32fast::hash(d) != g.index.crcs[b])
            });
            if let Some(b) = bad {
                return Err(block_error(&g.edges, b, p));
            }
            if g.index.packed {
                // Held decoded (raw encoding): in-memory passes read them as raw blocks.
                let blocks: Result<Vec<Vec<u8>>, Error> = (0..p * p)
                    .into_par_iter()
                    .map(|b| {
                        let (lo, hi) = (g.index.bytes[b] as usize, g.index.bytes[b + 1] as usize);
                        let mut out = Vec::new();
                        store::packed::unpack_block(
                            &data[lo..hi],
                            g.index.block_edges(b),
                            &mut out,
                        )
                        .map_err(|e| super::frame_error(&g.edges, b, p, &e))?;
                        Ok(out)
                    })
                    .collect();
                data = blocks?.concat();
            }
            let weights = match &g.weights {
                Some(w) => Some(store::weights::load(w, self.held(w)?, &g.index, p)?),
                None => None,
            };
            self.grids[gi].mem = Some((data, weights));
        }
        Ok(())
    }

    /// `Cancelled` once the caller's cancel flag is set (Ctrl-C in a front end,
    /// `sluice_io::PipelineBuilder::cancel`): in-memory work checks it per block, partition or
    /// vertex, as the pipeline does after every block it reads.
    pub(crate) fn check_cancel(&self) -> Result<(), Error> {
        match self.pipeline.cancel_requested() {
            true => Err(sluice_io::Error::Cancelled.into()),
            false => Ok(()),
        }
    }

    /// [`Graph::for_each_edge`] over the blocks in memory: one rayon task per block (skipped
    /// once a cancel is requested: the pass then fails).
    pub(super) fn visit_in_memory<F>(&self, grids: &[usize], f: &F) -> Result<(), Error>
    where
        F: Fn(VertexId, VertexId) + Sync,
    {
        let p = self.meta.partitions as usize;
        let psize = self.meta.partition_size as u32;
        let (mut streamed, mut edges) = (0u64, 0u64);
        for &gi in grids {
            let g = &self.grids[gi];
            let Some((data, _)) = &g.mem else { continue };
            let offsets = &g.index.offsets;
            (0..p * p).into_par_iter().for_each(|b| {
                if self.pipeline.cancel_requested() {
                    return;
                }
                let (lo, hi) = (offsets[b] as usize, offsets[b + 1] as usize);
                let (sbase, dbase) = ((b % p) as u32 * psize, (b / p) as u32 * psize);
                for e in data[lo * 4..hi * 4].chunks_exact(4) {
                    let (s, d) = decode(e);
                    f(sbase + s, dbase + d);
                }
            });
            self.check_cancel()?;
            streamed += (0..p * p).filter(|&b| offsets[b] < offsets[b + 1]).count() as u64;
            edges += offsets[p * p] - offsets[0];
        }
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        st.passes += 1;
        st.blocks_streamed += streamed;
        st.edges_streamed += edges;
        Ok(())
    }

    pub(super) fn stream_in_memory<K: EdgeKernel>(
        &self,
        pass: &Pass<'_, K>,
        state: &mut [K::State],
    ) -> Result<VertexSet, Error> {
        let p = self.meta.partitions as usize;
        let psize = self.meta.partition_size as usize;
        let mut next = VertexSet::empty_like(self);
        // A task owns `group` adjacent columns and runs them source partition by source
        // partition: the source segment of the state that `gather` reads at random stays in
        // the cache across the group's blocks, while each column's own slice is written in
        // `(d, s)` order. Each column still sees its blocks in stream order (rule 2).
        let group = self.column_group();
        let counts: Vec<(u64, u64, u64)> = state[..p * psize]
            .par_chunks_mut(psize * group)
            .zip(next.bits[..p * psize / 64].par_chunks_mut(psize / 64 * group))
            .enumerate()
            .flat_map_iter(|(t, (slices, bits))| {
                let mut cols: Vec<_> =
                    slices.chunks_mut(psize).zip(bits.chunks_mut(psize / 64)).collect();
                let mut counts = vec![(0u64, 0u64, 0u64); cols.len()];
                // Ctrl-C in a front end: the rest of the pass is skipped, the pass fails below.
                if self.pipeline.cancel_requested() {
                    return counts;
                }
                for &gi in &pass.grids {
                    let g = &self.grids[gi];
                    let Some((data, weights)) = &g.mem else { continue };
                    for sp in (0..p).filter(|&sp| pass.active.has_partition(sp)) {
                        for (j, (slice, bits)) in cols.iter_mut().enumerate() {
                            let dp = t * group + j;
                            let b = dp * p + sp;
                            let (lo, hi) =
                                (g.index.offsets[b] as usize, g.index.offsets[b + 1] as usize);
                            if lo == hi {
                                continue;
                            }
                            let c = &mut counts[j];
                            c.1 += 1;
                            c.2 += (hi - lo) as u64;
                            let w = weights.as_ref().filter(|_| K::WEIGHTED).map(|w| &w[lo..hi]);
                            c.0 += apply_block(
                                pass.kernel,
                                pass.active,
                                pass.prev,
                                ((sp * psize) as u32, (dp * psize) as u32),
                                (&data[lo * 4..hi * 4], w),
                                slice,
                                bits,
                            );
                        }
                    }
                }
                counts
            })
            .collect();
        if self.pipeline.cancel_requested() {
            return Err(sluice_io::Error::Cancelled.into());
        }
        for (dp, c) in counts.iter().enumerate() {
            next.part_counts[dp] = c.0;
        }
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        st.passes += 1;
        let streamed: u64 = counts.iter().map(|c| c.1).sum();
        st.blocks_streamed += streamed;
        st.blocks_skipped += (p * p * pass.grids.len()) as u64 - streamed;
        st.edges_streamed += counts.iter().map(|c| c.2).sum::<u64>();
        Ok(next)
    }
}

impl Graph {
    /// Columns one task runs together (in memory, and of the columns the block cache serves):
    /// [`Graph::set_column_group`], else `SLUICE_COLUMN_GROUP` (for measuring), else up to 8
    /// with at least 4 tasks per thread of the pool, to share the work evenly. A block of a
    /// sparse grid holds too few edges to reuse the source segment it reads at random (`psize`
    /// values, 512 KiB of PageRank contributions) before the next block's segment evicts it; a
    /// group of columns reads each segment once per group. In-memory PageRank on Kronecker
    /// scale 24 (136 partitions): 0.80-0.83 s per iteration one column per task, 0.49 with 8;
    /// scale 22 (37 partitions): 0.145-0.19 s, 0.117 with 4.
    pub(super) fn column_group(&self) -> usize {
        let p = self.meta.partitions as usize;
        let set = match self.column_group.load(std::sync::atomic::Ordering::Relaxed) {
            0 => std::env::var("SLUICE_COLUMN_GROUP").ok().and_then(|v| v.parse().ok()),
            n => Some(n),
        };
        let threads = rayon::current_num_threads().max(1);
        set.unwrap_or((p / (threads * 4)).clamp(1, 8)).max(1)
    }
}
