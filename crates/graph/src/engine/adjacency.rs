//! The adjacency stream: each destination partition's neighbour lists, sorted, one partition in
//! memory at a time (`STYLE.md` §3). CDLP and LCC need a function of a vertex's whole neighbour
//! list (a histogram, an intersection), which a fold of per-edge values cannot give.
//!
//! # Where the lists come from
//! The blocks into partition `p` (a column of the grid) are one sequential range of a grid file,
//! and inside it edges come ordered by (source partition, `d`, `s`): appending each edge to its
//! destination's list yields lists sorted by neighbour id, with no sort. The forward grid gives
//! in-neighbours, the transposed grid (directed graphs) out-neighbours; undirected graphs store
//! both directions of every edge, so one column gives N(v) and `In`, `Out` and `Both` are the
//! same lists. List lengths are known up front from the degree arrays, so each partition's
//! lists are one allocation, reserved from the graph's [`Budget`](sluice_io::Budget) before they
//! are built. Blocks are read through the `sluice-io` pipeline (one run per call, so reading
//! partition `p + 1` overlaps the caller's work on partition `p`), every block CRC-checked, or
//! from memory after [`Graph::load_edges`].
//!
//! # Multigraphs
//! With `sets == false` a list holds one entry per stored edge: duplicate edges repeat the
//! neighbour, a self loop lists the vertex itself (a directed self loop is in both its in- and
//! its out-list, so `Both` lists it twice). With `sets == true` each list is a set: duplicates
//! and self loops are dropped (the simple graph of `specs/graphalytics.md` §1).
//!
//! # Memory and out-of-core limits
//! A group of partitions `R` takes [`Graph::adjacency_bytes`]: 4 bytes per list entry plus 16
//! per vertex (offsets and fill cursors) — for `Both` on a directed graph, 8 bytes per edge into
//! or out of `R`. [`Graph::stream_adjacency`] holds one partition (≤ 65536 vertices) at a time,
//! so it handles any graph whose largest partition column fits the budget beside the vertex
//! arrays; [`Graph::adjacency_windows`] cuts the partitions into groups that fit a budget, for
//! algorithms (LCC) that need random access to other vertices' lists. Beside a group, the
//! builder holds up to 32 MiB of runs (`HELD_PAIRS`) when the budget has twice that to spare
//! beside the largest group; otherwise it writes each run as it comes.

use std::ops::Range;

use rayon::prelude::*;
use sluice_io::{Block, BlockKernel, Reservation};

use super::{Graph, VertexId, block_error, decode};
use crate::Error;
use crate::store::EDGE_BYTES;

/// Which neighbours a list holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Neighbours {
    /// N_in(v): sources of the edges into `v`.
    In,
    /// N_out(v): destinations of the edges out of `v`.
    Out,
    /// N_in(v) and N_out(v) together, sorted (a multiset unless `sets`: a neighbour joined both
    /// ways is listed twice). For undirected graphs, N(v) (each neighbour once per edge).
    Both,
}

/// The neighbour lists of a range of consecutive vertices, each sorted by dense id.
#[derive(Debug)]
pub struct Adjacency {
    first: VertexId,
    offsets: Vec<usize>,
    lists: Vec<VertexId>,
    _held: Reservation,
}

impl Adjacency {
    /// The vertices whose lists are held.
    pub fn vertices(&self) -> Range<VertexId> {
        self.first..self.first + (self.offsets.len() - 1) as VertexId
    }
    /// Returns true if and only if `v`'s list is held.
    #[inline]
    pub fn contains(&self, v: VertexId) -> bool {
        v.wrapping_sub(self.first) < (self.offsets.len() - 1) as VertexId
    }
    /// The neighbours of `v` (which must be in [`Adjacency::vertices`]), sorted.
    #[inline]
    pub fn of(&self, v: VertexId) -> &[VertexId] {
        let i = (v - self.first) as usize;
        &self.lists[self.offsets[i]..self.offsets[i + 1]]
    }
}

/// Pairs [`Builder`] holds before it writes them into the lists (32 MiB), when the budget
/// lends them ([`Graph::adjacency_groups`]); otherwise each run is written as it comes. The
/// unit tests below use small values, so their graphs take many flushes and sweeps.
#[cfg(not(test))]
const HELD_PAIRS: usize = 4 << 20;
#[cfg(test)]
const HELD_PAIRS: usize = 5000;

