//! The parallel steps of [`super::Fft::process`] on the threads backend, where the p processes
//! of the section share the caller's memory: the redistribution is done by reading and writing
//! shared buffers between syncs instead of by puts, and nothing is copied twice.
//!
//! The plan's p processes (its lanes) run on the section's q threads, p/q each (`fft::lanes_for`:
//! p = 8 lanes on 2 threads from 2^16 to 2^21); below, "process s" is one lane, and a thread does the
//! work of its lanes in each superstep (their parts are adjacent, so it takes them as one).
//! With m = n/p and b = n/p² (as in the module docs of `fft`), in three supersteps:
//! 1. Gather: process s reads its contiguous part x[s·m..(s+1)·m] once and deals it out to the
//!    p lanes: lane t (m values of `lanes`) gets x[t + p·l] for l in s·b..(s+1)·b. Each input
//!    cache line is read by one process only (a per-process strided gather reads every line on
//!    every process).
//! 2. Local FFT: process t transforms lane t into row t of the output (`output[t·m..]`), out
//!    of place (rustfft uses the lane as its scratch).
//! 3. Combine: process t owns column block t of every output row (k1 in t·b..(t+1)·b) and
//!    replaces it in place by the twiddled p-point FFTs across rows (`LocalFft::combine_in_place`),
//!    which leaves y[m·k2 + k1] in row k2: the natural order.
//!
//! Memory traffic: the input read once, the lanes written and read once, the output written by
//! the local FFT and read and written once by the combine; workspace: the n values of `lanes`
//! and each process's rustfft scratch and tile. A sync separates the supersteps; the disjoint
//! parts of `lanes` and `output` each process takes in a superstep come from [`View`].
//!
//! By receiver, up to [`RECEIVER_MAX`] where a thread's lanes fill whole cache lines of each
//! row of p (four or more lanes a thread): steps 1 and 2 are one superstep. Thread s reads its
//! lanes' values out of the whole input (its four of each row of eight are one cache line where
//! the input is aligned, and which lanes are whose follows the input's alignment:
//! `huge::line_offset`), writes them into their output rows, and transforms the rows there in place:
//! no `lanes`, one sync fewer.
//!
//! The only `unsafe` code of the FFT besides `exchange`: safe Rust cannot hand p threads
//! disjoint `&mut` parts of one buffer partitioned differently in each superstep (lanes by
//! sender, then whole rows, then column blocks of every row), so [`View::part`] makes them from
//! a raw pointer, and each caller below says why its parts are disjoint.
//!
//! # Contract
//! 1. `run` leaves in `output` the transform of `input` (rule 1 of `fft`), for any plan with
//!    p > 1 and `input`, `output`, `lanes` of n values; `bufs` has one entry per thread of
//!    `section`, q of them, q dividing p.
//! 2. A process that fails or sees the cancel flag between supersteps returns an error; its
//!    peers' next sync then fails, so every process stops and the section ends; `run` returns
//!    only after every process returned.
//! 3. A [`View`] borrows its buffer mutably for its whole life (no code outside the section
//!    touches it meanwhile); [`View::part`] is `unsafe`: its caller promises that no other part
//!    of the same view that it or another process holds before the section's next `sync` overlaps
//!    it, and that the part is dropped before that `sync` (the threads backend's sync orders
//!    every write before it before every access after it). `part` panics outside the buffer.

#![allow(unsafe_code)]

use std::marker::PhantomData;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use rustfft::num_complex::Complex64;

use super::fourstep::FourStep;
use super::huge::{LINE_VALUES, line_offset};
use super::section::Section;
use super::spmd::{LocalFft, TILE, Workspace, check_cancel};
use crate::Error;

/// Input rows dealt out per block of the gather: `ROWS·p` values (p = 2: 4 KiB) stay in L1
/// while they are copied to the p lanes.
const ROWS: usize = 128;

