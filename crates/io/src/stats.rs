//! Figures of one run.

use std::path::PathBuf;

use serde::Serialize;

/// Bytes copied, by kind. Zero copy is the goal; what is not zero is counted.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Copies {
    /// Bytes of records stitched across a block or extent seam (copied once into a seam buffer).
    pub seam_bytes: u64,
    /// Bytes copied in user space for any other reason.
    pub user_copy_bytes: u64,
    /// Bytes read through the page cache (buffered reads copy kernel to user).
    pub page_cache_bytes: u64,
}

/// How one file was read.
#[derive(Debug, Clone, Serialize)]
pub struct FileAccess {
    /// The file.
    pub path: PathBuf,
    /// True if and only if it was read with O_DIRECT.
    pub direct: bool,
    /// True if and only if its blocks were slices of a mapping of the page cache (no read, no
    /// copy): the IOC engine does this for a file mostly in the page cache under `auto`.
    pub mapped: bool,
    /// Share of its pages in the page cache when the run started (0..=1), if known.
    pub cached_fraction: Option<f64>,
    /// Why it was read that way (the `--direct` setting, its residency, a file system that
    /// refuses O_DIRECT).
    pub reason: String,
}

/// Figures of one run, printed as the `run` object of every subcommand's JSON.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunStats {
    /// `ioc` or `sync`.
    pub engine: String,
    /// `io_uring` or `pread`.
    pub backend: String,
    /// Why the pipeline fell back from io_uring, if it did.
    pub fallback_reason: Option<String>,
    /// `always`, `never`, or `auto`.
    pub direct: String,
    /// Per file: direct or buffered, and why.
    pub files: Vec<FileAccess>,
    /// Bytes read from storage or the page cache (O_DIRECT reads count their whole aligned
    /// length; mapped files count the plan's bytes).
    pub bytes_read: u64,
    /// Of `bytes_read`, bytes handed over as slices of a file mapping (no copy).
    pub mapped_bytes: u64,
    /// Wall time of the run.
    pub seconds: f64,
    /// `bytes_read / seconds`.
    pub bandwidth_bytes_per_s: f64,
    /// Bytes per read.
    pub block_size: usize,
    /// Reads in flight per I/O thread.
    pub queue_depth: usize,
    /// Busy seconds of each I/O thread.
    pub io_busy_seconds: Vec<f64>,
    /// Busy seconds of each compute worker.
    pub compute_busy_seconds: Vec<f64>,
    /// Blocks each compute worker processed.
    pub blocks_per_worker: Vec<u64>,
    /// Copies by kind.
    pub copies: Copies,
}
