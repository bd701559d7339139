//! The streaming mode: every pass reads the selected blocks through the `sluice-io` block
//! pipeline; workers check and decode what they read (packed frames into the raw encoding),
//! the calling thread checks each block's checksum and gathers a column's reads in stream
//! order, and an applier that owns the column's slice of the state runs the edge loop of both
//! modes (`edge_loop`) over them. A raw read's bytes reach the applier in the pipeline's own
//! buffer, held until its column is applied (`sluice_io` pool rule 5; a copy when the pool
//! grants no more holds): between the disk and the edge loop nothing copies them. Columns the
//! block cache serves run the same loop on the rayon pool beside the stream, each on its own
//! slice.
//!
//! A weighted pass reads each extent's weights (the same edges' range of the weight file) right
//! before its edges, in the same plan, so the pipeline streams and counts them too. A worker
//! cannot pair an edge block with a weight block another worker holds, so the calling thread
//! pairs each read's edges with their run's weights in stream order.

use std::ops::Range;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use sluice_io::{Block, BlockBuffer, BlockKernel, HeldBytes, RunStats};

use super::edge_loop::{apply_block, weights_into};
use super::{EdgeKernel, Graph, Pass, PassStats, VertexSet, block_error, cache};
use crate::Error;
use crate::store::EDGE_BYTES;

/// The pass's plan: which blocks are read, which served from the block cache, which kept.
mod layout;
/// Unordered edge visits ([`Graph::for_each_edge`]): a pass without the ordered apply.
mod visit;

use layout::{BadFrame, Fills, Layout, Read, partials_bytes};

/// Bytes of one stored weight.
const WEIGHT_BYTES: u64 = 8;

/// What a worker makes of one read.
enum Values {
    /// The read's edges in the raw encoding (packed frames decoded), one piece per grid block
    /// it overlaps.
    Edges { bytes: EdgeBytes, pieces: Vec<Piece> },
    /// Raw weights of a run, from byte `offset` of its weight extent.
    Weights { offset: u64, bytes: Vec<u8> },
}

/// A read's edges in the raw encoding: the pipeline's buffer itself when the pool lets the
/// worker hold it (a raw read: no copy between the disk and the edge loop), else a copy, or
/// the frames decoded.
enum EdgeBytes {
    Held(HeldBytes),
    Owned(Vec<u8>),
}

impl std::ops::Deref for EdgeBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            EdgeBytes::Held(h) => h.bytes(),
            EdgeBytes::Owned(v) => v,
        }
    }
}

/// The part of one read that lies in one grid block, and its weights.
struct Piece {
    sbase: u32,
    /// Index of the first edge relative to its run.
    first: u64,
    /// Its edges' range of the read's decoded bytes.
    range: Range<usize>,
    /// The run's weights and this piece's byte range of them (paired by the calling thread).
    weights: Option<(Arc<Vec<u8>>, Range<usize>)>,
}

struct Partial {
    ext: usize,
    dp: usize,
    /// Edge bytes of the block.
    bytes: u64,
    /// (block, CRC-32 of the piece, piece bytes), in stream order.
    pieces: Vec<(usize, crc32fast::Hasher, u64)>,
    values: Values,
    /// The edge bytes read, when the extent's column is being kept.
    keep: Option<Vec<u8>>,
    /// A packed frame that did not decode.
    bad: BadFrame,
}

/// A finished column for an applier: partition, its reads in stream order, its state and
/// next-active bits.
type Job<'s, S> = (usize, Vec<Values>, &'s mut [S], &'s mut [u64]);

/// One partition's state and next-active bits.
type Slice<'s, S> = (&'s mut [S], &'s mut [u64]);

/// A column being gathered: partition, reads in stream order, edge bytes so far.
type Column = (usize, Vec<Values>, u64);

/// What [`Graph::apply_in_columns`] works on.
struct Columns<'a, 's, K: EdgeKernel> {
    pass: &'a Pass<'a, K>,
    layout: &'a Layout,
    weighted: bool,
    state: &'s mut [K::State],
    bits: &'s mut [u64],
    counts: &'a Mutex<Vec<u64>>,
    fills: &'a mut Fills,
}

