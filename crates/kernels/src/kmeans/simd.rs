//! Run-time choice of the instruction set for the assignment loop: the same Rust code
//! (`assign.rs`) compiled once for the baseline target and once with AVX2 and FMA enabled.
//!
//! This is the one module of the crate with `unsafe` code: calling a
//! `#[target_feature]` function is unsafe unless the caller has the features, and the caller
//! here has them only at run time, once [`Isa::detect`] has checked the CPU. The results of
//! the two paths differ in rounding (fused multiply-adds), so a run uses one path throughout:
//! the choice is made once per kernel, and every kernel of a run sees the same CPU.

#![allow(unsafe_code)]

use std::slice::from_raw_parts;

use sluice_io::Block;

use super::assign::Want;
use super::bounds::{BlockBounds, Bound, PassBounds, Refresh, U64, Unread};
use super::kernel::{BlockPartial, Float, KmeansKernel, Prepared};
use super::lean::assign_lean;
pub(super) use crate::cpu::{Avx2Fma, Avx512};

#[cfg(test)]
thread_local! {
    /// Tests force the baseline for the kernels made on their own thread.
    pub(super) static BASELINE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The instruction set the assignment runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Isa {
    /// The compile-time target (SSE2 on x86-64), separate multiply and add.
    Baseline,
    /// AVX2 with fused multiply-add, checked present by [`Isa::detect`].
    #[cfg(target_arch = "x86_64")]
    Avx2Fma(Avx2Fma),
}

impl Isa {
    /// The best path this CPU supports (`SLUICE_KMEANS_BASELINE=1` forces the baseline, for
    /// tests and benchmarks).
    pub(super) fn detect() -> Isa {
        if std::env::var_os("SLUICE_KMEANS_BASELINE").is_some_and(|v| v == "1") {
            return Isa::Baseline;
        }
        #[cfg(test)]
        if BASELINE.with(std::cell::Cell::get) {
            return Isa::Baseline;
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(proof) = Avx2Fma::detect() {
            return Isa::Avx2Fma(proof);
        }
        Isa::Baseline
    }

    /// The partial of `block` on this path.
    pub(super) fn run(self, kernel: &KmeansKernel, block: &Block<'_>) -> BlockPartial {
        match self {
            Isa::Baseline => kernel.run::<false, 16, 32>(block, None),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `proof` exists only where the CPU has AVX2 and FMA (`cpu` rule 1),
            // which is all `run_avx2_fma` requires.
            Isa::Avx2Fma(proof) => unsafe { run_avx2_fma(kernel, block, proof) },
        }
    }
}

/// [`KmeansKernel::run`] compiled for AVX2 and FMA (it and the assignment are
/// `#[inline(always)]`, so they are compiled here with these features). An `unsafe fn` rather
/// than a safe `#[target_feature]` fn so that it builds on the workspace's Rust 1.85.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2_fma(kernel: &KmeansKernel, block: &Block<'_>, proof: Avx2Fma) -> BlockPartial {
    kernel.run::<true, 16, 32>(block, Some(proof))
}

/// [`assign_lean`] for a block of little-endian records, by what `want` asks (each choice its
/// own function compiled for AVX2 and FMA, apart from the kernel's dispatch, so that its loops
/// get the registers to themselves). Returns how many records were assigned in full.
#[allow(clippy::too_many_arguments)]
pub(super) fn lean<T: Float, const P: usize>(
    proof: Avx2Fma,
    data: &[u8],
    first: u64,
    d: usize,
    c64: &[f64],
    prep: &Prepared<T>,
    want: Want,
    bounds: Option<(&PassBounds, &mut BlockBounds, bool)>,
    partial: &mut BlockPartial,
) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! by_d {
            ($update:literal, $($n:literal)*) => {
                match d {
                    $($n => lean_avx2::<T, P, $update, false, $n>,)*
                    _ => lean_avx2::<T, P, $update, false, 0>,
                }
            };
        }
        let f = match (want.update, want.labels) {
            (true, true) => lean_avx2::<T, P, true, true, 0>,
            // The iterations' passes (a pass of moves collects nothing, `moves.rs`), with the
            // record length fixed for the small ones.
            (true, false) => by_d!(true, 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16),
            (false, true) => lean_avx2::<T, P, false, true, 0>,
            (false, false) => by_d!(false, 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16),
        };
        // SAFETY: `proof` exists only once the CPU was found to have AVX2 and FMA, all
        // `lean_avx2` requires.
        unsafe { f(proof, data, first, d, c64, prep, bounds, partial) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (proof, data, first, d, c64, prep, want, bounds, partial);
        unreachable!("Avx2Fma is made on x86-64 only")
    }
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
unsafe fn lean_avx2<
    T: Float,
    const P: usize,
    const UPDATE: bool,
    const LABELS: bool,
    const D: usize,
>(
    proof: Avx2Fma,
    data: &[u8],
    first: u64,
    d: usize,
    c64: &[f64],
    prep: &Prepared<T>,
    bounds: Option<(&PassBounds, &mut BlockBounds, bool)>,
    partial: &mut BlockPartial,
) -> u64 {
    assign_lean::<T, P, UPDATE, LABELS, D>(proof, data, first, d, c64, prep, bounds, partial)
}

/// The proof, if [`Isa::detect`] chooses AVX2 and FMA (tests: it honours their switch).
#[cfg(test)]
pub(super) fn proof() -> Option<Avx2Fma> {
    match Isa::detect() {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma(proof) => Some(proof),
        Isa::Baseline => None,
    }
}

/// [`super::assign::nearest`] with `FMA`, hand-written for AVX2: the tile's records in four
/// registers, two centres at a time (8 accumulators), the running best, labels and second
/// best in registers between centres. Every lane computes the same chain of fused
/// multiply-adds as the portable code, so the labels are the same bits. Returns false (and
/// does nothing) for a tile shape it does not cover: f64 in tiles of 16 and f32 in tiles of
/// 32 only. Where the CPU has AVX-512 ([`wide`]), the same tile in AVX-512 registers.
#[inline(always)]
pub(super) fn nearest_avx2<T: Float, const P: usize, const SECOND: bool>(
    _proof: Avx2Fma,
    xt: &[[T; P]],
    m2c: &[T],
    norms: &[T],
    labels: &mut [u32; P],
    second: &mut [T; P],
) -> bool {
    let (d, k) = (xt.len(), norms.len());
    if m2c.len() != k * d {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // The tile for this width and type: the AVX-512 one only where `wide` found AVX-512F.
        let wide = wide().is_some();
        let (tile64, tile32): (TileFn<f64>, TileFn<f32>) = if wide {
            (tile_wide_f64::<SECOND>, tile_wide_f32::<SECOND>)
        } else {
            (tile_f64::<SECOND>, tile_f32::<SECOND>)
        };
        let (x, m, n) = (xt.as_ptr().cast::<T>(), m2c.as_ptr(), norms.as_ptr());
        let (l, s) = (labels.as_mut_ptr(), second.as_mut_ptr());
        // SAFETY: `_proof` exists only once the CPU was found to have AVX2 and FMA, and the
        // AVX-512 tiles are chosen only where `wide` found AVX-512F: all the tiles require.
        // `Float` is implemented for f32 and f64 only, so the size tells which `T` is and the
        // casts reinterpret it as itself; `xt` is `d` rows of `P` values, `m2c` `k·d`, `norms`
        // `k`, `labels` and `second` `P`, the shapes the tile of that `P` reads and writes.
        unsafe {
            if T::SIZE == 8 && P == 16 {
                let (m, n) = (from_raw_parts(m.cast(), k * d), from_raw_parts(n.cast(), k));
                tile64(x.cast(), d, m, n, l, s.cast());
                return true;
            }
            if T::SIZE == 4 && P == 32 {
                let (m, n) = (from_raw_parts(m.cast(), k * d), from_raw_parts(n.cast(), k));
                tile32(x.cast(), d, m, n, l, s.cast());
                return true;
            }
        }
    }
    let _ = (xt, labels, second);
    false
}

/// A tile of `tile!` on values of type `F`.
#[cfg(target_arch = "x86_64")]
type TileFn<F> = unsafe fn(*const F, usize, &[F], &[F], *mut u32, *mut F);

#[cfg(test)]
thread_local! {
    /// Tests force the AVX2 tile on their own thread where the CPU has AVX-512.
    pub(super) static NARROW: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The AVX-512 proof for the tiles, where the CPU has AVX-512F and AVX-512DQ and
/// `SLUICE_KMEANS_AVX512` is not `0` (read once).
pub(super) fn wide() -> Option<Avx512> {
    #[cfg(test)]
    if NARROW.with(std::cell::Cell::get) {
        return None;
    }
    static WIDE: std::sync::OnceLock<Option<Avx512>> = std::sync::OnceLock::new();
    *WIDE.get_or_init(|| {
        let off = std::env::var_os("SLUICE_KMEANS_AVX512").is_some_and(|v| v == "0");
        if off { None } else { Avx512::detect() }
    })
}

macro_rules! tile {
    ($name:ident, $features:literal, $t:ty, $lanes:expr, $regs:expr, $block:expr, $v:ty,
     $set1:ident, $load:ident, $store:ident, $fmadd:ident, $min:ident,
     |$ca:ident, $cb:ident| $cmp:expr, |$bm:ident, $bx:ident, $by:ident| $blend:expr) => {
        /// One tile of `regs × lanes` records (`d` rows at `xt`) against every centre, `block`
        /// centres at a time (`regs · block` chains of fused multiply-adds in flight), then one
        /// at a time. Every lane computes the same chain as the portable code and keeps the
        /// centres in increasing order with the same strict `<`, so the labels and second
        /// values are the same bits in every width.
        ///
        /// # Safety
        /// The CPU has the features; `xt` holds `d × regs·lanes` values, `labels` and `second`
        /// `regs·lanes`.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name<const SECOND: bool>(
            xt: *const $t,
            d: usize,
            m2c: &[$t],
            norms: &[$t],
            labels: *mut u32,
            second: *mut $t,
        ) {
            use std::arch::x86_64::*;
            const R: usize = $regs;
            const W: usize = R * $lanes;
            let k = norms.len();
            let mut best: [$v; R] = [$set1(<$t>::INFINITY); R];
            let mut sec = best;
            let mut lab: [$v; R] = [$set1(0.0); R];
            let mut keep = |acc: &[$v; R], j: usize| {
                let jv = $set1(j as $t);
                // Where `m`, `y`, else `x`.
                let blend = |$bm, $bx: $v, $by: $v| $blend;
                for q in 0..R {
                    // `acc < best`, false for NaN: the first smallest wins.
                    let m = {
                        let ($ca, $cb) = (acc[q], best[q]);
                        $cmp
                    };
                    if SECOND {
                        sec[q] = $min(blend(m, acc[q], best[q]), sec[q]);
                    }
                    best[q] = blend(m, best[q], acc[q]);
                    lab[q] = blend(m, lab[q], jv);
                }
            };
            // Centres `j..j + c` (`c ≤ block`): their expansions for the tile's registers of
            // records. A closure, so that it is inlined with the tile's features and `c` known.
            let centres = |j: usize, c: usize| -> [[$v; R]; $block] {
                let mut a = [[$set1(0.0); R]; $block];
                for (e, acc) in a.iter_mut().enumerate().take(c) {
                    *acc = [$set1(norms[j + e]); R];
                }
                for f in 0..d {
                    let x: [$v; R] = std::array::from_fn(|q| {
                        // SAFETY: row `f < d` of `W` values, lanes `q·lanes..(q+1)·lanes`.
                        unsafe { $load(xt.add(f * W + q * $lanes)) }
                    });
                    for (e, acc) in a.iter_mut().enumerate().take(c) {
                        let cv = $set1(m2c[(j + e) * d + f]);
                        for q in 0..R {
                            acc[q] = $fmadd(x[q], cv, acc[q]);
                        }
                    }
                }
                a
            };
            let mut j = 0;
            while j + $block <= k {
                for (e, acc) in centres(j, $block).iter().enumerate() {
                    keep(acc, j + e);
                }
                j += $block;
            }
            while j < k {
                keep(&centres(j, 1)[0], j);
                j += 1;
            }
            let mut out = [0.0 as $t; W];
            for q in 0..R {
                // SAFETY: `out` and `second` hold `W` values.
                unsafe {
                    $store(out.as_mut_ptr().add(q * $lanes), lab[q]);
                    if SECOND {
                        $store(second.add(q * $lanes), sec[q]);
                    }
                }
            }
            for (l, &j) in out.iter().enumerate() {
                // SAFETY: `labels` holds `W` values.
                unsafe { *labels.add(l) = j as u32 };
            }
        }
    };
}

// AVX2: four registers of records, two centres at a time.
tile!(
    tile_f64,
    "avx2,fma",
    f64,
    4,
    4,
    2,
    __m256d,
    _mm256_set1_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_fmadd_pd,
    _mm256_min_pd,
    |a, b| _mm256_cmp_pd::<_CMP_LT_OQ>(a, b),
    |m, x, y| _mm256_blendv_pd(x, y, m)
);
tile!(
    tile_f32,
    "avx2,fma",
    f32,
    8,
    4,
    2,
    __m256,
    _mm256_set1_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_fmadd_ps,
    _mm256_min_ps,
    |a, b| _mm256_cmp_ps::<_CMP_LT_OQ>(a, b),
    |m, x, y| _mm256_blendv_ps(x, y, m)
);
// AVX-512: the same records in two registers, four centres at a time, compares into masks.
tile!(
    tile_wide_f64,
    "avx512f",
    f64,
    8,
    2,
    4,
    __m512d,
    _mm512_set1_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_fmadd_pd,
    _mm512_min_pd,
    |a, b| _mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, b),
    |m, x, y| _mm512_mask_blend_pd(m, x, y)
);
tile!(
    tile_wide_f32,
    "avx512f",
    f32,
    16,
    2,
    4,
    __m512,
    _mm512_set1_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_fmadd_ps,
    _mm512_min_ps,
    |a, b| _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b),
    |m, x, y| _mm512_mask_blend_ps(m, x, y)
);

