//! The engines behind [`Pipeline::run_ordered`](crate::Pipeline::run_ordered): the IOC engine
//! (I/O threads and compute workers joined by two queues of pool buffers) and the `sync` baseline
//! ([`crate::sync_engine`]). The life cycle of a block and the shutdown protocol are written up in
//! `pipeline/README.md`.
//!
//! # Contract
//! 1. The plan is cut into *reads* of at most `block_size` bytes, never crossing an extent. Read
//!    `j` of an extent starts at the extent's first byte rounded down to 4096 plus `j ×
//!    block_size`, so every O_DIRECT read starts aligned; the kernel gets the sub-slice the plan
//!    asked for.
//! 2. Every record reaches the kernel exactly once and whole: the whole records of a read are
//!    handed over in place (no copy), the partial records at its ends are stitched with the
//!    neighbours' ([`crate::stitch`]) into seam blocks. Which blocks exist depends only on the
//!    plan and the block size, never on timing.
//! 3. The sink sees one partial per block, in stream order, on the calling thread. A read is
//!    claimed only while it is fewer than `window` reads past the oldest read whose partials are
//!    not all handed over, so the reorder buffer holds at most `window` reads' partials.
//! 4. The first error (a failed or short read, a panicking kernel or sink) wins: every thread
//!    stops claiming reads, reads in flight are waited for, buffers go home, every thread is
//!    joined, and the run returns that error. Nothing waits forever on a cancelled run.
//! 5. The buffer pool (`block_size × (queue_depth × io_threads + workers)` for IOC, plus a second
//!    `queue_depth × io_threads` buffers when that takes at most a quarter of the budget left;
//!    `block_size × workers` for sync; fewer when the plan has fewer reads) is reserved from the
//!    budget before any thread starts; over budget is [`IoError::OverBudget`] and no read is
//!    made. The slack only changes speed, never results: an I/O thread refills its ring right
//!    after reaping, when the buffers it just reaped are still with the workers; completions
//!    arrive in bursts of up to a queue's worth, and without a spare buffer per slot a `--trace`
//!    showed only 20–26 of 32 reads in flight (32.0 with the slack).
//! 6. A read covering the stream offset given to `inject_read_error` (or in the environment
//!    variable `SLUICE_INJECT_READ_ERROR`) fails with `EIO`, in every engine and backend.
//! 7. Each file is read one way, decided once per run from [`DirectMode`] and its page-cache
//!    residency (`cachestat`, else `mincore`): `always`/`never` force O_DIRECT or buffered;
//!    `auto` reads a file with more than half its planned bytes cached buffered, and the IOC
//!    engine maps one with at least 90% cached (its blocks are slices of the page cache: no read,
//!    no copy); the rest goes O_DIRECT. A file system that refuses O_DIRECT (`EINVAL`) is read
//!    buffered. The decision and its reason are in [`RunStats::files`]. It never changes which
//!    blocks the kernel sees.
//!
//! # Threads and costs
//! IOC: `io_threads` I/O threads `sluice-io-N` (io_uring), or `io_threads × queue_depth` pread
//! threads of the same name when io_uring is unavailable, plus `workers` compute threads
//! `sluice-worker-N`; all are scoped threads joined before `run_ordered` returns. Per read: one
//! SQE, one queue push and pop, one assembler lock, two messages to the calling thread.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::pool::{ALIGN, BufPool, PoolBuf};
use crate::queue::Queue;
use crate::resident::Granules;
use crate::stitch::{Applied, Assembler, Cut, Fragment, Piece, Pos, SeamRecord, cut};
use crate::trace::Span;
use crate::uring::{ReadOp, Ring};
use crate::{
    Backend, Block, BlockKernel, Budget, Config, Copies, DirectMode, Engine, FileAccess, IoError,
    Plan, RecordLayout, RunStats, sys,
};

/// Default bytes per read. Measured on this machine's virtio disk, cold, IOC engine with
/// io_uring and O_DIRECT at queue depth 32, buffers on 2 MiB pages (see `pipeline/README.md`):
/// 1 MiB reads match fio's 1 MiB QD 32 pass; 512 KiB falls behind, 2 and 4 MiB gain nothing.
pub const DEFAULT_BLOCK_SIZE: usize = 1 << 20;
/// Default reads in flight per I/O thread: 32 × 1 MiB keeps a virtio/NVMe queue full (fio
/// reaches the device's bandwidth at QD 32 with 1 MiB reads; see `pipeline/README.md`).
pub const DEFAULT_QUEUE_DEPTH: usize = 32;
/// Default I/O threads: one io_uring thread submits a whole batch per system call and spends
/// well under 5% of its time busy at device speed, so one fills one disk.
pub const DEFAULT_IO_THREADS: usize = 1;
/// Most pread threads the fallback starts (`io_threads × queue_depth`, capped).
const MAX_PREAD_THREADS: usize = 64;
/// Largest block size (a read length must fit io_uring's `u32`).
pub const MAX_BLOCK_SIZE: usize = 1 << 30;

/// Settings with every "choose" resolved.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) engine: Engine,
    pub(crate) backend: Backend,
    pub(crate) direct: DirectMode,
    pub(crate) block_size: usize,
    pub(crate) queue_depth: usize,
    pub(crate) io_threads: usize,
    pub(crate) workers: usize,
    pub(crate) inject: Option<u64>,
}

