//! The one error type of sluice-io.

use std::path::PathBuf;

/// Everything that can go wrong in the block pipeline. Variants carry what a user needs to find
/// the fault: the file and the byte offset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Opening or inspecting an input failed.
    #[error("{path}: cannot open")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The input is a directory, a socket or something else that is not a readable file.
    #[error("{path}: not a regular file")]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// A read failed (EIO and friends).
    #[error("{path}: read of {len} bytes at offset {offset} failed")]
    Read {
        /// The file.
        path: PathBuf,
        /// Byte offset in the file.
        offset: u64,
        /// Bytes asked for.
        len: usize,
        /// The kernel's answer.
        #[source]
        source: std::io::Error,
    },
    /// The file ended before the plan said it would (it shrank during the run, or the plan is
    /// wrong).
    #[error("{path}: file ended at offset {offset}, the plan expected {expected} bytes")]
    ShortRead {
        /// The file.
        path: PathBuf,
        /// Where the data ended.
        offset: u64,
        /// The length the plan expected of the extent's end.
        expected: u64,
    },
    /// An extent reaches past the end of its file when the plan is made.
    #[error("{path}: extent {offset}+{len} is past the end of the file ({file_len} bytes)")]
    ExtentPastEnd {
        /// The file.
        path: PathBuf,
        /// Extent start.
        offset: u64,
        /// Extent length.
        len: u64,
        /// The file's length.
        file_len: u64,
    },
    /// A block size that is not a multiple of 4096 between 4096 and [`crate::MAX_BLOCK_SIZE`].
    #[error("block size {block_size} is not a multiple of 4096 up to 1 GiB")]
    BlockSize {
        /// The block size asked for, in bytes.
        block_size: usize,
    },
    /// More reads in flight per I/O thread than a ring takes.
    #[error("queue depth {depth} is over {max}")]
    QueueDepth {
        /// The queue depth asked for.
        depth: usize,
        /// The largest queue depth.
        max: usize,
    },
    /// The environment variable `SLUICE_INJECT_READ_ERROR` holds no byte offset.
    #[error("SLUICE_INJECT_READ_ERROR={value:?} is not a byte offset")]
    InjectOffset {
        /// The variable's value.
        value: String,
    },
    /// io_uring refused to queue a read (its submission queue was full): a bug, reported.
    #[error("{path}: io_uring refused a {len}-byte read at offset {offset}")]
    Submit {
        /// The file.
        path: PathBuf,
        /// Byte offset in the file.
        offset: u64,
        /// Bytes asked for.
        len: usize,
    },
    /// The run would need more memory than the budget allows.
    #[error(
        "{what} needs {needed} bytes but only {available} of the {budget}-byte memory budget are left"
    )]
    OverBudget {
        /// What asked.
        what: String,
        /// Bytes asked for.
        needed: u64,
        /// Bytes left.
        available: u64,
        /// The whole budget.
        budget: u64,
    },
    /// A memory budget larger than the machine's physical memory or the cgroup's limit (issue
    /// 17, defect 14).
    #[error("a memory budget of {requested} bytes is more than {what} ({limit} bytes)")]
    BudgetOverMachine {
        /// The budget asked for.
        requested: u64,
        /// The limit it exceeds.
        limit: u64,
        /// Which limit: physical memory or the cgroup's.
        what: &'static str,
    },
    /// A memory size string could not be parsed.
    #[error("cannot parse memory size {0:?} (use bytes, or a number with K, M, G or T)")]
    BadSize(String),
    /// io_uring could not be set up.
    #[error("io_uring unavailable; use the sync engine")]
    UringUnavailable(#[source] std::io::Error),
    /// io_uring was set up but then refused to submit or wait (mid-run).
    #[error("io_uring submission failed")]
    Uring(#[source] std::io::Error),
    /// The trace file could not be written.
    #[error("{path}: cannot write trace")]
    Trace {
        /// The trace file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A worker thread panicked (a bug, reported instead of hanging).
    #[error("a pipeline thread panicked: {0}")]
    Panicked(String),
    /// The run was cancelled by the caller.
    #[error("cancelled")]
    Cancelled,
    /// A rank's stripe would begin inside a record (`placement` rule 2).
    #[error("{path}: a stripe boundary at offset {offset} is inside a {record}-byte record")]
    StripeUnaligned {
        /// The file.
        path: PathBuf,
        /// The boundary.
        offset: u64,
        /// The record size.
        record: usize,
    },
}
