//! One process's part of the parallel FFT (the three steps of the module docs), and the
//! SPMD-level entry point [`fft_spmd`] for callers that already run a BSP section.

use std::sync::Arc;

use rustfft::num_complex::Complex64;
use rustfft::{Fft as RustFft, FftDirection, FftPlanner};
use sluice_bsp::{Args, Ctx};

use super::exchange::exchange;
use super::simd::{self, Avx2Fma};
use super::twiddle::Twiddles;
use super::{Direction, check_shape};
use crate::Error;

/// Columns per tile of step 3: `TILE × p` elements (p = 2: 8 KiB) stay in L1 between the
/// twiddle-and-gather, the p-point FFTs and the scatter.
pub(super) const TILE: usize = 256;

/// What every process of one transform shares and never writes: sizes, the rustfft plans, the
/// twiddle tables. Build it once and run it many times ([`LocalFft::run`]).
#[derive(Clone)]
pub struct LocalFft {
    pub(super) n: usize,
    pub(super) p: usize,
    direction: Direction,
    pub(super) fft_m: Arc<dyn RustFft<f64>>,
    twiddles: Twiddles,
    /// `steps[r·TILE + i]` = ω_n^{r·i}: the twiddle of row r, column i of a tile, relative to
    /// the tile's first column (exact from `twiddles`, so no error accumulates across tiles).
    steps: Vec<Complex64>,
    /// `roots[j]` = ω_{2h}^j for the radix-2 stages across rows, for each stage half-size h:
    /// stored at `roots[h + j]` (h a power of two, j < h).
    roots: Vec<Complex64>,
    /// The AVX2 and FMA loops of the p = 2 passes, where the CPU runs them (`simd`).
    pub(super) simd: Option<Avx2Fma>,
    /// The 8-row combine in AVX-512, where the CPU runs it (`simd::combine_oct_wide`).
    wide: Option<simd::Avx512>,
}

impl std::fmt::Debug for LocalFft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalFft")
            .field("n", &self.n)
            .field("p", &self.p)
            .field("direction", &self.direction)
            .finish_non_exhaustive()
    }
}

/// Buffers one process reuses from call to call (so only the first call page-faults them).
#[derive(Debug, Default)]
pub(super) struct Workspace {
    /// The FFT_m output and put source (length m).
    z: Vec<Complex64>,
    /// rustfft's scratch, and the tile of step 3.
    scratch: Vec<Complex64>,
    tile: Vec<Complex64>,
    /// The gathered input and receive buffer of [`super::Fft::process`] (length m).
    local: Vec<Complex64>,
}

impl Workspace {
    /// The local buffer, to take `m` values on a cache line from with `huge::window`; give it
    /// back with `put_local`.
    pub(super) fn take_local(&mut self) -> Vec<Complex64> {
        std::mem::take(&mut self.local)
    }

    /// Keeps `local` for the next call.
    pub(super) fn put_local(&mut self, local: Vec<Complex64>) {
        self.local = local;
    }

    /// The tile buffer of step 3, at least `len` long.
    pub(super) fn tile_mut(&mut self, len: usize) -> &mut [Complex64] {
        self.tile.resize(len.max(self.tile.len()), Complex64::default());
        &mut self.tile[..len]
    }

    /// The tile (`tile` values) and the scratch (`scratch` values) together.
    pub(super) fn tile_and_scratch(
        &mut self,
        tile: usize,
        scratch: usize,
    ) -> (&mut [Complex64], &mut [Complex64]) {
        self.tile_mut(tile);
        (&mut self.tile[..tile], super::huge::window(&mut self.scratch, scratch))
    }

    /// The scratch buffer, `len` values on a cache line (`huge` rule 3).
    pub(super) fn scratch_mut(&mut self, len: usize) -> &mut [Complex64] {
        super::huge::window(&mut self.scratch, len)
    }
}

impl LocalFft {
    /// The plan of a length-`n` transform on `p` processes: `n` a power of two, `p` a power of
    /// two with `p² ≤ n` ([`Error::NotPowerOfTwo`], [`Error::BadProcs`]).
    pub fn new(n: usize, p: usize, direction: Direction) -> Result<LocalFft, Error> {
        check_shape(n, p)?;
        let dir = match direction {
            Direction::Forward => FftDirection::Forward,
            Direction::Inverse => FftDirection::Inverse,
        };
        let mut planner = FftPlanner::new();
        let twiddles = Twiddles::new(n, direction.sign());
        let steps = (0..p * TILE).map(|j| twiddles.get((j / TILE) * (j % TILE) % n)).collect();
        // ω_{2h}^j = ω_n^{j·n/(2h)}.
        let roots = (0..p)
            .map(|i| {
                if i == 0 {
                    Complex64::default()
                } else {
                    let h = 1 << i.ilog2();
                    twiddles.get((i - h) * (n / (2 * h)))
                }
            })
            .collect();
        Ok(LocalFft {
            n,
            p,
            direction,
            fft_m: planner.plan_fft(n / p, dir),
            twiddles,
            steps,
            roots,
            simd: simd::detect(),
            wide: simd::detect_wide(),
        })
    }

