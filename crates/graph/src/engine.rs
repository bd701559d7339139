//! The execution engine: vertex state in memory, edges streamed block by block.
//!
//! An algorithm is a short program over [`Graph::stream_edges`] and [`Graph::stream_vertices`]
//! (after Ligra, Shun & Blelloch, PPoPP 2013, and GridGraph, Zhu et al., ATC 2015).
//!
//! # The edge pass (gather / combine / apply, pulled into destinations)
//! For every stored edge `s → d` whose source partition has an active vertex (selective
//! scheduling), the kernel's `gather(s, w)` yields a value; values into the same `d` are
//! merged with `combine` and handed to `apply(d, value, &mut state[d])`, which returns whether
//! `d` joins the next active set. `cond(d, &state[d])` may skip edges into `d`.
//!
//! # Contract
//! 1. **One writer per destination partition.** `apply` on `state[d]` runs on the one thread
//!    that owns `d`'s partition in this pass: no atomics, no locks.
//! 2. **Deterministic.** Into each `d`, values are combined and applied in stream order:
//!    column by column, source partition by source partition, edges by `(d, s)` inside a
//!    block. The result of a pass does not depend on thread timing.
//! 3. `gather` must read only state that no `apply` of the same pass writes (the previous
//!    superstep's values): that is what makes rule 2 hold.
//! 4. `apply` may be called several times for one `d` in a pass (once per block, or per piece
//!    of a block, holding edges into `d`); it must fold the value into the state.
//! 5. Every block read is checked against its CRC-32; a mismatch is an error, and the pass's
//!    partial results must then be discarded.
//! 6. Vertex arrays are [`Graph::padded_len`] long ((P − 1) × partition size + 65536), so a
//!    decoded id always indexes in bounds, even in a corrupt block (which rule 5 then reports).
//!
//! # Modes
//! *Streaming* (default): every pass reads the selected blocks through the `sluice-io` block
//! pipeline; workers decode blocks into per-destination partial results, which the calling
//! thread applies in stream order. *In memory* ([`Graph::load_edges`]): the blocks are held in
//! RAM and each destination partition is a rayon task that applies directly to its slice of
//! the state — the fast path for graphs that fit.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;
use sluice_io::{Block, BlockKernel, Budget, Pipeline, Plan, RecordLayout, Reservation, RunStats};

use crate::Error;
use crate::store::{self, EDGE_BYTES, GridIndex, Meta};

/// Per-partition neighbour lists (CDLP, LCC); a child module so it reads the grids as passes do.
#[path = "adjacency.rs"]
pub(crate) mod adjacency;
mod triangles;

/// A dense vertex id (`0..n`, in original id order).
pub type VertexId = u32;

/// What one edge pass does; see the module docs. Implement it on a small struct that borrows
/// the previous superstep's arrays.
pub trait EdgeKernel: Sync {
    /// What an edge carries to its destination.
    type Value: Copy + Send;
    /// The per-destination state `apply` writes.
    type State: Send;
    /// Whether `gather` needs edge weights (1.0 is passed otherwise).
    const WEIGHTED: bool = false;
    /// Whether edges into `d` are worth looking at in this pass.
    #[inline]
    fn cond(&self, _d: VertexId, _state: &Self::State) -> bool {
        true
    }
    /// The value edge `s → d` (weight `w`) carries, if any. Reads only the previous superstep.
    fn gather(&self, s: VertexId, w: f64) -> Option<Self::Value>;
    /// Merges two values bound for the same destination.
    fn combine(&self, a: Self::Value, b: Self::Value) -> Self::Value;
    /// Folds `v` into `d`'s state; `true` puts `d` in the next active set.
    fn apply(&self, d: VertexId, v: Self::Value, state: &mut Self::State) -> bool;
}

/// Which stored edges a pass follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Every edge `s → d`: values flow along edge direction (into `d` from its in-neighbours).
    Out,
    /// Every edge reversed: values flow against edge direction (into `s` from its
    /// out-neighbours).
    In,
    /// Both (direction ignored). For undirected graphs all three are the same pass.
    Both,
}

