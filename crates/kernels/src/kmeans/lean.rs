//! The lean loops (`assign.rs` module doc): the same windows, tests, labels, values and order
//! of additions as [`super::assign::assign_block`], with what to collect and the record length
//! fixed at compile time, for little-endian blocks on AVX2 and FMA (`simd.rs` dispatches).

use super::assign::{nearest, nearest_one, tally};
use super::bounds::{BlockBounds, PassBounds};
use super::kernel::{BlockPartial, Float, Prepared};
use super::simd::{Avx2Fma, fill_tile, near_avx2, nearest_avx2, refresh_run, row_avx2};

/// [`assign_block`] for little-endian records on AVX2 and FMA, with what to collect fixed at
/// compile time (`UPDATE`: sums, counts and farthest points; `LABELS`: the labels) so that the
/// loops carry no flags. The same windows, tests, labels, values and order of additions as
/// [`assign_block`], so the same bits; leaner: a record that fails its bounds goes into the
/// tile as it is tested (no list of pending records, no second pass to transpose), and one
/// that keeps its label after the full assignment (most do) reuses the direct distance and
/// norm of its test. A dense block ([`PassBounds::dense`]) skips the test and assigns every
/// record in full; the figures loop then takes the test's verdict from the full assignment's
/// values (the same bounds, labels and count of records assigned in full).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn assign_lean<
    T: Float,
    const P: usize,
    const UPDATE: bool,
    const LABELS: bool,
    const D: usize,
>(
    avx2: Avx2Fma,
    data: &[u8],
    first: u64,
    d: usize,
    c64: &[f64],
    prep: &Prepared<T>,
    mut bounds: Option<(&PassBounds, &mut BlockBounds, bool)>,
    partial: &mut BlockPartial,
) -> u64 {
    const W: usize = 128;
    // A record length known at compile time unrolls the loops over a record's values.
    let d = if D > 0 { D } else { d };
    // Where the last pass assigned few of the block's records in full, the one-record loop.
    if let Some((pass, state, _)) = bounds.as_mut().filter(|(p, b, u)| p.one_by_one(b, *u)) {
        return bounded_lean::<T, UPDATE, LABELS, D>(
            avx2, data, first, d, c64, prep, pass, state, partial,
        );
    }
    let (m2c, norms) = (&prep.m2c[..], &prep.norms[..]);
    let rec = d * T::SIZE;
    let records = data.len() / rec;
    let second = bounds.is_some();
    // A dense block (most of its records assigned in full last pass) skips the test: every
    // record goes into the tiles, and the figures loop tells which the test would have spared.
    let (pass, lower, upper, label, test, dense) = match bounds {
        Some((p, s, u)) => {
            let dense = u && p.dense(s);
            let (lower, upper) = (&mut s.lower[..records], &mut s.upper[..records]);
            (Some(p), lower, upper, &mut s.label[..records], u && !dense, dense)
        }
        None => (None, &mut [][..], &mut [][..], &mut [][..], false, false),
    };
    let mut assigned = 0;
    let mut xt = vec![[T::ZERO; P]; d];
    let mut tile_labels = [0u32; P];
    let mut tile_second = [T::ZERO; P];
    // Window offsets of the records in the tile.
    let mut slots = [0usize; P];
    let mut lab = [0u32; W];
    // A kept record's direct distance, or a recomputed one's second smallest expansion.
    let mut value = [0.0f64; W];
    let mut kept = [false; W];
    // Each record's direct squared distance, and a recomputed one's squared norm.
    let (mut dists, mut norms_w) = ([0.0f64; W], [0.0f64; W]);
    let mut sums = std::mem::take(&mut partial.sums);
    let mut counts = std::mem::take(&mut partial.counts);
    let mut inertia = std::mem::take(&mut partial.inertia);
    let mut far_threshold = partial.far.threshold();
    let mut run_tile =
        |xt: &[[T; P]], n: usize, slots: &[usize; P], lab: &mut [u32; W], value: &mut [f64; W]| {
            let (l, s) = (&mut tile_labels, &mut tile_second);
            let done = if second {
                nearest_avx2::<T, P, true>(avx2, xt, m2c, norms, l, s)
            } else {
                nearest_avx2::<T, P, false>(avx2, xt, m2c, norms, l, s)
            };
            if !done {
                nearest::<T, P, true, true>(xt, m2c, norms, l, s);
            }
            for (&o, (&j, &v)) in slots[..n].iter().zip(l.iter().zip(s.iter())) {
                (lab[o], value[o]) = (j, v.to_f64());
            }
        };
    for w0 in (0..records).step_by(W) {
        let w1 = (w0 + W).min(records);
        let window = &data[w0 * rec..w1 * rec];
        if !test {
            // Without the test every record goes into the tiles: whole runs of them,
            // transposed in registers.
            for t0 in (0..w1 - w0).step_by(P) {
                let n = (w1 - w0 - t0).min(P);
                fill_tile::<T, P>(avx2, &window[t0 * rec..(t0 + n) * rec], &mut xt);
                kept[t0..t0 + n].fill(false);
                slots[..n].iter_mut().zip(t0..).for_each(|(s, o)| *s = o);
                run_tile(&xt, n, &slots, &mut lab, &mut value);
            }
        } else {
            // The bounds test; a failure goes into the tile at once.
            let mut fill = 0;
            for (o, r) in window.chunks_exact(rec).enumerate() {
                let i = w0 + o;
                let a = label[i] as usize;
                let dist = near_avx2::<T>(avx2, r, &c64[a * d..(a + 1) * d]);
                if let Some(l) = pass.and_then(|p| p.keeps_near(lower[i], a, dist)) {
                    lower[i] = l;
                    (lab[o], value[o], kept[o]) = (a as u32, dist, true);
                    continue;
                }
                kept[o] = false;
                for (x, b) in xt.iter_mut().zip(r.chunks_exact(T::SIZE)) {
                    x[fill] = T::load::<false>(b);
                }
                slots[fill] = o;
                fill += 1;
                if fill == P {
                    run_tile(&xt, P, &slots, &mut lab, &mut value);
                    fill = 0;
                }
            }
            if fill > 0 {
                run_tile(&xt, fill, &slots, &mut lab, &mut value);
            }
        }
        // The figures, in file order.
        for (o, r) in window.chunks_exact(rec).enumerate() {
            let i = w0 + o;
            let j = lab[o] as usize;
            let c = &c64[j * d..(j + 1) * d];
            let s = if UPDATE { &mut sums[j * d..(j + 1) * d] } else { &mut [][..] };
            let dist = if kept[o] {
                if UPDATE {
                    row_avx2::<T, false, true, false>(avx2, r, c, s);
                }
                value[o]
            } else {
                let (dist, xx) =
                    row_avx2::<T, false, UPDATE, true>(avx2, r, c, s).unwrap_or_default();
                norms_w[o] = xx;
                assigned += u64::from(pass.is_none());
                dist
            };
            dists[o] = dist;
            let figures = (&mut counts[..], &mut inertia[..], &mut far_threshold);
            tally::<T, false>((UPDATE, LABELS), figures, partial, (first + i as u64, j, dist), r);
        }
        // The bounds, four records at a time. In a dense block, the test's verdict from the
        // full assignment's values: a record it keeps keeps its label (bounds.rs, rule 1), with
        // the direct distance of `row_avx2` (the same bits as `near_avx2`), so a label that did
        // not move is tested here, without a branch on the verdict (as hard to predict as the
        // test).
        if let Some(p) = pass {
            let n = w1 - w0;
            assigned += refresh_run(
                avx2,
                &p.refresh(dense),
                (&kept[..n], &lab[..n]),
                (&dists[..n], &value[..n], &norms_w[..n]),
                (&mut lower[w0..w1], &mut upper[w0..w1], &mut label[w0..w1]),
            );
        }
    }
    (partial.sums, partial.counts, partial.inertia) = (sums, counts, inertia);
    assigned
}

