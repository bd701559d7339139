//! Statistics of a typed array in one streaming pass: count, NaNs, sum, min, max, mean,
//! variance, and an optional histogram.
//!
//! The input is a `.npy` file (header parsed by [`crate::npy`]) or a raw file of one
//! [`Scalar`] type in one byte order. The pass reads the data extent (after the header) as
//! `Fixed(itemsize)` records; every block yields a [`BlockStats`], and [`StatsKernel::finish`]
//! folds them in stream order.
//!
//! # Contract
//! 1. `count` is the number of elements (`product(shape)`, NumPy's `size`); `nan_count` of them
//!    are NaN. NaNs are left out of every other figure, as NumPy's `nan*` functions do; `n` below
//!    is `count - nan_count`.
//! 2. `sum`: for integer dtypes the exact sum, accumulated in 128 bits and printed as a JSON
//!    integer. For floats: **pairwise** summation (NumPy's algorithm, blocks of 128 in 8
//!    accumulators) over chunks of 1024 values, and the chunk sums folded in stream order with
//!    **Neumaier** compensated summation, within a block and across blocks. The error is at most
//!    that of NumPy's pairwise `nansum`; the two agree to about 1e-14 relative on data without
//!    heavy cancellation. f32 data is widened to f64 first (NumPy accumulates f32 in f32; compare
//!    with `nansum(a.astype(float64))`).
//! 3. `min`, `max` over the non-NaN values (integers exact); `mean = sum / n`; `variance` is the
//!    population variance (ddof 0) and `variance_sample` the sample variance (ddof 1). Each chunk
//!    of 1024 values gets its mean and sum of squared deviations in two passes over the chunk
//!    (in L1 cache), and chunks and blocks are merged with the parallel update of Chan, Golub and
//!    LeVeque (1979, "Updating formulae and a pairwise algorithm for computing sample
//!    variances"), which stays accurate where the textbook Σx² − n·mean² formula cancels.
//! 4. Figures with no values to describe are `None` (JSON `null`): min, max, mean and variance
//!    when `n == 0`, `variance_sample` when `n < 2`. The sum of nothing is 0. An empty array is
//!    valid.
//! 5. Infinities behave as in NumPy: `+inf` in the data makes the sum and mean `+inf` and the
//!    variance NaN; `+inf` and `-inf` together make the sum NaN. Non-finite floats are printed in
//!    JSON as the strings `"inf"`, `"-inf"` and `"nan"` (JSON has no such numbers).
//! 6. Histogram (`bins`, `range`): `numpy.histogram(a, bins, range)` semantics: `bins` equal bins
//!    with edges `lo + i·(hi−lo)/bins` (the last edge exactly `hi`), each bin half-open except the
//!    last, which is closed; values outside `[lo, hi]` and NaNs are not counted. A range with
//!    `lo == hi` becomes `[lo − 0.5, hi + 0.5]`; `lo > hi` is an error. Bin assignment replicates
//!    NumPy's index computation and its ±1 edge correction in f64 (NumPy 2 computes edges in f32
//!    for f32 data; compare with `histogram(a.astype(float64), ...)`). `range` without `bins`
//!    means 10 bins (NumPy's default); `bins` without `range` is an error, since one pass cannot
//!    know the data's range in advance.
//! 7. Results do not depend on the memory order (`fortran_order`): whole-array figures are taken
//!    over the elements in file order. Integer figures, counts and the histogram do not depend on
//!    the block size either; float sums and variances depend on it only through rounding (the
//!    grouping of the pairwise sums), and for a fixed block size they are bitwise reproducible,
//!    since partials are folded in stream order, never in completion order.
//! 8. Bad input is a typed error before the pass starts: a raw file whose size is not a multiple
//!    of the item size, a raw file without a dtype, `--dtype`/`--endian` that disagree with a
//!    `.npy` header, a truncated or malformed `.npy`, an unsupported dtype.
//!
//! # Threads and costs
//! [`StatsKernel`] is shared by all compute workers. Per block: the bytes are decoded once, a
//! chunk of [`CHUNK`] values at a time, into an 8 KiB f64 buffer on the stack; min/max, the
//! pairwise sum, the squared deviations and the bins are loops over that buffer. No allocation
//! per block. The histogram is counted in per-worker scratch arrays from a pool (one per core,
//! atomics beyond that) and summed at the end: integer addition commutes, so the order of
//! blocks does not matter. Kernel state reserved from the budget: `(bins + 1) × 8 × (2 + cores)`
//! bytes (edges, shared counts, scratch arrays).

