//! Block checksums of the weight files (issue 17, defect 2).
//!
//! # Contract
//! 1. A weighted grid's index ends with one CRC-32 per block of the block's bytes in
//!    `<grid>.weights` (8 bytes per edge, the block's edge range of the index), after the edge
//!    checksums: the index is `(P²+1)·8 + P²·4 + P²·4` bytes.
//! 2. Every reader checks each block's weights against its CRC-32 before a weight is used:
//!    streaming passes per run of blocks, in-memory loading per block, `verify` per block.
//! 3. A mismatch is [`Error::Corrupt`] naming the weight file and the block `(sp, dp)`.

use std::fs::File;
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
    verify_sum(path, index, p, b, block_sum(bytes))
}

/// Checks block `b`'s weights by their CRC-32 `sum`, computed by a reader that hashed them in
/// pieces (rule 2).
pub(crate) fn verify_sum(
    path: &Path,
    index: &GridIndex,
    p: usize,
    b: usize,
    sum: u32,
) -> Result<(), Error> {
    if index.weight_crcs.get(b).copied() != Some(sum) {
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

/// Reads a whole weight file from `file` (the store's held descriptor for `path`), checking
/// every block (rule 2), and decodes it: 8 bytes per edge, the decoded weights only (the file
/// is read in [`LOAD_CHUNK`]-byte pieces, never held raw beside them: an in-memory load
/// reserves 8 bytes per weight).
pub(crate) fn load(
    path: &Path,
    file: &File,
    index: &GridIndex,
    p: usize,
) -> Result<Vec<f64>, Error> {
    use std::os::unix::fs::FileExt;
    let edges = index.offsets.get(p * p).copied().unwrap_or(0);
    let len = file.metadata().map_err(|e| Error::io(path, "cannot read", e))?.len();
    if len != edges.saturating_mul(WEIGHT_BYTES) {
        return Err(Error::corrupt(path, format!("{len} bytes, the index says {edges} weights")));
    }
    let mut out = Vec::with_capacity(edges as usize);
    let mut buf = vec![0u8; LOAD_CHUNK];
    let mut pos = 0u64;
    for b in 0..p * p {
        let mut left = (index.offsets[b + 1] - index.offsets[b]) * WEIGHT_BYTES;
        let mut hasher = crc32fast::Hasher::new();
        while left > 0 {
            let piece = &mut buf[..left.min(LOAD_CHUNK as u64) as usize];
            file.read_exact_at(piece, pos).map_err(|e| Error::io(path, "cannot read", e))?;
            hasher.update(piece);
            out.extend(
                piece
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])),
            );
            (pos, left) = (pos + piece.len() as u64, left - piece.len() as u64);
        }
        verify_sum(path, index, p, b, hasher.finalize())?;
    }
    Ok(out)
}

/// Bytes per read of [`load`].
const LOAD_CHUNK: usize = 1 << 20;
