//! The k-means block kernel ([`KmeansKernel`]: one block's [`BlockPartial`]) and the fold of
//! the partials in stream order ([`Fold`]), with the update step: empty-cluster relocation
//! (rule 4) and the new centres (rule 5).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use sluice_io::{Block, BlockKernel};

use super::assign::{Want, assign_block};
use super::bounds::{BlockBounds, PassBounds};
use super::simd::{self, Avx2Fma, Isa};
use crate::{Dtype, Endian, Scalar};

/// An element type the assignment runs in (f32 or f64).
pub(super) trait Float: Copy + PartialOrd + Send + Sync + 'static {
    const SIZE: usize;
    const ZERO: Self;
    const INFINITY: Self;
    fn load<const BIG: bool>(bytes: &[u8]) -> Self;
    fn to_f64(self) -> f64;
    fn from_f64(x: f64) -> Self;
    fn mul(self, b: Self) -> Self;
    fn add(self, b: Self) -> Self;
    /// `self·a + b`, rounded once.
    fn fused(self, a: Self, b: Self) -> Self;
}

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Float for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const ZERO: $t = 0.0;
            const INFINITY: $t = <$t>::INFINITY;
            #[inline(always)]
            fn load<const BIG: bool>(bytes: &[u8]) -> $t {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(bytes);
                if BIG { <$t>::from_be_bytes(a) } else { <$t>::from_le_bytes(a) }
            }
            #[inline(always)]
            fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)]
            fn from_f64(x: f64) -> $t { x as $t }
            #[inline(always)]
            fn mul(self, b: $t) -> $t { self * b }
            #[inline(always)]
            fn add(self, b: $t) -> $t { self + b }
            #[inline(always)]
            fn fused(self, a: $t, b: $t) -> $t { self.mul_add(a, b) }
        }
    )*};
}
float!(f32, f64);

/// A record far from its centre, a candidate for an empty cluster (rule 4).
#[derive(Debug, Clone)]
pub(super) struct FarPoint {
    pub(super) dist: f64,
    pub(super) index: u64,
    pub(super) label: usize,
    pub(super) coords: Vec<f64>,
}

impl FarPoint {
    /// Farther first; among equal distances the earlier record.
    fn rank(&self, other: &FarPoint) -> Ordering {
        self.dist.total_cmp(&other.dist).then(other.index.cmp(&self.index))
    }
}

/// Min-heap order: the heap's top is the lowest-ranked point kept.
#[derive(Debug, Clone)]
struct Kept(FarPoint);
impl PartialEq for Kept {
    fn eq(&self, other: &Kept) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Kept {}
impl PartialOrd for Kept {
    fn partial_cmp(&self, other: &Kept) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Kept {
    fn cmp(&self, other: &Kept) -> Ordering {
        other.0.rank(&self.0)
    }
}

/// The `cap` records farthest from their centres seen so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct Farthest {
    cap: usize,
    heap: BinaryHeap<Kept>,
}

impl Farthest {
    pub(super) fn new(cap: usize) -> Farthest {
        Farthest { cap, heap: BinaryHeap::new() }
    }

    /// A distance at or below which no record is kept now (−∞ until `cap` are kept); it only
    /// grows, so a tile may test against a copy taken at its start.
    #[inline(always)]
    pub(super) fn threshold(&self) -> f64 {
        match self.heap.peek() {
            Some(t) if self.heap.len() >= self.cap => t.0.dist,
            _ if self.cap == 0 => f64::INFINITY,
            _ => f64::NEG_INFINITY,
        }
    }

    /// Returns true if and only if a record at `dist` (later than every record offered so far)
    /// would be kept.
    #[inline(always)]
    pub(super) fn would_take(&self, dist: f64) -> bool {
        self.heap.len() < self.cap || self.heap.peek().is_some_and(|t| dist > t.0.dist)
    }

    pub(super) fn offer(&mut self, dist: f64, index: u64, label: usize, coords: Vec<f64>) {
        self.push(FarPoint { dist, index, label, coords });
    }

    pub(super) fn push(&mut self, p: FarPoint) {
        if self.heap.len() < self.cap {
            self.heap.push(Kept(p));
        } else if let Some(mut top) = self.heap.peek_mut()
            && p.rank(&top.0) == Ordering::Greater
        {
            top.0 = p;
        }
    }

