//! Exact acceleration of the assignment by Hamerly's bounds (G. Hamerly, "Making k-means even
//! faster", SDM 2010, §3): a record whose lower bound on the distance to every other centre
//! exceeds its distance to its own centre keeps its label without the `k·d` distance loop.
//!
//! # Contract
//! 1. The labels are those of the full assignment (`assign.rs`, module rule 3), bit for bit:
//!    a record is skipped only when no rounding of the expanded distances `‖c‖² − 2x·c` in the
//!    data's type can put another centre at or below its own. The margin (below) bounds the
//!    rounding of the expansion, of the direct distance and of every bound update, so a
//!    near-tie is always recomputed. In a pass that reads every record, sums, counts and
//!    inertia are then the same bits as well, since every record's figures are added in file
//!    order either way (passes of moves carry the sums instead, `moves.rs`).
//! 2. Per record, one lower bound, one upper bound on the distance to its own centre (for the
//!    test that reads no data, `moves.rs`), both stored as `f32` rounded outward from the f64
//!    computed ([`down`], [`up`]), and one `u32` label (12 bytes),
//!    reserved from the budget for the process's records, with room for the records a pass of
//!    moves copies (a block per core); when the budget cannot hold them, or
//!    `SLUICE_KMEANS_BOUNDS=0`, there is no store and every pass assigns in full.
//! 3. State is kept per block, keyed by the block's first record, and used only by the next
//!    pass, on a block of the same length: a block whose state is missing or stale is assigned
//!    in full (and its state stored).
//!
//! # The margin
//! With `u` the unit roundoff of the data's type and `u64` that of f64, the computed expanded
//! distance `e_j` (a chain of `d` multiply-adds from `‖c_j‖²` rounded to the type) is within
//! `E = 8(d + 4)·u·(2C² + ‖x‖²)` of the true `‖c_j‖² − 2x·c_j`, with `C² ≥ max_j ‖c_j‖²`
//! (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1: `γ_2d` of the sum of the
//! terms' magnitudes, `≤ 2C² + ‖x‖²`, with a factor 4 to spare). After a full assignment the
//! bound is `l = √(e₂ + ‖x‖² − 2E)`, `e₂` the second smallest `e_j`; a pass whose centres
//! moved by `s_j` lowers it by `max_{j≠a} s_j` (triangle inequality). The record keeps its
//! label `a` if `D·(1 + 2(d + 3)u64) + 2E < l²·(1 − 4u64)`, with `D` its direct squared
//! distance to `c_a` in f64. Square roots, shifts and subtractions are rounded outward by
//! relative factors of a few `u64`. The test that reads no data (Hamerly's first) puts
//! `u²·(1 + 2u64)` in place of `D·(1 + 2(d + 3)u64)`, with `u` the upper bound: `√` of the
//! latter after the record's last direct distance, grown by its centre's shift every pass.

use std::collections::BTreeMap;
use std::hint::select_unpredictable;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use sluice_io::{Budget, Reservation};

use super::simd::Avx2Fma;
use crate::Scalar;

/// f64's unit roundoff.
pub(super) const U64: f64 = f64::EPSILON / 2.0;

/// A stored bound: `f32`, rounded outward from the f64 bound computed, so that it is a bound
/// still. Why not f64: the store is reserved from the memory budget per record (12 bytes in
/// place of 20, so a budget holds the bounds of 5/3 as many records), and a pass of moves
/// streams every record's bounds without reading the record (`moves.rs`; 1.02–1.05× faster in
/// f32 on the benchmark's data, level in f64). The bounds lose 2^-24 of their value, a
/// near-tie that much wider, so a few more records are assigned in full; the labels are exact
/// either way (rule 1).
pub(super) type Bound = f32;

/// The largest [`Bound`] at or below `x`, for a lower bound; `x` is never negative (a NaN
/// stays NaN).
#[inline(always)]
pub(super) fn down(x: f64) -> Bound {
    let f = x as f32;
    if f64::from(f) > x { f.next_down() } else { f }
}

/// The smallest [`Bound`] at or above `x`, for an upper bound; `x` is never negative.
#[inline(always)]
pub(super) fn up(x: f64) -> Bound {
    let f = x as f32;
    if f64::from(f) < x { f.next_up() } else { f }
}

/// One block's bounds: per record, a lower bound on the distance to every centre but its own,
/// an upper bound on the distance to its own, and its label.
#[derive(Debug, Clone, Default)]
pub(super) struct BlockBounds {
    /// The pass that wrote them.
    pass: u64,
    pub(super) lower: Vec<Bound>,
    /// An upper bound on `‖x − c_a‖` (true, not computed), for the test that reads no data
    /// ([`PassBounds::keeps_unread`]).
    pub(super) upper: Vec<Bound>,
    pub(super) label: Vec<u32>,
    /// How many of its records the pass that wrote them assigned in full.
    pub(super) assigned: u64,
}

