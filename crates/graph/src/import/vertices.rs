//! Pass 1: the vertex set, as sorted original ids (rule 1: the dense id of a vertex is its
//! rank), and the original-to-dense [`Lookup`] of pass 2.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use sluice_io::{Budget, Pipeline, Reservation};

use super::Progress;
use super::describe::{Source, Vertices};
use super::parse::{RawEdges, parse_u64, trim_cr};
use super::read::for_each_chunk;
use crate::Error;

/// Ids below this may be collected in a bitmap (at most 128 MiB).
const BITMAP_LIMIT: u64 = 1 << 30;

/// Bytes the import holds per vertex once the vertex set is known: the sorted ids (8), the
/// out- and in-degree arrays (4 + 4), the bytes of `ids.bin` built from the ids (8) and those
/// of one degree file (4).
pub(super) const BYTES_PER_VERTEX: u64 = 28;

/// The sorted original ids of every vertex, and the budget they and the arrays built beside
/// them ([`BYTES_PER_VERTEX`]) hold.
#[derive(Debug)]
pub(super) struct VertexIds {
    /// Sorted, distinct.
    pub(super) ids: Vec<u64>,
    /// Held while the import runs.
    pub(super) reservation: Reservation,
}

/// Reserves the vertex arrays of `n` vertices before any is allocated (issue 17, defects 10
/// and 11): an error names `path`, the vertex count and the memory.
fn reserve_vertices(budget: &Budget, path: &Path, n: u64) -> Result<Reservation, Error> {
    budget
        .reserve(
            "holding the vertex arrays (28 bytes a vertex)",
            n.saturating_mul(BYTES_PER_VERTEX),
        )
        .map_err(|e| Error::Input {
            path: path.to_path_buf(),
            msg: format!("{n} vertices do not fit: {e}"),
        })
}

/// The distinct ids seen in edges, within `cap` bytes of memory: a bitmap while every id is
/// below [`BITMAP_LIMIT`] and the bitmap fits the cap, else pending ids that are sorted and
/// written to a run file in `scratch` whenever they fill the cap (an external sort; runs
/// are merged by [`IdCollector::finish`]).
#[derive(Debug)]
struct IdCollector<'a> {
    cap: u64,
    scratch: &'a Path,
    bitmap: Vec<u64>,
    pending: Vec<u64>,
    use_sorted: bool,
    runs: Vec<(PathBuf, u64)>,
}