use std::fs::File;
use std::io::Read;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde::{Serialize, Serializer};
use sluice_io::{Block, BlockKernel, Budget, Pipeline, Plan, RecordLayout, RunStats};

use crate::hints::{self, Hinted};
use crate::pairwise::{self, Neumaier};
use crate::{Dtype, Endian, KernelError, Scalar, npy};

/// Bins when only a range is given (NumPy's default).
pub const DEFAULT_BINS: usize = 10;

/// Parameters of a stats pass. Every field can also be set by a hint of the same name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatsConfig {
    /// Element type of a raw file; for a `.npy` it must agree with the header.
    pub dtype: Option<Scalar>,
    /// Byte order of a raw file (default little); for a `.npy` it must agree with the header.
    pub endian: Option<Endian>,
    /// Number of histogram bins.
    pub bins: Option<usize>,
    /// Histogram range `(lo, hi)`.
    pub range: Option<(f64, f64)>,
}

impl Hinted for StatsConfig {
    const KEYS: &'static str = "dtype, endian, bins, range";

    fn apply_hint(&mut self, key: &str, value: &str) -> Result<(), KernelError> {
        match key {
            "dtype" => {
                self.dtype = Some(Scalar::parse(value).ok_or_else(|| {
                    hints::bad_value(
                        key,
                        value,
                        &format!("a dtype ({})", crate::dtype::SCALAR_NAMES),
                    )
                })?);
            }
            "endian" => {
                self.endian = Some(
                    Endian::parse(value)
                        .ok_or_else(|| hints::bad_value(key, value, "little or big"))?,
                );
            }
            "bins" => self.bins = Some(hints::parse_usize(key, value)?),
            "range" => self.range = Some(hints::parse_range(key, value)?),
            _ => return Err(hints::unknown(key, Self::KEYS)),
        }
        Ok(())
    }
}

impl StatsConfig {
    /// A config from hints alone.
    pub fn from_hints<K: AsRef<str>, V: AsRef<str>>(
        pairs: &[(K, V)],
    ) -> Result<StatsConfig, KernelError> {
        let mut config = StatsConfig::default();
        config.apply_hints(pairs)?;
        Ok(config)
    }

    /// The histogram to count, if any: `(bins, lo, hi)` after NumPy's range rules (rule 6).
    pub fn histogram(&self) -> Result<Option<(usize, f64, f64)>, KernelError> {
        let bad = |key: &str, reason: String| KernelError::BadOption { key: key.into(), reason };
        let (bins, (lo, hi)) = match (self.bins, self.range) {
            (None, None) => return Ok(None),
            (Some(_), None) => {
                return Err(bad("bins", "needs --range LO,HI (one pass cannot find it)".into()));
            }
            (bins, Some(range)) => (bins.unwrap_or(DEFAULT_BINS), range),
        };
        if bins == 0 {
            return Err(bad("bins", "must be at least 1".into()));
        }
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(bad("range", format!("[{lo}, {hi}] is not finite")));
        }
        if lo > hi {
            return Err(bad("range", format!("lo {lo} is larger than hi {hi}")));
        }
        Ok(Some(if lo == hi { (bins, lo - 0.5, hi + 0.5) } else { (bins, lo, hi) }))
    }
}

/// Where the array's elements are and what they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayInfo {
    /// The file.
    pub path: PathBuf,
    /// The `.npy` header, or `None` for a raw file.
    pub npy: Option<npy::NpyHeader>,
    /// The element type.
    pub dtype: Dtype,
    /// Shape (`[count]` for a raw file).
    pub shape: Vec<u64>,
    /// Byte offset of the first element.
    pub data_offset: u64,
    /// Number of elements.
    pub count: u64,
}

impl ArrayInfo {
    /// Bytes of element data.
    pub fn data_len(&self) -> u64 {
        self.count * self.dtype.itemsize() as u64
    }
}

