//! The figures of a pass ([`Figures`]) and the report around them ([`StatsReport`]), as they
//! print in JSON (rule 5).

use std::path::PathBuf;

use serde::{Serialize, Serializer};
use sluice_io::RunStats;

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
    /// The figures of rules 1–6, flattened into this object in JSON (`count`, `nan_count`, `sum`,
    /// ... right after `fortran_order`).
    #[serde(flatten)]
    pub figures: Figures,
    /// Statistics of the pass.
    pub run: RunStats,
}

/// The figures of rules 1–6, without file or run details.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
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
}
