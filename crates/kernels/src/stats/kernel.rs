//! The stats kernel: decoding a block chunk by chunk and taking its figures ([`BlockStats`]),
//! and the fold of the blocks' figures in stream order ([`StatsFold`]).

use sluice_io::{Block, BlockKernel};

use crate::dist::tree::{Combine, TreeFold};
use crate::pairwise::{self, Neumaier};
use crate::{Dtype, Endian, Scalar};

use super::histogram::{HistogramState, scratch_arrays};
use super::{Figures, Histogram, Number};

/// The figures of one block; fold them in stream order with [`StatsKernel::finish`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockStats {
    /// Elements.
    pub(crate) total: u64,
    /// NaNs.
    pub(crate) nan: u64,
    /// Non-NaN elements.
    pub(crate) n: u64,
    /// Float sum (pairwise) of the non-NaN values.
    pub(crate) fsum: f64,
    /// Exact integer sum.
    pub(crate) isum: i128,
    pub(crate) fmin: f64,
    pub(crate) fmax: f64,
    pub(crate) imin: i128,
    pub(crate) imax: i128,
    /// Mean of the block's values (for the variance merge).
    pub(crate) mean: f64,
    /// Sum of squared deviations from `mean`.
    pub(crate) m2: f64,
}

impl BlockStats {
    /// Merges `(n, mean, m2)` of a later run of values into this one's, by Chan, Golub and
    /// LeVeque's pairwise update (rule 3).
    fn merge_moments(&mut self, n: u64, mean: f64, m2: f64) {
        if n == 0 {
            return;
        }
        if self.n == 0 {
            (self.n, self.mean, self.m2) = (n, mean, m2);
            return;
        }
        let (na, nb) = (self.n as f64, n as f64);
        let total = na + nb;
        let delta = mean - self.mean;
        self.mean += delta * (nb / total);
        self.m2 += m2 + delta * delta * (na * nb / total);
        self.n += n;
    }

    pub(crate) fn empty() -> BlockStats {
        BlockStats {
            total: 0,
            nan: 0,
            n: 0,
            fsum: 0.0,
            isum: 0,
            fmin: f64::INFINITY,
            fmax: f64::NEG_INFINITY,
            imin: i128::MAX,
            imax: i128::MIN,
            mean: 0.0,
            m2: 0.0,
        }
    }
}

/// Decoding of one element type.
trait Elem: Copy + PartialOrd {
    const SIZE: usize;
    /// Needs a 128-bit sum (64-bit integers).
    const WIDE: bool = Self::SIZE == 8;
    fn load<const BIG: bool>(bytes: &[u8]) -> Self;
    fn to_f64(self) -> f64;
    fn to_i128(self) -> i128;
}

macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn load<const BIG: bool>(bytes: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(bytes);
                if BIG { <$t>::from_be_bytes(a) } else { <$t>::from_le_bytes(a) }
            }
            #[inline(always)]
            fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)]
            fn to_i128(self) -> i128 { self as i128 }
        }
    )*};
}
elem!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64);

/// float16: stored as its bits, widened exactly to f64 (every binary16 value is an f64:
/// subnormals, infinities and NaN keep their meaning). Integer figures never see floats.
impl Elem for half::f16 {
    const SIZE: usize = 2;
    #[inline(always)]
    fn load<const BIG: bool>(bytes: &[u8]) -> Self {
        let a = [bytes[0], bytes[1]];
        half::f16::from_bits(if BIG { u16::from_be_bytes(a) } else { u16::from_le_bytes(a) })
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn to_i128(self) -> i128 {
        f64::from(self) as i128
    }
}

/// Values per chunk: a block is decoded a chunk at a time into an f64 buffer that stays in L1
/// (8 KiB); sums, moments and bins are taken over the buffer in loops the compiler vectorizes.
pub const CHUNK: usize = 1024;

/// Smallest and largest of `vals` (no NaNs), in 8 lanes so that the loop vectorizes.
fn min_max(vals: &[f64]) -> (f64, f64) {
    let mut lo = [f64::INFINITY; 8];
    let mut hi = [f64::NEG_INFINITY; 8];
    let mut lanes = vals.chunks_exact(8);
    for c in &mut lanes {
        for j in 0..8 {
            lo[j] = if c[j] < lo[j] { c[j] } else { lo[j] };
            hi[j] = if c[j] > hi[j] { c[j] } else { hi[j] };
        }
    }
    for &v in lanes.remainder() {
        lo[0] = if v < lo[0] { v } else { lo[0] };
        hi[0] = if v > hi[0] { v } else { hi[0] };
    }
    let lo = lo.into_iter().fold(f64::INFINITY, |a, b| if b < a { b } else { a });
    let hi = hi.into_iter().fold(f64::NEG_INFINITY, |a, b| if b > a { b } else { a });
    (lo, hi)
}

/// Σ (v − mean)² over `vals`, pairwise (rule 3: the second pass of the two-pass variance).
fn sum_sq_dev(vals: &[f64], mean: f64) -> f64 {
    pairwise::sum(0, vals.len(), &|i| {
        let d = vals[i] - mean;
        d * d
    })
}

/// The stats kernel over blocks of one element type.
#[derive(Debug)]
pub struct StatsKernel {
    dtype: Dtype,
    histogram: Option<HistogramState>,
}

impl StatsKernel {
    /// A kernel for `dtype`, counting a histogram of `(bins, lo, hi)` if given (see
    /// [`StatsConfig::histogram`](super::StatsConfig::histogram)).
    pub fn new(dtype: Dtype, histogram: Option<(usize, f64, f64)>) -> StatsKernel {
        let scratch = scratch_arrays();
        StatsKernel {
            dtype,
            histogram: histogram.map(|(b, lo, hi)| HistogramState::new(b, lo, hi, scratch)),
        }
    }