/// [`super::assign::nearest_one`] for a little-endian record, hand-written for AVX2: the
/// record's values broadcast, the centres in lanes (`m2ct` is `d × kp`, `npad` `kp`, `kp` a
/// whole number of vectors), two vectors of centres at a time; per lane the centres in
/// increasing order with the same fused chain and the same strict `<` as the tile, then the
/// lanes merged (the smallest value, the smallest label among equals; the second smallest
/// over the rest). `None` for a shape it does not cover.
#[inline(always)]
pub(super) fn nearest_one_avx2<T: Float>(
    _proof: Avx2Fma,
    r: &[u8],
    m2ct: &[T],
    npad: &[T],
) -> Option<(u32, T)> {
    let (d, kp, lanes) = (r.len() / T::SIZE, npad.len(), 32 / T::SIZE);
    if !r.len().is_multiple_of(T::SIZE) || kp % lanes != 0 || m2ct.len() != d * kp {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if T::SIZE == 8 {
            let (mut best, mut sec, mut lab) = ([0.0f64; 4], [0.0f64; 4], [0.0f64; 4]);
            // SAFETY: `_proof` exists only once the CPU was found to have AVX2 and FMA. `T` is
            // f64 (`Float` is f32 or f64 only, and the size is 8); `r` holds `d` values, `m2ct`
            // `d·kp` and `npad` `kp` (checked above), and the outputs 4 values each.
            unsafe {
                one_f64(
                    r.as_ptr().cast(),
                    d,
                    std::slice::from_raw_parts(m2ct.as_ptr().cast(), d * kp),
                    std::slice::from_raw_parts(npad.as_ptr().cast(), kp),
                    [best.as_mut_ptr(), sec.as_mut_ptr(), lab.as_mut_ptr()],
                );
            }
            let (j, s) = merge(&best, &sec, &lab);
            return Some((j, T::from_f64(s)));
        }
        let (mut best, mut sec, mut lab) = ([0.0f32; 8], [0.0f32; 8], [0.0f32; 8]);
        // SAFETY: as above, with `T` f32 and vectors of 8.
        unsafe {
            one_f32(
                r.as_ptr().cast(),
                d,
                std::slice::from_raw_parts(m2ct.as_ptr().cast(), d * kp),
                std::slice::from_raw_parts(npad.as_ptr().cast(), kp),
                [best.as_mut_ptr(), sec.as_mut_ptr(), lab.as_mut_ptr()],
            );
        }
        let (j, s) = merge(&best, &sec, &lab);
        return Some((j, T::from_f64(f64::from(s))));
    }
    #[allow(unreachable_code)]
    None
}

