//! Distributed graph analytics over a partitioned store ([`crate::partition`]): each BSP
//! process (an MPI rank under `mpirun`, a thread otherwise) opens its own part and owns the
//! vertices of its destination partitions (`notes/issue12.md`, item 3).
//!
//! # One superstep per iteration
//! Every rank holds every vertex's value (the arrays the single-process algorithm holds). An
//! iteration is one BSP superstep:
//! 1. a local streaming pass over the rank's part through the engine ([`Graph::stream_edges`]
//!    or the adjacency stream); the part holds only the blocks into the rank's partitions, so
//!    the pass computes exactly the new values of the owned vertices, reading the replicated
//!    previous values of every source;
//! 2. puts of the updated values to the ranks that need them: for PageRank only the halo
//!    (the values another rank's stripe reads as sources, [`halo`]), then one gather of the
//!    owned ranges after the last iteration; for SpMV (one pass, `x` given everywhere) the
//!    owned range of `y`; only the changed `(vertex, value)` pairs for BFS, WCC, SSSP and
//!    CDLP;
//! 3. one `sync`. Global quantities travel with the values (PageRank's change and sink mass:
//!    one partial per partition each, folded in partition order as [`Graph::sum_vertices`]
//!    folds them) — so results equal the single-process run:
//!    bitwise for the integer algorithms, PageRank and SpMV up to the grouping of sums inside
//!    a destination (the engine may apply a column in pieces that depend on file offsets).
//!
//! LCC stays single-rank: it needs random access to the neighbour lists of the neighbours of
//! every owned vertex, i.e. edges of every column, so a rank would read (or receive) most of
//! the graph: no cut of its cost.
//!
//! # Modules
//! - `exchange`: the slot, the three put patterns and the cost log of a run.
//! - `halo`: which vertices each rank reads from each other rank (PageRank's exchange).
//! - `algos`: the algorithms.

use std::ops::Range;
use std::path::Path;

use sluice_bsp::cost::Superstep;
use sluice_io::{Budget, Pipeline};

use crate::partition::{self, Parts};
use crate::{Error, Graph};

mod algos;
mod exchange;
mod halo;

pub use algos::{bfs, cdlp, pagerank, spmv, sssp, wcc};

/// One rank's part of a partitioned store, open.
#[derive(Debug)]
pub struct DistGraph {
    graph: Graph,
    parts: Parts,
    rank: usize,
}

/// What a distributed run cost, superstep by superstep (`notes/issue12.md`, item 5).
#[derive(Debug, Clone)]
pub struct Cost {
    /// The section's table (the same on every rank).
    pub table: Vec<Superstep>,
    /// This rank's own supersteps: (sent bytes, received bytes, work seconds, communication
    /// seconds, start seconds on the run's shared clock: zero is the exit of the sync that
    /// opens the run, common to all ranks).
    pub local: Vec<(u64, u64, f64, f64, f64)>,
    /// Seconds this rank spent before the first superstep computing what it exchanges (the
    /// PageRank halo: one pass over its part and two supersteps of lists); 0 otherwise.
    pub setup_s: f64,
}

impl DistGraph {
    /// Opens part `rank` of the partitioned store `dir` for a job of `ranks` ranks; errors
    /// name the rank and the file.
    pub fn open(
        dir: &Path,
        rank: usize,
        ranks: usize,
        pipeline: Pipeline,
        budget: Budget,
    ) -> Result<DistGraph, Error> {
        let named = |e: Error| Error::AtRank { rank, source: Box::new(e) };
        let (parts, part) = partition::open_part(dir, rank, ranks).map_err(named)?;
        let graph = Graph::open(&part, pipeline, budget).map_err(named)?;
        if graph.num_vertices() as u64 != parts.num_vertices
            || graph.meta().partitions != parts.partitions
        {
            return Err(named(Error::corrupt(part.join("meta.json"), "does not match parts.json")));
        }
        Ok(DistGraph { graph, parts, rank })
    }

    /// The rank's graph (every vertex; only the owned columns' edges).
    pub fn graph(&self) -> &Graph {
        &self.graph
    }
    /// The rank's graph, mutable (to [`Graph::load_edges`]).
    pub fn graph_mut(&mut self) -> &mut Graph {
        &mut self.graph
    }
    /// The store's `parts.json`.
    pub fn parts(&self) -> &Parts {
        &self.parts
    }
    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }
    /// The vertices this rank owns.
    pub fn owned(&self) -> Range<u32> {
        self.parts.vertices(self.rank)
    }
    /// The partitions this rank owns.
    pub fn owned_partitions(&self) -> Range<usize> {
        let [lo, hi] = self.parts.ranges[self.rank];
        lo as usize..hi as usize
    }
}
