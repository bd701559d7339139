//! The state every thread of one run shares ([`Shared`]): the claim gate, the first failure, the
//! assembler and the filled queue, and the steps every engine takes on a read (claim, pread,
//! compute, hand over); plus what threads gather and engines hand back.

use std::borrow::Cow;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::pool::{ALIGN, BufPool, PoolBuf};
use crate::queue::Queue;
use crate::resident::Granules;
use crate::stitch::{Applied, Assembler, Cut, Fragment, Piece, SeamRecord, cut};
use crate::trace::Span;
use crate::{Block, BlockBuffer, BlockKernel, Error, RecordLayout};

use super::files::OpenFile;
use super::gate::Gate;
use super::reads::{Chunk, ChunkMap};

/// A filled buffer on its way to a worker; `buf` is `None` for reads of a mapped file, whose
/// bytes are the mapping's: then `run` consecutive reads from `chunk` on (one queue hand-over,
/// one message batch, for up to [`MAPPED_RUN`] reads).
#[derive(Debug)]
pub(super) struct Filled {
    pub(super) chunk: Chunk,
    pub(super) buf: Option<PoolBuf>,
    pub(super) run: usize,
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
pub(super) type Message<P> = (usize, Option<P>);

/// Figures one compute worker (or sync thread) gathers.
#[derive(Debug, Default)]
pub(super) struct WorkerOut {
    pub(super) busy_ns: u64,
    pub(super) blocks: u64,
    pub(super) seam_bytes: u64,
    pub(super) user_copy_bytes: u64,
    pub(super) spans: Vec<Span>,
}

/// Figures one I/O thread gathers.
#[derive(Debug, Default)]
pub(super) struct IoOut {
    pub(super) busy_ns: u64,
    pub(super) bytes_read: u64,
    pub(super) page_cache_bytes: u64,
    pub(super) mapped_bytes: u64,
    pub(super) spans: Vec<Span>,
}

/// State every thread of one run shares.
pub(super) struct Shared<'a, K: BlockKernel> {
    pub(super) kernel: &'a K,
    pub(super) layout: RecordLayout,
    pub(super) stream_len: u64,
    pub(super) map: ChunkMap,
    pub(super) files: Vec<OpenFile>,
    /// Per file: when its mapped pages leave the resident set (`None` for a file not mapped).
    pub(super) granules: Vec<Option<Granules>>,
    pub(super) assembler: Assembler,
    /// The claim gate (rule 3) and the stop flag, set once, by the first failure (rule 4).
    pub(super) gate: Gate,
    pub(super) failure: Mutex<Option<Error>>,
    pub(super) pool: Arc<BufPool>,
    /// The run's budget: workers hold the resident set within it (memory.rs rule 5).
    pub(super) budget: crate::Budget,
    pub(super) filled: Queue<Filled>,
    pub(super) progress: Option<&'a AtomicU64>,
    /// The caller's cancel flag ([`crate::PipelineBuilder::cancel`]), checked after every read.
    pub(super) cancel: Option<&'a AtomicBool>,
    pub(super) inject: Option<u64>,
    pub(super) start: Instant,
    pub(super) tracing: bool,
}

impl<K: BlockKernel> std::fmt::Debug for Shared<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("reads", &self.map.total()).finish_non_exhaustive()
    }
}