/// The lanes of [`nearest_one_avx2`] merged: the first smallest over all centres (the smallest
/// value, the smallest label among equal values) and the second smallest value of all.
#[inline(always)]
fn merge<F: Copy + PartialOrd + Into<f64>>(best: &[F], sec: &[F], lab: &[F]) -> (u32, F) {
    let mut at = 0;
    for l in 1..best.len() {
        if best[l] < best[at] || (best[l] == best[at] && lab[l].into() < lab[at].into()) {
            at = l;
        }
    }
    let mut second = sec[0];
    for l in 0..best.len() {
        let v = if l == at {
            sec[l]
        } else if best[l] < sec[l] {
            best[l]
        } else {
            sec[l]
        };
        if v < second {
            second = v;
        }
    }
    (lab[at].into() as u32, second)
}

macro_rules! one {
    ($name:ident, $t:ty, $lanes:expr, $v:ty, $set1:ident, $load:ident,
     $store:ident, $fmadd:ident, $cmp:ident, $blend:ident, $min:ident, $add:ident) => {
        /// One record (`d` values at `x`) against the `kp` centres of `m2ct`/`npad`; per lane
        /// the best value, second value and label to `out`.
        ///
        /// # Safety
        /// AVX2 and FMA; `x` holds `d` values, `m2ct` `d·kp`, `npad` `kp` (a multiple of the
        /// lanes), each of `out` the lanes.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $name(x: *const $t, d: usize, m2ct: &[$t], npad: &[$t], out: [*mut $t; 3]) {
            use std::arch::x86_64::*;
            let inf = $set1(<$t>::INFINITY);
            // Best, second, label per lane.
            let mut st: [$v; 3] = [inf, inf, $set1(0.0)];
            let groups = npad.len() / $lanes;
            let mut g = 0;
            // SAFETY: every call covers groups `g..g + G ≤ groups`; the rest are the caller's
            // promises.
            unsafe {
                while g + 8 <= groups {
                    chunk::<8>(x, d, m2ct, npad, g, &mut st);
                    g += 8;
                }
                match groups - g {
                    0 => {}
                    1 => chunk::<1>(x, d, m2ct, npad, g, &mut st),
                    2 => chunk::<2>(x, d, m2ct, npad, g, &mut st),
                    3 => chunk::<3>(x, d, m2ct, npad, g, &mut st),
                    4 => chunk::<4>(x, d, m2ct, npad, g, &mut st),
                    5 => chunk::<5>(x, d, m2ct, npad, g, &mut st),
                    6 => chunk::<6>(x, d, m2ct, npad, g, &mut st),
                    _ => chunk::<7>(x, d, m2ct, npad, g, &mut st),
                }
            }
            // SAFETY: each of `out` holds a vector.
            unsafe {
                $store(out[0], st[0]);
                $store(out[1], st[1]);
                $store(out[2], st[2]);
            }

            /// Groups `g0..g0 + G` of centres (`G` independent chains in flight), merged
            /// into `st` in increasing order.
            ///
            /// # Safety
            /// As the outer function's, and `(g0 + G)·lanes ≤ kp`.
            #[target_feature(enable = "avx2,fma")]
            unsafe fn chunk<const G: usize>(
                x: *const $t,
                d: usize,
                m2ct: &[$t],
                npad: &[$t],
                g0: usize,
                st: &mut [$v; 3],
            ) {
                let kp = npad.len();
                let mut acc: [$v; G] = std::array::from_fn(|q| {
                    // SAFETY: group `g0 + q < kp / lanes` of `npad`.
                    unsafe { $load(npad.as_ptr().add((g0 + q) * $lanes)) }
                });
                for f in 0..d {
                    // SAFETY: value `f < d` of `x`; row `f` of `m2ct`, groups within `kp`.
                    unsafe {
                        let xv = $set1(x.add(f).read_unaligned());
                        let row = m2ct.as_ptr().add(f * kp + g0 * $lanes);
                        for q in 0..G {
                            acc[q] = $fmadd(xv, $load(row.add(q * $lanes)), acc[q]);
                        }
                    }
                }
                let base: [$t; $lanes] = std::array::from_fn(|l| l as $t);
                // SAFETY: `base` holds a vector.
                let ids: $v = unsafe { $load(base.as_ptr()) };
                let [mut best, mut sec, mut lab] = *st;
                for q in 0..G {
                    // Lane `l` of group `g` is centre `g·lanes + l`; `acc < best`, false for
                    // NaN: the first smallest wins.
                    let jv = $add(ids, $set1(((g0 + q) * $lanes) as $t));
                    let m = $cmp::<_CMP_LT_OQ>(acc[q], best);
                    sec = $min($blend(acc[q], best, m), sec);
                    best = $blend(best, acc[q], m);
                    lab = $blend(lab, jv, m);
                }
                *st = [best, sec, lab];
            }
        }
    };
}