/// List entries written per sweep of [`Builder::flush`]: 512 KiB of lists, within L2.
#[cfg(not(test))]
const SWEEP_ENTRIES: usize = 128 << 10;
#[cfg(test)]
const SWEEP_ENTRIES: usize = 300;

/// Fills one group's lists from (destination, source) pairs in stream order.
///
/// A run (one read of one grid block) holds pairs sorted by destination, and a column has a run
/// per source partition: written as they come, every run sweeps the whole column's lists, one
/// store per edge into a different cache line (scale 24: 136 sweeps of 16–20 MB per column).
/// So runs are held, up to a bound, and written together a range of destinations at a time,
/// each range's lists staying in cache while every held run adds to them. The pairs of one
/// destination are still written in stream order: the lists are the same. Scale-24 CDLP, two
/// iterations, two alternated rounds: 33.1 and 34.5 s before, 31.0 and 28.5 s after (the
/// larger share of an iteration is the label gathers, `Graph::stream_neighbour_values`).
struct Builder {
    first: VertexId,
    offsets: Vec<usize>,
    cursor: Vec<usize>,
    lists: Vec<VertexId>,
    held: Reservation,
    two_runs: bool,
    /// Lists of mapped values (`Graph::stream_neighbour_values`): not merged, never sets.
    mapped: bool,
    /// Runs not written yet, with the tag (block) an error names, and their pairs.
    runs: Vec<(usize, Vec<(VertexId, VertexId)>)>,
    pairs: usize,
    /// Pairs held before a flush.
    hold: usize,
}

impl Builder {
    /// Takes one run (pairs sorted by destination), its sources mapped through `map` if given;
    /// `Err(tag)` when a held run does not fit the lists or the map (a corrupt block).
    fn push_run(
        &mut self,
        tag: usize,
        mut pairs: Vec<(VertexId, VertexId)>,
        map: Option<&[VertexId]>,
    ) -> Result<(), usize> {
        if let Some(m) = map {
            // Now, while the run's sources (one partition's) are what the lookups touch.
            for (_, s) in &mut pairs {
                *s = *m.get(*s as usize).ok_or(tag)?;
            }
        }
        self.pairs += pairs.len();
        self.runs.push((tag, pairs));
        if self.pairs > self.hold { self.flush() } else { Ok(()) }
    }

    /// Writes the held runs into the lists, a range of destinations at a time; `Err(tag)` for
    /// a run with a pair outside the group, past its list, or out of destination order.
    fn flush(&mut self) -> Result<(), usize> {
        let runs = std::mem::take(&mut self.runs);
        self.pairs = 0;
        let n = self.cursor.len();
        let mut at = vec![0usize; runs.len()];
        let mut lo = 0;
        while lo < n {
            let mut hi = lo + 1;
            while hi < n && self.offsets[hi] - self.offsets[lo] < SWEEP_ENTRIES {
                hi += 1;
            }
            for ((tag, run), pos) in runs.iter().zip(&mut at) {
                while let Some(&(d, s)) = run.get(*pos) {
                    let i = d.wrapping_sub(self.first) as usize;
                    if i >= hi {
                        break;
                    }
                    if i < lo || !self.push(d, s) {
                        return Err(*tag);
                    }
                    *pos += 1;
                }
            }
            lo = hi;
        }
        match runs.iter().zip(&at).find(|&((_, run), &pos)| pos < run.len()) {
            Some(((tag, _), _)) => Err(*tag),
            None => Ok(()),
        }
    }

    fn push(&mut self, d: VertexId, s: VertexId) -> bool {
        let i = d.wrapping_sub(self.first) as usize;
        match self.cursor.get(i) {
            Some(&c) if c < self.offsets[i + 1] => {
                self.lists[c] = s;
                self.cursor[i] = c + 1;
                true
            }
            _ => false,
        }
    }

