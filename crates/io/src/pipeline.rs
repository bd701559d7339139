//! The engines behind [`Pipeline::run_ordered`](crate::Pipeline::run_ordered): the IOC engine
//! (I/O threads and compute workers joined by two queues of pool buffers) and the `sync` baseline
//! (`pipeline/sync.rs`). The life cycle of a block and the shutdown protocol are written up in
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
//!    budget before any thread starts; over budget is [`Error::OverBudget`] and no read is
//!    made. The slack only changes speed, never results: an I/O thread refills its ring right
//!    after reaping, when the buffers it just reaped are still with the workers; completions
//!    arrive in bursts of up to a queue's worth, and without a spare buffer per slot a `--trace`
//!    showed only 20–26 of 32 reads in flight (32.0 with the slack). When the pool does not fit
//!    what is left of the budget (with the smallest reorder window of rule 8), the defaults
//!    shrink (queue depth down to 2, then block size down to 64 KiB; a value the user set never
//!    changes) before the run is refused, so small inputs run under small budgets (issue 16
//!    item 5).
//! 6. A read covering the stream offset given to `inject_read_error` (or in the environment
//!    variable `SLUICE_INJECT_READ_ERROR`) fails with `EIO`, in every engine and backend.
//! 7. Each file is read one way, decided once per run from [`DirectMode`] and its page-cache
//!    residency (`cachestat`, else `mincore`): `always`/`never` force O_DIRECT or buffered;
//!    `auto` reads a file with more than half its planned bytes cached buffered, and the IOC
//!    engine maps one with at least 90% cached (its blocks are slices of the page cache: no read,
//!    no copy); the rest goes O_DIRECT. A file system that refuses O_DIRECT (`EINVAL`) is read
//!    buffered. The decision and its reason are in [`RunStats::files`]. It never changes which
//!    blocks the kernel sees.
//! 8. The partials waiting in the reorder window are reserved too: `window ×`
//!    [`BlockKernel::partial_bytes`]`(block_size)`. The window is `2 × max(pool buffers, 16)`
//!    reads, fewer (down to `2 × workers`) when that does not fit what is left of the budget;
//!    a window of `2 × workers` that does not fit is [`Error::OverBudget`]. Without this, the
//!    partials a graph pass copies (its reads' edges and weights) held 30 MB beyond its
//!    reservations at scale 22 while the appliers lagged (issue 15, session 15).
//!
//! # Threads and costs
//! IOC: `io_threads` I/O threads `sluice-io-N` (io_uring), or `io_threads × queue_depth` pread
//! threads of the same name when io_uring is unavailable, plus `workers` compute threads
//! `sluice-worker-N`; all are scoped threads joined before `run_ordered` returns. Per read: one
//!
//! # Modules
//! - `settings`: the run's settings, every "choose" resolved and checked.
//! - `files`: opening the plan's files and choosing O_DIRECT, buffered or mapped reads (rule 7).
//! - `reads`: the plan cut into reads (rule 1).
//! - `gate`: the claim gate (rule 3) and the stop flag (rule 4), the protocol the loom model
//!   `tests/loom_gate.rs` checks.
//! - `shared`: the state all threads of a run share: claim gate (rule 3), first failure (rule 4),
//!   assembler, filled queue, and the per-read steps every engine takes.
//! - `ioc`: the IOC engine's I/O threads (io_uring or pread) and compute workers.
//! - `sync`: the `sync` baseline engine.
//!
//! This file runs a plan: it resolves the settings, opens the files, reserves the pool (rule 5),
//! starts the engine, hands the partials to the sink in stream order and gathers the figures.

mod files;
pub(crate) mod gate;
mod ioc;
mod reads;
mod settings;
mod shared;
mod sync;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Instant;

use crate::pool::BufPool;
use crate::queue::Queue;
use crate::resident::Granules;
use crate::stitch::Assembler;
use crate::trace::Span;
use crate::{
    BlockKernel, Budget, Config, Copies, DirectMode, Engine, Error, FileAccess, Plan, RunStats,
};

use files::open_files;
use gate::Gate;
use reads::ChunkMap;
use settings::Settings;
use shared::{EngineOut, Message, Shared, panic_message};

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
/// Largest block size (a read length must fit io_uring's `u32`).
pub const MAX_BLOCK_SIZE: usize = 1 << 30;

/// Buffers in the pool of a run of `reads` reads (rule 5): the slack of a second round of reads
/// only when it takes at most a quarter of `available` bytes.
fn pool_buffers(s: &Settings, reads: usize, available: u64) -> usize {
    let full = match s.engine {
        Engine::Ioc => {
            let base = s.queue_depth * s.io_threads + s.workers;
            let with_slack = base + s.queue_depth * s.io_threads;
            if (with_slack as u64).saturating_mul(s.block_size as u64) <= available / 4 {
                with_slack
            } else {
                base
            }
        }
        Engine::Sync => s.workers,
    };
    full.min(reads + s.workers).max(1)
}

