//! AVX2 and FMA loops for the FFT's passes outside rustfft: the deal of a process's input into
//! the 2, 4 or 8 lanes and the combine of the 2, 4 or 8 rows of the parallel plan (`shared`), and the
//! transposing gathers and the twiddled scatter of the four-step (`fourstep`). Without them the
//! workspace's x86-64 baseline compiles all of them to 16-byte SSE2 moves and the complex
//! products to scalar-pair arithmetic with shuffles. `perf` put 20 % of a call's samples in
//! the two p = 2 passes at 2^16 (the FFTs 67 %), and 64 % in the four-step's own loops at 2^22
//! (the FFTs 29 %).
//!
//! The only `unsafe` code of this module: the intrinsics, behind the [`Avx2Fma`] proof that the
//! CPU has them (`crate::cpu`), and the unaligned loads and stores of two values at offsets the
//! loops bound.
//!
//! # Contract
//! 1. [`detect`] returns the proof of `crate::cpu` (the CPU runs AVX2 and FMA) unless
//!    `SLUICE_FFT_BASELINE` is `1` (tests and benchmarks force the portable loops with it).
//! 2. [`deal_pair`] gives `d0[l] = src[2l]` and `d1[l] = src[2l + 1]`, bit for bit, as the
//!    portable loop.
//! 3. [`combine_pair`] gives the portable `combine_pair`'s values with each complex product
//!    rounded once per component (fused multiply-add): `u ± y·(base·step)`, times `scale` where
//!    it is `Some`. Not the same bits as the portable loop; within an ulp or two of each.
//! 4. [`pair_columns`] gives `dst[c·stride + at] = a[c]` and `dst[c·stride + at + 1] = b[c]`
//!    for every `c < a.len()`, bit for bit.
//! 5. [`twiddle_rows`] gives `dst[r·w + c] = src[r·stride + k0 + c] · ω_n^{(s0 + r)(k0 + c)}`
//!    for `r < dst.len()/w`, `c < w`, the factor from `Twiddles::get`'s two table entries,
//!    each product rounded once per component, written with non-temporal stores where `dst`
//!    is 16-byte aligned (the caller fences, `huge::stream_fence`).
//! 6. [`unpair_columns`] gives `d0[c] = src[c·stride + at]·f` and
//!    `d1[c] = src[c·stride + at + 1]·f` for every `c < d0.len()` (`f` = `scale`, or no
//!    product where it is `None`), written with non-temporal stores where both are 16-byte
//!    aligned (the caller fences); without a scale, bit for bit.
//! 7. [`combine_quad`] gives [`quad`]'s values for each column i of the four rows (t_r =
//!    base_r·steps_r[i]), times `scale` where it is `Some`, with each complex product rounded
//!    once per component: within an ulp or two of the portable arithmetic.
//! 8. [`deal`] with four lanes gives `d[t][l] = src[4l + t]` for t < 4, bit for bit, as the
//!    portable loop.
//! 9. [`combine_oct`] gives [`oct`]'s values for each column i of the eight rows (t_r =
//!    base_r·steps_r[i]), times `scale` where it is `Some`, with each complex product rounded
//!    once per component: within a few ulps of the portable arithmetic.
//! 10. [`deal`] with eight lanes gives `d[t][l] = src[8l + t]` for t < 8, bit for bit, as the
//!     portable loop.
//! 11. [`deal_window`] gives `d[j][l] = src[8l + (w + j) mod 8]` for j < 4, w < 8 and every l,
//!     bit for bit: four of the eight lanes, those whose values of a row start at its value w
//!     (where value w of row 0 begins a cache line, each row's four are one whole line).
//! 12. [`combine_oct_wide`] gives [`combine_oct`]'s values: within a few ulps of the portable
//!     arithmetic ([`detect_wide`] gives its proof where the CPU runs AVX-512F and DQ).

#![allow(unsafe_code)]

use rustfft::num_complex::Complex64;

use super::twiddle::Twiddles;

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

pub(super) use crate::cpu::{Avx2Fma, Avx512};

