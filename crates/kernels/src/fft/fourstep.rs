//! The BSP FFT of `fft`'s module docs with many more processes than threads, for vectors larger
//! than the caches: n = n1·n2 with n1 = 2^⌊k/2⌋ *virtual* processes, each holding
//! x_s[l] = x[s + n1·l] (the cyclic distribution, l < n2), simulated by the p threads of a
//! section, n1/p each. The algorithm is the same: local FFTs of length n2, twiddles
//! ω_n^{s·k1}, FFTs of length n1 across processes, with
//!
//! y[k1 + n2·k2] = Σ_s ω_{n1}^{s·k2} · ω_n^{s·k1} · (Σ_l x_s[l] ω_{n2}^{l·k1}).
//!
//! Why: with p = 2 real processes each local FFT has length n/2, which at n = 2^26 is 512 MiB;
//! rustfft then makes several passes over main memory. Here every FFT is at most √(2n) long
//! (n = 2^26: 2^13 values, 128 KiB), in cache, and the data crosses memory twice.
//!
//! 1. Superstep 1 ([`FourStep::rows`]): a tile of virtual processes at a time (1 MiB of
//!    values, `TILE_VALUES`): their values read from the input (that many adjacent values per
//!    row of it, the rows ahead prefetched) into the tile's rows, each row transformed in
//!    place, twiddled and written to row s of the workspace `M` (n values, laid out in blocks
//!    of columns: rule 4) with non-temporal stores.
//! 2. A sync.
//! 3. Superstep 2 ([`FourStep::cols`]): a tile of columns k1 of `M` at a time (one block, read
//!    front to back), gathered into vectors of n1, each transformed, and written to
//!    y[k1 + n2·k2] (adjacent outputs per k2, non-temporal), scaled by 1/n for the inverse.
//!
//! Where the CPU runs AVX2 and FMA, the gathers go two rows at a time (2 × 2 blocks of values
//! transposed in registers) and the twiddles two values at a time (`simd`).
//!
//! Measured (`bench/kernels/fft`'s inputs, p = 2, the median time per call against FFTW's in
//! the same rounds, 5 rounds, load 1.7–1.9): the four-step against the plan of `shared::run`
//! 1.42 vs 1.11 × FFTW at n = 2^22, 1.26 vs 1.13 at 2^24, 1.00 vs 0.86 at 2^26; at 2^20 both
//! 1.19. `SLUICE_FFT_FOUR_STEP=0` turns it off, for a comparison.
//!
//! # Contract
//! 1. The result is `fft`'s rule 1 (`numpy.fft.fft` or `ifft`) for every n = 2^k and p a
//!    power of two with p² ≤ n (`fft`'s rule 2); the error is that of two rustfft transforms
//!    and one twiddle (a product of two table entries, `twiddle` rule 1) per value.
//! 2. Thread t of p takes virtual processes t·n1/p..(t+1)·n1/p in superstep 1 and columns
//!    t·n2/p..(t+1)·n2/p in superstep 2: disjoint rows of `M`, then disjoint column blocks of
//!    every output row (`shared::run_four_step` hands them out).
//! 3. Workspace: `M` (n values, the plan's `lanes`), and per thread one tile and one rustfft
//!    scratch ([`FourStep::tile_len`], [`FourStep::scratch_len`]).
//! 4. `M` is stored in n2/w blocks of w columns ([`FourStep::width`], superstep 2's tile):
//!    M[s][k1] lies at (k1 / w)·n1·w + s·w + k1 % w. Superstep 1 then writes g·w adjacent
//!    values per block for its g rows, and superstep 2 reads each of its tiles as one run of
//!    n1·w values, where a row-major `M` had it read w values from each of n1 rows n2 values
//!    apart (at 2^26: 128 bytes every 128 KiB; superstep 2 then held 40 % of a call's samples
//!    in `perf`, and 19 % with blocks, superstep 1 going from 25 % to 40 %: 35.4 K → 29.2 K
//!    samples in the two for 5 calls).

use std::ops::Range;
use std::sync::Arc;

use rustfft::num_complex::Complex64;
use rustfft::{Fft as RustFft, FftDirection, FftPlanner};

use super::huge::{prefetch, stream_fence, stream_fill};
use super::simd::{self, Avx2Fma};
use super::twiddle::Twiddles;
use super::{Direction, check_shape};
use crate::Error;