impl BlockBounds {
    /// The state of the records at `at` (indices into this block), in that order.
    pub(super) fn gather(&self, at: &[usize]) -> BlockBounds {
        BlockBounds {
            pass: self.pass,
            lower: at.iter().map(|&i| self.lower[i]).collect(),
            upper: at.iter().map(|&i| self.upper[i]).collect(),
            label: at.iter().map(|&i| self.label[i]).collect(),
            assigned: at.len() as u64,
        }
    }
}

/// The bounds of a process's records between passes (rule 2).
#[derive(Debug)]
pub(crate) struct BoundStore {
    blocks: Mutex<BTreeMap<u64, BlockBounds>>,
    /// The last pass begun and its centres (the ones the stored bounds refer to).
    last: Mutex<Option<(u64, Vec<f64>)>>,
    /// Records assigned in full since the last [`BoundStore::assigned`].
    assigned: AtomicU64,
    /// [`ONE_BY_ONE_BELOW`] (or a test's choice: 0 never, 2 always).
    one_by_one_below: f64,
    /// [`DENSE_FROM`] by the data's type, unless set (`SLUICE_KMEANS_DENSE`, or a test's
    /// choice: 0 always, 2 never).
    dense_from: Option<f64>,
    _memory: Reservation,
}

#[cfg(test)]
thread_local! {
    /// Tests turn the bounds off on their own thread (the environment is the process's).
    pub(super) static OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Tests force the one-record loop (`Some(true)`) or the windows (`Some(false)`).
    pub(super) static ONE_BY_ONE: std::cell::Cell<Option<bool>> =
        const { std::cell::Cell::new(None) };
    /// Tests force dense blocks (`Some(true)`, `lean.rs`) or none (`Some(false)`).
    pub(super) static DENSE: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// A block whose last pass assigned fewer than this share of its records in full runs the
/// one-record loop (`assign.rs`); more, the windows with tiles. From the times per iteration
/// of both on the benchmark's data (1M × 10, k = 20): the crossing lies near 0.28.
const ONE_BY_ONE_BELOW: f64 = 0.25;

/// A block whose last pass assigned at least this share of its records in full is dense
/// ([`PassBounds::dense`]), for f32 and f64 data; `SLUICE_KMEANS_DENSE=S` sets the share
/// (above 1: never). On the benchmark's data (1M × 10, k = 20, 32 iterations, 2 workers, 16
/// alternated pairs on an AMD EPYC host) the passes after one that assigned 68–89 % in full
/// ran 1.078× faster in f32 and 1.030× in f64 with 0.5 than without (iterations 3–32: 1.055×
/// and 0.987×). Once the window's bounds were refreshed four at a time (`simd::refresh_run`)
/// a dense f32 block cost less than the test's branches: 0.25 against 0.5, iterations 3–32
/// 1.078× (5 of 6 alternated pairs) and 1.073× (10 of 10) on the Intel host; in f64, whose
/// tiles cost twice as much, 1.007× (3 of 6), so f64 keeps 0.5.
const DENSE_FROM: [f64; 2] = [0.25, 0.5];

impl BoundStore {
    /// A store for `records` records, if the budget holds it (rule 2).
    pub(crate) fn new(
        records: u64,
        budget: &Budget,
        pipeline: &sluice_io::Pipeline,
    ) -> Option<Arc<BoundStore>> {
        if std::env::var_os("SLUICE_KMEANS_BOUNDS").is_some_and(|v| v == "0") {
            return None;
        }
        #[cfg(test)]
        if OFF.with(std::cell::Cell::get) {
            return None;
        }
        // 12 bytes per record, the map's entries (a few per MiB of data), and the records a
        // pass of moves copies together (`moves.rs`): at most a block per compute thread.
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let copies = (cores * pipeline.block_size()) as u64;
        let bytes = records.checked_mul(12)?.checked_add(1 << 16)?.checked_add(copies)?;
        // As the resident copy: never at the cost of the pipeline's block size.
        if budget.available() < bytes.saturating_add(pipeline.pool_bytes()) {
            return None;
        }
        let memory = budget.reserve("the k-means bounds", bytes).ok()?;
        #[allow(unused_mut)]
        let mut store = BoundStore {
            blocks: Mutex::new(BTreeMap::new()),
            last: Mutex::new(None),
            assigned: AtomicU64::new(0),
            one_by_one_below: ONE_BY_ONE_BELOW,
            dense_from: std::env::var("SLUICE_KMEANS_DENSE")
                .ok()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|s| s.is_finite()),
            _memory: memory,
        };
        #[cfg(test)]
        if let Some(force) = ONE_BY_ONE.with(std::cell::Cell::get) {
            store.one_by_one_below = if force { 2.0 } else { 0.0 };
        }
        #[cfg(test)]
        if let Some(force) = DENSE.with(std::cell::Cell::get) {
            store.dense_from = Some(if force { 0.0 } else { 2.0 });
        }
        Some(Arc::new(store))
    }

    /// Puts record `index` in cluster `label` with bounds that force its full assignment in the
    /// next pass (a record the update step moved to an empty cluster, module rule 4); a record
    /// this store does not hold is left alone.
    pub(crate) fn relabel(&self, index: u64, label: usize) {
        let mut blocks = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((&first, b)) = blocks.range_mut(..=index).next_back()
            && let Some(i) = usize::try_from(index - first).ok().filter(|&i| i < b.label.len())
        {
            (b.label[i], b.lower[i], b.upper[i]) = (label as u32, 0.0, Bound::INFINITY);
        }
    }

    /// How many records were assigned in full since the last call.
    pub(crate) fn assigned(&self) -> u64 {
        // Relaxed: read after the pass, whose end (the pipeline's join) orders the adds.
        self.assigned.swap(0, Ordering::Relaxed)
    }

    /// Begins a pass against `centres` (`k × d`, values of `scalar`): what its blocks need to
    /// test and refresh their bounds.
    pub(crate) fn begin(
        self: &Arc<BoundStore>,
        centres: &[f64],
        d: usize,
        scalar: Scalar,
    ) -> PassBounds {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let pass = last.as_ref().map_or(0, |(p, _)| p + 1);
        let grow = 1.0 + 2.0 * (d as f64 + 2.0) * U64;
        // Outward-rounded shift of each centre since the last pass.
        let own = last.as_ref().map(|(_, old)| {
            centres
                .chunks_exact(d)
                .zip(old.chunks_exact(d))
                .map(|(c, o)| {
                    let sq: f64 = c.iter().zip(o).map(|(a, b)| (a - b) * (a - b)).sum();
                    (sq * grow).sqrt() * (1.0 + 4.0 * U64)
                })
                .collect::<Vec<f64>>()
        });
        let other = own.as_ref().map(|shift| {
            // For each centre, the largest shift of the others.
            let (mut first, mut second, mut at) = (0.0f64, 0.0f64, usize::MAX);
            for (j, &s) in shift.iter().enumerate() {
                if s > first {
                    (second, first, at) = (first, s, j);
                } else if s > second {
                    second = s;
                }
            }
            (0..shift.len()).map(|j| if j == at { second } else { first }).collect()
        });
        let c2 = centres
            .chunks_exact(d)
            .map(|c| c.iter().map(|x| x * x).sum::<f64>())
            .fold(0.0, f64::max)
            * grow;
        let unit = match scalar {
            Scalar::F32 => f64::from(f32::EPSILON) / 2.0,
            _ => U64,
        };
        *last = Some((pass, centres.to_vec()));
        let coef = 8.0 * (d as f64 + 4.0) * unit;
        // `keeps_unread`'s test folded into three constants (see there).
        let (k1, k2, k3, k4) = (1.0 + 2.0 * U64, 1.0 - 2.0 * U64, 1.0 + 4.0 * U64, 1.0 - 4.0 * U64);
        let unread = [
            k1 * k1 * k1 * (1.0 + 4.0 * coef * k3) * (1.0 + 16.0 * U64),
            4.0 * coef * c2 * (1.0 + k3) * (1.0 + 16.0 * U64),
            k2 * k2 * k4 * (1.0 - 16.0 * U64),
        ];
        PassBounds {
            store: Arc::clone(self),
            pass,
            other,
            own,
            c2,
            coef,
            direct: 1.0 + 2.0 * (d as f64 + 3.0) * U64,
            unread,
            dense_from: self.dense_from.unwrap_or(DENSE_FROM[usize::from(scalar != Scalar::F32)]),
        }
    }
}