one!(
    one_f64,
    f64,
    4,
    __m256d,
    _mm256_set1_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_fmadd_pd,
    _mm256_cmp_pd,
    _mm256_blendv_pd,
    _mm256_min_pd,
    _mm256_add_pd
);
one!(
    one_f32,
    f32,
    8,
    __m256,
    _mm256_set1_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_fmadd_ps,
    _mm256_cmp_ps,
    _mm256_blendv_ps,
    _mm256_min_ps,
    _mm256_add_ps
);

/// `super::assign::row` for little-endian records, hand-written for AVX2: the same four lanes
/// of separate multiplies and adds, the same combination and tail, so the same bits. `None`
/// for big-endian records.
#[inline(always)]
pub(super) fn row_avx2<T: Float, const BIG: bool, const ADD: bool, const DIST: bool>(
    _proof: Avx2Fma,
    r: &[u8],
    c: &[f64],
    sums: &mut [f64],
) -> Option<(f64, f64)> {
    let d = c.len();
    if BIG || r.len() != d * T::SIZE || (ADD && sums.len() != d) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let s = if ADD { sums.as_mut_ptr() } else { std::ptr::null_mut() };
        // SAFETY: `_proof` exists only once the CPU was found to have AVX2 and FMA; `r` holds
        // `d` values of `T` (checked above), `c` `d`, and `sums` `d` where `ADD`.
        return Some(unsafe {
            if T::SIZE == 8 {
                row_f64::<ADD, DIST, true>(r.as_ptr(), c, s)
            } else {
                row_f32::<ADD, DIST, true>(r.as_ptr(), c, s)
            }
        });
    }
    #[allow(unreachable_code)]
    None
}

