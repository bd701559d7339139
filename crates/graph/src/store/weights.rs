//! Block checksums of the weight files (issue 17, defect 2).
//!
//! # Contract
//! 1. A weighted grid's index ends with one CRC-32 per block of the block's bytes in
//!    `<grid>.weights` (8 bytes per edge, the block's edge range of the index), after the edge
//!    checksums: the index is `(P²+1)·8 + P²·4 + P²·4` bytes.
//! 2. Every reader checks each block's weights against its CRC-32 before a weight is used:
//!    streaming passes per run of blocks, in-memory loading per block, `verify` per block.
//! 3. A mismatch is [`Error::Corrupt`] naming the weight file and the block `(sp, dp)`.

use std::ops::Range;
use std::path::Path;

use super::GridIndex;
use crate::Error;

/// Bytes per stored weight.
pub const WEIGHT_BYTES: u64 = 8;

/// CRC-32 of one block's weight bytes, as the writer stores it (rule 1).
pub(crate) fn block_sum(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Checks block `b`'s weight bytes against the index (rule 2). `P` is the grid's side.
pub(crate) fn verify_block(
    path: &Path,
    index: &GridIndex,
    p: usize,
    b: usize,
    bytes: &[u8],
) -> Result<(), Error> {
    let want = index.weight_crcs.get(b).copied();
    if want != Some(block_sum(bytes)) {
        return Err(Error::corrupt(
            path,
            format!("weights of block ({}, {}) fail their checksum", b % p, b / p),
        ));
    }
    Ok(())
}

/// Checks a run of blocks read as one piece of the weight file: `run` holds the weights of
/// edges `first..` and `blocks` lists `(block, edge range relative to first)` inside it.
pub fn verify_run(
    path: &Path,
    index: &GridIndex,
    p: usize,
    run: &[u8],
    blocks: impl IntoIterator<Item = (usize, Range<u64>)>,
) -> Result<(), Error> {
    for (b, r) in blocks {
        let (lo, hi) = ((r.start * WEIGHT_BYTES) as usize, (r.end * WEIGHT_BYTES) as usize);
        let bytes = run.get(lo..hi).ok_or_else(|| Error::corrupt(path, "weights missing"))?;
        verify_block(path, index, p, b, bytes)?;
    }
    Ok(())
}

/// Checks every block of a whole weight file (rule 2) and decodes it.
pub(crate) fn verify_all(
    path: &Path,
    index: &GridIndex,
    p: usize,
    bytes: &[u8],
) -> Result<Vec<f64>, Error> {
    let blocks = (0..p * p).map(|b| (b, index.offsets[b]..index.offsets[b + 1]));
    verify_run(path, index, p, bytes, blocks)?;
    Ok(decode(bytes))
}

/// Decodes little-endian `f64`s.
pub(crate) fn decode(bytes: &[u8]) -> Vec<f64> {
    bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect()
}
