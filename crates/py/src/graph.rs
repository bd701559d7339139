//! `sluice.Graph`: a grid store opened from Python; the algorithms return NumPy arrays that own
//! the buffers Rust filled.
//!
//! # Contract
//! 1. `Graph.open` and `Graph.import_` call `sluice_graph` directly (never the CLI), with one
//!    pipeline per graph whose cancel flag and progress counter [`crate::wait::run`] drives.
//! 2. Every algorithm runs through [`crate::wait::run`] (GIL released, Ctrl-C cancels) and
//!    returns its result `Vec` as the array's buffer (`PyArray1::from_vec`: moved, not copied).
//! 3. Results are indexed by dense id; `Graph.ids` maps dense ids to original ids (a read-only
//!    view of the graph's own table, [`crate::view`]).
//! 4. One call at a time per graph: the cancel flag and counter are per graph.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use sluice_graph::algo::{bfs, cdlp, lcc, pagerank, spmv, sssp, wcc};
use sluice_graph::import::{
    BinWeight, EdgeArrays, Format, ImportOptions, Input, Progress as ImportProgress, import_from,
};
use sluice_graph::{Direction, Error as GraphError};
use sluice_io::{Budget, PipelineBuilder};

use crate::columns::Lent;
use crate::errors::{self, InputError};
use crate::wait::{self, Watch};

/// An opened grid store (see the stub `sluice.pyi` for the Python-side documentation).
#[pyclass(module = "sluice", frozen)]
#[derive(Debug)]
pub(crate) struct Graph {
    inner: sluice_graph::Graph,
    cancel: Arc<AtomicBool>,
    counter: Arc<AtomicU64>,
}

/// The memory budget: `None` is the default (the cgroup limit, else half the RAM), an int is
/// bytes, a string is a size as the CLI's `--memory` takes (`512M`, `2G`).
pub(crate) fn budget(memory: Option<&Bound<'_, PyAny>>) -> PyResult<Budget> {
    let total = match memory {
        None => sluice_io::memory::default_budget(),
        Some(m) if m.is_none() => sluice_io::memory::default_budget(),
        Some(m) => match m.extract::<u64>() {
            Ok(bytes) => bytes,
            Err(_) => {
                let text: String = m.str()?.extract()?;
                sluice_io::parse_size(&text).map_err(|e| errors::io(&e, Some("memory")))?
            }
        },
    };
    Budget::new(total).map_err(|e| errors::io(&e, Some("memory")))
}

/// A pipeline on `budget` with a fresh cancel flag and progress counter.
pub(crate) fn pipeline(
    budget: &Budget,
) -> PyResult<(sluice_io::Pipeline, Arc<AtomicBool>, Arc<AtomicU64>)> {
    let cancel = Arc::new(AtomicBool::new(false));
    let counter = Arc::new(AtomicU64::new(0));
    let p = PipelineBuilder::new()
        .budget(budget.clone())
        .progress(counter.clone())
        .cancel(cancel.clone())
        .build()
        .map_err(|e| errors::io(&e, None))?;
    Ok((p, cancel, counter))
}

fn open_store(py: Python<'_>, store: &Path, budget: Budget, in_memory: bool) -> PyResult<Graph> {
    let context = format!("open {}", store.display());
    let (pipeline, cancel, counter) = pipeline(&budget)?;
    let watch = Watch { cancel: &cancel, counter: &counter, total: 0, import: None };
    let inner = wait::run(py, watch, None, || {
        // A missing or unreadable store is reported as such (as the CLI does).
        sluice_graph::store::read_meta(store)?;
        let mut g = sluice_graph::Graph::open(store, pipeline, budget)?;
        if in_memory {
            g.load_edges()?;
        }
        Ok(g)
    })?
    .map_err(|e| errors::graph(&e, Some(&context)))?;
    Ok(Graph { inner, cancel, counter })
}

/// `format=` by name, or from the first input's name.
fn format(name: Option<&str>, first: &Path) -> PyResult<Format> {
    let name = match name {
        Some(n) => n.to_ascii_lowercase(),
        None => match first.extension().and_then(|e| e.to_str()) {
            Some("mtx") => "mtx".into(),
            Some("properties" | "v" | "e") => "ldbc".into(),
            Some("bin") => "bin".into(),
            _ => "snap".into(),
        },
    };
    Ok(match name.as_str() {
        "snap" => Format::Snap,
        "mtx" => Format::Mtx,
        "ldbc" => Format::Ldbc,
        "bin" => Format::Bin,
        other => {
            return Err(InputError::new_err(format!(
                "format {other:?} is not one of snap, mtx, ldbc, bin"
            )));
        }
    })
}