    /// The lists, once every run was flushed.
    fn finish(self, g: &Graph, sets: bool) -> Result<Adjacency, Error> {
        let Builder { first, mut offsets, cursor, mut lists, held, two_runs, runs, mapped, .. } =
            self;
        debug_assert!(runs.is_empty(), "finish before flush");
        let two_runs = two_runs && !mapped;
        if cursor.iter().zip(&offsets[1..]).any(|(c, end)| c != end) {
            return Err(Error::corrupt(
                g.dir(),
                "a grid column does not hold the degree arrays' edge counts",
            ));
        }
        if two_runs || sets {
            // Both on a directed graph: each list is two sorted runs (in, then out) to merge.
            let mut slices = Vec::with_capacity(offsets.len() - 1);
            let mut rest = &mut lists[..];
            for w in offsets.windows(2) {
                let (a, b) = rest.split_at_mut(w[1] - w[0]);
                slices.push(a);
                rest = b;
            }
            let in_degree = &g.in_degree[first as usize..];
            slices.par_iter_mut().enumerate().for_each_init(Vec::new, |buf, (i, s)| {
                if two_runs {
                    merge_runs(s, in_degree[i] as usize, buf);
                }
                if sets {
                    // Dedup in place and drop the vertex itself; the tail is left as junk.
                    let me = first + i as VertexId;
                    let mut k = 0;
                    for j in 0..s.len() {
                        let x = s[j];
                        if x != me && (k == 0 || s[k - 1] != x) {
                            s[k] = x;
                            k += 1;
                        }
                    }
                    if k < s.len() {
                        s[k] = u32::MAX; // marks the end of a shortened list for the compaction
                    }
                }
            });
            if sets {
                let mut out = 0;
                for i in 0..offsets.len() - 1 {
                    let (lo, hi) = (offsets[i], offsets[i + 1]);
                    let len = lists[lo..hi].iter().position(|&x| x == u32::MAX).unwrap_or(hi - lo);
                    lists.copy_within(lo..lo + len, out);
                    offsets[i] = out;
                    out += len;
                }
                *offsets.last_mut().unwrap_or(&mut 0) = out;
                lists.truncate(out);
                lists.shrink_to_fit();
            }
        }
        Ok(Adjacency { first, offsets, lists, _held: held })
    }
}

/// Sorts `s`, made of two sorted runs `s[..k]` and `s[k..]`, by merging them through `buf`.
fn merge_runs(s: &mut [VertexId], k: usize, buf: &mut Vec<VertexId>) {
    let (a, b) = s.split_at(k.min(s.len()));
    if a.is_empty() || b.is_empty() || a[a.len() - 1] <= b[0] {
        return;
    }
    buf.clear();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            buf.push(a[i]);
            i += 1;
        } else {
            buf.push(b[j]);
            j += 1;
        }
    }
    buf.extend_from_slice(&a[i..]);
    buf.extend_from_slice(&b[j..]);
    s.copy_from_slice(buf);
}

/// One non-empty block of a group's plan.
struct Piece {
    group: usize,
    grid: usize,
    block: usize,
    sbase: u32,
    dbase: u32,
    first_edge: u64,
    len: u64,
    /// Stored bytes of the block and where they start (packed: not `len`).
    first_byte: u64,
    stored: u64,
}

struct Decoded {
    ext: usize,
    crc: crc32fast::Hasher,
    len: u64,
    pairs: Vec<(VertexId, VertexId)>,
    /// A packed frame that did not decode.
    bad: Option<crate::store::packed::FrameError>,
}

struct DecodeKernel<'a> {
    pieces: &'a [Piece],
    packed: bool,
}

impl BlockKernel for DecodeKernel<'_> {
    type Partial = Decoded;
    fn process(&self, b: &Block<'_>) -> Decoded {
        let e = &self.pieces[b.extent];
        let mut crc = crc32fast::Hasher::new();
        crc.update(b.data);
        let (mut raw, mut bad) = (Vec::new(), None);
        if self.packed {
            // Whole frames of one block: a read never spans two extents' frames.
            for frame in b.data.chunks(crate::store::packed::FRAME_BYTES) {
                if let Err(err) = crate::store::packed::decode_frame(frame, &mut raw) {
                    (bad, raw) = (Some(err), Vec::new());
                    break;
                }
            }
        }
        let data = if self.packed { &raw[..] } else { b.data };
        let pairs = data.chunks_exact(4).map(|x| {
            let (s, d) = decode(x);
            (e.dbase + d, e.sbase + s)
        });
        Decoded { ext: b.extent, crc, len: b.data.len() as u64, pairs: pairs.collect(), bad }
    }
}

impl Graph {
    fn adjacency_grids(&self, which: Neighbours) -> Vec<usize> {
        match (self.meta.directed, which) {
            (false, _) | (true, Neighbours::In) => vec![0],
            (true, Neighbours::Out) => vec![1],
            (true, Neighbours::Both) => vec![0, 1],
        }
    }

