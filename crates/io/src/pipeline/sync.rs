//! The `sync` engine, the baseline of the benchmarks (GridGraph's model: Zhu et al., USENIX ATC
//! 2015, §3): each of `workers` threads reads one block with `pread`, then computes on it, so
//! each thread has one request in flight and never overlaps its own I/O with its compute.
//!
//! # Contract
//! 1. It hands the kernel exactly the blocks the IOC engine does (same reads, same seams), so the
//!    two engines' outputs are identical; only the overlap differs.
//! 2. Each thread owns one pool buffer for the whole run; O_DIRECT and buffered reads are decided
//!    per file as for IOC, but no file is mapped: every byte is read with `pread`.
//! 3. Errors and shutdown follow `pipeline.rs` rule 4: the first error stops every thread at its
//!    next claim.

use std::sync::mpsc;

use crate::trace::Span;
use crate::{BlockKernel, Error};

use super::settings::Settings;
use super::shared::{EngineOut, IoOut, Message, PanicGuard, Shared, WorkerOut, joined, worker_tid};

/// Runs the plan with `s.workers` read-then-compute threads.
pub(super) fn run<K: BlockKernel>(
    shared: &Shared<'_, K>,
    s: &Settings,
    tx: &mpsc::Sender<Vec<Message<K::Partial>>>,
) -> EngineOut {
    let threads = (0..s.workers).map(|w| (worker_tid(w), format!("sluice-sync-{w}"))).collect();
    let outs: Vec<(IoOut, WorkerOut)> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for w in 0..s.workers {
            let tx = tx.clone();
            let h = std::thread::Builder::new()
                .name(format!("sluice-sync-{w}"))
                .spawn_scoped(scope, move || sync_thread(shared, w, &tx));
            match h {
                Ok(h) => handles.push(h),
                Err(e) => shared.fail(Error::Panicked(format!("cannot start a sync thread: {e}"))),
            }
        }
        handles.into_iter().map(|h| joined(shared, h.join())).collect()
    });
    let (io, workers) = outs.into_iter().unzip();
    EngineOut { backend: "pread", fallback_reason: None, queue_depth: 1, io, workers, threads }
}

fn sync_thread<K: BlockKernel>(
    shared: &Shared<'_, K>,
    w: usize,
    tx: &mpsc::Sender<Vec<Message<K::Partial>>>,
) -> (IoOut, WorkerOut) {
    let _guard = PanicGuard { shared, what: "sync" };
    let (mut io, mut out) = (IoOut::default(), WorkerOut::default());
    let Some(mut buf) = shared.pool.acquire() else { return (io, out) };
    let tid = worker_tid(w);
    while let Ok(Some(chunk)) = shared.claim(true) {
        let t0 = shared.now_ns();
        let read = shared.pread(&chunk, buf.bytes_mut());
        let t1 = shared.now_ns();
        io.busy_ns += t1 - t0;
        let n = match read {
            Ok(n) => n,
            Err(e) => {
                shared.fail(e);
                break;
            }
        };
        io.bytes_read += n as u64;
        if !shared.files[chunk.file].direct {
            io.page_cache_bytes += n as u64;
        }
        let data = &buf.bytes()[chunk.skip..chunk.skip + chunk.len];
        let mut outbox = Vec::with_capacity(2);
        shared.budget.hold_resident();
        let result = shared
            .compute_read(&chunk, data, None, &mut outbox, &mut out)
            .and_then(|applied| shared.compute_seams(applied, &mut outbox, &mut out));
        let _ = tx.send(outbox);
        let t2 = shared.now_ns();
        out.busy_ns += t2 - t1;
        if shared.tracing {
            io.spans.push(Span {
                name: "read",
                tid,
                start_ns: t0,
                dur_ns: t1 - t0,
                chunk: chunk.index,
            });
            out.spans.push(Span {
                name: "compute",
                tid,
                start_ns: t1,
                dur_ns: t2 - t1,
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
    (io, out)
}