/// `‖x − c‖²` of a little-endian record, as [`row_avx2`] computes it (the same bits), without
/// the norm.
#[inline(always)]
pub(super) fn near_avx2<T: Float>(_proof: Avx2Fma, r: &[u8], c: &[f64]) -> f64 {
    let d = c.len();
    assert_eq!(r.len(), d * T::SIZE, "a record of d values");
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `_proof` exists only once the CPU was found to have AVX2 and FMA; `r` holds
        // `d` values of `T` (asserted above) and `c` `d`; no sums are touched.
        return unsafe {
            if T::SIZE == 8 {
                row_f64::<false, true, false>(r.as_ptr(), c, std::ptr::null_mut()).0
            } else {
                row_f32::<false, true, false>(r.as_ptr(), c, std::ptr::null_mut()).0
            }
        };
    }
    #[allow(unreachable_code)]
    {
        unreachable!("Avx2Fma is made on x86-64 only")
    }
}

macro_rules! row {
    ($name:ident, $t:ty, |$p:ident| $load4:expr) => {
        /// # Safety
        /// AVX2; `r` holds `c.len()` values of the type, `sums` `c.len()` where `ADD`.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        #[inline]
        unsafe fn $name<const ADD: bool, const DIST: bool, const NORM: bool>(
            r: *const u8,
            c: &[f64],
            sums: *mut f64,
        ) -> (f64, f64) {
            use std::arch::x86_64::*;
            const SIZE: usize = std::mem::size_of::<$t>();
            let d = c.len();
            let body = d / 4 * 4;
            let mut dd = _mm256_setzero_pd();
            let mut xx = _mm256_setzero_pd();
            let mut f = 0;
            while f < body {
                // SAFETY: values `f..f + 4 ≤ d` of `r`, `c` and `sums`.
                unsafe {
                    let $p = r.add(f * SIZE);
                    let x = $load4;
                    if DIST {
                        let e = _mm256_sub_pd(x, _mm256_loadu_pd(c.as_ptr().add(f)));
                        dd = _mm256_add_pd(dd, _mm256_mul_pd(e, e));
                        if NORM {
                            xx = _mm256_add_pd(xx, _mm256_mul_pd(x, x));
                        }
                    }
                    if ADD {
                        let s = sums.add(f);
                        _mm256_storeu_pd(s, _mm256_add_pd(_mm256_loadu_pd(s), x));
                    }
                }
                f += 4;
            }
            let (mut a, mut b) = ([0.0; 4], [0.0; 4]);
            // SAFETY: `a` and `b` hold 4 values.
            unsafe {
                _mm256_storeu_pd(a.as_mut_ptr(), dd);
                _mm256_storeu_pd(b.as_mut_ptr(), xx);
            }
            let mut dist = (a[0] + a[1]) + (a[2] + a[3]);
            let mut norm = (b[0] + b[1]) + (b[2] + b[3]);
            for f in body..d {
                // SAFETY: value `f < d` of `r`, `c` and `sums`.
                let x = f64::from(unsafe { r.add(f * SIZE).cast::<$t>().read_unaligned() });
                if DIST {
                    dist += (x - c[f]) * (x - c[f]);
                    if NORM {
                        norm += x * x;
                    }
                }
                if ADD {
                    // SAFETY: as above.
                    unsafe { *sums.add(f) += x };
                }
            }
            (dist, norm)
        }
    };
}

row!(row_f64, f64, |p| _mm256_loadu_pd(p.cast()));
row!(row_f32, f32, |p| _mm256_cvtps_pd(_mm_loadu_ps(p.cast())));

/// Asks the CPU to bring the cache lines of `bytes` (up to four) into its caches ahead of
/// their use: for reads at scattered offsets that the hardware prefetchers cannot foresee (the
/// records a pass of moves copies together, `moves.rs`). A hint only; nothing on other CPUs.
#[inline(always)]
pub(super) fn prefetch(bytes: &[u8]) {
    for line in bytes.chunks(64).take(4) {
        sluice_io::prefetch(&line[0]);
    }
}