/// A set of vertices (a bitmap over the padded vertex range) with per-partition counts.
#[derive(Debug, Clone)]
pub struct VertexSet {
    bits: Vec<u64>,
    part_counts: Vec<u64>,
    psize: u64,
}

impl VertexSet {
    fn empty_like(g: &Graph) -> VertexSet {
        VertexSet {
            bits: vec![0; g.padded_len() / 64],
            part_counts: vec![0; g.meta.partitions as usize],
            psize: g.meta.partition_size,
        }
    }
    /// No vertex.
    pub fn none(g: &Graph) -> VertexSet {
        VertexSet::empty_like(g)
    }
    /// Every vertex of `g`.
    pub fn all(g: &Graph) -> VertexSet {
        let mut s = VertexSet::empty_like(g);
        for v in 0..g.num_vertices() as u64 {
            s.bits[(v / 64) as usize] |= 1 << (v % 64);
        }
        for p in 0..g.meta.partitions {
            s.part_counts[p as usize] = g.meta.partition_len(p);
        }
        s
    }
    /// Only `v`.
    pub fn single(g: &Graph, v: VertexId) -> VertexSet {
        let mut s = VertexSet::empty_like(g);
        s.insert(v);
        s
    }
    /// Adds `v`; returns true if and only if it was not there.
    pub fn insert(&mut self, v: VertexId) -> bool {
        let (w, b) = ((v / 64) as usize, v % 64);
        let fresh = self.bits[w] & (1 << b) == 0;
        if fresh {
            self.bits[w] |= 1 << b;
            self.part_counts[(v as u64 / self.psize) as usize] += 1;
        }
        fresh
    }
    /// Returns true if and only if `v` is in the set.
    #[inline]
    pub fn contains(&self, v: VertexId) -> bool {
        self.bits.get((v / 64) as usize).is_some_and(|w| w & (1 << (v % 64)) != 0)
    }
    /// Returns true if and only if the set has no vertex.
    pub fn is_empty(&self) -> bool {
        self.part_counts.iter().all(|&c| c == 0)
    }
    /// Number of vertices.
    pub fn len(&self) -> u64 {
        self.part_counts.iter().sum()
    }
    /// Returns true if and only if partition `p` has a vertex in the set.
    pub fn has_partition(&self, p: usize) -> bool {
        self.part_counts[p] > 0
    }
}

/// Figures of the passes run on a graph so far.
#[derive(Debug, Clone, Default)]
pub struct PassStats {
    /// Edge passes.
    pub passes: u64,
    /// Blocks skipped by selective scheduling.
    pub blocks_skipped: u64,
    /// Blocks streamed.
    pub blocks_streamed: u64,
    /// Edges streamed.
    pub edges_streamed: u64,
    /// Pipeline figures summed over the passes (bytes, seconds, busy times).
    pub run: RunStats,
}

#[derive(Debug)]
struct GridFiles {
    edges: PathBuf,
    weights: Option<PathBuf>,
    index: GridIndex,
    mem: Option<(Vec<u8>, Option<Vec<f64>>)>,
}

/// An open grid store with its vertex arrays in memory.
#[derive(Debug)]
pub struct Graph {
    dir: PathBuf,
    meta: Meta,
    ids: Vec<u64>,
    out_degree: Vec<u32>,
    in_degree: Vec<u32>,
    grids: Vec<GridFiles>,
    pipeline: Pipeline,
    budget: Budget,
    reservations: Vec<Reservation>,
    stats: Mutex<PassStats>,
}

