//! The block cache of the streaming mode (issue 15 lever 2, "keep what fits"): whole columns of
//! a grid (all blocks into one destination partition, one contiguous range of the edge file)
//! that a pass read and checked stay in memory for the later passes of the run.
//!
//! # Why columns
//! A pass streams column by column, and each column is applied by one applier on its own
//! slice of the state (engine rules 1 and 2). A column held whole is therefore served without
//! touching the stream order of any other column: the cached columns are applied on the rayon
//! pool beside the pipeline, each by the task that owns its slice, the rest is read from disk,
//! and the edges into every destination are applied in the same order as without the cache
//! (bit-for-bit equal results). PageRank,
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
//!    partial results), plus a slack (16 MiB and 1/8 of the budget; 1/4 for a weighted pass).
//! 3. A column kept from an unweighted pass has no weights: a weighted pass reads it from disk
//!    and keeps it again with its weights (if it fits).
//! 4. A pass that cannot reserve its own memory drops the whole cache and tries once more.
//! 5. Inside [`super::Graph::without_cache_fills`] passes are served what the cache holds but
//!    keep nothing new: for a pass whose reads no later pass of the run needs, the copies and
//!    their fresh pages cost time and memory for nothing. BFS's keeping pass, Kronecker scale
//!    24, cold, `--memory 1G`, three alternated pairs: 1.18–1.46 s against 1.48–1.67 s, peak
//!    reserved 677 MiB against 1023.

use std::collections::HashMap;
use std::sync::Arc;

use sluice_io::{Budget, Reservation};

use super::edge_loop::{apply_block, weights_into};
use super::{EdgeKernel, Pass};
use crate::store::packed::{FRAME_BYTES, decode_checked_frame};
use crate::store::{EDGE_BYTES, GridIndex};

/// Edges of a cached weighted block whose weights are turned into values at a time.
const PIECE_EDGES: u64 = (1 << 18) / EDGE_BYTES;
/// Frames of a cached packed block decoded at a time (at most 2 MiB of edges decoded).
const PIECE_FRAMES: usize = 128;
/// The most a task serving a cached column holds beside it: a piece's decoded edges or its
/// weights as values.
pub(super) const PIECE_BYTES: u64 = 2 << 20;

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
    /// Rule 5: false inside `without_cache_fills`.
    pub(super) filling: bool,
    cols: HashMap<(usize, usize), Kept>,
    /// The largest budget need of one pass measured so far.
    need: u64,
}

impl BlockCache {
    pub(super) fn new() -> BlockCache {
        BlockCache { enabled: true, filling: true, cols: HashMap::new(), need: 0 }
    }

    /// Column `dp` of grid `gi`, if kept with what a pass (weighted or not) needs.
    pub(super) fn get(&self, gi: usize, dp: usize, weighted: bool) -> Option<Column> {
        let k = self.cols.get(&(gi, dp))?;
        (!weighted || k.column.weights.is_some()).then(|| k.column.clone())
    }