/// Finds out what `path` holds (rule 8): a `.npy` if it starts with the magic or is named
/// `*.npy`, else a raw array of `config.dtype`.
pub fn open_array(path: &Path, config: &StatsConfig) -> Result<ArrayInfo, KernelError> {
    let open_err = |source| KernelError::Open { path: path.to_path_buf(), source };
    let mut file = File::open(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if !meta.is_file() {
        return Err(KernelError::NotAFile { path: path.to_path_buf() });
    }
    let mut prefix = Vec::with_capacity(npy::MAGIC.len());
    (&mut file).take(npy::MAGIC.len() as u64).read_to_end(&mut prefix).map_err(open_err)?;
    let named_npy = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    if npy::has_magic(&prefix) || named_npy {
        let header = npy::read_header(path)?;
        let mismatch = |what, given: String, header: String| KernelError::DtypeMismatch {
            path: path.to_path_buf(),
            what,
            given,
            header,
        };
        if let Some(s) = config.dtype.filter(|&s| s != header.dtype.scalar) {
            return Err(mismatch("dtype", s.name().into(), header.descr.clone()));
        }
        if let Some(e) = config.endian {
            if header.dtype.itemsize() > 1 && e != header.dtype.endian {
                return Err(mismatch("endian", e.name().into(), header.descr.clone()));
            }
        }
        return Ok(ArrayInfo {
            path: path.to_path_buf(),
            dtype: header.dtype,
            shape: header.shape.clone(),
            data_offset: header.data_offset,
            count: header.count,
            npy: Some(header),
        });
    }
    let scalar =
        config.dtype.ok_or_else(|| KernelError::RawNeedsDtype { path: path.to_path_buf() })?;
    let dtype = Dtype::new(scalar, config.endian.unwrap_or_default());
    let len = meta.len();
    if len % dtype.itemsize() as u64 != 0 {
        return Err(KernelError::RawSize {
            path: path.to_path_buf(),
            len,
            dtype: scalar.name().into(),
            itemsize: dtype.itemsize(),
        });
    }
    let count = len / dtype.itemsize() as u64;
    Ok(ArrayInfo {
        path: path.to_path_buf(),
        npy: None,
        dtype,
        shape: vec![count],
        data_offset: 0,
        count,
    })
}

/// A figure: an exact integer, or a float (integer dtypes give integer sums, mins and maxes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// Exact integer.
    Int(i128),
    /// Float.
    Float(f64),
}

impl Number {
    /// The value as f64 (rounded for huge integers).
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(x) => x,
        }
    }
}

impl std::fmt::Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Number::Int(i) => write!(f, "{i}"),
            Number::Float(x) if x.is_nan() => f.write_str("nan"),
            Number::Float(x) if x.is_infinite() => {
                f.write_str(if x > 0.0 { "inf" } else { "-inf" })
            }
            // `{:?}` prints the shortest representation that round-trips.
            Number::Float(x) => write!(f, "{x:?}"),
        }
    }
}

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Number::Int(i) => s.serialize_i128(i),
            Number::Float(x) if x.is_finite() => s.serialize_f64(x),
            // Rule 5: JSON has no NaN or infinity.
            Number::Float(_) => s.serialize_str(&self.to_string()),
        }
    }
}

/// Histogram counts and edges (rule 6).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Histogram {
    /// `bins + 1` edges, as `numpy.linspace(lo, hi, bins + 1)`.
    pub edges: Vec<f64>,
    /// `bins` counts.
    pub counts: Vec<u64>,
}

/// Everything `sluice stats` reports: the figures of rules 1–6 and the run's statistics.
#[derive(Debug, Clone, Serialize)]
pub struct StatsReport {
    /// The file.
    pub file: PathBuf,
    /// `npy` or `raw`.
    pub format: &'static str,
    /// The dtype as a numpy descr (`<f8`).
    pub dtype: String,
    /// The shape.
    pub shape: Vec<u64>,
    /// True if and only if a `.npy` header said Fortran order.
    pub fortran_order: bool,
    /// Elements, NaNs included (rule 1).
    pub count: u64,
    /// NaN elements.
    pub nan_count: u64,
    /// Sum (rule 2).
    pub sum: Number,
    /// Smallest value (rule 3).
    pub min: Option<Number>,
    /// Largest value.
    pub max: Option<Number>,
    /// Mean.
    pub mean: Option<Number>,
    /// Population variance (ddof 0).
    pub variance: Option<Number>,
    /// Sample variance (ddof 1).
    pub variance_sample: Option<Number>,
    /// The histogram, if one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Histogram>,
    /// Statistics of the pass.
    pub run: RunStats,
}

