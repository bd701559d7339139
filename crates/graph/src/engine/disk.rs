//! The streaming mode: every pass reads the selected blocks through the `sluice-io` block
//! pipeline; workers decode blocks into per-destination partial results, which appliers apply
//! in stream order, one thread per destination partition.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use sluice_io::{Block, BlockKernel, Plan, RecordLayout, RunStats};

use super::{EdgeKernel, Graph, GridFiles, PassStats, VertexId, VertexSet, block_error, decode};
use crate::Error;
use crate::store::EDGE_BYTES;

impl Graph {
    pub(super) fn stream_from_disk<K: EdgeKernel>(
        &self,
        kernel: &K,
        active: &VertexSet,
        grids: &[usize],
        state: &mut [K::State],
    ) -> Result<VertexSet, Error> {
        let p = self.meta.partitions as usize;
        let psize = self.meta.partition_size as usize;
        let n = self.num_vertices();
        // The plan: selected blocks, column by column; runs of adjacent selected blocks of one
        // column and grid are one extent (large sequential reads, no per-block alignment waste).
        let mut plan =
            Plan::new(RecordLayout::Fixed(std::num::NonZeroUsize::MIN.saturating_add(3)));
        let mut extents: Vec<Ext> = Vec::new();
        let mut blocks: Vec<BlockRef> = Vec::new();
        let mut col_bytes = vec![0u64; p];
        let (mut skipped, mut edges) = (0u64, 0u64);
        for dp in 0..p {
            for &gi in grids {
                let g = &self.grids[gi];
                let mut open: Option<Ext> = None;
                for sp in 0..p {
                    let b = dp * p + sp;
                    let (lo, hi) = (g.index.offsets[b], g.index.offsets[b + 1]);
                    if lo == hi {
                        continue;
                    }
                    if !active.has_partition(sp) {
                        skipped += 1;
                        if let Some(e) = open.take() {
                            extents.push(e);
                        }
                        continue;
                    }
                    let e = open.get_or_insert_with(|| Ext {
                        grid: gi,
                        dp,
                        first_edge: lo,
                        edges: 0,
                        blocks: Vec::new(),
                    });
                    blocks.push(BlockRef {
                        grid: gi,
                        block: b,
                        sp,
                        start: lo - e.first_edge,
                        end: hi - e.first_edge,
                    });
                    e.blocks.push(blocks.len() - 1);
                    e.edges += hi - lo;
                    col_bytes[dp] += (hi - lo) * EDGE_BYTES;
                    edges += hi - lo;
                }
                if let Some(e) = open.take() {
                    extents.push(e);
                }
            }
        }
        for e in &extents {
            plan.push_extent(
                &self.grids[e.grid].edges,
                e.first_edge * EDGE_BYTES,
                e.edges * EDGE_BYTES,
            )?;
        }
        let mut next = VertexSet::empty_like(self);
        let mut st_pass = PassStats {
            passes: 1,
            blocks_skipped: skipped,
            blocks_streamed: blocks.len() as u64,
            edges_streamed: edges,
            ..PassStats::default()
        };
        if !extents.is_empty() {
            let weight_files: Vec<Option<File>> = self
                .grids
                .iter()
                .map(|g| match (&g.weights, K::WEIGHTED) {
                    (Some(w), true) => {
                        File::open(w).map(Some).map_err(|e| Error::io(w, "cannot open", e))
                    }
                    _ => Ok(None),
                })
                .collect::<Result<_, _>>()?;
            let pk = PassKernel {
                kernel,
                extents: &extents,
                blocks: &blocks,
                psize,
                weight_files: &weight_files,
                grids: &self.grids,
            };
            let counts = Mutex::new(vec![0u64; p]);
            let run = self.apply_in_columns(
                &plan,
                &pk,
                &blocks,
                &col_bytes,
                state,
                &mut next.bits,
                &counts,
                n,
            )?;
            next.part_counts = counts.into_inner().unwrap_or_else(|e| e.into_inner());
            st_pass.run.merge(&run);
        }
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        st.passes += 1;
        st.blocks_skipped += st_pass.blocks_skipped;
        st.blocks_streamed += st_pass.blocks_streamed;
        st.edges_streamed += st_pass.edges_streamed;
        st.run.merge(&st_pass.run);
        Ok(next)
    }

