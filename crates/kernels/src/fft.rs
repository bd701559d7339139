//! The parallel FFT of Bisseling and Inda on sluice-bsp (Inda & Bisseling, *A simple and
//! efficient parallel FFT algorithm using the BSP model*, Parallel Computing 27(14), 2001;
//! Bisseling, *Parallel Scientific Computation*, ch. 3), the "immortal" BSP FFT of the LPF paper
//! (`shared/papers`, §4.2).
//!
//! y_k = Σ_j x_j ω_n^{jk}, ω_n = e^{−2πi/n} ([`Direction::Forward`], as `numpy.fft.fft`), or
//! ω_n = e^{+2πi/n} and a factor 1/n ([`Direction::Inverse`], as `numpy.fft.ifft`).
//!
//! # The algorithm
//! n = 2^k complex f64 values on p processes (p a power of two, p² ≤ n); m = n/p, b = n/p².
//! Process s holds x_s[l] = x[s + p·l] (the cyclic distribution). With k = k1 + m·k2:
//!
//! y[k1 + m·k2] = Σ_s ω_p^{s·k2} · ω_n^{s·k1} · (Σ_l x_s[l] ω_m^{l·k1})
//!
//! 1. Each process runs one local FFT of length m (rustfft): z_s = FFT_m(x_s).
//! 2. One redistribution with BSP puts and one `sync`: process t receives block t
//!    (k1 in t·b..(t+1)·b) of every z_s (the cyclic-to-block permutation; h = (p−1)·b values).
//! 3. Process t multiplies by the twiddle factors ω_n^{s·k1} and runs b FFTs of length p across
//!    its p rows; it now holds y[m·k2 + t·b + q] for all k2 < p, q < b (block-cyclic output).
//!
//! Cost: 5(n/p)·log₂ n flops, one superstep of h = n/p − n/p² values, ℓ for 2 syncs.
//!
//! # Contract
//! 1. [`Fft::process`] gives `numpy.fft.fft` (or `ifft`) of its input, within a relative L2
//!    error of ~1e-15·log n, for every n = 2^k and valid p; p = 1 runs rustfft directly below
//!    [`FOUR_STEP_MIN`]. From there on, for any p, the plan is the same algorithm with √n
//!    virtual processes simulated by the p threads (`fourstep`), so every FFT it runs fits the
//!    caches.
//! 2. `n` must be a power of two ([`Error::NotPowerOfTwo`]); `p` a power of two with
//!    p² ≤ n ([`Error::BadProcs`]); a plan never sees other shapes.
//! 3. A plan runs its p processes on the threads backend: p threads (whatever the core count)
//!    started with the plan and kept (`section`), which join a fresh BSP section
//!    ([`sluice_bsp::hook`]) on each call, so a call spawns no thread and allocates no buffer
//!    after the first. There the processes share memory (`shared`): the redistribution of
//!    step 2 is done by reading and writing shared buffers between syncs, not by puts, and a
//!    thread may run several of the algorithm's processes (its lanes, [`lanes_for`]). The
//!    same steps with puts run from inside any BSP section (MPI included) with [`fft_spmd`],
//!    which takes and returns the distributed vectors.
//! 4. A plan keeps its buffers between calls (p > 1 or a four-step plan: n values of lanes,
//!    and each process's rustfft scratch and tile; large ones advised onto transparent huge pages, `huge`); it is
//!    `Sync`, and concurrent calls take turns.
//! 5. [`file::fft_file`] reads a 1-D complex128 `.npy`, transforms it, and writes the result as a
//!    `.npy` complex128 through [`sluice_io::OutputFile`] (never half a file); input, output and
//!    workspace are reserved from the memory budget first, so a file too large is an error
//!    naming it before anything is read.
//! 6. [`candidate_procs`] and [`fastest`] pick p by timing the candidates on the caller's data
//!    where the best p depends on the machine's load (n ≤ [`PROBE_MAX`]).

mod crew;
mod exchange;
pub mod file;
mod fourstep;
mod huge;
mod section;
mod shared;
mod simd;
mod spmd;
mod twiddle;

