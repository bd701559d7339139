//! One process's part of the parallel FFT (the three steps of the module docs), and the
//! SPMD-level entry point [`fft_spmd`] for callers that already run a BSP section.

use std::sync::Arc;

use rustfft::num_complex::Complex64;
use rustfft::{Fft as RustFft, FftDirection, FftPlanner};
use sluice_bsp::{Args, Ctx};

use super::exchange::exchange;
use super::twiddle::Twiddles;
use super::{Direction, FftError, check_shape};

/// Columns per tile of step 3: `TILE × p` elements (p = 2: 8 KiB) stay in L1 between the
/// twiddle-and-gather, the p-point FFTs and the scatter.
const TILE: usize = 256;

/// What every process of one transform shares and never writes: sizes, the rustfft plans, the
/// twiddle tables. Build it once and run it many times ([`LocalFft::run`]).
#[derive(Clone)]
pub struct LocalFft {
    n: usize,
    p: usize,
    direction: Direction,
    fft_m: Arc<dyn RustFft<f64>>,
    fft_p: Arc<dyn RustFft<f64>>,
    twiddles: Twiddles,
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
    /// The local buffer, `m` long; give it back with `put_local`.
    pub(super) fn take_local(&mut self, m: usize) -> Vec<Complex64> {
        let mut local = std::mem::take(&mut self.local);
        local.resize(m, Complex64::default());
        local
    }

    /// Keeps `local` for the next call.
    pub(super) fn put_local(&mut self, local: Vec<Complex64>) {
        self.local = local;
    }

    /// The scratch buffer, at least `len` long.
    pub(super) fn scratch_mut(&mut self, len: usize) -> &mut [Complex64] {
        self.scratch.resize(len.max(self.scratch.len()), Complex64::default());
        &mut self.scratch[..len]
    }
}

impl LocalFft {
    /// The plan of a length-`n` transform on `p` processes: `n` a power of two, `p` a power of
    /// two with `p² ≤ n` ([`FftError::NotPowerOfTwo`], [`FftError::BadProcs`]).
    pub fn new(n: usize, p: usize, direction: Direction) -> Result<LocalFft, FftError> {
        check_shape(n, p)?;
        let dir = match direction {
            Direction::Forward => FftDirection::Forward,
            Direction::Inverse => FftDirection::Inverse,
        };
        let mut planner = FftPlanner::new();
        Ok(LocalFft {
            n,
            p,
            direction,
            fft_m: planner.plan_fft(n / p, dir),
            fft_p: planner.plan_fft(p, dir),
            twiddles: Twiddles::new(n, direction.sign()),
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

    /// Elements of workspace one process of [`super::Fft::process`] uses: local, z, scratch,
    /// tile.
    pub(super) fn workspace_len(&self) -> usize {
        let m = self.n / self.p;
        2 * m + self.scratch_len() + TILE * self.p
    }

    fn scratch_len(&self) -> usize {
        self.fft_m.get_outofplace_scratch_len().max(self.fft_p.get_inplace_scratch_len())
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
    ) -> Result<(), FftError> {
        let (n, p) = (self.n, self.p);
        let (m, b) = (n / p, n / p / p);
        let s = ctx.pid() as usize;
        if ctx.nprocs() as usize != p {
            return Err(FftError::SectionSize { p, nprocs: ctx.nprocs() as usize });
        }
        assert!(local.len() == m && out.len() == p && out.iter().all(|c| c.len() == b));
        ws.z.resize(m, Complex64::default());
        ws.scratch.resize(self.scratch_len().max(ws.scratch.len()), Complex64::default());
        ws.tile.resize(TILE * p, Complex64::default());
        // Step 1: z_s = FFT_m(x_s); `local` becomes garbage (rustfft uses it as scratch).
        self.fft_m.process_outofplace_with_scratch(local, &mut ws.z, &mut ws.scratch);
        // Step 2: process t gets block t of every z_s as its rows R[s] (one sync).
        exchange(ctx, &ws.z, local, b)?;
        // Step 3: y[k1 + m·k2] = Σ_s ω_p^{s·k2} · ω_n^{s·k1} · R[s][q], k1 = s_own·b + q.
        let scale = match self.direction {
            Direction::Forward => 1.0,
            Direction::Inverse => 1.0 / n as f64,
        };
        let first_k1 = s * b;
        for q0 in (0..b).step_by(TILE) {
            let width = TILE.min(b - q0);
            let tile = &mut ws.tile[..width * p];
            for (r, row) in local.chunks_exact(b).enumerate() {
                let mut e = r * (first_k1 + q0);
                for (i, &v) in row[q0..q0 + width].iter().enumerate() {
                    tile[i * p + r] = v * self.twiddles.get(e);
                    e += r;
                }
            }
            self.fft_p.process_with_scratch(tile, &mut ws.scratch);
            for (k2, chunk) in out.iter_mut().enumerate() {
                for (i, y) in chunk[q0..q0 + width].iter_mut().enumerate() {
                    *y = tile[i * p + k2] * scale;
                }
            }
        }
        Ok(())
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
/// Errors: [`FftError::SectionSize`] when the section does not have p processes,
/// [`FftError::Length`] when a buffer does not hold n/p elements, [`FftError::Bsp`] otherwise.
pub fn fft_spmd(
    ctx: &mut Ctx,
    plan: &LocalFft,
    local: &mut [Complex64],
    out: &mut [Complex64],
) -> Result<(), FftError> {
    let (n, p) = (plan.n, plan.p);
    if ctx.nprocs() as usize != p {
        return Err(FftError::SectionSize { p, nprocs: ctx.nprocs() as usize });
    }
    for (what, got) in [("local input", local.len()), ("local output", out.len())] {
        if got != n / p {
            return Err(FftError::Length { what, expected: n / p, got });
        }
    }
    let mut chunks: Vec<&mut [Complex64]> = out.chunks_mut(n / p / p).collect();
    let cell = std::sync::Mutex::new((Workspace::default(), local, &mut chunks[..], None));
    ctx.rehook(
        |c, _, _, _| {
            let mut guard = cell.lock().unwrap_or_else(|e| e.into_inner());
            let (ws, local, out, result) = &mut *guard;
            *result = Some(prologue(c, p).and_then(|()| plan.run_process(c, ws, local, out)));
        },
        Args::none(),
    )?;
    let (_, _, _, result) = cell.into_inner().unwrap_or_else(|e| e.into_inner());
    result.unwrap_or(Ok(()))
}

/// LPF's canonical prologue in a fresh context: capacity for the exchange (2 slots, 2p
/// messages), in force after one sync.
pub(super) fn prologue(ctx: &mut Ctx, p: usize) -> Result<(), FftError> {
    ctx.resize_memory_register(2)?;
    ctx.resize_message_queue(2 * p)?;
    ctx.sync()?;
    Ok(())
}
