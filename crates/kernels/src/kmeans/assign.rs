//! The hot loop (rule 3): the nearest centre of each record of a block, and the block's sums,
//! counts, inertia and farthest points.
//!
//! A block is cut into tiles of `P` records, transposed into `d` rows of `P` lanes, so that
//! the distance loop runs over lanes (records) with one centre value broadcast: for centre `j`,
//! `acc = ‖c_j‖² + Σ_f x_f·(−2c_{j,f})`, `d` multiply-adds per lane, two centres at a time for
//! independent chains. This is scikit-learn's expansion (`_k_means_lloyd.pyx` adds
//! `−2·X·Cᵀ` to `‖C‖²` with a GEMM and takes the first smallest); `‖x‖²` is left out since it
//! does not change the argmin. `FMA` picks fused multiply-adds (only where the CPU has them:
//! `simd.rs` compiles this code for AVX2+FMA and dispatches at run time).

use super::kernel::{BlockPartial, Float};

/// Labels of the `P` records of a transposed tile `xt` (`d` rows of `P`): the first centre
/// with the smallest `‖c‖² − 2x·c`. `m2c` is `k × d` (row `j` is `−2c_j`), `norms` is `‖c_j‖²`.
#[inline(always)]
pub(super) fn nearest<T: Float, const P: usize, const FMA: bool>(
    xt: &[[T; P]],
    m2c: &[T],
    norms: &[T],
    labels: &mut [u32; P],
) {
    let d = xt.len();
    let k = norms.len();
    debug_assert_eq!(m2c.len(), k * d);
    let mut best = [T::INFINITY; P];
    let mut lab = [0u32; P];
    let step = |acc: &mut [T; P], x: &[T; P], c: T| {
        for l in 0..P {
            acc[l] = if FMA { x[l].fused(c, acc[l]) } else { x[l].mul(c).add(acc[l]) };
        }
    };
    let mut j = 0;
    while j + 2 <= k {
        let (r0, r1) = (&m2c[j * d..(j + 1) * d], &m2c[(j + 1) * d..(j + 2) * d]);
        let mut a0 = [norms[j]; P];
        let mut a1 = [norms[j + 1]; P];
        for f in 0..d {
            step(&mut a0, &xt[f], r0[f]);
            step(&mut a1, &xt[f], r1[f]);
        }
        // In centre order, strict `<`: the first smallest wins, as in scikit-learn.
        for l in 0..P {
            let b0 = a0[l] < best[l];
            best[l] = if b0 { a0[l] } else { best[l] };
            lab[l] = if b0 { j as u32 } else { lab[l] };
            let b1 = a1[l] < best[l];
            best[l] = if b1 { a1[l] } else { best[l] };
            lab[l] = if b1 { j as u32 + 1 } else { lab[l] };
        }
        j += 2;
    }
    if j < k {
        let r0 = &m2c[j * d..(j + 1) * d];
        let mut a0 = [norms[j]; P];
        for f in 0..d {
            step(&mut a0, &xt[f], r0[f]);
        }
        for l in 0..P {
            let b0 = a0[l] < best[l];
            best[l] = if b0 { a0[l] } else { best[l] };
            lab[l] = if b0 { j as u32 } else { lab[l] };
        }
    }
    *labels = lab;
}

/// What a pass of [`assign_block`] collects besides the labels.
#[derive(Debug, Clone, Copy)]
pub(super) struct Want {
    /// Sums, counts and farthest points for the update step.
    pub(super) update: bool,
    /// The labels, in record order.
    pub(super) labels: bool,
}

/// Runs one block of whole records (`data`, record `first` onwards) against the centres:
/// `c64` the centres as f64 (`k × d`), `m2c`/`norms` as for [`nearest`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn assign_block<T: Float, const P: usize, const BIG: bool, const FMA: bool>(
    data: &[u8],
    first: u64,
    d: usize,
    c64: &[f64],
    m2c: &[T],
    norms: &[T],
    want: Want,
    partial: &mut BlockPartial,
) {
    let rec = d * T::SIZE;
    let mut xt = vec![[T::ZERO; P]; d];
    let mut labels = [0u32; P];
    let mut index = first;
    for tile in data.chunks(P * rec) {
        let m = tile.len() / rec;
        for (l, r) in tile.chunks_exact(rec).enumerate() {
            for (f, b) in r.chunks_exact(T::SIZE).enumerate() {
                xt[f][l] = T::load::<BIG>(b);
            }
        }
        nearest::<T, P, FMA>(&xt, m2c, norms, &mut labels);
        for (l, &j) in labels.iter().enumerate().take(m) {
            let j = j as usize;
            let c = &c64[j * d..(j + 1) * d];
            // The squared distance to the chosen centre, directly (as scikit-learn's inertia
            // and its empty-cluster relocation compute it), in f64.
            let mut dist = 0.0;
            for f in 0..d {
                let e = xt[f][l].to_f64() - c[f];
                dist += e * e;
            }
            if !dist.is_finite() && (0..d).any(|f| !xt[f][l].to_f64().is_finite()) {
                partial.bad.get_or_insert(index);
                index += 1;
                continue;
            }
            partial.inertia += dist;
            if want.labels {
                partial.labels.push(j as i32);
            }
            if want.update {
                let s = &mut partial.sums[j * d..(j + 1) * d];
                for f in 0..d {
                    s[f] += xt[f][l].to_f64();
                }
                partial.counts[j] += 1;
                if partial.far.would_take(dist) {
                    partial.far.offer(dist, index, j, (0..d).map(|f| xt[f][l].to_f64()).collect());
                }
            }
            index += 1;
        }
    }
}