use std::sync::{Arc, Mutex};

pub use huge::Buffer;
pub use rustfft::num_complex::Complex64;
use rustfft::{Fft as RustFft, FftDirection, FftPlanner};
pub use spmd::{LocalFft, fft_spmd};

use crate::Error;
use fourstep::FourStep;
use section::Section;

use spmd::Workspace;

/// Sign of the exponent (and scaling) of a transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// e^{−2πi jk/n}, unscaled (`numpy.fft.fft`).
    #[default]
    Forward,
    /// e^{+2πi jk/n}, scaled by 1/n (`numpy.fft.ifft`).
    Inverse,
}

impl Direction {
    /// −1 for forward, +1 for inverse.
    fn sign(self) -> f64 {
        match self {
            Direction::Forward => -1.0,
            Direction::Inverse => 1.0,
        }
    }
}

/// Checks rule 2.
fn check_shape(n: usize, p: usize) -> Result<(), Error> {
    if !n.is_power_of_two() {
        return Err(Error::NotPowerOfTwo { n });
    }
    if !p.is_power_of_two() || p.checked_mul(p).is_none_or(|pp| pp > n) {
        return Err(Error::BadProcs { n, p });
    }
    Ok(())
}

/// Fewest values per process for which [`default_procs`] goes parallel. Below it, waking p
/// threads and two syncs cost more than they save: on the quiet 2-core machine p = 2 lost to
/// p = 1 at n = 2^17 and 2^18 (closing note of issue 12), and under load p = 1 was 2× faster at
/// 2^18 (3.5 ms against 6.8 ms, load 10, kept section).
pub const MIN_VALUES_PER_PROCESS: usize = 1 << 18;

/// The p a caller without a preference should use: the largest valid p (rule 2) not above
/// `max_p` that leaves each process at least [`MIN_VALUES_PER_PROCESS`] values (1 when none).
pub fn default_procs(n: usize, max_p: usize) -> usize {
    let mut p = 1;
    while p * 2 <= max_p && (p * 2) * (p * 2) <= n && n / (p * 2) >= MIN_VALUES_PER_PROCESS {
        p *= 2;
    }
    p
}

/// Smallest n planned as a four-step transform (`fourstep`): from here on the local FFTs of
/// n/p values outgrow the caches. At 2^20 the two plans were level (p = 1 and p = 2); from
/// 2^22 on the four-step was faster at both (its module docs give the figures).
pub const FOUR_STEP_MIN: usize = 1 << 21;

/// [`FOUR_STEP_MIN`] for a plan of 8 lanes ([`lanes_for`]): lanes of 2^18 values at 2^21 still
/// beat the four-step (session 32, Intel, `bench/kernels/fft_ab`, p = 2, 6 ABBA pairs:
/// t_fourstep / t_8lanes 1.19 at 2^21, won 6 of 6; 0.99 at 2^22, won 3 of 6).
pub const FOUR_STEP_MIN_LANES: usize = 1 << 22;

/// Whether [`Fft::new`] plans n values on p threads as a four-step transform: n ≥
/// [`FOUR_STEP_MIN`] ([`FOUR_STEP_MIN_LANES`] where the parallel plan would take 8 lanes),
/// unless `SLUICE_FFT_FOUR_STEP=0` (for benchmarks; `=1` forces it at every n).
fn four_step(n: usize, p: usize) -> bool {
    match std::env::var("SLUICE_FFT_FOUR_STEP").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ if lanes_for(n, p) == 8 => n >= FOUR_STEP_MIN_LANES,
        _ => n >= FOUR_STEP_MIN,
    }
}

/// Largest n for which [`candidate_procs`] offers more than one p to [`fastest`]: below it the
/// best p depends on how quickly p threads wake and meet (the machine's load), so it is measured;
/// above it the parallel work dominates and the largest p wins.
pub const PROBE_MAX: usize = 1 << 18;

/// Fewest values per process a probed p may leave.
const PROBE_MIN_VALUES: usize = 1 << 12;

