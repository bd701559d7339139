//! The execution engine: vertex state in memory, edges streamed block by block.
//!
//! An algorithm is a short program over [`Graph::stream_edges`] and [`Graph::stream_vertices`]
//! (after Ligra, Shun & Blelloch, PPoPP 2013, and GridGraph, Zhu et al., ATC 2015).
//!
//! # The edge pass (gather / apply, pulled into destinations)
//! For every stored edge `s → d` whose source partition has an active vertex (selective
//! scheduling), the kernel's `gather(s, prev, w)` yields a value, handed to `apply(d, value,
//! &mut state[d])`, which returns whether `d` joins the next active set. `cond(d, &state[d])`
//! may skip edges into `d`.
//!
//! The engine holds what the kernels would otherwise carry by hand:
//! * [`EdgeKernel::FRONTIER`]: `gather` runs only for active sources (an edge map over a
//!   frontier); other kernels pay no per-edge test.
//! * [`EdgeKernel::SYNC`]: before the pass the engine copies the state into the
//!   [`VertexArray`]'s previous-pass buffer and hands it to `gather` as `prev` (the double
//!   buffer of synchronous algorithms).
//! * Weights ([`EdgeKernel::WEIGHTED`]) stream beside the edges: the pass's plan reads the
//!   weight file's matching extents through the same pipeline.
//!
//! # Contract
//! 1. **One writer per destination partition.** `apply` on `state[d]` runs on the one thread
//!    that owns `d`'s partition in this pass: no atomics, no locks.
//! 2. **Deterministic.** Into each `d`, values are applied edge by edge in stream order:
//!    grid by grid, source partition by source partition, edges by `(d, s)` inside a block.
//!    The result of a pass does not depend on thread timing, and both modes run the same loop
//!    (`edge_loop`) in the same order, so they agree bit for bit even where `apply` is a
//!    floating-point sum (not associative).
//! 3. `gather` must read only state that no `apply` of the same pass writes (the previous
//!    superstep's values): that is what makes rule 2 hold.
//! 4. `apply` is called once per edge into `d` that `cond` lets through; it must fold the
//!    value into the state.
//! 5. Every block read is checked against its CRC-32; a mismatch is an error, and the pass's
//!    partial results must then be discarded.
//! 6. Vertex arrays are [`Graph::padded_len`] long ((P − 1) × partition size + 65536), so a
//!    decoded id always indexes in bounds, even in a corrupt block (which rule 5 then reports);
//!    a kernel indexes the arrays it reads through [`VertexArray::padded`] or `prev`.
//!
//! # Modes
//! *Streaming* (default): every pass reads the selected blocks through the `sluice-io` block
//! pipeline; workers check and decode what they read, and the applier that owns a column's
//! slice of the state runs the edge loop over the column's edges in stream order (columns kept
//! in the block cache run on the rayon pool, one task per column). *In memory*
//! ([`Graph::load_edges`]): the blocks are held in RAM and each destination partition is a
//! rayon task that runs the same loop on its slice of the state — the fast path for graphs
//! that fit.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use sluice_io::{Budget, Pipeline, Reservation, RunStats};

use crate::Error;
use crate::store::{self, EDGE_BYTES, Encoding, GridIndex, Meta};

/// Per-partition neighbour lists (CDLP, LCC), read from the grids as passes read them.
pub(crate) mod adjacency;
/// The block cache: columns a streaming pass read and checked, kept for the later passes.
mod cache;
/// The streaming mode: passes through the `sluice-io` block pipeline.
mod disk;
/// The one edge loop of both modes: a block piece applied to its partition's state slice.
mod edge_loop;
/// The in-memory mode: passes over blocks held in RAM.
mod memory;
/// [`VertexArray`]: padded per-vertex state held against the budget.
mod vertex_array;
/// [`VertexSet`]: active sets.
mod vertex_set;

/// Per-vertex triangle counts (LCC's d and t): oriented lists in memory, windows out of core.
mod triangles;

pub use vertex_array::VertexArray;
pub use vertex_set::VertexSet;