/// An id or weight column as a contiguous array of `dtype` (ids: integers, none negative).
fn column<'py, T: numpy::Element>(
    py: Python<'py>,
    what: &str,
    x: &Bound<'py, PyAny>,
    ids: bool,
) -> PyResult<Bound<'py, PyArray1<T>>> {
    let np = py.import("numpy")?;
    let a = np.call_method1("asarray", (x,))?;
    let kind: String = a.getattr("dtype")?.getattr("kind")?.extract()?;
    if ids && !(kind == "i" || kind == "u") {
        return Err(InputError::new_err(format!(
            "{what}: ids must be integers, not dtype kind {kind:?}"
        )));
    }
    if a.getattr("ndim")?.extract::<usize>()? != 1 {
        return Err(InputError::new_err(format!("{what}: expected a 1-D array")));
    }
    if ids && kind == "i" && a.len()? > 0 && a.call_method0("min")?.extract::<i64>()? < 0 {
        return Err(InputError::new_err(format!("{what}: a vertex id is negative")));
    }
    let dtype = numpy::dtype::<T>(py);
    Ok(np.call_method1("ascontiguousarray", (a, dtype))?.downcast_into::<PyArray1<T>>()?)
}

#[pymethods]
impl Graph {
    /// Opens the grid store in directory `store` (written by `Graph.import_` or `sluice graph
    /// import`). `memory`: the budget in bytes or as "512M", "2G" (default: the cgroup limit, else
    /// half the RAM). `in_memory`: load every block into RAM (checksummed, within the budget)
    /// so that passes run from memory. Raises InputError for a missing store, StoreCorrupt for
    /// a damaged one.
    #[staticmethod]
    #[pyo3(signature = (store, *, memory=None, in_memory=false))]
    fn open(
        py: Python<'_>,
        store: PathBuf,
        memory: Option<Bound<'_, PyAny>>,
        in_memory: bool,
    ) -> PyResult<Graph> {
        open_store(py, &store, budget(memory.as_ref())?, in_memory)
    }