    /// Bytes of state a kernel with this histogram holds (counts and edges; reserved from the
    /// budget by [`stats`](super::stats()) before the kernel is made).
    pub fn state_bytes_for(histogram: Option<(usize, f64, f64)>) -> u64 {
        // Edges and shared counts, plus one scratch array per core.
        histogram.map_or(0, |(bins, _, _)| (bins as u64 + 1) * 8 * (2 + scratch_arrays() as u64))
    }

    fn block<T: Elem, const BIG: bool>(&self, data: &[u8]) -> BlockStats {
        let size = T::SIZE;
        let mut s = BlockStats::empty();
        let mut scratch = self.histogram.as_ref().and_then(HistogramState::take_scratch);
        let mut fsum = Neumaier::default();
        // The chunk's non-NaN values as f64, decoded once; index masked so that the compiler
        // sees it in bounds (it is: at most CHUNK values are written per chunk).
        let mut buf = [0f64; CHUNK];
        let mask = CHUNK - 1;
        for chunk in data.chunks(CHUNK * size) {
            let total = chunk.len() / size;
            if total == 0 {
                // Only a short last record, which `open_array` rules out; never index into it.
                continue;
            }
            let (k, sum) = if self.dtype.scalar.is_float() {
                let mut k = 0;
                for c in chunk.chunks_exact(size) {
                    let v = T::load::<BIG>(c).to_f64();
                    buf[k & mask] = v;
                    k += usize::from(!v.is_nan());
                }
                let vals = &buf[..k];
                let (lo, hi) = min_max(vals);
                s.fmin = if lo < s.fmin { lo } else { s.fmin };
                s.fmax = if hi > s.fmax { hi } else { s.fmax };
                let sum = pairwise::sum_slice(vals);
                fsum.add(sum);
                (k, sum)
            } else {
                let mut lo = T::load::<BIG>(&chunk[..size]);
                let mut hi = lo;
                // Elements of at most 32 bits: an i64 sum of at most CHUNK of them is exact.
                let (mut narrow, mut wide) = (0i64, 0i128);
                for (j, c) in chunk.chunks_exact(size).enumerate() {
                    let v = T::load::<BIG>(c);
                    lo = if v < lo { v } else { lo };
                    hi = if v > hi { v } else { hi };
                    if T::WIDE {
                        wide += v.to_i128();
                    } else {
                        narrow += v.to_i128() as i64;
                    }
                    buf[j & mask] = v.to_f64();
                }
                let isum = wide + i128::from(narrow);
                s.isum += isum;
                s.imin = s.imin.min(lo.to_i128());
                s.imax = s.imax.max(hi.to_i128());
                (total, isum as f64)
            };
            s.total += total as u64;
            s.nan += (total - k) as u64;
            if k == 0 {
                continue;
            }
            let vals = &buf[..k];
            let mean = sum / k as f64;
            s.merge_moments(k as u64, mean, sum_sq_dev(vals, mean));
            if let Some(h) = &self.histogram {
                h.count(vals, scratch.as_mut());
            }
        }
        s.fsum = fsum.value();
        if let (Some(v), Some(h)) = (scratch, &self.histogram) {
            h.give_back(v);
        }
        s
    }

    /// Folds the partials of a run, in stream order, into the figures of rules 1–6. The
    /// histogram is read from the shared counts (so call it once per run).
    pub fn finish(&self, partials: &[BlockStats]) -> Figures {
        let mut fold = StatsFold::default();
        partials.iter().for_each(|p| fold.add(p));
        fold.finish(self)
    }
}

/// The figures of a run of consecutive blocks: a node of the combine tree (`dist::tree`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatsNode {
    pub(crate) stats: BlockStats,
    /// The compensated float sum (`stats.fsum` is unused in a node).
    pub(crate) fsum: Neumaier,
}

