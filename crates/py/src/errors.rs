//! The exception classes and the mapping from the library error types.
//!
//! # Contract
//! 1. Every library error becomes a [`SluiceError`] subclass: [`StoreCorrupt`] for a store that
//!    fails its checks, [`BudgetError`] for a request over the memory budget, [`BspError`] for
//!    the BSP layer, [`InputError`] for everything else a user can fix (bad files, bad
//!    parameters, unknown vertices).
//! 2. The message is the CLI's: the error and its sources joined by ": " (as `sluice: {err:#}`
//!    prints them, without the `sluice: ` prefix), so it names the file (and line or byte
//!    offset where there is one).
//! 3. A run stopped by the cancel flag ([`sluice_io::Error::Cancelled`], the graph import's
//!    `Interrupted`) becomes `KeyboardInterrupt`.

use std::error::Error as StdError;

use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;

pyo3::create_exception!(sluice, SluiceError, PyException, "Base class of every Sluice error.");
pyo3::create_exception!(
    sluice,
    InputError,
    SluiceError,
    "Bad input: a file that cannot be read or parsed, a bad parameter, an unknown vertex."
);
pyo3::create_exception!(
    sluice,
    StoreCorrupt,
    SluiceError,
    "A grid store fails its checksums, is truncated, inconsistent, or of another format version."
);
pyo3::create_exception!(
    sluice,
    BudgetError,
    SluiceError,
    "A request over the memory budget (`memory=`): nothing was allocated."
);
pyo3::create_exception!(sluice, BspError, SluiceError, "An error of the BSP layer.");

/// The error and its sources joined by ": " (rule 2), after `context` when there is one.
pub(crate) fn message(err: &dyn StdError, context: Option<&str>) -> String {
    let mut parts: Vec<String> = context.map(str::to_string).into_iter().collect();
    let mut next = Some(err);
    while let Some(e) = next {
        parts.push(e.to_string());
        next = e.source();
    }
    parts.join(": ")
}

/// Which class an I/O pipeline error belongs to (rules 1 and 3).
fn io_class(e: &sluice_io::Error, msg: String) -> PyErr {
    match e {
        sluice_io::Error::Cancelled => PyKeyboardInterrupt::new_err(msg),
        sluice_io::Error::OverBudget { .. } => BudgetError::new_err(msg),
        _ => InputError::new_err(msg),
    }
}

/// A graph error as an exception, its message after `context` (e.g. `open STORE`).
pub(crate) fn graph(e: &sluice_graph::Error, context: Option<&str>) -> PyErr {
    use sluice_graph::Error as G;
    let msg = message(e, context);
    match e {
        G::Corrupt { .. } | G::Version { .. } => StoreCorrupt::new_err(msg),
        G::Pipeline(io) => io_class(io, msg),
        G::Interrupted => PyKeyboardInterrupt::new_err(msg),
        _ => InputError::new_err(msg),
    }
}

/// A kernel error as an exception.
pub(crate) fn kernel(e: &sluice_kernels::Error) -> PyErr {
    let msg = message(e, None);
    match e {
        sluice_kernels::Error::Io(io) => io_class(io, msg),
        _ => InputError::new_err(msg),
    }
}

/// An I/O pipeline or budget error as an exception, its message after `context`.
pub(crate) fn io(e: &sluice_io::Error, context: Option<&str>) -> PyErr {
    io_class(e, message(e, context))
}

/// Adds the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SluiceError", py.get_type::<SluiceError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("StoreCorrupt", py.get_type::<StoreCorrupt>())?;
    m.add("BudgetError", py.get_type::<BudgetError>())?;
    m.add("BspError", py.get_type::<BspError>())?;
    Ok(())
}
