//! Pass 3: one column group's bucket at a time, sorted into grid blocks and appended to
//! `<grid>.edges` (and `<grid>.weights`), then the block index. Within a block, edges sort by
//! (d, s), then weight; `simple` (rule 3) then drops duplicates (keeping the smallest weight)
//! and self loops.
//!
//! A directed graph's reverse grid is not bucketed: [`write_reverse`] builds it from the
//! forward grid just written. Block (sp, dp) of `rev` holds exactly the edges of block (dp, sp)
//! of `fwd`, each turned round; `fwd` sorts them by (d, s, weight), so one stable sort by the
//! new destination (s) gives `rev`'s order (s, d, weight). That spares pass 2 half of its
//! routing and scratch writes (8 bytes per edge, written and read back), and pass 3 a sort of
//! 8-byte records: the forward blocks are read back at 4 bytes per edge or less, each checked
//! against its CRC-32 first.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;

use rayon::prelude::*;
use sluice_io::{Budget, Reservation};

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
    /// The grid's index, as written to `<grid>.index`.
    pub(super) index: GridIndex,
}

/// The files of a grid being written, block by block in stream order, and its index.
#[derive(Debug)]
struct GridSink {
    index: GridIndex,
    ew: SumWriter,
    ww: Option<SumWriter>,
    counts: Vec<u64>,
    bytes: Vec<u64>,
    written: u64,
    self_loops: u64,
}

impl GridSink {
    fn create(dir: &Path, grid: &str, meta: &Meta) -> Result<GridSink, Error> {
        let nblocks = (meta.partitions * meta.partitions) as usize;
        let weighted = meta.weighted;
        let index = GridIndex {
            offsets: vec![0; nblocks + 1],
            bytes: vec![0; nblocks + 1],
            packed: meta.encoding == Encoding::Packed,
            crcs: vec![0; nblocks],
            weight_crcs: vec![store::weights::block_sum(&[]); if weighted { nblocks } else { 0 }],
        };
        let ew = SumWriter::create(&dir.join(format!("{grid}.edges")))?;
        let ww = match weighted {
            true => Some(SumWriter::create(&dir.join(format!("{grid}.weights")))?),
            false => None,
        };
        let (counts, bytes) = (vec![0; nblocks], vec![0; nblocks]);
        Ok(GridSink { index, ew, ww, counts, bytes, written: 0, self_loops: 0 })
    }

    /// Appends block `b` of `edges` edges; blocks come in stream order (`b` ascending).
    fn put(&mut self, b: usize, edges: u64, out: &BlockOut) -> Result<(), Error> {
        self.self_loops += out.self_loops;
        self.index.crcs[b] = crc32fast::hash(&out.edges);
        self.counts[b] = edges;
        self.bytes[b] = out.edges.len() as u64;
        self.ew.write(&out.edges)?;
        if let Some(ww) = self.ww.as_mut() {
            self.index.weight_crcs[b] = store::weights::block_sum(&out.weights);
            ww.write(&out.weights)?;
        }
        self.written += edges;
        Ok(())
    }

    /// Flushes the files and writes the index.
    fn finish(mut self, dir: &Path, grid: &str) -> Result<GridWritten, Error> {
        // Blocks were written in column-major order: offsets are the prefix sums of the counts.
        let index = &mut self.index;
        for (b, &count) in self.counts.iter().enumerate() {
            index.offsets[b + 1] = index.offsets[b] + count;
            index.bytes[b + 1] = index.bytes[b] + self.bytes[b];
            if count == 0 {
                index.crcs[b] = crc32fast::hash(&[]);
            }
        }
        let mut files = vec![(format!("{grid}.edges"), self.ew.finish()?)];
        if let Some(ww) = self.ww {
            files.push((format!("{grid}.weights"), ww.finish()?));
        }
        let ipath = dir.join(format!("{grid}.index"));
        files.push((format!("{grid}.index"), store::write_file(&ipath, &self.index.to_bytes())?));
        let (edges, self_loops) = (self.written, self.self_loops);
        Ok(GridWritten { files, edges, self_loops, index: self.index })
    }
}