/// One pass's view of the store (rules 1 and 3).
#[derive(Debug)]
pub(crate) struct PassBounds {
    store: Arc<BoundStore>,
    pass: u64,
    /// Per centre, the largest shift of the other centres since the last pass (`None` in the
    /// first pass).
    other: Option<Vec<f64>>,
    /// Per centre, its own shift since the last pass (`None` in the first pass).
    own: Option<Vec<f64>>,
    /// `C²`, at least the largest squared centre norm.
    c2: f64,
    /// `E / (2C² + ‖x‖²)`.
    coef: f64,
    /// The relative error allowance of the direct distance.
    direct: f64,
    /// [`PassBounds::keeps_unread`]'s `[P, Q, R]`.
    unread: [f64; 3],
    /// The share from which a block is dense ([`DENSE_FROM`] for the data's type).
    dense_from: f64,
}

impl PassBounds {
    /// The state of the block of `records` records from `first`, and whether it holds this
    /// pass's predecessor's bounds (rule 3).
    pub(super) fn take(&self, first: u64, records: usize) -> (BlockBounds, bool) {
        let got = self.store.blocks.lock().unwrap_or_else(PoisonError::into_inner).remove(&first);
        match got {
            Some(b)
                if self.other.is_some() && b.pass + 1 == self.pass && b.label.len() == records =>
            {
                (b, true)
            }
            _ => (
                BlockBounds {
                    pass: self.pass,
                    lower: vec![0.0; records],
                    upper: vec![Bound::INFINITY; records],
                    label: vec![0; records],
                    assigned: records as u64,
                },
                false,
            ),
        }
    }