impl<K: BlockKernel> Shared<'_, K> {
    /// Nanoseconds since the run started.
    pub(super) fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Returns true if and only if the run has failed and threads should stop.
    pub(super) fn is_cancelled(&self) -> bool {
        self.gate.is_cancelled()
    }

    /// Records `error` if it is the first, and stops the run (contract rule 4).
    pub(super) fn fail(&self, error: Error) {
        {
            let mut slot = self.failure.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some(error);
            }
        }
        self.gate.cancel();
        self.pool.close();
        self.gate.wake();
    }

    pub(super) fn take_failure(&self) -> Option<Error> {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// The next read, waiting at the gate if `wait` (rule 3). `Err(())` when the gate is shut
    /// and `wait` is false; `Ok(None)` when no read is left or the run is cancelled.
    pub(super) fn claim(&self, wait: bool) -> Result<Option<Chunk>, ()> {
        let j = self.gate.claim(wait)?;
        if let Some(j) = j {
            self.claimed(j);
        }
        Ok(j.map(|j| self.map.chunk(j)))
    }

    /// After read `j` is claimed: the last claim drains the pool (`pool.rs` rule 5).
    fn claimed(&self, j: usize) {
        if j + 1 == self.map.total() {
            self.pool.drain();
        }
    }

    /// The injected error for a read of `chunk`, if it covers the injected offset (rule 6).
    pub(super) fn injected(&self, chunk: &Chunk) -> Option<Error> {
        let at = self.inject?;
        (chunk.stream_offset <= at && at < chunk.stream_offset + chunk.len as u64).then(|| {
            Error::Read {
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
    pub(super) fn short_read(&self, chunk: &Chunk, offset: u64) -> Error {
        let file = &self.files[chunk.file];
        let end = file.file.metadata().map_or(offset, |m| m.len().min(offset));
        Error::ShortRead { path: file.path.clone(), offset: end, expected: chunk.extent_end }
    }

    /// Reads `chunk` into `buf` with pread, resuming short reads. Returns the bytes read.
    pub(super) fn pread(&self, chunk: &Chunk, buf: &mut [u8]) -> Result<usize, Error> {
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
                    if file.direct && done < need && !done.is_multiple_of(ALIGN) {
                        return Err(self.short_read(chunk, chunk.read_offset + done as u64));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(Error::Read {
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
    /// [`Shared::compute_seams`] (to run after the buffer is given back). `buf` is the pool
    /// buffer `data` lies in at `chunk.skip`, when the kernel may hold it (`pool.rs` rule 5).
    pub(super) fn compute_read(
        &self,
        chunk: &Chunk,
        data: &[u8],
        buf: Option<&Arc<PoolBuf>>,
        outbox: &mut Vec<Message<K::Partial>>,
        out: &mut WorkerOut,
    ) -> Result<Vec<Applied>, Error> {
        debug_assert_eq!(data.len(), chunk.len);
        let pos = chunk.pos();
        let mut applied = Vec::new();
        let body = match cut(self.layout, chunk.stream_offset, data, self.stream_len) {
            Cut::Split { head_end, tail_start } => {
                let head = Piece { bytes: Cow::Borrowed(&data[..head_end]), pos };
                let tail =
                    Piece { bytes: Cow::Borrowed(&data[tail_start..]), pos: pos.plus(tail_start) };
                self.assembler.deposit(chunk.index, Fragment::Split { head, tail }, &mut applied);
                Some((head_end, tail_start)).filter(|(h, t)| h < t)
            }
            Cut::Inside => {
                let piece = Piece { bytes: Cow::Borrowed(data), pos };
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
                let buffer = BlockBuffer { buf: buf.map(|b| (b, chunk.skip + h, t - h)) };
                out.blocks += 1;
                Some(call(self.kernel, &block, &buffer)?)
            }
            None => None,
        };
        outbox.push((2 * chunk.index + 1, partial));
        Ok(applied)
    }

    /// Runs the kernel on the seam records `applied` completed and sends their messages.
    pub(super) fn compute_seams(
        &self,
        applied: Vec<Applied>,
        outbox: &mut Vec<Message<K::Partial>>,
        out: &mut WorkerOut,
    ) -> Result<(), Error> {
        for Applied { read, record } in applied {
            let partial = match record {
                Some(SeamRecord { bytes, pos, pieces, appended }) => {
                    // Copies counted by rule, never by arrival order (stitch rule 4).
                    if pieces > 1 {
                        out.seam_bytes += bytes.len() as u64;
                        out.user_copy_bytes += appended;
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
                    Some(call(self.kernel, &block, &BlockBuffer::NONE)?)
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
    pub(super) fn hand_over_mapped(&self, chunk: &Chunk, out: &mut IoOut) -> bool {
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
        let fits = |j| {
            let chunk = self.map.chunk(j);
            chunk.file == file && self.injected(&chunk).is_none()
        };
        let j = self.gate.claim_following(prev, fits)?;
        self.claimed(j);
        Some(self.map.chunk(j))
    }

    /// The plan's bytes of `chunk` in `buf`, or in the file's mapping when `buf` is `None`.
    pub(super) fn data<'b>(&'b self, chunk: &Chunk, buf: Option<&'b PoolBuf>) -> &'b [u8] {
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
    pub(super) fn finished(&self, chunk: &Chunk) {
        if let Some(p) = self.progress {
            p.fetch_add(chunk.len as u64, Ordering::Relaxed);
        }
        if self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            self.fail(Error::Cancelled);
        }
    }
}

/// Runs the kernel, turning a panic into [`Error::Panicked`].
fn call<K: BlockKernel>(
    kernel: &K,
    block: &Block<'_>,
    buffer: &BlockBuffer<'_>,
) -> Result<K::Partial, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| kernel.process_in(block, buffer)))
        .map_err(|payload| Error::Panicked(format!("kernel: {}", panic_message(&*payload))))
}

pub(super) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Stops the run if the thread it lives on unwinds (a bug outside the kernel).
pub(super) struct PanicGuard<'s, 'a, K: BlockKernel> {
    pub(super) shared: &'s Shared<'a, K>,
    pub(super) what: &'static str,
}

impl<K: BlockKernel> Drop for PanicGuard<'_, '_, K> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.fail(Error::Panicked(format!("{} thread", self.what)));
        }
    }
}

/// What an engine hands back.
pub(super) struct EngineOut {
    pub(super) backend: &'static str,
    pub(super) fallback_reason: Option<String>,
    pub(super) queue_depth: usize,
    pub(super) io: Vec<IoOut>,
    pub(super) workers: Vec<WorkerOut>,
    pub(super) threads: Vec<(u64, String)>,
}

/// Trace `tid` of compute worker `w`.
pub(super) fn worker_tid(w: usize) -> u64 {
    100 + w as u64
}

/// The value of a joined thread, or the default after recording its panic.
pub(super) fn joined<K: BlockKernel, T: Default>(
    shared: &Shared<'_, K>,
    result: std::thread::Result<T>,
) -> T {
    result.map_err(|p| shared.fail(Error::Panicked(panic_message(&*p)))).unwrap_or_default()
}
