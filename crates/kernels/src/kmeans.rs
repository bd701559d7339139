//! k-means clustering by Lloyd's algorithm, one streaming pass of the block pipeline per
//! iteration: `n` records of `d` features (f32 or f64) into `k` clusters.
//!
//! The input is a `.npy` array of shape `(n, d)` in C order (or 1-d with `dims`), or a raw
//! file with a dtype and `dims`. The pass reads the data as `Fixed(d × itemsize)` records; each
//! block yields a [`BlockPartial`] (sums, counts, inertia, farthest records), combined in a
//! tree over the blocks (rule 7). The semantics follow scikit-learn's `KMeans(algorithm="lloyd")`
//! (`sklearn/cluster/_kmeans.py`, `_k_means_lloyd.pyx`, version 1.x); differences are named.
//!
//! # Contract
//! 1. Input: f32 or f64, either byte order. A `.npy` must be 2-d `(n, d)` in C order (a 1-d one
//!    needs `dims`, and its length must be a multiple); `dims`, `dtype` and `endian`, if given,
//!    must agree with the header. A raw file needs `dtype` and `dims`, and a size that is a
//!    multiple of the record size. `1 ≤ k ≤ n`. A NaN or an infinity in the data is an error
//!    naming the record and its byte offset (scikit-learn refuses them too).
//! 2. Init: [`Init::File`], a `(k, d)` f32/f64 `.npy`, cast to the data's type (as
//!    scikit-learn's `check_array(init, dtype=X.dtype)`); or [`Init::KMeansPlusPlus`] (default):
//!    scikit-learn's greedy k-means++ (`2 + ⌊ln k⌋` trials per centre), run on a sample of
//!    `max(10 000, 32k)` records drawn by `seed` (all records when `n` is smaller). The sample
//!    is what keeps the init to one read of a few MB on a file larger than memory; the random
//!    stream is not NumPy's, so seeded inits differ from scikit-learn's.
//! 3. Assignment: each record goes to the first centre with the smallest
//!    `‖c‖² − 2x·c`, computed in the data's type (scikit-learn's expansion; `‖x‖²` is constant
//!    per record). Labels match scikit-learn's except at near-ties within rounding.
//!    Hamerly's bounds (`bounds.rs`) spare the records whose label cannot change, with a margin
//!    for every rounding: the labels are those of the full assignment. Once a pass assigns
//!    few records in full, passes of moves (`moves.rs`) read only the records whose bounds
//!    fail a test that needs no data, and carry the clusters forward.
//! 4. Empty clusters, after the assignment pass (scikit-learn's `_relocate_empty_clusters`):
//!    if some clusters are empty and some record is at a positive distance from its centre,
//!    the empty clusters, in increasing id, take the records farthest from their centres
//!    (squared distance computed directly, in f64), farthest first; a taken record leaves its
//!    cluster's sum and count. Ties in distance go to the earlier record. scikit-learn picks
//!    the same records but, when two or more clusters are empty, pairs them with the empty
//!    clusters in `argpartition`'s unspecified order; with one empty cluster the results agree.
//! 5. Update: a centre is its cluster's sum (f64, records in file order; after passes of moves,
//!    the last full sum plus what the moves since added and took, `moves.rs` rule 2) times
//!    `1 / count` (scikit-learn's `_average_centers`), rounded to the data's type; an empty
//!    cluster that could not be relocated gets the zero vector, as in scikit-learn.
//!    scikit-learn sums f32 data in f32; the f64 sums here are more accurate, so f32 results
//!    differ from scikit-learn's by f32 rounding (about 1e-6 relative), f64 results by f64
//!    rounding.
//! 6. Stopping: after `max_iter` update passes; earlier if the new centres equal the old ones
//!    bitwise (which happens exactly when no label changed: scikit-learn's strict convergence),
//!    or if `Σ_j ‖c_j' − c_j‖² ≤ threshold × mean_f var(x_f)` (scikit-learn's `tol`; the variance
//!    comes from the first pass, by the decomposition of the total sum of squares into
//!    within-cluster inertia and between-cluster terms). Then, unless the centres were unchanged
//!    and no labels are asked for, one assignment pass against the final centres gives the
//!    labels, counts and inertia reported (scikit-learn's final E-step); so `labels` and
//!    `centres` always agree.
//! 7. Determinism: a pass's partials combine in the canonical tree over the pipeline's blocks
//!    (`dist::tree`, leaves numbered by read, `tree.rs`), so results are the same bits whatever
//!    the number of workers, the engine, the order blocks complete in, or the number of ranks
//!    of a distributed run (`dist::kmeans`) reading stripes of the file. The block size changes
//!    the grouping of the f64 sums (and so their last bits); so does whether the budget holds
//!    the bounds, which passes of moves need (`moves.rs` rule 2: about `1e-15` relative per
//!    pass); the CPU changes the rounding of the assignment (fused multiply-adds on AVX2+FMA
//!    machines, see `simd.rs`).
//! 8. Memory: the centres, the fold and the per-block partials in flight
//!    (`(2 + 2·cores) × k × (2d + 4) × 8` bytes) and the k-means++ sample are reserved from the
//!    budget before they are allocated; labels are written as they come, never held. Where the
//!    budget allows (else without them): 12 bytes per record for the bounds, and a copy of the
//!    data, replayed from memory after the first pass (`resident.rs`).
//!
//! # Threads and costs
//! Per pass: `n·k·d` multiply-adds in the assignment (tiles of 16 f64 or 32 f32 records, see
//! `assign.rs`), plus `O(n·d)` for the sums and inertia. The pass is compute-bound for `k·d`
//! above a few tens on an NVMe drive, I/O-bound below. Bounds make the assignment `O(n·d)` for
//! the records that keep their labels; a pass of moves makes them `O(1)` each (their bounds
//! only), and `O(d)` for a record that changes cluster.
//!
//! # Modules
//! - `config`: [`KmeansConfig`], from fields or hints; [`Init`].
//! - `init`: the first centres (rule 2).
//! - `assign`: the hot loop: nearest centres of a tile, and a block's figures (rule 3).
//! - `bounds`: Hamerly's bounds, which spare records the full assignment (exactly, rule 3).
//! - `moves`: passes that read only the records whose bounds fail, and carry the clusters.
//! - `resident`: a stripe that fits the budget, kept in memory after the first pass.
//! - `simd`: the instruction set chosen at run time (the crate's one `unsafe` module).
//! - `kernel`: [`KmeansKernel`], [`BlockPartial`], and the fold with the update step (rules 4–5).
//! - `tree`: a pass's figures in the canonical tree over blocks; stripes for ranks (rule 7).
//! - `report`: [`KmeansReport`] and [`KmeansError`].