impl Settings {
    fn resolve(config: &Config) -> Result<Settings, IoError> {
        let pick = |v: usize, d: usize| if v == 0 { d } else { v };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let inject = match config.inject_read_error {
            Some(at) => Some(at),
            None => match std::env::var("SLUICE_INJECT_READ_ERROR") {
                Ok(text) => Some(text.trim().parse::<u64>().map_err(|_| {
                    IoError::Config(format!(
                        "SLUICE_INJECT_READ_ERROR={text:?} is not a byte offset"
                    ))
                })?),
                Err(_) => None,
            },
        };
        let s = Settings {
            engine: config.engine,
            backend: config.backend,
            direct: config.direct,
            block_size: pick(config.block_size, DEFAULT_BLOCK_SIZE),
            queue_depth: pick(config.queue_depth, DEFAULT_QUEUE_DEPTH),
            io_threads: pick(config.io_threads, DEFAULT_IO_THREADS),
            workers: pick(config.workers, cores),
            inject,
        };
        if s.block_size % ALIGN != 0 || s.block_size > MAX_BLOCK_SIZE {
            return Err(IoError::Config(format!(
                "block size {} is not a multiple of 4096 up to 1 GiB",
                s.block_size
            )));
        }
        if s.queue_depth > 4096 {
            return Err(IoError::Config(format!("queue depth {} is over 4096", s.queue_depth)));
        }
        Ok(s)
    }
}

/// One input file, opened once however many extents name it.
#[derive(Debug)]
pub(crate) struct OpenFile {
    pub(crate) path: PathBuf,
    pub(crate) file: Arc<File>,
    pub(crate) direct: bool,
    pub(crate) cached_fraction: Option<f64>,
    pub(crate) reason: String,
    /// Set for a file read from the page cache through a mapping (IOC engine, `auto`, mostly
    /// cached): its blocks are slices of the mapping, read and copied by nobody.
    pub(crate) map: Option<sys::Mapping>,
}

/// Share of a file's planned bytes that must be in the page cache for `auto` to read it
/// buffered: above one half, most reads are memory copies and O_DIRECT would re-read them from
/// the disk.
const CACHED_FOR_BUFFERED: f64 = 0.5;

/// Share of a file's planned bytes that must be in the page cache for `auto` to map it: a page
/// missing from a mapping is read by a page fault in the worker, a few pages at a time with
/// nothing else in flight (measured: 0.8 GB/s on a mostly-evicted 4 GiB file against 14 GB/s
/// warm), so only a nearly whole file is mapped; the rest goes through buffered reads.
const CACHED_FOR_MAPPING: f64 = 0.9;

fn open_files(
    plan: &Plan,
    mode: DirectMode,
    allow_map: bool,
) -> Result<(Vec<OpenFile>, Vec<usize>), IoError> {
    let mut files: Vec<OpenFile> = Vec::new();
    let mut of_extent = Vec::with_capacity(plan.extents().len());
    for extent in plan.extents() {
        if let Some(i) = files.iter().position(|f| f.path == extent.path) {
            of_extent.push(i);
            continue;
        }
        let path = extent.path.clone();
        let open_err = |source| IoError::Open { path: path.clone(), source };
        let file = File::open(&path).map_err(open_err)?;
        let meta = file.metadata().map_err(open_err)?;
        if !meta.is_file() {
            return Err(IoError::NotAFile { path });
        }
        // A file that shrank since the plan was made fails here, before any read (and before a
        // mapping could reach past its end).
        let end = plan.extents().iter().filter(|e| e.path == path).map(|e| e.offset + e.len);
        let end = end.max().unwrap_or(0);
        if meta.len() < end {
            return Err(IoError::ShortRead { path, offset: meta.len(), expected: end });
        }
        let (mut planned, mut cached, mut known) = (0u64, 0u64, true);
        for e in plan.extents().iter().filter(|e| e.path == path) {
            planned += e.len;
            match sys::cached_bytes(&file, e.offset, e.len) {
                Some((bytes, _)) => cached += bytes,
                None => known = false,
            }
        }
        let cached_fraction =
            known.then(|| if planned == 0 { 1.0 } else { cached as f64 / planned as f64 });
        let (want_direct, why) = match (mode, cached_fraction) {
            (DirectMode::Never, _) => (false, "--direct never".to_string()),
            (DirectMode::Always, _) => (true, "--direct always".to_string()),
            (DirectMode::Auto, Some(f)) if f > CACHED_FOR_BUFFERED => {
                (false, format!("{:.0}% in the page cache", f * 100.0))
            }
            (DirectMode::Auto, Some(f)) => (true, format!("{:.0}% in the page cache", f * 100.0)),
            (DirectMode::Auto, None) => (true, "page-cache residency unknown".to_string()),
        };
        let (file, direct, mut reason) = if want_direct {
            match sys::open_direct(&path) {
                Ok(f) => (f, true, why),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    (file, false, format!("{why}; the file system refuses O_DIRECT (EINVAL)"))
                }
                Err(source) => return Err(IoError::Open { path, source }),
            }
        } else {
            (file, false, why)
        };
        let mut map = None;
        let mostly_cached = cached_fraction.is_some_and(|f| f >= CACHED_FOR_MAPPING);
        if allow_map && mode == DirectMode::Auto && !direct && mostly_cached {
            match sys::Mapping::new(&file, end) {
                Ok(m) => {
                    map = Some(m);
                    reason.push_str("; memory-mapped");
                }
                Err(e) => reason.push_str(&format!("; cannot map ({e}), buffered reads")),
            }
        }
        of_extent.push(files.len());
        files.push(OpenFile { path, file: Arc::new(file), direct, cached_fraction, reason, map });
    }
    Ok((files, of_extent))
}

/// One read: a piece of one extent (contract rule 1).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chunk {
    pub(crate) index: usize,
    pub(crate) file: usize,
    pub(crate) extent: usize,
    pub(crate) stream_offset: u64,
    pub(crate) extent_offset: u64,
    /// Bytes of the plan in this read.
    pub(crate) len: usize,
    /// File offset the read starts at.
    pub(crate) read_offset: u64,
    /// Bytes asked of the file (aligned up for O_DIRECT).
    pub(crate) read_len: usize,
    /// The plan's bytes start at `buf[skip]`.
    pub(crate) skip: usize,
    /// File offset where the extent ends (for short-read errors).
    pub(crate) extent_end: u64,
}

impl Chunk {
    fn pos(&self) -> Pos {
        Pos {
            stream_offset: self.stream_offset,
            extent: self.extent,
            extent_offset: self.extent_offset,
        }
    }
}

