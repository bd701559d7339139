//! Data placement for distributed runs (issue 12, item 1): which bytes each of `p` ranks reads.
//!
//! A dataset is one shared file that every rank reads a stripe of, or a set of per-rank files
//! (`data.part-0000`, `data.part-0001`, … or any list), each read whole by one rank.
//!
//! # Contract
//! 1. Stripes of one extent are contiguous, in rank order, disjoint, and cover the extent: the
//!    stream of rank 0's bytes, then rank 1's, … is the extent. A rank may get no bytes (more
//!    ranks than reads or records); it still takes part in every collective of the run.
//! 2. Fixed records ([`fixed_stripe`]): stripes begin and end on *read* boundaries of the
//!    single-process run (read `k` of an extent starts at `align_down(offset, 4096) + k ×
//!    block_size`, `pipeline/README.md`), so a rank's blocks are exactly the blocks one process
//!    reads, numbered from [`Piece::first_read`]. Read `k` is owned by rank `⌊k·p/reads⌋`'s
//!    balanced split (ranks get `⌊reads/p⌋` or `⌈reads/p⌉` reads). A read boundary that is not a
//!    record boundary is [`Error::StripeUnaligned`].
//! 3. Delimited records ([`delimited_stripe`]): the nominal boundary of rank `r` is byte
//!    `⌊len·r/p⌋` of the extent; its stripe starts at the first record start at or after it
//!    (the byte after a delimiter, or the extent's start). A record straddling a nominal boundary
//!    is therefore read whole, once, by the rank in which it starts.
//! 4. Parts ([`parts_of_rank`]): part `i` of `n` is read by the rank that owns it in the balanced
//!    split of `0..n` (rank `r` gets parts `⌊n·r/p⌋..⌊n·(r+1)/p⌋`); with `n == p`, part `r` goes
//!    to rank `r`. [`find_parts`] lists `BASE.part-0000`, `BASE.part-0001`, … in order.
//!
//! # Costs
//! [`delimited_stripe`] reads forward from each nominal boundary until a delimiter: one record's
//! bytes, in 64 KiB reads. The others only compute.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::{DEFAULT_BLOCK_SIZE, Error, Pipeline};

/// Bytes every O_DIRECT read starts aligned to (`pipeline/README.md`, "Reads").
const ALIGN: u64 = 4096;

/// One rank's piece of one extent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The file.
    pub path: PathBuf,
    /// First byte of the piece in the file.
    pub offset: u64,
    /// Length in bytes (0: this rank reads nothing of the extent).
    pub len: u64,
    /// Index of the piece's first read among the reads of the whole extent (rule 2).
    pub first_read: u64,
}

impl Pipeline {
    /// The block size this pipeline reads with (the default resolved).
    pub fn block_size(&self) -> usize {
        if self.config.block_size == 0 { DEFAULT_BLOCK_SIZE } else { self.config.block_size }
    }
}

/// The number of reads a pipeline with `block_size` makes of the extent `offset..offset + len`.
pub fn reads_in(offset: u64, len: u64, block_size: usize) -> u64 {
    if len == 0 {
        return 0;
    }
    let start = offset - offset % ALIGN;
    (offset + len - start).div_ceil(block_size as u64)
}

/// Rank `rank`'s share of `0..n` in the balanced split among `p` ranks (rules 2 and 4).
pub fn balanced(n: u64, rank: usize, p: usize) -> Range<u64> {
    let at = |r: usize| (u128::from(n) * r as u128 / p as u128) as u64;
    at(rank)..at(rank + 1)
}

/// Rank `rank`'s stripe of the extent `offset..offset + len` of `path`, cut into fixed
/// `record`-byte records, for a pipeline of `block_size` (rule 2).
pub fn fixed_stripe(
    path: &Path,
    offset: u64,
    len: u64,
    record: usize,
    block_size: usize,
    rank: usize,
    p: usize,
) -> Result<Piece, Error> {
    let reads = reads_in(offset, len, block_size);
    let own = balanced(reads, rank, p);
    let base = offset - offset % ALIGN;
    let end = offset + len;
    let boundary = |k: u64| (base + k * block_size as u64).clamp(offset, end);
    let (start, stop) = (boundary(own.start), boundary(own.end));
    for at in [start, stop] {
        if at != end && !(at - offset).is_multiple_of(record as u64) {
            return Err(Error::StripeUnaligned { path: path.to_path_buf(), offset: at, record });
        }
    }
    Ok(Piece { path: path.to_path_buf(), offset: start, len: stop - start, first_read: own.start })
}

/// Rank `rank`'s stripe of the extent `offset..offset + len` of `path`, whose records end
/// after `delimiter` (rule 3). `first_read` is 0 (reads of delimited stripes are not aligned
/// with one process's reads).
pub fn delimited_stripe(
    path: &Path,
    offset: u64,
    len: u64,
    delimiter: u8,
    rank: usize,
    p: usize,
) -> Result<Piece, Error> {
    let file =
        File::open(path).map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
    let end = offset + len;
    let start_at = |r: usize| -> Result<u64, Error> {
        let nominal = offset + balanced(len, r, p).start;
        if nominal == offset {
            return Ok(offset);
        }
        record_start_from(&file, path, nominal, end, delimiter)
    };
    let (start, stop) = (start_at(rank)?, if rank + 1 == p { end } else { start_at(rank + 1)? });
    let stop = stop.max(start);
    Ok(Piece { path: path.to_path_buf(), offset: start, len: stop - start, first_read: 0 })
}

/// The first record start at or after `at` (`at > 0`): the byte after the first delimiter in
/// `at - 1..end`, or `end` when there is none.
fn record_start_from(
    file: &File,
    path: &Path,
    at: u64,
    end: u64,
    delimiter: u8,
) -> Result<u64, Error> {
    let mut buf = vec![0u8; 64 << 10];
    let mut pos = at - 1;
    while pos < end {
        let want = buf.len().min((end - pos) as usize);
        let got = file.read_at(&mut buf[..want], pos).map_err(|source| Error::Read {
            path: path.to_path_buf(),
            offset: pos,
            len: want,
            source,
        })?;
        if got == 0 {
            return Err(Error::ShortRead { path: path.to_path_buf(), offset: pos, expected: end });
        }
        if let Some(i) = memchr::memchr(delimiter, &buf[..got]) {
            return Ok(pos + i as u64 + 1);
        }
        pos += got as u64;
    }
    Ok(end)
}

/// The parts `0..n` that rank `rank` of `p` reads (rule 4).
pub fn parts_of_rank(n: usize, rank: usize, p: usize) -> Range<usize> {
    let r = balanced(n as u64, rank, p);
    r.start as usize..r.end as usize
}

/// `BASE.part-0000`, `BASE.part-0001`, … as long as they exist, in order (rule 4); empty when
/// there is no `BASE.part-0000`.
pub fn find_parts(base: &Path) -> Vec<PathBuf> {
    let mut parts = Vec::new();
    loop {
        let mut name = base.as_os_str().to_owned();
        name.push(format!(".part-{:04}", parts.len()));
        let path = PathBuf::from(name);
        if !path.exists() {
            return parts;
        }
        parts.push(path);
    }
}

#[cfg(test)]
mod tests;