/// Writes grid `grid` (`fwd`, or an undirected graph's only grid) into `dir` from its `buckets`, one per column group of
/// `cols_per_group` partitions, deleting each bucket once read; the layout, weights and
/// `simple` come from `meta`. Fills `degrees` when given. Stops with `Cancelled` once
/// `cancelled` says so (checked per column group).
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
    let packed = meta.encoding == Encoding::Packed;
    let sink = GridSink::create(dir, grid, meta)?;
    let sink = write_behind(sink, budget, |feed| {
        for (g, Bucket { path, bytes, records: count }) in buckets.iter().enumerate() {
            stop()?;
            if let Some(next) = buckets.get(g + 1) {
                read_ahead(&next.path, &[(0, next.bytes)]);
            }
            // The bucket and the sorted keys (and weights); then the blocks as stored, at most
            // 4 bytes per edge (and one frame per block) plus the weights, held until written.
            let sorting = feed.reserve(
                &format!("sorting column group {g} of the {grid} grid"),
                bytes + count * if weighted { 12 } else { 4 } + 8 * cols_per_group * p,
            )?;
            let stored = feed.reserve(
                &format!("column group {g} of the {grid} grid as stored"),
                count * if weighted { 12 } else { 4 }
                    + if packed { cols_per_group * p * packed::FRAME_BYTES as u64 } else { 0 },
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
            let blocks = prepare_columns(
                &mut degrees,
                (dp0, cols),
                (p, psize),
                |_: &mut (), c, sp, deg| {
                    let (keys, weights) = sorted.block(c * p as usize + sp as usize);
                    let out = block_out(keys, weights, packed, sp == dp0 + c as u64, deg)?;
                    Ok((keys.len() as u64, out))
                },
            )?;
            drop((sorted, sorting));
            feed.send(Batch { blocks, _held: stored })?;
        }
        Ok(())
    })?;
    sink.finish(dir, grid)
}

/// A column group's blocks, ready to write in stream order: (block, edges, bytes as stored),
/// and the reservation that holds them.
#[derive(Debug)]
struct Batch {
    blocks: Vec<(usize, u64, BlockOut)>,
    _held: Reservation,
}

/// Where the sorting thread hands finished column groups to the writer ([`write_behind`]).
#[derive(Debug)]
struct Feed<'a> {
    tx: SyncSender<Batch>,
    /// Whether the writer holds no batch (its memory given back).
    idle: &'a AtomicBool,
    budget: &'a Budget,
}

impl Feed<'_> {
    /// Reserves `bytes` for `what`. While the budget has no room and the writer holds a batch,
    /// waits for the writer to give it back; then fails as a plain reservation would.
    fn reserve(&self, what: &str, bytes: u64) -> Result<Reservation, Error> {
        loop {
            // Read before trying: `idle` is set only after the batch's memory is given back.
            let idle = self.idle.load(Ordering::Acquire);
            match self.budget.reserve(what, bytes) {
                Ok(r) => return Ok(r),
                Err(e) if idle => return Err(e.into()),
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
    }

    /// Hands `batch` to the writer, waiting until it takes it. An error means the writer has
    /// stopped on an error of its own, which [`write_behind`] reports.
    fn send(&self, batch: Batch) -> Result<(), Error> {
        self.idle.store(false, Ordering::Release);
        self.tx.send(batch).map_err(|_| Error::from(sluice_io::Error::Cancelled))
    }
}

/// Sets the flag when dropped (the writer's exit, by return or by panic).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Runs `sort` with a writer thread beside it: the writer appends each batch `sort` feeds it
/// to `sink` while `sort` works on the next column group, so the writes (the copy into the
/// page cache, the CRC-32s, the writeback a memory cgroup forces) overlap the sorting. The
/// channel holds nothing: at most one group is being written while the next is sorted.
/// Returns the sink with every batch written; the writer's error comes first.
fn write_behind<F>(sink: GridSink, budget: &Budget, sort: F) -> Result<GridSink, Error>
where
    F: FnOnce(&Feed<'_>) -> Result<(), Error>,
{
    let idle = AtomicBool::new(true);
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(0);
        let writer = std::thread::Builder::new()
            .name("sluice-import-writer".into())
            .spawn_scoped(scope, || -> Result<GridSink, Error> {
                let _idle = SetOnDrop(&idle);
                let mut sink = sink;
                for batch in rx {
                    for (b, edges, out) in &batch.blocks {
                        sink.put(*b, *edges, out)?;
                    }
                    drop(batch);
                    idle.store(true, Ordering::Release);
                }
                Ok(sink)
            })
            .map_err(|e| Error::io(Path::new("."), "cannot start the import's writer thread", e))?;
        let fed = sort(&Feed { tx, idle: &idle, budget });
        let written = writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match (fed, written) {
            (_, Err(e)) | (Err(e), Ok(_)) => Err(e),
            (Ok(()), Ok(sink)) => Ok(sink),
        }
    })
}