/// Largest n dealt by receiver (module docs). `bench/kernels/fft_ab`, the build before against
/// it, 8 lanes on 2 threads, buffers on cache lines (session 35, Intel, 2 vCPUs, L2 2 MiB a
/// core): 2^16 1.025 (won 9 of 12), 2^17 1.047 (12 of 12); above, rustfft's in-place
/// transform (a copy through its scratch) costs more than the sync and the lanes save: 2^18
/// 0.962 (2 of 6), 2^20 0.949 (0 of 6). Dealt by receiver into lanes and transformed out of
/// place instead: 2^16 1.024, 2^17 0.820, 2^18 0.952.
pub(super) const RECEIVER_MAX: usize = 1 << 17;

/// Rule 1.
pub(super) fn run(
    plan: &LocalFft,
    section: &Section,
    bufs: &mut [Workspace],
    lanes: &mut [Complex64],
    input: &[Complex64],
    output: &mut [Complex64],
    cancel: Option<&AtomicBool>,
) -> Result<(), Error> {
    // v lanes (the plan's processes) on q threads, v/q lanes each (`lanes_for`).
    let (n, v, q) = (plan.n, plan.p, bufs.len());
    let (m, b) = (n / v, n / v / v);
    assert!(input.len() == n && output.len() == n && lanes.len() == n);
    assert!(q == section.procs() && v % q == 0, "shared::run: {v} lanes on {q} threads");
    let share = v / q;
    // Thread s's lanes: (w + j) mod v for j < share, w = first + s·share. By receiver, the
    // first lane's value of row 0 begins a cache line, so each thread reads whole lines.
    let by_receiver = share % LINE_VALUES == 0 && n <= RECEIVER_MAX;
    let first = if by_receiver { line_offset(input) } else { 0 };
    let own = |s: usize| (0..share).map(move |j| (first + s * share + j) % v);
    let (lanes, out) = (View::new(lanes), View::new(output));
    on_each(section, bufs, |ctx, s, ws| {
        ws.scratch_mut(plan.scratch_len());
        ws.tile_mut(TILE * v);
        if by_receiver {
            // Superstep 1a: thread s deals its own lanes out of the whole input into their
            // output rows, and transforms them there.
            let mut rows = Vec::with_capacity(share);
            for t in own(s) {
                // SAFETY: (rule 3) thread s takes its rows whole; the rows of different threads
                // are disjoint (`own`), and all are dropped before the sync.
                rows.push(unsafe { out.part(t * m, m) });
            }
            deal_own(plan, input, first + s * share, &mut rows);
            let scratch = ws.scratch_mut(plan.fft_m.get_inplace_scratch_len());
            for row in rows {
                plan.fft_m.process_with_scratch(row, scratch);
            }
        } else {
            // Superstep 1b: thread s deals x[s·share·m..(s+1)·share·m] out to the v lanes.
            {
                let mut dst = Vec::with_capacity(v);
                for t in 0..v {
                    // SAFETY: (rule 3) thread s takes values s·share·b..(s+1)·share·b of each
                    // lane t; these ranges are disjoint across t and s, and dropped before the
                    // sync.
                    dst.push(unsafe { lanes.part(t * m + s * share * b, share * b) });
                }
                gather(plan, &input[s * share * m..(s + 1) * share * m], &mut dst);
            }
            check_cancel(cancel)?;
            ctx.sync()?;
            // Superstep 2: output row r = FFT_m(lane r) for thread s's lanes r.
            for r in own(s) {
                // SAFETY: (rule 3) thread s takes its lanes and output rows whole; rows of
                // different threads are disjoint, and both are dropped before the sync.
                let (lane, row) = unsafe { (lanes.part(r * m, m), out.part(r * m, m)) };
                let scratch = ws.scratch_mut(plan.scratch_len());
                plan.fft_m.process_outofplace_with_scratch(lane, row, scratch);
            }
        }
        check_cancel(cancel)?;
        ctx.sync()?;
        // Superstep 3: columns s·share·b..(s+1)·share·b of every row, in place.
        let mut cols = Vec::with_capacity(v);
        for r in 0..v {
            // SAFETY: (rule 3) thread s takes its column block of each output row r; blocks
            // of different s are disjoint, and all are dropped when this closure returns,
            // before the section ends.
            cols.push(unsafe { out.part(r * m + s * share * b, share * b) });
        }
        plan.combine_in_place(s * share * b, &mut cols, ws.tile_mut(TILE * v));
        Ok(())
    })
}

