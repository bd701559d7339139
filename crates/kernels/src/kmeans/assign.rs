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
    // Labels ride in lanes of the same width as the distances, so that one compare mask
    // blends both (no repacking of masks); `j` is exact in T for k ≤ 2²⁴ (checked by `kmeans`).
    let mut lab = [T::ZERO; P];
    let step = |acc: &mut [T; P], x: &[T; P], c: T| {
        for l in 0..P {
            acc[l] = if FMA { x[l].fused(c, acc[l]) } else { x[l].mul(c).add(acc[l]) };
        }
    };
    let keep = |best: &mut [T; P], lab: &mut [T; P], acc: &[T; P], j: T| {
        // In centre order, strict `<`: the first smallest wins, as in scikit-learn.
        for l in 0..P {
            let better = acc[l] < best[l];
            best[l] = if better { acc[l] } else { best[l] };
            lab[l] = if better { j } else { lab[l] };
        }
    };
    let mut j = 0;
    while j + 2 <= k {
        let (r0, r1) = (&m2c[j * d..(j + 1) * d], &m2c[(j + 1) * d..(j + 2) * d]);
        let mut a0 = [norms[j]; P];
        let mut a1 = [norms[j + 1]; P];
        for ((x, &c0), &c1) in xt.iter().zip(r0).zip(r1) {
            step(&mut a0, x, c0);
            step(&mut a1, x, c1);
        }
        keep(&mut best, &mut lab, &a0, T::from_f64(j as f64));
        keep(&mut best, &mut lab, &a1, T::from_f64((j + 1) as f64));
        j += 2;
    }
    if j < k {
        let mut a0 = [norms[j]; P];
        for (x, &c0) in xt.iter().zip(&m2c[j * d..(j + 1) * d]) {
            step(&mut a0, x, c0);
        }
        keep(&mut best, &mut lab, &a0, T::from_f64(j as f64));
    }
    for l in 0..P {
        labels[l] = lab[l].to_f64() as u32;
    }
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
    // Locals, not fields of `partial`: stores through them cannot alias its other fields, so
    // the compiler keeps pointers and the inertia in registers.
    let mut sums = std::mem::take(&mut partial.sums);
    let mut counts = std::mem::take(&mut partial.counts);
    let mut inertia = 0.0;
    let mut far_threshold = partial.far.threshold();
    for tile in data.chunks(P * rec) {
        let m = tile.len() / rec;
        for (l, r) in tile.chunks_exact(rec).enumerate() {
            for (x, b) in xt.iter_mut().zip(r.chunks_exact(T::SIZE)) {
                x[l] = T::load::<BIG>(b);
            }
        }
        nearest::<T, P, FMA>(&xt, m2c, norms, &mut labels);
        let threshold = if want.update { far_threshold } else { f64::INFINITY };
        for (l, r) in tile.chunks_exact(rec).enumerate() {
            let j = labels[l] as usize;
            // The squared distance to the chosen centre, directly (as scikit-learn's inertia
            // and its empty-cluster relocation compute it), in f64, from the record's
            // contiguous bytes; the cluster's sums in the same loop.
            let c = &c64[j * d..(j + 1) * d];
            let mut dist = 0.0;
            if want.update {
                let s = &mut sums[j * d..(j + 1) * d];
                for ((s, &c), b) in s.iter_mut().zip(c).zip(r.chunks_exact(T::SIZE)) {
                    let x = T::load::<BIG>(b).to_f64();
                    *s += x;
                    dist += (x - c) * (x - c);
                }
                counts[j] += 1;
            } else {
                for (&c, b) in c.iter().zip(r.chunks_exact(T::SIZE)) {
                    let x = T::load::<BIG>(b).to_f64();
                    dist += (x - c) * (x - c);
                }
            }
            inertia += dist;
            if want.labels {
                partial.labels.push(j as i32);
            }
            if dist > threshold || !dist.is_finite() {
                let coords: Vec<f64> =
                    r.chunks_exact(T::SIZE).map(|b| T::load::<BIG>(b).to_f64()).collect();
                if coords.iter().any(|x| !x.is_finite()) {
                    partial.bad.get_or_insert(index + l as u64);
                } else if want.update && partial.far.would_take(dist) {
                    partial.far.offer(dist, index + l as u64, j, coords);
                    far_threshold = partial.far.threshold();
                }
            }
        }
        index += m as u64;
    }
    (partial.sums, partial.counts, partial.inertia) = (sums, counts, inertia);
}
