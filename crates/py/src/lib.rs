//! sluice-py: the Python package `sluice` (PyO3, built by maturin as an abi3 wheel).
//!
//! Calls the library crates directly, never the CLI: [`graph`] opens and imports grid stores and
//! runs the graph algorithms, [`kernels`] the streaming kernels; results are NumPy arrays that
//! own the `Vec`s Rust filled (no second copy). Long calls run on a worker thread with the GIL
//! released and stop on Ctrl-C ([`wait`]). Errors are `sluice.SluiceError` subclasses with the
//! CLI's messages ([`errors`]). Python-side documentation and types: `sluice.pyi`.
//!
//! # Modules
//! ```text
//! async_exc* raising KeyboardInterrupt in another Python thread (bsp.exec's Ctrl-C)
//! bsp        sluice.bsp.exec: a Python function as an SPMD program (threads backend)
//! columns    NumPy id/weight columns lent to the graph import in place (zero copy)
//! errors     SluiceError and its subclasses; mapping from the library error types
//! graph      sluice.Graph: open, import_ (files or NumPy arrays), the algorithms; kronecker
//! kernels    sluice.stats, sluice.grep
//! transforms sluice.kmeans (streaming, over a file), sluice.fft (BSP, over a NumPy vector)
//! view*      NumPy views of memory a Python object owns (Graph.ids)
//! wait       worker thread, GIL released, progress, Ctrl-C -> cancel flag -> join
//! ```
//! `*`: the modules with `unsafe` code, one `// SAFETY:` per block.
//!
//! Importing the module makes glibc's malloc use one arena for the whole process
//! (`sluice_io::one_malloc_arena`), so runs stay within their memory budget, and imports NumPy's
//! C API (so the first call does not pay for it, and a broken NumPy fails the import).

#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod async_exc;
mod bsp;
mod columns;
mod errors;
mod graph;
mod kernels;
mod transforms;
#[allow(unsafe_code)]
mod view;
mod wait;

use pyo3::prelude::*;

/// The Python module `sluice`.
#[pymodule]
fn sluice(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // As the CLI's `main` does first: with glibc's arena per thread, blocks freed on one pass's
    // threads stay out of the next pass's reach (PageRank at memory="200M", scale 21: peak RSS
    // 252–298 MiB with per-thread arenas, 169–205 MiB with one; `sluice_io::sys` rule 5).
    sluice_io::one_malloc_arena();
    // NumPy's C API now, not at the first result: every call returns arrays, and rust-numpy
    // imports NumPy lazily, so a fresh process paid the ~70 ms import inside its first
    // algorithm call (issue 14's overhead), and a missing or broken NumPy failed a long run
    // only once it had its result. `import sluice` fails at once instead, with NumPy's
    // ImportError (the C API lookup below would panic on a NumPy that does not import).
    m.py().import("numpy")?;
    numpy::PyArray1::<u8>::zeros(m.py(), 0, false);
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("UNREACHED", sluice_graph::algo::bfs::UNREACHED)?;
    errors::register(m)?;
    m.add_class::<graph::Graph>()?;
    m.add_class::<kernels::Stats>()?;
    m.add_function(wrap_pyfunction!(graph::kronecker, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::stats, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::grep, m)?)?;
    m.add_class::<transforms::Kmeans>()?;
    m.add_function(wrap_pyfunction!(transforms::kmeans, m)?)?;
    m.add_function(wrap_pyfunction!(transforms::fft, m)?)?;
    let bsp = PyModule::new(m.py(), "bsp")?;
    bsp.add_function(wrap_pyfunction!(bsp::exec, &bsp)?)?;
    bsp.add_class::<bsp::Context>()?;
    m.add_submodule(&bsp)?;
    // `import sluice.bsp` finds the submodule.
    m.py().import("sys")?.getattr("modules")?.set_item("sluice.bsp", &bsp)?;
    Ok(())
}