/// How long `sluice fft` (and `examples/fft_interleaved.rs`) runs [`fastest`] at least (half
/// of it untimed): at 2^16 about 9 rounds of turns of p = 1 and p = 2; at 2^18 its fewest timed
/// rounds take longer (the plan took 106–136 ms in all, session 26).
pub const PROBE_TIME: std::time::Duration = std::time::Duration::from_millis(20);

/// Fewest timed rounds of [`fastest`] (one turn of [`PROBE_TURN`] calls per candidate each).
pub const PROBE_CALLS: usize = 3;

/// Most rounds of [`fastest`], whatever its time.
pub const PROBE_ROUNDS_MAX: usize = 2000;

/// Calls of one candidate in a row in each round of [`fastest`]; the first of them is not
/// timed.
pub const PROBE_TURN: usize = 3;

/// How much slower than the fastest candidate [`fastest`] lets a candidate of more processes be
/// and still chooses it.
pub const PROBE_PREFER_PARALLEL: f64 = 1.5;

/// The process counts worth planning for n values on at most `max_p` processors: for
/// n ≤ [`PROBE_MAX`], 1 and every larger valid p ≤ `max_p` leaving each process at least 2^12
/// values (to be timed by [`fastest`]); above it only [`default_procs`].
pub fn candidate_procs(n: usize, max_p: usize) -> Vec<usize> {
    if n > PROBE_MAX {
        return vec![default_procs(n, max_p)];
    }
    let mut ps = vec![1];
    let mut p = 2;
    while p <= max_p && check_shape(n, p).is_ok() && n / p >= PROBE_MIN_VALUES {
        ps.push(p);
        p *= 2;
    }
    ps
}

/// The index of the plan to keep for calls again and again: rounds in which each plan in turn
/// makes [`PROBE_TURN`] calls in a row, for `at_least` of wall time and at least
/// [`PROBE_CALLS`] timed rounds (at most [`PROBE_ROUNDS_MAX`], the last [`PROBE_CALLS`] of
/// them timed in any case). Only the rounds begun in the second half of that time (and the
/// fewest ones after it) are timed, and in each turn every call but the first. Of the plans
/// whose least timed call is within [`PROBE_PREFER_PARALLEL`] times the least of all, the one
/// of the most processes is chosen (the first of them on a tie).
/// The plans' shapes must match the buffers; `output` is overwritten. With one plan, returns 0
/// without running it.
///
/// Why: on this project's 2-core virtual machines a section's threads run their first calls
/// slowly, and again after they sat idle (here, while another candidate ran; at 2^16 the p = 2
/// calls right after p = 1's took 517–684 µs against 263–450, session 23): at 2^18, p = 2's
/// first 10–25 calls in a process took 2.5–7.4 ms and the later ones 1.5–1.75 ms (medians),
/// where p = 1 took 3.0–4.1 ms from the start (session 26). A probe of single calls in turn
/// timed p = 2 only cold, and chose p = 1 at 2^18 in 13 of 20 runs, which then ran at half
/// p = 2's speed. Turns of calls with the first untimed, and the margin for the larger p, keep
/// the choice of p = 1 for a machine where p = 2 is slower by more than the cold calls explain
/// (under load 10, 6.8 against 3.5 ms at 2^18).
pub fn fastest(
    plans: &[Fft],
    input: &[Complex64],
    output: &mut [Complex64],
    at_least: std::time::Duration,
) -> Result<usize, Error> {
    if plans.len() < 2 {
        return Ok(0);
    }
    let started = std::time::Instant::now();
    let mut best = vec![std::time::Duration::MAX; plans.len()];
    let mut timed = 0;
    for round in 0..PROBE_ROUNDS_MAX {
        let since = started.elapsed();
        if timed >= PROBE_CALLS && since >= at_least {
            break;
        }
        // The last rounds are timed whatever the clock says: a cap reached before half the
        // time would otherwise leave no timed call, and plan 0 chosen blind.
        let time = since >= at_least / 2 || round + PROBE_CALLS >= PROBE_ROUNDS_MAX;
        for (plan, best) in plans.iter().zip(&mut best) {
            for call in 0..PROBE_TURN {
                let t = std::time::Instant::now();
                plan.process(input, output)?;
                if time && call > 0 {
                    *best = (*best).min(t.elapsed());
                }
            }
        }
        timed += usize::from(time);
    }
    Ok(prefer_parallel(plans.iter().map(Fft::procs).zip(best.iter().map(|t| t.as_secs_f64()))))
}

