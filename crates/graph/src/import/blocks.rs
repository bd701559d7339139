//! Pass 3: one column group's bucket at a time, sorted into grid blocks and appended to
//! `<grid>.edges` (and `<grid>.weights`), then the block index. Within a block, edges sort by
//! (d, s), then weight; `simple` (rule 3) then drops duplicates (keeping the smallest weight)
//! and self loops.
//!
//! A directed graph's reverse grid is not bucketed: `reverse::write_reverse` builds it from the
//! forward grid just written. Block (sp, dp) of `rev` holds exactly the edges of block (dp, sp)
//! of `fwd`, each turned round; `fwd` sorts them by (d, s, weight), so one stable sort by the
//! new destination (s) gives `rev`'s order (s, d, weight). That spares pass 2 half of its
//! routing and scratch writes (8 bytes per edge, written and read back), and pass 3 a sort of
//! 8-byte records: the forward blocks are read back at 4 bytes per edge or less, each checked
//! against its CRC-32 first.

use std::fs::File;
use std::path::Path;

use rayon::prelude::*;
use sluice_io::Budget;

use super::buckets::Bucket;
use sink::{Batch, GridSink, write_behind};

/// The reverse grid from the forward one.
mod reverse;
/// The writer thread and the grid's files.
mod sink;

use crate::Error;
use crate::store::{Encoding, FileSum, GridIndex, Meta, packed};
pub(super) use reverse::write_reverse;

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

/// Writes grid `grid` (`fwd`, or an undirected graph's only grid) into `dir` from its
/// `buckets`, one per column group of `cols_per_group` partitions, deleting each bucket once
/// read (on a thread of its own: [`Remover`]); the layout, weights and
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
    let read = |path: &Path, bytes: u64| -> Result<Vec<u8>, Error> {
        let data =
            std::fs::read(path).map_err(|e| Error::io(path, "cannot read scratch file", e))?;
        if data.len() as u64 != bytes {
            return Err(Error::corrupt(path, "scratch file has the wrong length"));
        }
        Ok(data)
    };
    let sink = std::thread::scope(|scope| {
        let remover = Remover::start(scope);
        let ahead = ReadAhead::start(
            scope,
            buckets.len(),
            budget,
            |g| (format!("column group {g} of the {grid} grid, read ahead"), buckets[g].bytes),
            |g| read(&buckets[g].path, buckets[g].bytes),
        );
        write_behind(sink, budget, |feed| {
            for (g, Bucket { path, bytes, records: count }) in buckets.iter().enumerate() {
                stop()?;
                let loaded = ahead.next()?;
                // The bucket (unless read ahead, under a reservation of its own) and the sorted
                // keys (and weights); then the blocks as stored, at most 4 bytes per edge (and
                // one frame per block) plus the weights, held until written.
                let own = if loaded.is_some() { 0 } else { *bytes };
                let sorting = feed.reserve(
                    &format!("sorting column group {g} of the {grid} grid"),
                    own + count * if weighted { 12 } else { 4 } + 8 * cols_per_group * p,
                )?;
                let stored = feed.reserve(
                    &format!("column group {g} of the {grid} grid as stored"),
                    count * if weighted { 12 } else { 4 }
                        + if packed { cols_per_group * p * packed::FRAME_BYTES as u64 } else { 0 },
                )?;
                let (data, _read_res) = match loaded {
                    Some((data, res)) => (data, Some(res)),
                    None => (read(path, *bytes)?, None),
                };
                remover.remove(path);
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
                drop((sorted, sorting, _read_res));
                feed.send(Batch { blocks, _held: stored })?;
            }
            Ok(())
        })
    })?;
    sink.finish(dir, grid)
}

/// Loads items `0 .. n` in order on a thread of its own, each while the caller works on the one
/// before (double buffering): in a memory cgroup the scratch buckets are written back and
/// evicted before pass 3 reads them, and the read sat on the sorting thread (Kronecker scale
/// 24 in 1 GiB: a quarter of that thread's samples in `folio_wait`; the read-ahead hint did not
/// keep the pages against the cgroup's reclaim). An item is loaded ahead under a reservation
/// of its own, and only while the budget has room for three times it beside; otherwise the
/// caller gets `None` and loads it itself, as before.
struct ReadAhead<T> {
    rx: std::sync::mpsc::Receiver<Result<Option<(T, sluice_io::Reservation)>, Error>>,
}

impl<T: Send> ReadAhead<T> {
    fn start<'s, 'e: 's, W, L>(
        scope: &'s std::thread::Scope<'s, 'e>,
        n: usize,
        budget: &'e Budget,
        what: W,
        load: L,
    ) -> ReadAhead<T>
    where
        T: 's,
        W: Fn(usize) -> (String, u64) + Send + 's,
        L: Fn(usize) -> Result<T, Error> + Send + 's,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(0);
        let spawned = std::thread::Builder::new().name("sluice-import-read".into()).spawn_scoped(
            scope,
            move || {
                for i in 0..n {
                    let (name, bytes) = what(i);
                    let room = budget.reserve(&name, bytes.saturating_mul(4)).is_ok();
                    let res = room.then(|| budget.reserve(&name, bytes).ok()).flatten();
                    let item = match res {
                        Some(r) => load(i).map(|t| Some((t, r))),
                        None => Ok(None),
                    };
                    let failed = item.is_err();
                    if tx.send(item).is_err() || failed {
                        return;
                    }
                }
            },
        );
        // Without the thread the receiver reports "disconnected", and each item is loaded in place.
        drop(spawned);
        ReadAhead { rx }
    }

    /// The next item, `None` when the caller must load it.
    fn next(&self) -> Result<Option<(T, sluice_io::Reservation)>, Error> {
        self.rx.recv().unwrap_or(Ok(None))
    }
}