#[derive(Debug)]
struct ExtentReads {
    extent: usize,
    file: usize,
    direct: bool,
    stream_start: u64,
    offset: u64,
    len: u64,
    /// `offset` rounded down to [`ALIGN`]: reads start at `base + k × block_size`.
    base: u64,
    first_read: usize,
}

/// The reads of a plan, computed on demand (a terabyte plan has millions).
#[derive(Debug)]
pub(crate) struct ChunkMap {
    extents: Vec<ExtentReads>,
    block_size: usize,
    total: usize,
}

impl ChunkMap {
    fn new(plan: &Plan, files: &[OpenFile], of_extent: &[usize], block_size: usize) -> ChunkMap {
        let mut extents = Vec::new();
        let (mut stream, mut reads) = (0u64, 0usize);
        for (i, e) in plan.extents().iter().enumerate() {
            if e.len > 0 {
                let base = e.offset / ALIGN as u64 * ALIGN as u64;
                let n = (e.offset + e.len - base).div_ceil(block_size as u64) as usize;
                let file = of_extent[i];
                extents.push(ExtentReads {
                    extent: i,
                    file,
                    direct: files[file].direct,
                    stream_start: stream,
                    offset: e.offset,
                    len: e.len,
                    base,
                    first_read: reads,
                });
                reads += n;
            }
            stream += e.len;
        }
        ChunkMap { extents, block_size, total: reads }
    }

    /// Number of reads.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// Read `j` (`j < total`).
    pub(crate) fn chunk(&self, j: usize) -> Chunk {
        let at = self.extents.partition_point(|e| e.first_read <= j) - 1;
        let e = &self.extents[at];
        let bs = self.block_size as u64;
        let start = e.base + (j - e.first_read) as u64 * bs;
        let need_start = start.max(e.offset);
        let need_end = (start + bs).min(e.offset + e.len);
        let (read_offset, read_len, skip) = if e.direct {
            let end = need_end.div_ceil(ALIGN as u64) * ALIGN as u64;
            (start, (end - start) as usize, (need_start - start) as usize)
        } else {
            (need_start, (need_end - need_start) as usize, 0)
        };
        Chunk {
            index: j,
            file: e.file,
            extent: e.extent,
            stream_offset: e.stream_start + (need_start - e.offset),
            extent_offset: need_start - e.offset,
            len: (need_end - need_start) as usize,
            read_offset,
            read_len,
            skip,
            extent_end: e.offset + e.len,
        }
    }
}

/// A filled buffer on its way to a worker; `buf` is `None` for reads of a mapped file, whose
/// bytes are the mapping's: then `run` consecutive reads from `chunk` on (one queue hand-over,
/// one message batch, for up to [`MAPPED_RUN`] reads).
#[derive(Debug)]
pub(crate) struct Filled {
    pub(crate) chunk: Chunk,
    pub(crate) buf: Option<PoolBuf>,
    pub(crate) run: usize,
}

/// Most reads of a mapped file handed to a worker at once. A mapped read costs no I/O, so the
/// per-read hand-offs (queue push and pop, a wake-up of the sink per message) were a visible
/// share of a warm scan; the reads themselves keep the block size, so the partials, and the
/// float folds, are the same as for a cold run. 8 reads of 1 MiB are one release granule.
const MAPPED_RUN: usize = 8;

/// What a worker sends the calling thread: the partial of block `key` (`2j` for the seam record
/// that read `j`'s head completes, `2j + 1` for read `j`'s body), or `None` where that block does
/// not exist. Every key below `2 × reads` is sent exactly once. Workers send them in batches
/// (`Vec<Message>`: one read's, or one mapped run's).
pub(crate) type Message<P> = (usize, Option<P>);

/// Figures one compute worker (or sync thread) gathers.
#[derive(Debug, Default)]
pub(crate) struct WorkerOut {
    pub(crate) busy_ns: u64,
    pub(crate) blocks: u64,
    pub(crate) seam_bytes: u64,
    pub(crate) user_copy_bytes: u64,
    pub(crate) spans: Vec<Span>,
}

/// Figures one I/O thread gathers.
#[derive(Debug, Default)]
pub(crate) struct IoOut {
    pub(crate) busy_ns: u64,
    pub(crate) bytes_read: u64,
    pub(crate) page_cache_bytes: u64,
    pub(crate) mapped_bytes: u64,
    pub(crate) spans: Vec<Span>,
}

/// The claim gate of contract rule 3.
///
/// # Memory ordering
/// `emitted` and the cancel flag it is woken for are read and written under `lock`; the mutex
/// orders them. `Shared::next_read` is only ever incremented (`fetch_add`, Relaxed: it hands
/// each read index out once and orders nothing else; the bytes of a read travel with its buffer
/// through a [`Queue`], whose mutex orders them).
#[derive(Debug, Default)]
struct Gate {
    /// Reads whose partials are all handed to the sink.
    emitted: Mutex<usize>,
    moved: Condvar,
}

/// State every thread of one run shares.
pub(crate) struct Shared<'a, K: BlockKernel> {
    pub(crate) kernel: &'a K,
    layout: RecordLayout,
    stream_len: u64,
    pub(crate) map: ChunkMap,
    pub(crate) files: Vec<OpenFile>,
    /// Per file: when its mapped pages leave the resident set (`None` for a file not mapped).
    granules: Vec<Option<Granules>>,
    assembler: Assembler,
    next_read: AtomicUsize,
    window: usize,
    gate: Gate,
    /// Set once, by the first failure.
    ///
    /// # Memory ordering
    /// Release in [`Shared::fail`] after the error is stored, Acquire in
    /// [`Shared::is_cancelled`]: a thread that sees the flag sees the stored error. The flag is a
    /// hint to stop early; correctness never depends on seeing it at once.
    cancelled: AtomicBool,
    failure: Mutex<Option<IoError>>,
    pub(crate) pool: Arc<BufPool>,
    pub(crate) filled: Queue<Filled>,
    progress: Option<&'a AtomicU64>,
    inject: Option<u64>,
    start: Instant,
    pub(crate) tracing: bool,
}