    /// The kept points, farthest first.
    pub(super) fn into_sorted(self) -> Vec<FarPoint> {
        self.heap.into_sorted_vec().into_iter().map(|k| k.0).collect()
    }
}

/// The figures of one block.
#[derive(Debug, Clone)]
pub struct BlockPartial {
    /// The block's first record (global index).
    pub(super) first: u64,
    pub(super) records: u64,
    /// Σ x per cluster and feature (`k × d`), in f64; in a pass of moves (`moves.rs`), what
    /// the records that changed cluster add and take away.
    pub(super) sums: Vec<f64>,
    /// Records per cluster; in a pass of moves, what the moves add and take away.
    pub(super) counts: Vec<i64>,
    /// Per cluster, Σ of squared distances to the chosen centre; in a pass of moves, the change
    /// of the clusters' second moments about the reference centres (`moves.rs`).
    pub(super) inertia: Vec<f64>,
    /// The block kept no bounds for the next pass, or (in a pass of moves) found none from the
    /// last: a pass of moves cannot follow, or stand.
    pub(super) lacking: bool,
    /// Records assigned in full.
    pub(super) assigned: u64,
    pub(super) far: Farthest,
    /// The first record holding a NaN or an infinity.
    pub(super) bad: Option<u64>,
    /// Labels in record order (when asked for).
    pub(super) labels: Vec<i32>,
}

/// Centres as the assignment uses them, in one element type.
#[derive(Debug, Clone)]
pub(super) struct Prepared<T> {
    /// Row `j`: `−2c_j`.
    pub(super) m2c: Vec<T>,
    /// `‖c_j‖²`.
    pub(super) norms: Vec<T>,
    /// `m2c` transposed (`d × kp`: row `f` holds `−2c_{j,f}` for every `j`), `k` padded to
    /// `kp`, a whole number of 256-bit vectors, with zeros: for one record against every
    /// centre ([`super::assign::nearest_one`]).
    pub(super) m2ct: Vec<T>,
    /// `norms` padded to `kp` with +∞ (a padding centre is never nearest).
    pub(super) npad: Vec<T>,
}

impl<T: Float> Prepared<T> {
    pub(super) fn new(c64: &[f64], d: usize) -> Prepared<T> {
        let m2c: Vec<T> = c64.iter().map(|&c| T::from_f64(-2.0 * c)).collect();
        let mut norms: Vec<T> =
            c64.chunks_exact(d).map(|r| T::from_f64(r.iter().map(|c| c * c).sum())).collect();
        let k = norms.len();
        let lanes = 32 / T::SIZE;
        let kp = k.div_ceil(lanes) * lanes;
        let mut m2ct = vec![T::ZERO; d * kp];
        for (j, row) in m2c.chunks_exact(d).enumerate() {
            for (f, &c) in row.iter().enumerate() {
                m2ct[f * kp + j] = c;
            }
        }
        let mut npad = norms.clone();
        npad.resize(kp, T::INFINITY);
        norms.shrink_to_fit();
        Prepared { m2c, norms, m2ct, npad }
    }
}

/// The k-means kernel of one pass: the centres, and what to collect.
#[derive(Debug)]
pub struct KmeansKernel {
    dtype: Dtype,
    d: usize,
    k: usize,
    /// Centres as f64 (values of the data's type, widened).
    c64: Vec<f64>,
    p64: Prepared<f64>,
    p32: Prepared<f32>,
    want: Want,
    isa: Isa,
    /// Whether little-endian blocks on AVX2 run the lean loop (`lean::assign_lean`); off
    /// only in tests, which compare it with the windows and the one-record loop.
    lean: bool,
    /// The global index of the plan's first record.
    record0: u64,
    /// Hamerly's bounds for this pass (`bounds.rs`), if the run keeps them.
    bounds: Option<PassBounds>,
    /// In a pass of moves (`moves.rs`), the reference centres of the clusters' moments.
    pub(super) refs: Option<std::sync::Arc<Vec<f64>>>,
}

impl KmeansKernel {
    /// A kernel assigning records of `d` values of `dtype` to the `k × d` `centres`, collecting
    /// sums for the update step if `update` and labels if `labels`.
    pub(super) fn new(
        dtype: Dtype,
        d: usize,
        centres: &[f64],
        update: bool,
        labels: bool,
    ) -> KmeansKernel {
        KmeansKernel {
            dtype,
            d,
            k: centres.len() / d,
            c64: centres.to_vec(),
            p64: Prepared::new(centres, d),
            p32: Prepared::new(centres, d),
            want: Want { update, labels },
            isa: Isa::detect(),
            lean: lean_on(),
            record0: 0,
            bounds: None,
            refs: None,
        }
    }