    /// Whether a block state from [`PassBounds::take`] is for the one-record loop (`assign.rs`):
    /// usable, and few of its records were assigned in full last time.
    pub(super) fn one_by_one(&self, b: &BlockBounds, usable: bool) -> bool {
        usable && (b.assigned as f64) < self.store.one_by_one_below * b.label.len() as f64
    }

    /// Whether a usable block state is dense: its last pass assigned at least
    /// [`DENSE_FROM`] (by the data's type) of its records in full, so that the lean loop
    /// (`lean.rs`) assigns every record in full and applies the test afterwards, from the
    /// values of the full assignment.
    pub(super) fn dense(&self, b: &BlockBounds) -> bool {
        (b.assigned as f64) >= self.dense_from * b.label.len() as f64
    }

    /// Stores a block's refreshed state for the next pass; `assigned` of its records were
    /// assigned in full.
    pub(super) fn put(&self, first: u64, mut b: BlockBounds, assigned: u64) {
        self.store.assigned.fetch_add(assigned, Ordering::Relaxed);
        (b.pass, b.assigned) = (self.pass, assigned);
        self.store.blocks.lock().unwrap_or_else(PoisonError::into_inner).insert(first, b);
    }

    /// Whether the pass can test records without reading them: it has the last pass's shifts.
    pub(super) fn unread(&self) -> bool {
        self.own.is_some()
    }

    /// The test without the record (Hamerly's first test): its upper bound `upper` on the
    /// distance to its centre `a` plus `a`'s shift bounds the direct squared distance, which
    /// [`PassBounds::keeps_near`] then tests against the lowered `lower`. `Some((l, u))`, the
    /// new bounds, if the record keeps its label.
    ///
    /// It is [`PassBounds::keeps_near`]'s test with `near = u²·k₁`, `u = (upper + s_a)·k₁` and
    /// `l = (lower − o_a)·k₂`, folded: with `s = upper + s_a` and `t = lower − o_a`, the record
    /// keeps its label if `t > 0` and `s²·P + Q < t²·R`, where `P = k₁³(1 + 4εk₃)`,
    /// `Q = 4εC²(1 + k₃)` and `R = k₂²k₄` (`ε` = `coef`; `k₁ = 1 + 2u64`, `k₂ = 1 − 2u64`,
    /// `k₃ = 1 + 4u64`, `k₄ = 1 − 4u64`), `P` and `Q` grown and `R` shrunk by `16u64` for the
    /// five roundings of the folded form. Half the operations of the unfolded test: this is
    /// the loop of a pass of moves over every record.
    /// (The passes run [`PassBounds::keeps_unread_all`], the same arithmetic over a block.)
    #[cfg(test)]
    pub(super) fn keeps_unread(&self, lower: f64, upper: f64, a: usize) -> Option<(f64, f64)> {
        let (own, other) = (self.own.as_ref()?, self.other.as_ref()?);
        let [ua, ub, uc] = self.unread;
        let (s, t) = (upper + own[a], lower - other[a]);
        let keep = t > 0.0 && s * s * ua + ub < t * t * uc;
        keep.then_some((t * (1.0 - 2.0 * U64), s * (1.0 + 2.0 * U64)))
    }

    /// [`PassBounds::keeps_unread`] over a block's records: the bounds of those that keep
    /// their label become the new ones, and the indices of the others are appended to
    /// `pending` in order. The same arithmetic without a branch on the verdict (in the middle
    /// passes a tenth to a third of the records fail, as hard to predict as a coin), four
    /// records at a time where the CPU has AVX2 (`simd::unread_run`).
    #[inline(always)]
    pub(super) fn keeps_unread_all(
        &self,
        avx2: Option<Avx2Fma>,
        lower: &mut [Bound],
        upper: &mut [Bound],
        label: &[u32],
        pending: &mut Vec<usize>,
    ) {
        let (Some(own), Some(other)) = (self.own.as_deref(), self.other.as_deref()) else {
            pending.extend(0..label.len());
            return;
        };
        let test = Unread { own, other, folded: self.unread };
        const RUN: usize = 512;
        let mut at = [0usize; RUN];
        let runs = lower.chunks_mut(RUN).zip(upper.chunks_mut(RUN)).zip(label.chunks(RUN));
        for (r, ((lo, up), lab)) in runs.enumerate() {
            let n = match avx2 {
                Some(proof) => super::simd::unread_run(proof, &test, lo, up, lab, r * RUN, &mut at),
                None => test.run(0, lo, up, lab, r * RUN, &mut at),
            };
            pending.extend_from_slice(&at[..n]);
        }
    }

    /// An upper bound on `‖x − c‖` from the direct squared distance `dist` (`row`).
    #[inline(always)]
    pub(super) fn upper(&self, dist: f64) -> Bound {
        up((dist * self.direct).sqrt() * (1.0 + 2.0 * U64))
    }

    /// `2E` for a record of squared norm `xx`.
    #[inline(always)]
    fn margin(&self, xx: f64) -> f64 {
        2.0 * self.coef * (2.0 * self.c2 + xx)
    }

