#!/usr/bin/env python3
"""The GraphBLAS peer of bench/graph: PageRank in memory with python-graphblas (SuiteSparse),
made as fast as GraphBLAS can run it here (issue 15, "First, the baseline").

* ids compacted to the vertices that occur (`np.unique`), as Sluice's id map does;
* the transpose AT (AT(d, s) = number of edges s -> d, so duplicate edges count) built once,
  held row-wise (CSR), finished (`wait`) before the clock starts: the cached transpose;
* each iteration is LAGraph's `LAGr_PageRank` pull: `w = r ⊘ outdeg` (dense, 0 at sinks),
  `y = AT ⊕.⊗ w` (plus_times, the dot-product kernel SuiteSparse runs fastest for a dense
  vector), `r = (1−d)/n + d·Σsinks/n + d·y`;
* no per-iteration allocation at the Python level: `w`, `y` and `r` are allocated once and
  written in place with `<<` (the sink mass is a scalar inner product);
* the thread count is set (default 2, this machine's cores) and printed with the library version
  and its build date, and the matrix build time.

Run alone: `bench/graph/graphblas_pr.py EDGES.bin [--iterations 20] [--threads 2]`.
"""

import argparse
import json
import os
import time


def load_edges(bin_path):
    """Edges of a `bin` file (u32 pairs), ids compacted: (ids, src, dst) with dense u64 ids."""
    import numpy as np
    e = np.fromfile(bin_path, dtype="<u4").reshape(-1, 2)
    # |V| = the vertices that appear, numbered in id order (as the store's id map): what
    # np.unique(return_inverse) gives, in O(m) through a presence map instead of a sort.
    present = np.zeros(int(e.max()) + 1, dtype=bool)
    present[e.ravel()] = True
    ids = np.flatnonzero(present).astype(np.uint32)
    dense = np.cumsum(present, dtype=np.uint64) - 1
    del present
    src, dst = dense[e[:, 0]], dense[e[:, 1]]
    return ids, src, dst


def pagerank(bin_path, iters, damping=0.85, threads=2):
    """Returns a dict: seconds_per_iteration, build_seconds, threads, version, build date,
    the original ids and the ranks (numpy arrays)."""
    import numpy as np
    import graphblas as gb
    from graphblas import Matrix, Vector, binary, semiring
    if not gb.backend:
        gb.init("suitesparse", blocking=False)
    gb.ss.config["nthreads"] = threads
    t0 = time.perf_counter()
    ids, src, dst = load_edges(bin_path)
    n = len(ids)
    t1 = time.perf_counter()
    outdeg = np.bincount(src, minlength=n).astype(np.float64)
    AT = Matrix.from_coo(dst, src, np.ones(len(src)), nrows=n, ncols=n, dtype="FP64", dup_op=binary.plus)
    AT.wait()
    del src, dst
    d_inv = Vector.from_dense(np.divide(1.0, outdeg, out=np.zeros(n), where=outdeg > 0))
    is_sink = Vector.from_dense((outdeg == 0).astype(np.float64))
    del outdeg
    r = Vector.from_scalar(1.0 / n, n, dtype="FP64")
    w = Vector("FP64", n)
    y = Vector("FP64", n)
    for v in (d_inv, is_sink, r, w, y):
        v.wait()
    build = time.perf_counter() - t1
    t = time.perf_counter()
    for _ in range(iters):
        w << r.ewise_mult(d_inv, binary.times)                 # dense: r / outdeg, 0 at sinks
        sink = r.inner(is_sink, semiring.plus_times).new().value or 0.0
        y << AT.mxv(w, semiring.plus_times)                    # pull: y(d) = Σ_{s→d} w(s)
        r[:] << (1 - damping) / n + damping * sink / n
        r(binary.plus) << y.apply(binary.times, right=damping)
    r.wait()
    secs = (time.perf_counter() - t) / iters
    about = gb.ss.about
    return {
        "seconds_per_iteration": secs,
        "build_seconds": build,
        "load_seconds": t1 - t0,
        "threads": gb.ss.config["nthreads"],
        "version": f"python-graphblas {gb.__version__}, SuiteSparse:GraphBLAS "
                   + ".".join(map(str, about["library_version"])),
        "library_built": f"{about['library_compile_date']} {about['library_compile_time']}",
        "ids": ids,
        "ranks": r.to_dense(fill_value=0.0),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("edges")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    res = pagerank(a.edges, a.iterations, threads=a.threads)
    res.pop("ids"), res.pop("ranks")
    res["load_average"] = os.getloadavg()
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
