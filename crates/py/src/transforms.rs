//! `sluice.kmeans` (a streaming pass per iteration over a file) and `sluice.fft` (the BSP FFT
//! on a NumPy vector), from `sluice_kernels`.
//!
//! # Contract
//! 1. `kmeans` sets its parameters through the kernel's hint parser, as the CLI's flags, and runs
//!    through [`crate::wait::run`] (GIL released, Ctrl-C cancels, progress in bytes).
//! 2. `fft` copies the input once into the buffer the transform works in; that buffer becomes
//!    the result array (no second copy). It runs through [`crate::wait::run`] (GIL released);
//!    Ctrl-C sets the flag the FFT checks between its steps (`Fft::with_cancel`).
//! 3. BSP failures are `BspError`; a bad length or process count is `InputError`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use numpy::{Complex64, PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use sluice_kernels::fft::Direction;
use sluice_kernels::{Hinted, KmeansConfig, KmeansError};

use crate::errors::{self, BspError, InputError};
use crate::graph::{budget, pipeline};
use crate::wait::{self, Watch};

/// What one `sluice.kmeans` run found.
#[pyclass(module = "sluice", frozen, get_all)]
#[derive(Debug)]
pub(crate) struct Kmeans {
    /// Cluster centres, k × d float64.
    centres: Py<PyArray2<f64>>,
    /// Records per cluster (uint64).
    counts: Py<PyArray1<u64>>,
    /// Sum of squared distances of the records to their centres.
    inertia: f64,
    /// Iterations run.
    iterations: usize,
    /// Why it stopped (`Converged`, `MaxIter` ...).
    stop: String,
    /// Records n and features d.
    n: u64,
    d: usize,
    /// The pass figures of the whole run (a dict).
    run: PyObject,
}

#[pymethods]
impl Kmeans {
    fn __repr__(&self) -> String {
        format!(
            "sluice.Kmeans(n={}, d={}, iterations={}, stop={}, inertia={:e})",
            self.n, self.d, self.iterations, self.stop, self.inertia
        )
    }
}

fn kmeans_error(e: &KmeansError) -> PyErr {
    errors::kernel(e)
}

/// k-means (Lloyd) over the records of `path`; see `sluice.pyi`.
#[pyfunction]
#[pyo3(signature = (path, k, *, dims=None, dtype=None, endian=None, init=None, threshold=None, max_iter=None, seed=None, labels=None, memory=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn kmeans(
    py: Python<'_>,
    path: PathBuf,
    k: usize,
    dims: Option<usize>,
    dtype: Option<String>,
    endian: Option<String>,
    init: Option<String>,
    threshold: Option<f64>,
    max_iter: Option<usize>,
    seed: Option<u64>,
    labels: Option<PathBuf>,
    memory: Option<Bound<'_, PyAny>>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<Kmeans> {
    let mut config = KmeansConfig::default();
    let hints = [
        ("k", Some(k.to_string())),
        ("dims", dims.map(|d| d.to_string())),
        ("dtype", dtype),
        ("endian", endian),
        ("init", init),
        ("threshold", threshold.map(|t| format!("{t:?}"))),
        ("max_iter", max_iter.map(|m| m.to_string())),
        ("seed", seed.map(|s| s.to_string())),
        ("labels", labels.map(|l| l.to_string_lossy().into_owned())),
    ];
    for (key, value) in hints {
        if let Some(v) = value {
            config
                .apply_hint(key, &v)
                .map_err(|e| InputError::new_err(errors::message(&e, Some(key))))?;
        }
    }
    let budget = budget(memory.as_ref())?;
    let (pipeline, cancel, counter) = pipeline(&budget)?;
    let file = std::fs::metadata(&path).map_or(0, |m| m.len());
    let passes = config.max_iter as u64 + 1;
    let watch = Watch {
        cancel: &cancel,
        counter: &counter,
        total: file.saturating_mul(passes),
        import: None,
    };
    let r = wait::run(py, watch, progress.as_ref(), || {
        sluice_kernels::kmeans::kmeans(&path, &config, &pipeline, &budget)
    })?
    .map_err(|e| kmeans_error(&e))?;
    let flat: Vec<f64> = r.centres.iter().flatten().copied().collect();
    let centres = PyArray1::from_vec(py, flat).reshape([r.k, r.d])?;
    Ok(Kmeans {
        centres: centres.unbind(),
        counts: PyArray1::from_vec(py, r.counts.clone()).unbind(),
        inertia: r.inertia,
        iterations: r.iterations,
        stop: format!("{:?}", r.stop),
        n: r.n,
        d: r.d,
        run: crate::kernels::to_python(py, &r.run)?,
    })
}

/// The FFT of a complex vector of length 2^k on `procs` BSP processes; see `sluice.pyi`.
#[pyfunction]
#[pyo3(signature = (x, *, procs=None, inverse=false))]
pub(crate) fn fft<'py>(
    py: Python<'py>,
    x: Bound<'py, PyAny>,
    procs: Option<usize>,
    inverse: bool,
) -> PyResult<Bound<'py, PyArray1<Complex64>>> {
    let np = py.import("numpy")?;
    let a = np.call_method1("ascontiguousarray", (x, numpy::dtype::<Complex64>(py)))?;
    let a = a.downcast_into::<PyArray1<Complex64>>()?;
    let mut data = a.readonly().as_slice()?.to_vec();
    let n = data.len();
    // As the CLI: the BSP root's processors (SLUICE_BSP_MAX_P, else the hardware threads).
    let cores = sluice_bsp::ExecConfig::default().root_p() as usize;
    let p = procs.unwrap_or_else(|| sluice_kernels::fft::default_procs(n, cores));
    // On a worker with the GIL released; Ctrl-C sets the flag the FFT checks between steps.
    let cancel = Arc::new(AtomicBool::new(false));
    let counter = AtomicU64::new(0);
    let watch = Watch { cancel: &cancel, counter: &counter, total: 0, import: None };
    let direction = if inverse { Direction::Inverse } else { Direction::Forward };
    let flag = cancel.clone();
    let done = wait::run(py, watch, None, || {
        sluice_kernels::fft::transform_cancellable(&mut data, p, direction, Some(flag))
    })?;
    done.map_err(|e| match e {
        sluice_kernels::Error::Io(sluice_io::Error::Cancelled) => {
            pyo3::exceptions::PyKeyboardInterrupt::new_err("fft: interrupted")
        }
        sluice_kernels::Error::Bsp(_) => BspError::new_err(errors::message(&e, Some("fft"))),
        _ => InputError::new_err(errors::message(&e, Some("fft"))),
    })?;
    Ok(PyArray1::from_vec(py, data))
}