    /// Runs the pipeline; the calling thread checks block checksums (rule 5) and gathers each
    /// column's partial results in stream order; a finished column goes to an applier thread
    /// that owns that partition's slice of the state (rules 1 and 2).
    #[allow(clippy::too_many_arguments)]
    fn apply_in_columns<K: EdgeKernel>(
        &self,
        plan: &Plan,
        pk: &PassKernel<'_, K>,
        blocks: &[BlockRef],
        col_bytes: &[u64],
        state: &mut [K::State],
        bits: &mut [u64],
        counts: &Mutex<Vec<u64>>,
        n: usize,
    ) -> Result<RunStats, Error> {
        let p = self.meta.partitions as usize;
        let psize = self.meta.partition_size as usize;
        let kernel = pk.kernel;
        let mut slices: Vec<Option<(&mut [K::State], &mut [u64])>> = state[..p * psize]
            .chunks_mut(psize)
            .zip(bits[..p * psize / 64].chunks_mut(psize / 64))
            .map(Some)
            .collect();
        let appliers = rayon::current_num_threads().clamp(1, 4);
        // Partials of the column being gathered plus the columns queued for appliers: about 16
        // bytes per edge of a column (the largest column bounds it).
        let max_col = col_bytes.iter().copied().max().unwrap_or(0) / EDGE_BYTES;
        let _partials = self.budget.reserve(
            "column partial results",
            max_col
                * (std::mem::size_of::<(VertexId, K::Value)>() as u64).max(8)
                * (appliers as u64 * 2 + 2),
        )?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Job<'_, K::State, K::Value>>(appliers * 2);
        let rx = Mutex::new(rx);
        std::thread::scope(|scope| {
            for _ in 0..appliers {
                let rx = &rx;
                scope.spawn(move || {
                    loop {
                        let job = match rx.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => return,
                        };
                        let Ok((dp, parts, slice, bits)) = job else { return };
                        let dbase = dp * psize;
                        let mut changed = 0u64;
                        for part in parts {
                            for (d, v) in part {
                                let r = d as usize - dbase;
                                if d as usize >= n || r >= slice.len() {
                                    continue; // only in a corrupt block, which its checksum reports
                                }
                                let st = &mut slice[r];
                                if kernel.cond(d, st) && kernel.apply(d, v, st) {
                                    let (w, b) = (r / 64, r % 64);
                                    if bits[w] & (1 << b) == 0 {
                                        bits[w] |= 1 << b;
                                        changed += 1;
                                    }
                                }
                            }
                        }
                        if let Ok(mut c) = counts.lock() {
                            c[dp] += changed;
                        }
                    }
                });
            }
            let mut failure: Option<Error> = None;
            let mut cur: Option<(usize, crc32fast::Hasher, u64)> = None;
            let mut col: Option<(usize, Vec<Vec<(VertexId, K::Value)>>, u64)> = None;
            let res = self.pipeline.run_ordered(plan, pk, |part: Partial<K::Value>| {
                if failure.is_some() {
                    return;
                }
                if let Some(e) = part.error {
                    failure = Some(e);
                    return;
                }
                for (bi, crc, len) in part.pieces {
                    let (b, hasher, done) =
                        cur.get_or_insert_with(|| (bi, crc32fast::Hasher::new(), 0));
                    if *b != bi {
                        failure = Some(block_error(
                            &self.grids[blocks[*b].grid].edges,
                            blocks[*b].block,
                            p,
                        ));
                        return;
                    }
                    hasher.combine(&crc);
                    *done += len;
                    let br = &blocks[bi];
                    if *done == (br.end - br.start) * EDGE_BYTES {
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
                if *got == col_bytes[*dp] {
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
        })
    }
}

/// A finished column for an applier: partition, its partials in stream order, its state and
/// next-active bits.
type Job<'s, S, V> = (usize, Vec<Vec<(VertexId, V)>>, &'s mut [S], &'s mut [u64]);

/// One plan extent: adjacent selected blocks of one column of one grid.
#[derive(Debug)]
struct Ext {
    grid: usize,
    dp: usize,
    /// Edge index (in the grid's edge file) of the extent's first edge.
    first_edge: u64,
    edges: u64,
    /// Indexes into the pass's `BlockRef` list, in file order.
    blocks: Vec<usize>,
}

/// One grid block of a pass.
#[derive(Debug)]
struct BlockRef {
    grid: usize,
    block: usize,
    sp: usize,
    /// Edge range relative to the extent's first edge.
    start: u64,
    end: u64,
}

struct Partial<V> {
    dp: usize,
    bytes: u64,
    /// (block, CRC-32 of the piece, piece bytes), in stream order.
    pieces: Vec<(usize, crc32fast::Hasher, u64)>,
    values: Vec<(VertexId, V)>,
    error: Option<Error>,
}

struct PassKernel<'a, K> {
    kernel: &'a K,
    extents: &'a [Ext],
    blocks: &'a [BlockRef],
    psize: usize,
    weight_files: &'a [Option<File>],
    grids: &'a [GridFiles],
}

impl<K: EdgeKernel> BlockKernel for PassKernel<'_, K> {
    type Partial = Partial<K::Value>;
    fn process(&self, b: &Block<'_>) -> Self::Partial {
        let e = &self.extents[b.extent];
        let data = &b.data[..b.data.len() / 4 * 4];
        let mut part = Partial {
            dp: e.dp,
            bytes: b.data.len() as u64,
            pieces: Vec::new(),
            values: Vec::with_capacity(data.len() / 8),
            error: None,
        };
        let first = b.extent_offset / EDGE_BYTES; // edge index relative to the extent
        let last = first + (data.len() / 4) as u64;
        let weights = match &self.weight_files[e.grid] {
            Some(f) => {
                let mut raw = vec![0u8; data.len() / 4 * 8];
                if let Err(err) = f.read_exact_at(&mut raw, (e.first_edge + first) * 8) {
                    let path = self.grids[e.grid].weights.clone().unwrap_or_default();
                    part.error = Some(Error::io(path, "cannot read weights", err));
                    return part;
                }
                Some(
                    raw.chunks_exact(8)
                        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                        .collect::<Vec<f64>>(),
                )
            }
            None => None,
        };
        // The grid blocks this piece overlaps.
        let k0 = e.blocks.partition_point(|&bi| self.blocks[bi].end <= first);
        for &bi in &e.blocks[k0..] {
            let br = &self.blocks[bi];
            if br.start >= last {
                break;
            }
            let (lo, hi) = (br.start.max(first), br.end.min(last));
            let (a, z) = ((lo - first) as usize, (hi - first) as usize);
            let bytes = &data[a * 4..z * 4];
            let mut crc = crc32fast::Hasher::new();
            crc.update(bytes);
            part.pieces.push((bi, crc, bytes.len() as u64));
            block_to_values(
                self.kernel,
                (br.sp * self.psize) as u32,
                (e.dp * self.psize) as u32,
                bytes,
                weights.as_ref().map(|w| &w[a..z]),
                &mut part.values,
            );
        }
        part
    }
}

/// The hot loop of the streaming mode: edges of one block piece (sorted by `(d, s)`) reduced
/// into one value per destination run.
fn block_to_values<K: EdgeKernel>(
    k: &K,
    sbase: u32,
    dbase: u32,
    data: &[u8],
    weights: Option<&[f64]>,
    out: &mut Vec<(VertexId, K::Value)>,
) {
    let mut cur = u32::MAX;
    let mut acc: Option<K::Value> = None;
    for (i, e) in data.chunks_exact(4).enumerate() {
        let (s, d) = decode(e);
        if d != cur {
            if let Some(a) = acc.take() {
                out.push((dbase + cur, a));
            }
            cur = d;
        }
        let w = weights.map_or(1.0, |w| w[i]);
        if let Some(v) = k.gather(sbase + s, w) {
            acc = Some(match acc {
                Some(a) => k.combine(a, v),
                None => v,
            });
        }
    }
    if let Some(a) = acc {
        out.push((dbase + cur, a));
    }
}