    /// The bound after this pass's shifts, for a record labelled `a` with bound `lower`:
    /// `Some(l)` if it keeps its label (its direct squared distance is `dist`, its squared
    /// norm `xx`), `None` if it must be assigned in full.
    #[inline(always)]
    pub(super) fn keeps(&self, lower: Bound, a: usize, dist: f64, xx: f64) -> Option<Bound> {
        let other = self.other.as_ref()?;
        let l = (f64::from(lower) - other[a]) * (1.0 - 2.0 * U64);
        let keep = l > 0.0 && dist * self.direct + self.margin(xx) < l * l * (1.0 - 4.0 * U64);
        keep.then(|| down(l))
    }

    /// [`PassBounds::keeps`] without the record's norm: `‖x‖² ≤ (‖x − c_a‖ + ‖c_a‖)² ≤
    /// 2‖x − c_a‖² + 2C²`, and `D·(1 + 2(d + 3)u64)` is at least `‖x − c_a‖²`, so the margin
    /// of that bound (rounded up by `1 + 4u64`) is at least the margin of the true norm. The
    /// test spares the norm's `d` multiply-adds per record; the margin grows by at most
    /// `2E·(1 + 2D/C²)`, which spares a few records fewer only where `E` is not negligible.
    #[inline(always)]
    pub(super) fn keeps_near(&self, lower: Bound, a: usize, dist: f64) -> Option<Bound> {
        self.keeps_within(f64::from(lower), a, dist * self.direct).map(down)
    }

    /// [`PassBounds::keeps_near`] for `near`, at least the true `‖x − c_a‖²`.
    #[inline(always)]
    fn keeps_within(&self, lower: f64, a: usize, near: f64) -> Option<f64> {
        let (l, keep) = self.within(lower, a, near);
        keep.then_some(l)
    }

    /// [`PassBounds::keeps_near`] as a pair: the lowered bound and whether the record keeps
    /// its label (never without the centres' shifts), for a loop without a branch on it.
    #[inline(always)]
    pub(super) fn verdict(&self, lower: Bound, a: usize, dist: f64) -> (Bound, bool) {
        let (l, keep) = self.within(f64::from(lower), a, dist * self.direct);
        (down(l), keep)
    }

    /// The test of [`PassBounds::keeps_within`] as a pair.
    #[inline(always)]
    fn within(&self, lower: f64, a: usize, near: f64) -> (f64, bool) {
        let Some(other) = self.other.as_ref() else { return (0.0, false) };
        let l = (lower - other[a]) * (1.0 - 2.0 * U64);
        let xx = (2.0 * near + 2.0 * self.c2) * (1.0 + 4.0 * U64);
        (l, l > 0.0 && near + self.margin(xx) < l * l * (1.0 - 4.0 * U64))
    }

    /// The bound after a full assignment: `second` the second smallest computed expanded
    /// distance, `xx` the record's squared norm.
    #[inline(always)]
    pub(super) fn fresh(&self, second: f64, xx: f64) -> Bound {
        let l2 = second + xx - self.margin(xx);
        down(if l2 > 0.0 { l2.sqrt() * (1.0 - 2.0 * U64) } else { 0.0 })
    }
}

/// The bounds of a window's records after the lean loop assigned them (`lean.rs`): those the
/// test kept ([`PassBounds::keeps_near`], which set their lower bound) and those assigned in
/// full, whose lower bound is [`PassBounds::fresh`] unless, in a dense block, the test's
/// verdict from the full assignment's values keeps the label ([`PassBounds::verdict`]); every
/// record's upper bound is [`PassBounds::upper`] of its direct distance. Four records at a time
/// where the CPU has AVX2 (`simd::refresh_run`, the same operations in each lane).
pub(super) struct Refresh<'a> {
    pub(super) pass: &'a PassBounds,
    /// Per centre, the largest shift of the others (none: no record keeps its label by the
    /// verdict).
    pub(super) other: Option<&'a [f64]>,
    /// Whether the block is dense (the verdict applies).
    pub(super) dense: bool,
    /// `C²`, `coef` and `direct` of the pass.
    pub(super) c2: f64,
    pub(super) coef: f64,
    pub(super) direct: f64,
}

impl PassBounds {
    /// The [`Refresh`] of this pass for a block, dense or not.
    pub(super) fn refresh(&self, dense: bool) -> Refresh<'_> {
        let (c2, coef, direct) = (self.c2, self.coef, self.direct);
        Refresh { pass: self, other: self.other.as_deref(), dense, c2, coef, direct }
    }
}

