//! The result of a k-means run ([`KmeansReport`], as it prints in JSON) and the name of its
//! errors ([`KmeansError`], an alias of the crate's [`Error`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sluice_io::{OutputFile, RunStats};

use super::{Init, KmeansConfig, Matrix};
use crate::{Error, Scalar};

/// What a k-means run returns on error: the crate's one [`Error`] enum (its `Shape`,
/// `TooFewRecords`, `NonFinite`, `Init` and `Write` variants are k-means's own). The name stays so
/// the k-means code reads as before.
pub type KmeansError = Error;

/// Why the iterations stopped (rule 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// The centres did not change: no label changed (scikit-learn's strict convergence).
    Unchanged,
    /// The centre shift fell to the threshold.
    Threshold,
    /// `max_iter` passes ran.
    MaxIter,
}

/// The figures of one update pass.
#[derive(Debug, Clone, Serialize)]
pub struct Iteration {
    /// Σ of squared distances of the records to the centres they were assigned to in this pass
    /// (the centres at the start of the pass); after a pass of moves, from the clusters'
    /// moments (`moves.rs` rule 3: exact but for rounding).
    pub inertia: f64,
    /// Σ_j ‖c_j' − c_j‖²: how far the update moved the centres.
    pub shift: f64,
    /// Empty clusters given a far record (rule 4).
    pub relocated: usize,
    /// Records assigned in full (summed over the ranks under mpirun); the others kept their
    /// labels by Hamerly's bounds (`bounds.rs`), exactly.
    pub assigned: u64,
    /// A pass of moves (`moves.rs`): it read only the records whose bounds failed the test
    /// without reading them, and carried the clusters forward.
    pub moves: bool,
    /// Wall time of the pass and the update.
    pub seconds: f64,
}

/// The outcome of the iterations, before it is dressed as a report.
#[derive(Debug)]
pub(super) struct Fit {
    pub(super) centres: Vec<f64>,
    pub(super) counts: Vec<u64>,
    pub(super) inertia: f64,
    pub(super) history: Vec<Iteration>,
    pub(super) stop: Stop,
    pub(super) tolerance: f64,
}

/// The result of [`kmeans`](super::kmeans()).
#[derive(Debug, Clone, Serialize)]
pub struct KmeansReport {
    /// The input.
    pub file: PathBuf,
    /// `npy` or `raw`.
    pub format: &'static str,
    /// The numpy descr of the data (`<f8`).
    pub dtype: String,
    /// Records.
    pub n: u64,
    /// Features per record.
    pub d: usize,
    /// Clusters.
    pub k: usize,
    /// `k-means++` or the centres file.
    pub init: String,
    /// The k-means++ seed.
    pub seed: u64,
    /// The relative threshold, and the absolute tolerance it came to (rule 6).
    pub threshold: f64,
    /// `threshold × mean per-feature variance`.
    pub tolerance: f64,
    /// Most iterations allowed.
    pub max_iter: usize,
    /// Update passes run.
    pub iterations: usize,
    /// Why they stopped.
    pub stop: Stop,
    /// The final centres, `k` rows of `d` (values of the data's type).
    pub centres: Vec<Vec<f64>>,
    /// Records per cluster in the final assignment.
    pub counts: Vec<u64>,
    /// Σ of squared distances of the records to their final centres.
    pub inertia: f64,
    /// Per update pass: inertia, shift, relocations, seconds.
    pub history: Vec<Iteration>,
    /// Where the labels went, if anywhere.
    pub labels: Option<PathBuf>,
    /// The figures of all passes together.
    pub run: RunStats,
    #[serde(skip)]
    scalar: Scalar,
}

impl KmeansReport {
    pub(super) fn new(m: &Matrix, config: &KmeansConfig, fit: Fit, run: RunStats) -> KmeansReport {
        KmeansReport {
            file: m.info.path.clone(),
            format: if m.info.npy.is_some() { "npy" } else { "raw" },
            dtype: m.info.dtype.descr(),
            n: m.n,
            d: m.d,
            k: config.k,
            init: match &config.init {
                Init::KMeansPlusPlus => "k-means++".into(),
                Init::File(p) => p.display().to_string(),
            },
            seed: config.seed,
            threshold: config.threshold,
            tolerance: fit.tolerance,
            max_iter: config.max_iter,
            iterations: fit.history.len(),
            stop: fit.stop,
            centres: fit.centres.chunks_exact(m.d).map(<[f64]>::to_vec).collect(),
            counts: fit.counts,
            inertia: fit.inertia,
            history: fit.history,
            labels: config.labels.clone(),
            run,
            scalar: m.info.dtype.scalar,
        }
    }

    /// Writes the centres to `path` as a `(k, d)` `.npy` of the data's type, little-endian
    /// (beside, then renamed).
    pub fn write_centres(&self, path: &Path) -> Result<(), KmeansError> {
        let err = |source| KmeansError::Write { path: path.to_path_buf(), source };
        let mut out = OutputFile::create(path).map_err(err)?;
        let descr = if self.scalar == Scalar::F32 { "'<f4'" } else { "'<f8'" };
        let mut bytes = sluice_io::npy_header(descr, &[self.k as u64, self.d as u64], false);
        for &c in self.centres.iter().flatten() {
            if self.scalar == Scalar::F32 {
                bytes.extend_from_slice(&(c as f32).to_le_bytes());
            } else {
                bytes.extend_from_slice(&c.to_le_bytes());
            }
        }
        out.write_all(&bytes).map_err(err)?;
        out.commit().map_err(err)
    }
}