/// Values per tile (1 MiB, the L2 cache of this project's machines): `TILE_VALUES / n2`
/// virtual processes per tile of superstep 1 and `TILE_VALUES / n1` columns per tile of
/// superstep 2, within [`MIN_ROWS`, `MAX_ROWS`]. Tiles of 1 MiB gave the best times, against
/// FFTW side by side, at n = 2^22, 2^24 and 2^26 (rows of 8 to 32 values: 128 to 512 bytes per
/// strided read).
const TILE_VALUES: usize = 1 << 16;
const MIN_ROWS: usize = 4;
const MAX_ROWS: usize = 32;

/// Rows ahead of a strided gather whose cache lines are prefetched (the hardware prefetchers
/// do not follow strides of n1 or n2 values).
const AHEAD: usize = 8;

/// Values between the rows of a tile beyond their length: n1 and n2 are powers of two, and rows
/// that far apart would share the same cache sets, so that the rows of a tile written together
/// in a gather evict each other.
const PAD: usize = 4;

/// A four-step plan (see the module docs).
#[derive(Clone)]
pub(super) struct FourStep {
    pub(super) n: usize,
    pub(super) p: usize,
    n1: usize,
    n2: usize,
    /// Virtual processes per tile of superstep 1, and columns per tile of superstep 2
    /// (`TILE_VALUES`; fewer for a small n1/p or n2/p).
    group: usize,
    width: usize,
    direction: Direction,
    /// Length n2, and length n1.
    fft_rows: Arc<dyn RustFft<f64>>,
    fft_cols: Arc<dyn RustFft<f64>>,
    twiddles: Twiddles,
    /// The AVX2 and FMA loops, where the CPU runs them (`simd`).
    pub(super) simd: Option<Avx2Fma>,
}

impl std::fmt::Debug for FourStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FourStep")
            .field("n", &self.n)
            .field("p", &self.p)
            .field("n1", &self.n1)
            .field("n2", &self.n2)
            .field("direction", &self.direction)
            .finish_non_exhaustive()
    }
}

impl FourStep {
    /// The plan of a length-`n` transform on `p` threads (`fft`'s rule 2).
    pub(super) fn new(n: usize, p: usize, direction: Direction) -> Result<FourStep, Error> {
        check_shape(n, p)?;
        let n1 = 1usize << (n.trailing_zeros() / 2);
        let n2 = n / n1;
        // p² ≤ n and n1 ≤ n2 < 2·n1 give p ≤ n1 and p ≤ n2.
        let dir = match direction {
            Direction::Forward => FftDirection::Forward,
            Direction::Inverse => FftDirection::Inverse,
        };
        let mut planner = FftPlanner::new();
        Ok(FourStep {
            n,
            p,
            n1,
            n2,
            group: (TILE_VALUES / n2).clamp(MIN_ROWS, MAX_ROWS).min(n1 / p),
            width: (TILE_VALUES / n1).clamp(MIN_ROWS, MAX_ROWS).min(n2 / p),
            direction,
            fft_rows: planner.plan_fft(n2, dir),
            fft_cols: planner.plan_fft(n1, dir),
            twiddles: Twiddles::new(n, direction.sign()),
            simd: simd::detect(),
        })
    }

    /// Values of one thread's tile.
    pub(super) fn tile_len(&self) -> usize {
        (self.group * (self.n2 + PAD)).max(self.width * (self.n1 + PAD))
    }

    /// Values of one thread's rustfft scratch.
    pub(super) fn scratch_len(&self) -> usize {
        self.fft_rows.get_inplace_scratch_len().max(self.fft_cols.get_inplace_scratch_len())
    }

    /// Thread `t`'s virtual processes (superstep 1) and columns (superstep 2) (rule 2).
    pub(super) fn share(&self, t: usize) -> (Range<usize>, Range<usize>) {
        let (a, b) = (self.n1 / self.p, self.n2 / self.p);
        (t * a..(t + 1) * a, t * b..(t + 1) * b)
    }

    /// The number of virtual processes n1 (rows of `M`) and the local length n2.
    pub(super) fn shape(&self) -> (usize, usize) {
        (self.n1, self.n2)
    }

    /// Columns per block of `M` (rule 4): the width of superstep 2's tiles.
    pub(super) fn width(&self) -> usize {
        self.width
    }

