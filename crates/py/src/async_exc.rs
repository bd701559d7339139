//! The one call into CPython's C API that PyO3 does not wrap: raising an exception in another
//! Python thread (what stops the Python code of `sluice.bsp.exec`'s processes on Ctrl-C).
//!
//! # Contract
//! 1. [`raise_in`] schedules `exc` (an exception class or instance) to be raised in the Python
//!    thread whose `threading.get_ident()` is `ident`, the next time that thread runs Python
//!    bytecode (a thread inside a long C call sees it when the call returns); returns whether
//!    such a thread exists. The GIL is held (the `Python` token says so).

use std::os::raw::c_long;

use pyo3::prelude::*;

/// Raises `exc` in thread `ident` (rule 1).
pub(crate) fn raise_in(_py: Python<'_>, ident: u64, exc: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `PyThreadState_SetAsyncExc` requires the GIL (held: `_py`) and a valid object or
    // NULL (`exc` is a live object; CPython takes its own reference). `ident` is a thread id as
    // `threading.get_ident()` gave it (C `unsigned long`, the same width as `c_long`: the cast
    // keeps its bits); an id of no live thread makes the call return 0 and do nothing.
    let n = unsafe { pyo3::ffi::PyThreadState_SetAsyncExc(ident as c_long, exc.as_ptr()) };
    n > 0
}