/// The blocks of columns `c0 .. c0 + cols` as stored, a column per task (each owns its
/// partition's slice of the degrees, and a scratch `S`): `block(scratch, c, sp, deg)` gives the
/// edge count and stored bytes of block (c0 + c, sp). Returns them in stream order, each with
/// its block index, for the writer.
fn prepare_columns<S, F>(
    degrees: &mut Option<Degrees<'_>>,
    (c0, cols): (u64, usize),
    (p, psize): (u64, u64),
    block: F,
) -> Result<Vec<(usize, u64, BlockOut)>, Error>
where
    S: Default,
    F: Fn(&mut S, usize, u64, Option<(&mut [u32], &[u64])>) -> Result<(u64, BlockOut), Error>
        + Sync,
{
    let columns: Result<Vec<Vec<(u64, BlockOut)>>, Error> = column_slices(degrees, c0, cols, psize)
        .into_par_iter()
        .enumerate()
        .map(|(c, mut deg)| {
            let mut scratch = S::default();
            (0..p)
                .map(|sp| block(&mut scratch, c, sp, deg.as_mut().map(|d| (&mut *d.0, d.1))))
                .collect()
        })
        .collect();
    // (dp, sp) ascending is stream order.
    let blocks = columns?.into_iter().enumerate().flat_map(|(c, col)| {
        col.into_iter()
            .enumerate()
            .map(move |(sp, (edges, out))| (((c0 + c as u64) * p + sp as u64) as usize, edges, out))
    });
    Ok(blocks.collect())
}

/// The degree slices of columns `dp0 .. dp0 + cols` (one per column, each with the original ids
/// of its vertices, to name one whose degree overflows), or `None` for each when not counting.
fn column_slices<'a>(
    degrees: &'a mut Option<Degrees<'_>>,
    dp0: u64,
    cols: usize,
    psize: u64,
) -> Vec<Option<(&'a mut [u32], &'a [u64])>> {
    let lo = (dp0 * psize) as usize;
    let mut slices: Vec<Option<(&mut [u32], &[u64])>> = match degrees.as_mut() {
        Some(d) => {
            let hi = (lo + cols * psize as usize).min(d.deg.len());
            let ids = d.ids.get(lo..hi).unwrap_or(&[]);
            d.deg[lo..hi]
                .chunks_mut(psize as usize)
                .zip(ids.chunks(psize as usize))
                .map(Some)
                .collect()
        }
        None => Vec::new(),
    };
    slices.resize_with(cols, || None);
    slices
}