impl Refresh<'_> {
    /// The records `from..` of a window: `kept` whether the test kept it, `lab` its label
    /// now, `dist` its direct squared distance, `second` and `xx` the second smallest expanded
    /// distance and squared norm of one assigned in full; writes the new bounds and labels
    /// to `lower`, `upper` and `label`, and returns how many were assigned in full (those
    /// not kept by the test or the verdict).
    #[inline(always)]
    pub(super) fn run(
        &self,
        from: usize,
        (kept, lab): (&[bool], &[u32]),
        (dist, second, xx): (&[f64], &[f64], &[f64]),
        (lower, upper, label): (&mut [Bound], &mut [Bound], &mut [u32]),
    ) -> u64 {
        let p = self.pass;
        let mut assigned = 0;
        for o in from..kept.len() {
            upper[o] = p.upper(dist[o]);
            if kept[o] {
                continue;
            }
            let j = lab[o] as usize;
            let (l, keep) = if self.dense { p.verdict(lower[o], j, dist[o]) } else { (0.0, false) };
            let keep = keep && label[o] == lab[o];
            let fresh = p.fresh(second[o], xx[o]);
            (lower[o], label[o]) = (if keep { l } else { fresh }, lab[o]);
            assigned += u64::from(!keep);
        }
        assigned
    }
}

/// The test without the data of one pass ([`PassBounds::keeps_unread`]): the centres' own and
/// other shifts, and the folded constants `[P, Q, R]`.
pub(super) struct Unread<'a> {
    pub(super) own: &'a [f64],
    pub(super) other: &'a [f64],
    pub(super) folded: [f64; 3],
}

