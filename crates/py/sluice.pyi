"""Sluice from Python: out-of-core graph analytics and streaming kernels.

Results are NumPy arrays indexed by dense vertex id whose buffers are the ones Rust filled (no
copy). Long calls release the GIL, report progress (``progress=callable(done, total)`` in bytes,
or ``progress=True`` for a tqdm bar when tqdm is installed) and stop on Ctrl-C
(``KeyboardInterrupt``, no thread left running, no half-written output).

Importing the module makes glibc's malloc keep one arena for the whole process (as the CLI
does), so that runs stay within their ``memory`` budget: freed blocks are reused whichever
thread allocates next.
"""

import os
import pathlib
from typing import Callable, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str
UNREACHED: int
"""BFS depth of a vertex no path reaches (2**32 - 1)."""

PathLike = Union[str, "os.PathLike[str]"]
Memory = Union[int, str, None]
Progress = Union[Callable[[int, int], object], bool, None]
# Graph.import_'s callback also gets the pass running: "vertices", "bucketing", "blocks" or None.
ImportProgress = Union[Callable[[int, int, Optional[str]], object], bool, None]

class SluiceError(Exception):
    """Base class of every Sluice error; messages are the CLI's and name the file."""

class InputError(SluiceError):
    """Bad input: an unreadable or malformed file, a bad parameter, an unknown vertex."""

class StoreCorrupt(SluiceError):
    """A grid store fails its checksums, is truncated, inconsistent or of another version."""

class BudgetError(SluiceError):
    """A request over the memory budget (``memory=``); nothing was allocated."""

class BspError(SluiceError):
    """An error of the BSP layer."""

class Stats:
    """Figures of one ``sluice.stats`` pass (the CLI's JSON keys)."""

    file: pathlib.Path
    format: str
    dtype: str
    shape: list[int]
    count: int
    nan_count: int
    sum: Union[int, float]
    min: Union[int, float, None]
    max: Union[int, float, None]
    mean: Optional[float]
    variance: Optional[float]
    variance_sample: Optional[float]
    histogram: Optional[Tuple[npt.NDArray[np.uint64], npt.NDArray[np.float64]]]
    run: dict
    """bytes_read, seconds, bandwidth, engine, copies ... of the pass."""

def stats(
    path: PathLike,
    dtype: Optional[str] = None,
    endian: Optional[str] = "little",
    bins: Optional[int] = None,
    range: Optional[Tuple[float, float]] = None,
    memory: Memory = None,
    *,
    progress: Progress = None,
) -> Stats:
    """Statistics of a typed array in one streaming pass.

    path: a ``.npy`` file (header read) or a raw file of ``dtype`` elements.
    dtype: f32, f64, i8, i16, i32, i64, u8, u16, u32, u64 (a .npy must agree).
    endian: byte order of a raw file, "little" or "big".
    bins, range: a histogram as ``numpy.histogram(x, bins, range)`` counts it.
    memory: budget in bytes or "512M", "2G" (default: cgroup limit, else half the RAM).
    Figures are over the non-NaN values; variance has ddof 0, variance_sample ddof 1.
    """

def grep(
    pattern: str,
    path: PathLike,
    record_size: Optional[int] = None,
    count_matches: bool = False,
    fixed: bool = False,
    *,
    count: bool = False,
    ignore_case: bool = False,
    memory: Memory = None,
    progress: Progress = None,
) -> Union[npt.NDArray[np.uint64], int]:
    """Lines (or fixed records of ``record_size`` bytes) of ``path`` that match ``pattern``.

    pattern: a regex (Rust ``regex`` syntax), or a literal with ``fixed=True``.
    Returns the byte offsets of the matching records (uint64), or with ``count=True`` the
    number of matching records, with ``count_matches=True`` the number of matches (every
    non-overlapping one). A match never crosses a record boundary.
    """