/// Builds the reverse grid `rev` of a directed graph in `dir` from its forward grid `fwd.*`,
/// just written there with index `fwd` (see the module docs): one row group of `fwd` (a column
/// group of `rev`) at a time, read back by extents and checked block by block. Fills `degrees`
/// (the out-degrees) when given; stops with `Cancelled` once `cancelled` says so.
pub(super) fn write_reverse(
    dir: &Path,
    fwd: &GridIndex,
    meta: &Meta,
    cols_per_group: u64,
    mut degrees: Option<Degrees<'_>>,
    budget: &Budget,
    cancelled: &dyn Fn() -> bool,
) -> Result<GridWritten, Error> {
    let (p, psize, weighted) = (meta.partitions, meta.partition_size, meta.weighted);
    let packed = meta.encoding == Encoding::Packed;
    let (epath, wpath) = (dir.join("fwd.edges"), dir.join("fwd.weights"));
    let open = |path: &Path| File::open(path).map_err(|e| Error::io(path, "cannot read back", e));
    let ef = open(&epath)?;
    let wf = if weighted { Some(open(&wpath)?) } else { None };
    let sink = GridSink::create(dir, "rev", meta)?;
    let sink = write_behind(sink, budget, |feed| {
        for (g, s0) in (0..p).step_by(cols_per_group as usize).enumerate() {
            if cancelled() {
                return Err(Error::from(sluice_io::Error::Cancelled));
            }
            let s1 = (s0 + cols_per_group).min(p);
            let cols = (s1 - s0) as usize;
            if s1 < p {
                // The next row group's extents, read ahead while this one is turned round.
                let s2 = (s1 + cols_per_group).min(p);
                let at = |dp: u64, sp: u64| fwd.bytes[(dp * p + sp) as usize];
                let next: Vec<(u64, u64)> =
                    (0..p).map(|dp| (at(dp, s1), at(dp, s2) - at(dp, s1))).collect();
                read_ahead(&epath, &next);
            }
            // Row `dp`'s blocks (dp, s0 .. s1) of `fwd` are one extent of each file.
            let extent = |dp: u64| ((dp * p + s0) as usize, (dp * p + s1) as usize);
            let ext = |dp: u64, at: &[u64]| at[extent(dp).1] - at[extent(dp).0];
            let ebytes: u64 = (0..p).map(|dp| ext(dp, &fwd.bytes)).sum();
            let edges: u64 = (0..p).map(|dp| ext(dp, &fwd.offsets)).sum();
            // The extents and the weights as values; then the blocks as stored (at most 4 bytes
            // per edge and one frame per block) and their weights, held until written. A task's
            // sort buffers hold one block.
            let reading = feed.reserve(
                &format!("turning row group {g} of the fwd grid round"),
                ebytes + edges * if weighted { 16 } else { 0 },
            )?;
            let frames = if packed { cols as u64 * p * packed::FRAME_BYTES as u64 } else { 0 };
            let stored = feed.reserve(
                &format!("row group {g} of the fwd grid turned round"),
                edges * if weighted { 12 } else { 4 } + frames,
            )?;
            let mut data = vec![0u8; ebytes as usize];
            let mut wdata = vec![0u8; if weighted { edges as usize * 8 } else { 0 }];
            let (mut at, mut wat) = (0usize, 0usize);
            for dp in 0..p {
                let (lo, len) = (fwd.bytes[extent(dp).0], ext(dp, &fwd.bytes) as usize);
                ef.read_exact_at(&mut data[at..at + len], lo)
                    .map_err(|e| Error::io(&epath, "cannot read back", e))?;
                at += len;
                if let Some(wf) = &wf {
                    let (lo, len) =
                        (fwd.offsets[extent(dp).0] * 8, ext(dp, &fwd.offsets) as usize * 8);
                    wf.read_exact_at(&mut wdata[wat..wat + len], lo)
                        .map_err(|e| Error::io(&wpath, "cannot read back", e))?;
                    wat += len;
                }
            }
            // Where block (dp, sp) of `fwd` lies in `data` (and its weights in `wdata`).
            let mut row_at = Vec::with_capacity(p as usize);
            let (mut at, mut wat) = (0u64, 0u64);
            for dp in 0..p {
                row_at.push((at, wat));
                at += ext(dp, &fwd.bytes);
                wat += ext(dp, &fwd.offsets) * 8;
            }
            let block_of = |dp: u64, sp: u64| -> (usize, &[u8], &[u8]) {
                let b = (dp * p + sp) as usize;
                let first = extent(dp).0;
                let lo = (row_at[dp as usize].0 + fwd.bytes[b] - fwd.bytes[first]) as usize;
                let len = (fwd.bytes[b + 1] - fwd.bytes[b]) as usize;
                let weights = match weighted {
                    true => {
                        let wlo = row_at[dp as usize].1 + (fwd.offsets[b] - fwd.offsets[first]) * 8;
                        let wlen = (fwd.offsets[b + 1] - fwd.offsets[b]) * 8;
                        &wdata[wlo as usize..(wlo + wlen) as usize]
                    }
                    false => &[][..],
                };
                (b, &data[lo..lo + len], weights)
            };
            let blocks = prepare_columns(
                &mut degrees,
                (s0, cols),
                (p, psize),
                |turn: &mut Turn, c, dp, deg| {
                    let (b, bytes, wbytes) = block_of(dp, s0 + c as u64);
                    turn.load(fwd, (b, p as usize), (bytes, wbytes), (&epath, &wpath))?;
                    turn.sort();
                    let out =
                        block_out(&turn.keys, &turn.weights, packed, dp == s0 + c as u64, deg)?;
                    Ok((turn.keys.len() as u64, out))
                },
            )?;
            drop((data, wdata, reading));
            feed.send(Batch { blocks, _held: stored })?;
        }
        Ok(())
    })?;
    sink.finish(dir, "rev")
}

