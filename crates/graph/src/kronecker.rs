//! Graph500 Kronecker generator (Graph500 spec §3, `make_graph`): `2^scale` vertices,
//! `edge_factor · 2^scale` directed edges, initiator A = 0.57, B = 0.19, C = 0.19
//! (D = 0.05), vertex labels permuted by a seeded random permutation.
//!
//! # Contract
//! 1. The output is the `bin` import format: little-endian `u32 src, u32 dst` (scale ≤ 32),
//!    plus an `f32` weight uniform in [0, 1) with `weights`.
//! 2. Deterministic: the same (scale, edge factor, seed, weights) give the same bytes,
//!    whatever the thread count (each chunk of 2^20 edges has its own seeded generator).
//! 3. Streaming: memory is the permutation (4 bytes per vertex) plus a few chunks.
//! 4. Unlike the reference code, edge order is not shuffled (that needs the whole list in
//!    memory); edges come in chunk order.

use std::io::Write;
use std::path::Path;

use rand::seq::SliceRandom;
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use crate::Error;

/// Options of [`generate`].
#[derive(Debug, Clone, Copy)]
pub struct GenOptions {
    /// log2 of the vertex count.
    pub scale: u32,
    /// Edges per vertex.
    pub edge_factor: u64,
    /// Seed.
    pub seed: u64,
    /// Append an `f32` weight to every edge.
    pub weights: bool,
}

const CHUNK: u64 = 1 << 20;
const A: f64 = 0.57;
const B: f64 = 0.19;
const C: f64 = 0.19;

/// The chunks generated between two writes: two per thread, to keep every thread busy.
fn batch_chunks() -> u64 {
    (rayon::current_num_threads() as u64 * 2).max(2)
}

/// The most memory [`generate`] holds for `opts` (rule 3): the permutation, 4 bytes per
/// vertex, and one batch of chunk buffers; callers reserve it from their budget first.
pub fn memory_needed(opts: &GenOptions) -> u64 {
    let rec = if opts.weights { 12 } else { 8 };
    let vertices = 1u64 << opts.scale.min(40);
    let edges = opts.edge_factor.saturating_mul(vertices);
    let batch = batch_chunks().saturating_mul(CHUNK).min(edges);
    vertices.saturating_mul(4).saturating_add(batch.saturating_mul(rec))
}

/// Writes the graph to `out` (atomically); returns the number of edges.
pub fn generate(
    opts: &GenOptions,
    out: &Path,
    progress: Option<&std::sync::atomic::AtomicU64>,
) -> Result<u64, Error> {
    if opts.scale == 0 || opts.scale > 32 {
        return Err(Error::BadScale { scale: opts.scale });
    }
    let n = 1u64 << opts.scale;
    let m = opts
        .edge_factor
        .checked_mul(n)
        .filter(|&m| m > 0)
        .ok_or(Error::BadEdgeFactor { edge_factor: opts.edge_factor, scale: opts.scale })?;
    let mut perm: Vec<u32> = (0..n).map(|v| v as u32).collect();
    perm.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(opts.seed ^ 0x9e37_79b9_7f4a_7c15));
    let mut file =
        sluice_io::OutputFile::create(out).map_err(|e| Error::io(out, "cannot create", e))?;
    let chunks = m.div_ceil(CHUNK);
    let rec = if opts.weights { 12 } else { 8 };
    let batch = batch_chunks();
    let ab = A + B;
    let (c_norm, a_norm) = (C / (1.0 - ab), A / ab);
    let mut c0 = 0;
    while c0 < chunks {
        let c1 = (c0 + batch).min(chunks);
        let bufs: Vec<Vec<u8>> = (c0..c1)
            .into_par_iter()
            .map(|c| {
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(
                    opts.seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ c,
                );
                let len = CHUNK.min(m - c * CHUNK);
                let mut buf = Vec::with_capacity(len as usize * rec);
                let unit = 1.0 / (1u64 << 32) as f64;
                for _ in 0..len {
                    let (mut i, mut j) = (0u64, 0u64);
                    for bit in 0..opts.scale {
                        let r = rng.next_u64();
                        let (u1, u2) = ((r >> 32) as f64 * unit, (r & 0xffff_ffff) as f64 * unit);
                        let ii = u1 > ab;
                        let jj = u2 > if ii { c_norm } else { a_norm };
                        i |= (ii as u64) << bit;
                        j |= (jj as u64) << bit;
                    }
                    buf.extend_from_slice(&perm[i as usize].to_le_bytes());
                    buf.extend_from_slice(&perm[j as usize].to_le_bytes());
                    if opts.weights {
                        let w = (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32;
                        buf.extend_from_slice(&w.to_le_bytes());
                    }
                }
                buf
            })
            .collect();
        for b in bufs {
            file.write_all(&b).map_err(|e| Error::io(out, "write failed", e))?;
            if let Some(p) = progress {
                p.fetch_add(b.len() as u64, std::sync::atomic::Ordering::Relaxed);
            }
        }
        c0 = c1;
    }
    file.commit().map_err(|e| Error::io(out, "cannot finish", e))?;
    Ok(m)
}
