//! NumPy columns lent to the graph import as its in-memory edges, without a copy.
//!
//! # Contract
//! 1. Ids: a 1-D C-contiguous `int32`, `int64`, `uint32` or `uint64` array (native byte order)
//!    is read in place; other integer dtypes (8/16-bit, non-native order) and Python sequences
//!    are converted to `int64` first (a copy); anything else is an [`InputError`] naming the
//!    argument. Weights: `float64` or `float32` in place, other real dtypes converted to
//!    `float64`. A strided (non-contiguous) array or one not 1-D is an [`InputError`]: it is never
//!    copied silently.
//! 2. The arrays are kept alive and read-only while the import runs with the GIL released:
//!    [`Lent`] holds them, and clears each one's `writeable` flag until it is dropped (restored
//!    then, where it was set), so Python code on other threads cannot write them through these
//!    objects (other views of the same memory are the caller's business: do not write them).
//! 3. Negative ids, NaN/negative/infinite weights and differing lengths are errors of the
//!    import, naming the argument and the index (`src: index 3: vertex id -1 is negative`).

use numpy::{
    PyArray1, PyArrayDescrMethods, PyArrayMethods, PyReadonlyArray1, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use sluice_graph::import::{Ids, Weights};

use crate::errors::InputError;

/// The arrays of one import, lent to it (rule 2).
#[derive(Debug)]
pub(crate) struct Lent<'py> {
    src: IdColumn<'py>,
    dst: IdColumn<'py>,
    weight: Option<WeightColumn<'py>>,
    /// Arrays whose `writeable` flag was cleared here, to set again.
    locked: Vec<Bound<'py, PyUntypedArray>>,
}

/// An id column, borrowed read-only (numpy's borrow checker: no Rust code writes it meanwhile).
#[derive(Debug)]
enum IdColumn<'py> {
    U32(PyReadonlyArray1<'py, u32>),
    U64(PyReadonlyArray1<'py, u64>),
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

impl<'py> IdColumn<'py> {
    fn untyped(&self) -> Bound<'py, PyUntypedArray> {
        match self {
            IdColumn::U32(a) => a.as_untyped().clone(),
            IdColumn::U64(a) => a.as_untyped().clone(),
            IdColumn::I32(a) => a.as_untyped().clone(),
            IdColumn::I64(a) => a.as_untyped().clone(),
        }
    }

    fn ids(&self) -> PyResult<Ids<'_>> {
        Ok(match self {
            IdColumn::U32(a) => Ids::U32(a.as_slice()?),
            IdColumn::U64(a) => Ids::U64(a.as_slice()?),
            IdColumn::I32(a) => Ids::I32(a.as_slice()?),
            IdColumn::I64(a) => Ids::I64(a.as_slice()?),
        })
    }
}

/// A weight column, borrowed read-only.
#[derive(Debug)]
enum WeightColumn<'py> {
    F32(PyReadonlyArray1<'py, f32>),
    F64(PyReadonlyArray1<'py, f64>),
}

impl<'py> WeightColumn<'py> {
    fn untyped(&self) -> Bound<'py, PyUntypedArray> {
        match self {
            WeightColumn::F32(a) => a.as_untyped().clone(),
            WeightColumn::F64(a) => a.as_untyped().clone(),
        }
    }
}

/// The read-only borrow of `a` as an array of `T` (its dtype was checked).
fn borrow<'py, T: numpy::Element>(
    a: Bound<'py, PyUntypedArray>,
) -> PyResult<PyReadonlyArray1<'py, T>> {
    let typed = a.into_any().downcast_into::<PyArray1<T>>()?;
    typed.try_readonly().map_err(|e| InputError::new_err(e.to_string()))
}

