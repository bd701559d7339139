//! The plan of one edge pass: the selected blocks column by column, runs of adjacent blocks as
//! extents; the columns the block cache serves instead (`engine::cache`); the extents that
//! cover a whole column and are kept by this pass; what the pass reserves for partial results.

use std::ops::Range;
use std::sync::Arc;

use sluice_io::Plan;

use super::WEIGHT_BYTES;
use crate::Error;
use crate::engine::{Graph, VertexSet, cache};
use crate::store::EDGE_BYTES;

/// One run of adjacent selected blocks of one column of one grid.
#[derive(Debug)]
pub(super) struct Ext {
    pub(super) grid: usize,
    pub(super) dp: usize,
    /// Edge index (in the grid's edge file) of the extent's first edge.
    pub(super) first_edge: u64,
    pub(super) edges: u64,
    /// Byte offset in the grid's edge file and stored bytes (4 per edge unless packed).
    pub(super) first_byte: u64,
    pub(super) bytes: u64,
    /// Indexes into the pass's `BlockRef` list, in file order.
    pub(super) blocks: Vec<usize>,
}

/// One grid block of a pass.
#[derive(Debug)]
pub(super) struct BlockRef {
    pub(super) grid: usize,
    pub(super) block: usize,
    pub(super) sp: usize,
    /// Edge range relative to the extent's first edge.
    pub(super) start: u64,
    pub(super) end: u64,
    /// Stored byte range relative to the extent's first byte.
    pub(super) bstart: u64,
    pub(super) bend: u64,
}

/// What one plan extent reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Read {
    Edges,
    Weights,
    /// Bytes that only align the next edge extent to a frame boundary (packed weighted
    /// passes: the pipeline cuts the stream every frame); ignored.
    Filler,
}

/// The selected blocks of a pass and the plan that reads them.
pub(super) struct Layout {
    pub(super) plan: Plan,
    pub(super) extents: Vec<Ext>,
    /// For each plan extent: the [`Ext`] it reads, and what of it.
    pub(super) reads: Vec<(usize, Read)>,
    pub(super) blocks: Vec<BlockRef>,
    /// Stored edge bytes of each column read from disk.
    pub(super) col_bytes: Vec<u64>,
    /// Edges × 4 of the largest column the pass reads from disk: what its partial results
    /// are sized by.
    pub(super) max_col: u64,
    pub(super) skipped: u64,
    pub(super) edges: u64,
    /// Columns served from the block cache.
    pub(super) served: Vec<cache::Served>,
    /// For each extent: room reserved to keep its column (it covers a whole column).
    pub(super) fills: Vec<Option<sluice_io::Reservation>>,
}

impl Layout {
    /// The grid blocks a read of extent `e` overlaps (`data`: its whole edges, starting at
    /// edge `first` of the extent), in file order: each block's `BlockRef`, the extent-relative
    /// index of the piece's first edge and its bytes in this read. `checks` gets each piece's CRC state and length, which the stream
    /// combines per block to check the block's checksum (rule 5). The one walk for the ordered
    /// passes and the unordered visit.
    pub(super) fn pieces<'d>(
        &'d self,
        e: &'d Ext,
        first: u64,
        data: &'d [u8],
        checks: &'d mut Vec<(usize, crc32fast::Hasher, u64)>,
    ) -> impl Iterator<Item = (&'d BlockRef, u64, &'d [u8])> + 'd {
        // Raw blocks only: a packed pass decodes frames first (`Layout::frames`).
        let last = first + (data.len() / 4) as u64;
        let k0 = e.blocks.partition_point(|&bi| self.blocks[bi].end <= first);
        e.blocks[k0..].iter().map_while(move |&bi| {
            let br = &self.blocks[bi];
            if br.start >= last {
                return None;
            }
            let (lo, hi) = (br.start.max(first), br.end.min(last));
            let bytes = &data[(lo - first) as usize * 4..(hi - first) as usize * 4];
            let mut crc = crc32fast::Hasher::new();
            crc.update(bytes);
            checks.push((bi, crc, bytes.len() as u64));
            Some((br, lo, bytes))
        })
    }
}

