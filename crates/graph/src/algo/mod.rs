//! The algorithms, one file each, written over [`crate::Graph::stream_edges`] and
//! [`crate::Graph::stream_vertices`].
//!
//! # Multigraphs
//! Stores keep duplicate edges and self loops unless imported with `--simple`:
//! * PageRank counts every copy: a vertex with an edge to `v` twice sends `v` two shares, and
//!   out-degrees count copies and self loops (an undirected self loop once), so rank is
//!   conserved (GridGraph and GraphBLAS on the same multigraph agree).
//! * BFS and WCC are unaffected by duplicates and self loops (reachability only).

pub mod bfs;
pub mod pagerank;
pub mod wcc;
