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

#[cfg(test)]
mod tests {
    use sluice_io::RunStats;

    use super::*;

    /// The JSON of a report is the CLI's output (`sluice stats --json`): `Figures` is flattened into
    /// the report, so its keys sit between `fortran_order` and `run` in the order they always had,
    /// and `histogram` is left out when there is none (issue 10: the report embeds `Figures`).
    #[test]
    fn rule5_report_json_keys_keep_their_order() {
        let make = |histogram| StatsReport {
            file: PathBuf::from("a.npy"),
            format: "npy",
            dtype: "<f8".into(),
            shape: vec![2, 3],
            fortran_order: false,
            figures: Figures {
                count: 6,
                nan_count: 1,
                sum: Number::Float(f64::INFINITY),
                min: Some(Number::Float(-1.5)),
                max: Some(Number::Int(73_786_976_294_838_206_460)),
                mean: None,
                variance: Some(Number::Float(f64::NAN)),
                variance_sample: None,
                histogram,
            },
            run: RunStats::default(),
        };
        let run = serde_json::to_string(&RunStats::default()).unwrap();
        let h = Histogram { edges: vec![0.0, 0.5, 1.0], counts: vec![3, 2] };
        let want = [
            r#"{"file":"a.npy","format":"npy","dtype":"<f8","shape":[2,3],"fortran_order":false,"count":6,"nan_count":1,"sum":"inf","min":-1.5,"max":73786976294838206460,"mean":null,"variance":"nan","variance_sample":null"#,
            r#"{"file":"a.npy","format":"npy","dtype":"<f8","shape":[2,3],"fortran_order":false,"count":6,"nan_count":1,"sum":"inf","min":-1.5,"max":73786976294838206460,"mean":null,"variance":"nan","variance_sample":null,"histogram":{"edges":[0.0,0.5,1.0],"counts":[3,2]}"#,
        ];
        for (report, want) in [make(None), make(Some(h))].iter().zip(want) {
            let got = serde_json::to_string(report).unwrap();
            assert_eq!(got, format!("{want},\"run\":{run}}}"));
        }
    }
}