/// Frames that failed to decode: the pass's `BlockRef` and why.
pub(super) type BadFrame = Option<(usize, crate::store::packed::FrameError)>;

impl Layout {
    /// [`Layout::pieces`] for a packed pass: decodes the whole frames `data` read from byte
    /// `off` of extent `e`, appending their edges to `out` (raw encoding), and calls `f(block,
    /// first, out, range)` for each run of frames of one block once its edges are in `out`
    /// (`first`: the extent-relative index of the run's first edge, `range`: its bytes of
    /// `out`). `checks` gets each frame's CRC state and length. Stops at the first frame that
    /// does not decode.
    pub(super) fn frames(
        &self,
        e: &Ext,
        off: u64,
        data: &[u8],
        checks: &mut Vec<(usize, crc32fast::Hasher, u64)>,
        out: &mut Vec<u8>,
        mut f: impl FnMut(&BlockRef, u64, &[u8], Range<usize>),
    ) -> BadFrame {
        use crate::store::packed::{FRAME_BYTES, FrameError, decode_frame};
        let mut k = e.blocks.partition_point(|&bi| self.blocks[bi].bend <= off);
        // The block being decoded, the extent-relative index of its run's first edge, the next,
        // and where its edges start in `out`.
        let mut cur: Option<(usize, u64, u64, usize)> = None;
        for (i, frame) in data.chunks(FRAME_BYTES).enumerate() {
            let at = off + (i * FRAME_BYTES) as u64;
            while k < e.blocks.len() && self.blocks[e.blocks[k]].bend <= at {
                k += 1;
            }
            let Some(&bi) = e.blocks.get(k) else {
                let last = *e.blocks.last()?;
                return Some((last, FrameError::Malformed("a frame past its extent")));
            };
            let mut crc = crc32fast::Hasher::new();
            crc.update(frame);
            checks.push((bi, crc, frame.len() as u64));
            if let Some((b, first, _, at)) = cur.filter(|c| c.0 != bi) {
                f(&self.blocks[b], first, out, at..out.len());
                cur = None;
            }
            let br = &self.blocks[bi];
            let at = out.len();
            match decode_frame(frame, out) {
                Ok((first, count)) => {
                    let (first, end) = (br.start + first, br.start + first + count);
                    let (_, _, next, _) = cur.get_or_insert((bi, first, first, at));
                    if *next != first || end > br.end {
                        return Some((bi, FrameError::Malformed("frames out of order")));
                    }
                    *next = end;
                }
                Err(err) => return Some((bi, err)),
            }
        }
        if let Some((b, first, _, at)) = cur {
            f(&self.blocks[b], first, out, at..out.len());
        }
        None
    }
}

/// Bytes of the columns being kept, by extent: edges, and the verified weights of the run.
#[derive(Default)]
pub(super) struct Fills {
    pub(super) edges: Vec<Vec<u8>>,
    pub(super) weights: Vec<Option<Arc<Vec<u8>>>>,
    /// The least budget left seen while the pass ran (its pool and partials held).
    pub(super) min_available: u64,
}

impl Graph {
    /// Reserves room to keep the columns this pass reads whole (cache contract rule 2).
    pub(super) fn plan_fills(&self, l: &mut Layout, weighted: bool, partials: u64) {
        let p = self.meta.partitions as usize;
        let cache = self.cache();
        for (i, e) in l.extents.iter().enumerate() {
            let offsets = &self.grids[e.grid].index.offsets;
            let (lo, hi) = (offsets[e.dp * p], offsets[e.dp * p + p]);
            if e.first_edge != lo
                || e.edges != hi - lo
                || cache.get(e.grid, e.dp, weighted).is_some()
            {
                continue;
            }
            let bytes = e.bytes + if weighted { e.edges * WEIGHT_BYTES } else { 0 };
            l.fills[i] = cache.admit(&self.budget, bytes, partials, weighted);
        }
    }