    /// The transform length n.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Returns true if and only if n is 0 (never: plans have n ≥ 1).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The process count p.
    pub fn procs(&self) -> usize {
        self.p
    }

    /// Elements of workspace one process of `shared::run` uses besides the lanes: scratch and
    /// tile.
    pub(super) fn shared_workspace_len(&self) -> usize {
        self.scratch_len() + TILE * self.p
    }

    pub(super) fn scratch_len(&self) -> usize {
        let out_of_place = self.fft_m.get_outofplace_scratch_len();
        // Dealt by receiver, the lanes are transformed in place (`shared`).
        if self.n <= super::shared::RECEIVER_MAX {
            out_of_place.max(self.fft_m.get_inplace_scratch_len())
        } else {
            out_of_place
        }
    }

    /// Step 3 on the rows `rows` (p rows of b values; R[r][q] = z_r[k1_first + q]): twiddles,
    /// the b FFTs of length p across rows (radix-2 decimation in frequency, so row r ends up
    /// holding output k2 = bitrev(r)), and the write of `out[k2]`. Tile by tile of `TILE`
    /// columns, so each value is read once from memory and written once.
    fn combine(
        &self,
        k1_first: usize,
        rows: &[Complex64],
        tile: &mut [Complex64],
        out: &mut [&mut [Complex64]],
    ) {
        let b = rows.len() / self.p;
        for q0 in (0..b).step_by(TILE) {
            let w = TILE.min(b - q0);
            self.load_tile(k1_first, q0, w, |r| &rows[r * b..(r + 1) * b], tile);
            self.butterflies(w, tile);
            self.store_tile(q0, w, tile, out);
        }
    }

    /// Step 3 in place: `cols[r]` holds R[r][q] (b values) on entry and output k2 = r of this
    /// process's block on return, as `combine` writes `out[r]`.
    pub(super) fn combine_in_place(
        &self,
        k1_first: usize,
        cols: &mut [&mut [Complex64]],
        tile: &mut [Complex64],
    ) {
        if let [row0, row1] = cols {
            match self.direction {
                Direction::Forward => self.combine_pair::<false>(k1_first, row0, row1),
                Direction::Inverse => self.combine_pair::<true>(k1_first, row0, row1),
            }
            return;
        }
        let b = cols.first().map_or(0, |c| c.len());
        if let (Some(proof), [r0, r1, r2, r3]) = (self.simd, &mut *cols) {
            // p = 4: the twiddles and the 4-point FFT of each column in place, in registers.
            let inverse = self.direction == Direction::Inverse;
            let scale = inverse.then(|| 1.0 / self.n as f64);
            for q0 in (0..b).step_by(TILE) {
                let w = TILE.min(b - q0);
                let base = [0, 1, 2, 3].map(|r| self.twiddles.get(r * (k1_first + q0)));
                let steps = [0, 1, 2, 3].map(|r| &self.steps[r * TILE..r * TILE + w]);
                let rows = [
                    &mut r0[q0..q0 + w],
                    &mut r1[q0..q0 + w],
                    &mut r2[q0..q0 + w],
                    &mut r3[q0..q0 + w],
                ];
                simd::combine_quad(proof, rows, steps, base, inverse, scale);
            }
            return;
        }
        if let (Some(proof), 8) = (self.simd, cols.len()) {
            // p = 8: as p = 4, with two 4-point FFTs joined by ω_8 (`simd::oct`).
            let inverse = self.direction == Direction::Inverse;
            let scale = inverse.then(|| 1.0 / self.n as f64);
            for q0 in (0..b).step_by(TILE) {
                let w = TILE.min(b - q0);
                let base = std::array::from_fn(|r| self.twiddles.get(r * (k1_first + q0)));
                let steps = std::array::from_fn(|r| &self.steps[r * TILE..r * TILE + w]);
                let mut it = cols.iter_mut().map(|r| &mut r[q0..q0 + w]);
                let rows = std::array::from_fn(|_| it.next().expect("eight rows"));
                match self.wide {
                    Some(wide) => {
                        simd::combine_oct_wide(wide, proof, rows, steps, base, inverse, scale)
                    }
                    None => simd::combine_oct(proof, rows, steps, base, inverse, scale),
                }
            }
            return;
        }
        for q0 in (0..b).step_by(TILE) {
            let w = TILE.min(b - q0);
            let rows: &[&mut [Complex64]] = cols;
            self.load_tile(k1_first, q0, w, |r| &*rows[r], tile);
            self.butterflies(w, tile);
            self.store_tile(q0, w, tile, cols);
        }
    }