impl Graph {
    pub(super) fn stream_from_disk<K: EdgeKernel>(
        &self,
        pass: &Pass<'_, K>,
        state: &mut [K::State],
    ) -> Result<VertexSet, Error> {
        match self.stream_cached(pass, state) {
            // Cache contract rule 4: the pass's own memory comes first. No value was applied
            // yet: the pass reserves its partials and the pipeline its pool before any read.
            Err(Error::Pipeline(sluice_io::Error::OverBudget { .. }))
                if self.cache_resident() > 0 =>
            {
                self.cache().clear();
                self.stream_cached(pass, state)
            }
            r => r,
        }
    }

    fn stream_cached<K: EdgeKernel>(
        &self,
        pass: &Pass<'_, K>,
        state: &mut [K::State],
    ) -> Result<VertexSet, Error> {
        let weighted = K::WEIGHTED && self.meta.weighted;
        let mut layout = self.layout(pass.active, &pass.grids, weighted, true)?;
        let partials = partials_bytes(&layout, weighted);
        self.plan_fills(&mut layout, weighted, partials);
        let mut next = VertexSet::empty_like(self);
        let mut st_pass = PassStats {
            passes: 1,
            blocks_skipped: layout.skipped,
            blocks_streamed: layout.blocks.len() as u64,
            edges_streamed: layout.edges,
            ..PassStats::default()
        };
        let start = self.budget.available();
        let mut fills = Fills {
            edges: vec![Vec::new(); layout.extents.len()],
            weights: vec![None; layout.extents.len()],
            min_available: start,
        };
        if !layout.extents.is_empty() || !layout.served.is_empty() {
            let counts = Mutex::new(vec![0u64; self.meta.partitions as usize]);
            let run = self.apply_in_columns(Columns {
                pass,
                layout: &layout,
                weighted,
                state,
                bits: &mut next.bits,
                counts: &counts,
                fills: &mut fills,
            })?;
            next.part_counts = counts.into_inner().unwrap_or_else(|e| e.into_inner());
            st_pass.run.merge(&run);
        }
        st_pass.cache_bytes = layout
            .served
            .iter()
            .flat_map(|c| &c.grids)
            .map(|(_, c)| c.edges.len() as u64 + c.weights.as_ref().map_or(0, |w| w.len() as u64))
            .sum();
        self.keep_fills(&mut layout, fills, start);
        // The pass's partial results and weight runs are freed: their holes in the arena go
        // back to the kernel before the next pass. Scale-24 SSSP at `--memory 1G` with the
        // weighted slack (cache.rs): peak RSS 1008 MiB without this, 990 MiB with it (819 MiB
        // reserved, one run each). Within a pass the pipeline trims only near the budget
        // (`Budget::hold_resident`); this trim starts each pass from the live bytes.
        sluice_io::trim_malloc_arenas();
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        st.passes += 1;
        st.blocks_skipped += st_pass.blocks_skipped;
        st.blocks_streamed += st_pass.blocks_streamed;
        st.edges_streamed += st_pass.edges_streamed;
        st.cache_bytes += st_pass.cache_bytes;
        st.bytes_per_pass.push(st_pass.run.bytes_read);
        st.run.merge(&st_pass.run);
        Ok(next)
    }