    /// Keeps the columns read whole and checked (the pass succeeded: cache contract rule 1);
    /// records the pass's budget need.
    pub(super) fn keep_fills(&self, l: &mut Layout, fills: Fills, start: u64) {
        let held: u64 = l.fills.iter().flatten().map(|r| r.bytes()).sum();
        let mut cache = self.cache();
        if !l.extents.is_empty() {
            cache.measured(start.saturating_sub(fills.min_available).saturating_sub(held));
        }
        let parts = fills.edges.into_iter().zip(fills.weights);
        for (i, (edges, weights)) in parts.enumerate() {
            let Some(res) = l.fills[i].take() else { continue };
            let e = &l.extents[i];
            let whole = edges.len() as u64 == e.bytes;
            let weights_ok =
                weights.as_ref().is_some_and(|w| w.len() as u64 == e.edges * WEIGHT_BYTES);
            if !whole || (res.bytes() > edges.len() as u64 && !weights_ok) {
                continue;
            }
            let column =
                cache::Column { edges: Arc::new(edges), weights: weights.filter(|_| weights_ok) };
            cache.keep(e.grid, e.dp, column, res);
        }
    }

    /// The plan: selected blocks, column by column; runs of adjacent selected blocks of one
    /// column and grid are one extent (large sequential reads, no per-block alignment waste),
    /// preceded by the run's weights when `weighted`. Columns kept in the block cache for
    /// every grid of the pass are served from it instead, when `cached`.
    pub(super) fn layout(
        &self,
        active: &VertexSet,
        grids: &[usize],
        weighted: bool,
        cached: bool,
    ) -> Result<Layout, Error> {
        let p = self.meta.partitions as usize;
        let mut l = Layout {
            plan: self.new_plan(self.edge_records()),
            extents: Vec::new(),
            reads: Vec::new(),
            blocks: Vec::new(),
            col_bytes: vec![0u64; p],
            max_col: 0,
            skipped: 0,
            edges: 0,
            served: Vec::new(),
            fills: Vec::new(),
        };
        let cache = self.cache();
        for dp in 0..p {
            let kept: Option<Vec<_>> = match cached && cache.enabled {
                true => {
                    grids.iter().map(|&gi| self.cached_column(&cache, gi, dp, weighted)).collect()
                }
                false => None,
            };
            if let Some(kept) = kept {
                for &gi in grids {
                    let o = &self.grids[gi].index.offsets;
                    for sp in (0..p).filter(|&sp| o[dp * p + sp] < o[dp * p + sp + 1]) {
                        let edges = o[dp * p + sp + 1] - o[dp * p + sp];
                        match active.has_partition(sp) {
                            true => l.edges += edges,
                            false => l.skipped += 1,
                        }
                    }
                }
                if kept.iter().all(Option::is_none) {
                    continue;
                }
                let grids =
                    grids.iter().copied().zip(kept).filter_map(|(g, c)| Some((g, c?))).collect();
                l.served.push(cache::Served { dp, grids });
                continue;
            }
            let mut col_edges = 0;
            for &gi in grids {
                let g = &self.grids[gi];
                let mut open: Option<Ext> = None;
                for sp in 0..p {
                    let b = dp * p + sp;
                    let (lo, hi) = (g.index.offsets[b], g.index.offsets[b + 1]);
                    let (blo, bhi) = (g.index.bytes[b], g.index.bytes[b + 1]);
                    if lo == hi {
                        continue;
                    }
                    if !active.has_partition(sp) {
                        l.skipped += 1;
                        if let Some(e) = open.take() {
                            l.extents.push(e);
                        }
                        continue;
                    }
                    let e = open.get_or_insert_with(|| Ext {
                        grid: gi,
                        dp,
                        first_edge: lo,
                        edges: 0,
                        first_byte: blo,
                        bytes: 0,
                        blocks: Vec::new(),
                    });
                    l.blocks.push(BlockRef {
                        grid: gi,
                        block: b,
                        sp,
                        start: lo - e.first_edge,
                        end: hi - e.first_edge,
                        bstart: blo - e.first_byte,
                        bend: bhi - e.first_byte,
                    });
                    e.blocks.push(l.blocks.len() - 1);
                    e.edges += hi - lo;
                    e.bytes += bhi - blo;
                    l.col_bytes[dp] += bhi - blo;
                    col_edges += hi - lo;
                    l.edges += hi - lo;
                }
                if let Some(e) = open.take() {
                    l.extents.push(e);
                }
            }
            l.max_col = l.max_col.max(col_edges * EDGE_BYTES);
        }
        l.fills = l.extents.iter().map(|_| None).collect();
        for (i, e) in l.extents.iter().enumerate() {
            let g = &self.grids[e.grid];
            if let Some(w) = g.weights.as_ref().filter(|_| weighted) {
                l.plan.push_extent(w, e.first_edge * WEIGHT_BYTES, e.edges * WEIGHT_BYTES)?;
                l.reads.push((i, Read::Weights));
                // Packed: the edge frames must start on a multiple of the frame size.
                let frame = crate::store::packed::FRAME_BYTES as u64;
                let rest = (e.edges * WEIGHT_BYTES) % frame;
                if self.packed() && rest != 0 {
                    l.plan.push_extent(&g.edges, 0, frame - rest)?;
                    l.reads.push((i, Read::Filler));
                }
            }
            l.plan.push_extent(&g.edges, e.first_byte, e.bytes)?;
            l.reads.push((i, Read::Edges));
        }
        Ok(l)
    }