    /// `combine_in_place` for p = 2: one butterfly per column, in place, without a tile to copy
    /// through (2^16, steady state: 189–205 µs a call against 200–223). Row 0 holds output
    /// k2 = 0 and row 1 output k2 = 1 (bitrev is the identity for p = 2), scaled by 1/n when
    /// `SCALED` (the inverse), as `store_tile` does.
    fn combine_pair<const SCALED: bool>(
        &self,
        k1_first: usize,
        row0: &mut [Complex64],
        row1: &mut [Complex64],
    ) {
        let f = 1.0 / self.n as f64;
        for q0 in (0..row0.len()).step_by(TILE) {
            let w = TILE.min(row0.len() - q0);
            let base = self.twiddles.get(k1_first + q0);
            let steps = &self.steps[TILE..TILE + w];
            let (a, c) = (&mut row0[q0..q0 + w], &mut row1[q0..q0 + w]);
            if let Some(proof) = self.simd {
                simd::combine_pair(proof, a, c, steps, base, SCALED.then_some(f));
                continue;
            }
            for ((x, y), &st) in a.iter_mut().zip(c.iter_mut()).zip(steps) {
                let (u, v) = (*x, *y * (base * st));
                (*x, *y) = if SCALED { ((u + v) * f, (u - v) * f) } else { (u + v, u - v) };
            }
        }
    }

    /// Tile row r = row(r)[q0..q0 + w] · ω_n^{r·(k1_first + q0 + i)} (= base · steps[r][i]).
    fn load_tile<'r>(
        &self,
        k1_first: usize,
        q0: usize,
        w: usize,
        row: impl Fn(usize) -> &'r [Complex64],
        tile: &mut [Complex64],
    ) {
        for r in 0..self.p {
            let src = &row(r)[q0..q0 + w];
            let dst = &mut tile[r * TILE..r * TILE + w];
            if r == 0 {
                dst.copy_from_slice(src);
                continue;
            }
            let base = self.twiddles.get(r * (k1_first + q0));
            let steps = &self.steps[r * TILE..r * TILE + w];
            for ((d, &v), &st) in dst.iter_mut().zip(src).zip(steps) {
                *d = v * (base * st);
            }
        }
    }

    /// The radix-2 stages across the p tile rows, half-size h = p/2, p/4, ..., 1 (decimation
    /// in frequency: row r ends up holding output bitrev(r)).
    fn butterflies(&self, w: usize, tile: &mut [Complex64]) {
        let p = self.p;
        let mut h = p / 2;
        while h >= 1 {
            for g in (0..p).step_by(2 * h) {
                for j in 0..h {
                    let root = self.roots[h + j];
                    let (lo, hi) = tile.split_at_mut((g + j + h) * TILE);
                    let a = &mut lo[(g + j) * TILE..(g + j) * TILE + w];
                    let c = &mut hi[..w];
                    if j == 0 {
                        for (x, y) in a.iter_mut().zip(c.iter_mut()) {
                            let (u, v) = (*x, *y);
                            *x = u + v;
                            *y = u - v;
                        }
                    } else {
                        for (x, y) in a.iter_mut().zip(c.iter_mut()) {
                            let (u, v) = (*x, *y);
                            *x = u + v;
                            *y = (u - v) * root;
                        }
                    }
                }
            }
            h /= 2;
        }
    }

    /// `out[k2][q0..q0 + w]` = tile row bitrev(k2), scaled by 1/n for the inverse.
    fn store_tile(&self, q0: usize, w: usize, tile: &[Complex64], out: &mut [&mut [Complex64]]) {
        let bits = self.p.trailing_zeros();
        for r in 0..self.p {
            let k2 = if bits == 0 { 0 } else { r.reverse_bits() >> (usize::BITS - bits) };
            let src = &tile[r * TILE..r * TILE + w];
            let dst = &mut out[k2][q0..q0 + w];
            match self.direction {
                Direction::Forward => dst.copy_from_slice(src),
                Direction::Inverse => {
                    let f = 1.0 / self.n as f64;
                    dst.iter_mut().zip(src).for_each(|(y, &v)| *y = v * f);
                }
            }
        }
    }

    /// Runs process `ctx.pid()`'s part (steps 1–3 of the module docs) in `ctx`'s section, which
    /// must have p processes and 2 free register slots and room for 2p messages in force.
    ///
    /// `local` holds x[s + p·l] for l in 0..n/p on entry (cyclic distribution) and is clobbered
    /// (it is the receive buffer). On `Ok`, `out[k2]` (p chunks of b = n/p² elements) holds
    /// y[m·k2 + s·b .. m·k2 + (s+1)·b] (the block-cyclic distribution with block b).
    pub(super) fn run_process(
        &self,
        ctx: &mut Ctx,
        ws: &mut Workspace,
        local: &mut [Complex64],
        out: &mut [&mut [Complex64]],
        cancel: Option<&std::sync::atomic::AtomicBool>,
    ) -> Result<(), Error> {
        let (n, p) = (self.n, self.p);
        let (m, b) = (n / p, n / p / p);
        let s = ctx.pid() as usize;
        if ctx.nprocs() as usize != p {
            return Err(Error::SectionSize { p, nprocs: ctx.nprocs() as usize });
        }
        assert!(local.len() == m && out.len() == p && out.iter().all(|c| c.len() == b));
        ws.z.resize(m, Complex64::default());
        ws.scratch.resize(self.scratch_len().max(ws.scratch.len()), Complex64::default());
        ws.tile.resize(TILE * p, Complex64::default());
        // Step 1: z_s = FFT_m(x_s); `local` becomes garbage (rustfft uses it as scratch).
        self.fft_m.process_outofplace_with_scratch(local, &mut ws.z, &mut ws.scratch);
        // Step 2: process t gets block t of every z_s as its rows R[s] (one sync).
        check_cancel(cancel)?;
        exchange(ctx, &ws.z, local, b)?;
        check_cancel(cancel)?;
        // Step 3: y[k1 + m·k2] = Σ_r ω_p^{r·k2} · ω_n^{r·k1} · R[r][q], k1 = s·b + q.
        self.combine(s * b, local, &mut ws.tile, out);
        Ok(())
    }
}

