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
//!
//! With Hamerly's bounds (`bounds.rs`) a block runs one of two loops, by the share of its
//! records its last pass assigned in full: many, windows of records (test the bounds, assign
//! the failures in tiles, add the figures); few, one loop in file order that assigns a failure
//! alone, centres in lanes (`nearest_one`). Both compute every record's label, second
//! smallest expansion and figures with the same operations in the same order: the same bits.
//!
//! Little-endian blocks on AVX2 run the same two loops as `lean::assign_lean` (what to collect and,
//! for d ≤ 16, the record length fixed at compile time, each choice its own function in
//! `simd.rs`; the test without the record's norm, `bounds::keeps_near`): 1.2–1.5× faster on
//! 1M × 10 records, k = 20, with the same bits (bench/kernels/README.md).

use super::bounds::{BlockBounds, PassBounds};
use super::kernel::{BlockPartial, Float, Prepared};
use super::simd::{Avx2Fma, nearest_avx2, nearest_one_avx2, row_avx2};

/// Labels of the `P` records of a transposed tile `xt` (`d` rows of `P`): the first centre
/// with the smallest `‖c‖² − 2x·c`. `m2c` is `k × d` (row `j` is `−2c_j`), `norms` is `‖c_j‖²`.
#[inline(always)]
pub(super) fn nearest<T: Float, const P: usize, const FMA: bool, const SECOND: bool>(
    xt: &[[T; P]],
    m2c: &[T],
    norms: &[T],
    labels: &mut [u32; P],
    second: &mut [T; P],
) {
    let d = xt.len();
    let k = norms.len();
    debug_assert_eq!(m2c.len(), k * d);
    let mut best = [T::INFINITY; P];
    // The second smallest over the centres but the chosen one (for `SECOND`, the bounds of
    // `bounds.rs`): `min(second, max(best, acc))` before `best` takes `acc`.
    let mut sec = [T::INFINITY; P];
    // Labels ride in lanes of the same width as the distances, so that one compare mask
    // blends both (no repacking of masks); `j` is exact in T for k ≤ 2²⁴ (checked by `kmeans`).
    let mut lab = [T::ZERO; P];
    let step = |acc: &mut [T; P], x: &[T; P], c: T| {
        for l in 0..P {
            acc[l] = if FMA { x[l].fused(c, acc[l]) } else { x[l].mul(c).add(acc[l]) };
        }
    };
    let keep = |best: &mut [T; P], lab: &mut [T; P], sec: &mut [T; P], acc: &[T; P], j: T| {
        // In centre order, strict `<`: the first smallest wins, as in scikit-learn.
        for l in 0..P {
            if SECOND {
                let hi = if acc[l] < best[l] { best[l] } else { acc[l] };
                sec[l] = if hi < sec[l] { hi } else { sec[l] };
            }
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
        keep(&mut best, &mut lab, &mut sec, &a0, T::from_f64(j as f64));
        keep(&mut best, &mut lab, &mut sec, &a1, T::from_f64((j + 1) as f64));
        j += 2;
    }
    if j < k {
        let mut a0 = [norms[j]; P];
        for (x, &c0) in xt.iter().zip(&m2c[j * d..(j + 1) * d]) {
            step(&mut a0, x, c0);
        }
        keep(&mut best, &mut lab, &mut sec, &a0, T::from_f64(j as f64));
    }
    for l in 0..P {
        labels[l] = lab[l].to_f64() as u32;
    }
    if SECOND {
        *second = sec;
    }
}

/// The nearest centre of one record `r` (bytes of `d` values) and the second smallest
/// expansion: the same chain of operations per centre as [`nearest`], so the same label and
/// second value, with the centres of `prep` transposed (`m2ct`, `npad`) so that the AVX2 code
/// runs over centres with the record broadcast. `x` is scratch of at least `d` values.
#[inline(always)]
pub(super) fn nearest_one<T: Float, const BIG: bool, const FMA: bool>(
    avx2: Option<Avx2Fma>,
    r: &[u8],
    prep: &Prepared<T>,
    x: &mut [T],
) -> (u32, T) {
    if !BIG && let Some(found) = avx2.and_then(|a| nearest_one_avx2(a, r, &prep.m2ct, &prep.npad)) {
        return found;
    }
    let d = r.len() / T::SIZE;
    for (v, b) in x.iter_mut().zip(r.chunks_exact(T::SIZE)) {
        *v = T::load::<BIG>(b);
    }
    let (mut best, mut sec, mut lab) = (T::INFINITY, T::INFINITY, 0);
    for (j, (row, &norm)) in prep.m2c.chunks_exact(d).zip(&prep.norms).enumerate() {
        let mut acc = norm;
        for (&v, &c) in x.iter().zip(row) {
            acc = if FMA { v.fused(c, acc) } else { v.mul(c).add(acc) };
        }
        let hi = if acc < best { best } else { acc };
        sec = if hi < sec { hi } else { sec };
        if acc < best {
            (best, lab) = (acc, j as u32);
        }
    }
    (lab, sec)
}

/// What a pass of [`assign_block`] collects besides the labels.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Want {
    /// Sums, counts and farthest points for the update step.
    pub(super) update: bool,
    /// The labels, in record order.
    pub(super) labels: bool,
}