impl<K: BlockKernel> std::fmt::Debug for Shared<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("reads", &self.map.total).finish_non_exhaustive()
    }
}

impl<K: BlockKernel> Shared<'_, K> {
    /// Nanoseconds since the run started.
    pub(crate) fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Returns true if and only if the run has failed and threads should stop.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Records `error` if it is the first, and stops the run (contract rule 4).
    pub(crate) fn fail(&self, error: IoError) {
        {
            let mut slot = self.failure.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some(error);
            }
        }
        self.cancelled.store(true, Ordering::Release);
        self.pool.close();
        // Taking the gate's lock before notifying means a claimer between its check of the flag
        // and its wait cannot miss this wake-up.
        drop(self.gate.emitted.lock().unwrap_or_else(|p| p.into_inner()));
        self.gate.moved.notify_all();
    }

    fn take_failure(&self) -> Option<IoError> {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// The next read, waiting at the gate if `wait` (rule 3). `Err(())` when the gate is shut
    /// and `wait` is false; `Ok(None)` when no read is left or the run is cancelled.
    pub(crate) fn claim(&self, wait: bool) -> Result<Option<Chunk>, ()> {
        let mut emitted = self.gate.emitted.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.is_cancelled() {
                return Ok(None);
            }
            let next = self.next_read.load(Ordering::Relaxed);
            if next >= self.map.total {
                return Ok(None);
            }
            if next < *emitted + self.window {
                break;
            }
            if !wait {
                return Err(());
            }
            emitted = self.gate.moved.wait(emitted).unwrap_or_else(|p| p.into_inner());
        }
        drop(emitted);
        let j = self.next_read.fetch_add(1, Ordering::Relaxed);
        Ok((j < self.map.total).then(|| self.map.chunk(j)))
    }

    /// The injected error for a read of `chunk`, if it covers the injected offset (rule 6).
    pub(crate) fn injected(&self, chunk: &Chunk) -> Option<IoError> {
        let at = self.inject?;
        (chunk.stream_offset <= at && at < chunk.stream_offset + chunk.len as u64).then(|| {
            IoError::Read {
                path: self.files[chunk.file].path.clone(),
                offset: chunk.read_offset,
                len: chunk.read_len,
                source: std::io::Error::from_raw_os_error(libc::EIO),
            }
        })
    }

    /// The short-read error for `chunk` when a read at `offset` found the file's end. Reports
    /// where the file ends now (it may have shrunk below `offset`; an O_DIRECT read past the end
    /// reports its own aligned start otherwise).
    pub(crate) fn short_read(&self, chunk: &Chunk, offset: u64) -> IoError {
        let file = &self.files[chunk.file];
        let end = file.file.metadata().map_or(offset, |m| m.len().min(offset));
        IoError::ShortRead { path: file.path.clone(), offset: end, expected: chunk.extent_end }
    }

    /// Reads `chunk` into `buf` with pread, resuming short reads. Returns the bytes read.
    pub(crate) fn pread(&self, chunk: &Chunk, buf: &mut [u8]) -> Result<usize, IoError> {
        if let Some(e) = self.injected(chunk) {
            return Err(e);
        }
        let file = &self.files[chunk.file];
        let need = chunk.skip + chunk.len;
        let mut done = 0usize;
        while done < need {
            let at = chunk.read_offset + done as u64;
            match file.file.read_at(&mut buf[done..chunk.read_len], at) {
                Ok(0) => return Err(self.short_read(chunk, at)),
                Ok(n) => {
                    done += n;
                    if file.direct && done < need && done % ALIGN != 0 {
                        return Err(self.short_read(chunk, chunk.read_offset + done as u64));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(IoError::Read {
                        path: file.path.clone(),
                        offset: at,
                        len: chunk.read_len - done,
                        source,
                    });
                }
            }
        }
        Ok(done)
    }

    /// Runs the kernel on the whole records of read `chunk` in place and deposits its ends with
    /// the assembler. Sends the body's message; returns what the deposit applied, for
    /// [`Shared::compute_seams`] (to run after the buffer is given back).
    pub(crate) fn compute_read(
        &self,
        chunk: &Chunk,
        data: &[u8],
        outbox: &mut Vec<Message<K::Partial>>,
        out: &mut WorkerOut,
    ) -> Result<Vec<Applied>, IoError> {
        debug_assert_eq!(data.len(), chunk.len);
        let pos = chunk.pos();
        let mut applied = Vec::new();
        let body = match cut(self.layout, chunk.stream_offset, data, self.stream_len) {
            Cut::Split { head_end, tail_start } => {
                let head = Piece { bytes: Cow::Borrowed(&data[..head_end]), pos };
                let tail =
                    Piece { bytes: Cow::Borrowed(&data[tail_start..]), pos: pos.plus(tail_start) };
                out.user_copy_bytes += self.assembler.deposit(
                    chunk.index,
                    Fragment::Split { head, tail },
                    &mut applied,
                );
                Some((head_end, tail_start)).filter(|(h, t)| h < t)
            }
            Cut::Inside => {
                let piece = Piece { bytes: Cow::Borrowed(data), pos };
                out.user_copy_bytes +=
                    self.assembler.deposit(chunk.index, Fragment::Inside(piece), &mut applied);
                None
            }
        };
        let partial = match body {
            Some((h, t)) => {
                let at = pos.plus(h);
                let block = Block {
                    data: &data[h..t],
                    stream_offset: at.stream_offset,
                    extent: at.extent,
                    extent_offset: at.extent_offset,
                    is_seam: false,
                };
                out.blocks += 1;
                Some(call(self.kernel, &block)?)
            }
            None => None,
        };
        outbox.push((2 * chunk.index + 1, partial));
        Ok(applied)
    }

    /// Runs the kernel on the seam records `applied` completed and sends their messages.
    pub(crate) fn compute_seams(
        &self,
        applied: Vec<Applied>,
        outbox: &mut Vec<Message<K::Partial>>,
        out: &mut WorkerOut,
    ) -> Result<(), IoError> {
        for Applied { read, record } in applied {
            let partial = match record {
                Some(SeamRecord { bytes, pos, pieces }) => {
                    if pieces > 1 {
                        out.seam_bytes += bytes.len() as u64;
                    } else {
                        out.user_copy_bytes += bytes.len() as u64;
                    }
                    let block = Block {
                        data: &bytes,
                        stream_offset: pos.stream_offset,
                        extent: pos.extent,
                        extent_offset: pos.extent_offset,
                        is_seam: pieces > 1,
                    };
                    out.blocks += 1;
                    Some(call(self.kernel, &block)?)
                }
                None => None,
            };
            outbox.push((2 * read, partial));
        }
        Ok(())
    }

    /// If `chunk`'s file is mapped, hands the chunk, and up to [`MAPPED_RUN`] − 1 reads right
    /// after it in the same file, to the workers as slices of the mapping (no read, no copy) and
    /// returns true.
    pub(crate) fn hand_over_mapped(&self, chunk: &Chunk, out: &mut IoOut) -> bool {
        if self.files[chunk.file].map.is_none() {
            return false;
        }
        let mut run = 1;
        let mut bytes = chunk.len as u64;
        while run < MAPPED_RUN {
            let Some(next) = self.claim_following(chunk.index + run - 1, chunk.file) else {
                break;
            };
            bytes += next.len as u64;
            run += 1;
        }
        out.bytes_read += bytes;
        out.mapped_bytes += bytes;
        self.filled.push(Filled { chunk: *chunk, buf: None, run });
        true
    }

    /// Claims read `prev + 1` if it is the next unclaimed read, is of file `file`, carries no
    /// injected fault (left to the caller's checked path), and the gate is open for it (rule 3);
    /// never waits.
    fn claim_following(&self, prev: usize, file: usize) -> Option<Chunk> {
        let j = prev + 1;
        if j >= self.map.total || self.is_cancelled() {
            return None;
        }
        let chunk = self.map.chunk(j);
        if chunk.file != file || self.injected(&chunk).is_some() {
            return None;
        }
        let emitted = self.gate.emitted.lock().unwrap_or_else(|p| p.into_inner());
        if j >= *emitted + self.window {
            return None;
        }
        drop(emitted);
        self.next_read
            .compare_exchange(j, j + 1, Ordering::Relaxed, Ordering::Relaxed)
            .ok()
            .map(|_| chunk)
    }

    /// The plan's bytes of `chunk` in `buf`, or in the file's mapping when `buf` is `None`.
    pub(crate) fn data<'b>(&'b self, chunk: &Chunk, buf: Option<&'b PoolBuf>) -> &'b [u8] {
        match (buf, &self.files[chunk.file].map) {
            (Some(b), _) => &b.bytes()[chunk.skip..chunk.skip + chunk.len],
            (None, Some(m)) => {
                let at = chunk.read_offset as usize;
                m.populate(at, chunk.len);
                &m.bytes()[at..at + chunk.len]
            }
            (None, None) => unreachable!("a read without a buffer is of a mapped file"),
        }
    }

    /// Adds a finished read to the progress counter.
    pub(crate) fn finished(&self, chunk: &Chunk) {
        if let Some(p) = self.progress {
            p.fetch_add(chunk.len as u64, Ordering::Relaxed);
        }
    }
}