#[cfg(test)]
thread_local! {
    /// Tests force the portable loops on their own thread (the environment is the process's).
    pub(super) static PORTABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The proof of rule 12, as [`detect`] (`SLUICE_FFT_BASELINE=1` turns it off too), unless
/// `SLUICE_FFT_AVX512` is `0` (benchmarks compare the two with it).
pub(super) fn detect_wide() -> Option<Avx512> {
    detect()?;
    if std::env::var("SLUICE_FFT_AVX512").as_deref() == Ok("0") {
        return None;
    }
    Avx512::detect()
}

/// Rule 1.
pub(super) fn detect() -> Option<Avx2Fma> {
    if std::env::var_os("SLUICE_FFT_BASELINE").is_some_and(|v| v == "1") {
        return None;
    }
    #[cfg(test)]
    if PORTABLE.with(std::cell::Cell::get) {
        return None;
    }
    Avx2Fma::detect()
}

/// Rule 2. `src` holds `2·d0.len()` values; `d1` is as long as `d0`.
pub(super) fn deal_pair(
    _proof: Avx2Fma,
    src: &[Complex64],
    d0: &mut [Complex64],
    d1: &mut [Complex64],
) {
    assert!(src.len() == 2 * d0.len() && d1.len() == d0.len());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `proof` exists only where AVX2 runs (rule 1); the lengths are checked above:
    // value `c·2 + 1` of `src` lies inside it for every `c < d0.len()`.
    unsafe {
        // The values in pairs: a transpose of n rows of 2, into the caches (the FFT reads the
        // lanes next; non-temporal stores were slower at 2^18).
        unpair_columns_avx2::<false, false>(src, 2, 0, 1.0, d0, d1);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (src, d0, d1);
}

/// Rules 8 and 10, for R = 4 or 8 lanes. `src` holds `R·d[0].len()` values; every `d[t]` is as
/// long as `d[0]`.
pub(super) fn deal<const R: usize>(_proof: Avx2Fma, src: &[Complex64], d: [&mut [Complex64]; R]) {
    let n = d[0].len();
    const { assert!(R == 4 || R == 8, "deal: 4 or 8 lanes") };
    assert!(src.len() == R * n && d.iter().all(|x| x.len() == n));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `proof` exists only where AVX2 runs (rule 1); the lengths are checked above.
    unsafe {
        deal_avx2(src, d);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (src, d);
}

/// Rule 11. `src` holds `8·d[0].len()` values; every `d[j]` is as long as `d[0]`.
pub(super) fn deal_window(_proof: Avx2Fma, src: &[Complex64], w: usize, d: [&mut [Complex64]; 4]) {
    let n = d[0].len();
    assert!(w < 8 && src.len() == 8 * n && d.iter().all(|x| x.len() == n));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `proof` exists only where AVX2 runs (rule 1); the lengths are checked above.
    unsafe {
        deal_window_avx2(src, w, d);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (src, w, d);
}

/// Rule 3, for one tile: `a[i], c[i] ← (u + v)·f, (u − v)·f` with `u = a[i]`,
/// `v = c[i]·(base·steps[i])` and `f = scale` (or no product where `scale` is `None`).
pub(super) fn combine_pair(
    _proof: Avx2Fma,
    a: &mut [Complex64],
    c: &mut [Complex64],
    steps: &[Complex64],
    base: Complex64,
    scale: Option<f64>,
) {
    assert!(c.len() == a.len() && steps.len() >= a.len());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `proof` exists only where AVX2 and FMA run (rule 1); the lengths are checked
    // above.
    unsafe {
        match scale {
            None => combine_pair_fma::<false>(a, c, steps, base, 1.0),
            Some(f) => combine_pair_fma::<true>(a, c, steps, base, f),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (a, c, steps, base, scale);
}

/// The public side of a combine in registers of R rows (rules 7 and 9): checks the lengths and
/// picks the kernel's direction and scaling.
macro_rules! combine_in_registers {
    ($(#[$doc:meta])* $name:ident, $kernel:ident, $r:literal) => {
        $(#[$doc])*
        pub(super) fn $name(
            _proof: Avx2Fma,
            rows: [&mut [Complex64]; $r],
            steps: [&[Complex64]; $r],
            base: [Complex64; $r],
            inverse: bool,
            scale: Option<f64>,
        ) {
            let n = rows[0].len();
            assert!(rows.iter().all(|r| r.len() == n) && steps[1..].iter().all(|s| s.len() >= n));
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `proof` exists only where AVX2 and FMA run (rule 1); the lengths are
            // checked above.
            unsafe {
                match (inverse, scale) {
                    (false, None) => $kernel::<false, false>(rows, steps, base, 1.0),
                    (false, Some(f)) => $kernel::<false, true>(rows, steps, base, f),
                    (true, None) => $kernel::<true, false>(rows, steps, base, 1.0),
                    (true, Some(f)) => $kernel::<true, true>(rows, steps, base, f),
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = (rows, steps, base, inverse, scale);
        }
    };
}

combine_in_registers!(
    /// Rule 7, for one tile: `rows[0..4]` of equal length, `steps[r]` the tile's steps of row
    /// r (at least as long), `base[r]` = ω_n^{r·k} for the tile's first column k (`base[0]`
    /// unused), `inverse` picks ω_4 = +i (else −i).
    combine_quad,
    combine_quad_fma,
    4
);

combine_in_registers!(
    /// Rule 9, for one tile: as [`combine_quad`] with eight rows (`base[0]` unused).
    combine_oct,
    combine_oct_fma,
    8
);

/// Rule 12, for one tile: as [`combine_oct`], four columns at a time in 512-bit registers, the
/// last `len mod 4` columns by [`combine_oct`].
pub(super) fn combine_oct_wide(
    _wide: Avx512,
    proof: Avx2Fma,
    mut rows: [&mut [Complex64]; 8],
    steps: [&[Complex64]; 8],
    base: [Complex64; 8],
    inverse: bool,
    scale: Option<f64>,
) {
    let n = rows[0].len();
    assert!(rows.iter().all(|r| r.len() == n) && steps[1..].iter().all(|s| s.len() >= n));
    let wide = n - n % 4;
    #[cfg(target_arch = "x86_64")]
    {
        let p = rows.each_mut().map(|r| r.as_mut_ptr().cast::<f64>());
        let f = scale.unwrap_or(1.0);
        // SAFETY: `wide` exists only where AVX-512F and DQ run (rule 1); the lengths are
        // checked above, and `p[r]` points at row r, which this call borrows mutably.
        unsafe {
            match (inverse, scale.is_some()) {
                (false, false) => combine_oct_512::<false, false>(p, wide, steps, base, f),
                (false, true) => combine_oct_512::<false, true>(p, wide, steps, base, f),
                (true, false) => combine_oct_512::<true, false>(p, wide, steps, base, f),
                (true, true) => combine_oct_512::<true, true>(p, wide, steps, base, f),
            }
        }
    }
    if wide < n {
        let mut it = rows.into_iter().map(|r| &mut r[wide..]);
        let rest = std::array::from_fn(|_| it.next().expect("eight rows"));
        let steps = std::array::from_fn(|r| &steps[r][wide.min(steps[r].len())..]);
        combine_oct(proof, rest, steps, base, inverse, scale);
    }
}

/// The portable arithmetic of [`combine_quad`] for one column: `a[r]` the column's values,
/// `t[r]` = ω_n^{r·k} (`t[0]` unused); returns outputs k2 = 0..4.
pub(super) fn quad(a: [Complex64; 4], t: [Complex64; 4], inverse: bool) -> [Complex64; 4] {
    let (v0, v1, v2, v3) = (a[0], a[1] * t[1], a[2] * t[2], a[3] * t[3]);
    let (s02, d02, s13, d13) = (v0 + v2, v0 - v2, v1 + v3, v1 - v3);
    // ω_4·d13: −i·d13 forward, +i·d13 inverse.
    let w = if inverse { Complex64::new(-d13.im, d13.re) } else { Complex64::new(d13.im, -d13.re) };
    [s02 + s13, d02 + w, s02 - s13, d02 - w]
}

/// The portable arithmetic of [`combine_oct`] for one column: `a[r]` the column's values,
/// `t[r]` = ω_n^{r·k} (`t[0]` unused); returns outputs k2 = 0..8. Two 4-point FFTs ([`quad`])
/// of the even and the odd rows, joined by ω_8^k.
pub(super) fn oct(a: [Complex64; 8], t: [Complex64; 8], inverse: bool) -> [Complex64; 8] {
    let one = Complex64::new(1.0, 0.0);
    let v: [Complex64; 8] = std::array::from_fn(|r| if r == 0 { a[0] } else { a[r] * t[r] });
    let e = quad([v[0], v[2], v[4], v[6]], [one; 4], inverse);
    let o = quad([v[1], v[3], v[5], v[7]], [one; 4], inverse);
    let w = eighth_roots(inverse);
    let o = [o[0], o[1] * w[1], o[2] * w[2], o[3] * w[3]];
    [
        e[0] + o[0],
        e[1] + o[1],
        e[2] + o[2],
        e[3] + o[3],
        e[0] - o[0],
        e[1] - o[1],
        e[2] - o[2],
        e[3] - o[3],
    ]
}

/// ω_8^k for k < 4 (ω_8 = e^{∓iπ/4}: − forward, + inverse).
fn eighth_roots(inverse: bool) -> [Complex64; 4] {
    let (h, s) = (std::f64::consts::FRAC_1_SQRT_2, if inverse { 1.0 } else { -1.0 });
    [
        Complex64::new(1.0, 0.0),
        Complex64::new(h, s * h),
        Complex64::new(0.0, s),
        Complex64::new(-h, s * h),
    ]
}

/// Rule 4. `b` is as long as `a`, and `dst` holds every index written.
pub(super) fn pair_columns(
    _proof: Avx2Fma,
    a: &[Complex64],
    b: &[Complex64],
    dst: &mut [Complex64],
    stride: usize,
    at: usize,
) {
    let n = a.len();
    assert!(b.len() == n && stride >= 2 && at + 1 < stride);
    assert!(n == 0 || (n - 1) * stride + at + 1 < dst.len());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `proof` exists only where AVX2 runs (rule 1); the bounds are checked above.
    unsafe {
        pair_columns_avx2(a, b, dst, stride, at);
    }
}

/// Rule 5. `src` holds row `r`'s values `k0..k0 + w` at `r·stride + k0..`; `w` divides
/// `dst.len()`; every exponent `(s0 + r)(k0 + c)` is below the tables' n.
#[allow(clippy::too_many_arguments)]
pub(super) fn twiddle_rows(
    _proof: Avx2Fma,
    dst: &mut [Complex64],
    src: &[Complex64],
    stride: usize,
    k0: usize,
    w: usize,
    s0: usize,
    twiddles: &Twiddles,
) {
    let rows = dst.len() / w.max(1);
    assert!(w > 0 && rows * w == dst.len());
    assert!(rows == 0 || (rows - 1) * stride + k0 + w <= src.len());
    let (hi, lo, shift, mask) = twiddles.tables();
    // The largest exponent indexes within both tables.
    let top = (s0 + rows.max(1) - 1) * (k0 + w - 1);
    assert!(top >> shift < hi.len() && mask < lo.len());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `proof` exists only where AVX2 and FMA run (rule 1); the bounds are checked
    // above: every exponent is at most `top`.
    unsafe {
        twiddle_rows_fma(dst, src, stride, k0, w, s0, (hi, lo, shift, mask));
    }
}

/// Rule 6. `d1` is as long as `d0`, and `src` holds every index read.
pub(super) fn unpair_columns(
    _proof: Avx2Fma,
    src: &[Complex64],
    stride: usize,
    at: usize,
    scale: Option<f64>,
    d0: &mut [Complex64],
    d1: &mut [Complex64],
) {
    let n = d0.len();
    assert!(d1.len() == n && stride >= 2 && at + 1 < stride);
    assert!(n == 0 || (n - 1) * stride + at + 1 < src.len());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `proof` exists only where AVX2 runs (rule 1); the bounds are checked above.
    unsafe {
        match scale {
            None => unpair_columns_avx2::<false, true>(src, stride, at, 1.0, d0, d1),
            Some(f) => unpair_columns_avx2::<true, true>(src, stride, at, f, d0, d1),
        }
    }
}

/// [`unpair_columns`], with non-temporal stores (where aligned) only if `STREAM`.
///
/// # Safety
/// AVX2 must run; the bounds [`unpair_columns`] checks hold.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn unpair_columns_avx2<const SCALED: bool, const STREAM: bool>(
    src: &[Complex64],
    stride: usize,
    at: usize,
    f: f64,
    d0: &mut [Complex64],
    d1: &mut [Complex64],
) {
    let n = d0.len();
    let stream = STREAM && d0.as_ptr().align_offset(16) == 0 && d1.as_ptr().align_offset(16) == 0;
    let (ps, p0, p1) = (src.as_ptr().cast::<f64>(), d0.as_mut_ptr().cast::<f64>(), d1.as_mut_ptr());
    let p1 = p1.cast::<f64>();
    let fv = _mm256_set1_pd(f);
    let mut c = 0;
    while c + 2 <= n {
        // SAFETY: values c·stride + at.. and (c + 1)·stride + at.. (two each) lie inside `src`
        // (checked by `unpair_columns`), values c, c + 1 inside `d0` and `d1` (c + 2 ≤ n); the
        // streamed halves are 16-byte aligned where `stream`.
        unsafe {
            let s0 = ps.add(2 * (c * stride + at));
            let (mut va, mut vb) = (_mm256_loadu_pd(s0), _mm256_loadu_pd(s0.add(2 * stride)));
            if SCALED {
                (va, vb) = (_mm256_mul_pd(va, fv), _mm256_mul_pd(vb, fv));
            }
            let (x, y) =
                (_mm256_permute2f128_pd::<0x20>(va, vb), _mm256_permute2f128_pd::<0x31>(va, vb));
            if stream {
                _mm_stream_pd(p0.add(2 * c), _mm256_castpd256_pd128(x));
                _mm_stream_pd(p0.add(2 * c + 2), _mm256_extractf128_pd::<1>(x));
                _mm_stream_pd(p1.add(2 * c), _mm256_castpd256_pd128(y));
                _mm_stream_pd(p1.add(2 * c + 2), _mm256_extractf128_pd::<1>(y));
            } else {
                _mm256_storeu_pd(p0.add(2 * c), x);
                _mm256_storeu_pd(p1.add(2 * c), y);
            }
        }
        c += 2;
    }
    if c < n {
        let g = if SCALED { f } else { 1.0 };
        let v = (src[c * stride + at], src[c * stride + at + 1]);
        (d0[c], d1[c]) = if SCALED { (v.0 * g, v.1 * g) } else { v };
    }
}

/// # Safety
/// AVX2 must run; the bounds [`pair_columns`] checks hold.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pair_columns_avx2(
    a: &[Complex64],
    b: &[Complex64],
    dst: &mut [Complex64],
    stride: usize,
    at: usize,
) {
    let n = a.len();
    let (pa, pb, pd) = (a.as_ptr().cast::<f64>(), b.as_ptr().cast::<f64>(), dst.as_mut_ptr());
    let pd = pd.cast::<f64>();
    let mut c = 0;
    while c + 2 <= n {
        // SAFETY: values c, c + 1 of `a` and `b` lie inside them (c + 2 ≤ n), and values
        // c·stride + at.. and (c + 1)·stride + at.. (two each) inside `dst` (checked by
        // `pair_columns`); value i starts at f64 offset 2i.
        unsafe {
            let (va, vb) = (_mm256_loadu_pd(pa.add(2 * c)), _mm256_loadu_pd(pb.add(2 * c)));
            let d0 = pd.add(2 * (c * stride + at));
            _mm256_storeu_pd(d0, _mm256_permute2f128_pd::<0x20>(va, vb));
            _mm256_storeu_pd(d0.add(2 * stride), _mm256_permute2f128_pd::<0x31>(va, vb));
        }
        c += 2;
    }
    if c < n {
        (dst[c * stride + at], dst[c * stride + at + 1]) = (a[c], b[c]);
    }
}

/// # Safety
/// AVX2 and FMA must run; the bounds [`twiddle_rows`] checks hold.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn twiddle_rows_fma(
    dst: &mut [Complex64],
    src: &[Complex64],
    stride: usize,
    k0: usize,
    w: usize,
    s0: usize,
    (hi, lo, shift, mask): (&[Complex64], &[Complex64], u32, usize),
) {
    let stream = dst.as_ptr().align_offset(16) == 0;
    let (ph, pl) = (hi.as_ptr().cast::<f64>(), lo.as_ptr().cast::<f64>());
    for (r, row) in dst.chunks_exact_mut(w).enumerate() {
        let (x, step) = (&src[r * stride + k0..r * stride + k0 + w], s0 + r);
        let pd = row.as_mut_ptr().cast::<f64>();
        let px = x.as_ptr().cast::<f64>();
        let mut e = step * k0;
        let mut c = 0;
        while c + 2 <= w {
            let e1 = e + step;
            // SAFETY: exponents e and e1 are at most `twiddle_rows`'s `top`, so both table
            // indices lie inside the tables; values c, c + 1 lie inside `x` and `row` (c + 2 ≤
            // w); the streamed halves are 16-byte aligned where `stream` (the row starts at a
            // multiple of 16 bytes from `dst`).
            unsafe {
                let h = _mm256_insertf128_pd::<1>(
                    _mm256_castpd128_pd256(_mm_loadu_pd(ph.add(2 * (e >> shift)))),
                    _mm_loadu_pd(ph.add(2 * (e1 >> shift))),
                );
                let l = _mm256_insertf128_pd::<1>(
                    _mm256_castpd128_pd256(_mm_loadu_pd(pl.add(2 * (e & mask)))),
                    _mm_loadu_pd(pl.add(2 * (e1 & mask))),
                );
                let v = mul2(_mm256_loadu_pd(px.add(2 * c)), mul2(h, l));
                if stream {
                    _mm_stream_pd(pd.add(2 * c), _mm256_castpd256_pd128(v));
                    _mm_stream_pd(pd.add(2 * c + 2), _mm256_extractf128_pd::<1>(v));
                } else {
                    _mm256_storeu_pd(pd.add(2 * c), v);
                }
            }
            (e, c) = (e1 + step, c + 2);
        }
        if c < w {
            let t = hi[e >> shift] * lo[e & mask];
            row[c] = x[c] * t;
        }
    }
}

/// The sign mask of ω_4·d: d's components swapped, then one of them negated (−i·d forward,
/// +i·d inverse). Callable only from code that itself runs with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn omega4_flip(inverse: bool) -> __m256d {
    if inverse {
        _mm256_setr_pd(-0.0, 0.0, -0.0, 0.0)
    } else {
        _mm256_setr_pd(0.0, -0.0, 0.0, -0.0)
    }
}

/// Two complex products, `[x0·y0, x1·y1]` with one rounding per component.
///
/// # Safety
/// AVX2 and FMA must run.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn mul2(x: __m256d, y: __m256d) -> __m256d {
    // [x.re·y.re − x.im·y.im, x.im·y.re + x.re·y.im] per value.
    let yr = _mm256_movedup_pd(y);
    let yi = _mm256_permute_pd::<0b1111>(y);
    let xs = _mm256_permute_pd::<0b0101>(x);
    _mm256_fmaddsub_pd(x, yr, _mm256_mul_pd(xs, yi))
}

/// # Safety
/// AVX2 and FMA must run; `c.len() == a.len() ≤ steps.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn combine_pair_fma<const SCALED: bool>(
    a: &mut [Complex64],
    c: &mut [Complex64],
    steps: &[Complex64],
    base: Complex64,
    f: f64,
) {
    let n = a.len();
    let (pa, pc, ps) = (a.as_mut_ptr().cast::<f64>(), c.as_mut_ptr().cast::<f64>(), steps.as_ptr());
    let ps = ps.cast::<f64>();
    let b = _mm256_setr_pd(base.re, base.im, base.re, base.im);
    let fv = _mm256_set1_pd(f);
    let mut i = 0;
    while i + 2 <= n {
        // SAFETY: values i..i + 2 of `a`, `c` and `steps` lie inside them (i + 2 ≤ n ≤
        // steps.len()); value i starts at f64 offset 2i.
        unsafe {
            let t = mul2(b, _mm256_loadu_pd(ps.add(2 * i)));
            let v = mul2(_mm256_loadu_pd(pc.add(2 * i)), t);
            let u = _mm256_loadu_pd(pa.add(2 * i));
            let (mut x, mut y) = (_mm256_add_pd(u, v), _mm256_sub_pd(u, v));
            if SCALED {
                (x, y) = (_mm256_mul_pd(x, fv), _mm256_mul_pd(y, fv));
            }
            _mm256_storeu_pd(pa.add(2 * i), x);
            _mm256_storeu_pd(pc.add(2 * i), y);
        }
        i += 2;
    }
    if i < n {
        let (u, v) = (a[i], c[i] * (base * steps[i]));
        (a[i], c[i]) = if SCALED { ((u + v) * f, (u - v) * f) } else { (u + v, u - v) };
    }
}

/// # Safety
/// AVX2 and FMA must run; every row as long as `rows[0]`, and `steps[1..]` at least as long.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn combine_quad_fma<const INVERSE: bool, const SCALED: bool>(
    rows: [&mut [Complex64]; 4],
    steps: [&[Complex64]; 4],
    base: [Complex64; 4],
    f: f64,
) {
    let n = rows[0].len();
    let p: [*mut f64; 4] = rows.map(|r| r.as_mut_ptr().cast::<f64>());
    let ps: [*const f64; 4] = steps.map(|s| s.as_ptr().cast::<f64>());
    let b = base.map(|c| _mm256_setr_pd(c.re, c.im, c.re, c.im));
    let fv = _mm256_set1_pd(f);
    let flip = omega4_flip(INVERSE);
    let mut i = 0;
    while i + 2 <= n {
        // SAFETY: values i..i + 2 of every row and of `steps[1..]` lie inside them (i + 2 ≤
        // n); value i starts at f64 offset 2i.
        unsafe {
            let v0 = _mm256_loadu_pd(p[0].add(2 * i));
            let v1 = mul2(
                _mm256_loadu_pd(p[1].add(2 * i)),
                mul2(b[1], _mm256_loadu_pd(ps[1].add(2 * i))),
            );
            let v2 = mul2(
                _mm256_loadu_pd(p[2].add(2 * i)),
                mul2(b[2], _mm256_loadu_pd(ps[2].add(2 * i))),
            );
            let v3 = mul2(
                _mm256_loadu_pd(p[3].add(2 * i)),
                mul2(b[3], _mm256_loadu_pd(ps[3].add(2 * i))),
            );
            let (s02, d02) = (_mm256_add_pd(v0, v2), _mm256_sub_pd(v0, v2));
            let (s13, d13) = (_mm256_add_pd(v1, v3), _mm256_sub_pd(v1, v3));
            let w = _mm256_xor_pd(_mm256_permute_pd::<0b0101>(d13), flip);
            let mut y = [
                _mm256_add_pd(s02, s13),
                _mm256_add_pd(d02, w),
                _mm256_sub_pd(s02, s13),
                _mm256_sub_pd(d02, w),
            ];
            if SCALED {
                y = y.map(|v| _mm256_mul_pd(v, fv));
            }
            for (r, v) in y.into_iter().enumerate() {
                _mm256_storeu_pd(p[r].add(2 * i), v);
            }
        }
        i += 2;
    }
    if i < n {
        let t = [
            Complex64::default(),
            base[1] * steps[1][i],
            base[2] * steps[2][i],
            base[3] * steps[3][i],
        ];
        // SAFETY: value i lies inside every row (i < n).
        let a = unsafe { [0, 1, 2, 3].map(|r| *p[r].cast::<Complex64>().add(i)) };
        let y = quad(a, t, INVERSE);
        for (r, v) in y.into_iter().enumerate() {
            // SAFETY: as above.
            unsafe { *p[r].cast::<Complex64>().add(i) = if SCALED { v * f } else { v } };
        }
    }
}

/// # Safety
/// AVX2 must run; R is even, `src.len() == R·n` and every `d[t]` holds n values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn deal_avx2<const R: usize>(src: &[Complex64], d: [&mut [Complex64]; R]) {
    let n = d[0].len();
    let ps = src.as_ptr().cast::<f64>();
    let pd: [*mut f64; R] = d.map(|x| x.as_mut_ptr().cast::<f64>());
    let mut l = 0;
    while l + 2 <= n {
        // SAFETY: values R·l..R·(l + 2) of `src` and l..l + 2 of each lane lie inside them (l + 2
        // ≤ n); value i starts at f64 offset 2i.
        unsafe {
            // Rows l and l + 1 of the R-value rows, two values a register: a[..R/2] and a[R/2..].
            let a: [__m256d; R] =
                std::array::from_fn(|j| _mm256_loadu_pd(ps.add(2 * R * l + 4 * j)));
            for j in 0..R / 2 {
                let (lo, hi) = (a[j], a[j + R / 2]);
                _mm256_storeu_pd(pd[2 * j].add(2 * l), _mm256_permute2f128_pd::<0x20>(lo, hi));
                _mm256_storeu_pd(pd[2 * j + 1].add(2 * l), _mm256_permute2f128_pd::<0x31>(lo, hi));
            }
        }
        l += 2;
    }
    if l < n {
        for (t, p) in pd.into_iter().enumerate() {
            // SAFETY: value l lies inside every lane (l < n) and Rl + t inside `src`.
            unsafe { *p.cast::<Complex64>().add(l) = src[R * l + t] };
        }
    }
}

/// # Safety
/// AVX2 must run; `w < 8`, `src` holds `8·d[0].len()` values and every lane as many as `d[0]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn deal_window_avx2(src: &[Complex64], w: usize, d: [&mut [Complex64]; 4]) {
    let n = d[0].len();
    // Value j of row l's window, src[8l + w + j], is value l + δ_j of lane (w + j) mod 8.
    let delta: [usize; 4] = std::array::from_fn(|j| (w + j) / 8);
    // Rows 0..rows, in pairs: each holds its whole window (8(rows − 1) + w + 3 < 8n) and lands
    // inside the lanes (rows − 1 + δ_j < n).
    let rows = n.saturating_sub(1) & !1;
    let ps = src.as_ptr().cast::<f64>();
    let pd: [*mut f64; 4] = std::array::from_fn(|j| d[j].as_mut_ptr().cast::<f64>());
    let mut l = 0;
    while l < rows {
        // SAFETY: rows l and l + 1 < rows of the windows and values l + δ_j, l + 1 + δ_j of each
        // lane lie inside them (above); value i starts at f64 offset 2i.
        unsafe {
            let at = |r: usize, j: usize| _mm256_loadu_pd(ps.add(2 * (8 * r + w + j)));
            let (a0, a1, b0, b1) = (at(l, 0), at(l, 2), at(l + 1, 0), at(l + 1, 2));
            let to = |j: usize| pd[j].add(2 * (l + delta[j]));
            _mm256_storeu_pd(to(0), _mm256_permute2f128_pd::<0x20>(a0, b0));
            _mm256_storeu_pd(to(1), _mm256_permute2f128_pd::<0x31>(a0, b0));
            _mm256_storeu_pd(to(2), _mm256_permute2f128_pd::<0x20>(a1, b1));
            _mm256_storeu_pd(to(3), _mm256_permute2f128_pd::<0x31>(a1, b1));
        }
        l += 2;
    }
    // What the pairs left: values 0..δ_j and rows + δ_j..n of lane j.
    for (j, lane) in pd.into_iter().enumerate() {
        let t = (w + j) % 8;
        for l in (0..delta[j]).chain(rows + delta[j]..n) {
            // SAFETY: value l < n lies inside every lane and 8l + t inside `src`.
            unsafe { *lane.cast::<Complex64>().add(l) = src[8 * l + t] };
        }
    }
}

/// The loop of the 8-row combine (rule 9) over the columns 0..n, n a multiple of the values a
/// register holds: one body for the AVX2 and FMA kernel (`combine_oct_fma`, two values a
/// register) and the AVX-512 one (`combine_oct_512`, four), given the width's intrinsics.
macro_rules! oct_loop {
    ($name:ident, $features:literal, $reg:ty, $per:literal, $load:ident, $store:ident,
     $add:ident, $sub:ident, $mulv:ident, $xor:ident, $set1:ident, $splat:expr, $flip:expr,
     $swap:expr, $cmul:ident) => {
        /// # Safety
        /// The CPU runs the features; `n` is a multiple of the values a register holds, and
        /// every row holds n values from `p[r]`, `steps[1..]` at least n.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name<const INVERSE: bool, const SCALED: bool>(
            p: [*mut f64; 8],
            n: usize,
            steps: [&[Complex64]; 8],
            base: [Complex64; 8],
            f: f64,
        ) {
            let ps: [*const f64; 8] = steps.map(|s| s.as_ptr().cast::<f64>());
            let b: [$reg; 8] = base.map($splat);
            let fv = $set1(f);
            let flip: $reg = $flip(INVERSE);
            let w: [$reg; 4] = eighth_roots(INVERSE).map($splat);
            // The 4-point FFT of `quad` on registers.
            let four = |a: $reg, c: $reg, e: $reg, g: $reg| {
                let (s0, d0) = ($add(a, e), $sub(a, e));
                let (s1, d1) = ($add(c, g), $sub(c, g));
                let r = $xor($swap(d1), flip);
                [$add(s0, s1), $add(d0, r), $sub(s0, s1), $sub(d0, r)]
            };
            for i in (0..n).step_by($per) {
                // SAFETY: values i..i + $per of every row and of `steps[1..]` lie inside them
                // (n is a multiple of $per); value i starts at f64 offset 2i; the CPU runs the
                // features.
                unsafe {
                    let v: [$reg; 8] = std::array::from_fn(|r| {
                        let x = $load(p[r].add(2 * i));
                        if r == 0 { x } else { $cmul(x, $cmul(b[r], $load(ps[r].add(2 * i)))) }
                    });
                    let e = four(v[0], v[2], v[4], v[6]);
                    let o = four(v[1], v[3], v[5], v[7]);
                    let o = [o[0], $cmul(o[1], w[1]), $cmul(o[2], w[2]), $cmul(o[3], w[3])];
                    for k in 0..4 {
                        let (mut x, mut y) = ($add(e[k], o[k]), $sub(e[k], o[k]));
                        if SCALED {
                            (x, y) = ($mulv(x, fv), $mulv(y, fv));
                        }
                        $store(p[k].add(2 * i), x);
                        $store(p[k + 4].add(2 * i), y);
                    }
                }
            }
        }
    };
}