class Graph:
    """A grid store on disk, streamed block by block within the memory budget."""

    @staticmethod
    def open(store: PathLike, *, memory: Memory = None, in_memory: bool = False) -> "Graph":
        """Opens the store directory ``store``. InputError if missing, StoreCorrupt if damaged.

        in_memory: load every block into RAM (checksummed, within ``memory``) so passes run
        from memory; Ctrl-C still stops a pass within a partition's work.
        """

    @staticmethod
    def import_(
        source: Union[
            PathLike,
            Sequence[PathLike],
            Tuple[npt.ArrayLike, npt.ArrayLike],
            Tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike],
        ],
        out: PathLike,
        *,
        format: Optional[str] = None,
        directed: Optional[bool] = None,
        weights: Optional[str] = None,
        id_bytes: Optional[int] = None,
        simple: bool = False,
        force: bool = False,
        memory: Memory = None,
        progress: ImportProgress = None,
    ) -> "Graph":
        """Imports edges into a new store at ``out`` and opens it.

        source: edge-list file(s) in ``format`` "snap", "mtx", "ldbc" or "bin" (default: from
        the name, else "snap"), or a tuple ``(src, dst[, weight])`` of NumPy arrays of
        non-negative integer original ids (and float weights). Arrays are read in place: no
        copy and no edge file, when 1-D and C-contiguous with ids int32, int64, uint32 or uint64
        and weights float64 or float32 (other integer/float dtypes and lists are converted
        first; a strided view raises InputError). They are read-only during the call. The store
        equals, byte for byte, the import of the same edges as a bin file (u64 ids, f64
        weights). Negative ids, NaN/negative weights, differing lengths raise InputError naming
        the argument and index ("src: index 3: vertex id -1 is negative").
        progress: ``progress(done, total, phase)``, phase the pass running ("vertices",
        "bucketing", "blocks", None at the end), or True for a tqdm bar showing the pass.
        directed: whether edges are one-way (required where the format does not say; arrays
        and bin default to directed). weights: a bin file's weight column, "f32" or "f64".
        id_bytes: a bin file's id width, 4 (default) or 8.
        simple: drop self loops and duplicate edges. force: replace an existing store.
        """

    @property
    def num_vertices(self) -> int: ...
    @property
    def in_memory(self) -> bool: ...
    @property
    def num_edges(self) -> int:
        """Stored edges: an undirected edge is stored both ways and counts twice."""
    @property
    def directed(self) -> bool: ...
    @property
    def weighted(self) -> bool: ...
    @property
    def path(self) -> pathlib.Path: ...
    @property
    def ids(self) -> npt.NDArray[np.uint64]:
        """Original id of each dense id: a read-only view of the graph's own table (dense ids
        follow increasing original id)."""

    def pagerank(
        self,
        iterations: int = 10,
        damping: float = 0.85,
        tolerance: Optional[float] = None,
        *,
        progress: Progress = None,
    ) -> npt.NDArray[np.float64]:
        """PageRank with LDBC Graphalytics semantics (§2.2).

        iterations: synchronous iterations from 1/|V| (exactly this many unless tolerance
        stops earlier). damping: d in [0, 1]. tolerance: stop once the L1 norm of an
        iteration's change is below it. Each iteration r'(v) = (1-d)/|V| + d * (sum over
        edges u->v of r(u)/outdeg(u) + S/|V|), S the rank of the sinks (vertices without
        out-edges), so ranks sum to 1. Duplicate edges count once each.
        Returns float64 ranks by dense id.
        """

    def bfs(self, source: int, *, progress: Progress = None) -> npt.NDArray[np.uint32]:
        """Breadth-first depths (LDBC §2.1) from original id ``source`` along edge direction;
        UNREACHED where no path exists. InputError if source is not a vertex."""

    def wcc(self, *, progress: Progress = None) -> npt.NDArray[np.uint32]:
        """Weakly connected components (LDBC §2.3): the smallest dense id of each vertex's
        component (``g.ids[labels]`` is LDBC's label, the smallest original id)."""

    def cdlp(self, iterations: int = 10, *, progress: Progress = None) -> npt.NDArray[np.uint32]:
        """Label propagation (LDBC §2.4): ``iterations`` synchronous rounds from L(v) = v,
        the most frequent neighbour label (in and out), ties to the smallest; dense ids."""

    def lcc(self, *, progress: Progress = None) -> npt.NDArray[np.float64]:
        """Local clustering coefficient (LDBC §2.5) of every vertex."""

    def sssp(self, source: int, *, progress: Progress = None) -> npt.NDArray[np.float64]:
        """Shortest-path distances (LDBC §2.6) from original id ``source``; inf if unreachable;
        1 per edge on unweighted graphs."""

    def spmv(self, x: npt.ArrayLike, *, progress: Progress = None) -> npt.NDArray[np.float64]:
        """y = A^T x: y[d] = sum over edges s->d of w(s,d) * x[s]; x has |V| entries by dense
        id (undirected edges count both ways; duplicates add up)."""