/// Runs the kernel, turning a panic into [`IoError::Panicked`].
fn call<K: BlockKernel>(kernel: &K, block: &Block<'_>) -> Result<K::Partial, IoError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| kernel.process(block)))
        .map_err(|payload| IoError::Panicked(format!("kernel: {}", panic_message(&*payload))))
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Stops the run if the thread it lives on unwinds (a bug outside the kernel).
pub(crate) struct PanicGuard<'s, 'a, K: BlockKernel> {
    pub(crate) shared: &'s Shared<'a, K>,
    pub(crate) what: &'static str,
}

impl<K: BlockKernel> Drop for PanicGuard<'_, '_, K> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.fail(IoError::Panicked(format!("{} thread", self.what)));
        }
    }
}

/// Closes the filled queue when the last I/O thread ends, however it ends.
struct IoExit<'s, 'a, K: BlockKernel> {
    shared: &'s Shared<'a, K>,
    live: &'s AtomicUsize,
}

impl<K: BlockKernel> Drop for IoExit<'_, '_, K> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.fail(IoError::Panicked("I/O thread".into()));
        }
        // AcqRel: the last thread out sees every other thread's exit before closing.
        if self.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.filled.close();
        }
    }
}

/// What an engine hands back.
pub(crate) struct EngineOut {
    pub(crate) backend: &'static str,
    pub(crate) fallback_reason: Option<String>,
    pub(crate) queue_depth: usize,
    pub(crate) io: Vec<IoOut>,
    pub(crate) workers: Vec<WorkerOut>,
    pub(crate) threads: Vec<(u64, String)>,
}

/// Trace `tid` of compute worker `w`.
pub(crate) fn worker_tid(w: usize) -> u64 {
    100 + w as u64
}

/// Trace `tid` of I/O thread `t` (pread) or of slot `slot` of its ring (io_uring).
fn io_tid(t: usize, slot: Option<usize>) -> u64 {
    match slot {
        None => 1 + t as u64,
        Some(s) => 1000 * (t as u64 + 1) + s as u64,
    }
}