/// `x` as a 1-D contiguous array (rule 1), converted to `fallback` when its dtype kind is in
/// `kinds` but it is not an array of one of the `direct` dtypes.
fn array<'py>(
    py: Python<'py>,
    what: &str,
    x: &Bound<'py, PyAny>,
    direct: &[Bound<'py, numpy::PyArrayDescr>],
    kinds: &str,
    fallback: &str,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let np = py.import("numpy")?;
    let a = match x.downcast::<PyUntypedArray>() {
        Ok(a) => a.clone(),
        Err(_) => np.call_method1("asarray", (x,))?.downcast_into::<PyUntypedArray>()?,
    };
    if a.ndim() != 1 {
        return Err(InputError::new_err(format!(
            "{what}: expected a 1-D array, got {} dimensions",
            a.ndim()
        )));
    }
    if !a.is_c_contiguous() {
        return Err(InputError::new_err(format!(
            "{what}: the array is not contiguous (a strided view): it is read in place, never \
             copied silently; pass numpy.ascontiguousarray({what})"
        )));
    }
    let dtype = a.dtype();
    if direct.iter().any(|d| d.is_equiv_to(&dtype)) {
        return Ok(a);
    }
    let kind = dtype.kind() as char;
    if !kinds.contains(kind) {
        return Err(InputError::new_err(format!(
            "{what}: dtype {} is not accepted here ({})",
            dtype.str()?,
            if kinds.contains('i') { "ids are integers" } else { "weights are real numbers" }
        )));
    }
    Ok(np.call_method1("ascontiguousarray", (a, fallback))?.downcast_into::<PyUntypedArray>()?)
}

impl<'py> Lent<'py> {
    /// Checks and borrows `src`, `dst` and `weight` (rules 1 and 2).
    pub(crate) fn new(
        py: Python<'py>,
        src: &Bound<'py, PyAny>,
        dst: &Bound<'py, PyAny>,
        weight: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Lent<'py>> {
        let id_types = [
            numpy::dtype::<u32>(py),
            numpy::dtype::<u64>(py),
            numpy::dtype::<i32>(py),
            numpy::dtype::<i64>(py),
        ];
        let id_column = |what: &str, x: &Bound<'py, PyAny>| -> PyResult<IdColumn<'py>> {
            let a = array(py, what, x, &id_types, "iu", "int64")?;
            let d = a.dtype();
            Ok(if d.is_equiv_to(&id_types[0]) {
                IdColumn::U32(borrow(a)?)
            } else if d.is_equiv_to(&id_types[1]) {
                IdColumn::U64(borrow(a)?)
            } else if d.is_equiv_to(&id_types[2]) {
                IdColumn::I32(borrow(a)?)
            } else {
                IdColumn::I64(borrow(a)?)
            })
        };
        let (src, dst) = (id_column("src", src)?, id_column("dst", dst)?);
        let weight = match weight {
            None => None,
            Some(x) => {
                let w_types = [numpy::dtype::<f32>(py), numpy::dtype::<f64>(py)];
                let a = array(py, "weight", x, &w_types, "iuf", "float64")?;
                Some(if a.dtype().is_equiv_to(&w_types[0]) {
                    WeightColumn::F32(borrow(a)?)
                } else {
                    WeightColumn::F64(borrow(a)?)
                })
            }
        };
        let mut lent = Lent { src, dst, weight, locked: Vec::new() };
        let mut all = vec![lent.src.untyped(), lent.dst.untyped()];
        all.extend(lent.weight.as_ref().map(WeightColumn::untyped));
        for a in all {
            let flags = a.getattr("flags")?;
            if flags.getattr("writeable")?.extract::<bool>()? {
                flags.setattr("writeable", false)?;
                lent.locked.push(a);
            }
        }
        Ok(lent)
    }

    /// Number of edges (of `src`).
    pub(crate) fn len(&self) -> usize {
        self.src.untyped().len()
    }

    /// Whether weights were given.
    pub(crate) fn weighted(&self) -> bool {
        self.weight.is_some()
    }

    /// The columns as the import reads them: slices of the arrays' own memory.
    pub(crate) fn columns(&self) -> PyResult<(Ids<'_>, Ids<'_>, Option<Weights<'_>>)> {
        let w = match &self.weight {
            None => None,
            Some(WeightColumn::F32(a)) => Some(Weights::F32(a.as_slice()?)),
            Some(WeightColumn::F64(a)) => Some(Weights::F64(a.as_slice()?)),
        };
        Ok((self.src.ids()?, self.dst.ids()?, w))
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        for a in &self.locked {
            // Best effort: an array whose flag cannot be set again stays read-only.
            let _ = a.getattr("flags").and_then(|f| f.setattr("writeable", true));
        }
    }
}