    /// The same kernel keeping and using the bounds of `bounds` (`bounds.rs`).
    pub(super) fn with_bounds(mut self, bounds: Option<PassBounds>) -> KmeansKernel {
        self.bounds = bounds;
        self
    }

    /// The same kernel over a plan whose first record is record `record0` of the whole data.
    pub(super) fn starting_at(mut self, record0: u64) -> KmeansKernel {
        self.record0 = record0;
        self
    }

    /// The same kernel collecting only what records that change cluster add and take away,
    /// their moments taken about `refs` (`moves.rs`); it needs bounds.
    pub(super) fn moves(mut self, refs: std::sync::Arc<Vec<f64>>) -> KmeansKernel {
        self.refs = Some(refs);
        self
    }

    pub(super) fn dims(&self) -> (usize, usize) {
        (self.k, self.d)
    }

    pub(super) fn dtype(&self) -> Dtype {
        self.dtype
    }

    pub(super) fn record_bytes(&self) -> usize {
        self.d * self.dtype.itemsize()
    }

    /// The block's partial, the assignment compiled with `FMA`, in tiles of `P64` f64 or `P32`
    /// f32 records (see `simd.rs`).
    #[inline(always)]
    pub(super) fn run<const FMA: bool, const P64: usize, const P32: usize>(
        &self,
        block: &Block<'_>,
        avx2: Option<Avx2Fma>,
    ) -> BlockPartial {
        let (k, d) = (self.k, self.d);
        let rec = self.record_bytes();
        let records = block.data.len() / rec;
        let first = self.record0 + block.stream_offset / rec as u64;
        let mut p = BlockPartial {
            first,
            records: records as u64,
            sums: if self.want.update { vec![0.0; k * d] } else { Vec::new() },
            counts: if self.want.update { vec![0; k] } else { Vec::new() },
            inertia: vec![0.0; k],
            lacking: self.bounds.is_none(),
            assigned: records as u64,
            far: Farthest::new(if self.want.update && self.refs.is_none() { k } else { 0 }),
            bad: None,
            labels: Vec::with_capacity(if self.want.labels { records } else { 0 }),
        };
        let data = &block.data[..records * rec];
        if let (Some(pass), Some(refs)) = (&self.bounds, &self.refs) {
            super::moves::run::<FMA, P64, P32>(self, data, first, pass, refs, avx2, &mut p);
            return p;
        }
        let mut state = self.bounds.as_ref().map(|b| b.take(first, records));
        let bounds = match (&self.bounds, state.as_mut()) {
            (Some(b), Some((s, usable))) => Some((b, s, *usable)),
            _ => None,
        };
        p.assigned = self.assign::<FMA, P64, P32>(data, first, self.want, bounds, avx2, &mut p);
        if let (Some(b), Some((s, _))) = (&self.bounds, state) {
            b.put(first, s, p.assigned);
        }
        p
    }