impl<'a> IdCollector<'a> {
    fn new(cap: u64, scratch: &'a Path) -> IdCollector<'a> {
        let cap = cap.max(1 << 10);
        IdCollector {
            cap,
            scratch,
            bitmap: Vec::new(),
            pending: Vec::new(),
            use_sorted: false,
            runs: Vec::new(),
        }
    }

    /// Pending ids held before a spill: a vector grows by doubling, so half the cap.
    fn pending_limit(&self) -> usize {
        (self.cap / 16).max(64) as usize
    }

    fn add(&mut self, ids: &[u64]) -> Result<(), Error> {
        if !self.use_sorted {
            let max = ids.iter().copied().max().unwrap_or(0);
            let words = (max / 64 + 1).next_power_of_two();
            if max < BITMAP_LIMIT && words.max(self.bitmap.len() as u64) * 8 <= self.cap {
                let top = (max / 64) as usize;
                if top >= self.bitmap.len() {
                    self.bitmap.resize((top + 1).next_power_of_two(), 0);
                }
                // Random words of a bitmap the size of the L2 cache or more: each word's line
                // starts loading 16 ids ahead, so the misses overlap (as `Lookup::get_all`).
                for (i, &v) in ids.iter().enumerate() {
                    if let Some(&a) = ids.get(i + AHEAD) {
                        sluice_io::prefetch(&self.bitmap[(a / 64) as usize]);
                    }
                    self.bitmap[(v / 64) as usize] |= 1 << (v % 64);
                }
                return Ok(());
            }
            self.use_sorted = true;
            let bitmap = std::mem::take(&mut self.bitmap);
            for (w, &bits) in bitmap.iter().enumerate() {
                let mut b = bits;
                while b != 0 {
                    self.push(w as u64 * 64 + b.trailing_zeros() as u64)?;
                    b &= b - 1;
                }
            }
        }
        for &v in ids {
            self.push(v)?;
        }
        Ok(())
    }

    fn push(&mut self, v: u64) -> Result<(), Error> {
        if self.pending.len() >= self.pending_limit() {
            self.pending.par_sort_unstable();
            self.pending.dedup();
            // Dedup may free enough room; spill only a run that is still over half the limit.
            if self.pending.len() >= self.pending_limit() / 2 {
                self.spill()?;
            }
        }
        self.pending.push(v);
        Ok(())
    }

    /// Writes the sorted, distinct pending ids as one run file.
    fn spill(&mut self) -> Result<(), Error> {
        let path = self.scratch.join(format!("vertex-run-{}.bin", self.runs.len()));
        let f =
            File::create(&path).map_err(|e| Error::io(&path, "cannot create scratch file", e))?;
        let mut w = BufWriter::with_capacity(1 << 16, f);
        for v in &self.pending {
            w.write_all(&v.to_le_bytes()).map_err(|e| Error::io(&path, "write failed", e))?;
        }
        w.flush().map_err(|e| Error::io(&path, "write failed", e))?;
        self.runs.push((path, self.pending.len() as u64));
        self.pending.clear();
        Ok(())
    }

    /// The sorted distinct ids, with the vertex arrays reserved before they are built.
    fn finish(mut self, budget: &Budget, path: &Path) -> Result<VertexIds, Error> {
        if !self.use_sorted {
            let n = self.bitmap.iter().map(|w| w.count_ones() as u64).sum();
            let reservation = reserve_vertices(budget, path, n)?;
            let mut ids = Vec::with_capacity(n as usize);
            for (w, &bits) in self.bitmap.iter().enumerate() {
                let mut b = bits;
                while b != 0 {
                    ids.push(w as u64 * 64 + b.trailing_zeros() as u64);
                    b &= b - 1;
                }
            }
            return Ok(VertexIds { ids, reservation });
        }
        self.pending.par_sort_unstable();
        self.pending.dedup();
        if self.runs.is_empty() {
            let n = self.pending.len() as u64;
            let reservation = reserve_vertices(budget, path, n)?;
            return Ok(VertexIds { ids: std::mem::take(&mut self.pending), reservation });
        }
        self.spill()?;
        self.pending = Vec::new();
        let merged = self.scratch.join("vertex-ids.bin");
        let n = merge_runs(&self.runs, &merged)?;
        let reservation = reserve_vertices(budget, path, n)?;
        let bytes = std::fs::read(&merged)
            .map_err(|e| Error::io(&merged, "cannot read scratch file", e))?;
        let _ = std::fs::remove_file(&merged); // best effort: the scratch directory goes anyway
        let ids = crate::store::u64s(&bytes);
        Ok(VertexIds { ids, reservation })
    }
}

/// Merges sorted runs of distinct ids into one sorted distinct file (deleting each run);
/// returns the ids written. Memory: 64 KiB per run.
fn merge_runs(runs: &[(PathBuf, u64)], out: &Path) -> Result<u64, Error> {
    let mut readers = Vec::with_capacity(runs.len());
    for (path, _) in runs {
        let f = File::open(path).map_err(|e| Error::io(path, "cannot open scratch file", e))?;
        readers.push((BufReader::with_capacity(1 << 16, f), path));
    }
    let next = |r: &mut (BufReader<File>, &PathBuf)| -> Result<Option<u64>, Error> {
        let mut b = [0u8; 8];
        match r.0.read_exact(&mut b) {
            Ok(()) => Ok(Some(u64::from_le_bytes(b))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(Error::io(r.1, "read failed", e)),
        }
    };
    let mut heap = BinaryHeap::new();
    for (i, r) in readers.iter_mut().enumerate() {
        if let Some(v) = next(r)? {
            heap.push(Reverse((v, i)));
        }
    }
    let f = File::create(out).map_err(|e| Error::io(out, "cannot create scratch file", e))?;
    let mut w = BufWriter::with_capacity(1 << 16, f);
    let (mut last, mut n) = (None, 0u64);
    while let Some(Reverse((v, i))) = heap.pop() {
        if last != Some(v) {
            w.write_all(&v.to_le_bytes()).map_err(|e| Error::io(out, "write failed", e))?;
            last = Some(v);
            n += 1;
        }
        if let Some(v) = next(&mut readers[i])? {
            heap.push(Reverse((v, i)));
        }
    }
    w.flush().map_err(|e| Error::io(out, "write failed", e))?;
    for (path, _) in runs {
        let _ = std::fs::remove_file(path); // best effort, as above
    }
    Ok(n)
}

/// The sorted original ids of every vertex. Sizes read from the input (a Matrix Market
/// dimension, a vertex file) are reserved from `budget` before anything is allocated; ids
/// collected from edges spill to `scratch` when they outgrow a quarter of the budget left.
pub(super) fn collect_vertices(
    source: &Source<'_>,
    pipeline: &Pipeline,
    progress: Option<&Progress>,
    budget: &Budget,
    scratch: &Path,
) -> Result<VertexIds, Error> {
    let first = source.files.first().map_or(scratch, |f| f.path.as_path());
    match &source.vertices {
        Vertices::Range(n) => {
            let reservation = reserve_vertices(budget, first, *n)?;
            Ok(VertexIds { ids: (1..=*n).collect(), reservation })
        }
        Vertices::List(path) => {
            let len = std::fs::metadata(path)
                .map_err(|e| Error::io(path, "cannot read vertex file", e))?
                .len();
            let _text_res = budget.reserve("the vertex file", len)?;
            let text =
                std::fs::read(path).map_err(|e| Error::io(path, "cannot read vertex file", e))?;
            vertex_list(source, path, &text, budget)
        }
        Vertices::FromEdges => {
            let cap = budget.available() / 4;
            let _cap_res = budget.reserve("collecting vertex ids", cap)?;
            let mut c = IdCollector::new(cap, scratch);
            // The bitmap takes ids in any order and once each: a chunk is sorted and
            // deduplicated (on the workers) only once the collector keeps sorted runs. At
            // Kronecker scale 22 the sorts took a quarter of the import's time.
            let runs = AtomicBool::new(false);
            let per_chunk = |raw: RawEdges| -> Result<Vec<u64>, (usize, String)> {
                let mut v = raw.src;
                v.extend_from_slice(&raw.dst);
                if runs.load(Ordering::Relaxed) {
                    v.sort_unstable();
                    v.dedup();
                }
                Ok(v)
            };
            let mut failed = None;
            for_each_chunk(source, pipeline, progress, &per_chunk, &mut |ids: Vec<u64>| {
                if failed.is_none() {
                    failed = c.add(&ids).err();
                    runs.store(c.use_sorted, Ordering::Relaxed);
                }
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
            drop(_cap_res);
            c.finish(budget, first)
        }
    }
}

/// The ids of vertex file `path` (of `source`), whose bytes are `text`: one id a line, each
/// fitting the source's id width, none twice.
pub(super) fn vertex_list(
    source: &Source<'_>,
    path: &Path,
    text: &[u8],
    budget: &Budget,
) -> Result<VertexIds, Error> {
    let lines = memchr::memchr_iter(b'\n', text).count() as u64 + 1;
    let reservation = reserve_vertices(budget, path, lines)?;
    let mut ids = Vec::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = trim_cr(line);
        let t: Vec<&[u8]> =
            line.split(|b| b.is_ascii_whitespace()).filter(|t| !t.is_empty()).collect();
        if t.is_empty() {
            continue;
        }
        let fail = |msg: String| Error::Parse { path: path.to_path_buf(), line: i as u64 + 1, msg };
        let v = parse_u64(t[0])
            .ok_or_else(|| fail(format!("bad vertex id {:?}", String::from_utf8_lossy(t[0]))))?;
        if v > source.id_max {
            return Err(fail(format!("vertex id {v} does not fit in {} bytes", source.id_bytes)));
        }
        ids.push(v);
    }
    ids.par_sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::Input {
            path: path.to_path_buf(),
            msg: format!("vertex {} is listed twice", w[0]),
        });
    }
    Ok(VertexIds { ids, reservation })
}

/// Ids [`Lookup::get_all`] looks up together.
const BATCH: usize = 16;

/// How far ahead [`IdCollector::add`] prefetches the bitmap's words, in ids.
const AHEAD: usize = 16;

/// Original id → dense id.
#[derive(Debug)]
pub(super) struct Lookup {
    ids: Vec<u64>,
    table: Option<(sluice_io::HugeSlice<[u64; 2]>, Reservation)>,
}

impl Lookup {
    /// The lookup of `ids`, which are sorted and distinct: a ranked bitmap when ids are dense
    /// enough (at most 4 slots per vertex + 1 Mi) and it fits `budget`, else a binary search of
    /// `ids`.
    ///
    /// The bitmap holds, per 64 ids, the word of their bits and the number of vertices below
    /// it: a dense id is that count plus a popcount, one cache line per lookup. At 16 bytes
    /// per 64 ids it is a sixteenth of a table of `u32` per slot (Kronecker scale 24: 4 MiB,
    /// which the L3 cache holds, against 64 MiB), and pass 2 looks up two random ids per edge:
    /// with the table, a third of the import's time.
    pub(super) fn new(ids: Vec<u64>, budget: &Budget) -> Lookup {
        let max = ids.last().copied().unwrap_or(0);
        let n = ids.len() as u64;
        let dense = max < u32::MAX as u64 && max < 4 * n + (1 << 20);
        let words = max / 64 + 1;
        let res = dense.then(|| budget.reserve("the id lookup bitmap", words * 16).ok());
        // On huge pages: in 4 KiB pages (1024 at scale 24) the random lookups also paid for
        // the TLB's misses, and pass 2 took 7 % longer (bench/graph/README.md, session 25).
        let table = res.flatten().and_then(|r| {
            let mut t = sluice_io::HugeSlice::<[u64; 2]>::zeroed(words as usize).ok()?;
            for &v in &ids {
                t[(v / 64) as usize][0] |= 1 << (v % 64);
            }
            let mut below = 0;
            for w in t.iter_mut() {
                w[1] = below;
                below += w[0].count_ones() as u64;
            }
            Some((t, r))
        });
        Lookup { ids, table }
    }