mod assign;
mod bounds;
mod config;
mod init;
mod kernel;
mod lean;
mod moves;
mod report;
mod resident;
mod simd;
mod tree;

use std::io::Write;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use sluice_io::{Budget, OutputFile, Pipeline, Reservation, RunStats};

use crate::stats::{ArrayInfo, open_array};
use crate::{Error, Scalar, StatsConfig};

pub use config::{DEFAULT_MAX_ITER, DEFAULT_THRESHOLD, Init, KmeansConfig};
pub use init::PLUSPLUS_SAMPLE;
pub use kernel::{BlockPartial, KmeansKernel};
pub use report::{Iteration, KmeansError, KmeansReport, Stop};

use kernel::Fold;
pub(crate) use tree::{Local, Whole, decode, encode, stripe};

/// The most clusters: labels ride in f32 lanes in the assignment, exact up to 2²⁴.
pub const MAX_K: usize = 1 << 24;

/// The records of an input: where, what, how many.
#[derive(Debug, Clone)]
pub(crate) struct Matrix {
    info: ArrayInfo,
    pub(crate) n: u64,
    pub(crate) d: usize,
}

impl Matrix {
    /// Bytes per record.
    pub(crate) fn record_bytes(&self) -> u64 {
        (self.d * self.info.dtype.itemsize()) as u64
    }
}

