//! sluice-io: the block pipeline (the asynchronous compute–load model of `DESIGN.md`).
//!
//! A [`Plan`] lists file extents read as one stream and says how the stream is cut into records.
//! A [`Pipeline`] reads it block by block and runs a [`BlockKernel`] on every block, in place,
//! handing the kernel whole records only (records that straddle a block boundary are stitched at
//! the seam). The per-block partial results come back in stream order, whatever order the blocks
//! completed in, so a fold over them is bitwise reproducible.
//!
//! Two engines ([`Engine`]): IOC (a fixed pool of 4096-aligned buffers; I/O threads keep
//! `queue_depth` io_uring reads in flight, or fall back to pread threads and say why in
//! [`RunStats::fallback_reason`]; compute workers take filled buffers in completion order and run
//! the kernel in place) and `sync` (each worker reads one block, then computes on it: the
//! baseline). Each file is read with O_DIRECT, buffered, or — for a file nearly all in the page
//! cache — through a memory mapping, decided from its page-cache residency ([`DirectMode`]) and
//! reported in [`RunStats::files`]. Both engines hand the kernel the same blocks. The protocol is
//! written up in `src/pipeline/README.md`.
//!
//! ```
//! use sluice_io::{Block, BlockKernel, Plan, PipelineBuilder, RecordLayout};
//!
//! struct CountLines;
//! impl BlockKernel for CountLines {
//!     type Partial = u64;
//!     fn process(&self, block: &Block<'_>) -> u64 {
//!         block.data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count() as u64
//!     }
//! }
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("lines.txt");
//! std::fs::write(&path, "a\nbb\nccc\n").unwrap();
//! let plan = Plan::file(&path, RecordLayout::Delimited(b'\n')).unwrap();
//! let run = PipelineBuilder::new().build().unwrap().run(&plan, &CountLines).unwrap();
//! assert_eq!(run.partials.iter().sum::<u64>(), 3);
//! ```
//!
//! # Modules
//! Modules marked `*` hold `unsafe` code; no other module does.
//!
//! ```text
//! lib.rs               Block, BlockKernel, Engine, DirectMode, Backend, PipelineBuilder, Pipeline
//! plan.rs              Plan: the extents read as one stream, and the record layout
//! placement.rs         which bytes each rank of a distributed run reads: stripes and parts
//! pipeline.rs          a run from start to end: pool reservation, reorder buffer, figures
//!   pipeline/README.md a block's life cycle and how a run stops
//!   pipeline/settings.rs  the run's settings, every "choose" resolved and checked
//!   pipeline/files.rs     opening the files; O_DIRECT, buffered or mapped, and why
//!   pipeline/reads.rs     ChunkMap: the plan cut into aligned reads
//!   pipeline/gate.rs      Gate: the claim gate and stop flag (the loom model's subject)
//!   pipeline/shared.rs    Shared: claim gate, first failure, the per-read steps of every engine
//!   pipeline/ioc.rs       the IOC engine: io_uring or pread I/O threads, compute workers
//!   pipeline/sync.rs      the sync engine: read a block, then compute on it (the baseline)
//! stitch.rs            cutting a read into whole records; seam records across reads
//! resident.rs          releasing a mapped file's pages a granule at a time
//! pool.rs *            BufPool: the fixed pool of 4096-aligned buffers; HeldBytes past a block
//! uring.rs *           Ring: io_uring reads into pool buffers, fenced by ownership
//! sys.rs *             cachestat/mincore residency, O_DIRECT opens, file mappings, page dropping
//! sigbus.rs *          SIGBUS on a mapping of a file that shrank: zeros, flagged, an error
//! queue.rs             the closable blocking queue between I/O threads and workers
//! memory.rs            Budget and Reservation: the process memory budget
//! stats.rs             RunStats: the figures of a run, and merging them
//! trace.rs             the Chrome trace-event timeline of a run
//! output.rs            OutputFile (written beside, then renamed) and the .npy header
//!   output/temps.rs       temporary paths, the publish lock, leftovers of killed runs
//!   output/signals.rs     SIGINT/SIGTERM/SIGHUP: temporaries removed, exit 128 + signal
//! error.rs             Error, the crate's one error type
//! ```

#![warn(missing_docs)]

mod error;
pub mod memory;
pub mod output;
mod pipeline;
/// The pipeline's claim gate, public only to the loom model (`tests/loom_gate.rs`).
#[cfg(loom)]
pub use pipeline::gate::Gate;
pub mod placement;
mod plan;
mod pool;
mod queue;
mod resident;
mod sigbus;
mod stats;
mod stitch;
mod sys;
mod trace;
mod uring;

pub use error::Error;
pub use memory::{Budget, Reservation, parse_size};
pub use output::{OutputFile, npy_header};
pub use pipeline::{DEFAULT_BLOCK_SIZE, DEFAULT_IO_THREADS, DEFAULT_QUEUE_DEPTH, MAX_BLOCK_SIZE};
pub use plan::{Extent, Plan, RecordLayout};
pub use pool::HeldBytes;
pub use stats::{Copies, FileAccess, RunStats};
pub use sys::{
    HugeSlice, Zeroed, drop_from_page_cache, one_malloc_arena, prefetch, start_writeback,
    trim_malloc_arenas,
};

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