    /// The dense id of original id `v`, if `v` is a vertex.
    #[inline]
    pub(super) fn get(&self, v: u64) -> Option<u32> {
        match &self.table {
            Some((t, _)) => {
                let [bits, below] = *t.get((v / 64) as usize)?;
                let bit = 1u64 << (v % 64);
                (bits & bit != 0).then(|| (below + (bits & (bit - 1)).count_ones() as u64) as u32)
            }
            None => self.ids.binary_search(&v).ok().map(|i| i as u32),
        }
    }

    /// The dense ids of `vs`, appended to `out`; `Err(i)` if `vs[i]` is the first that is not a
    /// vertex. The bitmap's words are loaded [`BATCH`] at a time before any is used: the loads
    /// do not wait on one another's branches, so their cache misses overlap (pass 2 looks up
    /// two random ids per edge in a table the size of the L3 cache; looked up one by one, the
    /// misses took three quarters of the pass's time).
    pub(super) fn get_all(&self, vs: &[u64], out: &mut Vec<u32>) -> Result<(), usize> {
        let Some((t, _)) = &self.table else {
            for (i, &v) in vs.iter().enumerate() {
                out.push(self.get(v).ok_or(i)?);
            }
            return Ok(());
        };
        let mut words = [[0u64; 2]; BATCH];
        for (c, batch) in vs.chunks(BATCH).enumerate() {
            // The next batch's words start loading while this one waits for its own.
            for &v in vs.get((c + 1) * BATCH..).unwrap_or(&[]).iter().take(BATCH) {
                if let Some(w) = t.get((v / 64) as usize) {
                    sluice_io::prefetch(w);
                }
            }
            // An id past the table has no bits: not a vertex.
            for (w, &v) in words.iter_mut().zip(batch) {
                *w = t.get((v / 64) as usize).copied().unwrap_or([0, 0]);
            }
            for (k, (&[bits, below], &v)) in words.iter().zip(batch).enumerate() {
                let bit = 1u64 << (v % 64);
                if bits & bit == 0 {
                    return Err(c * BATCH + k);
                }
                out.push((below + (bits & (bit - 1)).count_ones() as u64) as u32);
            }
        }
        Ok(())
    }