/// `Cancelled` once a front end's flag is set ([`super::Fft::with_cancel`]).
pub(super) fn check_cancel(cancel: Option<&std::sync::atomic::AtomicBool>) -> Result<(), Error> {
    match cancel {
        Some(f) if f.load(std::sync::atomic::Ordering::Relaxed) => {
            Err(Error::from(sluice_io::Error::Cancelled))
        }
        _ => Ok(()),
    }
}

/// The parallel FFT from inside a running BSP program (for example one started by an MPI
/// launcher), after LPF's library convention: it runs in a fresh context of the same processes
/// (`rehook`), so it neither sees nor disturbs the caller's registrations and queue capacity.
///
/// Collective: every process of `ctx`'s section calls it with the same `plan` (p = the section
/// size). Process s passes `local` = x[s + p·l] for l in 0..n/p (the cyclic distribution),
/// which is clobbered, and receives in `out` (n/p elements) the block-cyclic distribution with
/// block b = n/p²: `out[k2·b + q] = y[m·k2 + s·b + q]` for k2 in 0..p, q in 0..b.
///
/// Errors: [`Error::SectionSize`] when the section does not have p processes,
/// [`Error::Length`] when a buffer does not hold n/p elements, [`Error::Bsp`] otherwise.
pub fn fft_spmd(
    ctx: &mut Ctx,
    plan: &LocalFft,
    local: &mut [Complex64],
    out: &mut [Complex64],
) -> Result<(), Error> {
    let (n, p) = (plan.n, plan.p);
    if ctx.nprocs() as usize != p {
        return Err(Error::SectionSize { p, nprocs: ctx.nprocs() as usize });
    }
    for (what, got) in [("local input", local.len()), ("local output", out.len())] {
        if got != n / p {
            return Err(Error::Length { what, expected: n / p, got });
        }
    }
    let mut chunks: Vec<&mut [Complex64]> = out.chunks_mut(n / p / p).collect();
    let cell = std::sync::Mutex::new((Workspace::default(), local, &mut chunks[..], None));
    ctx.rehook(
        |c, _, _, _| {
            let mut guard = cell.lock().unwrap_or_else(|e| e.into_inner());
            let (ws, local, out, result) = &mut *guard;
            *result = Some(prologue(c, p).and_then(|()| plan.run_process(c, ws, local, out, None)));
        },
        Args::none(),
    )?;
    let (_, _, _, result) = cell.into_inner().unwrap_or_else(|e| e.into_inner());
    result.unwrap_or(Ok(()))
}

/// LPF's canonical prologue in a fresh context: capacity for the exchange (2 slots, 2p
/// messages), in force after one sync.
pub(super) fn prologue(ctx: &mut Ctx, p: usize) -> Result<(), Error> {
    ctx.resize_memory_register(2)?;
    ctx.resize_message_queue(2 * p)?;
    ctx.sync()?;
    Ok(())
}