/// [`fastest`]'s choice from each plan's processes and least time: of the plans within
/// [`PROBE_PREFER_PARALLEL`] times the least time, the index of the one of the most processes.
fn prefer_parallel(plans: impl Iterator<Item = (usize, f64)> + Clone) -> usize {
    let least = plans.clone().map(|(_, t)| t).fold(f64::INFINITY, f64::min);
    let mut chosen = (0, 0);
    for (i, (p, t)) in plans.enumerate() {
        if t <= least * PROBE_PREFER_PARALLEL && p > chosen.1 {
            chosen = (i, p);
        }
    }
    chosen.0
}

/// The lanes (the plan's processes, v) of a parallel plan of n values on p threads, each
/// thread running v/p of them between the syncs (`shared`): 8 on p = 2 threads where a lane
/// keeps at least [`LANE_MIN`] values and the CPU runs the 8-row combine in registers
/// (`simd::combine_oct`), else p. `SLUICE_FFT_LANES=0` keeps p, `=4` or `=8` sets v on two
/// threads where the lanes keep [`LANE_MIN`] values (for benchmarks).
///
/// Why: rustfft's cost per n·log₂ n grows with n through this range (`sluice fft --procs 1`,
/// session 31's Intel host: 0.212 ns at 2^14, 0.228 at 2^15, 0.267 at 2^16, 0.337 at 2^17),
/// and four lanes of m/4 per thread cost less than one of m by more than the 8-row combine adds
/// over the 2-row one. `bench/kernels/fft_ab`, p = 2, medians of 6–8 ABBA pairs:
/// - 8 lanes against 4 (session 32, Intel, 2 vCPUs, L2 2 MiB; t_4 / t_8): 2^16 1.05, 2^17
///   1.11, 2^18 1.11, 2^19 1.07, 2^20 1.12, each won 8 of 8; with the general (tile) combine
///   instead of the one in registers, 0.74–0.85.
/// - 4 lanes against 2 (t_2 / t_4): session 31 (Intel) 2^16 1.18 and 1.16, 2^17 1.10, 2^18
///   1.13, 2^19 1.16, 2^20 1.11; sessions 29–30 (AMD EPYC, L2 1 MiB, threads that slept
///   between calls) 2^16 1.01, 2^17 1.00, 2^18 1.12 and 1.09, 2^19 0.975, 2^20 0.960.
pub fn lanes_for(n: usize, p: usize) -> usize {
    let v = match std::env::var("SLUICE_FFT_LANES").as_deref() {
        Ok("0") => return p,
        Ok("4") => 4,
        _ => 8,
    };
    if p == 2 && n / v >= LANE_MIN && simd::detect().is_some() { v } else { p }
}

/// Fewest values in a lane that [`lanes_for`] makes: 8 lanes from n = 2^16 (below it the
/// split was not measured).
pub const LANE_MIN: usize = 1 << 13;

/// Largest n for which the sequential path copies the input and transforms out of place; above
/// it, rustfft's immutable path (which saves the copy) is used. Medians of 30 calls, load 15, 2^16:
/// copy 0.26–0.32 ms, immutable 0.33–0.34 ms (3 of 3 pairs); 2^22: copy 144–210 ms, immutable
/// 62–180 ms (3 of 3 pairs).
const COPY_MAX: usize = 1 << 16;

/// A transform of one length on one process count, ready to run many times (rule 4).
#[derive(Debug)]
pub struct Fft {
    kind: Kind,
    /// One workspace per process, locked for a whole call (rule 4: calls take turns).
    workspaces: Mutex<State>,
    /// A front end's cancel flag, checked between the steps of a parallel call.
    cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
}