/// A run of whole records handed to a kernel.
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    /// The bytes: whole records only (a short last record of a `Fixed` layout excepted).
    pub data: &'a [u8],
    /// Stream offset of `data[0]`.
    pub stream_offset: u64,
    /// Index in the plan of the extent that holds `data[0]`.
    pub extent: usize,
    /// Offset of `data[0]` from the start of that extent.
    pub extent_offset: u64,
    /// True if and only if `data` was stitched together from two or more reads (a seam record).
    pub is_seam: bool,
}

/// What runs on every block. Implementations are shared by all compute workers.
pub trait BlockKernel: Sync {
    /// The result of one block; the run returns them in stream order.
    type Partial: Send;
    /// Processes one block of whole records.
    fn process(&self, block: &Block<'_>) -> Self::Partial;

    /// Like [`BlockKernel::process`], given the pool buffer the block lies in, so that the
    /// kernel may hold its bytes past the block ([`BlockBuffer::hold`]). The pipeline calls this
    /// for every block; the default ignores `buffer`.
    fn process_in(&self, block: &Block<'_>, buffer: &BlockBuffer<'_>) -> Self::Partial {
        let _ = buffer;
        self.process(block)
    }

    /// Heap bytes the partial of a block of `len` bytes may hold until the sink takes it (a copy
    /// of the block, decoded values). The pipeline reserves this for every read its reorder
    /// window lets run ahead of the sink (`pipeline.rs` rule 8). The default, 0, is for partials
    /// of a few numbers.
    fn partial_bytes(&self, len: usize) -> u64 {
        let _ = len;
        0
    }
}

/// Where a block's bytes lie: a pool buffer of the IOC engine, or elsewhere (a seam record, a
/// mapped file, the sync engine's reused buffer), which cannot be held.
#[derive(Debug)]
pub struct BlockBuffer<'a> {
    /// The buffer and the index in it of the block's first byte, and the block's length.
    pub(crate) buf: Option<(&'a Arc<pool::PoolBuf>, usize, usize)>,
}

impl BlockBuffer<'_> {
    /// No buffer to hold.
    pub const NONE: BlockBuffer<'static> = BlockBuffer { buf: None };

    /// Holds the block's bytes past the block: valid and unchanged until the [`HeldBytes`]
    /// drops, which gives the buffer back. `None` where the bytes are not in a pool buffer, or
    /// when holding it would leave the run no buffer to read into (`pool.rs` rule 5): the kernel
    /// then copies what it keeps. Each call holds once more (drop every hold).
    pub fn hold(&self) -> Option<HeldBytes> {
        let (buf, start, len) = self.buf?;
        HeldBytes::hold(buf, start, len)
    }
}

/// Which engine runs the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// Separate I/O and compute threads, buffers moving between a loading and a computing queue.
    #[default]
    Ioc,
    /// Baseline: each worker reads one block, then computes on it (GridGraph's model).
    Sync,
}

/// Whether reads bypass the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DirectMode {
    /// O_DIRECT for files not in the page cache, buffered for files that are.
    #[default]
    Auto,
    /// Always O_DIRECT (where the file system allows it).
    Always,
    /// Never O_DIRECT.
    Never,
}

/// How the IOC engine's I/O threads read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// io_uring, falling back to pread threads (and saying why in
    /// [`RunStats::fallback_reason`]) when io_uring cannot be set up or `SLUICE_NO_URING=1`.
    #[default]
    Auto,
    /// io_uring or an error ([`Error::UringUnavailable`]).
    Uring,
    /// A pool of pread threads (`io_threads × queue_depth` of them, at most 64).
    Pread,
}

/// The result of a run.
#[derive(Debug)]
pub struct Run<P> {
    /// One partial per block handed to the kernel, in stream order.
    pub partials: Vec<P>,
    /// Figures of the run.
    pub stats: RunStats,
}

/// Settings of a pipeline. Zero means "choose".
#[derive(Debug, Clone)]
struct Config {
    engine: Engine,
    direct: DirectMode,
    block_size: usize,
    queue_depth: usize,
    io_threads: usize,
    workers: usize,
    budget: Option<Budget>,
    trace: Option<PathBuf>,
    progress: Option<Arc<AtomicU64>>,
    cancel: Option<Arc<AtomicBool>>,
    backend: Backend,
    inject_read_error: Option<u64>,
    mmap: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            engine: Engine::default(),
            direct: DirectMode::default(),
            block_size: 0,
            queue_depth: 0,
            io_threads: 0,
            workers: 0,
            budget: None,
            trace: None,
            progress: None,
            cancel: None,
            backend: Backend::default(),
            inject_read_error: None,
            mmap: true,
        }
    }
}

/// Builds a [`Pipeline`].
#[derive(Debug, Default)]
pub struct PipelineBuilder {
    config: Config,
}