/// Checks what `path` holds against rule 1 (all but `k` and NaNs).
fn open_matrix(path: &Path, config: &KmeansConfig) -> Result<Matrix, KmeansError> {
    let stats_config =
        StatsConfig { dtype: config.dtype, endian: config.endian, ..StatsConfig::default() };
    let info = open_array(path, &stats_config)?;
    if !matches!(info.dtype.scalar, Scalar::F32 | Scalar::F64) {
        return Err(Error::UnsupportedDtype {
            path: path.to_path_buf(),
            descr: info.dtype.descr(),
            reason: "k-means runs on f32 or f64".into(),
        });
    }
    let bad = |reason: String| KmeansError::Shape {
        path: path.to_path_buf(),
        shape: info.shape.clone(),
        reason,
    };
    if info.npy.as_ref().is_some_and(|h| h.fortran_order) && info.shape.len() > 1 {
        return Err(bad("Fortran order is not supported; save the array in C order".into()));
    }
    let d = match (info.shape.len(), config.dims) {
        (2, Some(d)) if d as u64 != info.shape[1] => {
            return Err(bad(format!("dims {d} disagrees with the header's {}", info.shape[1])));
        }
        (2, _) => info.shape[1] as usize,
        (1, Some(d)) if info.count % d as u64 == 0 => d,
        (1, Some(d)) => {
            return Err(bad(format!(
                "{} values are not a whole number of {d}-value records",
                info.count
            )));
        }
        (1, None) => return Err(bad("records need a length: give dims".into())),
        (r, _) => return Err(bad(format!("{r}-d, expected (n, d)"))),
    };
    if d == 0 {
        return Err(bad("records of no features".into()));
    }
    let n = info.count / d as u64;
    Ok(Matrix { info, n, d })
}

/// Clusters the records of `path` (rules 1–8), one pass of `pipeline` per iteration plus the
/// final assignment, reserving the state from `budget`.
pub fn kmeans(
    path: &Path,
    config: &KmeansConfig,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<KmeansReport, KmeansError> {
    let (m, _state) = setup(path, config, budget)?;
    let centres = first_centres(&m, config, budget)?;
    let stripe = tree::stripe(&m, pipeline.block_size(), 0, 1);
    let target = config.labels.clone().unwrap_or_default();
    let write_err = |e| KmeansError::Write { path: target.clone(), source: e };
    let mut out =
        config.labels.as_deref().map(OutputFile::create).transpose().map_err(write_err)?;
    if let Some(o) = out.as_mut() {
        o.write_all(&sluice_io::npy_header("'<i4'", &[m.n], false)).map_err(write_err)?;
    }
    let mut failed = None;
    let report = fit(&m, config, centres, stripe, pipeline, budget, &mut Alone, |labels| {
        if let (Some(o), None) = (out.as_mut(), &failed) {
            let bytes: Vec<u8> = labels.iter().flat_map(|j| j.to_le_bytes()).collect();
            failed = o.write_all(&bytes).err();
        }
    })?;
    if let Some(e) = failed {
        return Err(write_err(e));
    }
    if let Some(o) = out {
        o.commit().map_err(write_err)?;
    }
    Ok(report)
}

/// Opens and checks the input (rule 1) and reserves the state (rule 8): what every process of
/// a run does first.
pub(crate) fn setup(
    path: &Path,
    config: &KmeansConfig,
    budget: &Budget,
) -> Result<(Matrix, Reservation), KmeansError> {
    config.check()?;
    let m = open_matrix(path, config)?;
    let (k, d) = (config.k, m.d);
    if k > MAX_K {
        return Err(Error::BadValue {
            key: "k".into(),
            value: k.to_string(),
            expected: format!("at most {MAX_K}"),
        });
    }
    if k as u64 > m.n {
        return Err(KmeansError::TooFewRecords { path: path.to_path_buf(), n: m.n, k });
    }
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get) as u64;
    // Partials in flight, the fold, and up to 2·64 + 2 tree nodes (`dist::tree` rule 2).
    let state = (2 + 2 * cores + 130) * k as u64 * (2 * d as u64 + 4) * 8;
    let state = budget.reserve("the k-means centres and partials", state)?;
    Ok((m, state))
}