    /// Column `dp` of grid `gi` as a pass serves it from the cache: `Some(None)` when the
    /// column is empty, `None` when it is not kept (weights only for a weighted pass).
    fn cached_column(
        &self,
        cache: &cache::BlockCache,
        gi: usize,
        dp: usize,
        weighted: bool,
    ) -> Option<Option<cache::Column>> {
        let (o, p) = (&self.grids[gi].index.offsets, self.meta.partitions as usize);
        if o[dp * p] == o[dp * p + p] {
            return Some(None);
        }
        let mut c = cache.get(gi, dp, weighted)?;
        if !weighted {
            c.weights = None;
        }
        Some(Some(c))
    }
}

/// What a pass reserves for its partial results: the reads of the column being gathered and
/// of the columns queued for appliers, 4 bytes per edge decoded (the largest column read from
/// disk bounds it), 8 more per edge of a weighted pass (an applier's weights as values), plus
/// one run's stored weights; and a piece's decoded edges or weights per rayon thread for the
/// columns the cache serves. No more columns are in flight than the pass has (P = 1: one;
/// issue 16 item 5).
pub(super) fn partials_bytes(layout: &Layout, weighted: bool) -> u64 {
    let appliers = rayon::current_num_threads().clamp(1, 4) as u64;
    let max_col = layout.max_col / EDGE_BYTES;
    let per_edge = EDGE_BYTES + if weighted { WEIGHT_BYTES } else { 0 };
    let max_run = layout.extents.iter().map(|e| e.edges).max().unwrap_or(0);
    let columns = layout.col_bytes.iter().filter(|&&b| b > 0).count() as u64;
    let in_flight = (appliers * 2 + 2).min(columns);
    let served = match layout.served.is_empty() {
        true => 0,
        false => rayon::current_num_threads() as u64 * cache::PIECE_BYTES,
    };
    max_col * per_edge * in_flight + if weighted { max_run * WEIGHT_BYTES } else { 0 } + served
}
