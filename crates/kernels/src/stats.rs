//! Statistics of a typed array in one streaming pass: count, NaNs, sum, min, max, mean,
//! variance, and an optional histogram.
//!
//! The input is a `.npy` file (header parsed by [`crate::npy`]) or a raw file of one
//! [`Scalar`](crate::Scalar) type in one byte order. The pass reads the data extent (after the header) as
//! `Fixed(itemsize)` records; every block yields a [`BlockStats`], and [`StatsKernel::finish`]
//! combines them in a fixed tree
//! over block indices (`dist::tree`).
//!
//! # Contract
//! 1. `count` is the number of elements (`product(shape)`, NumPy's `size`); `nan_count` of them
//!    are NaN. NaNs are left out of every other figure, as NumPy's `nan*` functions do; `n` below
//!    is `count - nan_count`.
//! 2. `sum`: for integer dtypes the exact sum, accumulated in 128 bits and printed as a JSON
//!    integer. For floats: **pairwise** summation (NumPy's algorithm, blocks of 128 in 8
//!    accumulators) over chunks of 1024 values, the chunk sums folded in stream order with
//!    **Neumaier** compensated summation within a block, and the block sums combined in the
//!    canonical tree over block indices (`dist::tree`), each combine a compensated addition. The error is at most
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
//!    since partials combine in a fixed tree over block indices, never in completion order.
//!    A distributed run (`dist`) combines the same blocks in the same tree: the same bits.
//! 8. Bad input is a typed error before the pass starts: a raw file whose size is not a multiple
//!    of the item size, a raw file without a dtype, a dtype or byte order that disagrees with a
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

//!
//! # Modules
//! - `config`: [`StatsConfig`], from fields or hints, and the histogram it asks for (rule 6).
//! - `array`: what a file holds, `.npy` or raw (rule 8): [`open_array`], [`ArrayInfo`].
//! - `kernel`: [`StatsKernel`] (a block's figures, [`BlockStats`]) and [`StatsFold`] (rule 7).
//! - `histogram`: the histogram's edges, bin assignment and counts (rule 6).
//! - `report`: [`Figures`], [`StatsReport`] and [`Number`], as they print in JSON (rule 5).
//! - `axis`: per-column figures of a 2-D array, [`stats_axis0`] and [`AxisReport`].

mod array;
mod axis;
mod config;
mod histogram;
mod kernel;
mod report;

use std::num::NonZeroUsize;
use std::path::Path;

use sluice_io::{Budget, Pipeline, Plan, RecordLayout};

use crate::Error;

pub use array::{ArrayInfo, open_array};
pub use axis::{AxisReport, stats_axis0};
pub use config::{DEFAULT_BINS, StatsConfig};
pub(crate) use kernel::figures;
pub use kernel::{BlockStats, CHUNK, StatsFold, StatsKernel, StatsNode};
pub use report::{Figures, Histogram, Number, StatsReport};

/// Computes the statistics of the array in `path` in one pass of `pipeline` (rules 1–8),
/// reserving the kernel's state from `budget` before the pass.
pub fn stats(
    path: &Path,
    config: &StatsConfig,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<StatsReport, Error> {
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
    let figures = fold.finish(&kernel);
    Ok(StatsReport {
        file: path.to_path_buf(),
        format: if info.npy.is_some() { "npy" } else { "raw" },
        dtype: info.dtype.descr(),
        shape: info.shape,
        fortran_order: info.npy.as_ref().is_some_and(|h| h.fortran_order),
        figures,
        run,
    })
}

#[cfg(test)]
pub(crate) mod tests;