    /// Superstep 1 for virtual processes `procs`: `m[j]` is their part of block j of `M`
    /// (`procs.len()·width` values, row s's columns j·width.. at (s − procs.start)·width; rule
    /// 4), `tile` and `scratch` as long as [`FourStep::tile_len`] and [`FourStep::scratch_len`].
    pub(super) fn rows(
        &self,
        input: &[Complex64],
        procs: Range<usize>,
        m: &mut [&mut [Complex64]],
        tile: &mut [Complex64],
        scratch: &mut [Complex64],
    ) {
        let (n1, n2, g, w) = (self.n1, self.n2, self.group, self.width);
        let st = n2 + PAD;
        let tile = &mut tile[..g * st];
        for s0 in procs.clone().step_by(g) {
            // Row r of the tile is x_{s0 + r}: one pass down the input, g values per row of it.
            let row_of = |l: usize| &input[s0 + n1 * l..s0 + n1 * l + g];
            let ahead = |l: usize| {
                // The row AHEAD rows on, one cache line (4 values) at a time.
                for i in (0..g).step_by(4) {
                    prefetch(input, s0 + n1 * (l + AHEAD) + i);
                }
            };
            if let Some(proof) = self.simd.filter(|_| n2 % 2 == 0) {
                // Two rows of the input at a time.
                for l in (0..n2).step_by(2) {
                    ahead(l);
                    ahead(l + 1);
                    simd::pair_columns(proof, row_of(l), row_of(l + 1), tile, st, l);
                }
            } else {
                for l in 0..n2 {
                    ahead(l);
                    for (r, &v) in row_of(l).iter().enumerate() {
                        tile[r * st + l] = v;
                    }
                }
            }
            for row in tile.chunks_exact_mut(st) {
                self.fft_rows.process_with_scratch(&mut row[..n2], scratch);
            }
            // Block j gets the g rows' columns j·w..(j + 1)·w, twiddled: g·w adjacent values.
            let at = (s0 - procs.start) * w;
            for (j, block) in m.iter_mut().enumerate() {
                let k0 = j * w;
                if let Some(proof) = self.simd {
                    let dst = &mut block[at..at + g * w];
                    simd::twiddle_rows(proof, dst, tile, st, k0, w, s0, &self.twiddles);
                    continue;
                }
                stream_fill(&mut block[at..at + g * w], |i| {
                    let (r, k1) = (i / w, k0 + i % w);
                    // (s0 + r)·k1 ≤ (n1 − 1)(n2 − 1) < n.
                    tile[r * st + k1] * self.twiddles.get((s0 + r) * k1)
                });
            }
        }
        stream_fence();
    }

    /// Superstep 2 for columns `cols` of `M` (all of it, `m`, in blocks: rule 4): `out[k2]` is
    /// output row k2's values k1 in `cols` (y[n2·k2 + k1], `cols.len()` values each, n1 rows).
    pub(super) fn cols(
        &self,
        m: &[Complex64],
        cols: Range<usize>,
        out: &mut [&mut [Complex64]],
        tile: &mut [Complex64],
        scratch: &mut [Complex64],
    ) {
        let (n1, w) = (self.n1, self.width);
        let st = n1 + PAD;
        let tile = &mut tile[..w * st];
        let scale = match self.direction {
            Direction::Forward => None,
            Direction::Inverse => Some(1.0 / self.n as f64),
        };
        for c0 in cols.clone().step_by(w) {
            // Vector c of the tile is column c0 + c of `M`: block c0/w, read front to back.
            let block = &m[c0 * n1..(c0 + w) * n1];
            if let Some(proof) = self.simd.filter(|_| n1 % 2 == 0) {
                // Two rows of `M` at a time.
                for (s, two) in block.chunks_exact(2 * w).enumerate() {
                    let (a, b) = two.split_at(w);
                    simd::pair_columns(proof, a, b, tile, st, 2 * s);
                }
            } else {
                for (s, src) in block.chunks_exact(w).enumerate() {
                    for (c, &v) in src.iter().enumerate() {
                        tile[c * st + s] = v;
                    }
                }
            }
            for col in tile.chunks_exact_mut(st) {
                self.fft_cols.process_with_scratch(&mut col[..n1], scratch);
            }
            let at = c0 - cols.start;
            if let Some(proof) = self.simd.filter(|_| n1 % 2 == 0) {
                // Two output rows at a time.
                for (k2, two) in out.chunks_exact_mut(2).enumerate() {
                    let [r0, r1] = two else { unreachable!("chunks of 2") };
                    let (d0, d1) = (&mut r0[at..at + w], &mut r1[at..at + w]);
                    simd::unpair_columns(proof, tile, st, 2 * k2, scale, d0, d1);
                }
                continue;
            }
            for (k2, row) in out.iter_mut().enumerate() {
                stream_fill(&mut row[at..at + w], |c| {
                    let v = tile[c * st + k2];
                    match scale {
                        Some(f) => v * f,
                        None => v,
                    }
                });
            }
        }
        stream_fence();
    }
}