impl Graph {
    /// Opens the store at `dir`: checks `meta.json`, reads the id map, the degree arrays and
    /// the grid indexes (all checksummed), and reserves their memory from `budget`.
    pub fn open(dir: &Path, pipeline: Pipeline, budget: Budget) -> Result<Graph, Error> {
        if !dir.join("meta.json").exists() {
            return Err(Error::Input {
                path: dir.to_path_buf(),
                msg: "not a grid store (no meta.json); create one with `sluice graph import`"
                    .into(),
            });
        }
        let meta = store::read_meta(dir)?;
        let n = meta.num_vertices as usize;
        let p = meta.partitions;
        let mut reservations = vec![budget.reserve("vertex ids and degrees", n as u64 * 16)?];
        let ids = store::u64s(&store::read_checked(dir, &meta, "ids.bin")?);
        let out_degree = store::u32s(&store::read_checked(dir, &meta, "out_degree.bin")?);
        let in_degree = store::u32s(&store::read_checked(dir, &meta, "in_degree.bin")?);
        if ids.len() != n || out_degree.len() != n || in_degree.len() != n {
            return Err(Error::corrupt(dir, "vertex arrays do not have |V| entries"));
        }
        if ids.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::corrupt(dir.join("ids.bin"), "ids are not strictly increasing"));
        }
        let mut grids = Vec::new();
        let names: &[&str] = if meta.directed { &["fwd", "rev"] } else { &["fwd"] };
        reservations.push(budget.reserve("grid indexes", (p * p * 12 + 8) * names.len() as u64)?);
        for name in names {
            let iname = format!("{name}.index");
            let index = GridIndex::from_bytes(
                &dir.join(&iname),
                &store::read_checked(dir, &meta, &iname)?,
                p,
                meta.num_edges,
            )?;
            let edges = dir.join(format!("{name}.edges"));
            let want = meta.num_edges * EDGE_BYTES;
            let len =
                std::fs::metadata(&edges).map_err(|e| Error::io(&edges, "cannot open", e))?.len();
            if len != want || meta.files.get(&format!("{name}.edges")).map(|s| s.len) != Some(want)
            {
                return Err(Error::corrupt(&edges, format!("{len} bytes, expected {want}")));
            }
            let weights = meta.weighted.then(|| dir.join(format!("{name}.weights")));
            if let Some(w) = &weights {
                let len = std::fs::metadata(w).map_err(|e| Error::io(w, "cannot open", e))?.len();
                if len != meta.num_edges * 8 {
                    return Err(Error::corrupt(
                        w,
                        format!("{len} bytes, expected {}", meta.num_edges * 8),
                    ));
                }
            }
            grids.push(GridFiles { edges, weights, index, mem: None });
        }
        Ok(Graph {
            dir: dir.to_path_buf(),
            meta,
            ids,
            out_degree,
            in_degree,
            grids,
            pipeline,
            budget,
            reservations,
            stats: Mutex::new(PassStats::default()),
        })
    }

    /// The store's metadata.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }
    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// |V|.
    pub fn num_vertices(&self) -> usize {
        self.meta.num_vertices as usize
    }
    /// Length of vertex arrays (contract rule 6).
    pub fn padded_len(&self) -> usize {
        ((self.meta.partitions - 1) * self.meta.partition_size + store::MAX_PARTITION_SIZE) as usize
    }
    /// Whether the graph is directed.
    pub fn is_directed(&self) -> bool {
        self.meta.directed
    }
    /// Out-degree of each vertex (the degree, for undirected graphs), over the stored edges.
    pub fn out_degree(&self) -> &[u32] {
        &self.out_degree
    }
    /// In-degree of each vertex.
    pub fn in_degree(&self) -> &[u32] {
        &self.in_degree
    }
    /// Original id of each dense id.
    pub fn original_ids(&self) -> &[u64] {
        &self.ids
    }
    /// The dense id of original id `id`.
    pub fn dense_id(&self, id: u64) -> Result<VertexId, Error> {
        self.ids.binary_search(&id).map(|i| i as VertexId).map_err(|_| Error::NoSuchVertex { id })
    }
    /// The memory budget.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }
    /// A vertex array of [`Graph::padded_len`] copies of `init`, reserved from the budget.
    pub fn vertex_array<T: Clone>(
        &self,
        what: &str,
        init: T,
    ) -> Result<(Vec<T>, Reservation), Error> {
        let n = self.padded_len();
        let r = self.budget.reserve(what, (n * std::mem::size_of::<T>()) as u64)?;
        Ok((vec![init; n], r))
    }

    /// Whether the edges are held in memory.
    pub fn is_in_memory(&self) -> bool {
        self.grids.iter().all(|g| g.mem.is_some())
    }

    /// Bytes of edge data (ids only) one full pass over `dir` reads.
    pub fn pass_bytes(&self, dir: Direction) -> u64 {
        self.grid_ids(dir).len() as u64 * self.meta.num_edges * EDGE_BYTES
    }

    /// Loads every block into memory (checking each block's CRC-32), within the budget; later
    /// passes run from memory (see "Modes").
    pub fn load_edges(&mut self) -> Result<(), Error> {
        let p = self.meta.partitions as usize;
        for gi in 0..self.grids.len() {
            let g = &self.grids[gi];
            let mut bytes = self.meta.num_edges * EDGE_BYTES;
            if g.weights.is_some() {
                bytes += self.meta.num_edges * 8;
            }
            self.reservations.push(self.budget.reserve("edges in memory", bytes)?);
            let data =
                std::fs::read(&g.edges).map_err(|e| Error::io(&g.edges, "cannot read", e))?;
            let bad = (0..p * p).into_par_iter().find_first(|&b| {
                let (lo, hi) =
                    (g.index.offsets[b] * EDGE_BYTES, g.index.offsets[b + 1] * EDGE_BYTES);
                data.get(lo as usize..hi as usize)
                    .is_none_or(|d| crc32fast::hash(d) != g.index.crcs[b])
            });
            if let Some(b) = bad {
                return Err(block_error(&g.edges, b, p));
            }
            let weights = match &g.weights {
                Some(w) => {
                    let raw = std::fs::read(w).map_err(|e| Error::io(w, "cannot read", e))?;
                    Some(
                        raw.chunks_exact(8)
                            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                            .collect(),
                    )
                }
                None => None,
            };
            self.grids[gi].mem = Some((data, weights));
        }
        Ok(())
    }

    /// Figures of the passes so far (and resets them).
    pub fn take_stats(&self) -> PassStats {
        std::mem::take(&mut *self.stats.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn grid_ids(&self, dir: Direction) -> Vec<usize> {
        match (self.meta.directed, dir) {
            (false, _) | (true, Direction::Out) => vec![0],
            (true, Direction::In) => vec![1],
            (true, Direction::Both) => vec![0, 1],
        }
    }

    /// Applies `f` to every vertex's state, in parallel by partition; returns the per-vertex
    /// results folded with `fold` in vertex order (deterministic).
    pub fn stream_vertices<S, R, F, G>(&self, state: &mut [S], identity: R, f: F, fold: G) -> R
    where
        S: Send,
        R: Send + Sync + Copy,
        F: Fn(VertexId, &mut S) -> R + Sync,
        G: Fn(R, R) -> R + Sync,
    {
        let n = self.num_vertices();
        let psize = self.meta.partition_size as usize;
        let parts: Vec<R> = state[..n]
            .par_chunks_mut(psize)
            .enumerate()
            .map(|(p, chunk)| {
                let base = p * psize;
                chunk
                    .iter_mut()
                    .enumerate()
                    .fold(identity, |acc, (i, s)| fold(acc, f((base + i) as VertexId, s)))
            })
            .collect();
        parts.into_iter().fold(identity, &fold)
    }

    /// One edge pass (see the module docs): every block whose source partition has a vertex
    /// in `active` is streamed; returns the vertices for which `apply` returned true.
    pub fn stream_edges<K: EdgeKernel>(
        &self,
        kernel: &K,
        active: &VertexSet,
        dir: Direction,
        state: &mut [K::State],
    ) -> Result<VertexSet, Error> {
        assert_eq!(state.len(), self.padded_len(), "state must be padded_len() long (rule 6)");
        let grids = self.grid_ids(dir);
        if self.is_in_memory() {
            self.stream_in_memory(kernel, active, &grids, state)
        } else {
            self.stream_from_disk(kernel, active, &grids, state)
        }
    }

    fn stream_in_memory<K: EdgeKernel>(
        &self,
        kernel: &K,
        active: &VertexSet,
        grids: &[usize],
        state: &mut [K::State],
    ) -> Result<VertexSet, Error> {
        let p = self.meta.partitions as usize;
        let psize = self.meta.partition_size as usize;
        let mut next = VertexSet::empty_like(self);
        let counts: Vec<(u64, u64, u64)> = state[..p * psize]
            .par_chunks_mut(psize)
            .zip(next.bits[..p * psize / 64].par_chunks_mut(psize / 64))
            .enumerate()
            .map(|(dp, (slice, bits))| {
                let (mut changed, mut streamed, mut edges) = (0u64, 0u64, 0u64);
                for &gi in grids {
                    let g = &self.grids[gi];
                    let Some((data, weights)) = &g.mem else { continue };
                    for sp in 0..p {
                        let b = dp * p + sp;
                        let (lo, hi) =
                            (g.index.offsets[b] as usize, g.index.offsets[b + 1] as usize);
                        if lo == hi || !active.has_partition(sp) {
                            continue;
                        }
                        streamed += 1;
                        edges += (hi - lo) as u64;
                        let w = weights.as_ref().filter(|_| K::WEIGHTED).map(|w| &w[lo..hi]);
                        changed += block_into_state(
                            kernel,
                            (sp * psize) as u32,
                            (dp * psize) as u32,
                            &data[lo * 4..hi * 4],
                            w,
                            slice,
                            bits,
                        );
                    }
                }
                (changed, streamed, edges)
            })
            .collect();
        for (dp, c) in counts.iter().enumerate() {
            next.part_counts[dp] = c.0;
        }
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        st.passes += 1;
        let streamed: u64 = counts.iter().map(|c| c.1).sum();
        st.blocks_streamed += streamed;
        st.blocks_skipped += (p * p * grids.len()) as u64 - streamed;
        st.edges_streamed += counts.iter().map(|c| c.2).sum::<u64>();
        Ok(next)
    }

    fn stream_from_disk<K: EdgeKernel>(
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

fn block_error(path: &Path, b: usize, p: usize) -> Error {
    Error::corrupt(path, format!("block ({}, {}) fails its checksum", b % p, b / p))
}

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

/// Decodes one stored edge: (partition-relative s, partition-relative d).
#[inline(always)]
fn decode(e: &[u8]) -> (u32, u32) {
    let x = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
    (x & 0xffff, x >> 16)
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

/// The hot loop of the in-memory mode: one block applied edge by edge to its destination
/// partition's state slice (one writer per partition). No branch depends on where a run of
/// equal destinations ends, so the random reads of source state overlap (memory-level
/// parallelism); for PageRank this is `sum[d] += contrib[s]`. Returns the number of vertices
/// newly set in `bits`.
#[inline]
fn block_into_state<K: EdgeKernel>(
    k: &K,
    sbase: u32,
    dbase: u32,
    data: &[u8],
    weights: Option<&[f64]>,
    state: &mut [K::State],
    bits: &mut [u64],
) -> u64 {
    let mut changed = 0u64;
    let mut edge = |i: usize, s: u32, d: u32, w: f64| {
        let _ = i;
        let st = &mut state[d as usize];
        if !k.cond(dbase + d, st) {
            return;
        }
        if let Some(v) = k.gather(sbase + s, w) {
            if k.apply(dbase + d, v, st) {
                let (wi, b) = ((d / 64) as usize, d % 64);
                if bits[wi] & (1 << b) == 0 {
                    bits[wi] |= 1 << b;
                    changed += 1;
                }
            }
        }
    };
    match weights {
        None => {
            for (i, e) in data.chunks_exact(4).enumerate() {
                let (s, d) = decode(e);
                edge(i, s, d, 1.0);
            }
        }
        Some(w) => {
            for (i, (e, &w)) in data.chunks_exact(4).zip(w).enumerate() {
                let (s, d) = decode(e);
                edge(i, s, d, w);
            }
        }
    }
    changed
}
