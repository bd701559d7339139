//! Pass 3: one column group's bucket at a time, sorted into grid blocks and appended to
//! `<grid>.edges` (and `<grid>.weights`), then the block index. Within a block, edges sort by
//! (d, s), then weight; `simple` (rule 3) then drops duplicates (keeping the smallest weight)
//! and self loops.

use std::path::Path;

use rayon::prelude::*;
use sluice_io::Budget;

use super::buckets::Bucket;
use crate::Error;
use crate::store::{self, Encoding, FileSum, GridIndex, Meta, SumWriter, packed};

/// The degree array pass 3 fills while it writes a grid: each edge counts for its
/// destination (the forward grid's give in-degrees, the reverse grid's out-degrees), so the
/// columns of a group count in parallel, each into its own partition's slice.
#[derive(Debug)]
pub(super) struct Degrees<'a> {
    /// Edges into each dense id.
    pub(super) deg: &'a mut [u32],
    /// Original id per dense id (to name a vertex whose degree overflows).
    pub(super) ids: &'a [u64],
}

/// One block as written: its edges and weights in their stored bytes, its self loops.
#[derive(Debug, Default)]
struct BlockOut {
    edges: Vec<u8>,
    weights: Vec<u8>,
    self_loops: u64,
}

/// The files of one grid and what they hold.
#[derive(Debug)]
pub(super) struct GridWritten {
    /// Name and checksum of each file written.
    pub(super) files: Vec<(String, FileSum)>,
    /// Edges stored.
    pub(super) edges: u64,
    /// Self loops stored.
    pub(super) self_loops: u64,
}

/// Writes grid `grid` (`fwd` or `rev`) into `dir` from its `buckets`, one per column group of
/// `cols_per_group` partitions, deleting each bucket once read; the layout, weights and
/// `simple` come from `meta`. Fills `degrees` when given. Stops with `Cancelled` once
/// `cancelled` says so (checked per column group and every 4096 blocks).
#[allow(clippy::too_many_arguments)] // the grid's inputs, each a different thing
pub(super) fn write_grid(
    dir: &Path,
    grid: &str,
    buckets: &[Bucket],
    meta: &Meta,
    cols_per_group: u64,
    mut degrees: Option<Degrees<'_>>,
    budget: &Budget,
    cancelled: &dyn Fn() -> bool,
) -> Result<GridWritten, Error> {
    let stop = || if cancelled() { Err(Error::from(sluice_io::Error::Cancelled)) } else { Ok(()) };
    let p = meta.partitions;
    let psize = meta.partition_size;
    let weighted = meta.weighted;
    let nblocks = (p * p) as usize;
    let packed = meta.encoding == Encoding::Packed;
    let mut index = GridIndex {
        offsets: vec![0; nblocks + 1],
        bytes: vec![0; nblocks + 1],
        packed,
        crcs: vec![0; nblocks],
        weight_crcs: vec![store::weights::block_sum(&[]); if weighted { nblocks } else { 0 }],
    };
    let epath = dir.join(format!("{grid}.edges"));
    let wpath = dir.join(format!("{grid}.weights"));
    let mut ew = SumWriter::create(&epath)?;
    let mut ww = if weighted { Some(SumWriter::create(&wpath)?) } else { None };
    let mut written = 0u64;
    let mut self_loops = 0u64;
    let mut block_counts = vec![0u64; nblocks];
    let mut block_bytes = vec![0u64; nblocks];
    for (g, Bucket { path, bytes, records: count }) in buckets.iter().enumerate() {
        stop()?;
        // The group's blocks as stored, beside the sorted keys: at most 4 bytes per edge (and
        // one frame per block) plus the weights.
        let stored = count * if weighted { 12 } else { 4 }
            + if packed { cols_per_group * p * packed::FRAME_BYTES as u64 } else { 0 };
        let _res = budget.reserve(
            &format!("sorting column group {g} of the {grid} grid"),
            bytes + count * if weighted { 12 } else { 4 } + 8 * cols_per_group * p + stored,
        )?;
        let data =
            std::fs::read(path).map_err(|e| Error::io(path, "cannot read scratch file", e))?;
        if data.len() as u64 != *bytes {
            return Err(Error::corrupt(path, "scratch file has the wrong length"));
        }
        // Best effort: frees the disk early; the scratch directory goes with its `TempDir`.
        let _ = std::fs::remove_file(path);
        let dp0 = g as u64 * cols_per_group;
        let cols = cols_per_group.min(p - dp0.min(p)) as usize;
        let sorted = sort_group(data, meta, dp0, cols * p as usize);
        // The blocks as stored and the degrees, a column per task (each owns its partition's
        // slice of the degrees), then written in order below.
        let lo = (dp0 * psize) as usize;
        let ids = degrees.as_ref().map_or(&[][..], |d| d.ids);
        let mut slices: Vec<Option<&mut [u32]>> = match degrees.as_mut() {
            Some(d) => {
                let hi = (lo + cols * psize as usize).min(d.deg.len());
                d.deg[lo..hi].chunks_mut(psize as usize).map(Some).collect()
            }
            None => Vec::new(),
        };
        slices.resize_with(cols, || None);
        let prepared: Result<Vec<Vec<BlockOut>>, Error> = slices
            .into_par_iter()
            .enumerate()
            .map(|(c, deg)| {
                let dp = dp0 + c as u64;
                prepare_column(&sorted, c, (dp, p, psize), packed, deg, ids)
            })
            .collect();
        // Write the blocks in order: (dp, sp) ascending is stream order.
        for (bi, out) in prepared?.into_iter().flatten().enumerate() {
            if bi % 4096 == 4095 {
                stop()?;
            }
            let (dp, sp) = (dp0 + (bi / p as usize) as u64, (bi % p as usize) as u64);
            let b = (dp * p + sp) as usize;
            let len = sorted.block(bi).0.len();
            self_loops += out.self_loops;
            index.crcs[b] = crc32fast::hash(&out.edges);
            block_counts[b] = len as u64;
            block_bytes[b] = out.edges.len() as u64;
            ew.write(&out.edges)?;
            if let Some(ww) = ww.as_mut() {
                index.weight_crcs[b] = store::weights::block_sum(&out.weights);
                ww.write(&out.weights)?;
            }
            written += len as u64;
        }
    }
    // Blocks were written in column-major order because groups are column ranges and keys sort
    // by (dp, sp): offsets are the prefix sums of the counts.
    for (b, &count) in block_counts.iter().enumerate() {
        index.offsets[b + 1] = index.offsets[b] + count;
        index.bytes[b + 1] = index.bytes[b] + block_bytes[b];
        if count == 0 {
            index.crcs[b] = crc32fast::hash(&[]);
        }
    }
    let mut files = vec![(format!("{grid}.edges"), ew.finish()?)];
    if let Some(ww) = ww {
        files.push((format!("{grid}.weights"), ww.finish()?));
    }
    let ipath = dir.join(format!("{grid}.index"));
    files.push((format!("{grid}.index"), store::write_file(&ipath, &index.to_bytes())?));
    Ok(GridWritten { files, edges: written, self_loops })
}