oct_loop!(
    oct_loop_256,
    "avx2,fma",
    __m256d,
    2,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_add_pd,
    _mm256_sub_pd,
    _mm256_mul_pd,
    _mm256_xor_pd,
    _mm256_set1_pd,
    |c: Complex64| _mm256_setr_pd(c.re, c.im, c.re, c.im),
    omega4_flip,
    |x| _mm256_permute_pd::<0b0101>(x),
    mul2
);

oct_loop!(
    combine_oct_512,
    "avx512f,avx512dq",
    __m512d,
    4,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_add_pd,
    _mm512_sub_pd,
    _mm512_mul_pd,
    _mm512_xor_pd,
    _mm512_set1_pd,
    |c: Complex64| _mm512_setr_pd(c.re, c.im, c.re, c.im, c.re, c.im, c.re, c.im),
    omega4_flip_512,
    |x| _mm512_permute_pd::<0x55>(x),
    mul4
);

/// [`omega4_flip`] in 512 bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn omega4_flip_512(inverse: bool) -> __m512d {
    let (a, b) = if inverse { (-0.0, 0.0) } else { (0.0, -0.0) };
    _mm512_setr_pd(a, b, a, b, a, b, a, b)
}

/// [`mul2`] in 512 bits: four complex products, one rounding per component.
///
/// # Safety
/// AVX-512F must run.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn mul4(x: __m512d, y: __m512d) -> __m512d {
    let yr = _mm512_movedup_pd(y);
    let yi = _mm512_permute_pd::<0xFF>(y);
    let xs = _mm512_permute_pd::<0x55>(x);
    _mm512_fmaddsub_pd(x, yr, _mm512_mul_pd(xs, yi))
}

