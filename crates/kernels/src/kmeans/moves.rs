//! Passes of moves: after a pass that read every record, a pass reads only the records whose
//! bounds may no longer hold, and collects what the records that change cluster add to and take
//! from the clusters' sums, counts and second moments. The update step then carries the
//! clusters forward instead of summing every record again.
//!
//! # Contract
//! 1. A pass of moves follows a pass whose every block kept bounds (`bounds.rs`), and runs only
//!    where the run keeps them. A record is first tested without reading it
//!    ([`PassBounds::keeps_unread`]: its upper bound on the distance to its centre, grown by
//!    that centre's shift, against its lower bound lowered by the others' largest shift);
//!    the records that fail go, in file order, to the loops of `assign.rs`, which test them
//!    again with their direct distance and assign in full those that fail again. The labels
//!    are those of the full assignment, as in every pass (module rule 3).
//! 2. A record that changes cluster from `a` to `j` adds `x` to `j`'s sum and takes it from
//!    `a`'s (f64, in file order within the block, blocks combined in the canonical tree,
//!    module rule 7), moves one count, and moves its squared distance to the reference centres
//!    `R` (the centres of the last pass that read every record) between the clusters' second
//!    moments `Q_j = Σ ‖x − R_j‖²`. The sums carried forward differ from sums over every record
//!    by rounding only: the centres are those of plain Lloyd to about `1e-15` relative per
//!    pass, the same bits whatever the workers, engine or ranks (module rule 7).
//! 3. A pass's inertia is `Σ_j Q_j − 2(c_j − R_j)·(S_j − n_j R_j) + n_j‖c_j − R_j‖²` with the
//!    pass's centres `c`: exact in real arithmetic, rounded to about `u·‖x − R‖²/‖x − c‖²`
//!    relative (the spread of a cluster about its reference centre over its spread about its
//!    centre). The final assignment reads every record, so the reported `inertia` is summed
//!    from direct distances as ever.
//! 4. The pass is run again reading every record when a block found no bounds from the last
//!    pass (`lacking`), or when a cluster would be left empty: relocation (module rule 4)
//!    needs every record's distance. A record relocated to an empty cluster is relabelled in
//!    the bounds with bounds that force its full assignment next pass.
//! 5. A pass of moves follows a pass that assigned at most 25 % of its records in full (the
//!    share of the whole stream, the same on every rank); above it, reading every record is
//!    as fast. `SLUICE_KMEANS_MOVES=S` sets the share (`0` turns passes of moves off).

use super::assign::Want;
use super::bounds::PassBounds;
use super::kernel::{BlockPartial, Farthest, Float, Fold, KmeansKernel};
use super::simd::{self, Avx2Fma};
use super::tree::Sums;
use crate::{Endian, Scalar};

#[cfg(test)]
thread_local! {
    /// Tests set the share below which passes of moves run, on their own thread (the
    /// environment is the process's): `Some(-1.0)` never, `Some(1.0)` always.
    pub(super) static BELOW: std::cell::Cell<Option<f64>> = const { std::cell::Cell::new(None) };
}

/// A pass of moves follows a pass that assigned at most this share of its records in full;
/// above it, a pass that reads every record is faster (rule 5).
const MOVES_BELOW: f64 = 0.25;

/// Whether a pass of moves should follow a pass that assigned `assigned` of its `records`
/// records in full (rule 5).
pub(super) fn worth(assigned: u64, records: u64) -> bool {
    #[cfg(test)]
    if let Some(below) = BELOW.with(std::cell::Cell::get) {
        return assigned as f64 <= below * records as f64;
    }
    let below = std::env::var("SLUICE_KMEANS_MOVES").ok().and_then(|v| v.parse::<f64>().ok());
    let below = below.filter(|b| b.is_finite()).unwrap_or(MOVES_BELOW);
    below > 0.0 && assigned as f64 <= below * records as f64
}

/// How many records ahead of the copy [`simd::prefetch`] asks for.
const AHEAD: usize = 12;