impl StatsNode {
    fn leaf(p: &BlockStats) -> StatsNode {
        StatsNode { stats: *p, fsum: Neumaier::from_parts(p.fsum, 0.0) }
    }
}

impl Combine for StatsNode {
    /// Counts and integer sums add, extremes compare, `(n, mean, m2)` merge by Chan et al.
    /// (rule 3) and float sums by Neumaier.
    fn combine(&self, right: &StatsNode) -> StatsNode {
        let (a, b) = (&self.stats, &right.stats);
        let mut s = *a;
        s.total += b.total;
        s.nan += b.nan;
        s.isum += b.isum;
        s.fmin = if b.fmin < s.fmin { b.fmin } else { s.fmin };
        s.fmax = if b.fmax > s.fmax { b.fmax } else { s.fmax };
        s.imin = s.imin.min(b.imin);
        s.imax = s.imax.max(b.imax);
        s.merge_moments(b.n, b.mean, b.m2);
        StatsNode { stats: s, fsum: self.fsum.merge(&right.fsum) }
    }
}

/// A running fold of [`BlockStats`] in stream order (rule 7); the sink of
/// [`Pipeline::run_ordered`](sluice_io::Pipeline::run_ordered). Blocks combine in the canonical
/// tree over block indices (`dist::tree`), so that a distributed run, whose ranks each fold a
/// stripe of the blocks, combines them in exactly the same pairs (issue 12).
#[derive(Debug, Clone, Default)]
pub struct StatsFold {
    tree: TreeFold<StatsNode>,
    next: u64,
}

impl StatsFold {
    /// A fold whose first block is block `first` of the whole stream.
    pub(crate) fn starting_at(first: u64) -> StatsFold {
        StatsFold { tree: TreeFold::default(), next: first }
    }

    /// Adds the next block's figures.
    pub fn add(&mut self, p: &BlockStats) {
        self.tree.push_leaf(self.next, StatsNode::leaf(p));
        self.next += 1;
    }

    /// The tree nodes of the blocks added so far (`dist::tree` rule 2).
    pub(crate) fn into_tree(self) -> TreeFold<StatsNode> {
        self.tree
    }

    /// The figures; the histogram is read from `kernel`'s shared counts.
    pub fn finish(&self, kernel: &StatsKernel) -> Figures {
        figures(self.tree.clone().finish().as_ref(), kernel)
    }
}

/// The figures of rules 1–6 from the root of the tree (`None`: no blocks); the histogram is
/// read from `kernel`'s shared counts.
pub(crate) fn figures(root: Option<&StatsNode>, kernel: &StatsKernel) -> Figures {
    let empty = StatsNode { stats: BlockStats::empty(), fsum: Neumaier::default() };
    let root = root.unwrap_or(&empty);
    let total = &root.stats;
    let n = total.n;
    let (sum, min, max) = if kernel.dtype.scalar.is_float() {
        let some = |x| (n > 0).then_some(Number::Float(x));
        (Number::Float(root.fsum.value()), some(total.fmin), some(total.fmax))
    } else {
        let some = |x| (n > 0).then_some(Number::Int(x));
        (Number::Int(total.isum), some(total.imin), some(total.imax))
    };
    let histogram =
        kernel.histogram.as_ref().map(|h| Histogram { edges: h.edges.clone(), counts: h.counts() });
    Figures {
        count: total.total,
        nan_count: total.nan,
        sum,
        min,
        max,
        mean: (n > 0).then(|| Number::Float(sum.as_f64() / n as f64)),
        variance: (n > 0).then(|| Number::Float(total.m2 / n as f64)),
        variance_sample: (n > 1).then(|| Number::Float(total.m2 / (n - 1) as f64)),
        histogram,
    }
}

impl BlockKernel for StatsKernel {
    type Partial = BlockStats;

    fn process(&self, block: &Block<'_>) -> BlockStats {
        self.block_stats(block.data)
    }
}

impl StatsKernel {
    /// The figures of `data`, whole elements of the kernel's dtype (one block, or one column's
    /// values gathered from a block by `axis`).
    pub(crate) fn block_stats(&self, data: &[u8]) -> BlockStats {
        // Contract rule 8 and `open_array` make every block whole elements.
        debug_assert_eq!(data.len() % self.dtype.itemsize(), 0);
        let big = self.dtype.endian == Endian::Big;
        macro_rules! dispatch {
            ($($s:ident => $t:ty),*) => {
                match (self.dtype.scalar, big) {
                    $((Scalar::$s, false) => self.block::<$t, false>(data),
                      (Scalar::$s, true) => self.block::<$t, true>(data),)*
                }
            };
        }
        dispatch!(F16 => half::f16, F32 => f32, F64 => f64, I8 => i8, I16 => i16, I32 => i32, I64 => i64,
                  U8 => u8, U16 => u16, U32 => u32, U64 => u64)
    }
}