impl PipelineBuilder {
    /// Defaults everywhere.
    pub fn new() -> PipelineBuilder {
        PipelineBuilder::default()
    }
    /// The engine (default [`Engine::Ioc`]).
    pub fn engine(mut self, engine: Engine) -> Self {
        self.config.engine = engine;
        self
    }
    /// O_DIRECT policy (default [`DirectMode::Auto`]).
    pub fn direct(mut self, direct: DirectMode) -> Self {
        self.config.direct = direct;
        self
    }
    /// Bytes per read; a multiple of 4096 (default chosen by measurement).
    pub fn block_size(mut self, bytes: usize) -> Self {
        self.config.block_size = bytes;
        self
    }
    /// Reads in flight per I/O thread.
    pub fn queue_depth(mut self, depth: usize) -> Self {
        self.config.queue_depth = depth;
        self
    }
    /// I/O threads (default: the fewest that fill the device).
    pub fn io_threads(mut self, n: usize) -> Self {
        self.config.io_threads = n;
        self
    }
    /// Compute workers (default: number of cores).
    pub fn workers(mut self, n: usize) -> Self {
        self.config.workers = n;
        self
    }
    /// The memory budget the buffer pool is reserved from.
    pub fn budget(mut self, budget: Budget) -> Self {
        self.config.budget = Some(budget);
        self
    }
    /// Write a Chrome trace-event JSON timeline of every run to this file.
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.trace = Some(path.into());
        self
    }
    /// A counter the pipeline adds the bytes of every finished block to (for progress bars).
    pub fn progress(mut self, counter: Arc<AtomicU64>) -> Self {
        self.config.progress = Some(counter);
        self
    }
    /// A flag the caller sets to stop runs early (Ctrl-C in a front end): once it is set, a run
    /// stops after the blocks in flight, as on a failure, and returns [`Error::Cancelled`].
    pub fn cancel(mut self, flag: Arc<AtomicBool>) -> Self {
        self.config.cancel = Some(flag);
        self
    }
    /// How the IOC engine reads (default [`Backend::Auto`]).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.config.backend = backend;
        self
    }
    /// Fault injection for tests: the read covering this stream offset fails with `EIO`, in
    /// every engine and backend (the environment variable `SLUICE_INJECT_READ_ERROR` does the
    /// same for a whole process, e.g. the CLI).
    pub fn inject_read_error(mut self, stream_offset: u64) -> Self {
        self.config.inject_read_error = Some(stream_offset);
        self
    }
    /// Whether the IOC engine may read files that are mostly in the page cache (under
    /// [`DirectMode::Auto`]) through a memory mapping: zero copy, at memory speed (default true;
    /// `SLUICE_NO_MMAP=1` also turns it off). A mapped file must not be truncated during the run.
    pub fn mmap(mut self, on: bool) -> Self {
        self.config.mmap = on;
        self
    }
    /// Checks the settings.
    pub fn build(self) -> Result<Pipeline, Error> {
        let c = &self.config;
        if c.block_size != 0
            && (!c.block_size.is_multiple_of(4096) || c.block_size > MAX_BLOCK_SIZE)
        {
            return Err(Error::BlockSize { block_size: c.block_size });
        }
        Ok(Pipeline { config: self.config })
    }
}

/// Runs plans through kernels.
#[derive(Debug)]
pub struct Pipeline {
    config: Config,
}

impl Pipeline {
    /// Whether the caller's cancel flag ([`PipelineBuilder::cancel`]) is set: work a front end
    /// does beside the pipeline (from memory, e.g. a block cache) checks it between pieces, as
    /// a run checks it after every read.
    pub fn cancel_requested(&self) -> bool {
        self.config.cancel.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// The largest buffer pool a run takes (its defaults unshrunk). Memory reserved beside the
    /// pipeline that should not make a later run shrink its block size — callers that number
    /// blocks by [`Pipeline::block_size`] need that — leaves this much of the budget free.
    pub fn pool_bytes(&self) -> u64 {
        pipeline::full_pool_bytes(&self.config)
    }

    /// Reads the whole plan and runs `kernel` on every block; the partials come back in stream
    /// order. Holds every partial until the end: for large partials use [`Pipeline::run_ordered`].
    pub fn run<K: BlockKernel>(&self, plan: &Plan, kernel: &K) -> Result<Run<K::Partial>, Error> {
        let mut partials = Vec::new();
        let stats = self.run_ordered(plan, kernel, |p| partials.push(p))?;
        Ok(Run { partials, stats })
    }

    /// Reads the whole plan, runs `kernel` on every block, and hands each partial to `sink` on
    /// the calling thread in stream order, as soon as every earlier partial has been handed over
    /// (a reorder buffer holds at most the blocks in flight). This is the primitive: a fold over
    /// `sink` is bitwise reproducible whatever order blocks complete in.
    pub fn run_ordered<K, F>(&self, plan: &Plan, kernel: &K, sink: F) -> Result<RunStats, Error>
    where
        K: BlockKernel,
        F: FnMut(K::Partial),
    {
        pipeline::run_ordered(&self.config, plan, kernel, sink)
    }
}
