//! The algorithms, one file each, written over [`crate::Graph::stream_edges`] and
//! [`crate::Graph::stream_vertices`].
//!
//! # Multigraphs
//! Stores keep duplicate edges and self loops unless imported with `--simple`:
//! * PageRank counts every copy: a vertex with an edge to `v` twice sends `v` two shares, and
//!   out-degrees count copies and self loops (an undirected self loop once), so rank is
//!   conserved (GridGraph and GraphBLAS on the same multigraph agree).
//! * BFS and WCC are unaffected by duplicates and self loops (reachability only).
//! * CDLP counts every stored edge as a vote (a self loop votes for the vertex's own label).
//! * LCC works on neighbour sets: duplicates and self loops are ignored.
//! * SSSP takes the lightest of duplicate edges; self loops never shorten a path.
//! * SpMV sums duplicates (as scipy.sparse does); a self loop is a diagonal entry.

pub mod bfs;
pub mod cdlp;
pub mod lcc;
pub mod pagerank;
pub mod spmv;
pub mod sssp;
pub mod wcc;