/// The two supersteps of a four-step plan (`fourstep`) on the section's p threads: thread s
/// writes its rows of the workspace `m` (n values), then, after a sync, reads all of `m` and
/// writes its column block of every output row (`fourstep` rule 2). Errors as rule 2.
pub(super) fn run_four_step(
    plan: &FourStep,
    section: &Section,
    bufs: &mut [Workspace],
    m: &mut [Complex64],
    input: &[Complex64],
    output: &mut [Complex64],
    cancel: Option<&AtomicBool>,
) -> Result<(), Error> {
    let (n, p) = (plan.n, plan.p);
    let (n1, n2) = plan.shape();
    assert!(input.len() == n && output.len() == n && m.len() == n && bufs.len() == p);
    let (mv, out) = (View::new(m), View::new(output));
    on_each(section, bufs, |ctx, s, ws| {
        let (procs, cols) = plan.share(s);
        let (tile, scratch) = ws.tile_and_scratch(plan.tile_len(), plan.scratch_len());
        {
            let w = plan.width();
            let mut parts = Vec::with_capacity(n2 / w);
            for j in 0..n2 / w {
                // SAFETY: (rule 3) process s takes rows `procs` of each block j of `m`
                // (`fourstep` rule 4); the shares of different s are disjoint (`fourstep` rule
                // 2), and the parts are dropped before the sync.
                parts.push(unsafe { mv.part(j * n1 * w + procs.start * w, procs.len() * w) });
            }
            plan.rows(input, procs, &mut parts, tile, scratch);
        }
        check_cancel(cancel)?;
        ctx.sync()?;
        // SAFETY: (rule 3) in this superstep no process holds a part of `m`: all only read it.
        let all = unsafe { mv.whole() };
        let mut rows = Vec::with_capacity(n1);
        for k2 in 0..n1 {
            // SAFETY: (rule 3) process s takes columns `cols` of each output row k2; the
            // column blocks of different s are disjoint (`fourstep` rule 2), and all are
            // dropped when this closure returns, before the section ends.
            rows.push(unsafe { out.part(k2 * n2 + cols.start, cols.len()) });
        }
        plan.cols(all, cols, &mut rows, tile, scratch);
        Ok(())
    })
}

/// Runs `steps` on each process s of one section with its workspace `bufs[s]` (rule 2): an
/// error of a process ends its steps and fails its peers' next sync; the call returns the
/// first process's own error, else the section's.
fn on_each(
    section: &Section,
    bufs: &mut [Workspace],
    steps: impl Fn(&mut sluice_bsp::Ctx, usize, &mut Workspace) -> Result<(), Error> + Sync,
) -> Result<(), Error> {
    // Per process: its workspace, and where it leaves its error.
    let cells: Vec<Mutex<(&mut Workspace, Option<Error>)>> =
        bufs.iter_mut().map(|ws| Mutex::new((ws, None))).collect();
    let ran = section.run(|ctx, s| {
        let s = s as usize;
        let mut cell = cells[s].lock().unwrap_or_else(|e| e.into_inner());
        let (ws, result) = &mut *cell;
        if let Err(e) = steps(ctx, s, ws) {
            *result = Some(e);
        }
    });
    // A process's own error says more than the `PeerFailed` its peers then see.
    let own = cells.into_iter().find_map(|c| c.into_inner().unwrap_or_else(|e| e.into_inner()).1);
    match (own, ran) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(e.into()),
        (None, Ok(())) => Ok(()),
    }
}

