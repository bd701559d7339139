//! A stripe that fits the budget stays in memory: the first pass streams it through the block
//! pipeline and keeps a copy of every block; later passes hand the kernel the same blocks from
//! memory (issue 13: "a file that fits stays cached and the pass runs from memory"). That
//! spares each pass the pipeline's start, the mapping and unmapping of the file (a third of a
//! pass's CPU time on 1M × 10 f64 records: `time` shows 13 ms system time per pass), and the
//! page-cache copy.
//!
//! # Contract
//! 1. The blocks replayed are the first pass's, byte for byte, with the same stream offsets
//!    and seams, and their partials reach the sink in stream order: the same leaves of the
//!    canonical tree (`tree.rs`), so the same bits as a pass through the pipeline.
//! 2. The copy is reserved from the budget (the stripe's bytes) before the first pass, leaving
//!    the pipeline's whole pool free; when the budget cannot hold both, or
//!    `SLUICE_KMEANS_RESIDENT=0`, every pass streams.
//! 3. A replay runs on as many threads as the first pass's compute workers, takes blocks in
//!    order from a shared counter, and checks the pipeline's cancel flag between blocks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use sluice_io::{Block, BlockKernel, Budget, Pipeline, Reservation, RunStats};

use super::KmeansError;
use super::kernel::{BlockPartial, KmeansKernel};

#[cfg(test)]
thread_local! {
    /// Tests turn the copy off on their own thread (the environment is the process's).
    pub(super) static OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// One block as the pipeline handed it over.
#[derive(Debug)]
struct Kept {
    stream_offset: u64,
    extent: usize,
    extent_offset: u64,
    is_seam: bool,
    data: Vec<u8>,
}

/// The blocks of a stripe, once the first pass has filled them in.
#[derive(Debug)]
pub(crate) struct Resident {
    filling: Mutex<Vec<Kept>>,
    /// In stream order, once full; the compute workers of the first pass.
    full: Option<(Vec<Kept>, usize)>,
    _memory: Reservation,
}

impl Resident {
    /// Room for a stripe of `bytes`, if the budget holds it (rule 2).
    pub(crate) fn new(bytes: u64, budget: &Budget, pipeline: &Pipeline) -> Option<Resident> {
        if std::env::var_os("SLUICE_KMEANS_RESIDENT").is_some_and(|v| v == "0") || bytes == 0 {
            return None;
        }
        #[cfg(test)]
        if OFF.with(std::cell::Cell::get) {
            return None;
        }
        // The passes number blocks by the pipeline's block size: leave its whole pool free, so
        // that this copy never makes a pass shrink its blocks (sluice-io's pipeline rule 5).
        if budget.available() < bytes.saturating_add(pipeline.pool_bytes()) {
            return None;
        }
        let memory = budget.reserve("the k-means data kept in memory", bytes).ok()?;
        Some(Resident { filling: Mutex::new(Vec::new()), full: None, _memory: memory })
    }

    /// Runs a pass of `kernel`: through `run` (a pipeline pass over a recording kernel) the
    /// first time, from memory after that; partials go to `sink` in stream order.
    pub(crate) fn pass<S: FnMut(BlockPartial)>(
        &mut self,
        kernel: &KmeansKernel,
        pipeline: &Pipeline,
        sink: &mut S,
        run: impl FnOnce(&Recording<'_>, &mut S) -> Result<RunStats, KmeansError>,
    ) -> Result<RunStats, KmeansError> {
        if let Some((blocks, workers)) = &self.full {
            replay(blocks, *workers, kernel, pipeline, sink)?;
            return Ok(RunStats::default());
        }
        let filling = &self.filling;
        let record = |b: &Block<'_>| {
            let p = kernel.process(b);
            let kept = Kept {
                stream_offset: b.stream_offset,
                extent: b.extent,
                extent_offset: b.extent_offset,
                is_seam: b.is_seam,
                data: b.data.to_vec(),
            };
            filling.lock().unwrap_or_else(PoisonError::into_inner).push(kept);
            p
        };
        let stats = run(&Recording(&record), sink)?;
        let mut blocks =
            std::mem::take(&mut *filling.lock().unwrap_or_else(PoisonError::into_inner));
        blocks.sort_by_key(|b| (b.stream_offset, !b.is_seam));
        self.full = Some((blocks, stats.compute_busy_seconds.len().max(1)));
        Ok(stats)
    }
}

/// A kernel made of a closure, for the recording pass.
pub(crate) struct Recording<'a>(pub(crate) &'a (dyn Fn(&Block<'_>) -> BlockPartial + Sync));

impl BlockKernel for Recording<'_> {
    type Partial = BlockPartial;
    fn process(&self, block: &Block<'_>) -> BlockPartial {
        (self.0)(block)
    }
}

/// Rule 3: the kept blocks through `kernel` on `workers` threads, partials to `sink` in order.
fn replay(
    blocks: &[Kept],
    workers: usize,
    kernel: &KmeansKernel,
    pipeline: &Pipeline,
    sink: &mut impl FnMut(BlockPartial),
) -> Result<(), KmeansError> {
    let next = AtomicUsize::new(0);
    let run = || {
        let mut out = Vec::new();
        loop {
            // Relaxed: the counter hands out indices; the blocks are read-only.
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= blocks.len() || pipeline.cancel_requested() {
                return out;
            }
            let b = &blocks[i];
            let block = Block {
                data: &b.data,
                stream_offset: b.stream_offset,
                extent: b.extent,
                extent_offset: b.extent_offset,
                is_seam: b.is_seam,
            };
            out.push((i, kernel.process(&block)));
        }
    };
    let mut slots: Vec<Option<BlockPartial>> = (0..blocks.len()).map(|_| None).collect();
    std::thread::scope(|s| {
        let others: Vec<_> = (1..workers).map(|_| s.spawn(run)).collect();
        let mut all = run();
        for h in others {
            all.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        for (i, p) in all {
            slots[i] = Some(p);
        }
    });
    if pipeline.cancel_requested() {
        return Err(sluice_io::Error::Cancelled.into());
    }
    for p in slots {
        sink(p.expect("every block ran"));
    }
    Ok(())
}