    /// Runs the pipeline; the calling thread checks block checksums (rule 5), pairs edges with
    /// their weights and gathers each column's partial results in stream order; a finished
    /// column goes to an applier thread that owns that partition's slice of the state (rules 1
    /// and 2).
    fn apply_in_columns<K: EdgeKernel>(&self, c: Columns<'_, '_, K>) -> Result<RunStats, Error> {
        let p = self.meta.partitions as usize;
        let psize = self.meta.partition_size as usize;
        let Columns { pass, layout, weighted, state, bits, counts, fills } = c;
        let mut slices: Vec<Option<Slice<'_, K::State>>> = state[..p * psize]
            .chunks_mut(psize)
            .zip(bits[..p * psize / 64].chunks_mut(psize / 64))
            .map(Some)
            .collect();
        let appliers = rayon::current_num_threads().clamp(1, 4);
        let _partials =
            self.budget.reserve("column partial results", partials_bytes(layout, weighted))?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Job<'_, K::State>>(appliers * 2);
        let rx = Mutex::new(rx);
        let pk = PassKernel::new(layout, psize, self.packed());
        let out = std::thread::scope(|scope| {
            for _ in 0..appliers {
                let rx = &rx;
                scope.spawn(move || apply_columns(pass, rx, psize, counts));
            }
            // Columns kept in the block cache: applied on the rayon pool beside the stream, a
            // group of columns per task that owns their slices (cache module).
            let mut served: Vec<_> =
                layout.served.iter().filter_map(|c| Some((c, slices[c.dp].take()?))).collect();
            if !served.is_empty() {
                let indexes = self.grids.iter().map(|g| &g.index).collect::<Vec<_>>();
                let group = self.column_group();
                scope.spawn(move || {
                    served.par_chunks_mut(group).for_each(|cols| {
                        if self.pipeline.cancel_requested() {
                            return; // the pass ends with `Cancelled` below
                        }
                        let changed = cache::apply_columns(pass, cols, &indexes, (p, psize));
                        if let Ok(mut counts) = counts.lock() {
                            cols.iter().zip(changed).for_each(|(c, n)| counts[c.0.dp] += n);
                        }
                    });
                });
            }
            let mut failure: Option<Error> = None;
            let mut cur: Option<(usize, crc32fast::Hasher, u64)> = None;
            let mut col: Option<Column> = None;
            // The weights of the run being read, then (complete) shared with its edge pieces.
            let mut reading: (usize, Vec<u8>) = (usize::MAX, Vec::new());
            let mut read: (usize, Arc<Vec<u8>>) = (usize::MAX, Arc::default());
            // The run before `read`'s: its buffer serves the next run when no piece holds it
            // any more, instead of a fresh allocation per run (whose holes the heap kept: peak
            // RSS 1026 MiB against 910 MiB reserved for scale-24 SSSP, session 13). It is one
            // of the two runs `read` and `reading` hold at once, so the peak is unchanged.
            let mut spare: Option<Arc<Vec<u8>>> = None;
            let blocks = &layout.blocks;
            if layout.extents.is_empty() {
                return Ok(RunStats::default());
            }
            let res = self.pipeline.run_ordered(&layout.plan, &pk, |mut part| {
                if failure.is_some() {
                    return;
                }
                fills.min_available = fills.min_available.min(self.budget.available());
                if let Some(bytes) = part.keep.take() {
                    let want = layout.extents[part.ext].bytes;
                    let kept = &mut fills.edges[part.ext];
                    if kept.capacity() == 0 {
                        kept.reserve_exact(want as usize);
                    }
                    kept.extend_from_slice(&bytes);
                }
                if let Some((bi, e)) = part.bad.take() {
                    let br = &blocks[bi];
                    failure = Some(self.frame_failure(br.grid, br.block, &e));
                    return;
                }
                match &mut part.values {
                    Values::Weights { offset, bytes } => {
                        // The run's whole weights, allocated once at their size (the run
                        // that `partials_bytes` reserves): growing by doubling held up to
                        // three times a run while it was copied.
                        let run = layout.extents[part.ext].edges * WEIGHT_BYTES;
                        if reading.0 != part.ext {
                            let old = spare.take().and_then(|a| Arc::try_unwrap(a).ok());
                            let buf = match old.filter(|v| v.capacity() as u64 >= run) {
                                Some(mut v) => {
                                    v.clear();
                                    v
                                }
                                None => Vec::with_capacity(run as usize),
                            };
                            reading = (part.ext, buf);
                        }
                        if *offset != reading.1.len() as u64 || *offset + bytes.len() as u64 > run {
                            failure = Some(Error::corrupt(&self.dir, "weights out of order"));
                            return;
                        }
                        reading.1.extend_from_slice(bytes);
                        return;
                    }
                    Values::Edges { pieces, .. } if weighted => {
                        if read.0 != part.ext && reading.0 == part.ext {
                            let run = Arc::new(std::mem::take(&mut reading.1));
                            spare = Some(std::mem::replace(&mut read, (part.ext, run)).1);
                            reading.0 = usize::MAX;
                            if let Err(e) = self.verify_weights(layout, part.ext, &read.1) {
                                failure = Some(e);
                                return;
                            }
                            if layout.fills[part.ext].is_some() {
                                fills.weights[part.ext] = Some(Arc::clone(&read.1));
                            }
                        }
                        for x in pieces {
                            let lo = (x.first * WEIGHT_BYTES) as usize;
                            let hi = lo + x.range.len() / 4 * WEIGHT_BYTES as usize;
                            if read.0 != part.ext || hi > read.1.len() {
                                failure = Some(Error::corrupt(&self.dir, "weights missing"));
                                return;
                            }
                            x.weights = Some((Arc::clone(&read.1), lo..hi));
                        }
                    }
                    Values::Edges { .. } => {}
                }
                for (bi, crc, len) in part.pieces {
                    let (b, hasher, done) =
                        cur.get_or_insert_with(|| (bi, crc32fast::Hasher::new(), 0));
                    if *b != bi {
                        let br = &blocks[*b];
                        failure = Some(block_error(&self.grids[br.grid].edges, br.block, p));
                        return;
                    }
                    hasher.combine(&crc);
                    *done += len;
                    let br = &blocks[bi];
                    if *done == br.bend - br.bstart {
                        let Some((_, h, _)) = cur.take() else { return };
                        if h.finalize() != self.grids[br.grid].index.crcs[br.block] {
                            failure = Some(block_error(&self.grids[br.grid].edges, br.block, p));
                            return;
                        }
                    }
                }
                let (dp, parts, got) = col.get_or_insert_with(|| (part.dp, Vec::new(), 0));
                if *dp != part.dp {
                    failure = Some(Error::corrupt(&self.dir, "pass out of column order"));
                    return;
                }
                *got += part.bytes;
                parts.push(part.values);
                if *got == layout.col_bytes[*dp] {
                    let Some((dp, parts, _)) = col.take() else { return };
                    if let Some((slice, bits)) = slices[dp].take() {
                        let _ = tx.send((dp, parts, slice, bits));
                    }
                }
            });
            drop(tx);
            let run = res.map_err(Error::from)?;
            if let Some(e) = failure {
                return Err(e);
            }
            if cur.is_some() || col.is_some() {
                return Err(Error::corrupt(&self.dir, "a pass ended inside a block"));
            }
            Ok(run)
        });
        // A pass served from the block cache never enters the pipeline's read loop, which is
        // where a run notices its caller's cancel flag: check it here too (the Python package's
        // Ctrl-C).
        if self.pipeline.cancel_requested() {
            return Err(sluice_io::Error::Cancelled.into());
        }
        out
    }
}