/// [`assign_bounded`] for [`assign_lean`]: the one-record loop, with what to collect and the
/// record length (`d`, fixed where `D > 0`) known at compile time, and the test without the
/// norm. The same labels, values and order of additions, so the same bits.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn bounded_lean<T: Float, const UPDATE: bool, const LABELS: bool, const D: usize>(
    avx2: Avx2Fma,
    data: &[u8],
    first: u64,
    d: usize,
    c64: &[f64],
    prep: &Prepared<T>,
    pass: &PassBounds,
    state: &mut BlockBounds,
    partial: &mut BlockPartial,
) -> u64 {
    let d = if D > 0 { D } else { d };
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
        let near = near_avx2::<T>(avx2, r, c);
        let (j, dist) = if let Some(l) = pass.keeps_near(lower[i], a, near) {
            lower[i] = l;
            if UPDATE {
                row_avx2::<T, false, true, false>(avx2, r, c, &mut sums[a * d..(a + 1) * d]);
            }
            (a, near)
        } else {
            assigned += 1;
            let (j, second) = nearest_one::<T, false, true>(Some(avx2), r, prep, &mut x);
            let j = j as usize;
            let c = &c64[j * d..(j + 1) * d];
            let s = if UPDATE { &mut sums[j * d..(j + 1) * d] } else { &mut [][..] };
            let (dist, xx) = row_avx2::<T, false, UPDATE, true>(avx2, r, c, s).unwrap_or_default();
            (lower[i], label[i]) = (pass.fresh(second.to_f64(), xx), j as u32);
            (j, dist)
        };
        upper[i] = pass.upper(dist);
        let figures = (&mut counts[..], &mut inertia[..], &mut far_threshold);
        tally::<T, false>((UPDATE, LABELS), figures, partial, (first + i as u64, j, dist), r);
    }
    (partial.sums, partial.counts, partial.inertia) = (sums, counts, inertia);
    assigned
}