/// Fills the tile `xt` (value `f` of the tile's record `i` at `xt[f][i]`) with the records of
/// `recs`, little-endian, `xt.len()` values of `T` each, at most `P` of them: the values the
/// lean loop's fill puts there one at a time (`lean.rs`), for a run of records that all go into
/// the tile. Blocks of 8 records × 8 values (f32) or 4 × 4 (f64) are loaded a record per
/// register and transposed in registers; the values and records left over are copied one by
/// one. The lanes past the last record keep what they held.
#[inline(always)]
pub(super) fn fill_tile<T: Float, const P: usize>(_proof: Avx2Fma, recs: &[u8], xt: &mut [[T; P]]) {
    let d = xt.len();
    let n = recs.len() / (d * T::SIZE).max(1);
    assert!(recs.len() == n * d * T::SIZE && n <= P, "at most P whole records");
    #[cfg(target_arch = "x86_64")]
    {
        let out = xt.as_mut_ptr().cast::<u8>();
        // SAFETY: `_proof` exists only once the CPU was found to have AVX2 and FMA; `recs`
        // holds `n` records of `d` values of `T` and `xt` `d` rows of `P ≥ n` values of `T`
        // (asserted above), and `Float` is implemented for f32 and f64 only, so `T` is the
        // type of its size that the function reads and writes.
        unsafe {
            if T::SIZE == 8 {
                fill_f64(recs.as_ptr(), n, d, out.cast(), P);
            } else {
                fill_f32(recs.as_ptr(), n, d, out.cast(), P);
            }
        }
        return;
    }
    #[allow(unreachable_code)]
    for (i, r) in recs.chunks_exact(d * T::SIZE).enumerate() {
        for (x, b) in xt.iter_mut().zip(r.chunks_exact(T::SIZE)) {
            x[i] = T::load::<false>(b);
        }
    }
}

/// The loops of a tile fill: blocks of `B` records × `B` values by `block(i, f)` (records
/// `i..i + B`, values `f..f + B`), the values past the last whole block of a record and the
/// records past the last whole block copied one by one.
///
/// # Safety
/// `r` holds `n` records of `d` values, `xt` `d` rows of `p ≥ n` values; `block` writes rows
/// `f..f + B`, lanes `i..i + B` from those records and values only.
#[inline(always)]
unsafe fn fill_runs<T: Copy, const B: usize>(
    r: *const T,
    (n, d): (usize, usize),
    xt: *mut T,
    p: usize,
    block: impl Fn(usize, usize),
) {
    let (nb, db) = (n / B * B, d / B * B);
    for i in (0..nb).step_by(B) {
        for f in (0..db).step_by(B) {
            block(i, f);
        }
        for f in db..d {
            for k in i..i + B {
                // SAFETY: record `k < n`, value `f < d`; row `f`, lane `k < p`.
                unsafe { *xt.add(f * p + k) = r.add(k * d + f).read_unaligned() };
            }
        }
    }
    for k in nb..n {
        for f in 0..d {
            // SAFETY: as above.
            unsafe { *xt.add(f * p + k) = r.add(k * d + f).read_unaligned() };
        }
    }
}

/// # Safety
/// AVX2; `r` holds `n` records of `d` f32, `xt` `d` rows of `p ≥ n` f32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn fill_f32(r: *const u8, n: usize, d: usize, xt: *mut f32, p: usize) {
    use std::arch::x86_64::*;
    let r = r.cast::<f32>();
    // SAFETY: the contract of `fill_f32` is that of `fill_runs`; the block reads records
    // `i..i + 8 ≤ n`, values `f..f + 8 ≤ d` of each, and writes rows `f..f + 8` of `xt`, lanes
    // `i..i + 8 ≤ p`.
    unsafe {
        fill_runs::<f32, 8>(r, (n, d), xt, p, |i, f| {
            let v: [__m256; 8] = std::array::from_fn(|k| _mm256_loadu_ps(r.add((i + k) * d + f)));
            let (a0, a1) = (_mm256_unpacklo_ps(v[0], v[1]), _mm256_unpackhi_ps(v[0], v[1]));
            let (a2, a3) = (_mm256_unpacklo_ps(v[2], v[3]), _mm256_unpackhi_ps(v[2], v[3]));
            let (a4, a5) = (_mm256_unpacklo_ps(v[4], v[5]), _mm256_unpackhi_ps(v[4], v[5]));
            let (a6, a7) = (_mm256_unpacklo_ps(v[6], v[7]), _mm256_unpackhi_ps(v[6], v[7]));
            // Values f, f + 4 of records 0–3 (low, high halves), then f + 1, f + 5, …
            let b = [
                _mm256_shuffle_ps::<0x44>(a0, a2),
                _mm256_shuffle_ps::<0xEE>(a0, a2),
                _mm256_shuffle_ps::<0x44>(a1, a3),
                _mm256_shuffle_ps::<0xEE>(a1, a3),
            ];
            // The same of records 4–7.
            let c = [
                _mm256_shuffle_ps::<0x44>(a4, a6),
                _mm256_shuffle_ps::<0xEE>(a4, a6),
                _mm256_shuffle_ps::<0x44>(a5, a7),
                _mm256_shuffle_ps::<0xEE>(a5, a7),
            ];
            for q in 0..4 {
                let lo = _mm256_permute2f128_ps::<0x20>(b[q], c[q]);
                let hi = _mm256_permute2f128_ps::<0x31>(b[q], c[q]);
                _mm256_storeu_ps(xt.add((f + q) * p + i), lo);
                _mm256_storeu_ps(xt.add((f + q + 4) * p + i), hi);
            }
        });
    }
}

/// # Safety
/// AVX2; `r` holds `n` records of `d` f64, `xt` `d` rows of `p ≥ n` f64.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn fill_f64(r: *const u8, n: usize, d: usize, xt: *mut f64, p: usize) {
    use std::arch::x86_64::*;
    let r = r.cast::<f64>();
    // SAFETY: as in `fill_f32`, with blocks of 4 records × 4 values.
    unsafe {
        fill_runs::<f64, 4>(r, (n, d), xt, p, |i, f| {
            let v: [__m256d; 4] = std::array::from_fn(|k| _mm256_loadu_pd(r.add((i + k) * d + f)));
            // Values f, f + 2 of records 0, 1 (low, high halves), f + 1, f + 3; then 2, 3.
            let (a0, a1) = (_mm256_unpacklo_pd(v[0], v[1]), _mm256_unpackhi_pd(v[0], v[1]));
            let (a2, a3) = (_mm256_unpacklo_pd(v[2], v[3]), _mm256_unpackhi_pd(v[2], v[3]));
            _mm256_storeu_pd(xt.add(f * p + i), _mm256_permute2f128_pd::<0x20>(a0, a2));
            _mm256_storeu_pd(xt.add((f + 1) * p + i), _mm256_permute2f128_pd::<0x20>(a1, a3));
            _mm256_storeu_pd(xt.add((f + 2) * p + i), _mm256_permute2f128_pd::<0x31>(a0, a2));
            _mm256_storeu_pd(xt.add((f + 3) * p + i), _mm256_permute2f128_pd::<0x31>(a1, a3));
        });
    }
}