/// Records per window: a window's records are tested against their bounds, those that fail
/// are assigned in full in tiles of `P`, then the window's figures are added in file order.
const WINDOW: usize = 512;

/// `(‖x − c‖², ‖x‖²)` in f64 of the record bytes `r` against `c` (zeros unless `DIST`),
/// adding `x` to `sums` if `ADD`: four lanes of partial sums combined as `(l₀ + l₁) + (l₂ + l₃)`, then the tail in
/// order (the same bits on every path: no fused operations).
#[inline(always)]
pub(super) fn row<T: Float, const BIG: bool, const ADD: bool, const DIST: bool>(
    r: &[u8],
    c: &[f64],
    sums: &mut [f64],
) -> (f64, f64) {
    let body = c.len() / 4 * 4;
    let (rb, rt) = r.split_at(body * T::SIZE);
    let (cb, ct) = c.split_at(body);
    let mut dd = [0.0f64; 4];
    let mut xx = [0.0f64; 4];
    for (i, (rq, cq)) in rb.chunks_exact(4 * T::SIZE).zip(cb.chunks_exact(4)).enumerate() {
        let mut x = [0.0; 4];
        for (l, b) in rq.chunks_exact(T::SIZE).enumerate() {
            x[l] = T::load::<BIG>(b).to_f64();
        }
        for l in 0..4 {
            if DIST {
                let e = x[l] - cq[l];
                dd[l] += e * e;
                xx[l] += x[l] * x[l];
            }
        }
        if ADD {
            let s = &mut sums[4 * i..4 * i + 4];
            for l in 0..4 {
                s[l] += x[l];
            }
        }
    }
    let mut dist = (dd[0] + dd[1]) + (dd[2] + dd[3]);
    let mut norm = (xx[0] + xx[1]) + (xx[2] + xx[3]);
    for (f, (b, &c)) in rt.chunks_exact(T::SIZE).zip(ct).enumerate() {
        let x = T::load::<BIG>(b).to_f64();
        if DIST {
            dist += (x - c) * (x - c);
            norm += x * x;
        }
        if ADD {
            sums[body + f] += x;
        }
    }
    (dist, norm)
}

/// [`row`], by the AVX2 code where there is a proof of it (the same bits).
#[inline(always)]
fn row_on<T: Float, const BIG: bool, const ADD: bool, const DIST: bool>(
    avx2: Option<Avx2Fma>,
    r: &[u8],
    c: &[f64],
    sums: &mut [f64],
) -> (f64, f64) {
    avx2.and_then(|a| row_avx2::<T, BIG, ADD, DIST>(a, r, c, sums))
        .unwrap_or_else(|| row::<T, BIG, ADD, DIST>(r, c, sums))
}