/// Reads the whole plan and hands the partials to `sink` in stream order (contract rules 1-6).
/// The bytes of the largest buffer pool a run with `config` takes when its budget leaves room
/// (the defaults unshrunk, the slack included): what a caller that reserves memory beside the
/// pipeline must leave free so that rule 5 shrinks nothing (0 when the settings are invalid:
/// the run then fails on them anyway).
pub(crate) fn full_pool_bytes(config: &Config) -> u64 {
    Settings::resolve(config)
        .map_or(0, |s| pool_buffers(&s, usize::MAX / 2, u64::MAX) as u64 * s.block_size as u64)
}

pub(crate) fn run_ordered<K, F>(
    config: &Config,
    plan: &Plan,
    kernel: &K,
    mut sink: F,
) -> Result<RunStats, Error>
where
    K: BlockKernel,
    F: FnMut(K::Partial),
{
    let start = Instant::now();
    let mut s = Settings::resolve(config)?;
    let budget = config.budget.clone().unwrap_or_else(|| {
        Budget::new(crate::memory::default_budget()).unwrap_or_else(|_| Budget::unlimited())
    });
    let allow_map = s.engine == Engine::Ioc
        && config.mmap
        && std::env::var("SLUICE_NO_MMAP").map_or(true, |v| v != "1");
    let (files, of_extent) = open_files(plan, s.direct, allow_map)?;
    // Rule 5: the defaults shrink until the pool, and the smallest reorder window's partials
    // (rule 8), fit what is left of the budget.
    let mut map = ChunkMap::new(plan, &files, &of_extent, s.block_size);
    let need = |s: &Settings, reads: usize| {
        let pool = pool_buffers(s, reads, u64::MAX) as u64 * s.block_size as u64;
        pool.saturating_add((2 * s.workers) as u64 * kernel.partial_bytes(s.block_size))
    };
    while need(&s, map.total()) > budget.available() && s.shrink(config) {
        map = ChunkMap::new(plan, &files, &of_extent, s.block_size);
    }
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
    let buffers = pool_buffers(&s, reads, budget.available());
    let bytes = (buffers as u64).saturating_mul(s.block_size as u64);
    let reservation = budget
        .reserve(&format!("the buffer pool ({buffers} blocks of {} bytes)", s.block_size), bytes)?;
    // The pool keeps the reservation: buffers a kernel holds outlive the run (pool.rs rule 5).
    let pool = BufPool::reserved(s.block_size, buffers, Some(reservation)).map_err(|e| {
        Error::OverBudget {
            what: format!("the buffer pool ({e})"),
            needed: bytes,
            available: budget.available(),
            budget: budget.total(),
        }
    })?;
    // Rule 8: the partials the reorder window holds.
    let per_read = kernel.partial_bytes(s.block_size);
    let mut window = 2 * buffers.max(16);
    let least = (2 * s.workers).clamp(1, window);
    if let Some(fits) = budget.available().checked_div(per_read) {
        window = window.min(usize::try_from(fits).unwrap_or(usize::MAX)).max(least);
    }
    let _waiting = budget.reserve(
        &format!("partial results waiting for their turn ({window} reads)"),
        (window as u64).saturating_mul(per_read),
    )?;
    let shared = Shared {
        kernel,
        layout: plan.layout(),
        stream_len: plan.total_len(),
        map,
        files,
        granules,
        assembler: Assembler::default(),
        gate: Gate::new(reads, window),
        failure: Mutex::new(None),
        pool,
        budget: budget.clone(),
        filled: Queue::new(),
        progress: config.progress.as_deref(),
        cancel: config.cancel.as_deref(),
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
                    Engine::Ioc => ioc::run(&shared, &s, &tx),
                    Engine::Sync => sync::run(&shared, &s, &tx),
                }
            });
        let engine = match engine {
            Ok(h) => h,
            Err(e) => {
                return Err(Error::Panicked(format!("cannot start the engine thread: {e}")));
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
                if let Some(p) = p
                    && sink_panic.is_none()
                {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink(p)));
                    if let Err(payload) = r {
                        shared.fail(Error::Panicked(format!("sink: {}", panic_message(&*payload))));
                        sink_panic = Some(payload);
                    }
                }
            }
            if next_key / 2 != before / 2 {
                shared.gate.emitted(next_key / 2);
            }
        }
        let out = engine.join().map_err(|p| Error::Panicked(panic_message(&*p)))?;
        if next_key != 2 * reads && !shared.is_cancelled() {
            return Err(Error::Panicked(format!(
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
) -> Result<RunStats, Error> {
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