    /// Assigns the records of `data` (record `first` onwards) by the loop for the data's type,
    /// byte order and instruction set, collecting what `w` asks into `p`; returns how many were
    /// assigned in full.
    #[inline(always)]
    pub(super) fn assign<const FMA: bool, const P64: usize, const P32: usize>(
        &self,
        data: &[u8],
        first: u64,
        w: Want,
        bounds: Option<(&PassBounds, &mut BlockBounds, bool)>,
        avx2: Option<Avx2Fma>,
        p: &mut BlockPartial,
    ) -> u64 {
        let (c, d) = (&self.c64, self.d);
        let (p64, p32) = (&self.p64, &self.p32);
        match (self.dtype.scalar, self.dtype.endian) {
            (Scalar::F64, Endian::Little) if avx2.is_some() && self.lean => {
                simd::lean::<f64, P64>(avx2.unwrap(), data, first, d, c, p64, w, bounds, p)
            }
            (Scalar::F32, Endian::Little) if avx2.is_some() && self.lean => {
                simd::lean::<f32, P32>(avx2.unwrap(), data, first, d, c, p32, w, bounds, p)
            }
            (Scalar::F64, Endian::Little) => {
                assign_block::<f64, P64, false, FMA>(data, first, d, c, p64, w, bounds, avx2, p)
            }
            (Scalar::F64, Endian::Big) => {
                assign_block::<f64, P64, true, FMA>(data, first, d, c, p64, w, bounds, avx2, p)
            }
            (Scalar::F32, Endian::Little) => {
                assign_block::<f32, P32, false, FMA>(data, first, d, c, p32, w, bounds, avx2, p)
            }
            (Scalar::F32, Endian::Big) => {
                assign_block::<f32, P32, true, FMA>(data, first, d, c, p32, w, bounds, avx2, p)
            }
            // `open_matrix` admits f32 and f64 only.
            _ => unreachable!("k-means runs on f32 or f64"),
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Tests turn the lean loop off for the kernels made on their own thread.
    pub(super) static LEAN_OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether kernels made on this thread run the lean loop (always, outside tests).
fn lean_on() -> bool {
    #[cfg(test)]
    if LEAN_OFF.with(std::cell::Cell::get) {
        return false;
    }
    true
}

impl BlockKernel for KmeansKernel {
    type Partial = BlockPartial;

    fn process(&self, block: &Block<'_>) -> BlockPartial {
        self.isa.run(self, block)
    }
}

/// The clusters after a pass (rule 7), ready for the update step: from one pass's figures, or
/// carried across passes of moves (`moves.rs`).
#[derive(Debug, Clone)]
pub(crate) struct Fold {
    pub(super) sums: Vec<f64>,
    pub(super) counts: Vec<u64>,
    /// Per cluster: after a pass that reads every record, its records' squared distances to
    /// the pass's centres; carried by passes of moves as the second moment about those
    /// centres (`moves.rs`).
    pub(super) inertia: Vec<f64>,
    pub(super) far: Farthest,
}

impl Fold {
    /// Σ of the clusters' inertia.
    pub(super) fn inertia(&self) -> f64 {
        self.inertia.iter().sum()
    }

    /// Relocates empty clusters (rule 4), the pass's centres `centres`; returns the records
    /// moved and the clusters they went to.
    pub(super) fn relocate(&mut self, d: usize, centres: &[f64]) -> Vec<(u64, usize)> {
        let empty: Vec<usize> = (0..self.counts.len()).filter(|&j| self.counts[j] == 0).collect();
        let far = std::mem::take(&mut self.far).into_sorted();
        let mut moved = Vec::new();
        if !empty.is_empty() && far.first().is_some_and(|p| p.dist > 0.0) {
            for (&new, p) in empty.iter().zip(&far) {
                let c = &centres[new * d..(new + 1) * d];
                for f in 0..d {
                    self.sums[p.label * d + f] -= p.coords[f];
                    self.sums[new * d + f] = p.coords[f];
                }
                self.counts[p.label] -= 1;
                self.counts[new] = 1;
                self.inertia[p.label] -= p.dist;
                self.inertia[new] = p.coords.iter().zip(c).map(|(x, c)| (x - c) * (x - c)).sum();
                moved.push((p.index, new));
            }
        }
        moved
    }

    /// The new centres (rule 5), rounded to `scalar`.
    pub(super) fn centres(&self, d: usize, scalar: Scalar) -> Vec<f64> {
        let mut centres = self.sums.clone();
        for (row, &n) in centres.chunks_exact_mut(d).zip(&self.counts) {
            // scikit-learn's `_average_centers`: multiply by the reciprocal; an empty cluster
            // that could not be relocated keeps its zero sum.
            if n > 0 {
                let alpha = 1.0 / n as f64;
                row.iter_mut().for_each(|c| *c *= alpha);
            }
            if scalar == Scalar::F32 {
                row.iter_mut().for_each(|c| *c = f64::from(*c as f32));
            }
        }
        centres
    }
}