/// The first centres (rule 2), as values of the data's type.
pub(crate) fn first_centres(
    m: &Matrix,
    config: &KmeansConfig,
    budget: &Budget,
) -> Result<Vec<f64>, KmeansError> {
    let scalar = m.info.dtype.scalar;
    Ok(match &config.init {
        Init::File(p) => init::read_centres(p, config.k, m.d, scalar)?,
        Init::KMeansPlusPlus => {
            let c = init::plusplus(m, config.k, config.seed, budget)?;
            c.into_iter()
                .map(|x| if scalar == Scalar::F32 { f64::from(x as f32) } else { x })
                .collect()
        }
    })
}

/// How a pass's figures reach the whole stream's: alone ([`Alone`]), or by an exchange between
/// the ranks of a distributed run (`dist::kmeans`). Every process of a run calls it once per
/// pass, with its own outcome; an error on any process is an error on all.
pub(crate) trait Combiner {
    fn combine(
        &mut self,
        local: Result<Local, KmeansError>,
        k: usize,
    ) -> Result<Whole, KmeansError>;
}

/// One process holding all the data.
pub(crate) struct Alone;

impl Combiner for Alone {
    fn combine(
        &mut self,
        local: Result<Local, KmeansError>,
        k: usize,
    ) -> Result<Whole, KmeansError> {
        let mut whole = Whole::new(k);
        whole.add(local?);
        Ok(whole)
    }
}