    /// The sorted original ids.
    pub(super) fn into_ids(self) -> Vec<u64> {
        self.ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distinct ids of `batches`, sorted: what `IdCollector` must return.
    fn naive(batches: &[Vec<u64>]) -> Vec<u64> {
        let mut all: Vec<u64> = batches.concat();
        all.sort_unstable();
        all.dedup();
        all
    }

    #[test]
    fn id_collector_gives_sorted_distinct_ids_in_bitmap_sorted_and_spilled_modes() {
        let small = vec![vec![5, 3, 5, 64, 0], vec![63, 3, 1000]];
        let big = vec![vec![5, 3, 64], vec![BITMAP_LIMIT + 7, 3, 1 << 40], vec![9, BITMAP_LIMIT]];
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(9);
        let random: Vec<Vec<u64>> = (0..40)
            .map(|_| (0..500).map(|_| rng.gen_range(0..30_000u64) * 977).collect())
            .collect();
        let dir = tempfile::tempdir().unwrap();
        // Caps: everything in memory; a bitmap too big for the cap; runs of about 64 ids
        // spilled to disk and merged (the external sort of issue 17, defect 10).
        for cap in [1 << 30, 1 << 10] {
            for batches in [&small, &big, &random] {
                let mut c = IdCollector::new(cap, dir.path());
                for b in batches.iter() {
                    c.add(b).unwrap();
                }
                let spilled = !c.runs.is_empty();
                let got = c.finish(&Budget::unlimited(), dir.path()).unwrap();
                assert_eq!(got.ids, naive(batches), "cap {cap}");
                assert_eq!(got.reservation.bytes(), got.ids.len() as u64 * BYTES_PER_VERTEX);
                assert_eq!(spilled, cap == 1 << 10 && batches.len() == 40, "cap {cap}");
            }
        }
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "run files left: {left:?}");
    }