/// The blocks of column `c` of a sorted group (partition `dp` of `p`, `psize` vertices each)
/// as stored, raw or packed; counts each edge into `deg` (the column's slice of the degrees,
/// when counting), naming a vertex whose degree overflows by its original id in `ids`.
fn prepare_column(
    sorted: &SortedGroup,
    c: usize,
    (dp, p, psize): (u64, u64, u64),
    packed: bool,
    mut deg: Option<&mut [u32]>,
    ids: &[u64],
) -> Result<Vec<BlockOut>, Error> {
    let mut blocks = Vec::with_capacity(p as usize);
    for sp in 0..p {
        let (keys, weights) = sorted.block(c * p as usize + sp as usize);
        let mut out = BlockOut::default();
        match packed {
            true => packed::encode_block(keys, &mut out.edges),
            false => {
                out.edges.reserve_exact(keys.len() * 4);
                for &x in keys {
                    out.edges.extend_from_slice(&(x as u16).to_le_bytes());
                    out.edges.extend_from_slice(&((x >> 16) as u16).to_le_bytes());
                }
            }
        }
        out.weights = weights.iter().flat_map(|w| w.to_le_bytes()).collect();
        if sp == dp {
            out.self_loops = keys.iter().filter(|&&x| x >> 16 == x & 0xffff).count() as u64;
        }
        if let Some(deg) = deg.as_deref_mut() {
            for &x in keys {
                let d = (x >> 16) as usize;
                deg[d] = deg[d]
                    .checked_add(1)
                    .ok_or_else(|| Error::DegreeOverflow { id: ids[(dp * psize) as usize + d] })?;
            }
        }
        blocks.push(out);
    }
    Ok(blocks)
}

/// One column group's edges as sorted blocks: block `bi` (`(dp - dp0) * p + sp`) holds keys
/// `(d - dp·psize) << 16 | (s - sp·psize)` at `keys[starts[bi]..][..lens[bi]]`, weights beside.
#[derive(Debug)]
struct SortedGroup {
    keys: Vec<u32>,
    weights: Vec<f64>,
    starts: Vec<usize>,
    lens: Vec<usize>,
}

