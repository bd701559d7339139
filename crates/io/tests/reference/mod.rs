//! A naive, single-threaded reader: the executable definition of what every engine must hand a
//! kernel. Tests compare the real engines against it; it shares no code with them (it sees only
//! the public API), and it is no part of that API.
//!
//! A module shared by integration tests lives in a folder of `tests/` (`reference/mod.rs`): a
//! `tests/reference.rs` would be built as a test target of its own.
//!
//! It reads each extent front to back with `pread` in `block_size` chunks, keeps the unfinished
//! record of each chunk in a carry buffer, and hands the kernel every run of whole records, the
//! stitched ones as blocks of their own.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use sluice_io::{Block, BlockKernel, Copies, Error, Plan, RecordLayout, Run, RunStats};

struct Carry {
    bytes: Vec<u8>,
    stream_offset: u64,
    extent: usize,
    extent_offset: u64,
    pieces: usize,
}

/// Reads `plan` sequentially and runs `kernel` on every run of whole records, in stream order.
pub(crate) fn run<K: BlockKernel>(
    plan: &Plan,
    block_size: usize,
    kernel: &K,
    progress: Option<&AtomicU64>,
) -> Result<Run<K::Partial>, Error> {
    let mut partials = Vec::new();
    let stats = run_ordered(plan, block_size, kernel, progress, |p| partials.push(p))?;
    Ok(Run { partials, stats })
}

/// Like [`run`], handing each partial to `sink` in stream order instead of collecting them.
pub(crate) fn run_ordered<K: BlockKernel, F: FnMut(K::Partial)>(
    plan: &Plan,
    block_size: usize,
    kernel: &K,
    progress: Option<&AtomicU64>,
    mut sink: F,
) -> Result<RunStats, Error> {
    assert!(block_size > 0, "the reference reader needs a block size");
    let start = Instant::now();
    let mut copies = Copies::default();
    let mut carry =
        Carry { bytes: Vec::new(), stream_offset: 0, extent: 0, extent_offset: 0, pieces: 0 };
    let mut buf = vec![0u8; block_size];
    let mut stream_offset = 0u64;
    for (index, extent) in plan.extents().iter().enumerate() {
        let file = File::open(&extent.path)
            .map_err(|source| Error::Open { path: extent.path.clone(), source })?;
        let mut done = 0u64;
        while done < extent.len {
            let len = (extent.len - done).min(block_size as u64) as usize;
            let chunk = &mut buf[..len];
            read_exact_at(
                &file,
                chunk,
                extent.offset + done,
                &extent.path,
                extent.offset + extent.len,
            )?;
            let chunk = &buf[..len];
            let mut rest_start = 0usize;
            // Finish the carried record, if the chunk holds its end.
            if !carry.bytes.is_empty() {
                let need = match plan.layout() {
                    RecordLayout::Fixed(n) => Some(n.get() - carry.bytes.len()),
                    RecordLayout::Delimited(b) => memchr::memchr(b, chunk).map(|i| i + 1),
                };
                match need {
                    Some(need) if need <= chunk.len() => {
                        carry.bytes.extend_from_slice(&chunk[..need]);
                        carry.pieces += 1;
                        emit_carry(&mut carry, kernel, &mut sink, &mut copies);
                        rest_start = need;
                    }
                    _ => {
                        carry.bytes.extend_from_slice(chunk);
                        carry.pieces += 1;
                        rest_start = chunk.len();
                    }
                }
            }
            let rest = &chunk[rest_start..];
            let whole = match plan.layout() {
                RecordLayout::Fixed(n) => rest.len() / n.get() * n.get(),
                RecordLayout::Delimited(b) => memchr::memrchr(b, rest).map_or(0, |i| i + 1),
            };
            let rest_offset = done + rest_start as u64;
            if whole > 0 {
                sink(kernel.process(&Block {
                    data: &rest[..whole],
                    stream_offset: stream_offset + rest_offset,
                    extent: index,
                    extent_offset: rest_offset,
                    is_seam: false,
                }));
            }
            if whole < rest.len() {
                debug_assert!(carry.bytes.is_empty());
                carry.bytes.extend_from_slice(&rest[whole..]);
                carry.stream_offset = stream_offset + rest_offset + whole as u64;
                carry.extent = index;
                carry.extent_offset = rest_offset + whole as u64;
                carry.pieces = 1;
            }
            done += len as u64;
            if let Some(p) = progress {
                p.fetch_add(len as u64, Ordering::Relaxed);
            }
        }
        stream_offset += extent.len;
    }
    if !carry.bytes.is_empty() {
        emit_carry(&mut carry, kernel, &mut sink, &mut copies);
    }
    let seconds = start.elapsed().as_secs_f64();
    let bytes_read = plan.total_len();
    let stats = RunStats {
        engine: "reference".into(),
        backend: "pread".into(),
        direct: "never".into(),
        bytes_read,
        seconds,
        bandwidth_bytes_per_s: bytes_read as f64 / seconds.max(1e-9),
        block_size,
        queue_depth: 1,
        copies: Copies { page_cache_bytes: bytes_read, ..copies },
        ..RunStats::default()
    };
    Ok(stats)
}

fn emit_carry<K: BlockKernel, F: FnMut(K::Partial)>(
    carry: &mut Carry,
    kernel: &K,
    sink: &mut F,
    copies: &mut Copies,
) {
    let is_seam = carry.pieces > 1;
    if is_seam {
        copies.seam_bytes += carry.bytes.len() as u64;
    }
    sink(kernel.process(&Block {
        data: &carry.bytes,
        stream_offset: carry.stream_offset,
        extent: carry.extent,
        extent_offset: carry.extent_offset,
        is_seam,
    }));
    carry.bytes.clear();
    carry.pieces = 0;
}

fn read_exact_at(
    file: &File,
    mut buf: &mut [u8],
    mut offset: u64,
    path: &std::path::Path,
    expected_end: u64,
) -> Result<(), Error> {
    while !buf.is_empty() {
        match file.read_at(buf, offset) {
            Ok(0) => {
                return Err(Error::ShortRead {
                    path: path.to_path_buf(),
                    offset,
                    expected: expected_end,
                });
            }
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(Error::Read {
                    path: path.to_path_buf(),
                    offset,
                    len: buf.len(),
                    source,
                });
            }
        }
    }
    Ok(())
}