/// [`Unread::run`] over a run of records, four at a time in AVX2 registers (the same
/// operations in each lane, so the same bounds and verdicts), the last few by `Unread::run`.
#[inline(always)]
pub(super) fn unread_run(
    _proof: Avx2Fma,
    test: &Unread<'_>,
    lower: &mut [Bound],
    upper: &mut [Bound],
    label: &[u32],
    first: usize,
    at: &mut [usize],
) -> usize {
    let records = label.len();
    assert!(lower.len() == records && upper.len() == records && at.len() >= records);
    let mut n = 0;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let [ua, ub, uc] = test.folded;
        for q in 0..records / 4 {
            let i = 4 * q;
            let a: [usize; 4] = std::array::from_fn(|k| label[i + k] as usize);
            let shift = |s: &[f64]| [s[a[0]], s[a[1]], s[a[2]], s[a[3]]];
            let (own, other) = (shift(test.own), shift(test.other));
            // SAFETY: `_proof` exists only once the CPU was found to have AVX2 and FMA;
            // values `i..i + 4 ≤ records` of `lower` and `upper` (asserted above), the arrays
            // of 4.
            let bits = unsafe {
                let (u, l) = (widen4(upper.as_ptr().add(i)), widen4(lower.as_ptr().add(i)));
                let s = _mm256_add_pd(u, _mm256_loadu_pd(own.as_ptr()));
                let t = _mm256_sub_pd(l, _mm256_loadu_pd(other.as_ptr()));
                // max(t, 0) is 0 for a NaN `t`, as `f64::max`.
                let tp = _mm256_max_pd(t, _mm256_setzero_pd());
                let lhs = _mm256_add_pd(
                    _mm256_mul_pd(_mm256_mul_pd(s, s), _mm256_set1_pd(ua)),
                    _mm256_set1_pd(ub),
                );
                let rhs = _mm256_mul_pd(_mm256_mul_pd(tp, tp), _mm256_set1_pd(uc));
                let keep = _mm256_cmp_pd::<_CMP_LT_OQ>(lhs, rhs);
                let (dn, up) = (1.0 - 2.0 * U64, 1.0 + 2.0 * U64);
                let l2 = _mm256_mul_pd(t, _mm256_set1_pd(dn));
                let u2 = _mm256_mul_pd(s, _mm256_set1_pd(up));
                // A bound not renewed is stored as it was (it is an f32 already).
                _mm_storeu_ps(
                    lower.as_mut_ptr().add(i),
                    round4::<false>(_mm256_blendv_pd(l, l2, keep)),
                );
                _mm_storeu_ps(
                    upper.as_mut_ptr().add(i),
                    round4::<true>(_mm256_blendv_pd(u, u2, keep)),
                );
                _mm256_movemask_pd(keep)
            };
            for k in 0..4 {
                at[n] = first + i + k;
                n += ((bits >> k) & 1 ^ 1) as usize;
            }
        }
    }
    let from = if cfg!(target_arch = "x86_64") { records / 4 * 4 } else { 0 };
    n + test.run(from, lower, upper, label, first, &mut at[n..])
}

