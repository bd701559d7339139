//! The block cache of the streaming mode (issue 15 lever 2, "keep what fits"): whole columns of
//! a grid (all blocks into one destination partition, one contiguous range of the edge file)
//! that a pass read and checked stay in memory for the later passes of the run.
//!
//! # Why columns
//! A pass streams column by column, and each column is applied by one applier on its own
//! slice of the state (engine rules 1 and 2). A column held whole is therefore served without
//! touching the stream order of any other column: the cached columns are gathered on the rayon
//! pool beside the pipeline, the rest is read from disk, and the values into every destination
//! are applied in the same order as without the cache (bit-for-bit equal results). PageRank,
//! SSSP and SpMV read every column every pass, so a cache that never evicts (column order, first
//! come first kept) is what LRU would degenerate to anyway: LRU over a cyclic scan larger than
//! the cache evicts every block right before it is read again, a hit rate of zero.
//!
//! # Contract
//! 1. A column is kept only when a pass read all of its non-empty blocks in one extent, every
//!    block's CRC-32 matched (weights included in a weighted pass), and the pass succeeded.
//!    Corrupt blocks are thus still reported on their first read; a cached column is never
//!    read from disk again during the life of the [`Graph`].
//! 2. Every kept byte is held against the budget (one [`Reservation`] per column), taken before
//!    the filling pass reads. A column is admitted only while the budget keeps a headroom for
//!    the passes themselves: the largest budget need of a pass measured so far (pipeline pool,
//!    partial results), at the first pass a bound (a quarter of what is left plus the pass's
//!    partial results), plus a slack (16 MiB and 1/8 of the budget).
//! 3. A column kept from an unweighted pass has no weights: a weighted pass reads it from disk
//!    and keeps it again with its weights (if it fits).
//! 4. A pass that cannot reserve its own memory drops the whole cache and tries once more.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;
use sluice_io::{Budget, Reservation};

use super::disk::block_to_values;
use super::{EdgeKernel, Pass, VertexId};
use crate::store::packed::{FRAME_BYTES, decode_frame};
use crate::store::{EDGE_BYTES, GridIndex};

/// Edges of one piece of a cached block gathered at a time (1 MiB of edges).
const PIECE_EDGES: u64 = (1 << 20) / EDGE_BYTES;
/// Frames of one piece of a cached packed block (about 2 MiB of edges decoded).
const PIECE_FRAMES: u64 = 128;

/// Bytes of one stored weight.
const WEIGHT_BYTES: u64 = 8;

/// One kept column of one grid: its edges and (if a weighted pass kept it) its weights.
#[derive(Debug, Clone)]
pub(super) struct Column {
    pub(super) edges: Arc<Vec<u8>>,
    pub(super) weights: Option<Arc<Vec<u8>>>,
}

#[derive(Debug)]
struct Kept {
    column: Column,
    _held: Reservation,
}

/// The cache: kept columns by (grid, destination partition).
#[derive(Debug)]
pub(super) struct BlockCache {
    pub(super) enabled: bool,
    cols: HashMap<(usize, usize), Kept>,
    /// The largest budget need of one pass measured so far.
    need: u64,
}

impl BlockCache {
    pub(super) fn new() -> BlockCache {
        BlockCache { enabled: true, cols: HashMap::new(), need: 0 }
    }

    /// Column `dp` of grid `gi`, if kept with what a pass (weighted or not) needs.
    pub(super) fn get(&self, gi: usize, dp: usize, weighted: bool) -> Option<Column> {
        let k = self.cols.get(&(gi, dp))?;
        (!weighted || k.column.weights.is_some()).then(|| k.column.clone())
    }

    /// Reserves room to keep a column of `bytes`, if the budget keeps its headroom (rule 2);
    /// `partials` is what the coming pass reserves for its partial results.
    pub(super) fn admit(&self, budget: &Budget, bytes: u64, partials: u64) -> Option<Reservation> {
        if !self.enabled {
            return None;
        }
        let left = budget.available();
        let need = match self.need {
            0 => partials + left / 4,
            n => n.max(partials),
        };
        let headroom = need.saturating_add(slack(budget));
        if left < bytes.saturating_add(headroom) {
            return None;
        }
        budget.reserve("block cache", bytes).ok()
    }

    /// Keeps a filled column (rule 1: the caller checked it).
    pub(super) fn keep(&mut self, gi: usize, dp: usize, column: Column, held: Reservation) {
        self.cols.insert((gi, dp), Kept { column, _held: held });
    }