    /// Imports edges into a new grid store at `out` and opens it.
    ///
    /// `source`: a file path (or a list of them) in `format` "snap", "mtx", "ldbc" or "bin"
    /// (default: from the name, else "snap"); or a tuple `(src, dst)` / `(src, dst, weight)` of
    /// NumPy arrays of original ids (non-negative integers) and float weights, read in place
    /// without a copy and without an edge file when 1-D, contiguous and of dtype int32, int64,
    /// uint32 or uint64 (ids) and float64 or float32 (weights); other integer or float dtypes
    /// and lists are converted first; a strided array raises InputError. The arrays are made
    /// read-only during the call (their flag is restored after).
    /// `directed`: whether edges are one-way (needed where the format does not say; arrays and
    /// bin default to directed). `weights`: for a bin file, its weight column "f32" or "f64".
    /// `id_bytes`: for a bin file, the width of its ids, 4 (default) or 8.
    /// `simple`: drop self loops and duplicate edges. `force`: replace an existing store.
    /// `progress`: a callable `progress(done, total, phase)` (bytes read, bytes to read, the
    /// pass running: "vertices", "bucketing", "blocks", or None), or True for a tqdm bar.
    #[staticmethod]
    #[pyo3(name = "import_", signature = (source, out, *, format=None, directed=None, weights=None, id_bytes=None, simple=false, force=false, memory=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn import(
        py: Python<'_>,
        source: Bound<'_, PyAny>,
        out: PathBuf,
        format: Option<String>,
        directed: Option<bool>,
        weights: Option<String>,
        id_bytes: Option<u8>,
        simple: bool,
        force: bool,
        memory: Option<Bound<'_, PyAny>>,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Graph> {
        let budget = budget(memory.as_ref())?;
        let arrays = source.is_instance_of::<PyTuple>()
            && !source.is_empty()?
            && !source.get_item(0)?.is_instance_of::<pyo3::types::PyString>();
        let mut opts = ImportOptions::new(Format::Bin);
        opts.directed = directed;
        opts.simple = simple;
        opts.force = force;
        let phase = Arc::new(ImportProgress::default());
        opts.progress = Some(phase.clone());
        let (pipeline, cancel, counter) = pipeline(&budget)?;
        let result = if arrays {
            // The arrays are read in place by the importer (no edge file is written): lent,
            // read-only, for the call (crate::columns).
            let t = source.downcast::<PyTuple>()?;
            if !(t.len() == 2 || t.len() == 3) {
                return Err(InputError::new_err("arrays: give (src, dst) or (src, dst, weight)"));
            }
            let w = if t.len() == 3 { Some(t.get_item(2)?) } else { None };
            let lent = Lent::new(py, &t.get_item(0)?, &t.get_item(1)?, w.as_ref())?;
            let (src, dst, w) = lent.columns()?;
            let edges = EdgeArrays::new(src, dst, w).map_err(|e| errors::graph(&e, None))?;
            let record = if lent.weighted() { 24 } else { 16 };
            let total = 2 * record * lent.len() as u64;
            let watch = Watch { cancel: &cancel, counter: &counter, total, import: Some(&phase) };
            wait::run(py, watch, progress.as_ref(), || {
                import_from(Input::Arrays(edges), &out, &opts, &pipeline, &budget)
            })?
        } else {
            let inputs: Vec<PathBuf> = if source.is_instance_of::<PyList>() {
                source.extract()?
            } else {
                vec![source.extract()?]
            };
            let Some(first) = inputs.first() else {
                return Err(errors::graph(&GraphError::NoInput, None));
            };
            opts.format = self::format(format.as_deref(), first)?;
            opts.id_bytes = id_bytes;
            opts.bin_weight = match weights.as_deref() {
                None | Some("none") => BinWeight::None,
                Some("f32") => BinWeight::F32,
                Some("f64") => BinWeight::F64,
                Some(o) => {
                    return Err(InputError::new_err(format!(
                        "weights {o:?} is not one of f32, f64, none"
                    )));
                }
            };
            // Both passes read the edge files.
            let bytes: u64 =
                inputs.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
            let watch = Watch {
                cancel: &cancel,
                counter: &counter,
                total: 2 * bytes,
                import: Some(&phase),
            };
            wait::run(py, watch, progress.as_ref(), || {
                import_from(Input::Files(&inputs), &out, &opts, &pipeline, &budget)
            })?
        };
        result.map_err(|e| errors::graph(&e, None))?;
        open_store(py, &out, budget, false)
    }

    /// Number of vertices |V|.
    #[getter]
    fn num_vertices(&self) -> usize {
        self.inner.num_vertices()
    }

    /// Number of stored edges (an undirected edge is stored both ways: twice).
    #[getter]
    fn num_edges(&self) -> u64 {
        self.inner.meta().num_edges
    }

    /// Whether the graph is directed.
    #[getter]
    fn directed(&self) -> bool {
        self.inner.is_directed()
    }

    /// Whether the blocks are held in memory (`Graph.open(..., in_memory=True)`).
    #[getter]
    fn in_memory(&self) -> bool {
        self.inner.is_in_memory()
    }

    /// Whether edges carry weights.
    #[getter]
    fn weighted(&self) -> bool {
        self.inner.meta().weighted
    }

    /// The store directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.dir().to_path_buf()
    }

    /// Original id of each dense id (uint64), a read-only view of the graph's own table: dense
    /// ids are assigned in increasing original-id order.
    #[getter]
    fn ids<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        crate::view::borrowed_ids(slf)
    }

    /// PageRank (LDBC Graphalytics §2.2): `iterations` synchronous iterations from 1/|V|; the
    /// rank of sinks (vertices without out-edges) is spread over all vertices;
    /// r'(v) = (1-d)/|V| + d * (sum of r(u)/outdeg(u) over edges u->v + sinks/|V|).
    /// `iterations`: exactly this many unless `tolerance` stops earlier.
    /// `damping`: d in [0, 1].
    /// `tolerance`: stop once the L1 norm of an iteration's change is below it (None: never).
    /// `progress`: a callable `progress(done, total)` (bytes read, bytes to read) called from
    /// this thread about every 50 ms, or True for a tqdm bar if tqdm is installed.
    /// Duplicate edges count once each (a multigraph as stored). The GIL is released; Ctrl-C
    /// raises KeyboardInterrupt after the blocks in flight. Returns float64 ranks by dense id
    /// (summing to 1); `g.ids` gives their original ids.
    #[pyo3(signature = (iterations=10, damping=0.85, tolerance=None, *, progress=None))]
    fn pagerank<'py>(
        &self,
        py: Python<'py>,
        iterations: u32,
        damping: f64,
        tolerance: Option<f64>,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let opts = pagerank::PageRankOptions { iterations, damping, tolerance };
        let r =
            self.call(py, iterations as u64, progress, None, |g| pagerank::pagerank(g, &opts))?;
        Ok(PyArray1::from_vec(py, r.ranks))
    }

    /// Breadth-first search (LDBC §2.1) from the vertex of original id `source`, following edge
    /// direction. Returns uint32 depths by dense id, `sluice.UNREACHED` (2**32-1) where no path
    /// exists.
    #[pyo3(signature = (source, *, progress=None))]
    fn bfs<'py>(
        &self,
        py: Python<'py>,
        source: u64,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let d = self.call(py, 1, progress, Some("source"), |g| bfs::bfs(g, source))?;
        Ok(PyArray1::from_vec(py, d))
    }

    /// Weakly connected components (LDBC §2.3). Returns uint32 labels by dense id: the smallest
    /// dense id in the component (`g.ids[labels]` gives the smallest original id, LDBC's label).
    #[pyo3(signature = (*, progress=None))]
    fn wcc<'py>(
        &self,
        py: Python<'py>,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let l = self.call(py, 1, progress, None, wcc::wcc)?;
        Ok(PyArray1::from_vec(py, l))
    }

    /// Community detection by label propagation (LDBC §2.4): `iterations` synchronous rounds
    /// from L(v) = v, each vertex taking the most frequent label of its in- and out-neighbours,
    /// ties to the smallest. Returns uint32 labels (dense ids) by dense id.
    #[pyo3(signature = (iterations=10, *, progress=None))]
    fn cdlp<'py>(
        &self,
        py: Python<'py>,
        iterations: u32,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let r = self.call(py, iterations as u64, progress, None, |g| cdlp::cdlp(g, iterations))?;
        Ok(PyArray1::from_vec(py, r.labels))
    }

    /// Local clustering coefficient (LDBC §2.5): edges among the neighbours of v (in and out,
    /// as a set) over d(d-1), 0 when d <= 1. Returns float64 by dense id.
    #[pyo3(signature = (*, progress=None))]
    fn lcc<'py>(
        &self,
        py: Python<'py>,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let c = self.call(py, 2, progress, None, lcc::lcc)?;
        Ok(PyArray1::from_vec(py, c))
    }

    /// Single-source shortest paths (LDBC §2.6) from original id `source` over non-negative
    /// weights (1 per edge when unweighted). Returns float64 distances by dense id, inf where
    /// unreachable.
    #[pyo3(signature = (source, *, progress=None))]
    fn sssp<'py>(
        &self,
        py: Python<'py>,
        source: u64,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let d = self.call(py, 1, progress, Some("source"), |g| sssp::sssp(g, source))?;
        Ok(PyArray1::from_vec(py, d))
    }

    /// Sparse matrix-vector product y = A^T x: y[d] = sum over edges s->d of w(s,d) * x[s]
    /// (undirected edges both ways; duplicates add up). `x`: |V| floats by dense id. Returns
    /// float64 by dense id.
    #[pyo3(signature = (x, *, progress=None))]
    fn spmv<'py>(
        &self,
        py: Python<'py>,
        x: Bound<'py, PyAny>,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let x = column::<f64>(py, "x", &x, false)?;
        let x = x.readonly();
        let xs = x.as_slice()?;
        let y = self.call(py, 1, progress, None, |g| spmv::spmv(g, xs))?;
        Ok(PyArray1::from_vec(py, y))
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.Graph({:?}, vertices={}, edges={}, directed={}, weighted={})",
            self.inner.dir(),
            self.num_vertices(),
            self.num_edges(),
            self.directed(),
            self.weighted()
        )
    }
}

