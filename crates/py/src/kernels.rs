//! `sluice.stats` and `sluice.grep`: one streaming pass of `sluice_kernels` over a file.
//!
//! # Contract
//! 1. Parameters are set through the kernels' hint parser (`Hinted::apply_hint`), so they are
//!    checked and named as the CLI's flags are (an error names the parameter).
//! 2. Both run through [`crate::wait::run`]: GIL released, Ctrl-C cancels, progress in bytes.
//! 3. `grep` returns the matching records' byte offsets as a uint64 array whose buffer is the
//!    `Vec` the pass filled; with `count` or `count_matches`, an int.

use std::path::PathBuf;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use sluice_kernels::{GrepConfig, Hinted, Number, StatsConfig};

use crate::errors::{self, InputError};
use crate::graph::{budget, pipeline};
use crate::wait::{self, Watch};

/// The figures of one `sluice.stats` pass (attributes as the CLI's JSON keys).
#[pyclass(module = "sluice", frozen, get_all)]
#[derive(Debug)]
pub(crate) struct Stats {
    /// The file.
    file: PathBuf,
    /// "npy" or "raw".
    format: String,
    /// The element type, e.g. "f64".
    dtype: String,
    /// The array's shape.
    shape: Vec<u64>,
    /// Elements, NaNs included.
    count: u64,
    /// NaN elements.
    nan_count: u64,
    /// Sum of the non-NaN values (int for integer dtypes: exact).
    sum: PyObject,
    /// Smallest non-NaN value, None if there is none.
    min: PyObject,
    /// Largest non-NaN value.
    max: PyObject,
    /// Mean of the non-NaN values.
    mean: PyObject,
    /// Variance, ddof 0.
    variance: PyObject,
    /// Variance, ddof 1.
    variance_sample: PyObject,
    /// `(counts, edges)` as numpy.histogram returns them, or None without `bins`.
    histogram: PyObject,
    /// The pass's figures: bytes read, seconds, bandwidth, engine, copies (a dict).
    run: PyObject,
}

#[pymethods]
impl Stats {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "sluice.Stats(file={:?}, dtype={}, count={}, nan_count={}, sum={}, min={}, max={}, mean={}, variance={})",
            self.file,
            self.dtype,
            self.count,
            self.nan_count,
            self.sum.bind(py).repr()?,
            self.min.bind(py).repr()?,
            self.max.bind(py).repr()?,
            self.mean.bind(py).repr()?,
            self.variance.bind(py).repr()?,
        ))
    }
}

fn number(py: Python<'_>, n: Option<Number>) -> PyResult<PyObject> {
    Ok(match n {
        None => py.None(),
        Some(Number::Int(i)) => i.into_pyobject(py)?.into_any().unbind(),
        Some(Number::Float(x)) => x.into_pyobject(py)?.into_any().unbind(),
    })
}

/// A serializable value as Python objects (through `json.loads`).
pub(crate) fn to_python<T: serde::Serialize>(py: Python<'_>, v: &T) -> PyResult<PyObject> {
    let text = serde_json::to_string(v)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
}

fn hint<C: Hinted>(c: &mut C, key: &str, value: Option<String>) -> PyResult<()> {
    if let Some(v) = value {
        c.apply_hint(key, &v).map_err(|e| InputError::new_err(errors::message(&e, Some(key))))?;
    }
    Ok(())
}

/// Statistics of a typed array file in one pass; see `sluice.pyi`.
#[pyfunction]
#[pyo3(signature = (path, dtype=None, endian="little", bins=None, range=None, memory=None, *, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn stats(
    py: Python<'_>,
    path: PathBuf,
    dtype: Option<String>,
    endian: Option<&str>,
    bins: Option<u64>,
    range: Option<(f64, f64)>,
    memory: Option<Bound<'_, PyAny>>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<Stats> {
    let mut config = StatsConfig::default();
    hint(&mut config, "dtype", dtype)?;
    // A .npy says its own byte order; "little" is only the raw default.
    if endian != Some("little") || path.extension().is_none_or(|e| e != "npy") {
        hint(&mut config, "endian", endian.map(str::to_string))?;
    }
    hint(&mut config, "bins", bins.map(|b| b.to_string()))?;
    hint(&mut config, "range", range.map(|(lo, hi)| format!("{lo:?},{hi:?}")))?;
    let budget = budget(memory.as_ref())?;
    let (pipeline, cancel, counter) = pipeline(&budget)?;
    let total = std::fs::metadata(&path).map_or(0, |m| m.len());
    let watch = Watch { cancel: &cancel, counter: &counter, total, import: None };
    let r = wait::run(py, watch, progress.as_ref(), || {
        sluice_kernels::stats::stats(&path, &config, &pipeline, &budget)
    })?
    .map_err(|e| errors::kernel(&e))?;
    let f = &r.figures;
    let histogram = match &f.histogram {
        None => py.None(),
        Some(h) => {
            let counts = PyArray1::from_vec(py, h.counts.clone());
            let edges = PyArray1::from_vec(py, h.edges.clone());
            PyTuple::new(py, [counts.into_any(), edges.into_any()])?.into_any().unbind()
        }
    };
    Ok(Stats {
        file: r.file.clone(),
        format: r.format.to_string(),
        dtype: r.dtype.clone(),
        shape: r.shape.clone(),
        count: f.count,
        nan_count: f.nan_count,
        sum: number(py, Some(f.sum))?,
        min: number(py, f.min)?,
        max: number(py, f.max)?,
        mean: number(py, f.mean)?,
        variance: number(py, f.variance)?,
        variance_sample: number(py, f.variance_sample)?,
        histogram,
        run: to_python(py, &r.run)?,
    })
}

/// Lines (or records) of a file that match; see `sluice.pyi`.
#[pyfunction]
#[pyo3(signature = (pattern, path, record_size=None, count_matches=false, fixed=false, *, count=false, ignore_case=false, memory=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn grep(
    py: Python<'_>,
    pattern: String,
    path: PathBuf,
    record_size: Option<u64>,
    count_matches: bool,
    fixed: bool,
    count: bool,
    ignore_case: bool,
    memory: Option<Bound<'_, PyAny>>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<PyObject> {
    let mut config = GrepConfig {
        pattern,
        fixed_strings: fixed,
        ignore_case,
        count_matches,
        count: count || count_matches,
        ..GrepConfig::default()
    };
    hint(&mut config, "record_size", record_size.map(|n| n.to_string()))?;
    config.layout().map_err(|e| errors::kernel(&e))?;
    let budget = budget(memory.as_ref())?;
    let (pipeline, cancel, counter) = pipeline(&budget)?;
    let total = std::fs::metadata(&path).map_or(0, |m| m.len());
    let watch = Watch { cancel: &cancel, counter: &counter, total, import: None };
    let (report, offsets) = wait::run(py, watch, progress.as_ref(), || {
        let mut offsets = Vec::new();
        let r = sluice_kernels::grep::grep_with(&path, &config, &pipeline, &budget, |m| {
            offsets.push(m.offset);
            Ok::<(), sluice_kernels::Error>(())
        });
        r.map(|r| (r, offsets))
    })?
    .map_err(|e| errors::kernel(&e))?;
    Ok(if config.count {
        report.count.into_pyobject(py)?.into_any().unbind()
    } else {
        PyArray1::from_vec(py, offsets).into_any().unbind()
    })
}