/// A dense vertex id (`0..n`, in original id order).
pub type VertexId = u32;

/// What one edge pass does; see the module docs. Implement it on a small struct that borrows
/// the arrays `gather` reads.
pub trait EdgeKernel: Sync {
    /// What an edge carries to its destination.
    type Value: Copy + Send;
    /// The per-destination state `apply` writes.
    type State: Clone + Send + Sync;
    /// Whether `gather` needs edge weights (1.0 is passed otherwise).
    const WEIGHTED: bool = false;
    /// Whether `gather` runs only for sources in the pass's active set (otherwise for every
    /// edge of a streamed block).
    const FRONTIER: bool = false;
    /// Whether `gather` reads the state as it was before the pass (`prev`, padded); otherwise
    /// `prev` is empty.
    const SYNC: bool = false;
    /// Whether edges into `d` are worth looking at in this pass.
    #[inline]
    fn cond(&self, _d: VertexId, _state: &Self::State) -> bool {
        true
    }
    /// The value edge `s → d` (weight `w`) carries, if any. Reads only what no `apply` of the
    /// pass writes (rule 3): `prev[s]`, or arrays the kernel borrows.
    fn gather(&self, s: VertexId, prev: &[Self::State], w: f64) -> Option<Self::Value>;
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
    /// Bytes each streaming edge pass read from disk (edges and weights), in pass order.
    pub bytes_per_pass: Vec<u64>,
    /// Bytes the streaming passes took from the block cache instead of the disk.
    pub cache_bytes: u64,
}

/// What the block cache holds ([`Graph::cache_report`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct CacheReport {
    /// Whether streaming passes keep and use columns.
    pub enabled: bool,
    /// Bytes kept (edges and weights), held against the budget.
    pub resident_bytes: u64,
    /// Bytes of the store's edge and weight files.
    pub store_bytes: u64,
}