    /// Records the budget need measured in one pass.
    pub(super) fn measured(&mut self, need: u64) {
        self.need = self.need.max(need);
    }

    /// Drops every kept column (rule 4), returning their memory to the budget.
    pub(super) fn clear(&mut self) {
        self.cols.clear();
    }

    /// Bytes kept (edges and weights).
    pub(super) fn resident(&self) -> u64 {
        self.cols.values().map(|k| k.column.edges.len() as u64 + weight_len(&k.column)).sum()
    }
}

fn weight_len(c: &Column) -> u64 {
    c.weights.as_ref().map_or(0, |w| w.len() as u64)
}

/// Budget left free beyond a pass's measured need: for the arrays algorithms allocate between
/// passes and for what the budget does not count (pipeline reads in flight to be kept, file
/// pages mapped by the pipeline, allocator slack): 16 MiB and 1/8 of the budget. With 1/32 a
/// PageRank at `--memory 512M` in a 512 MiB cgroup peaked at 529 MiB RSS and was killed.
fn slack(budget: &Budget) -> u64 {
    (16 << 20) + budget.total() / 8
}

/// A column served from the cache in one pass: its partition and each grid's kept bytes.
pub(super) struct Served {
    pub(super) dp: usize,
    pub(super) grids: Vec<(usize, Column)>,
}

/// The values of a cached column, in the order a disk pass produces them: grid by grid, source
/// partition by source partition, skipping blocks whose source partition is inactive. A block
/// is gathered in pieces as a disk pass gathers it in reads (values into one destination are
/// then combined per piece: `combine` is associative unless [`EdgeKernel::PER_EDGE`]).
pub(super) fn column_values<K: EdgeKernel>(
    pass: &Pass<'_, K>,
    served: &Served,
    indexes: &[&GridIndex],
    (p, psize): (usize, usize),
) -> Vec<Vec<(VertexId, K::Value)>> {
    let dp = served.dp;
    let mut jobs = Vec::new();
    for (gi, col) in &served.grids {
        let index = indexes[*gi];
        let (offsets, bytes) = (&index.offsets, &index.bytes);
        let (base, bbase) = (offsets[dp * p], bytes[dp * p]);
        for sp in 0..p {
            let b = dp * p + sp;
            let (lo, hi) = (offsets[b] - base, offsets[b + 1] - base);
            if lo == hi || !pass.active.has_partition(sp) {
                continue;
            }
            if index.packed {
                // Whole frames, about a pipeline read's worth at a time.
                let (blo, bhi) = (bytes[b] - bbase, bytes[b + 1] - bbase);
                let step = PIECE_FRAMES * FRAME_BYTES as u64;
                let mut at = blo;
                while at < bhi {
                    let end = bhi.min(at + step);
                    jobs.push((col, sp, at, end, lo));
                    at = end;
                }
                continue;
            }
            // Pieces the size of a pipeline read: small reusable buffers, no fresh pages.
            let mut at = lo;
            while at < hi {
                let end = hi.min(at + PIECE_EDGES);
                jobs.push((col, sp, at, end, lo));
                at = end;
            }
        }
    }
    let packed = served.grids.first().is_some_and(|(gi, _)| indexes[*gi].packed);
    jobs.par_iter()
        .map(|&(col, sp, lo, hi, block_lo)| {
            let bases = ((sp * psize) as u32, (dp * psize) as u32);
            let raw;
            let (edges, first) = match packed {
                true => {
                    // Every frame of a kept column decoded when its pass read it (rule 1) and
                    // the bytes are immutable since: decoding cannot fail here.
                    let mut buf = Vec::new();
                    let mut first = None;
                    for frame in col.edges[lo as usize..hi as usize].chunks(FRAME_BYTES) {
                        if let Ok((f, _)) = decode_frame(frame, &mut buf) {
                            first.get_or_insert(block_lo + f);
                        }
                    }
                    raw = buf;
                    (&raw[..], first.unwrap_or(block_lo))
                }
                false => (&col.edges[(lo * EDGE_BYTES) as usize..(hi * EDGE_BYTES) as usize], lo),
            };
            let n = edges.len() / 4;
            let w = col.weights.as_ref().map(|w| {
                let at = (first * WEIGHT_BYTES) as usize;
                &w[at.min(w.len())..(at + n * WEIGHT_BYTES as usize).min(w.len())]
            });
            let mut out = Vec::with_capacity(if K::PER_EDGE { n } else { n / 2 });
            block_to_values(pass.kernel, pass.active, pass.prev, bases, (edges, w), &mut out);
            out
        })
        .collect()
}
