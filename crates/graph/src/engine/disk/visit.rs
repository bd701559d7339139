//! Unordered edge visits: [`Graph::for_each_edge`], one pass over every stored edge of a
//! direction, `f(s, d)` called on the pipeline's workers (streaming) or on the rayon pool (in
//! memory) in no fixed order.
//!
//! # Contract
//! 1. `f` sees every stored edge of the pass's grids exactly once, as global dense ids.
//! 2. Calls run concurrently and in no fixed order: `f` synchronises its own writes (atomics),
//!    and the algorithm's result must not depend on the order (union-find with min-root links).
//! 3. Every block is checked against its CRC-32 (engine rule 5); on a mismatch the call returns
//!    the error after `f` may have seen the corrupt block's edges (ids stay below
//!    [`Graph::padded_len`], engine rule 6), so the caller discards what it built.
//! 4. The visit counts as one edge pass in [`Graph::take_stats`].

use sluice_io::{Block, BlockKernel};

use super::layout::{BadFrame, BlockRef};
use super::{Layout, PassStats};
use crate::Error;
use crate::engine::{Direction, Graph, VertexId, VertexSet, block_error, decode};
use crate::store::EDGE_BYTES;

impl Graph {
    /// One unordered pass over every edge of `dir` (see the module docs): `f(s, d)` per stored
    /// edge, concurrently. With [`Direction::Both`] a directed store's edges come twice (once
    /// per grid, the second time reversed).
    pub fn for_each_edge<F>(&self, dir: Direction, f: F) -> Result<(), Error>
    where
        F: Fn(VertexId, VertexId) + Sync,
    {
        let grids = self.grid_ids(dir);
        if self.is_in_memory() {
            return self.visit_in_memory(&grids, &f);
        }
        // Every edge from disk: the block cache serves ordered passes only.
        let layout = self.layout(&VertexSet::all(self), &grids, false, false)?;
        let mut st = PassStats {
            passes: 1,
            blocks_streamed: layout.blocks.len() as u64,
            edges_streamed: layout.edges,
            ..PassStats::default()
        };
        if !layout.extents.is_empty() {
            let p = self.meta.partitions as usize;
            let kernel = Visit {
                layout: &layout,
                psize: self.meta.partition_size as u32,
                f: &f,
                packed: self.packed(),
            };
            let mut cur: Option<(usize, crc32fast::Hasher, u64)> = None;
            let mut failure: Option<Error> = None;
            let blocks = &layout.blocks;
            let run = self.pipeline.run_ordered(&layout.plan, &kernel, |(pieces, bad)| {
                if let Some((bi, e)) = bad.filter(|_| failure.is_none()) {
                    let br = &blocks[bi];
                    failure = Some(self.frame_failure(br.grid, br.block, &e));
                }
                for (bi, crc, len) in pieces {
                    if failure.is_some() {
                        return;
                    }
                    let (b, hasher, done) =
                        cur.get_or_insert_with(|| (bi, crc32fast::Hasher::new(), 0));
                    let br = &blocks[*b];
                    if *b != bi {
                        failure = Some(block_error(&self.grids[br.grid].edges, br.block, p));
                        return;
                    }
                    hasher.combine(&crc);
                    *done += len;
                    if *done == br.bend - br.bstart {
                        let Some((_, h, _)) = cur.take() else { return };
                        if h.finalize() != self.grids[br.grid].index.crcs[br.block] {
                            failure = Some(block_error(&self.grids[br.grid].edges, br.block, p));
                        }
                    }
                }
            })?;
            if let Some(e) = failure {
                return Err(e);
            }
            if cur.is_some() {
                return Err(Error::corrupt(&self.dir, "a pass ended inside a block"));
            }
            st.run = run;
        }
        let mut all = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        all.passes += 1;
        all.blocks_streamed += st.blocks_streamed;
        all.edges_streamed += st.edges_streamed;
        all.run.merge(&st.run);
        Ok(())
    }
}

struct Visit<'a, F> {
    layout: &'a Layout,
    psize: u32,
    f: &'a F,
    packed: bool,
}

impl<F: Fn(VertexId, VertexId) + Sync> BlockKernel for Visit<'_, F> {
    /// (block, CRC-32 of the piece, piece bytes) for each grid block the read overlaps, and a
    /// packed frame that did not decode.
    type Partial = (Vec<(usize, crc32fast::Hasher, u64)>, BadFrame);

    fn process(&self, b: &Block<'_>) -> Self::Partial {
        let (ext, _) = self.layout.reads[b.extent];
        let e = &self.layout.extents[ext];
        let mut pieces = Vec::new();
        let visit = |br: &BlockRef, bytes: &[u8]| {
            let (sbase, dbase) = (br.sp as u32 * self.psize, e.dp as u32 * self.psize);
            for x in bytes.chunks_exact(4) {
                let (s, d) = decode(x);
                (self.f)(sbase + s, dbase + d);
            }
        };
        if self.packed {
            let bad = self.layout.frames(
                e,
                b.extent_offset,
                b.data,
                &mut pieces,
                &mut Vec::new(),
                |br, _, out, r| visit(br, &out[r]),
            );
            return (pieces, bad);
        }
        let data = &b.data[..b.data.len() / 4 * 4];
        for (br, _, bytes) in self.layout.pieces(e, b.extent_offset / EDGE_BYTES, data, &mut pieces)
        {
            visit(br, bytes);
        }
        (pieces, None)
    }
}
