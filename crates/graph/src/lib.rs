//! sluice-graph: out-of-core graph analytics on a grid store.
//!
//! * [`import`] turns SNAP / Matrix Market / LDBC / binary edge lists into a grid store
//!   ([`store`]) out of core; [`kronecker`] writes Graph500 Kronecker graphs.
//! * [`Graph`] opens a store (vertex arrays in memory, edges on disk) and runs passes:
//!   [`Graph::stream_edges`] with an [`EdgeKernel`], [`Graph::stream_vertices`].
//! * [`algo`] holds the algorithms (PageRank, BFS, WCC) with LDBC Graphalytics semantics;
//!   [`output`] writes their results.
//! * CDLP and LCC read whole neighbour lists through [`Graph::stream_adjacency`] (one partition's
//!   [`Adjacency`] in memory at a time); [`validate`] checks outputs with LDBC's rules and
//!   [`ldbc`] runs a `.properties` file's algorithms and validates them.
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
mod engine;
mod error;
pub mod import;
pub mod kronecker;
pub mod ldbc;
pub mod output;
pub mod store;
pub mod validate;
mod verify;

pub use engine::adjacency::{Adjacency, Neighbours};
pub use engine::{Direction, EdgeKernel, Graph, PassStats, VertexArray, VertexId, VertexSet};
pub use error::Error;
pub use verify::{VerifyReport, verify};