    /// Length of `v`'s list before `sets` (entries of its columns).
    fn list_len(&self, which: Neighbours, v: usize) -> usize {
        let (i, o) = (self.in_degree[v] as usize, self.out_degree[v] as usize);
        match (self.meta.directed, which) {
            (false, _) | (true, Neighbours::In) => i,
            (true, Neighbours::Out) => o,
            (true, Neighbours::Both) => i + o,
        }
    }

    fn partition_vertices(&self, parts: &Range<usize>) -> Range<usize> {
        let psize = self.meta.partition_size as usize;
        let n = self.num_vertices();
        (parts.start * psize).min(n)..(parts.end * psize).min(n)
    }

    /// Bytes the lists of partitions `parts` take in memory (before `sets` shrinks them).
    pub fn adjacency_bytes(&self, which: Neighbours, parts: Range<usize>) -> u64 {
        let vs = self.partition_vertices(&parts);
        let entries: u64 = vs.clone().map(|v| self.list_len(which, v) as u64).sum();
        entries * 4 + (vs.len() as u64 + 1) * 16
    }

    /// The largest [`Graph::adjacency_bytes`] of one partition: what
    /// [`Graph::stream_adjacency`] holds at a time.
    pub fn largest_partition_adjacency(&self, which: Neighbours) -> u64 {
        (0..self.meta.partitions as usize)
            .map(|p| self.adjacency_bytes(which, p..p + 1))
            .max()
            .unwrap_or(0)
    }

    /// Cuts the partitions into consecutive groups whose lists each fit the budget's free bytes
    /// less `headroom` (what the caller needs beside one group). A partition too large alone
    /// is a group of its own, which [`Graph::load_adjacency`] then refuses with a budget error.
    pub fn adjacency_windows(&self, which: Neighbours, headroom: u64) -> Vec<Range<usize>> {
        let room = self.budget.available().saturating_sub(headroom);
        let mut out: Vec<Range<usize>> = Vec::new();
        let mut start = 0;
        let mut bytes = 16u64;
        for p in 0..self.meta.partitions as usize {
            let b = self.adjacency_bytes(which, p..p + 1) - 16;
            if p > start && bytes + b > room {
                out.push(start..p);
                start = p;
                bytes = 16;
            }
            bytes += b;
        }
        out.push(start..self.meta.partitions as usize);
        out
    }

    /// The lists of every vertex in partitions `parts`, in memory at once (reserved from the
    /// budget); `sets` makes each list a set (see "Multigraphs").
    pub fn load_adjacency(
        &self,
        which: Neighbours,
        sets: bool,
        parts: Range<usize>,
    ) -> Result<Adjacency, Error> {
        let mut out = None;
        self.adjacency_groups(which, sets, None, std::slice::from_ref(&parts), |a| {
            out = Some(a);
            Ok(())
        })?;
        out.ok_or_else(|| Error::Config("no partition to load".into()))
    }

    /// Calls `f` with each partition's lists in turn (partition order), holding one partition
    /// in memory at a time; `sets` makes each list a set (see "Multigraphs").
    pub fn stream_adjacency<F>(&self, which: Neighbours, sets: bool, mut f: F) -> Result<(), Error>
    where
        F: FnMut(&Adjacency) -> Result<(), Error>,
    {
        let groups: Vec<Range<usize>> =
            (0..self.meta.partitions as usize).map(|p| p..p + 1).collect();
        self.adjacency_groups(which, sets, None, &groups, |a| f(&a))
    }

    /// [`Graph::stream_adjacency`] (without sets) with each neighbour `u` listed as `values[u]`,
    /// in no particular order within a list. The values are looked up while each block is in
    /// cache (a block's sources lie in one partition), not afterwards across the whole array
    /// from every list: CDLP's label gathers, one random read per edge into 4 bytes per vertex
    /// otherwise (scale 24: 35 MB, beyond this machine's L3 share).
    pub fn stream_neighbour_values<F>(
        &self,
        which: Neighbours,
        values: &[VertexId],
        f: F,
    ) -> Result<(), Error>
    where
        F: FnMut(&Adjacency) -> Result<(), Error>,
    {
        self.stream_neighbour_values_in(which, values, 0..self.meta.partitions as usize, f)
    }