impl Unread<'_> {
    /// The records `from..` of a run (bounds `lower`, `upper`, labels `label`; the run's first
    /// record is record `first` of its block): new bounds for those that keep their label,
    /// the block indices of the others written to `at` in order; returns how many.
    #[inline(always)]
    pub(super) fn run(
        &self,
        from: usize,
        lower: &mut [Bound],
        upper: &mut [Bound],
        label: &[u32],
        first: usize,
        at: &mut [usize],
    ) -> usize {
        let [ua, ub, uc] = self.folded;
        let mut n = 0;
        let records = lower.iter_mut().zip(upper.iter_mut()).zip(label).enumerate().skip(from);
        for (o, ((l, u), &a)) in records {
            let a = a as usize;
            let (s, t) = (f64::from(*u) + self.own[a], f64::from(*l) - self.other[a]);
            // `t > 0 && s²P + Q < t²R` as one comparison, so that the selects below are made
            // without branches: `s²P + Q ≥ 0`, so a `t` at or below 0 (or NaN) made 0 fails it
            // as before, and a positive `t` is itself.
            let tp = t.max(0.0);
            let keep = s * s * ua + ub < tp * tp * uc;
            *l = select_unpredictable(keep, down(t * (1.0 - 2.0 * U64)), *l);
            *u = select_unpredictable(keep, up(s * (1.0 + 2.0 * U64)), *u);
            at[n] = first + o;
            n += usize::from(!keep);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng, rngs::StdRng};
    use sluice_io::{Budget, PipelineBuilder};

    use super::*;

    /// The folded test of [`PassBounds::keeps_unread`] against the unfolded one it stands for
    /// ([`PassBounds::keeps_within`] with `near = ((upper + s_a)·k₁)²·k₁`): it keeps a record
    /// only where the unfolded one does, with the same new bounds, and differs from it only
    /// within a few roundings of the boundary.
    #[test]
    fn the_folded_test_without_the_data_keeps_only_what_the_unfolded_one_keeps() {
        let mut rng = StdRng::seed_from_u64(23);
        let pipeline = PipelineBuilder::new().block_size(8192).build().unwrap();
        let (d, k) = (3, 5);
        let (mut kept, mut near_miss) = (0, 0);
        for round in 0..200 {
            let scale = 10f64.powi(rng.gen_range(-3..4));
            let old: Vec<f64> = (0..k * d).map(|_| rng.gen_range(-1.0..1.0) * scale).collect();
            let new: Vec<f64> =
                old.iter().map(|c| c + rng.gen_range(-0.01..0.01) * scale).collect();
            let store = BoundStore::new(8, &Budget::unlimited(), &pipeline).unwrap();
            let _ = store.begin(&old, d, Scalar::F64);
            let pass = store.begin(&new, d, Scalar::F64);
            let (own, other) = (pass.own.clone().unwrap(), pass.other.clone().unwrap());
            for _ in 0..500 {
                let a = rng.gen_range(0..k);
                let upper = rng.gen_range(0.0..2.0) * scale;
                // Lower bounds around the boundary of the test, `t² R = s² P + Q`.
                let [p, q, r] = pass.unread;
                let s = upper + own[a];
                let edge = ((s * s * p + q) / r).sqrt();
                let width = [1e-6, 1e-13, 1e-15, 0.5][round % 4];
                let lower = edge * rng.gen_range(1.0 - width..1.0 + width) + other[a];
                let u = (upper + own[a]) * (1.0 + 2.0 * U64);
                let unfolded = pass.keeps_within(lower, a, u * u * (1.0 + 2.0 * U64));
                let folded = pass.keeps_unread(lower, upper, a);
                match (folded, unfolded) {
                    (Some((l, uu)), Some(l2)) => {
                        assert_eq!((l, uu), (l2, u));
                        kept += 1;
                    }
                    (Some(_), None) => panic!("kept by the folded test only: {lower} {upper} {a}"),
                    (None, Some(_)) => {
                        let off = ((lower - other[a]) / edge - 1.0).abs();
                        assert!(off < 64.0 * U64, "missed {off} from the edge");
                        near_miss += 1;
                    }
                    (None, None) => {}
                }
            }
        }
        assert!(kept > 10_000, "{kept} kept: the test tests nothing");
        assert!(near_miss > 0, "no record near the boundary: the test tests nothing");
    }

    /// The block's test without a branch gives every record the verdict and bounds of the
    /// test one record at a time, and lists the failures in order, across runs of its loop.
    #[test]
    fn the_block_test_without_the_data_is_the_record_test() {
        let mut rng = StdRng::seed_from_u64(29);
        let pipeline = PipelineBuilder::new().block_size(8192).build().unwrap();
        let (d, k) = (4, 7);
        for records in [0, 1, 511, 512, 513, 2000] {
            let old: Vec<f64> = (0..k * d).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let new: Vec<f64> = old.iter().map(|c| c + rng.gen_range(-0.02..0.02)).collect();
            let store = BoundStore::new(8, &Budget::unlimited(), &pipeline).unwrap();
            let _ = store.begin(&old, d, Scalar::F64);
            let pass = store.begin(&new, d, Scalar::F64);
            let label: Vec<u32> = (0..records).map(|_| rng.gen_range(0..k as u32)).collect();
            let upper: Vec<Bound> = (0..records).map(|_| rng.gen_range(0.0..0.5)).collect();
            let lower: Vec<Bound> = (0..records).map(|_| rng.gen_range(0.0..1.0)).collect();
            for avx2 in [None, super::super::simd::proof()] {
                let (mut lo, mut hi, mut pending) = (lower.clone(), upper.clone(), vec![]);
                pass.keeps_unread_all(avx2, &mut lo, &mut hi, &label, &mut pending);
                let mut failed = vec![];
                for i in 0..records {
                    let (l0, u0) = (f64::from(lower[i]), f64::from(upper[i]));
                    match pass.keeps_unread(l0, u0, label[i] as usize) {
                        Some((l, u)) => {
                            assert_eq!((lo[i], hi[i]), (down(l), up(u)), "record {i} {avx2:?}")
                        }
                        None => {
                            assert_eq!((lo[i], hi[i]), (lower[i], upper[i]), "record {i}");
                            failed.push(i);
                        }
                    }
                }
                assert_eq!(pending, failed, "avx2 {}", avx2.is_some());
                if records > 500 {
                    assert!(failed.len() > 10 && failed.len() < records - 10, "{}", failed.len());
                }
            }
        }
    }

    /// The window's bounds four records at a time (`simd::refresh_run`) and one at a time
    /// ([`Refresh::run`]) are those of the record-by-record methods they stand for
    /// ([`PassBounds::upper`], [`PassBounds::verdict`], [`PassBounds::fresh`]), bit for bit,
    /// for kept and recomputed records, dense blocks or not, moved labels or not, with lower
    /// bounds around the verdict's boundary and second distances that leave no bound.
    #[test]
    fn the_window_bounds_four_at_a_time_are_the_record_bounds() {
        let mut rng = StdRng::seed_from_u64(31);
        let pipeline = PipelineBuilder::new().block_size(8192).build().unwrap();
        let (d, k) = (5, 9);
        let (mut verdicts, mut refused) = (0, 0);
        for (round, records) in [0, 1, 3, 4, 7, 128, 128, 128, 97].into_iter().enumerate() {
            let old: Vec<f64> = (0..k * d).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let new: Vec<f64> = old.iter().map(|c| c + rng.gen_range(-0.02..0.02)).collect();
            let store = BoundStore::new(8, &Budget::unlimited(), &pipeline).unwrap();
            let first = store.begin(&old, d, Scalar::F32);
            // The first pass has no shifts (no verdict); the second has.
            let second_pass = store.begin(&new, d, Scalar::F32);
            let pass = if round == 5 { &first } else { &second_pass };
            let kept: Vec<bool> = (0..records).map(|_| rng.gen_bool(0.3)).collect();
            let label: Vec<u32> = (0..records).map(|_| rng.gen_range(0..k as u32)).collect();
            let lab: Vec<u32> = (0..records)
                .map(|o| {
                    if kept[o] || rng.gen_bool(0.7) { label[o] } else { rng.gen_range(0..k as u32) }
                })
                .collect();
            let xx: Vec<f64> = (0..records).map(|_| rng.gen_range(0.0..3.0)).collect();
            let second: Vec<f64> = (0..records)
                .map(|o| rng.gen_range(-1.0..1.0) - xx[o] * rng.gen_range(0.5..1.0))
                .collect();
            // Stored lower bounds, and direct distances around the verdict's boundary for each
            // (`near·(1 + 4εk₃) + 4εC²(1 + k₃) = l²·k₄`, from `PassBounds::within`), within a few
            // roundings for most records.
            let lower: Vec<Bound> = (0..records).map(|_| rng.gen_range(0.3..1.5)).collect();
            let dist: Vec<f64> = (0..records)
                .map(|o| {
                    let shift = pass.other.as_ref().map_or(0.0, |s| s[lab[o] as usize]);
                    let l = (f64::from(lower[o]) - shift) * (1.0 - 2.0 * U64);
                    let (k3, e) = (1.0 + 4.0 * U64, pass.coef);
                    let near = (l * l * (1.0 - 4.0 * U64) - 4.0 * e * pass.c2 * (1.0 + k3))
                        / (1.0 + 4.0 * e * k3);
                    let width = [1e-15, 4e-16, 1e-14, 0.1][o % 4];
                    (near / pass.direct).max(0.0) * rng.gen_range(1.0 - width..1.0 + width)
                })
                .collect();
            for dense in [false, true] {
                // The record-by-record truth, as the lean loop computed it before the windows.
                let (mut lo, mut upb, mut la, mut count) =
                    (lower.clone(), vec![0.0; records], label.clone(), 0);
                for o in 0..records {
                    upb[o] = pass.upper(dist[o]);
                    if kept[o] {
                        continue;
                    }
                    let j = lab[o] as usize;
                    let (l, keep) =
                        if dense { pass.verdict(lower[o], j, dist[o]) } else { (0.0, false) };
                    let keep = keep && label[o] == lab[o];
                    (lo[o], la[o]) = (if keep { l } else { pass.fresh(second[o], xx[o]) }, lab[o]);
                    count += u64::from(!keep);
                    (verdicts, refused) = (
                        verdicts + usize::from(keep),
                        refused + usize::from(dense && !keep && label[o] == lab[o]),
                    );
                }
                let refresh = pass.refresh(dense);
                let mut got = vec![];
                let (mut l1, mut u1, mut a1) = (lower.clone(), vec![0.0; records], label.clone());
                let n = refresh.run(
                    0,
                    (&kept, &lab),
                    (&dist, &second, &xx),
                    (&mut l1, &mut u1, &mut a1),
                );
                got.push((n, l1, u1, a1));
                if let Some(proof) = super::super::simd::proof() {
                    let (mut l2, mut u2, mut a2) =
                        (lower.clone(), vec![0.0; records], label.clone());
                    let n = super::super::simd::refresh_run(
                        proof,
                        &refresh,
                        (&kept, &lab),
                        (&dist, &second, &xx),
                        (&mut l2, &mut u2, &mut a2),
                    );
                    got.push((n, l2, u2, a2));
                }
                for (n, l, u, a) in got {
                    assert_eq!(n, count, "records {records} dense {dense}");
                    let bits = |v: &[Bound]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&l), bits(&lo), "lower, records {records} dense {dense}");
                    assert_eq!(bits(&u), bits(&upb), "upper, records {records} dense {dense}");
                    assert_eq!(a, la, "labels, records {records} dense {dense}");
                }
            }
        }
        assert!(verdicts > 20 && refused > 20, "{verdicts} kept by the verdict, {refused} refused");
    }

    /// A stored bound is the nearest f32 on its side of the f64 bound: `down(x) ≤ x` with no
    /// f32 between them, `up(x) ≥ x` likewise, exact where `x` is an f32 (0 and ∞ included),
    /// f32::MAX or ∞ beyond f32's range; and the AVX2 forms give the same bits.
    #[test]
    fn stored_bounds_round_outward_to_the_nearest_f32() {
        let mut rng = StdRng::seed_from_u64(37);
        let mut xs = vec![0.0, f64::INFINITY, 1.0, f64::from(f32::MAX), 1e39, 1e-50, 3.0e-39];
        xs.extend((0..4000).map(|i| {
            let x: f64 = rng.gen_range(0.0..1.0) * 10f64.powi(rng.gen_range(-40..40));
            if i % 5 == 0 { f64::from(x as f32) } else { x }
        }));
        while xs.len() % 4 != 0 {
            xs.push(0.5);
        }
        for &x in &xs {
            let (dn, upx) = (down(x), up(x));
            let above = dn.is_infinite() || f64::from(dn.next_up()) > x;
            assert!(f64::from(dn) <= x && above, "down({x:e}) = {dn:e}");
            assert!(f64::from(upx) >= x && f64::from(upx.next_down()) < x, "up({x:e}) = {upx:e}");
            if f64::from(x as f32) == x {
                assert_eq!((dn, upx), (x as f32, x as f32), "{x:e} is an f32");
            }
        }
        if let Some(proof) = super::super::simd::proof() {
            for q in xs.chunks_exact(4) {
                let x = [q[0], q[1], q[2], q[3]];
                let (d4, u4) = super::super::simd::round_both(proof, x);
                let bits = |v: [Bound; 4]| v.map(f32::to_bits);
                assert_eq!(bits(d4), bits(x.map(down)), "{x:?}");
                assert_eq!(bits(u4), bits(x.map(up)), "{x:?}");
            }
        }
    }
}
