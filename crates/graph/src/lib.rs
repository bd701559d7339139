//! sluice-graph: out-of-core graph analytics on a grid store.
//!
//! An algorithm is a short program over the engine's operators (`STYLE.md` §3, after Ligra):
//! [`Graph::stream_edges`] with an [`EdgeKernel`] over a [`VertexSet`] and [`VertexArray`]s,
//! [`Graph::stream_vertices`], and [`Graph::stream_adjacency`] (one partition's
//! [`Adjacency`] in memory at a time) for algorithms that need whole neighbour lists.
//!
//! # Modules
//! ```text
//! algo                    the algorithms, one file each, LDBC Graphalytics semantics
//!   bfs                   depths from a root (frontier edge map)
//!   cdlp                  community detection by label propagation (adjacency stream)
//!   lcc                   local clustering coefficient (triangles over adjacency windows)
//!   pagerank              PageRank (vertex pass + edge pass per iteration)
//!   spmv                  y = Aᵀx over the stored edges (weighted pass)
//!   sssp                  shortest distances from a root (frontier Bellman-Ford, weighted)
//!   wcc                   weakly connected components (union-find, one unordered pass)
//! cleanup                 temporary paths removed on Ctrl-C / SIGTERM
//! dist                    the algorithms across BSP processes (MPI ranks), one part each
//!   algos                 PageRank, SpMV, BFS, WCC, SSSP, CDLP: one superstep per iteration
//!   exchange              the puts of owned, halo or changed values, one sync; the cost log
//!   halo                  which vertices each rank reads from each other rank (PageRank)
//! engine                  Graph: open a store, vertex arrays in memory, the pass operators
//!   adjacency             per-partition neighbour lists, streamed or loaded in windows
//!   cache                 the block cache: columns kept across streaming passes
//!   disk                  the streaming mode: passes through the sluice-io block pipeline
//!     layout              a pass's plan: blocks read, columns served from or kept in the cache
//!     visit               unordered edge visits (for_each_edge), both modes
//!   edge_loop             the one edge loop of both modes: a block applied to its slice
//!   memory                the in-memory mode: passes over blocks held in RAM
//!   triangles             oriented adjacency and triangle listing (LCC's primitive)
//!   vertex_array          VertexArray: padded per-vertex state held against the budget
//!   vertex_set            VertexSet: active sets (bitmap with per-partition counts)
//! error                   the crate's one error type
//! import                  edge lists (SNAP, Matrix Market, LDBC, bin) into a grid store
//!   arrays                edges in memory (borrowed src/dst/weight slices) as the input
//!   describe              what an input holds: format, directedness, ids, weights
//!   parse                 text and binary records to edges
//!   vertices              the id map: original ids to dense ids
//!   buckets               external bucketing of edges by grid block
//!   blocks                writing the grid blocks, indexes and checksums
//! kronecker               Graph500 Kronecker generator
//! ldbc                    the LDBC driver: run a .properties file's algorithms, validate
//! partition               partitioned stores: one part (a grid store) per rank
//! output                  per-vertex results: LDBC text, .npy, top K; reading vector files
//! store                   the grid store's on-disk layout: meta.json, indexes, checksums
//!   dir                   StoreDir: one version of a store, opened once (files by descriptor)
//!   invariants            structural checks on open (degrees vs blocks, mirrored grids)
//!   packed                the packed edge encoding: checksummed frames of bit-packed edges
//!     v0                  version 0 frames: one interleaved stream (still read)
//!     v1                  version 1 frames: one section per stream (written)
//!   weights               per-block CRC-32s of the weight files
//! summary                 figures of results computed once: component sizes, reach, top K
//! validate                LDBC output validation and per-vertex value files
//! verify                  checking every file and block checksum and every degree of a store
//! ```
//!
//! ```
//! use sluice_graph::{Graph, import::{import, Format, ImportOptions}, algo::bfs::bfs};
//! use sluice_io::{Budget, PipelineBuilder};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let input = dir.path().join("g.txt");
//! std::fs::write(&input, "# a path\n10 20\n20 30\n").unwrap();
//! let store = dir.path().join("g.grid");
//! let mut opts = ImportOptions::new(Format::Snap);
//! opts.directed = Some(true);
//! let pipeline = PipelineBuilder::new().build().unwrap();
//! import(&[input], &store, &opts, &pipeline, &Budget::unlimited()).unwrap();
//! let g = Graph::open(&store, PipelineBuilder::new().build().unwrap(), Budget::unlimited()).unwrap();
//! let depth = bfs(&g, 10).unwrap();
//! assert_eq!(depth, vec![0, 1, 2]);
//! ```

#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod algo;
pub mod cleanup;
pub mod dist;
mod engine;
mod error;
pub mod import;
pub mod kronecker;
pub mod ldbc;
pub mod output;
pub mod partition;
pub mod store;
pub mod summary;
pub mod validate;
mod verify;

pub use engine::adjacency::{Adjacency, Neighbours};
pub use engine::{
    CacheReport, Direction, EdgeKernel, Graph, PassStats, VertexArray, VertexId, VertexSet,
};
pub use error::Error;
pub use verify::{VerifyReport, verify, verify_within};