def kronecker(
    out: PathLike, scale: int, edge_factor: int = 16, seed: int = 1, weights: bool = False
) -> int:
    """Writes a Graph500 Kronecker graph (2**scale vertices, edge_factor * 2**scale edges) to
    ``out`` as bin records (u32 src, u32 dst[, f32 weight]); returns the edge count. Import it
    with ``Graph.import_(out, out_store, format="bin", directed=True)`` (``weights="f32"``)."""

class Kmeans:
    """What one ``sluice.kmeans`` run found."""

    centres: npt.NDArray[np.float64]
    """k x d cluster centres."""
    counts: npt.NDArray[np.uint64]
    inertia: float
    """Sum of squared distances of the records to their centres."""
    iterations: int
    stop: str
    n: int
    d: int
    run: dict

def kmeans(
    path: PathLike,
    k: int,
    *,
    dims: Optional[int] = None,
    dtype: Optional[str] = None,
    endian: Optional[str] = None,
    init: Optional[str] = None,
    threshold: Optional[float] = None,
    max_iter: Optional[int] = None,
    seed: Optional[int] = None,
    labels: Optional[PathLike] = None,
    memory: Memory = None,
    progress: Progress = None,
) -> Kmeans:
    """k-means (Lloyd) over the records of ``path``, one streaming pass per iteration.

    path: a 2-D ``.npy`` of f32 or f64 (n records x d features), or a raw file (give ``dtype``
    and ``dims``).
    init: "k-means++" (default) or a .npy of k initial centres; seed: the k-means++ seed.
    threshold: stop when the centres move less than this (relative, as scikit-learn's tol);
    max_iter: iteration cap. labels: write each record's cluster (a .npy of int64) there.
    Parameters are checked as the CLI's ``sluice kmeans`` flags.
    """

def fft(
    x: npt.ArrayLike, *, procs: Optional[int] = None, inverse: bool = False
) -> npt.NDArray[np.complex128]:
    """The discrete Fourier transform of a complex vector (``numpy.fft.fft``; with
    ``inverse=True`` ``numpy.fft.ifft``, scaled by 1/n) on ``procs`` BSP processes (threads).

    len(x) must be a power of two; procs a power of two with procs**2 <= len(x) (default: the
    most that leave each process at least 2**16 values). The input is copied once into the
    buffer the transform works in, which becomes the result (no second copy).
    """

class _BspContext:
    """What each process of ``sluice.bsp.exec`` gets (``sluice.bsp.Context``)."""

    pid: int
    """This process's id, 0 .. nprocs-1."""
    nprocs: int
    """Number of processes."""

    def register(self, array: npt.NDArray[np.generic]) -> int:
        """Makes a C-contiguous writable array a global slot; returns its index. Collective:
        every process registers in the same order; usable by remote puts/gets after a sync."""

    def put(self, src: npt.NDArray[np.generic], slot: int, pid: int, offset: int = 0) -> None:
        """Copies every element of ``src`` into ``slot`` of process ``pid`` from element
        ``offset``, at the next sync (``src`` is copied now and may change at once)."""

    def get(self, pid: int, slot: int, offset: int, dst_slot: int, dst_offset: int, count: int) -> None:
        """Copies ``count`` elements of ``slot`` of ``pid`` from ``offset`` into the local
        ``dst_slot`` from ``dst_offset``, at the next sync."""

    def sync(self) -> None:
        """Ends the superstep: queued puts and gets are complete, registered arrays updated.
        A read and a write of the same bytes in one superstep raise BspError."""

class bsp:  # the submodule ``sluice.bsp``
    Context = _BspContext

    @staticmethod
    def exec(p: int, fn: Callable[..., object], *args: object) -> list:
        """Runs ``fn(ctx, *args)`` as an SPMD program on ``p`` threads (the threads backend,
        checked for LPF-illegal patterns); returns the return values by pid. The GIL serialises
        the Python code: for correctness and teaching, not speed. A Python exception in a
        process is re-raised (lowest pid); BSP failures raise BspError. Ctrl-C raises
        KeyboardInterrupt in every process still running ``fn`` (and from every later ``ctx``
        call), joins all threads and re-raises it here within a second; a process inside one
        long C call (a large NumPy operation) stops when that call returns."""
