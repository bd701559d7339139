//! The IOC engine: I/O threads (io_uring, or pread threads as the fallback) fill pool buffers and
//! push them to the filled queue in completion order; compute workers pop them and run the
//! kernel in place. The protocol is `pipeline/README.md`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::pool::ALIGN;
use crate::trace::Span;
use crate::uring::{ReadOp, Ring};
use crate::{Backend, BlockKernel, Error};

use super::settings::Settings;
use super::shared::{
    EngineOut, Filled, IoOut, Message, PanicGuard, Shared, WorkerOut, joined, worker_tid,
};

/// Most pread threads the fallback starts (`io_threads × queue_depth`, capped).
const MAX_PREAD_THREADS: usize = 64;

/// The IOC engine: I/O threads fill buffers, workers compute on them in completion order.
pub(super) fn run<K: BlockKernel>(
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
                shared.fail(Error::UringUnavailable(e));
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
                Err(e) => shared.fail(Error::Panicked(format!("cannot start an I/O thread: {e}"))),
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
                Err(e) => shared.fail(Error::Panicked(format!("cannot start a worker: {e}"))),
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
        // Shared, so that the kernel may hold it past the block (pool.rs rule 5).
        let mut buf = buf.map(Arc::new);
        for index in first.index..first.index + run {
            let chunk = if index == first.index { first } else { shared.map.chunk(index) };
            let t0 = shared.now_ns();
            let data = shared.data(&chunk, buf.as_deref());
            shared.budget.hold_resident();
            let result = shared.compute_read(&chunk, data, buf.as_ref(), &mut outbox, &mut out);
            // A mapped read of a file that shrank saw zeros (sys.rs rule 3): an error.
            let result = result.and_then(|a| shared.files[chunk.file].check_mapping().map(|()| a));
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
                exhausted |= idle; // `acquire` returns None only on a cancelled or drained run
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
                shared.fail(Error::Submit {
                    path: shared.files[chunk.file].path.clone(),
                    offset: chunk.read_offset,
                    len: chunk.read_len,
                });
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
            shared.fail(Error::Uring(e));
            break;
        }
        ring.reap(&mut done);
        for (mut op, res, slot) in done.drain(..) {
            let chunk = shared.map.chunk(op.tag);
            let file = &shared.files[chunk.file];
            if res < 0 {
                shared.fail(Error::Read {
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
            } else {
                let (offset, len) = (op.offset + op.done as u64, op.len - op.done);
                if ring.push(op).is_err() {
                    shared.fail(Error::Submit { path: file.path.clone(), offset, len });
                }
            }
        }
        if ring.inflight() == 0
            && let Some(since) = busy_since.take()
        {
            out.busy_ns += shared.now_ns() - since;
        }
    }
    drop(ring); // waits for reads in flight (uring.rs rule 3)
    if let Some(since) = busy_since {
        out.busy_ns += shared.now_ns() - since;
    }
    out
}

/// Closes the filled queue when the last I/O thread ends, however it ends.
struct IoExit<'s, 'a, K: BlockKernel> {
    shared: &'s Shared<'a, K>,
    live: &'s AtomicUsize,
}

impl<K: BlockKernel> Drop for IoExit<'_, '_, K> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.fail(Error::Panicked("I/O thread".into()));
        }
        // AcqRel: the last thread out sees every other thread's exit before closing.
        if self.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.filled.close();
        }
    }
}

/// Trace `tid` of I/O thread `t` (pread) or of slot `slot` of its ring (io_uring).
fn io_tid(t: usize, slot: Option<usize>) -> u64 {
    match slot {
        None => 1 + t as u64,
        Some(s) => 1000 * (t as u64 + 1) + s as u64,
    }
}
