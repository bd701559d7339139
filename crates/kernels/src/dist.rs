//! Distributed kernels (issue 12, item 2): each BSP process (an MPI rank under `mpirun`, or a
//! thread) reads its own part of the data through its own pipeline, and only partial results
//! cross between processes, combined by BSP collectives among the data owners.
//!
//! # Contract
//! 1. Placement follows `sluice_io::placement`: a [`Dataset::Shared`] file is cut into
//!    stripes, [`Dataset::Parts`] are dealt to ranks whole. A rank with no data still takes part
//!    in every collective.
//! 2. The output equals one process's on the same data: stats bit for bit, since partials
//!    combine in the canonical tree over block indices ([`tree`]), never in arrival order;
//!    grep counts add, and listed matches reach rank 0 in rank order, which is file order.
//! 3. Every function is collective: all processes of the BSP section call it with the same
//!    arguments. An error on one process (a bad header, a failed read) is exchanged, not
//!    thrown: every process returns an error, the failing one its own inside
//!    [`Error::OnRank`], the others [`Error::PeerFailed`] with its rank and message. No
//!    process waits on one that failed.
//!
//! # Costs (p processes, n blocks)
//! Stats: two allgathers of O(log n) tree nodes (136 bytes each) per process, plus an
//! allreduce of the histogram's counts when there is one.
//!
//! # Modules
//! - [`tree`]: the canonical combine tree over block indices.
//! - `stats`: [`stats()`] over a [`Dataset`].
//! - `grep`: [`grep()`] over a shared file; matches listed on rank 0 in file order.
//! - `lines`: the listed records gathered to rank 0, put from the pool buffers they were read
//!   into (zero copy, issue 12 item 4).
//! - `zero_copy`*: registers those bytes as a local BSP slot (the module's one `unsafe`).
//! - `kmeans`: [`kmeans()`] over a shared file; the tree fold of each pass's sums, a shared
//!   init, labels gathered to rank 0.
//! - `kmeans_parts`: [`kmeans_parts()`] over per-rank parts, one per rank, in the same tree.
//! - `exchange`: outcomes and byte records between processes.

mod exchange;
mod grep;
mod kmeans;
mod kmeans_parts;
mod lines;
mod stats;
pub mod tree;
mod zero_copy;

use std::path::PathBuf;

pub use grep::{DistGrepReport, HOLD_SHARE, Listed, Transfer, grep};
pub use kmeans::kmeans;
pub use kmeans_parts::kmeans_parts;
pub use stats::stats;

/// Where the data of a distributed run is (placement rule 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dataset {
    /// One file every process can read; each reads a stripe of it.
    Shared(PathBuf),
    /// Files in stream order (`data.part-0000`, …), each read whole by one process.
    Parts(Vec<PathBuf>),
}

#[cfg(test)]
mod tests;