/// Reads the whole plan and hands the partials to `sink` in stream order (contract rules 1-6).
pub(crate) fn run_ordered<K, F>(
    config: &Config,
    plan: &Plan,
    kernel: &K,
    mut sink: F,
) -> Result<RunStats, IoError>
where
    K: BlockKernel,
    F: FnMut(K::Partial),
{
    let start = Instant::now();
    let s = Settings::resolve(config)?;
    let budget = config.budget.clone().unwrap_or_else(|| {
        Budget::new(crate::memory::default_budget()).unwrap_or_else(|_| Budget::unlimited())
    });
    let allow_map = s.engine == Engine::Ioc
        && config.mmap
        && std::env::var("SLUICE_NO_MMAP").map_or(true, |v| v != "1");
    let (files, of_extent) = open_files(plan, s.direct, allow_map)?;
    let map = ChunkMap::new(plan, &files, &of_extent, s.block_size);
    let reads = map.total();
    let granules = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let m = f.map.as_ref()?;
            let mine = (0..reads).map(|j| map.chunk(j)).filter(|c| c.file == i);
            Some(Granules::new(m.len() as u64, mine.map(|c| (c.read_offset, c.len as u64))))
        })
        .collect();
    let full = match s.engine {
        Engine::Ioc => {
            let base = s.queue_depth * s.io_threads + s.workers;
            let with_slack = base + s.queue_depth * s.io_threads;
            if (with_slack as u64).saturating_mul(s.block_size as u64) <= budget.available() / 4 {
                with_slack
            } else {
                base
            }
        }
        Engine::Sync => s.workers,
    };
    let buffers = full.min(reads + s.workers).max(1);
    let bytes = (buffers as u64).saturating_mul(s.block_size as u64);
    let _reservation = budget
        .reserve(&format!("the buffer pool ({buffers} blocks of {} bytes)", s.block_size), bytes)?;
    let pool = BufPool::new(s.block_size, buffers).map_err(|e| IoError::OverBudget {
        what: format!("the buffer pool ({e})"),
        needed: bytes,
        available: budget.available(),
        budget: budget.total(),
    })?;
    let shared = Shared {
        kernel,
        layout: plan.layout(),
        stream_len: plan.total_len(),
        map,
        files,
        granules,
        assembler: Assembler::default(),
        next_read: AtomicUsize::new(0),
        window: 2 * buffers.max(16),
        gate: Gate::default(),
        cancelled: AtomicBool::new(false),
        failure: Mutex::new(None),
        pool,
        filled: Queue::new(),
        progress: config.progress.as_deref(),
        inject: s.inject,
        start,
        tracing: config.trace.is_some(),
    };
    let (tx, rx) = mpsc::channel::<Vec<Message<K::Partial>>>();
    let mut sink_panic = None;
    let out = std::thread::scope(|scope| {
        let engine =
            std::thread::Builder::new().name("sluice-engine".into()).spawn_scoped(scope, || {
                let tx = tx;
                match s.engine {
                    Engine::Ioc => run_ioc(&shared, &s, &tx),
                    Engine::Sync => crate::sync_engine::run(&shared, &s, &tx),
                }
            });
        let engine = match engine {
            Ok(h) => h,
            Err(e) => {
                return Err(IoError::Panicked(format!("cannot start the engine thread: {e}")));
            }
        };
        // The calling thread is the sink's: a reorder buffer over the keys of `Message`.
        let mut pending: BTreeMap<usize, Option<K::Partial>> = BTreeMap::new();
        let mut next_key = 0usize;
        for (key, partial) in rx.iter().flatten() {
            pending.insert(key, partial);
            let before = next_key;
            while let Some(p) = pending.remove(&next_key) {
                next_key += 1;
                if let Some(p) = p {
                    if sink_panic.is_none() {
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink(p)));
                        if let Err(payload) = r {
                            shared.fail(IoError::Panicked(format!(
                                "sink: {}",
                                panic_message(&*payload)
                            )));
                            sink_panic = Some(payload);
                        }
                    }
                }
            }
            if next_key / 2 != before / 2 {
                let mut emitted = shared.gate.emitted.lock().unwrap_or_else(|p| p.into_inner());
                *emitted = next_key / 2;
                drop(emitted);
                shared.gate.moved.notify_all();
            }
        }
        let out = engine.join().map_err(|p| IoError::Panicked(panic_message(&*p)))?;
        if next_key != 2 * reads && !shared.is_cancelled() {
            return Err(IoError::Panicked(format!(
                "internal: {next_key} of {} block messages arrived",
                2 * reads
            )));
        }
        Ok(out)
    });
    if let Some(payload) = sink_panic {
        std::panic::resume_unwind(payload);
    }
    if let Some(e) = shared.take_failure() {
        return Err(e);
    }
    let out = out?;
    debug_assert!(shared.assembler.is_complete(reads));
    let stats = finish_stats(&shared, &s, out, config, start)?;
    Ok(stats)
}

fn finish_stats<K: BlockKernel>(
    shared: &Shared<'_, K>,
    s: &Settings,
    out: EngineOut,
    config: &Config,
    start: Instant,
) -> Result<RunStats, IoError> {
    let seconds = start.elapsed().as_secs_f64();
    let bytes_read: u64 = out.io.iter().map(|o| o.bytes_read).sum();
    let copies = Copies {
        seam_bytes: out.workers.iter().map(|w| w.seam_bytes).sum(),
        user_copy_bytes: out.workers.iter().map(|w| w.user_copy_bytes).sum(),
        page_cache_bytes: out.io.iter().map(|o| o.page_cache_bytes).sum(),
    };
    if let Some(path) = &config.trace {
        let mut spans: Vec<Span> = out.io.iter().flat_map(|o| o.spans.iter().cloned()).collect();
        spans.extend(out.workers.iter().flat_map(|w| w.spans.iter().cloned()));
        spans.sort_by_key(|s| (s.start_ns, s.tid));
        crate::trace::write(path, &out.threads, &spans)?;
    }
    Ok(RunStats {
        engine: match s.engine {
            Engine::Ioc => "ioc",
            Engine::Sync => "sync",
        }
        .into(),
        backend: out.backend.into(),
        fallback_reason: out.fallback_reason,
        direct: match s.direct {
            DirectMode::Auto => "auto",
            DirectMode::Always => "always",
            DirectMode::Never => "never",
        }
        .into(),
        files: shared
            .files
            .iter()
            .map(|f| FileAccess {
                path: f.path.clone(),
                direct: f.direct,
                cached_fraction: f.cached_fraction,
                reason: f.reason.clone(),
                mapped: f.map.is_some(),
            })
            .collect(),
        bytes_read,
        mapped_bytes: out.io.iter().map(|o| o.mapped_bytes).sum(),
        seconds,
        bandwidth_bytes_per_s: bytes_read as f64 / seconds.max(1e-9),
        block_size: s.block_size,
        queue_depth: out.queue_depth,
        io_busy_seconds: out.io.iter().map(|o| o.busy_ns as f64 / 1e9).collect(),
        compute_busy_seconds: out.workers.iter().map(|w| w.busy_ns as f64 / 1e9).collect(),
        blocks_per_worker: out.workers.iter().map(|w| w.blocks).collect(),
        copies,
    })
}

