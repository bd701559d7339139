//! The one module with `unsafe` code: NumPy arrays that borrow memory a Python object owns.
//!
//! # Contract
//! 1. [`borrowed_ids`] returns a read-only 1-D `uint64` array over the graph's original-id table,
//!    whose base object is the `Graph`: NumPy keeps the graph alive as long as the array, and the
//!    table (a heap buffer the graph never moves, resizes or frees before it drops) outlives it.

use numpy::PyArray1;
use numpy::ndarray::ArrayView1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::graph::Graph;

/// The original ids of `graph` by dense id, as a read-only NumPy view (rule 1).
pub(crate) fn borrowed_ids<'py>(graph: &Bound<'py, Graph>) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let ids: &[u64] = graph.get().original_ids();
    let view = ArrayView1::from(ids);
    // SAFETY: `borrow_from_array` requires that `container` owns the viewed memory and keeps it
    // valid and unmoved for as long as the container lives. The container is the frozen `Graph`
    // object; its `sluice_graph::Graph` holds the id table in a `Vec` that no method (all take
    // `&self`) resizes or frees, and that drops only with the object, which NumPy keeps alive as
    // the array's base.
    let array = unsafe { PyArray1::borrow_from_array(&view, graph.clone().into_any()) };
    let kw = PyDict::new(graph.py());
    kw.set_item("write", false)?;
    array.call_method("setflags", (), Some(&kw))?;
    Ok(array)
}