/// Asks the kernel to read `ranges` (offset, length) of `path` into the page cache in the
/// background (`posix_fadvise(POSIX_FADV_WILLNEED)`), so that the next group's read finds them
/// there while this group sorts: the page cache is the kernel's memory, not the budget's. In a
/// 1 GiB cgroup the scratch and the forward grid are evicted before pass 3 reads them (Kronecker
/// scale 24: 126 MB a bucket), and the read sat on the sorting thread. Best effort: a failure
/// costs only the overlap.
fn read_ahead(path: &Path, ranges: &[(u64, u64)]) {
    let Ok(f) = File::open(path) else { return };
    for &(offset, len) in ranges {
        if let Some(len) = std::num::NonZeroU64::new(len) {
            let _ = rustix::fs::fadvise(&f, offset, Some(len), rustix::fs::Advice::WillNeed);
        }
    }
}

/// One forward block turned round, with the buffers reused from block to block.
#[derive(Debug, Default)]
struct Turn {
    keys: Vec<u32>,
    weights: Vec<f64>,
    tmp_keys: Vec<u32>,
    tmp_weights: Vec<f64>,
    raw: Vec<u8>,
}

impl Turn {
    /// Checks block `b` of `fwd` (`bytes`, and `wbytes` its weights) against the index and
    /// loads its edges turned round: keys `s << 16 | d`, in `fwd`'s order.
    fn load(
        &mut self,
        fwd: &GridIndex,
        (b, p): (usize, usize),
        (bytes, wbytes): (&[u8], &[u8]),
        (epath, wpath): (&Path, &Path),
    ) -> Result<(), Error> {
        let corrupt = |path: &Path, what: &str| {
            Error::corrupt(
                path,
                format!("block ({}, {}) {what} after it was written", b % p, b / p),
            )
        };
        if crc32fast::hash(bytes) != fwd.crcs[b] {
            return Err(corrupt(epath, "fails its checksum"));
        }
        let edges = fwd.offsets[b + 1] - fwd.offsets[b];
        let raw = match fwd.packed {
            true => {
                self.raw.clear();
                packed::unpack_block(bytes, edges, &mut self.raw)
                    .map_err(|e| corrupt(epath, &format!("does not decode ({e})")))?;
                &self.raw[..]
            }
            false => bytes,
        };
        if raw.len() as u64 != edges * 4 {
            return Err(corrupt(epath, "has the wrong length"));
        }
        // Stored edges are `s`, `d` as u16 LE: the u32 LE is the key `d << 16 | s`.
        self.keys.clear();
        self.keys.extend(
            raw.chunks_exact(4)
                .map(|e| u32::from_le_bytes([e[0], e[1], e[2], e[3]]).rotate_left(16)),
        );
        self.weights.clear();
        if !fwd.weight_crcs.is_empty() {
            if store::weights::block_sum(wbytes) != fwd.weight_crcs[b] {
                return Err(corrupt(wpath, "fails its checksum"));
            }
            self.weights.extend(
                wbytes
                    .chunks_exact(8)
                    .map(|w| f64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])),
            );
        }
        Ok(())
    }

    /// Sorts the keys (weights beside them) stably by their high 16 bits, the new `d`: with
    /// `fwd`'s order (d, s, weight) kept among equal ones, that is the order (s, d, weight).
    /// Two counting passes of 8 bits each.
    fn sort(&mut self) {
        let n = self.keys.len();
        let weighted = !self.weights.is_empty();
        for shift in [16, 24] {
            let mut count = [0usize; 256];
            for &k in &self.keys {
                count[(k >> shift) as usize & 0xff] += 1;
            }
            if count.contains(&n) {
                continue; // one digit value: the pass would not move anything
            }
            let mut at = 0;
            for c in count.iter_mut() {
                (*c, at) = (at, at + *c);
            }
            self.tmp_keys.resize(n, 0);
            if weighted {
                self.tmp_weights.resize(n, 0.0);
            }
            for (i, &k) in self.keys.iter().enumerate() {
                let slot = &mut count[(k >> shift) as usize & 0xff];
                self.tmp_keys[*slot] = k;
                if weighted {
                    self.tmp_weights[*slot] = self.weights[i];
                }
                *slot += 1;
            }
            std::mem::swap(&mut self.keys, &mut self.tmp_keys);
            if weighted {
                std::mem::swap(&mut self.weights, &mut self.tmp_weights);
            }
        }
    }
}