/// The IOC engine: I/O threads fill buffers, workers compute on them in completion order.
fn run_ioc<K: BlockKernel>(
    shared: &Shared<'_, K>,
    s: &Settings,
    tx: &mpsc::Sender<Vec<Message<K::Partial>>>,
) -> EngineOut {
    let no_uring = std::env::var("SLUICE_NO_URING").is_ok_and(|v| v == "1");
    let (rings, fallback_reason) = match s.backend {
        Backend::Pread => (None, Some("pread backend chosen".to_string())),
        _ if no_uring => (None, Some("SLUICE_NO_URING=1".to_string())),
        _ => match (0..s.io_threads).map(|_| Ring::new(s.queue_depth as u32)).collect() {
            Ok(rings) => (Some::<Vec<Ring>>(rings), None),
            Err(e) if s.backend == Backend::Uring => {
                shared.fail(IoError::UringUnavailable(e));
                (None, None)
            }
            Err(e) => (None, Some(format!("io_uring setup failed: {e}"))),
        },
    };
    let uring = rings.is_some();
    let io_count = match &rings {
        Some(r) => r.len(),
        None => (s.io_threads * s.queue_depth).clamp(1, MAX_PREAD_THREADS),
    };
    let mut threads = Vec::new();
    for t in 0..io_count {
        if uring {
            (0..s.queue_depth).for_each(|slot| {
                threads.push((io_tid(t, Some(slot)), format!("sluice-io-{t} slot {slot}")))
            });
        } else {
            threads.push((io_tid(t, None), format!("sluice-io-{t}")));
        }
    }
    (0..s.workers).for_each(|w| threads.push((worker_tid(w), format!("sluice-worker-{w}"))));
    if shared.is_cancelled() {
        shared.filled.close();
        return EngineOut {
            backend: "io_uring",
            fallback_reason,
            queue_depth: s.queue_depth,
            io: Vec::new(),
            workers: Vec::new(),
            threads,
        };
    }
    let live = AtomicUsize::new(io_count);
    let (io, workers) = std::thread::scope(|scope| {
        let mut io_handles = Vec::new();
        let mut rings = rings.map(|r| r.into_iter());
        for t in 0..io_count {
            let exit = IoExit { shared, live: &live };
            let ring = rings.as_mut().and_then(|r| r.next());
            let h = std::thread::Builder::new().name(format!("sluice-io-{t}")).spawn_scoped(
                scope,
                move || {
                    let _exit = exit;
                    match ring {
                        Some(ring) => uring_thread(shared, t, ring),
                        None => pread_thread(shared, t),
                    }
                },
            );
            match h {
                Ok(h) => io_handles.push(h),
                // The closure, and with it `exit`, was dropped: `live` stays right.
                Err(e) => {
                    shared.fail(IoError::Panicked(format!("cannot start an I/O thread: {e}")))
                }
            }
        }
        let mut worker_handles = Vec::new();
        for w in 0..s.workers {
            let tx = tx.clone();
            let h = std::thread::Builder::new()
                .name(format!("sluice-worker-{w}"))
                .spawn_scoped(scope, move || worker_thread(shared, w, &tx));
            match h {
                Ok(h) => worker_handles.push(h),
                Err(e) => shared.fail(IoError::Panicked(format!("cannot start a worker: {e}"))),
            }
        }
        if worker_handles.is_empty() {
            // Nobody would drain the filled queue; I/O threads stop on the failure above.
            while shared.filled.pop().is_some() {}
        }
        let io: Vec<IoOut> = io_handles.into_iter().map(|h| joined(shared, h.join())).collect();
        let workers: Vec<WorkerOut> =
            worker_handles.into_iter().map(|h| joined(shared, h.join())).collect();
        (io, workers)
    });
    EngineOut {
        backend: if uring { "io_uring" } else { "pread" },
        fallback_reason,
        queue_depth: s.queue_depth,
        io,
        workers,
        threads,
    }
}

/// The value of a joined thread, or the default after recording its panic.
pub(crate) fn joined<K: BlockKernel, T: Default>(
    shared: &Shared<'_, K>,
    result: std::thread::Result<T>,
) -> T {
    result.map_err(|p| shared.fail(IoError::Panicked(panic_message(&*p)))).unwrap_or_default()
}

/// A compute worker: pops filled buffers in completion order until the queue closes.
fn worker_thread<K: BlockKernel>(
    shared: &Shared<'_, K>,
    w: usize,
    tx: &mpsc::Sender<Vec<Message<K::Partial>>>,
) -> WorkerOut {
    let _guard = PanicGuard { shared, what: "compute worker" };
    let mut out = WorkerOut::default();
    let mut outbox = Vec::new();
    while let Some(Filled { chunk: first, buf, run }) = shared.filled.pop() {
        if shared.is_cancelled() {
            continue; // drops `buf`: it goes home
        }
        let mut buf = buf;
        for index in first.index..first.index + run {
            let chunk = if index == first.index { first } else { shared.map.chunk(index) };
            let t0 = shared.now_ns();
            let data = shared.data(&chunk, buf.as_ref());
            let result = shared.compute_read(&chunk, data, &mut outbox, &mut out);
            match (buf.take(), &shared.files[chunk.file].map) {
                // Keep the resident set within the budget: pages leave it a granule at a time,
                // once every block in the granule is done (resident.rs).
                (None, Some(map)) => {
                    if let Some(g) = &shared.granules[chunk.file] {
                        g.finish(chunk.read_offset, chunk.len as u64, |at, len| {
                            map.release(at as usize, len as usize)
                        });
                    }
                }
                (buf, _) => drop(buf),
            }
            let result =
                result.and_then(|applied| shared.compute_seams(applied, &mut outbox, &mut out));
            let t1 = shared.now_ns();
            out.busy_ns += t1 - t0;
            if shared.tracing {
                out.spans.push(Span {
                    name: "compute",
                    tid: worker_tid(w),
                    start_ns: t0,
                    dur_ns: t1 - t0,
                    chunk: chunk.index,
                });
            }
            match result {
                Ok(()) => shared.finished(&chunk),
                Err(e) => {
                    shared.fail(e);
                    break;
                }
            }
        }
        if !outbox.is_empty() {
            let _ = tx.send(std::mem::take(&mut outbox));
        }
    }
    out
}