/// [`Refresh::run`] over a window, four records at a time in AVX2 registers: the same
/// operations in each lane, without a branch, so the same bounds, labels and count; the last
/// few by `Refresh::run`.
#[inline(always)]
pub(super) fn refresh_run(
    _proof: Avx2Fma,
    refresh: &Refresh<'_>,
    (kept, lab): (&[bool], &[u32]),
    (dist, second, xx): (&[f64], &[f64], &[f64]),
    (lower, upper, label): (&mut [Bound], &mut [Bound], &mut [u32]),
) -> u64 {
    let records = kept.len();
    assert!(
        [lab.len(), dist.len(), second.len(), xx.len(), lower.len(), upper.len(), label.len()]
            .iter()
            .all(|&n| n == records),
        "a window's records in every slice"
    );
    let mut assigned = 0;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let other = refresh.other.unwrap_or(&[]);
        // The verdict applies in a dense block with the centres' shifts only.
        let verdict = f64::from_bits(if refresh.dense && refresh.other.is_some() { !0 } else { 0 });
        // `margin(xx) = 2·coef·(2C² + xx)`, as `PassBounds::margin`.
        let (coef2, c2x2) = (2.0 * refresh.coef, 2.0 * refresh.c2);
        for q in 0..records / 4 {
            let i = 4 * q;
            // The verdict's shift of each record's new centre (0 without the shifts, where
            // the verdict keeps nothing).
            let oth: [f64; 4] = std::array::from_fn(|k| {
                other.get(lab[i + k] as usize).copied().unwrap_or_default()
            });
            let flags: [i64; 4] = std::array::from_fn(|k| -i64::from(kept[i + k]));
            // SAFETY: `_proof` exists only once the CPU was found to have AVX2 and FMA; values
            // `i..i + 4 ≤ records` of every slice (asserted above), the arrays of 4.
            let missed = unsafe {
                let set = _mm256_set1_pd;
                let d = _mm256_loadu_pd(dist.as_ptr().add(i));
                let near = _mm256_mul_pd(d, set(refresh.direct));
                let up = _mm256_mul_pd(_mm256_sqrt_pd(near), set(1.0 + 2.0 * U64));
                _mm_storeu_ps(upper.as_mut_ptr().add(i), round4::<true>(up));
                let margin = |xx| _mm256_mul_pd(set(coef2), _mm256_add_pd(set(c2x2), xx));
                // The verdict (`PassBounds::within` at `near`).
                let lw = widen4(lower.as_ptr().add(i));
                let l = _mm256_mul_pd(
                    _mm256_sub_pd(lw, _mm256_loadu_pd(oth.as_ptr())),
                    set(1.0 - 2.0 * U64),
                );
                let xv = _mm256_mul_pd(
                    _mm256_add_pd(_mm256_mul_pd(set(2.0), near), set(c2x2)),
                    set(1.0 + 4.0 * U64),
                );
                let lhs = _mm256_add_pd(near, margin(xv));
                let rhs = _mm256_mul_pd(_mm256_mul_pd(l, l), set(1.0 - 4.0 * U64));
                let pos = _mm256_cmp_pd::<_CMP_GT_OQ>(l, _mm256_setzero_pd());
                let keep = _mm256_and_pd(pos, _mm256_cmp_pd::<_CMP_LT_OQ>(lhs, rhs));
                // … and only for a record whose label did not move.
                let old = _mm_loadu_si128(label.as_ptr().add(i).cast());
                let new = _mm_loadu_si128(lab.as_ptr().add(i).cast());
                let same = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm_cmpeq_epi32(old, new)));
                let keep = _mm256_and_pd(_mm256_and_pd(keep, same), set(verdict));
                // The fresh bound (`PassBounds::fresh`).
                let xr = _mm256_loadu_pd(xx.as_ptr().add(i));
                let l2 = _mm256_sub_pd(
                    _mm256_add_pd(_mm256_loadu_pd(second.as_ptr().add(i)), xr),
                    margin(xr),
                );
                let fresh = _mm256_and_pd(
                    _mm256_mul_pd(_mm256_sqrt_pd(l2), set(1.0 - 2.0 * U64)),
                    _mm256_cmp_pd::<_CMP_GT_OQ>(l2, _mm256_setzero_pd()),
                );
                let was = _mm256_castsi256_pd(_mm256_loadu_si256(flags.as_ptr().cast()));
                let lo = _mm256_blendv_pd(_mm256_blendv_pd(fresh, l, keep), lw, was);
                _mm_storeu_ps(lower.as_mut_ptr().add(i), round4::<false>(lo));
                _mm_storeu_si128(label.as_mut_ptr().add(i).cast(), new);
                _mm256_movemask_pd(_mm256_or_pd(keep, was)) ^ 0b1111
            };
            assigned += u64::from(missed.count_ones());
        }
    }
    let from = if cfg!(target_arch = "x86_64") { records / 4 * 4 } else { 0 };
    assigned + refresh.run(from, (kept, lab), (dist, second, xx), (lower, upper, label))
}

/// Four stored bounds, widened to f64 (exactly).
///
/// # Safety
/// AVX2; `p` points to four values.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn widen4(p: *const Bound) -> std::arch::x86_64::__m256d {
    use std::arch::x86_64::*;
    // SAFETY: the caller's.
    unsafe { _mm256_cvtps_pd(_mm_loadu_ps(p)) }
}

/// The lanes of a 64-bit compare mask as 32-bit lanes (all ones or zero each).
///
/// # Safety
/// AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn narrow_mask(m: std::arch::x86_64::__m256d) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::*;
    // SAFETY: the caller's (AVX2); register operations only.
    unsafe {
        let low = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(m), low))
    }
}

/// `bounds::down` (`UP` false) or `bounds::up` (`UP` true) of four values (never negative;
/// a NaN stays NaN): rounded to nearest, then one step (the bits of a non-negative f32 less or
/// plus one) where that went past `x` on the wrong side.
///
/// # Safety
/// AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn round4<const UP: bool>(x: std::arch::x86_64::__m256d) -> std::arch::x86_64::__m128 {
    use std::arch::x86_64::*;
    // SAFETY: the caller's (AVX2); register operations only.
    unsafe {
        let f = _mm256_cvtpd_ps(x);
        let back = _mm256_cvtps_pd(f);
        let past = if UP {
            _mm256_cmp_pd::<_CMP_LT_OQ>(back, x)
        } else {
            _mm256_cmp_pd::<_CMP_GT_OQ>(back, x)
        };
        // `past` is −1 in a lane to step: away from zero rounding up, towards it down.
        let step = narrow_mask(past);
        let bits = _mm_castps_si128(f);
        _mm_castsi128_ps(if UP { _mm_sub_epi32(bits, step) } else { _mm_add_epi32(bits, step) })
    }
}

/// [`round4`] down and up of four values, for the tests.
#[cfg(test)]
pub(super) fn round_both(_proof: Avx2Fma, x: [f64; 4]) -> ([Bound; 4], [Bound; 4]) {
    let (mut d, mut u) = ([0.0; 4], [0.0; 4]);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_proof` exists only once the CPU was found to have AVX2; the arrays hold four.
    unsafe {
        use std::arch::x86_64::*;
        let v = _mm256_loadu_pd(x.as_ptr());
        _mm_storeu_ps(d.as_mut_ptr(), round4::<false>(v));
        _mm_storeu_ps(u.as_mut_ptr(), round4::<true>(v));
    }
    (d, u)
}