impl SortedGroup {
    /// The keys and (when weighted) weights of block `bi`.
    fn block(&self, bi: usize) -> (&[u32], &[f64]) {
        let range = self.starts[bi]..self.starts[bi] + self.lens[bi];
        let weights = if self.weights.is_empty() { &[][..] } else { &self.weights[range.clone()] };
        (&self.keys[range], weights)
    }
}

/// Sorts the bucket `data` of the column group whose first column is `dp0` (`gblocks` blocks)
/// and applies `meta.simple`. Frees `data` before the per-block sorts.
fn sort_group(data: Vec<u8>, meta: &Meta, dp0: u64, gblocks: usize) -> SortedGroup {
    let (p, psize, weighted, simple) =
        (meta.partitions, meta.partition_size, meta.weighted, meta.simple);
    let rec = if weighted { 16 } else { 8 };
    // Counting sort by block (dp, sp) of the group, then a small sort per block by (d, s)
    // (and weight, rule 3), blocks in parallel: cache-sized sorts instead of one big one.
    let decode = |c: &[u8]| -> (u64, u64) {
        (
            u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64,
            u32::from_le_bytes([c[4], c[5], c[6], c[7]]) as u64,
        )
    };
    let mut starts = vec![0usize; gblocks + 1];
    for c in data.chunks_exact(rec) {
        let (s, d) = decode(c);
        starts[((d / psize - dp0) * p + s / psize) as usize + 1] += 1;
    }
    for i in 0..gblocks {
        starts[i + 1] += starts[i];
    }
    let mut fill = starts.clone();
    let mut keys = vec![0u32; data.len() / rec];
    let mut ws = if weighted { vec![0f64; keys.len()] } else { Vec::new() };
    for c in data.chunks_exact(rec) {
        let (s, d) = decode(c);
        let (sp, dp) = (s / psize, d / psize);
        let bi = ((dp - dp0) * p + sp) as usize;
        let at = fill[bi];
        fill[bi] += 1;
        keys[at] = (((d - dp * psize) << 16) | (s - sp * psize)) as u32;
        if weighted {
            ws[at] = f64::from_le_bytes(c[8..16].try_into().unwrap_or([0; 8]));
        }
    }
    drop(data);
    // Split into per-block slices and sort them in parallel.
    let mut kslices: Vec<&mut [u32]> = Vec::with_capacity(gblocks);
    let mut wslices: Vec<&mut [f64]> = Vec::with_capacity(gblocks);
    {
        let (mut krest, mut wrest) = (&mut keys[..], &mut ws[..]);
        for i in 0..gblocks {
            let len = starts[i + 1] - starts[i];
            let (k, kr) = krest.split_at_mut(len);
            krest = kr;
            kslices.push(k);
            if weighted {
                let (w, wr) = wrest.split_at_mut(len);
                wrest = wr;
                wslices.push(w);
            }
        }
    }
    let lens: Vec<usize> = if weighted {
        kslices
            .par_iter_mut()
            .zip(wslices.par_iter_mut())
            .enumerate()
            .map(|(bi, (k, w))| {
                let mut pairs: Vec<(u32, f64)> = k.iter().copied().zip(w.iter().copied()).collect();
                pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
                if simple {
                    pairs.dedup_by_key(|a| a.0);
                    let (dp, sp) = (dp0 + (bi / p as usize) as u64, (bi % p as usize) as u64);
                    if dp == sp {
                        pairs.retain(|&(x, _)| x >> 16 != x & 0xffff);
                    }
                }
                for (i, (x, y)) in pairs.iter().enumerate() {
                    k[i] = *x;
                    w[i] = *y;
                }
                pairs.len()
            })
            .collect()
    } else {
        kslices
            .par_iter_mut()
            .enumerate()
            .map(|(bi, k)| {
                k.sort_unstable();
                if !simple {
                    return k.len();
                }
                let (dp, sp) = (dp0 + (bi / p as usize) as u64, (bi % p as usize) as u64);
                let mut n = 0;
                for i in 0..k.len() {
                    let x = k[i];
                    if (n > 0 && k[n - 1] == x) || (dp == sp && x >> 16 == x & 0xffff) {
                        continue;
                    }
                    k[n] = x;
                    n += 1;
                }
                n
            })
            .collect()
    };
    SortedGroup { keys, weights: ws, starts, lens }
}