    /// [`Graph::stream_neighbour_values`] over the partitions `parts` only (a rank's columns in
    /// a partitioned store, `crate::dist`; the other columns of a part are empty).
    pub(crate) fn stream_neighbour_values_in<F>(
        &self,
        which: Neighbours,
        values: &[VertexId],
        parts: Range<usize>,
        mut f: F,
    ) -> Result<(), Error>
    where
        F: FnMut(&Adjacency) -> Result<(), Error>,
    {
        let groups: Vec<Range<usize>> = parts.map(|p| p..p + 1).collect();
        self.adjacency_groups(which, false, Some(values), &groups, |a| f(&a))
    }

    fn builder(
        &self,
        which: Neighbours,
        parts: &Range<usize>,
        hold: usize,
        mapped: bool,
    ) -> Result<Builder, Error> {
        let vs = self.partition_vertices(parts);
        let held =
            self.budget.reserve("adjacency lists", self.adjacency_bytes(which, parts.clone()))?;
        let mut offsets = Vec::with_capacity(vs.len() + 1);
        offsets.push(0);
        for v in vs.clone() {
            offsets.push(offsets[offsets.len() - 1] + self.list_len(which, v));
        }
        let total = offsets[offsets.len() - 1];
        Ok(Builder {
            first: vs.start as VertexId,
            cursor: offsets[..vs.len()].to_vec(),
            offsets,
            lists: vec![0; total],
            held,
            two_runs: self.adjacency_grids(which).len() > 1,
            mapped,
            runs: Vec::new(),
            pairs: 0,
            hold,
        })
    }