    #[test]
    fn a_vertex_count_over_the_budget_is_refused_before_allocation() {
        let budget = Budget::new(64 << 20).unwrap();
        let err = reserve_vertices(&budget, Path::new("g.mtx"), 1 << 28).unwrap_err().to_string();
        assert!(err.contains("g.mtx") && err.contains("268435456 vertices"), "{err}");
    }

    #[test]
    fn lookup_maps_ids_to_ranks_with_and_without_a_table() {
        let dense: Vec<u64> = vec![2, 3, 10, 11];
        let sparse: Vec<u64> = vec![2, 1 << 33, (1 << 33) + 1];
        for ids in [dense, sparse] {
            let l = Lookup::new(ids.clone(), &Budget::unlimited());
            for (rank, &v) in ids.iter().enumerate() {
                assert_eq!(l.get(v), Some(rank as u32));
            }
            for v in [0, 1, 4, 12, 1 << 32, 1 << 34] {
                assert_eq!(l.get(v), None, "{v}");
            }
            assert_eq!(l.into_ids(), ids);
        }
        // Many words, with ids on and beside word edges: every id in range against a search.
        let ids: Vec<u64> = (0..5000u64).filter(|v| v % 64 == 63 || (v * 7919) % 3 != 0).collect();
        let l = Lookup::new(ids.clone(), &Budget::unlimited());
        assert!(l.table.is_some());
        for v in 0..5200u64 {
            assert_eq!(l.get(v), ids.binary_search(&v).ok().map(|i| i as u32), "{v}");
        }
    }

    #[test]
    fn batched_lookups_equal_single_ones_and_stop_at_the_first_missing_id() {
        let ids: Vec<u64> = (0..5000u64).filter(|v| v % 64 == 63 || (v * 7919) % 3 != 0).collect();
        let sparse: Vec<u64> = ids.iter().map(|v| v << 20).collect();
        for (ids, beyond) in [(ids, 5000u64), (sparse, 5000 << 20)] {
            let l = Lookup::new(ids.clone(), &Budget::unlimited());
            // Lengths around the batch size, from a spread of ids in a scrambled order.
            for len in [0, 1, BATCH - 1, BATCH, BATCH + 1, 3 * BATCH + 5, ids.len()] {
                let vs: Vec<u64> = (0..len).map(|i| ids[(i * 7919) % ids.len()]).collect();
                let mut got = vec![7];
                assert_eq!(l.get_all(&vs, &mut got), Ok(()), "{len}");
                let want: Vec<u32> = vs.iter().map(|&v| l.get(v).unwrap()).collect();
                assert_eq!(got[1..], want[..], "{len} ids, appended");
            }
            // A missing id (between ids, and past the last) at every place of a batch.
            let absent = [ids.iter().find(|&&v| !ids.contains(&(v + 1))).unwrap() + 1, beyond];
            for v in absent {
                for at in [0, 1, BATCH - 1, BATCH, 2 * BATCH + 3] {
                    let mut vs: Vec<u64> = ids[..3 * BATCH].to_vec();
                    vs[at] = v;
                    vs[at + 2] = v; // a later one too: the first is reported
                    let mut got = Vec::new();
                    assert_eq!(l.get_all(&vs, &mut got), Err(at), "{v} at {at}");
                }
            }
        }
    }
}