/// What a plan keeps between calls: each process's workspace, and with p > 1 the n values of
/// the lanes (`shared`).
#[derive(Debug, Default)]
struct State {
    workspaces: Vec<Workspace>,
    lanes: Vec<Complex64>,
}

enum Kind {
    Sequential { fft: Arc<dyn RustFft<f64>>, n: usize, direction: Direction },
    Parallel(LocalFft, Section),
    FourStep(FourStep, Section),
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kind::Sequential { n, direction, .. } => {
                write!(f, "Sequential {{ n: {n}, direction: {direction:?} }}")
            }
            Kind::Parallel(plan, _) => plan.fmt(f),
            Kind::FourStep(plan, _) => plan.fmt(f),
        }
    }
}

impl Fft {
    /// Plans a length-`n` transform on `p` processes (rule 2 says which are valid).
    pub fn new(n: usize, p: usize, direction: Direction) -> Result<Fft, Error> {
        check_shape(n, p)?;
        let kind = if four_step(n, p) {
            Kind::FourStep(FourStep::new(n, p, direction)?, Section::new(p)?)
        } else if p == 1 {
            let dir = match direction {
                Direction::Forward => FftDirection::Forward,
                Direction::Inverse => FftDirection::Inverse,
            };
            Kind::Sequential { fft: FftPlanner::new().plan_fft(n, dir), n, direction }
        } else {
            Kind::Parallel(LocalFft::new(n, lanes_for(n, p), direction)?, Section::new(p)?)
        };
        let workspaces = (0..p).map(|_| Workspace::default()).collect();
        let state = State { workspaces, lanes: Vec::new() };
        Ok(Fft { kind, workspaces: Mutex::new(state), cancel: None })
    }

    /// Stops a call once `flag` is set (Ctrl-C in a front end): checked before the call and,
    /// with p > 1, between its steps; the call then fails with `Cancelled` (a process that
    /// stops fails its peers' next sync, so none waits).
    pub fn with_cancel(mut self, flag: Arc<std::sync::atomic::AtomicBool>) -> Fft {
        self.cancel = Some(flag);
        self
    }

    /// The transform length n.
    pub fn len(&self) -> usize {
        match &self.kind {
            Kind::Sequential { n, .. } => *n,
            Kind::Parallel(plan, _) => plan.len(),
            Kind::FourStep(plan, _) => plan.n,
        }
    }

    /// Returns true if and only if n is 0 (never: plans have n ≥ 1).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The process count p.
    pub fn procs(&self) -> usize {
        match &self.kind {
            Kind::Sequential { .. } => 1,
            Kind::Parallel(_, section) => section.procs(),
            Kind::FourStep(plan, _) => plan.p,
        }
    }

    /// Bytes a plan of length `n` on `p` processes holds, at most (to reserve before planning):
    /// rustfft's twiddles for the local transform of n/p values, and the two √n twiddle tables.
    pub fn plan_bytes(n: usize, p: usize) -> u64 {
        let root = 1usize << n.max(1).ilog2().div_ceil(2);
        ((n / p.max(1) + 2 * root) * std::mem::size_of::<Complex64>()) as u64
    }

    /// Bytes of workspace a call uses besides input and output (all processes together).
    pub fn workspace_bytes(&self) -> u64 {
        let elems = match &self.kind {
            Kind::Sequential { fft, n, .. } if *n <= COPY_MAX => {
                n + fft.get_outofplace_scratch_len()
            }
            Kind::Sequential { fft, .. } => fft.get_immutable_scratch_len(),
            Kind::Parallel(plan, section) => {
                plan.len() + section.procs() * plan.shared_workspace_len()
            }
            Kind::FourStep(plan, _) => plan.n + plan.p * (plan.tile_len() + plan.scratch_len()),
        };
        (elems * std::mem::size_of::<Complex64>()) as u64
    }