/// The figures of one block; fold them in stream order with [`StatsKernel::finish`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockStats {
    /// Elements.
    total: u64,
    /// NaNs.
    nan: u64,
    /// Non-NaN elements.
    n: u64,
    /// Float sum (pairwise) of the non-NaN values.
    fsum: f64,
    /// Exact integer sum.
    isum: i128,
    fmin: f64,
    fmax: f64,
    imin: i128,
    imax: i128,
    /// Mean of the block's values (for the variance merge).
    mean: f64,
    /// Sum of squared deviations from `mean`.
    m2: f64,
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

    fn empty() -> BlockStats {
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

/// NumPy's uniform-bin histogram (rule 6), shared by all workers.
///
/// Counting goes to per-worker scratch arrays taken from a pool for the length of one block and
/// given back (so no count array is zeroed or merged per block); when more blocks run at once
/// than scratch arrays were budgeted, the extra ones count into shared atomics. The figures are
/// the sum of all of them: integer addition commutes, so the order of blocks does not matter.
#[derive(Debug)]
struct HistogramState {
    /// `bins / (hi - lo)`.
    norm: f64,
    lo: f64,
    hi: f64,
    edges: Vec<f64>,
    shared: Vec<AtomicU64>,
    pool: Mutex<Vec<Vec<u64>>>,
    /// Scratch arrays made so far; at most `max_scratch`.
    made: AtomicUsize,
    max_scratch: usize,
}

impl HistogramState {
    fn new(bins: usize, lo: f64, hi: f64, max_scratch: usize) -> HistogramState {
        // numpy.linspace: step = (hi - lo) / bins; edge_i = i * step + lo; last edge = hi.
        let step = (hi - lo) / bins as f64;
        let mut edges: Vec<f64> = (0..=bins).map(|i| i as f64 * step + lo).collect();
        edges[bins] = hi;
        HistogramState {
            norm: bins as f64 / (hi - lo),
            lo,
            hi,
            edges,
            shared: (0..bins).map(|_| AtomicU64::new(0)).collect(),
            pool: Mutex::new(Vec::new()),
            made: AtomicUsize::new(0),
            max_scratch,
        }
    }

    /// The bin of `x`, or `None` if it is outside `[lo, hi]` or NaN. Mirrors
    /// `numpy/lib/_histograms_impl.py` (uniform-bins branch of `histogram`).
    #[inline(always)]
    fn bin(&self, x: f64) -> Option<usize> {
        if !(x >= self.lo && x <= self.hi) {
            return None;
        }
        let last = self.shared.len() - 1;
        // NumPy divides by (hi - lo) and multiplies by bins; one multiplication by their ratio
        // can differ from that by an ulp, which the edge correction below absorbs exactly as it
        // absorbs NumPy's own rounding: the result is the i with edges[i] <= x < edges[i + 1]
        // (the last bin closed). `x >= lo` makes the index non-negative; NumPy's `indices == bins` case is `min`.
        // Through i64: one cvttsd2si, where f64 -> usize needs a compare and a subtract.
        let mut i = (((x - self.lo) * self.norm) as i64 as usize).min(last);
        if x < self.edges[i] {
            i = i.saturating_sub(1);
        } else if i != last && x >= self.edges[i + 1] {
            i += 1;
        }
        Some(i)
    }

    /// A scratch count array for one block, if the budget allows one more.
    fn take_scratch(&self) -> Option<Vec<u64>> {
        if let Some(v) = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Some(v);
        }
        // Relaxed: only the count matters, and fetch_update makes check and add one step.
        self.made
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| {
                (m < self.max_scratch).then_some(m + 1)
            })
            .ok()
            .map(|_| vec![0u64; self.shared.len()])
    }

    fn give_back(&self, scratch: Vec<u64>) {
        self.pool.lock().unwrap_or_else(|e| e.into_inner()).push(scratch);
    }

    /// Counts `vals` into `scratch`, or into the shared atomics.
    fn count(&self, vals: &[f64], scratch: Option<&mut Vec<u64>>) {
        match scratch {
            Some(counts) => {
                for &v in vals {
                    if let Some(i) = self.bin(v) {
                        counts[i] += 1;
                    }
                }
            }
            None => {
                for &v in vals {
                    if let Some(i) = self.bin(v) {
                        // Relaxed: the counts order nothing; the run's join publishes them.
                        self.shared[i].fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// The counts of the run (call after every block is processed).
    fn counts(&self) -> Vec<u64> {
        let mut counts: Vec<u64> = self.shared.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        for scratch in self.pool.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            for (c, s) in counts.iter_mut().zip(scratch) {
                *c += s;
            }
        }
        counts
    }
}

/// Scratch histogram arrays to budget for: one per core (the default number of workers).
fn scratch_arrays() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The stats kernel over blocks of one element type.
#[derive(Debug)]
pub struct StatsKernel {
    dtype: Dtype,
    histogram: Option<HistogramState>,
}

impl StatsKernel {
    /// A kernel for `dtype`, counting a histogram of `(bins, lo, hi)` if given (see
    /// [`StatsConfig::histogram`]).
    pub fn new(dtype: Dtype, histogram: Option<(usize, f64, f64)>) -> StatsKernel {
        let scratch = scratch_arrays();
        StatsKernel {
            dtype,
            histogram: histogram.map(|(b, lo, hi)| HistogramState::new(b, lo, hi, scratch)),
        }
    }

    /// Bytes of state a kernel with this histogram holds (counts and edges; reserved from the
    /// budget by [`stats`] before the kernel is made).
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

/// A running fold of [`BlockStats`] in stream order (rule 7); the sink of
/// [`Pipeline::run_ordered`].
#[derive(Debug, Clone)]
pub struct StatsFold {
    total: BlockStats,
    fsum: Neumaier,
}

impl Default for StatsFold {
    fn default() -> StatsFold {
        StatsFold { total: BlockStats::empty(), fsum: Neumaier::default() }
    }
}

impl StatsFold {
    /// Adds the next block's figures. `(n, mean, m2)` merge by Chan et al. (rule 3).
    pub fn add(&mut self, p: &BlockStats) {
        let total = &mut self.total;
        total.total += p.total;
        total.nan += p.nan;
        self.fsum.add(p.fsum);
        total.isum += p.isum;
        total.fmin = if p.fmin < total.fmin { p.fmin } else { total.fmin };
        total.fmax = if p.fmax > total.fmax { p.fmax } else { total.fmax };
        total.imin = total.imin.min(p.imin);
        total.imax = total.imax.max(p.imax);
        total.merge_moments(p.n, p.mean, p.m2);
    }

    /// The figures; the histogram is read from `kernel`'s shared counts.
    pub fn finish(&self, kernel: &StatsKernel) -> Figures {
        let total = &self.total;
        let n = total.n;
        let (sum, min, max) = if kernel.dtype.scalar.is_float() {
            let some = |x| (n > 0).then_some(Number::Float(x));
            (Number::Float(self.fsum.value()), some(total.fmin), some(total.fmax))
        } else {
            let some = |x| (n > 0).then_some(Number::Int(x));
            (Number::Int(total.isum), some(total.imin), some(total.imax))
        };
        let histogram = kernel
            .histogram
            .as_ref()
            .map(|h| Histogram { edges: h.edges.clone(), counts: h.counts() });
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
}

/// The figures of rules 1–6, without file or run details.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Elements (rule 1).
    pub count: u64,
    /// NaNs.
    pub nan_count: u64,
    /// Sum.
    pub sum: Number,
    /// Minimum.
    pub min: Option<Number>,
    /// Maximum.
    pub max: Option<Number>,
    /// Mean.
    pub mean: Option<Number>,
    /// Population variance.
    pub variance: Option<Number>,
    /// Sample variance.
    pub variance_sample: Option<Number>,
    /// Histogram.
    pub histogram: Option<Histogram>,
}

impl BlockKernel for StatsKernel {
    type Partial = BlockStats;

    fn process(&self, block: &Block<'_>) -> BlockStats {
        let data = block.data;
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
        dispatch!(F32 => f32, F64 => f64, I8 => i8, I16 => i16, I32 => i32, I64 => i64,
                  U8 => u8, U16 => u16, U32 => u32, U64 => u64)
    }
}

/// Computes the statistics of the array in `path` in one pass of `pipeline` (rules 1–8),
/// reserving the kernel's state from `budget` before the pass.
pub fn stats(
    path: &Path,
    config: &StatsConfig,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<StatsReport, KernelError> {
    let histogram = config.histogram()?;
    let info = open_array(path, config)?;
    // Reserve before allocating (contract rule 2 of sluice_io::memory): a histogram too big for
    // the budget is refused without touching its memory.
    let _state = budget.reserve("the stats histogram", StatsKernel::state_bytes_for(histogram))?;
    let kernel = StatsKernel::new(info.dtype, histogram);
    let itemsize = NonZeroUsize::new(info.dtype.itemsize()).expect("item sizes are 1..=8");
    let mut plan = Plan::new(RecordLayout::Fixed(itemsize));
    if info.data_len() > 0 {
        plan.push_extent(path, info.data_offset, info.data_len())?;
    }
    let mut fold = StatsFold::default();
    let run = pipeline.run_ordered(&plan, &kernel, |p| fold.add(&p))?;
    let f = fold.finish(&kernel);
    Ok(StatsReport {
        file: path.to_path_buf(),
        format: if info.npy.is_some() { "npy" } else { "raw" },
        dtype: info.dtype.descr(),
        fortran_order: info.npy.as_ref().is_some_and(|h| h.fortran_order),
        shape: info.shape,
        count: f.count,
        nan_count: f.nan_count,
        sum: f.sum,
        min: f.min,
        max: f.max,
        mean: f.mean,
        variance: f.variance,
        variance_sample: f.variance_sample,
        histogram: f.histogram,
        run,
    })
}

#[cfg(test)]
pub(crate) mod tests;