    /// Reserves room to keep a column of `bytes`, if the budget keeps its headroom (rule 2);
    /// `partials` is what the coming pass reserves for its partial results.
    pub(super) fn admit(
        &self,
        budget: &Budget,
        bytes: u64,
        partials: u64,
        weighted: bool,
    ) -> Option<Reservation> {
        if !self.enabled || !self.filling {
            return None;
        }
        let left = budget.available();
        let need = match self.need {
            0 => partials + left / 4,
            n => n.max(partials),
        };
        let headroom = need.saturating_add(slack(budget, weighted));
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
/// A weighted pass keeps another eighth: it allocates each column's weights whole (16 MiB a
/// column at Kronecker scale 24) and the allocator keeps freed runs for reuse, so SSSP at
/// scale 24 and `--memory 1G` peaked at 1026 MiB RSS with 910 MiB reserved, and a 1 GiB
/// cgroup killed it. Since session 15 the reorder window's partials are reserved and the
/// pipeline trims the allocator's free pages near the budget; a slack of 16 MiB and 1/16 for
/// both kinds of pass was tried then and not kept: PageRank was no faster (48.8-52.4 s against
/// 48.9-56.1 s, cache 420 -> 511 MB) and SSSP peaked at 1013 MiB with 465 trims.
fn slack(budget: &Budget, weighted: bool) -> u64 {
    (16 << 20) + budget.total() / 8 * if weighted { 2 } else { 1 }
}

/// A column served from the cache in one pass: its partition and each grid's kept bytes.
pub(super) struct Served {
    pub(super) dp: usize,
    pub(super) grids: Vec<(usize, Column)>,
}

/// One cached column being applied: what the cache serves, the partition's state slice and
/// next-active bits (the task applying it owns both).
pub(super) type Target<'a, 's, S> = (&'a Served, (&'s mut [S], &'s mut [u64]));

/// Applies a group of cached columns (`Graph::column_group`) source partition by source
/// partition, so each source segment is read once per group; each column's blocks run grid by
/// grid, source partition by source partition, skipping inactive ones, edge by edge — the
/// order of a disk pass and of the in-memory mode, so the same bits. Raw blocks are applied
/// where they lie; packed ones are decoded [`PIECE_FRAMES`] frames at a time, weights turned
/// into values [`PIECE_EDGES`] at a time. Returns, per column, the vertices newly set in its
/// bits.
pub(super) fn apply_columns<K: EdgeKernel>(
    pass: &Pass<'_, K>,
    cols: &mut [Target<'_, '_, K::State>],
    indexes: &[&GridIndex],
    (p, psize): (usize, usize),
) -> Vec<u64> {
    let mut changed = vec![0; cols.len()];
    let mut bufs = (Vec::new(), Vec::new());
    for &gi in &pass.grids {
        for sp in (0..p).filter(|&sp| pass.active.has_partition(sp)) {
            for ((served, (state, bits)), n) in cols.iter_mut().zip(&mut changed) {
                let Some((_, col)) = served.grids.iter().find(|(g, _)| *g == gi) else {
                    continue;
                };
                let block = (indexes[gi], p, served.dp, sp);
                let bases = ((sp * psize) as u32, (served.dp * psize) as u32);
                *n += apply_cached_block(pass, col, block, bases, (state, bits), &mut bufs);
            }
        }
    }
    changed
}

/// Applies block `(dp, sp)` of a cached column of `index`'s grid (`P = p`) to the column's
/// state and bits; `bufs`: a piece's decoded edges and its weights as values.
fn apply_cached_block<K: EdgeKernel>(
    pass: &Pass<'_, K>,
    col: &Column,
    (index, p, dp, sp): (&GridIndex, usize, usize, usize),
    (sbase, dbase): (u32, u32),
    (state, bits): (&mut [K::State], &mut [u64]),
    (buf, w): &mut (Vec<u8>, Vec<f64>),
) -> u64 {
    let b = dp * p + sp;
    let (base, bbase) = (index.offsets[dp * p], index.bytes[dp * p]);
    let (lo, hi) = (index.offsets[b] - base, index.offsets[b + 1] - base);
    let mut changed = 0;
    let mut apply = |edges: &[u8], weights: Option<&[u8]>, w: &mut Vec<f64>| {
        let weights = weights.map(|x| {
            weights_into(x, w);
            &w[..]
        });
        changed += apply_block(
            pass.kernel,
            pass.active,
            pass.prev,
            (sbase, dbase),
            (edges, weights),
            state,
            bits,
        );
    };
    if index.packed {
        let (blo, bhi) = ((index.bytes[b] - bbase) as usize, (index.bytes[b + 1] - bbase) as usize);
        for piece in col.edges[blo..bhi].chunks(PIECE_FRAMES * FRAME_BYTES) {
            buf.clear();
            let mut first = None;
            for frame in piece.chunks(FRAME_BYTES) {
                // Every frame of a kept column decoded, its CRC checked, when its pass read it
                // (rule 1) and the bytes are immutable since: decoding cannot fail here, and
                // the CRC is not computed again (as a raw kept column's is not).
                if let Ok((f, _)) = decode_checked_frame(frame, buf) {
                    first.get_or_insert(lo + f);
                }
            }
            let first = first.unwrap_or(lo);
            apply(buf, weights(col, first, buf.len() / 4), w);
        }
        return changed;
    }
    let mut at = lo;
    while at < hi {
        let end = match col.weights {
            Some(_) => hi.min(at + PIECE_EDGES),
            None => hi,
        };
        let edges = &col.edges[(at * EDGE_BYTES) as usize..(end * EDGE_BYTES) as usize];
        apply(edges, weights(col, at, (end - at) as usize), w);
        at = end;
    }
    changed
}

/// The weights of `n` edges from edge `first` of a kept column, if it kept them.
fn weights(col: &Column, first: u64, n: usize) -> Option<&[u8]> {
    col.weights.as_ref().map(|w| {
        let at = (first * WEIGHT_BYTES) as usize;
        &w[at.min(w.len())..(at + n * WEIGHT_BYTES as usize).min(w.len())]
    })
}