impl Graph {
    /// The original-id table (for [`crate::view`]).
    pub(crate) fn original_ids(&self) -> &[u64] {
        self.inner.original_ids()
    }

    /// Runs `f` through [`wait::run`] with about `passes` passes of progress; an error gets
    /// `context` (the parameter a missing vertex came from).
    fn call<'py, T: Send>(
        &self,
        py: Python<'py>,
        passes: u64,
        progress: Option<Bound<'py, PyAny>>,
        context: Option<&str>,
        f: impl FnOnce(&sluice_graph::Graph) -> Result<T, GraphError> + Send,
    ) -> PyResult<T> {
        let g = &self.inner;
        let total = g.pass_bytes(Direction::Both).saturating_mul(passes);
        let watch = Watch { cancel: &self.cancel, counter: &self.counter, total, import: None };
        wait::run(py, watch, progress.as_ref(), || f(g))?.map_err(|e| {
            let context = context.filter(|_| matches!(e, GraphError::NoSuchVertex { .. }));
            errors::graph(&e, context)
        })
    }
}

/// Writes a Graph500 Kronecker graph (2**scale vertices, edge_factor edges per vertex) to `out`
/// as `bin` records (u32 src, u32 dst[, f32 weight]); returns the number of edges.
#[pyfunction]
#[pyo3(signature = (out, scale, edge_factor=16, seed=1, weights=false))]
pub(crate) fn kronecker(
    py: Python<'_>,
    out: PathBuf,
    scale: u32,
    edge_factor: u64,
    seed: u64,
    weights: bool,
) -> PyResult<u64> {
    let opts = sluice_graph::kronecker::GenOptions { scale, edge_factor, seed, weights };
    py.allow_threads(|| sluice_graph::kronecker::generate(&opts, &out, None))
        .map_err(|e| errors::graph(&e, None))
}