    /// `output` = the transform of `input` (rule 1). Both hold n values. With p > 1, runs a BSP
    /// section of p threads on shared memory (`shared`): a cooperative gather of the cyclic
    /// distribution, process s's local FFT written into row s of `output`, and the twiddles and
    /// p-point FFTs in place on its column block.
    pub fn process(&self, input: &[Complex64], output: &mut [Complex64]) -> Result<(), Error> {
        let n = self.len();
        for (what, got) in [("input", input.len()), ("output", output.len())] {
            if got != n {
                return Err(Error::Length { what, expected: n, got });
            }
        }
        let cancel = self.cancel.as_deref();
        spmd::check_cancel(cancel)?;
        let mut state = self.workspaces.lock().unwrap_or_else(|e| e.into_inner());
        let State { workspaces, lanes } = &mut *state;
        match &self.kind {
            Kind::Sequential { fft, direction, .. } => {
                let ws = &mut workspaces[0];
                if n <= COPY_MAX {
                    // Out of place from a kept copy (rustfft's in-place path copies once more).
                    let mut local = ws.take_local();
                    let copy = huge::window(&mut local, n);
                    copy.copy_from_slice(input);
                    let scratch = ws.scratch_mut(fft.get_outofplace_scratch_len());
                    fft.process_outofplace_with_scratch(copy, output, scratch);
                    ws.put_local(local);
                } else {
                    // rustfft's immutable path reads the input in its first pass: no copy.
                    let scratch = ws.scratch_mut(fft.get_immutable_scratch_len());
                    fft.process_immutable_with_scratch(input, output, scratch);
                }
                if *direction == Direction::Inverse {
                    let scale = 1.0 / n as f64;
                    output.iter_mut().for_each(|y| *y *= scale);
                }
                Ok(())
            }
            Kind::Parallel(plan, section) => {
                let lanes = huge::window(lanes, n);
                shared::run(plan, section, workspaces, lanes, input, output, cancel)
            }
            Kind::FourStep(plan, section) => {
                // The lanes are the workspace `M`.
                let lanes = huge::window(lanes, n);
                shared::run_four_step(plan, section, workspaces, lanes, input, output, cancel)
            }
        }
    }
}

/// `n` zeroed values on a cache-line boundary, on memory advised onto transparent huge pages, as
/// `sluice fft` holds its input and output: buffers for [`Fft::process`]
/// (`examples/fft_interleaved.rs` gives them to it, so that it runs there as it does in the CLI).
pub fn buffer(n: usize) -> Result<Buffer, std::collections::TryReserveError> {
    Buffer::zeroed(n)
}

/// The forward FFT of `data` in place on `p` processes (rule 1): a plan, one call, and a copy of
/// the input (n values). Plan once with [`Fft::new`] to transform many vectors.
pub fn fft(data: &mut [Complex64], p: usize) -> Result<(), Error> {
    transform(data, p, Direction::Forward)
}

/// The inverse FFT (scaled by 1/n, as `numpy.fft.ifft`) of `data` in place on `p` processes.
pub fn ifft(data: &mut [Complex64], p: usize) -> Result<(), Error> {
    transform(data, p, Direction::Inverse)
}

fn transform(data: &mut [Complex64], p: usize, direction: Direction) -> Result<(), Error> {
    transform_cancellable(data, p, direction, None)
}

/// [`fft`] (or [`ifft`]) that stops once `cancel` is set ([`Fft::with_cancel`]).
pub fn transform_cancellable(
    data: &mut [Complex64],
    p: usize,
    direction: Direction,
    cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
) -> Result<(), Error> {
    let mut plan = Fft::new(data.len(), p, direction)?;
    if let Some(flag) = cancel {
        plan = plan.with_cancel(flag);
    }
    // The copy on a cache line (`huge` rule 3); like `to_vec`, it aborts where memory is out.
    let mut copy = Vec::new();
    let input = huge::window(&mut copy, data.len());
    input.copy_from_slice(data);
    plan.process(input, data)
}

#[cfg(test)]
mod tests;