/// A pread I/O thread (the fallback): one read in flight.
fn pread_thread<K: BlockKernel>(shared: &Shared<'_, K>, t: usize) -> IoOut {
    let mut out = IoOut::default();
    while let Some(mut buf) = shared.pool.acquire() {
        let Ok(Some(chunk)) = shared.claim(true) else { break };
        if let Some(e) = shared.injected(&chunk) {
            shared.fail(e);
            break;
        }
        if shared.hand_over_mapped(&chunk, &mut out) {
            continue;
        }
        let t0 = shared.now_ns();
        let result = shared.pread(&chunk, buf.bytes_mut());
        let t1 = shared.now_ns();
        out.busy_ns += t1 - t0;
        match result {
            Ok(n) => {
                out.bytes_read += n as u64;
                if !shared.files[chunk.file].direct {
                    out.page_cache_bytes += n as u64;
                }
                if shared.tracing {
                    out.spans.push(Span {
                        name: "read",
                        tid: io_tid(t, None),
                        start_ns: t0,
                        dur_ns: t1 - t0,
                        chunk: chunk.index,
                    });
                }
                shared.filled.push(Filled { chunk, buf: Some(buf), run: 1 });
            }
            Err(e) => {
                shared.fail(e);
                break;
            }
        }
    }
    out
}

/// An io_uring I/O thread: keeps up to `queue_depth` reads in flight, submitting each batch with
/// one system call, and pushes each filled buffer as its read completes.
fn uring_thread<K: BlockKernel>(shared: &Shared<'_, K>, t: usize, mut ring: Ring) -> IoOut {
    let mut out = IoOut::default();
    let mut done = Vec::new();
    let mut exhausted = false;
    let mut busy_since: Option<u64> = None;
    'run: loop {
        if shared.is_cancelled() {
            break;
        }
        // Fill the ring. Wait for a buffer or at the gate only with nothing in flight: a thread
        // blocked with reads in flight could never reap them (and so never free a buffer).
        while !exhausted && ring.has_room() {
            let idle = ring.inflight() == 0;
            let buf = if idle { shared.pool.acquire() } else { shared.pool.try_acquire() };
            let Some(buf) = buf else {
                exhausted |= idle; // `acquire` returns None only on a cancelled run
                break;
            };
            let chunk = match shared.claim(idle) {
                Ok(Some(chunk)) => chunk,
                Ok(None) => {
                    exhausted = true;
                    break;
                }
                Err(()) => break,
            };
            if let Some(e) = shared.injected(&chunk) {
                shared.fail(e);
                break 'run;
            }
            if shared.hand_over_mapped(&chunk, &mut out) {
                continue; // drops `buf`: a mapped read needs none
            }
            let file = shared.files[chunk.file].file.clone();
            let now = shared.now_ns();
            let op = ReadOp {
                file,
                buf,
                offset: chunk.read_offset,
                done: 0,
                len: chunk.read_len,
                tag: chunk.index,
                submitted_ns: now,
            };
            if ring.push(op).is_err() {
                shared
                    .fail(IoError::Config(format!("cannot queue a {}-byte read", chunk.read_len)));
                break 'run;
            }
            busy_since.get_or_insert(now);
        }
        if ring.inflight() == 0 {
            if exhausted {
                break;
            }
            continue;
        }
        if let Err(e) = ring.submit_and_wait(1) {
            shared.fail(IoError::Uring(e));
            break;
        }
        ring.reap(&mut done);
        for (mut op, res, slot) in done.drain(..) {
            let chunk = shared.map.chunk(op.tag);
            let file = &shared.files[chunk.file];
            if res < 0 {
                shared.fail(IoError::Read {
                    path: file.path.clone(),
                    offset: op.offset + op.done as u64,
                    len: op.len - op.done,
                    source: std::io::Error::from_raw_os_error(-res),
                });
                continue;
            }
            let n = res as usize;
            op.done += n;
            out.bytes_read += n as u64;
            if !file.direct {
                out.page_cache_bytes += n as u64;
            }
            let need = chunk.skip + chunk.len;
            if op.done >= need {
                if shared.tracing {
                    let now = shared.now_ns();
                    out.spans.push(Span {
                        name: "read",
                        tid: io_tid(t, Some(slot)),
                        start_ns: op.submitted_ns,
                        dur_ns: now - op.submitted_ns,
                        chunk: chunk.index,
                    });
                }
                shared.filled.push(Filled { chunk, buf: Some(op.buf), run: 1 });
            } else if n == 0 || (file.direct && op.done % ALIGN != 0) || op.done >= op.len {
                shared.fail(shared.short_read(&chunk, op.offset + op.done as u64));
            } else if ring.push(op).is_err() {
                shared.fail(IoError::Config("cannot requeue a short read".into()));
            }
        }
        if ring.inflight() == 0 {
            if let Some(since) = busy_since.take() {
                out.busy_ns += shared.now_ns() - since;
            }
        }
    }
    drop(ring); // waits for reads in flight (uring.rs rule 3)
    if let Some(since) = busy_since {
        out.busy_ns += shared.now_ns() - since;
    }
    out
}
