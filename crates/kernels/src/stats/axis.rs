//! Per-column statistics of a 2-D array (NumPy's `nanmean(a, axis=0)` and friends).
//!
//! # Contract
//! 1. The array is a 2-D `.npy` of shape `(rows, cols)`; anything else is
//!    [`Error::NotAMatrix`]. Column `j`'s figures are those of rules 1–5 of [`crate::stats`]
//!    over `a[:, j]`, the same as a one-column array of those values would give.
//! 2. C order: a row is a record (`Fixed(cols × itemsize)`), so a block holds whole rows; each
//!    block's values are gathered column by column (one copy of the block, a column at a time)
//!    and each column's run taken as one block of the whole-array kernel. Fortran order: column
//!    `j` is contiguous, one extent of the plan; a read never crosses an extent, so every block
//!    belongs to one column, named by its extent index. No copy.
//! 3. Each column's blocks fold in stream order in their own canonical tree, so the figures are
//!    bitwise reproducible for a given block size and order (rule 7 of [`crate::stats`]).
//! 4. No histogram: `bins`/`range` with per-column statistics is [`Error::BadValue`].
//!
//! # Threads and costs
//! Per block, C order: `cols` runs of the whole-array kernel over `rows_in_block` values each, a
//! scratch vector of one column's bytes, and a partial of `cols` [`BlockStats`] (112 bytes
//! each: for very wide arrays, more than the block's own bytes when a block holds fewer than
//! 14 rows of f64). State reserved from the budget before the pass: the per-column folds and
//! partials in flight, `cols × COLUMN_STATE` bytes (about 22 KiB per column).

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sluice_io::{Block, BlockKernel, Budget, Pipeline, Plan, RecordLayout, RunStats};

use crate::Error;

use super::{BlockStats, Figures, StatsConfig, StatsFold, StatsKernel, StatsNode, open_array};

/// Bytes reserved per column: its fold (a tree node per level, at most 64) and its figures in
/// the partials in flight, up to 128 (the pipeline's reorder window is `2 × max(buffers, 16)`
/// reads, 68 with the default settings on this kind of machine; a run with a deeper queue can
/// hold more than reserved).
const COLUMN_STATE: u64 =
    (64 * std::mem::size_of::<StatsNode>() + 128 * std::mem::size_of::<BlockStats>()) as u64;

/// Bytes reserved per column (for the docs' figure, checked by a test).
#[cfg(test)]
pub(super) fn column_state() -> u64 {
    COLUMN_STATE
}

/// Per-column figures of a 2-D array.
#[derive(Debug, Clone, Serialize)]
pub struct AxisReport {
    /// The file.
    pub file: PathBuf,
    /// The dtype as a numpy descr (`<f8`).
    pub dtype: String,
    /// The shape `(rows, cols)`.
    pub shape: Vec<u64>,
    /// True if and only if the `.npy` header said Fortran order.
    pub fortran_order: bool,
    /// The axis the figures were taken along (0: one entry per column).
    pub axis: usize,
    /// The figures of each column, in column order.
    pub columns: Vec<Figures>,
    /// Statistics of the pass.
    pub run: RunStats,
}

/// The kernel of rule 2: each block's figures per column, as `(column, figures)`.
#[derive(Debug)]
struct AxisKernel {
    inner: StatsKernel,
    cols: usize,
    itemsize: usize,
    fortran: bool,
}

impl BlockKernel for AxisKernel {
    type Partial = Vec<(usize, BlockStats)>;

    fn process(&self, block: &Block<'_>) -> Self::Partial {
        if self.fortran {
            return vec![(block.extent, self.inner.block_stats(block.data))];
        }
        let row = self.cols * self.itemsize;
        let rows = block.data.len() / row;
        let mut column = Vec::with_capacity(rows * self.itemsize);
        (0..self.cols)
            .map(|j| {
                column.clear();
                let at = j * self.itemsize;
                for r in block.data.chunks_exact(row) {
                    column.extend_from_slice(&r[at..at + self.itemsize]);
                }
                (j, self.inner.block_stats(&column))
            })
            .collect()
    }
}

/// Computes the figures of every column of the 2-D array in `path` (rules 1–4), reserving the
/// per-column state from `budget` before the pass.
pub fn stats_axis0(
    path: &Path,
    config: &StatsConfig,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<AxisReport, Error> {
    if let Some(bins) = config.bins {
        return Err(Error::BadValue {
            key: "bins".into(),
            value: bins.to_string(),
            expected: "available with per-column statistics (histograms are whole-array only)"
                .into(),
        });
    }
    if config.range.is_some() {
        return Err(Error::BadValue {
            key: "range".into(),
            value: format!("{:?}", config.range),
            expected: "available with per-column statistics (histograms are whole-array only)"
                .into(),
        });
    }
    let info = open_array(path, config)?;
    let fortran = info.npy.as_ref().is_some_and(|h| h.fortran_order);
    let (rows, cols) = match (&info.npy, &info.shape[..]) {
        (Some(_), &[rows, cols]) => (rows, cols),
        _ => return Err(Error::NotAMatrix { path: path.to_path_buf(), shape: info.shape }),
    };
    let too_big = || Error::NotAMatrix { path: path.to_path_buf(), shape: vec![rows, cols] };
    let ncols = usize::try_from(cols).map_err(|_| too_big())?;
    let _state = budget.reserve("the per-column figures", COLUMN_STATE.saturating_mul(cols))?;
    let itemsize = info.dtype.itemsize();
    let kernel =
        AxisKernel { inner: StatsKernel::new(info.dtype, None), cols: ncols, itemsize, fortran };
    let mut folds = vec![StatsFold::default(); ncols];
    let run = if rows == 0 || cols == 0 {
        pipeline.run_ordered(&Plan::new(RecordLayout::Fixed(NonZeroUsize::MIN)), &kernel, |_| {})?
    } else if fortran {
        let size = NonZeroUsize::new(itemsize).expect("item sizes are 1..=8");
        let mut plan = Plan::new(RecordLayout::Fixed(size));
        let column = rows * itemsize as u64;
        for j in 0..cols {
            plan.push_extent(path, info.data_offset + j * column, column)?;
        }
        pipeline.run_ordered(&plan, &kernel, |p| add(&mut folds, &p))?
    } else {
        let row = ncols.checked_mul(itemsize).and_then(NonZeroUsize::new).ok_or_else(too_big)?;
        let mut plan = Plan::new(RecordLayout::Fixed(row));
        plan.push_extent(path, info.data_offset, info.data_len())?;
        pipeline.run_ordered(&plan, &kernel, |p| add(&mut folds, &p))?
    };
    let columns = folds.iter().map(|f| f.finish(&kernel.inner)).collect();
    Ok(AxisReport {
        file: path.to_path_buf(),
        dtype: info.dtype.descr(),
        shape: vec![rows, cols],
        fortran_order: fortran,
        axis: 0,
        columns,
        run,
    })
}

/// Adds one block's per-column figures to the columns' folds (rule 3).
fn add(folds: &mut [StatsFold], partial: &[(usize, BlockStats)]) {
    for (j, stats) in partial {
        folds[*j].add(stats);
    }
}