/// # Safety
/// AVX2 and FMA must run; every row as long as `rows[0]`, and `steps[1..]` at least as long.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn combine_oct_fma<const INVERSE: bool, const SCALED: bool>(
    rows: [&mut [Complex64]; 8],
    steps: [&[Complex64]; 8],
    base: [Complex64; 8],
    f: f64,
) {
    let n = rows[0].len();
    let p: [*mut f64; 8] = rows.map(|r| r.as_mut_ptr().cast::<f64>());
    let i = n - n % 2;
    // SAFETY: AVX2 and FMA run; rows and `steps[1..]` hold n ≥ i values.
    unsafe { oct_loop_256::<INVERSE, SCALED>(p, i, steps, base, f) };
    if i < n {
        let t: [Complex64; 8] =
            std::array::from_fn(
                |r| if r == 0 { Complex64::default() } else { base[r] * steps[r][i] },
            );
        // SAFETY: value i lies inside every row (i < n).
        let a: [Complex64; 8] =
            std::array::from_fn(|r| unsafe { *p[r].cast::<Complex64>().add(i) });
        for (r, v) in oct(a, t, INVERSE).into_iter().enumerate() {
            // SAFETY: as above.
            unsafe { *p[r].cast::<Complex64>().add(i) = if SCALED { v * f } else { v } };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<Complex64> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n).map(|_| Complex64::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0))).collect()
    }

    /// Rule 2 against the plain deinterleave, odd and even lengths.
    #[test]
    fn rule2_the_deal_is_the_plain_deinterleave() {
        let Some(proof) = detect() else { return };
        for n in [0, 1, 2, 3, 8, 255, 256] {
            let src = values(2 * n, n as u64);
            let (mut d0, mut d1) = (vec![Complex64::default(); n], vec![Complex64::default(); n]);
            deal_pair(proof, &src, &mut d0, &mut d1);
            let want0: Vec<_> = src.iter().step_by(2).copied().collect();
            let want1: Vec<_> = src.iter().skip(1).step_by(2).copied().collect();
            assert_eq!((d0, d1), (want0, want1), "n {n}");
        }
    }

    /// Rules 4 and 6: the two transposes against plain index arithmetic, odd and even lengths,
    /// scaled and not, aligned and unaligned destinations.
    #[test]
    fn rules4_and_6_the_transposes_are_plain_index_arithmetic() {
        let Some(proof) = detect() else { return };
        for (n, stride, at) in [(0, 2, 0), (1, 4, 2), (6, 9, 7), (33, 40, 12)] {
            let (a, b) = (values(n, 4), values(n, 5));
            let mut dst = values(n * stride + 1, 6);
            let before = dst.clone();
            pair_columns(proof, &a, &b, &mut dst, stride, at);
            for (i, (&got, &old)) in dst.iter().zip(&before).enumerate() {
                let (c, o) = (i / stride, i % stride);
                let want = match o.checked_sub(at) {
                    Some(0) if c < n => a[c],
                    Some(1) if c < n => b[c],
                    _ => old,
                };
                assert_eq!(got, want, "pair n {n} index {i}");
            }
            for (scale, skip) in [(None, 0), (Some(0.25), 1)] {
                let mut out = values(2 * n + 2, 7);
                let (d0, d1) = out[skip..skip + 2 * n].split_at_mut(n);
                unpair_columns(proof, &dst, stride, at, scale, d0, d1);
                let f = scale.unwrap_or(1.0);
                for c in 0..n {
                    assert_eq!(d0[c], dst[c * stride + at] * f, "unpair n {n} c {c}");
                    assert_eq!(d1[c], dst[c * stride + at + 1] * f, "unpair n {n} c {c}");
                }
            }
        }
    }

    /// Rule 5 against `Twiddles::get` and a complex product: within a few ulps.
    #[test]
    fn rule5_the_twiddled_rows_are_the_portable_products_within_ulps() {
        let Some(proof) = detect() else { return };
        let n = 1 << 12;
        let twiddles = Twiddles::new(n, -1.0);
        for (w, rows, stride, k0, s0) in [(4, 3, 70, 8, 5), (7, 2, 20, 3, 60), (32, 4, 64, 32, 0)] {
            let src = values(rows * stride, 8);
            for skip in [0, 1] {
                let mut out = vec![Complex64::default(); rows * w + 1];
                let dst = &mut out[skip..skip + rows * w];
                twiddle_rows(proof, dst, &src, stride, k0, w, s0, &twiddles);
                for r in 0..rows {
                    for c in 0..w {
                        let x = src[r * stride + k0 + c];
                        let want = x * twiddles.get((s0 + r) * (k0 + c));
                        let tol = 8.0 * f64::EPSILON * x.norm();
                        assert!((dst[r * w + c] - want).norm() <= tol, "w {w} r {r} c {c}");
                    }
                }
            }
        }
        super::super::huge::stream_fence();
    }

    /// Rule 3 against the same arithmetic in `Complex64`: within a few ulps of each value's
    /// magnitude, scaled and not, odd and even lengths.
    #[test]
    fn rule3_the_combine_is_the_portable_arithmetic_within_ulps() {
        let Some(proof) = detect() else { return };
        for (n, scale) in [(1, None), (2, None), (7, Some(0.125)), (256, None), (255, Some(3e-5))] {
            let (a0, c0, steps) = (values(n, 1), values(n, 2), values(n, 3));
            let base = Complex64::from_polar(1.0, 0.3);
            let (mut a, mut c) = (a0.clone(), c0.clone());
            combine_pair(proof, &mut a, &mut c, &steps, base, scale);
            let f = scale.unwrap_or(1.0);
            for i in 0..n {
                let v = c0[i] * (base * steps[i]);
                let (x, y) = ((a0[i] + v) * f, (a0[i] - v) * f);
                let tol = 8.0 * f64::EPSILON * f * (a0[i].norm() + v.norm());
                assert!((a[i] - x).norm() <= tol && (c[i] - y).norm() <= tol, "n {n} i {i}");
            }
        }
    }

    /// The combine in registers of R rows against its portable arithmetic, one column at a
    /// time: within a few ulps of each column's magnitude, both directions, scaled and not, odd
    /// and even lengths.
    /// A combine in registers of R rows, as [`combine_quad`] and [`combine_oct`].
    type Combine<const R: usize> =
        fn(Avx2Fma, [&mut [Complex64]; R], [&[Complex64]; R], [Complex64; R], bool, Option<f64>);

    fn check_combine<const R: usize>(
        combine: Combine<R>,
        portable: fn([Complex64; R], [Complex64; R], bool) -> [Complex64; R],
        base: [Complex64; R],
        seed: u64,
    ) {
        let Some(proof) = detect() else { return };
        for (n, scale, inverse) in [
            (1, None, false),
            (2, None, true),
            (7, Some(0.125), false),
            (256, None, false),
            (255, Some(3e-5), true),
        ] {
            let a0: Vec<Vec<Complex64>> = (0..R).map(|r| values(n, seed + r as u64)).collect();
            let steps: Vec<Vec<Complex64>> =
                (0..R).map(|r| values(n, seed + 10 + r as u64)).collect();
            let mut rows = a0.clone();
            let refs: Vec<&mut [Complex64]> = rows.iter_mut().map(|r| &mut r[..]).collect();
            let st: [&[Complex64]; R] = std::array::from_fn(|r| &steps[r][..]);
            combine(proof, refs.try_into().expect("R rows"), st, base, inverse, scale);
            let f = scale.unwrap_or(1.0);
            for i in 0..n {
                let t: [Complex64; R] = std::array::from_fn(|r| base[r] * steps[r][i]);
                let want = portable(std::array::from_fn(|r| a0[r][i]), t, inverse);
                let size: f64 = (0..R).map(|r| a0[r][i].norm() * t[r].norm().max(1.0)).sum();
                for r in 0..R {
                    let tol = 16.0 * f64::EPSILON * f * size;
                    assert!((rows[r][i] - want[r] * f).norm() <= tol, "n {n} i {i} row {r}");
                }
            }
        }
    }

    /// The deal of R lanes against the plain deinterleave, odd and even lengths.
    fn check_deal<const R: usize>(
        deal: fn(Avx2Fma, &[Complex64], [&mut [Complex64]; R]),
        seed: u64,
    ) {
        let Some(proof) = detect() else { return };
        for n in [1, 2, 3, 64, 129] {
            let src = values(R * n, seed);
            let mut lanes = vec![vec![Complex64::default(); n]; R];
            let refs: Vec<&mut [Complex64]> = lanes.iter_mut().map(|l| &mut l[..]).collect();
            deal(proof, &src, refs.try_into().expect("R lanes"));
            for (t, lane) in lanes.iter().enumerate() {
                for (l, v) in lane.iter().enumerate() {
                    assert_eq!(*v, src[R * l + t], "n {n} lane {t} value {l}");
                }
            }
        }
    }

    /// Rule 7 against the portable `quad`.
    #[test]
    fn rule7_the_quad_combine_is_the_portable_arithmetic_within_ulps() {
        let base = [0.0, 0.3, -1.1, 2.5].map(|a| Complex64::from_polar(1.0, a));
        check_combine(combine_quad, quad, base, 10);
    }

    /// Rule 8 against the plain deinterleave.
    #[test]
    fn rule8_the_quad_deal_is_the_plain_deinterleave() {
        check_deal(deal::<4>, 40);
    }

    /// Rule 9 against the portable `oct`: within a few ulps of each column's magnitude, both
    /// directions, scaled and not, odd and even lengths; and `oct` against the 8-point DFT of
    /// the twiddled column (the definition).
    #[test]
    fn rule9_the_oct_combine_is_the_portable_arithmetic_within_ulps() {
        for inverse in [false, true] {
            let (a, t) = (values(8, 50), values(8, 51));
            let got = oct(a.clone().try_into().unwrap(), t.clone().try_into().unwrap(), inverse);
            let s = if inverse { 1.0 } else { -1.0 };
            for (k, g) in got.iter().enumerate() {
                let want: Complex64 = (0..8)
                    .map(|r| {
                        let v = if r == 0 { a[0] } else { a[r] * t[r] };
                        let w = s * std::f64::consts::TAU * ((r * k) % 8) as f64 / 8.0;
                        v * Complex64::from_polar(1.0, w)
                    })
                    .sum();
                assert!((g - want).norm() < 1e-13, "oct k {k} inverse {inverse}");
            }
        }
        let base = std::array::from_fn(|r| Complex64::from_polar(1.0, 0.37 * r as f64 - 1.0));
        check_combine(combine_oct, oct, base, 60);
    }

    /// Rule 12 against the portable `oct`, as rule 9 (where the CPU runs AVX-512).
    #[test]
    fn rule12_the_wide_oct_combine_is_the_portable_arithmetic_within_ulps() {
        let base = std::array::from_fn(|r| Complex64::from_polar(1.0, 0.29 * r as f64 + 0.4));
        check_combine(wide_oct, oct, base, 70);
    }

    /// `combine_oct_wide` with the proof `detect_wide` gives (a `Combine`); `combine_oct`
    /// where there is none.
    fn wide_oct(
        proof: Avx2Fma,
        rows: [&mut [Complex64]; 8],
        steps: [&[Complex64]; 8],
        base: [Complex64; 8],
        inverse: bool,
        scale: Option<f64>,
    ) {
        match detect_wide() {
            Some(wide) => combine_oct_wide(wide, proof, rows, steps, base, inverse, scale),
            None => combine_oct(proof, rows, steps, base, inverse, scale),
        }
    }

    /// Rule 10 against the plain deinterleave.
    #[test]
    fn rule10_the_oct_deal_is_the_plain_deinterleave() {
        check_deal(deal::<8>, 41);
    }

    /// Rule 11 against the plain deinterleave: every window start, odd and even lengths.
    #[test]
    fn rule11_the_window_deal_is_the_plain_deinterleave() {
        let Some(proof) = detect() else { return };
        for n in [1, 2, 3, 4, 64, 129] {
            let src = values(8 * n, 42 + n as u64);
            for w in 0..8 {
                let mut lanes = vec![vec![Complex64::default(); n]; 4];
                let refs: Vec<&mut [Complex64]> = lanes.iter_mut().map(|l| &mut l[..]).collect();
                deal_window(proof, &src, w, refs.try_into().expect("4 lanes"));
                for (j, lane) in lanes.iter().enumerate() {
                    for (l, v) in lane.iter().enumerate() {
                        assert_eq!(*v, src[8 * l + (w + j) % 8], "n {n} w {w} lane {j} value {l}");
                    }
                }
            }
        }
    }
}
