//! The one hot loop of both modes: a block's edges (sorted by `(d, s)`) applied edge by edge
//! to their destination partition's slice of the state, on the one thread that owns it.
//!
//! The in-memory mode runs it per destination partition on the rayon pool; the streaming mode
//! runs it on the applier that owns a column, over the edges the pipeline's workers checked
//! and decoded, and over the columns the block cache serves. The same loop over the same edges
//! in the same order gives both modes the same bits (engine rule 2), and the values never go
//! through memory: in the streaming mode of session 8 a worker turned every edge into a
//! `(d, value)` pair of 16 bytes that an applier read back, which made a cached streaming
//! PageRank pass 2.5 times as slow as the in-memory one.

use super::{EdgeKernel, VertexSet, decode, gather_edge};

/// Applies one block piece: `data` its edges (raw encoding, ids relative to `sbase`, `dbase`),
/// `weights` one per edge when given, `state` and `bits` the destination partition's slices.
/// No branch depends on where a run of equal destinations ends, so the random reads of source
/// state overlap (memory-level parallelism); for PageRank this is `sum[d] += contrib[s]`.
/// Returns the number of vertices newly set in `bits`.
#[inline]
pub(super) fn apply_block<K: EdgeKernel>(
    k: &K,
    active: &VertexSet,
    prev: &[K::State],
    (sbase, dbase): (u32, u32),
    (data, weights): (&[u8], Option<&[f64]>),
    state: &mut [K::State],
    bits: &mut [u64],
) -> u64 {
    let mut changed = 0u64;
    let mut edge = |s: u32, d: u32, w: f64| {
        // Only a corrupt block (which its checksum reports) holds a `d` past the slice.
        let Some(st) = state.get_mut(d as usize) else { return };
        if !k.cond(dbase + d, st) {
            return;
        }
        if let Some(v) = gather_edge(k, active, prev, sbase + s, w)
            && k.apply(dbase + d, v, st)
        {
            let (wi, b) = ((d / 64) as usize, d % 64);
            if bits[wi] & (1 << b) == 0 {
                bits[wi] |= 1 << b;
                changed += 1;
            }
        }
    };
    match weights {
        None => {
            for e in data.chunks_exact(4) {
                let (s, d) = decode(e);
                edge(s, d, 1.0);
            }
        }
        Some(w) => {
            for (e, &w) in data.chunks_exact(4).zip(w) {
                let (s, d) = decode(e);
                edge(s, d, w);
            }
        }
    }
    changed
}

/// Stored weights (8 bytes each, little-endian) as values for [`apply_block`], into `out`.
pub(super) fn weights_into(bytes: &[u8], out: &mut Vec<f64>) {
    out.clear();
    out.extend(
        bytes
            .chunks_exact(8)
            .map(|w| f64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])),
    );
}