/// Runs one block of whole records (`data`, record `first` onwards) against the centres:
/// `c64` the centres as f64 (`k × d`), `m2c`/`norms` as for [`nearest`]. With `bounds` (the
/// pass's, the block's state, and whether that state is the last pass's), records whose
/// bounds hold keep their labels (`bounds.rs`), and every record's state is refreshed.
/// Returns how many records were assigned in full.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn assign_block<T: Float, const P: usize, const BIG: bool, const FMA: bool>(
    data: &[u8],
    first: u64,
    d: usize,
    c64: &[f64],
    prep: &Prepared<T>,
    want: Want,
    mut bounds: Option<(&PassBounds, &mut BlockBounds, bool)>,
    avx2: Option<Avx2Fma>,
    partial: &mut BlockPartial,
) -> u64 {
    // Where the last pass assigned few of the block's records in full, one record at a time
    // beats the windows' bookkeeping; where it assigned many, the tiles' throughput wins.
    if let Some((pass, state, _)) = bounds.as_mut().filter(|(p, b, u)| p.one_by_one(b, *u)) {
        return assign_bounded::<T, BIG, FMA>(
            data, first, d, c64, prep, want, pass, state, avx2, partial,
        );
    }
    let (m2c, norms) = (&prep.m2c[..], &prep.norms[..]);
    let rec = d * T::SIZE;
    let mut assigned = 0;
    let records = data.len() / rec;
    let mut xt = vec![[T::ZERO; P]; d];
    let mut tile_labels = [0u32; P];
    let mut tile_second = [T::ZERO; P];
    let mut lab = [0u32; WINDOW];
    // A kept record's direct distance, or a recomputed one's second smallest expansion.
    let mut value = [0.0f64; WINDOW];
    let mut kept = [false; WINDOW];
    let mut pending = Vec::with_capacity(WINDOW);
    // Locals, not fields of `partial`: stores through them cannot alias its other fields, so
    // the compiler keeps their pointers in registers.
    let mut sums = std::mem::take(&mut partial.sums);
    let mut counts = std::mem::take(&mut partial.counts);
    let mut inertia = std::mem::take(&mut partial.inertia);
    let mut far_threshold = partial.far.threshold();
    for w0 in (0..records).step_by(WINDOW) {
        let w1 = (w0 + WINDOW).min(records);
        pending.clear();
        // The bounds test.
        for i in w0..w1 {
            kept[i - w0] = false;
            if let Some((pass, state, true)) = bounds.as_mut() {
                let a = state.label[i] as usize;
                let r = &data[i * rec..(i + 1) * rec];
                let (dist, xx) =
                    row_on::<T, BIG, false, true>(avx2, r, &c64[a * d..(a + 1) * d], &mut []);
                if let Some(l) = pass.keeps(state.lower[i], a, dist, xx) {
                    state.lower[i] = l;
                    (lab[i - w0], value[i - w0], kept[i - w0]) = (a as u32, dist, true);
                    continue;
                }
            }
            pending.push(i);
        }
        // The full assignment of the others.
        assigned += pending.len() as u64;
        for tile in pending.chunks(P) {
            for (l, &i) in tile.iter().enumerate() {
                let r = &data[i * rec..(i + 1) * rec];
                for (x, b) in xt.iter_mut().zip(r.chunks_exact(T::SIZE)) {
                    x[l] = T::load::<BIG>(b);
                }
            }
            let (l, s) = (&mut tile_labels, &mut tile_second);
            let done = match (avx2, bounds.is_some()) {
                (Some(a), true) => nearest_avx2::<T, P, true>(a, &xt, m2c, norms, l, s),
                (Some(a), false) => nearest_avx2::<T, P, false>(a, &xt, m2c, norms, l, s),
                (None, _) => false,
            };
            if !done && bounds.is_some() {
                nearest::<T, P, FMA, true>(&xt, m2c, norms, l, s);
            } else if !done {
                nearest::<T, P, FMA, false>(&xt, m2c, norms, l, s);
            }
            for (l, &i) in tile.iter().enumerate() {
                (lab[i - w0], value[i - w0]) = (tile_labels[l], tile_second[l].to_f64());
            }
        }
        // The figures, in file order.
        for i in w0..w1 {
            let o = i - w0;
            let j = lab[o] as usize;
            let r = &data[i * rec..(i + 1) * rec];
            let s = if want.update { &mut sums[j * d..(j + 1) * d] } else { &mut [][..] };
            // The squared distance to the chosen centre, directly (as scikit-learn's inertia
            // and its empty-cluster relocation compute it), in f64, from the record's
            // contiguous bytes; the cluster's sums in the same loop.
            let c = &c64[j * d..(j + 1) * d];
            let dist = if kept[o] {
                if want.update {
                    // The sums only (the distance is the bound test's, the same bits).
                    row_on::<T, BIG, true, false>(avx2, r, c, s);
                }
                value[o]
            } else {
                let (dist, xx) = if want.update {
                    row_on::<T, BIG, true, true>(avx2, r, c, s)
                } else {
                    row_on::<T, BIG, false, true>(avx2, r, c, s)
                };
                if let Some((pass, state, _)) = bounds.as_mut() {
                    state.lower[i] = pass.fresh(value[o], xx);
                    state.label[i] = j as u32;
                }
                dist
            };
            if let Some((pass, state, _)) = bounds.as_mut() {
                state.upper[i] = pass.upper(dist);
            }
            let figures = (&mut counts[..], &mut inertia[..], &mut far_threshold);
            tally::<T, BIG>(
                (want.update, want.labels),
                figures,
                partial,
                (first + i as u64, j, dist),
                r,
            );
        }
    }
    (partial.sums, partial.counts, partial.inertia) = (sums, counts, inertia);
    assigned
}