/// Deletes the scratch buckets pass 3 has read, on a thread of its own: best effort, to free
/// the disk early (the scratch directory goes with its `TempDir` anyway). On a file system
/// mounted with `discard`, an unlink waits for the device to discard the file's blocks: 1.4 s
/// of the blocks pass at Kronecker scale 24 (68 buckets, 2.1 GB), on the sorting thread.
struct Remover {
    tx: Option<std::sync::mpsc::Sender<std::path::PathBuf>>,
}

impl Remover {
    /// The thread, or none when it cannot start (each file is then deleted in place).
    fn start<'s>(scope: &'s std::thread::Scope<'s, '_>) -> Remover {
        let (tx, rx) = std::sync::mpsc::channel::<std::path::PathBuf>();
        let thread = std::thread::Builder::new()
            .name("sluice-import-rm".into())
            .spawn_scoped(scope, move || {
                rx.into_iter().for_each(|p| drop(std::fs::remove_file(p)))
            });
        Remover { tx: thread.is_ok().then_some(tx) }
    }

    fn remove(&self, path: &Path) {
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(path.to_path_buf()).is_ok());
        if !sent {
            let _ = std::fs::remove_file(path);
        }
    }
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

/// Asks the kernel to read `ranges` (offset, length) of `path` into the page cache in the
/// background (`posix_fadvise(POSIX_FADV_WILLNEED)`), so that the next group's read finds them
/// there while this group sorts: the page cache is the kernel's memory, not the budget's. In a
/// 1 GiB cgroup the forward grid is evicted before the reverse grid reads it back. The reverse
/// grid's row group is `P` extents: hinted all at once, their reads queue together, which a
/// [`ReadAhead`] thread reading them one by one did not beat (4.4–5.3 s against 4.4–4.9 for the
/// pass at Kronecker scale 24). Best effort: a failure costs only the overlap.
fn read_ahead(path: &Path, ranges: &[(u64, u64)]) {
    let Ok(f) = File::open(path) else { return };
    for &(offset, len) in ranges {
        if let Some(len) = std::num::NonZeroU64::new(len) {
            let _ = rustix::fs::fadvise(&f, offset, Some(len), rustix::fs::Advice::WillNeed);
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
            // Sized once and written in place: a loop of appends checked the capacity per key.
            out.edges = vec![0; keys.len() * 4];
            for (b, &x) in out.edges.chunks_exact_mut(4).zip(keys) {
                b.copy_from_slice(&x.to_le_bytes());
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
    // A vertex's partition: a shift when partitions are 65536 wide (`store::layout_for`),
    // not a division per end of every record.
    let (shift, pow2) = (psize.trailing_zeros(), psize.is_power_of_two());
    let part = |v: u64| if pow2 { v >> shift } else { v / psize };
    let pieces = rayon::current_num_threads().max(1) * 2;
    let per = (data.len() / rec).div_ceil(pieces).max(1) * rec;
    let local: Vec<SortedGroup> = data
        .par_chunks(per)
        .map(|chunk| {
            let mut starts = vec![0usize; gblocks + 1];
            for c in chunk.chunks_exact(rec) {
                let (s, d) = decode(c);
                starts[((part(d) - dp0) * p + part(s)) as usize + 1] += 1;
            }
            for i in 0..gblocks {
                starts[i + 1] += starts[i];
            }
            let mut fill = starts.clone();
            let mut keys = vec![0u32; chunk.len() / rec];
            let mut weights = if weighted { vec![0f64; keys.len()] } else { Vec::new() };
            for c in chunk.chunks_exact(rec) {
                let (s, d) = decode(c);
                let (sp, dp) = (part(s), part(d));
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

    /// A seeded xorshift: keys spread over the whole range, with runs of repeats.
    pub(super) fn keys(n: usize, seed: u64, mask: u32) -> Vec<u32> {
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

    /// Every item comes in order, each either loaded ahead (under a reservation the budget
    /// counts while it is held) or left to the caller when the budget has no room for it; a
    /// load's error is handed on and ends the thread.
    #[test]
    fn read_ahead_loads_in_order_within_the_budget_and_hands_on_an_error() {
        let budget = Budget::new(64 << 20).unwrap();
        let free = budget.available();
        // 1 MiB items load ahead; a 40 MiB one does not fit four times; item 5 fails.
        let size = |i: usize| if i == 3 { 40 << 20 } else { 1u64 << 20 };
        let got = std::thread::scope(|scope| {
            let ahead = ReadAhead::start(
                scope,
                8,
                &budget,
                |i| (format!("item {i}"), size(i)),
                |i| if i == 5 { Err(Error::corrupt("item-5", "bad")) } else { Ok(i * 10) },
            );
            let mut got = Vec::new();
            for _ in 0..6 {
                match ahead.next() {
                    Ok(Some((v, res))) => {
                        assert_eq!(res.bytes(), size(v / 10));
                        assert!(budget.available() <= free - size(v / 10));
                        got.push(Some(v));
                    }
                    Ok(None) => got.push(None),
                    Err(e) => {
                        assert!(e.to_string().contains("item-5"), "{e}");
                        got.push(Some(usize::MAX));
                    }
                }
            }
            // After the error the thread is gone: the caller loads the rest itself.
            assert!(matches!(ahead.next(), Ok(None)));
            got
        });
        assert_eq!(got, [Some(0), Some(10), Some(20), None, Some(40), Some(usize::MAX)]);
        assert_eq!(budget.available(), free, "every reservation given back");
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
}