    fn adjacency_groups<F>(
        &self,
        which: Neighbours,
        sets: bool,
        map: Option<&[VertexId]>,
        groups: &[Range<usize>],
        mut f: F,
    ) -> Result<(), Error>
    where
        F: FnMut(Adjacency) -> Result<(), Error>,
    {
        let p = self.meta.partitions as usize;
        let psize = self.meta.partition_size as usize;
        let grids = self.adjacency_grids(which);
        let mut pieces = Vec::new();
        for (group, parts) in groups.iter().enumerate() {
            for &grid in &grids {
                let idx = &self.grids[grid].index;
                for dp in parts.clone() {
                    for sp in 0..p {
                        let block = dp * p + sp;
                        let (lo, hi) = (idx.offsets[block], idx.offsets[block + 1]);
                        if lo < hi {
                            let (sbase, dbase) = ((sp * psize) as u32, (dp * psize) as u32);
                            pieces.push(Piece {
                                group,
                                grid,
                                block,
                                sbase,
                                dbase,
                                first_edge: lo,
                                len: (hi - lo) * EDGE_BYTES,
                                first_byte: idx.bytes[block],
                                stored: idx.block_bytes(block),
                            });
                        }
                    }
                }
            }
        }
        let edges: u64 = pieces.iter().map(|x| x.len / EDGE_BYTES).sum();
        let corrupt = |x: &Piece| block_error(&self.grids[x.grid].edges, x.block, p);
        let by_tag = |tag: usize| corrupt(&pieces[tag]);
        // The runs a builder holds (`Builder`), if the budget lends them beside the largest
        // group's lists and as much again for the caller (a tight budget writes run by run).
        let held_bytes = (HELD_PAIRS * 8) as u64;
        let largest = groups.iter().map(|r| self.adjacency_bytes(which, r.clone())).max();
        let spare = self.budget.available().saturating_sub(largest.unwrap_or(0));
        let lent = (spare >= 2 * held_bytes)
            .then(|| self.budget.reserve("adjacency runs held", held_bytes).ok())
            .flatten();
        let hold = if lent.is_some() { HELD_PAIRS } else { 0 };
        let mut next_group = 0;
        let mut cur: Option<(usize, Builder)> = None;
        // Emits every group before `upto` (the one being built, then any empty ones).
        let mut emit = |upto: usize,
                        cur: &mut Option<(usize, Builder)>,
                        next_group: &mut usize|
         -> Result<(), Error> {
            while *next_group < upto {
                self.check_cancel()?;
                let mut b = match cur.take() {
                    Some((g, b)) if g == *next_group => b,
                    other => {
                        *cur = other;
                        self.builder(which, &groups[*next_group], hold, map.is_some())?
                    }
                };
                b.flush().map_err(by_tag)?;
                f(b.finish(self, sets)?)?;
                *next_group += 1;
            }
            Ok(())
        };
        let mut open = |group: usize,
                        cur: &mut Option<(usize, Builder)>,
                        next_group: &mut usize|
         -> Result<(), Error> {
            if cur.as_ref().map(|c| c.0) != Some(group) {
                emit(group, cur, next_group)?;
                *cur = Some((group, self.builder(which, &groups[group], hold, map.is_some())?));
            }
            Ok(())
        };
        let mut run = None;
        if self.is_in_memory() {
            for (tag, x) in pieces.iter().enumerate() {
                self.check_cancel()?; // per block, as the pipeline checks below
                open(x.group, &mut cur, &mut next_group)?;
                let Some((data, _)) = &self.grids[x.grid].mem else { continue };
                let lo = (x.first_edge * EDGE_BYTES) as usize;
                let b = &mut cur.as_mut().ok_or_else(|| corrupt(x))?.1;
                // Written as it is read: in memory, holding runs (a copy of each block, on this
                // one thread) cost more than it saved (scale-24 CDLP, 2 iterations: 42.8 s
                // against 34.0). The map's lookups still touch one source partition per block.
                for e in data[lo..lo + x.len as usize].chunks_exact(4) {
                    let (s, d) = decode(e);
                    let s = match map {
                        None => x.sbase + s,
                        Some(m) => *m.get((x.sbase + s) as usize).ok_or_else(|| by_tag(tag))?,
                    };
                    if !b.push(x.dbase + d, s) {
                        return Err(corrupt(x));
                    }
                }
            }
        } else if !pieces.is_empty() {
            let mut plan = self.new_plan(self.edge_records());
            for x in &pieces {
                plan.push_extent(&self.grids[x.grid].edges, x.first_byte, x.stored)?;
            }
            let mut failure: Option<Error> = None;
            let mut check: Option<(usize, crc32fast::Hasher, u64)> = None;
            let stats = self.pipeline.run_ordered(
                &plan,
                &DecodeKernel { pieces: &pieces, packed: self.packed() },
                |part: Decoded| {
                    if failure.is_some() {
                        return;
                    }
                    let x = &pieces[part.ext];
                    if let Some(e) = &part.bad {
                        failure = Some(self.frame_failure(x.grid, x.block, e));
                        return;
                    }
                    // Block checksum: the pieces of one block arrive in stream order.
                    let (ext, hasher, done) =
                        check.get_or_insert_with(|| (part.ext, crc32fast::Hasher::new(), 0));
                    if *ext != part.ext {
                        failure = Some(corrupt(&pieces[*ext]));
                        return;
                    }
                    hasher.combine(&part.crc);
                    *done += part.len;
                    if *done == x.stored
                        && let Some((_, h, _)) = check.take()
                        && h.finalize() != self.grids[x.grid].index.crcs[x.block]
                    {
                        failure = Some(corrupt(x));
                        return;
                    }
                    let step = open(x.group, &mut cur, &mut next_group).and_then(|()| {
                        let b = &mut cur.as_mut().ok_or_else(|| corrupt(x))?.1;
                        b.push_run(part.ext, part.pairs, map).map_err(by_tag)
                    });
                    if let Err(e) = step {
                        failure = Some(e);
                    }
                },
            )?;
            if let Some(e) = failure {
                return Err(e);
            }
            if let Some((ext, _, _)) = check {
                return Err(corrupt(&pieces[ext]));
            }
            run = Some(stats);
        }
        emit(groups.len(), &mut cur, &mut next_group)?;
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        st.passes += 1;
        st.blocks_streamed += pieces.len() as u64;
        st.edges_streamed += edges;
        if let Some(r) = run {
            st.run.merge(&r);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! The lists, and the algorithms over them, against naive in-memory versions on random
    //! multigraphs of three partitions (so lists span blocks and windows split).

    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    use rand::{RngCore, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use sluice_io::{Budget, PipelineBuilder};

    use super::Neighbours;
    use crate::algo::{cdlp, lcc, spmv, sssp};
    use crate::import::{Format, ImportOptions, import};
    use crate::{Graph, VertexArray};

    const IDS: u64 = 150_000;

    /// A random weighted multigraph (duplicates and self loops included) over ids `3·k`.
    fn random_edges(seed: u64, m: usize) -> Vec<(u64, u64, f64)> {
        let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..m)
            .map(|i| {
                let s = r.next_u64() % IDS * 3;
                let d = if i % 97 == 0 { s } else { r.next_u64() % IDS.min(s / 3 + 2000) * 3 };
                (s, d, (r.next_u64() % 1000) as f64 / 64.0)
            })
            .chain([(0, 3, 1.0), (0, 3, 2.0), (3, 0, 1.0)])
            .collect()
    }

    fn make_store(dir: &Path, edges: &[(u64, u64, f64)], directed: bool) -> PathBuf {
        let input = dir.join(format!("g{directed}.txt"));
        let text: String = edges.iter().map(|(s, d, w)| format!("{s} {d} {w}\n")).collect();
        std::fs::write(&input, text).unwrap();
        let store = dir.join(format!("g{directed}.grid"));
        let mut opts = ImportOptions::new(Format::Snap);
        opts.directed = Some(directed);
        import(
            &[input],
            &store,
            &opts,
            &PipelineBuilder::new().build().unwrap(),
            &Budget::unlimited(),
        )
        .unwrap();
        store
    }

    fn open(store: &Path, budget: Budget) -> Graph {
        Graph::open(store, PipelineBuilder::new().block_size(1 << 16).build().unwrap(), budget)
            .unwrap()
    }

    /// Naive in- and out-lists by dense id (each stored edge once per direction it is stored in).
    fn naive(
        g: &Graph,
        edges: &[(u64, u64, f64)],
        directed: bool,
    ) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
        let n = g.num_vertices();
        let (mut ins, mut outs) = (vec![Vec::new(); n], vec![Vec::new(); n]);
        for &(s, d, _) in edges {
            let (s, d) = (g.dense_id(s).unwrap(), g.dense_id(d).unwrap());
            outs[s as usize].push(d);
            ins[d as usize].push(s);
            if !directed && s != d {
                outs[d as usize].push(s);
                ins[s as usize].push(d);
            }
        }
        (ins, outs)
    }

    #[test]
    fn lists_match_naive_in_every_mode() {
        let dir = tempfile::tempdir().unwrap();
        let edges = random_edges(7, 150_000);
        for directed in [true, false] {
            let store = make_store(dir.path(), &edges, directed);
            let mut g = open(&store, Budget::unlimited());
            assert!(g.meta().partitions >= 2, "the test needs several partitions");
            let (ins, outs) = naive(&g, &edges, directed);
            for in_memory in [false, true] {
                if in_memory {
                    g.load_edges().unwrap();
                }
                for which in [Neighbours::In, Neighbours::Out, Neighbours::Both] {
                    for sets in [false, true] {
                        let mut seen = 0;
                        g.stream_adjacency(which, sets, |adj| {
                            for v in adj.vertices() {
                                let mut want = match (which, directed) {
                                    (Neighbours::In, _) | (_, false) => ins[v as usize].clone(),
                                    (Neighbours::Out, _) => outs[v as usize].clone(),
                                    (Neighbours::Both, true) => {
                                        [&ins[v as usize][..], &outs[v as usize][..]].concat()
                                    }
                                };
                                want.sort_unstable();
                                if sets {
                                    want.dedup();
                                    want.retain(|&u| u != v);
                                }
                                assert_eq!(
                                    adj.of(v),
                                    &want[..],
                                    "{which:?} sets={sets} v={v} in_memory={in_memory}"
                                );
                                seen += 1;
                            }
                            Ok(())
                        })
                        .unwrap();
                        assert_eq!(seen, g.num_vertices());
                    }
                }
            }
        }
    }

    fn naive_lcc(g: &Graph, ins: &[Vec<u32>], outs: &[Vec<u32>]) -> Vec<f64> {
        let out_sets: Vec<BTreeSet<u32>> = outs
            .iter()
            .enumerate()
            .map(|(v, l)| l.iter().copied().filter(|&u| u as usize != v).collect())
            .collect();
        (0..g.num_vertices())
            .map(|v| {
                let nv: BTreeSet<u32> =
                    ins[v].iter().chain(&outs[v]).copied().filter(|&u| u as usize != v).collect();
                let d = nv.len() as f64;
                let t: usize =
                    nv.iter().map(|&u| out_sets[u as usize].intersection(&nv).count()).sum();
                if nv.len() <= 1 { 0.0 } else { t as f64 / (d * (d - 1.0)) }
            })
            .collect()
    }

    fn naive_cdlp(ins: &[Vec<u32>], outs: &[Vec<u32>], directed: bool, k: u32) -> Vec<u32> {
        let mut l: Vec<u32> = (0..ins.len() as u32).collect();
        for _ in 0..k {
            let prev = l.clone();
            for v in 0..ins.len() {
                let mut hist: BTreeMap<u32, usize> = BTreeMap::new();
                let votes =
                    if directed { [&ins[v][..], &outs[v][..]].concat() } else { ins[v].clone() };
                for u in votes {
                    *hist.entry(prev[u as usize]).or_default() += 1;
                }
                // BTreeMap iterates labels ascending; keep the first of the largest count.
                if let Some(best) =
                    hist.iter().fold(None, |b: Option<(u32, usize)>, (&lab, &c)| match b {
                        Some((_, bc)) if bc >= c => b,
                        _ => Some((lab, c)),
                    })
                {
                    l[v] = best.0;
                }
            }
        }
        l
    }

    fn naive_sssp(g: &Graph, edges: &[(u64, u64, f64)], directed: bool, root: u32) -> Vec<f64> {
        let n = g.num_vertices();
        let mut adj = vec![Vec::new(); n];
        for &(s, d, w) in edges {
            let (s, d) = (g.dense_id(s).unwrap() as usize, g.dense_id(d).unwrap() as usize);
            adj[s].push((d, w));
            if !directed {
                adj[d].push((s, w));
            }
        }
        let mut dist = vec![f64::INFINITY; n];
        let mut heap = std::collections::BinaryHeap::new();
        dist[root as usize] = 0.0;
        heap.push((std::cmp::Reverse(0u64), root as usize));
        while let Some((std::cmp::Reverse(k), v)) = heap.pop() {
            if f64::from_bits(k) > dist[v] {
                continue;
            }
            for &(u, w) in &adj[v] {
                let nd = dist[v] + w;
                if nd < dist[u] {
                    dist[u] = nd;
                    heap.push((std::cmp::Reverse(nd.to_bits()), u));
                }
            }
        }
        dist
    }

    #[test]
    fn algorithms_match_naive_and_lcc_windows_split() {
        let dir = tempfile::tempdir().unwrap();
        let edges = random_edges(11, 120_000);
        for directed in [true, false] {
            let store = make_store(dir.path(), &edges, directed);
            let g = open(&store, Budget::unlimited());
            let (ins, outs) = naive(&g, &edges, directed);
            // LCC under a budget that holds about half the out-lists (at least the largest
            // partition's): several windows.
            let probe = open(&store, Budget::new(1 << 40).unwrap());
            let used = (1u64 << 40) - probe.budget().available();
            let arrays = g.padded_len() as u64 * 12
                + (g.padded_len() / 8 * rayon::current_num_threads()) as u64;
            let headroom = g.largest_partition_adjacency(Neighbours::Both);
            let outs_bytes = g.adjacency_bytes(Neighbours::Out, 0..g.meta().partitions as usize);
            let room = (outs_bytes / 2).max(g.largest_partition_adjacency(Neighbours::Out));
            assert!(room < outs_bytes);
            let tight = open(&store, Budget::new(used + arrays + headroom + room).unwrap());
            {
                let _a = VertexArray::new(&tight, "pairs", 0u64).unwrap();
                let _b = VertexArray::new(&tight, "sizes", 0u32).unwrap();
                let _r3 = tight
                    .budget()
                    .reserve("bitmaps", (g.padded_len() / 8 * rayon::current_num_threads()) as u64);
                assert!(tight.adjacency_windows(Neighbours::Out, headroom).len() >= 2);
            }
            let want = naive_lcc(&g, &ins, &outs);
            for got in [lcc::lcc(&g).unwrap(), lcc::lcc(&tight).unwrap()] {
                for (v, (a, b)) in got.iter().zip(&want).enumerate() {
                    assert!((a - b).abs() <= 1e-12 * b.abs(), "lcc v={v}: {a} vs {b}");
                }
            }
            assert_eq!(cdlp::cdlp(&g, 4).unwrap().labels, naive_cdlp(&ins, &outs, directed, 4));
            let want = naive_sssp(&g, &edges, directed, g.dense_id(0).unwrap());
            assert_eq!(sssp::sssp(&g, 0).unwrap(), want);
            let x: Vec<f64> =
                (0..g.num_vertices()).map(|v| ((v * 7919) % 13) as f64 - 6.0).collect();
            let mut y = vec![0.0; g.num_vertices()];
            for &(s, d, w) in &edges {
                let (s, d) = (g.dense_id(s).unwrap() as usize, g.dense_id(d).unwrap() as usize);
                y[d] += w * x[s];
                if !directed && s != d {
                    y[s] += w * x[d];
                }
            }
            for (a, b) in spmv::spmv(&g, &x).unwrap().iter().zip(&y) {
                assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "spmv {a} vs {b}");
            }
        }
    }
}