#[derive(Debug)]
struct GridFiles {
    edges: PathBuf,
    weights: Option<PathBuf>,
    /// `edges` and `weights` as opened once by [`Graph::open`] (`store::StoreDir`).
    held: Vec<(PathBuf, Arc<File>)>,
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
    cache: Mutex<cache::BlockCache>,
    /// Columns one task applies together; 0: chosen per pass (`memory::column_group`).
    column_group: std::sync::atomic::AtomicUsize,
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
        // One version of the store from here to the end (`store::StoreDir`, issue 17 defect 3).
        let sd = store::StoreDir::open(dir)?;
        let meta = sd.read_meta()?;
        let n = meta.num_vertices as usize;
        let p = meta.partitions;
        let mut reservations = vec![budget.reserve("vertex ids and degrees", n as u64 * 16)?];
        let ids = store::u64s(&sd.read_checked(&meta, "ids.bin")?);
        let out_degree = store::u32s(&sd.read_checked(&meta, "out_degree.bin")?);
        let in_degree = store::u32s(&sd.read_checked(&meta, "in_degree.bin")?);
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
            // A part of a partitioned store (`crate::partition`) holds different numbers of
            // forward and reverse edges: each grid's count is its listed file length.
            let listed = meta.files.get(&format!("{name}.edges")).map(|s| s.len);
            let grid_edges = match meta.encoding {
                Encoding::Raw => Some(listed.map_or(meta.num_edges, |len| len / EDGE_BYTES)),
                Encoding::Packed => meta.part.is_none().then_some(meta.num_edges),
            };
            let index = GridIndex::decode(
                &dir.join(&iname),
                &sd.read_checked(&meta, &iname)?,
                (p, grid_edges),
                meta.weighted,
                meta.encoding,
            )?;
            let grid_edges = index.offsets[(p * p) as usize];
            let edges = dir.join(format!("{name}.edges"));
            let want = index.bytes[(p * p) as usize];
            let ef = Arc::new(sd.open_file(&format!("{name}.edges"))?);
            let len = ef.metadata().map_err(|e| Error::io(&edges, "cannot open", e))?.len();
            let mut held = vec![(edges.clone(), ef)];
            if len != want || listed != Some(want) {
                return Err(Error::corrupt(&edges, format!("{len} bytes, expected {want}")));
            }
            let weights = meta.weighted.then(|| dir.join(format!("{name}.weights")));
            if let Some(w) = &weights {
                let wf = Arc::new(sd.open_file(&format!("{name}.weights"))?);
                let len = wf.metadata().map_err(|e| Error::io(w, "cannot open", e))?.len();
                held.push((w.clone(), wf));
                if len != grid_edges * 8 {
                    return Err(Error::corrupt(
                        w,
                        format!("{len} bytes, expected {}", grid_edges * 8),
                    ));
                }
            }
            grids.push(GridFiles { edges, weights, held, index, mem: None });
        }
        let indexes: Vec<&GridIndex> = grids.iter().map(|g| &g.index).collect();
        store::invariants::check_open(dir, &meta, &ids, (&out_degree, &in_degree), &indexes)?;
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
            cache: Mutex::new(cache::BlockCache::new()),
            column_group: Default::default(),
        })
    }

    /// A plan that reads the store files opened by [`Graph::open`], never their paths again.
    fn new_plan(&self, layout: sluice_io::RecordLayout) -> sluice_io::Plan {
        let mut plan = sluice_io::Plan::new(layout);
        for (path, file) in self.grids.iter().flat_map(|g| &g.held) {
            plan.hold(path.clone(), Arc::clone(file));
        }
        plan
    }

    /// The whole of store file `path` as opened by [`Graph::open`].
    fn read_held(&self, path: &Path) -> Result<Vec<u8>, Error> {
        use std::os::unix::fs::FileExt;
        let f = self.held(path)?;
        let len = f.metadata().map_err(|e| Error::io(path, "cannot read", e))?.len();
        let mut bytes = vec![0u8; len as usize];
        f.read_exact_at(&mut bytes, 0).map_err(|e| Error::io(path, "cannot read", e))?;
        Ok(bytes)
    }

    /// The descriptor held for the store file at `path` (issue 17 defect 3).
    fn held(&self, path: &Path) -> Result<&std::fs::File, Error> {
        let held = self.grids.iter().flat_map(|g| &g.held).find(|(p, _)| p == path);
        held.map(|(_, f)| f.as_ref())
            .ok_or_else(|| Error::corrupt(path, "not a file of this store"))
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
    /// Whether the edges are held in memory.
    pub fn is_in_memory(&self) -> bool {
        self.grids.iter().all(|g| g.mem.is_some())
    }

    /// Bytes of edge data (ids only, as stored) one full pass over `dir` reads.
    pub fn pass_bytes(&self, dir: Direction) -> u64 {
        self.grid_ids(dir)
            .iter()
            .map(|&g| self.grids[g].index.bytes.last().copied().unwrap_or(0))
            .sum()
    }

    /// Whether the blocks are packed (`store` contract rule 6): passes decode them.
    fn packed(&self) -> bool {
        self.meta.encoding == Encoding::Packed
    }

    /// The record layout of a pass over the edge files: whole edges, or whole frames.
    fn edge_records(&self) -> sluice_io::RecordLayout {
        let n = if self.packed() { store::packed::FRAME_BYTES } else { EDGE_BYTES as usize };
        sluice_io::RecordLayout::Fixed(
            std::num::NonZeroUsize::new(n).unwrap_or(std::num::NonZeroUsize::MIN),
        )
    }

    /// Turns the block cache on (the default) or off; off drops what it holds. The cache
    /// serves streaming [`Graph::stream_edges`] passes only (module `cache`).
    pub fn set_cache(&self, enabled: bool) {
        let mut c = self.cache();
        c.enabled = enabled;
        if !enabled {
            c.clear();
        }
    }

    /// Runs `f` with the block cache serving what it holds but keeping nothing new (`cache`
    /// rule 5): for passes whose reads no later pass needs.
    pub fn without_cache_fills<T>(&self, f: impl FnOnce() -> T) -> T {
        let was = std::mem::replace(&mut self.cache().filling, false);
        let out = f();
        self.cache().filling = was;
        out
    }

    /// Sets how many columns (destination partitions) one task applies together, source
    /// partition by source partition, in memory and from the block cache; 0 (the default)
    /// chooses per pass. Results do not depend on it (rule 2); speed does (`memory`).
    pub fn set_column_group(&self, columns: usize) {
        self.column_group.store(columns, std::sync::atomic::Ordering::Relaxed);
    }

    /// What the block cache holds now.
    pub fn cache_report(&self) -> CacheReport {
        let store_bytes = self.grids.iter().map(|g| {
            let e = g.index.offsets.last().copied().unwrap_or(0);
            g.index.bytes.last().copied().unwrap_or(0) + if g.weights.is_some() { e * 8 } else { 0 }
        });
        let c = self.cache();
        CacheReport {
            enabled: c.enabled,
            resident_bytes: c.resident(),
            store_bytes: store_bytes.sum(),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, cache::BlockCache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cache_resident(&self) -> u64 {
        self.cache().resident()
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

    /// [`Graph::stream_vertices`] summing the per-vertex results (in vertex order).
    pub fn sum_vertices<S, F>(&self, state: &mut [S], f: F) -> f64
    where
        S: Send,
        F: Fn(VertexId, &mut S) -> f64 + Sync,
    {
        self.stream_vertices(state, 0.0, f, |a, b| a + b)
    }

    /// One edge pass (see the module docs): every block whose source partition has a vertex
    /// in `active` is streamed (with [`EdgeKernel::FRONTIER`], only edges out of `active`
    /// reach `gather`); returns the vertices for which `apply` returned true.
    pub fn stream_edges<K: EdgeKernel>(
        &self,
        kernel: &K,
        active: &VertexSet,
        dir: Direction,
        state: &mut VertexArray<K::State>,
    ) -> Result<VertexSet, Error> {
        let (prev, state) = match K::SYNC {
            true => state.begin_padded()?,
            false => (&[][..], state.padded_mut()),
        };
        assert_eq!(state.len(), self.padded_len(), "state must be padded_len() long (rule 6)");
        let pass = Pass { kernel, active, grids: self.grid_ids(dir), prev };
        if self.is_in_memory() {
            self.stream_in_memory(&pass, state)
        } else {
            self.stream_from_disk(&pass, state)
        }
    }
}

/// What one edge pass reads: the kernel, the active set, the grids, the previous state.
struct Pass<'a, K: EdgeKernel> {
    kernel: &'a K,
    active: &'a VertexSet,
    grids: Vec<usize>,
    prev: &'a [K::State],
}

/// `gather` of edge `s → d` behind the frontier filter. The hot loops take the kernel, the
/// active set and `prev` as separate reference parameters, not inside a [`Pass`]: a reference
/// parameter is known not to alias the state being written, so the kernel's arrays stay in
/// registers across the loop (reached through a `Pass`, they were reloaded after every write:
/// in-memory PageRank ran 15-20 % slower).
#[inline(always)]
fn gather_edge<K: EdgeKernel>(
    k: &K,
    active: &VertexSet,
    prev: &[K::State],
    s: VertexId,
    w: f64,
) -> Option<K::Value> {
    if K::FRONTIER && !active.contains(s) {
        return None;
    }
    k.gather(s, prev, w)
}

fn block_error(path: &Path, b: usize, p: usize) -> Error {
    Error::corrupt(path, format!("block ({}, {}) fails its checksum", b % p, b / p))
}

/// A packed block that does not decode (its checksum matched: a malformed encoding).
fn frame_error(path: &Path, b: usize, p: usize, e: &store::packed::FrameError) -> Error {
    Error::corrupt(path, format!("block ({}, {}): {e}", b % p, b / p))
}

/// Decodes one stored edge: (partition-relative s, partition-relative d).
#[inline(always)]
fn decode(e: &[u8]) -> (u32, u32) {
    let x = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
    (x & 0xffff, x >> 16)
}
