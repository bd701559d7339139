//! The parameters of a k-means run ([`KmeansConfig`]), from fields or hints.

use std::path::PathBuf;

use crate::hints::{self, Hinted};
use crate::{Endian, Error, Scalar};

/// Iterations when none are given (scikit-learn's `max_iter` default).
pub const DEFAULT_MAX_ITER: usize = 300;

/// Relative convergence threshold when none is given (scikit-learn's `tol` default).
pub const DEFAULT_THRESHOLD: f64 = 1e-4;

/// How the first centres are chosen (rule 2).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Init {
    /// Greedy k-means++ on a seeded sample of the records.
    #[default]
    KMeansPlusPlus,
    /// A `.npy` file of shape `(k, d)`, f32 or f64.
    File(PathBuf),
}

/// Parameters of a k-means run. Every field can also be set by a hint of the same name.
#[derive(Debug, Clone, PartialEq)]
pub struct KmeansConfig {
    /// Number of clusters (required, at least 1).
    pub k: usize,
    /// Features per record: the row length of a raw file, or of a 1-d `.npy`; a 2-d `.npy`
    /// must agree.
    pub dims: Option<usize>,
    /// Element type of a raw file (f32 or f64); a `.npy` must agree.
    pub dtype: Option<Scalar>,
    /// Byte order of a raw file (default little); a `.npy` must agree.
    pub endian: Option<Endian>,
    /// The first centres.
    pub init: Init,
    /// Relative convergence threshold: stop when the summed squared centre shift is at most
    /// `threshold` × the mean per-feature variance of the data (scikit-learn's `tol`).
    pub threshold: f64,
    /// Most Lloyd iterations (update passes).
    pub max_iter: usize,
    /// Seed of the k-means++ sampling.
    pub seed: u64,
    /// Where to write the final labels (`.npy`, int32), if anywhere.
    pub labels: Option<PathBuf>,
}

impl Default for KmeansConfig {
    fn default() -> KmeansConfig {
        KmeansConfig {
            k: 0,
            dims: None,
            dtype: None,
            endian: None,
            init: Init::default(),
            threshold: DEFAULT_THRESHOLD,
            max_iter: DEFAULT_MAX_ITER,
            seed: 0,
            labels: None,
        }
    }
}

impl Hinted for KmeansConfig {
    const KEYS: &'static str = "k, dims, dtype, endian, init, threshold, max_iter, seed, labels";

    fn apply_hint(&mut self, key: &str, value: &str) -> Result<(), Error> {
        match key {
            "k" => self.k = hints::parse_usize(key, value)?,
            "dims" => self.dims = Some(hints::parse_usize(key, value)?),
            "dtype" => {
                self.dtype = Some(
                    Scalar::parse(value)
                        .filter(|s| matches!(s, Scalar::F32 | Scalar::F64))
                        .ok_or_else(|| hints::bad_value(key, value, "f32 or f64"))?,
                );
            }
            "endian" => {
                self.endian = Some(
                    Endian::parse(value)
                        .ok_or_else(|| hints::bad_value(key, value, "little or big"))?,
                );
            }
            "init" => {
                self.init = match value.to_ascii_lowercase().as_str() {
                    "k-means++" | "kmeans++" | "k_means++" => Init::KMeansPlusPlus,
                    "" => return Err(hints::bad_value(key, value, "k-means++ or a .npy file")),
                    _ => Init::File(PathBuf::from(value)),
                };
            }
            "threshold" => {
                self.threshold =
                    value
                        .parse::<f64>()
                        .ok()
                        .filter(|t| t.is_finite() && *t >= 0.0)
                        .ok_or_else(|| hints::bad_value(key, value, "a finite number >= 0"))?;
            }
            "max_iter" => self.max_iter = hints::parse_usize(key, value)?,
            "seed" => {
                self.seed = value
                    .parse()
                    .map_err(|_| hints::bad_value(key, value, "a non-negative integer"))?;
            }
            "labels" => self.labels = (!value.is_empty()).then(|| PathBuf::from(value)),
            _ => return Err(hints::unknown(key, Self::KEYS)),
        }
        Ok(())
    }
}

impl KmeansConfig {
    /// A config from hints alone.
    pub fn from_hints<K: AsRef<str>, V: AsRef<str>>(
        pairs: &[(K, V)],
    ) -> Result<KmeansConfig, Error> {
        let mut config = KmeansConfig::default();
        config.apply_hints(pairs)?;
        Ok(config)
    }

    /// Checks the values that need no file: `k ≥ 1`, `max_iter ≥ 1`, `dims ≥ 1`.
    pub fn check(&self) -> Result<(), Error> {
        if self.k == 0 {
            return Err(Error::TooSmall { key: "k", value: 0, min: 1 });
        }
        if self.max_iter == 0 {
            return Err(Error::TooSmall { key: "max_iter", value: 0, min: 1 });
        }
        if self.dims == Some(0) {
            return Err(Error::TooSmall { key: "dims", value: 0, min: 1 });
        }
        Ok(())
    }
}