/// [`assign_block`] for a block whose bounds are the last pass's: one loop over the records in
/// file order, each tested against its bounds and, if the test fails, assigned at once against
/// every centre ([`nearest_one`]), its figures added before the next record is read. The same
/// labels, values and order of additions as the windowed loop, so the same bits; no tile
/// transposition and no second read of the record.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn assign_bounded<T: Float, const BIG: bool, const FMA: bool>(
    data: &[u8],
    first: u64,
    d: usize,
    c64: &[f64],
    prep: &Prepared<T>,
    want: Want,
    pass: &PassBounds,
    state: &mut BlockBounds,
    avx2: Option<Avx2Fma>,
    partial: &mut BlockPartial,
) -> u64 {
    let rec = d * T::SIZE;
    let records = data.len() / rec;
    let mut assigned = 0;
    let mut x = vec![T::ZERO; d];
    let mut sums = std::mem::take(&mut partial.sums);
    let mut counts = std::mem::take(&mut partial.counts);
    let mut inertia = std::mem::take(&mut partial.inertia);
    let mut far_threshold = partial.far.threshold();
    let (lower, label) = (&mut state.lower[..records], &mut state.label[..records]);
    let upper = &mut state.upper[..records];
    for (i, r) in data.chunks_exact(rec).enumerate() {
        let a = label[i] as usize;
        let c = &c64[a * d..(a + 1) * d];
        let (near, xx) = row_on::<T, BIG, false, true>(avx2, r, c, &mut []);
        let (j, dist) = if let Some(l) = pass.keeps(lower[i], a, near, xx) {
            lower[i] = l;
            if want.update {
                row_on::<T, BIG, true, false>(avx2, r, c, &mut sums[a * d..(a + 1) * d]);
            }
            (a, near)
        } else {
            assigned += 1;
            let (j, second) = nearest_one::<T, BIG, FMA>(avx2, r, prep, &mut x);
            let j = j as usize;
            let c = &c64[j * d..(j + 1) * d];
            let (dist, xx) = if want.update {
                row_on::<T, BIG, true, true>(avx2, r, c, &mut sums[j * d..(j + 1) * d])
            } else {
                row_on::<T, BIG, false, true>(avx2, r, c, &mut [])
            };
            (lower[i], label[i]) = (pass.fresh(second.to_f64(), xx), j as u32);
            (j, dist)
        };
        upper[i] = pass.upper(dist);
        let figures = (&mut counts[..], &mut inertia[..], &mut far_threshold);
        tally::<T, BIG>(
            (want.update, want.labels),
            figures,
            partial,
            (first + i as u64, j, dist),
            r,
        );
    }
    (partial.sums, partial.counts, partial.inertia) = (sums, counts, inertia);
    assigned
}

/// The figures of record `index` (bytes `r`) once assigned to centre `j` at squared distance
/// `dist`: its count and label (`update`, `labels`), its cluster's inertia, and a non-finite
/// record or a far one (the candidates that refill empty clusters) noted. `figures` are the loop's counts,
/// inertia and far threshold, kept out of `partial` so that they stay in registers; inlined,
/// with `update` and `labels` constants where the caller's are. Against the live threshold, and
/// the coordinates copied only for a record the heap takes: a window-old threshold let every
/// record of a block's first window allocate (a third of a pass's time).
#[inline(always)]
pub(super) fn tally<T: Float, const BIG: bool>(
    (update, labels): (bool, bool),
    (counts, inertia, far_threshold): (&mut [i64], &mut [f64], &mut f64),
    partial: &mut BlockPartial,
    (index, j, dist): (u64, usize, f64),
    r: &[u8],
) {
    if update {
        counts[j] += 1;
    }
    inertia[j] += dist;
    if labels {
        partial.labels.push(j as i32);
    }
    if !dist.is_finite() || (update && dist > *far_threshold) {
        let coords = || -> Vec<f64> {
            r.chunks_exact(T::SIZE).map(|b| T::load::<BIG>(b).to_f64()).collect()
        };
        if !dist.is_finite() && coords().iter().any(|x| !x.is_finite()) {
            partial.bad.get_or_insert(index);
        } else if update && partial.far.would_take(dist) {
            partial.far.offer(dist, index, j, coords());
            *far_threshold = partial.far.threshold();
        }
    }
}