/// An applier: takes finished columns and runs the edge loop over their reads, in stream
/// order, on the column's slice of the state.
fn apply_columns<K: EdgeKernel>(
    pass: &Pass<'_, K>,
    rx: &Mutex<Receiver<Job<'_, K::State>>>,
    psize: usize,
    counts: &Mutex<Vec<u64>>,
) {
    let mut w = Vec::new();
    loop {
        let job = match rx.lock() {
            Ok(r) => r.recv(),
            Err(_) => return,
        };
        let Ok((dp, parts, slice, bits)) = job else { return };
        let dbase = (dp * psize) as u32;
        let mut changed = 0u64;
        for part in parts {
            let Values::Edges { bytes, pieces } = part else { continue };
            for x in pieces {
                let weights = x.weights.as_ref().map(|(run, r)| {
                    weights_into(&run[r.clone()], &mut w);
                    &w[..]
                });
                changed += apply_block(
                    pass.kernel,
                    pass.active,
                    pass.prev,
                    (x.sbase, dbase),
                    (&bytes[x.range], weights),
                    slice,
                    bits,
                );
            }
        }
        if let Ok(mut c) = counts.lock() {
            c[dp] += changed;
        }
    }
}

impl Graph {
    /// The error of a packed block whose frame did not decode: a checksum mismatch as such.
    pub(super) fn frame_failure(
        &self,
        grid: usize,
        block: usize,
        e: &crate::store::packed::FrameError,
    ) -> Error {
        let (path, p) = (&self.grids[grid].edges, self.meta.partitions as usize);
        match e {
            crate::store::packed::FrameError::Checksum => block_error(path, block, p),
            e => super::frame_error(path, block, p, e),
        }
    }

    /// Checks a run's weights block by block before any is used (`store::weights`, rule 2).
    fn verify_weights(&self, layout: &Layout, ext: usize, run: &[u8]) -> Result<(), Error> {
        let e = &layout.extents[ext];
        let g = &self.grids[e.grid];
        let path = g.weights.as_deref().unwrap_or(&self.dir);
        let blocks = e.blocks.iter().map(|&bi| &layout.blocks[bi]);
        let blocks = blocks.map(|br| (br.block, br.start..br.end));
        crate::store::weights::verify_run(
            path,
            &g.index,
            self.meta.partitions as usize,
            run,
            blocks,
        )
    }
}