/// One block as stored, raw or packed, from its sorted `keys` (`d << 16 | s`, partition
/// relative) and `weights`; counts its self loops when `loops` (a diagonal block), and each edge
/// into `deg` (the column's slice of the degrees, with the original ids of its vertices to name
/// one whose degree overflows) when counting.
fn block_out(
    keys: &[u32],
    weights: &[f64],
    packed: bool,
    loops: bool,
    deg: Option<(&mut [u32], &[u64])>,
) -> Result<BlockOut, Error> {
    let mut out = BlockOut::default();
    match packed {
        true => packed::encode_block(keys, &mut out.edges),
        false => {
            out.edges.reserve_exact(keys.len() * 4);
            for &x in keys {
                out.edges.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
    out.weights = weights.iter().flat_map(|w| w.to_le_bytes()).collect();
    if loops {
        out.self_loops = keys.iter().filter(|&&x| x >> 16 == x & 0xffff).count() as u64;
    }
    if let Some((deg, ids)) = deg {
        for &x in keys {
            let d = (x >> 16) as usize;
            deg[d] = deg[d].checked_add(1).ok_or_else(|| Error::DegreeOverflow { id: ids[d] })?;
        }
    }
    Ok(out)
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
    // The counting sort runs in parallel: each piece of `data` sorts its records into buffers
    // of its own (input order kept within a block); each block then gathers its pieces' runs,
    // in piece order, before its sort below. Sequential, it took an eighth of the import.
    let pieces = rayon::current_num_threads().max(1) * 2;
    let per = (data.len() / rec).div_ceil(pieces).max(1) * rec;
    let local: Vec<SortedGroup> = data
        .par_chunks(per)
        .map(|chunk| {
            let mut starts = vec![0usize; gblocks + 1];
            for c in chunk.chunks_exact(rec) {
                let (s, d) = decode(c);
                starts[((d / psize - dp0) * p + s / psize) as usize + 1] += 1;
            }
            for i in 0..gblocks {
                starts[i + 1] += starts[i];
            }
            let mut fill = starts.clone();
            let mut keys = vec![0u32; chunk.len() / rec];
            let mut weights = if weighted { vec![0f64; keys.len()] } else { Vec::new() };
            for c in chunk.chunks_exact(rec) {
                let (s, d) = decode(c);
                let (sp, dp) = (s / psize, d / psize);
                let bi = ((dp - dp0) * p + sp) as usize;
                let at = fill[bi];
                fill[bi] += 1;
                keys[at] = (((d - dp * psize) << 16) | (s - sp * psize)) as u32;
                if weighted {
                    weights[at] = f64::from_le_bytes(c[8..16].try_into().unwrap_or([0; 8]));
                }
            }
            let lens = (0..gblocks).map(|i| starts[i + 1] - starts[i]).collect();
            SortedGroup { keys, weights, starts, lens }
        })
        .collect();
    drop(data);
    let mut starts = vec![0usize; gblocks + 1];
    for i in 0..gblocks {
        starts[i + 1] = starts[i] + local.iter().map(|l| l.lens[i]).sum::<usize>();
    }
    let mut keys = vec![0u32; starts[gblocks]];
    let mut ws = if weighted { vec![0f64; keys.len()] } else { Vec::new() };
    // Block `bi`'s records from every piece, in piece order, into `k` (and `w`).
    let gather = |bi: usize, k: &mut [u32], w: &mut [f64]| {
        let mut at = 0;
        for l in &local {
            let (kl, wl) = l.block(bi);
            k[at..at + kl.len()].copy_from_slice(kl);
            if weighted {
                w[at..at + kl.len()].copy_from_slice(wl);
            }
            at += kl.len();
        }
    };
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
                gather(bi, k, w);
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
            .map_init(Vec::new, |tmp, (bi, k)| {
                gather(bi, k, &mut []);
                radix_sort(k, tmp);
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

/// Sorts `keys` ascending: least significant digit first, three stable counting passes of 11,
/// 11 and 10 bits, with `tmp` as the other buffer. A block's keys are spread over the whole
/// 32-bit range (16 bits of `d`, 16 of `s`), and at 14–50 K keys a block (Kronecker scales
/// 24–22) the passes run in the L2 cache; `sort_unstable` took a quarter of pass 3.
fn radix_sort(keys: &mut [u32], tmp: &mut Vec<u32>) {
    const DIGITS: [(u32, usize); 3] = [(0, 11), (11, 11), (22, 10)];
    let n = keys.len();
    if n < 64 {
        keys.sort_unstable();
        return;
    }
    let mut counts = [[0usize; 1 << 11]; 3];
    for &k in keys.iter() {
        for (c, &(shift, bits)) in counts.iter_mut().zip(&DIGITS) {
            c[(k >> shift) as usize & ((1 << bits) - 1)] += 1;
        }
    }
    tmp.resize(n, 0);
    // `in_keys`: whether the data now sits in `keys` (else in `tmp`).
    let mut in_keys = true;
    for (c, &(shift, bits)) in counts.iter_mut().zip(&DIGITS) {
        if c.contains(&n) {
            continue; // one digit value: the pass would not move anything
        }
        let mut at = 0;
        for x in c.iter_mut() {
            (*x, at) = (at, at + *x);
        }
        let (src, dst): (&[u32], &mut [u32]) =
            if in_keys { (keys, &mut tmp[..]) } else { (&tmp[..], keys) };
        for &k in src {
            let slot = &mut c[(k >> shift) as usize & ((1 << bits) - 1)];
            dst[*slot] = k;
            *slot += 1;
        }
        in_keys = !in_keys;
    }
    if !in_keys {
        keys.copy_from_slice(&tmp[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(partitions: u64) -> Meta {
        Meta {
            format: store::FORMAT_NAME.into(),
            format_version: store::FORMAT_VERSION,
            num_vertices: 0,
            num_edges: 0,
            input_edges: 0,
            directed: true,
            weighted: false,
            simple: false,
            self_loops: 0,
            partitions,
            partition_size: store::MAX_PARTITION_SIZE,
            source_format: "test".into(),
            encoding: Encoding::Raw,
            files: Default::default(),
            part: None,
            meta_crc32: String::new(),
        }
    }

    /// A batch of block `b` holding `edges` edges of bytes `fill`.
    fn batch(feed: &Feed<'_>, b: usize, edges: usize, fill: u8) -> Result<Batch, Error> {
        let held = feed.reserve("a test batch", 600)?;
        let out = BlockOut { edges: vec![fill; edges * 4], ..BlockOut::default() };
        Ok(Batch { blocks: vec![(b, edges as u64, out)], _held: held })
    }

    /// The budget holds one batch at a time: each reservation waits for the writer to give the
    /// last batch back, every block lands in order, and a reservation that can never fit
    /// fails instead of waiting for ever.
    #[test]
    fn write_behind_waits_for_room_and_fails_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let budget = Budget::new(64 << 20).unwrap();
        let _others =
            budget.reserve("what the rest of the process holds", budget.available() - 1000);
        let sink = GridSink::create(dir.path(), "fwd", &meta(2)).unwrap();
        let sink = write_behind(sink, &budget, |feed| {
            for b in 0..3 {
                feed.send(batch(feed, b, b + 1, b as u8 + 1)?)?;
            }
            Ok(())
        })
        .unwrap();
        let w = sink.finish(dir.path(), "fwd").unwrap();
        assert_eq!((w.edges, &w.index.offsets[..]), (6, &[0, 1, 3, 6, 6][..]));
        let bytes = std::fs::read(dir.path().join("fwd.edges")).unwrap();
        assert_eq!(bytes, [&[1u8; 4][..], &[2; 8], &[3; 12]].concat());
        assert_eq!(budget.available(), 1000, "every batch's memory given back");

        let sink = GridSink::create(dir.path(), "rev", &meta(2)).unwrap();
        let e = write_behind(sink, &budget, |feed| {
            feed.send(batch(feed, 0, 1, 1)?)?;
            feed.reserve("more than the budget", 1001).map(drop)
        });
        assert!(matches!(e, Err(Error::Pipeline(sluice_io::Error::OverBudget { .. }))), "{e:?}");
    }

    /// A write that fails on the writer thread is the error `write_behind` returns, naming the
    /// file, and the sorting side stops at its next hand-over.
    #[test]
    fn a_failed_write_behind_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/dev/full", dir.path().join("fwd.edges")).unwrap();
        let sink = GridSink::create(dir.path(), "fwd", &meta(2)).unwrap();
        let budget = Budget::unlimited();
        let e = write_behind(sink, &budget, |feed| {
            // More than the file's 1 MiB buffer, so the write reaches the device.
            for b in 0..4 {
                feed.send(batch(feed, b, 1 << 19, 7)?)?;
            }
            Ok(())
        });
        let e = e.expect_err("writing to /dev/full fails").to_string();
        assert!(e.contains("fwd.edges"), "{e}");
    }

    /// A seeded xorshift: keys spread over the whole range, with runs of repeats.
    fn keys(n: usize, seed: u64, mask: u32) -> Vec<u32> {
        let mut x = seed | 1;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if i % 5 == 4 { 0x0001_0002 & mask } else { x as u32 & mask }
            })
            .collect()
    }

    #[test]
    fn radix_sort_agrees_with_the_standard_sort() {
        let mut tmp = Vec::new();
        for (n, mask) in [(0, !0), (1, !0), (63, !0), (64, !0), (5000, !0), (70_000, !0)]
            .into_iter()
            .chain([(5000, 0xffff), (5000, 0xffff_0000), (5000, 0x7ff), (5000, 0)])
        {
            for seed in [1, 2, 3] {
                let mut got = keys(n, seed, mask);
                let mut want = got.clone();
                want.sort_unstable();
                radix_sort(&mut got, &mut tmp);
                assert_eq!(got, want, "n {n}, mask {mask:#x}, seed {seed}");
            }
        }
    }

    /// A forward block turned round equals the same edges sorted afresh by (s, d, weight):
    /// the stable sort keeps `fwd`'s (d, s, weight) order among equal keys.
    #[test]
    fn a_turned_block_is_in_reverse_order_with_its_weights() {
        for (n, mask) in [(0, !0), (1, !0), (3000, !0), (3000, 0x00ff_00ff), (3000, 0xffff)] {
            let mut fwd: Vec<(u32, f64)> = keys(n, 9, mask)
                .into_iter()
                .enumerate()
                .map(|(i, k)| (k, ((i * 7919) % 13) as f64))
                .collect();
            fwd.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            let mut turn = Turn {
                keys: fwd.iter().map(|e| e.0.rotate_left(16)).collect(),
                weights: fwd.iter().map(|e| e.1).collect(),
                ..Turn::default()
            };
            turn.sort();
            let mut want: Vec<(u32, f64)> =
                fwd.iter().map(|e| (e.0.rotate_left(16), e.1)).collect();
            want.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            let got: Vec<(u32, f64)> = turn.keys.into_iter().zip(turn.weights).collect();
            assert_eq!(got, want, "n {n}, mask {mask:#x}");
        }
    }

    /// A forward block read back with bytes that are not those written is refused, naming the
    /// file and the block; a packed block that does not decode too.
    #[test]
    fn a_block_read_back_is_checked() {
        let edges: Vec<u8> =
            [0x0002_0001u32, 0x0002_0003].iter().flat_map(|k| k.to_le_bytes()).collect();
        let index = |bytes: &[u8], packed: bool| GridIndex {
            offsets: vec![0, 2],
            bytes: vec![0, bytes.len() as u64],
            packed,
            crcs: vec![crc32fast::hash(bytes)],
            weight_crcs: Vec::new(),
        };
        let paths = (Path::new("fwd.edges"), Path::new("fwd.weights"));
        let mut turn = Turn::default();
        turn.load(&index(&edges, false), (0, 1), (&edges, &[]), paths).unwrap();
        assert_eq!(turn.keys, [0x0001_0002, 0x0003_0002]);
        let mut bad = edges.clone();
        bad[5] ^= 1;
        let e = turn.load(&index(&edges, false), (0, 1), (&bad, &[]), paths).unwrap_err();
        assert!(
            e.to_string().contains("fwd.edges") && e.to_string().contains("block (0, 0)"),
            "{e}"
        );
        // Matching checksum, but a frame too short to be one.
        let e = turn.load(&index(&edges, true), (0, 1), (&edges, &[]), paths).unwrap_err();
        assert!(e.to_string().contains("does not decode"), "{e}");
    }
}