/// `dst[t][l] = src[t + p·l]`: the p-way deinterleave of one process's contiguous part, in
/// blocks of `ROWS` rows so each input line is read from memory once.
fn gather(plan: &LocalFft, src: &[Complex64], dst: &mut [&mut [Complex64]]) {
    let p = dst.len();
    if let ([d0, d1], Some(proof)) = (&mut *dst, plan.simd) {
        super::simd::deal_pair(proof, src, d0, d1);
        return;
    }
    if let ([d0, d1, d2, d3], Some(proof)) = (&mut *dst, plan.simd) {
        super::simd::deal(proof, src, [d0, d1, d2, d3]);
        return;
    }
    if let ([d0, d1, d2, d3, d4, d5, d6, d7], Some(proof)) = (&mut *dst, plan.simd) {
        super::simd::deal(proof, src, [d0, d1, d2, d3, d4, d5, d6, d7]);
        return;
    }
    if p == 2 {
        let (d0, d1) = dst.split_at_mut(1);
        for ((a, c), pair) in d0[0].iter_mut().zip(d1[0].iter_mut()).zip(src.chunks_exact(2)) {
            *a = pair[0];
            *c = pair[1];
        }
        return;
    }
    for (i, block) in src.chunks(ROWS * p).enumerate() {
        let l0 = i * ROWS;
        for (t, lane) in dst.iter_mut().enumerate() {
            for (d, row) in lane[l0..].iter_mut().zip(block.chunks_exact(p)) {
                *d = row[t];
            }
        }
    }
}

/// `dst[j][l] = src[(w + j) mod p + p·l]`: the lanes of one thread out of the whole input, in
/// blocks of `ROWS` rows so each input line is read from memory once.
fn deal_own(plan: &LocalFft, src: &[Complex64], w: usize, dst: &mut [&mut [Complex64]]) {
    let p = plan.p;
    if let ([d0, d1, d2, d3], 8, Some(proof)) = (&mut *dst, p, plan.simd) {
        super::simd::deal_window(proof, src, w, [d0, d1, d2, d3]);
        return;
    }
    for (i, block) in src.chunks(ROWS * p).enumerate() {
        let l0 = i * ROWS;
        for (j, lane) in dst.iter_mut().enumerate() {
            let t = (w + j) % p;
            for (d, row) in lane[l0..].iter_mut().zip(block.chunks_exact(p)) {
                *d = row[t];
            }
        }
    }
}

/// A buffer lent to the processes of one section (rule 3).
#[derive(Debug)]
struct View<'a> {
    ptr: *mut Complex64,
    len: usize,
    _borrow: PhantomData<&'a mut [Complex64]>,
}

// SAFETY: a `View` is a `&mut [Complex64]` (which is `Send` and `Sync`) that hands out parts only
// through the `unsafe` `part`, whose callers promise the parts are disjoint (rule 3).
unsafe impl Send for View<'_> {}
// SAFETY: as for `Send` above.
unsafe impl Sync for View<'_> {}

impl<'a> View<'a> {
    fn new(buf: &'a mut [Complex64]) -> View<'a> {
        View { ptr: buf.as_mut_ptr(), len: buf.len(), _borrow: PhantomData }
    }

    /// `len` values from `start`.
    ///
    /// # Safety
    /// Rule 3: no other live part of this view, on any process, overlaps `start..start + len`
    /// before the section's next `sync`, and the part is dropped before that `sync`.
    #[allow(clippy::mut_from_ref)]
    unsafe fn part(&self, start: usize, len: usize) -> &mut [Complex64] {
        assert!(start.checked_add(len).is_some_and(|end| end <= self.len), "view: out of range");
        // SAFETY: the range lies inside the buffer, which `new` borrowed mutably for `'a` (so it
        // is alive and unaliased outside the section); the caller promises no other part
        // overlaps it (rule 3).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), len) }
    }

    /// The whole buffer, read-only.
    ///
    /// # Safety
    /// Rule 3: no part of this view is live on any process before the section's next `sync`
    /// (every process only reads it), and the slice is dropped before that `sync`.
    unsafe fn whole(&self) -> &[Complex64] {
        // SAFETY: the buffer is alive and borrowed for `'a` (`new`); the caller promises that
        // nothing writes it while this slice lives (rule 3).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}