/// A worker's part of a pass: checksums, decoding, the pieces of each read.
struct PassKernel<'a> {
    layout: &'a Layout,
    psize: usize,
    packed: bool,
    /// Heap bytes a read's partial holds per stored byte, in sixteenths: its edges decoded
    /// (packed: the pass's decoded-to-stored ratio, rounded up), or its weights copied, and a
    /// copy for the block cache when the pass fills it.
    held_x16: u64,
}

impl<'a> PassKernel<'a> {
    fn new(layout: &'a Layout, psize: usize, packed: bool) -> PassKernel<'a> {
        let stored: u64 = layout.extents.iter().map(|e| e.bytes).sum();
        let decoded: u64 = layout.extents.iter().map(|e| e.edges * EDGE_BYTES).sum();
        let expand = match packed && stored > 0 {
            true => (decoded * 16).div_ceil(stored).max(16),
            false => 16,
        };
        let keep = if layout.fills.iter().any(Option::is_some) { 16 } else { 0 };
        PassKernel { layout, psize, packed, held_x16: expand + keep }
    }
}

impl BlockKernel for PassKernel<'_> {
    type Partial = Partial;
    fn partial_bytes(&self, len: usize) -> u64 {
        (len as u64).saturating_mul(self.held_x16).div_ceil(16)
    }

    fn process(&self, b: &Block<'_>) -> Self::Partial {
        self.process_in(b, &BlockBuffer::NONE)
    }

    fn process_in(&self, b: &Block<'_>, buffer: &BlockBuffer<'_>) -> Self::Partial {
        let (ext, read) = self.layout.reads[b.extent];
        let e = &self.layout.extents[ext];
        if read != Read::Edges {
            // Weights (cut at the end of the run: a packed pass's frame filler may follow in
            // the same read), or filler alone.
            let (len, offset) = (e.edges * WEIGHT_BYTES, b.extent_offset);
            let (offset, bytes) = match read {
                Read::Weights => {
                    let keep = (len.saturating_sub(offset) as usize).min(b.data.len());
                    (offset, b.data[..keep].to_vec())
                }
                _ => (len, Vec::new()),
            };
            let values = Values::Weights { offset, bytes };
            return Partial {
                ext,
                dp: e.dp,
                bytes: 0,
                pieces: Vec::new(),
                values,
                keep: None,
                bad: None,
            };
        }
        let data = &b.data[..b.data.len() / 4 * 4];
        let mut checks = Vec::new();
        let (mut pieces, mut bad) = (Vec::new(), None);
        let sbase = |br: &layout::BlockRef| (br.sp * self.psize) as u32;
        let bytes = if self.packed {
            // Frames decoded here, on the worker: the applier finds the raw encoding.
            let mut out = Vec::with_capacity(crate::store::packed::decoded_bytes(b.data));
            bad = self.layout.frames(
                e,
                b.extent_offset,
                b.data,
                &mut checks,
                &mut out,
                |br, lo, _, r| {
                    pieces.push(Piece { sbase: sbase(br), first: lo, range: r, weights: None })
                },
            );
            EdgeBytes::Owned(out)
        } else {
            let first = b.extent_offset / EDGE_BYTES; // edge index relative to the extent
            for (br, lo, bytes) in self.layout.pieces(e, first, data, &mut checks) {
                let at = ((lo - first) * EDGE_BYTES) as usize;
                let range = at..at + bytes.len();
                pieces.push(Piece { sbase: sbase(br), first: lo, range, weights: None });
            }
            // A held buffer covers the whole block; the pieces index its whole edges only.
            match buffer.hold() {
                Some(h) => EdgeBytes::Held(h),
                None => EdgeBytes::Owned(data.to_vec()),
            }
        };
        Partial {
            ext,
            dp: e.dp,
            bytes: b.data.len() as u64,
            pieces: checks,
            values: Values::Edges { bytes, pieces },
            keep: self.layout.fills[ext].is_some().then(|| b.data.to_vec()),
            bad,
        }
    }
}