/// One block's pass of moves (rule 1): the records of `data` from record `first`, the
/// reference centres `refs`; what the moves add and take goes into `p`. The records that fail
/// the test without reading them are copied together and run through `kernel`'s loops (which
/// fill tiles with the records that fail again), then their new labels and bounds go back.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn run<const FMA: bool, const P64: usize, const P32: usize>(
    kernel: &KmeansKernel,
    data: &[u8],
    first: u64,
    pass: &PassBounds,
    refs: &[f64],
    avx2: Option<Avx2Fma>,
    p: &mut BlockPartial,
) {
    let (k, d) = kernel.dims();
    let rec = kernel.record_bytes();
    let records = data.len() / rec;
    let (mut state, usable) = pass.take(first, records);
    if !usable || !pass.unread() {
        // Rule 4: the pass is run again reading every record.
        p.lacking = true;
        return;
    }
    p.lacking = false;
    let mut pending = Vec::new();
    pass.keeps_unread_all(avx2, &mut state.lower, &mut state.upper, &state.label, &mut pending);
    p.assigned = 0;
    if !pending.is_empty() {
        // At most a block per compute thread, reserved with the bounds (`bounds.rs` rule 2).
        let mut gathered = Vec::new();
        let sub = if pending.len() == records {
            data
        } else {
            gathered.reserve_exact(pending.len() * rec);
            // Scattered reads: the records some way ahead are asked for while this one is
            // copied, so that their cache misses overlap.
            for (n, &i) in pending.iter().enumerate() {
                if let Some(&ahead) = pending.get(n + AHEAD) {
                    simd::prefetch(&data[ahead * rec..(ahead + 1) * rec]);
                }
                gathered.extend_from_slice(&data[i * rec..(i + 1) * rec]);
            }
            &gathered[..]
        };
        let mut sub_state = state.gather(&pending);
        let mut sub_p = BlockPartial {
            first,
            records: pending.len() as u64,
            sums: Vec::new(),
            counts: Vec::new(),
            inertia: vec![0.0; k],
            lacking: false,
            assigned: 0,
            far: Farthest::default(),
            bad: None,
            labels: Vec::new(),
        };
        let want = Want { update: false, labels: false };
        let bounds = Some((pass, &mut sub_state, true));
        p.assigned = kernel.assign::<FMA, P64, P32>(sub, first, want, bounds, avx2, &mut sub_p);
        if let Some(b) = sub_p.bad {
            p.bad = Some(first + pending[(b - first) as usize] as u64);
        }
        let dtype = kernel.dtype();
        for (s, &i) in pending.iter().enumerate() {
            let (a, j) = (state.label[i] as usize, sub_state.label[s] as usize);
            (state.lower[i], state.upper[i]) = (sub_state.lower[s], sub_state.upper[s]);
            state.label[i] = j as u32;
            if a == j {
                continue;
            }
            let r = &data[i * rec..(i + 1) * rec];
            match (dtype.scalar, dtype.endian) {
                (Scalar::F64, Endian::Little) => shift::<f64, false>(r, (a, j), d, refs, p),
                (Scalar::F64, Endian::Big) => shift::<f64, true>(r, (a, j), d, refs, p),
                (Scalar::F32, Endian::Little) => shift::<f32, false>(r, (a, j), d, refs, p),
                (Scalar::F32, Endian::Big) => shift::<f32, true>(r, (a, j), d, refs, p),
                _ => unreachable!("k-means runs on f32 or f64"),
            }
        }
    }
    pass.put(first, state, p.assigned);
}

/// Record `r` moves from cluster `a` to `j` (rule 2).
#[inline(always)]
fn shift<T: Float, const BIG: bool>(
    r: &[u8],
    (a, j): (usize, usize),
    d: usize,
    refs: &[f64],
    p: &mut BlockPartial,
) {
    let (mut qa, mut qj) = (0.0, 0.0);
    for (f, b) in r.chunks_exact(T::SIZE).enumerate() {
        let x = T::load::<BIG>(b).to_f64();
        p.sums[j * d + f] += x;
        p.sums[a * d + f] -= x;
        let (ea, ej) = (x - refs[a * d + f], x - refs[j * d + f]);
        qa += ea * ea;
        qj += ej * ej;
    }
    p.counts[j] += 1;
    p.counts[a] -= 1;
    p.inertia[j] += qj;
    p.inertia[a] -= qa;
}

/// Carries `fold` forward by a pass of moves (rule 2); false, leaving it as it was, if the pass
/// must be run again reading every record (rule 4).
pub(super) fn apply(fold: &mut Fold, moves: &Sums) -> bool {
    let counts: Vec<i64> =
        fold.counts.iter().zip(&moves.counts).map(|(&n, &m)| n as i64 + m).collect();
    if moves.lacking || counts.iter().any(|&n| n <= 0) {
        return false;
    }
    fold.counts = counts.into_iter().map(|n| n as u64).collect();
    fold.sums.iter_mut().zip(&moves.sums).for_each(|(s, m)| *s += m);
    fold.inertia.iter_mut().zip(&moves.inertia).for_each(|(q, m)| *q += m);
    true
}

/// The inertia of the clusters of `fold` about `centres`, from their moments about `refs`
/// (rule 3).
pub(super) fn inertia(fold: &Fold, refs: &[f64], centres: &[f64], d: usize) -> f64 {
    let mut total = 0.0;
    for (j, (&q, &n)) in fold.inertia.iter().zip(&fold.counts).enumerate() {
        let n = n as f64;
        let (s, c, r) = (&fold.sums[j * d..][..d], &centres[j * d..][..d], &refs[j * d..][..d]);
        let mut cluster = q;
        for f in 0..d {
            let gap = c[f] - r[f];
            cluster += n * gap * gap - 2.0 * gap * (s[f] - n * r[f]);
        }
        total += cluster.max(0.0);
    }
    total
}