/// Lloyd's iterations from `centres` over this process's `stripe` (rules 3–7), then the final
/// assignment, whose labels (this stripe's, in order) go to `labels`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit(
    m: &Matrix,
    config: &KmeansConfig,
    mut centres: Vec<f64>,
    stripe: tree::Stripe,
    pipeline: &Pipeline,
    budget: &Budget,
    combiner: &mut impl Combiner,
    labels: impl FnMut(&[i32]),
) -> Result<KmeansReport, KmeansError> {
    let (k, d, scalar) = (config.k, m.d, m.info.dtype.scalar);
    let mut run = RunStats::default();
    let mut history = Vec::new();
    let mut tolerance = 0.0;
    let mut stop = Stop::MaxIter;
    let records = stripe.len / m.record_bytes();
    let store = bounds::BoundStore::new(records, budget, pipeline);
    let mut resident = resident::Resident::new(stripe.len, budget, pipeline);
    let pass_bounds = |c: &[f64]| store.as_ref().map(|s| s.begin(c, d, scalar));
    // The clusters a pass of moves carries forward, and their reference centres (`moves.rs`).
    let mut carried: Option<(Fold, Arc<Vec<f64>>)> = None;
    let mut begun = None;
    let mut i = 0;
    while i < config.max_iter {
        let start = *begun.get_or_insert_with(Instant::now);
        let mut kernel = KmeansKernel::new(m.info.dtype, d, &centres, true, false)
            .with_bounds(pass_bounds(&centres));
        if let Some((_, refs)) = &carried {
            kernel = kernel.moves(Arc::clone(refs));
        }
        let local = tree::pass(m, stripe, kernel, pipeline, k, resident.as_mut(), |_| {});
        if let Ok(l) = &local {
            run.merge(&l.run);
        }
        let (sums, far, bad) = combiner.combine(local, k)?.finish(k, d);
        if let Some(record) = bad {
            return Err(non_finite(m, record));
        }
        let lacking = sums.lacking;
        let of_moves = carried.is_some();
        let (mut fold, refs, inertia, relocated) = match carried.take() {
            Some((mut fold, refs)) => {
                if !moves::apply(&mut fold, &sums) {
                    // `moves.rs` rule 4: the same pass again, reading every record.
                    if let Some(s) = &store {
                        s.assigned();
                    }
                    continue;
                }
                let inertia = moves::inertia(&fold, &refs, &centres, d);
                (fold, refs, inertia, 0)
            }
            None => {
                let counts = sums.counts.iter().map(|&n| n as u64).collect();
                let mut fold = Fold { sums: sums.sums, counts, inertia: sums.inertia, far };
                if i == 0 {
                    tolerance = config.threshold * mean_variance(&fold, &centres, m.n, d);
                }
                let inertia = fold.inertia();
                let moved = fold.relocate(d, &centres);
                if let Some(s) = &store {
                    moved.iter().for_each(|&(index, new)| s.relabel(index, new));
                }
                (fold, Arc::new(centres.clone()), inertia, moved.len())
            }
        };
        let next = fold.centres(d, scalar);
        let shift: f64 = next.iter().zip(&centres).map(|(a, b)| (a - b) * (a - b)).sum();
        let unchanged = next == centres;
        centres = next;
        let seconds = start.elapsed().as_secs_f64();
        begun = None;
        let assigned = store.as_ref().map_or(records, |s| s.assigned());
        history.push(Iteration { inertia, shift, relocated, assigned, moves: of_moves, seconds });
        i += 1;
        if store.is_some() && !lacking && moves::worth(sums.assigned, sums.records) {
            fold.far = Default::default();
            carried = Some((fold, refs));
        }
        if unchanged {
            stop = Stop::Unchanged;
            break;
        }
        if shift <= tolerance {
            stop = Stop::Threshold;
            break;
        }
    }
    // The final assignment (rule 6): labels, counts and inertia against the final centres.
    let kernel = KmeansKernel::new(m.info.dtype, d, &centres, false, true)
        .with_bounds(pass_bounds(&centres));
    let local = tree::pass(m, stripe, kernel, pipeline, k, resident.as_mut(), labels);
    if let Ok(l) = &local {
        run.merge(&l.run);
    }
    let (sums, _, bad) = combiner.combine(local, k)?.finish(k, d);
    if let Some(record) = bad {
        return Err(non_finite(m, record));
    }
    let inertia = sums.inertia.iter().sum();
    let counts = sums.counts.iter().map(|&n| n as u64).collect();
    let fit = report::Fit { centres, counts, inertia, history, stop, tolerance };
    Ok(KmeansReport::new(m, config, fit, run))
}

/// The error for a NaN or an infinity in `record` (rule 1).
fn non_finite(m: &Matrix, record: u64) -> KmeansError {
    let offset = m.info.data_offset + record * (m.d * m.info.dtype.itemsize()) as u64;
    KmeansError::NonFinite { path: m.info.path.clone(), record, offset }
}

/// `mean_f var(x_f)` (population variance) from the first pass's fold against `centres`,
/// before the update: `Σ_i ‖x_i − μ‖² = inertia + Σ_j (2(c_j − μ)·(S_j − n_j c_j) +
/// n_j ‖c_j − μ‖²)`, with `S_j` and `n_j` the cluster's sum and count and `μ = Σ_j S_j / n`.
/// Every term is a sum of non-negative parts or vanishes at convergence, so there is no
/// cancellation of the textbook `Σx² − nμ²`.
fn mean_variance(fold: &Fold, centres: &[f64], n: u64, d: usize) -> f64 {
    let mut mu = vec![0.0; d];
    for s in fold.sums.chunks_exact(d) {
        mu.iter_mut().zip(s).for_each(|(m, x)| *m += x);
    }
    mu.iter_mut().for_each(|m| *m /= n as f64);
    let mut total = fold.inertia();
    for ((s, c), &nj) in fold.sums.chunks_exact(d).zip(centres.chunks_exact(d)).zip(&fold.counts) {
        let nj = nj as f64;
        for f in 0..d {
            let gap = c[f] - mu[f];
            total += 2.0 * gap * (s[f] - nj * c[f]) + nj * gap * gap;
        }
    }
    total.max(0.0) / (n as f64 * d as f64)
}

#[cfg(test)]
mod tests;
